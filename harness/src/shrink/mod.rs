//! Shrinking: what a minimal failing run is made into for a person.
//!
//! Once the smallest plan that still breaks an invariant is found, two
//! things make it useful: [`account`], a short, deterministic story of that
//! run in the profile's words (which deliveries, which copies, what each
//! was answered, which faults fell in between, what the state shows and
//! what was expected), and [`replay`], a bash script that sends the same
//! requests with curl, signed at run time from secrets in the environment,
//! so the failure can be reproduced and debugged without hookstorm's runner.

pub mod account;
pub mod replay;
