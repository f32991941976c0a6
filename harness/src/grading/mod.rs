//! The rules every grader shares, each written once: what each fault
//! excuses, when a fault counts as exercised and what each provider does
//! after a failure ([`excuse`]); what each attempt came to ([`outcome`]);
//! retry gaps measured against the scaled schedule ([`gaps`]). The check,
//! the report and the nemesis read them; they import neither.

pub mod excuse;
pub mod gaps;
pub mod outcome;
