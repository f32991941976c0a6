//! The checker, the state probes and the reports.

mod invariants;
mod probes;
mod reports;
mod sealed;
