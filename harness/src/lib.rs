//! hookstorm: a chaos and conformance harness for webhook receivers.
//!
//! It behaves like a webhook provider on its worst day (retries on the
//! documented schedule, duplicates, reordering, lost acks, forged and test
//! deliveries), records every attempt, reads the receiver's resulting state
//! and proves or disproves that every event was stored and processed exactly
//! once and that the right result won for every job.
//!
//! # Layout
//! - [`units`]: human durations (`15s`, `5m`) for flags and files.
//! - [`error`]: configuration errors that name file and line.
//! - [`exit`]: the documented exit codes.
//! - [`schedule`]: retry schedules as pure, seeded functions.
//! - [`signature`]: signature schemes that sign and verify.
//! - [`profile`]: sender profiles (built-in and TOML).
//! - [`delivery`]: the delivery body and the job-key rule.
//! - [`state`]: the receiver state every probe returns.
//! - [`history`]: the JSON Lines history of attempts.
#![warn(missing_docs)]

pub mod check;
pub mod delivery;
pub mod error;
pub mod exit;
pub mod history;
pub mod probe;
pub mod profile;
pub mod report;
pub mod schedule;
pub mod signature;
pub mod state;
pub mod units;
