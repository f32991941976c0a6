//! Integration tests of the checker, the state probes and the reports (one
//! test binary; the modules live in `tests/checker/`).

#[path = "checker/invariants.rs"]
mod invariants;
#[path = "checker/probes.rs"]
mod probes;
#[path = "checker/reports.rs"]
mod reports;
