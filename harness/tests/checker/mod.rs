//! The checker (the receiver invariants and the sender ones), the state
//! probes and the reports.

mod invariants;
mod probes;
mod reports;
mod sealed;
mod senders;
