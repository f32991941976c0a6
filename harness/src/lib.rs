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
//! - [`tag`]: fault tags as a type: what each excuses.
//! - [`scenario`]: scenario files (workload and faults as data).
//! - [`plan`]: the plan, every delivery of a scenario and its faults, made once.
//! - [`workload`]: a scenario plus a seed becomes a deterministic plan.
//! - [`fault`]: fault actors over the delivery stream (duplicate, reorder, drop_ack, tamper).
//! - [`sender`]: delivers a plan over real HTTP the way a profile says.
//! - [`probe`]: reads the receiver's state (HTTP, SQL, command).
//! - [`check`]: the invariants I1–I9 over history and state.
//! - [`report`]: report.json, junit.xml, summary.md and the console table.
//! - [`target`]: the target file (URL, accounts, secrets, probe).
//! - [`tls`]: https for the sender and the HTTP probe.
//! - [`run`]: the pipeline of `hookstorm run`, scenario by scenario.
//! - [`late`]: rows that land after their scenario's state was read.
//! - [`preflight`]: checks a target's configuration in seconds before a run.
//! - [`coverage`]: what scenarios need from a target, skips, and what ran.
//! - [`lifecycle`]: starting, signalling and restarting the receiver's processes.
//! - [`tcpproxy`]: a TCP fault proxy between a receiver and its database.
//! - [`chaos`]: process and database faults carried out during a scenario.
//! - [`gauge`]: the sender's live traffic counters the chaos faults are placed by.
//! - [`front`]: the fault front, an HTTP proxy before the receiver.
//! - [`provider`]: the provider API (task lookups) receivers reconcile against.
//! - [`redelivery`]: the dashboard's redelivery rules (pending, hourly limit).
//! - `hooks`: run hooks for the front, the provider API and their notes.
//! - [`gaps`]: retry gaps measured against the scaled schedule.
//! - [`httpd`]: the small HTTP server loop the front and the provider share.
//! - [`bench`]: `hookstorm bench`, load and correctness at once.
//! - [`shard`]: one process of N (`--shard I/N`): its seed, share and manifest.
//! - [`merge`]: `hookstorm merge`, the shards' folders into one verdict.
#![warn(missing_docs)]

pub mod bench;
pub mod chaos;
pub mod check;
pub mod coverage;
pub mod delivery;
pub mod envelope;
pub mod error;
pub mod exit;
pub mod fault;
pub mod front;
pub mod gaps;
pub mod gauge;
pub mod history;
mod hooks;
pub mod httpd;
pub mod interrupt;
pub mod late;
pub mod lifecycle;
pub mod merge;
pub mod plan;
pub mod preflight;
pub mod probe;
pub mod profile;
pub mod provider;
pub mod redelivery;
pub mod report;
pub mod run;
pub mod scenario;
pub mod schedule;
pub mod sender;
pub mod shard;
pub mod signature;
pub mod state;
pub mod tag;
pub mod target;
pub mod tcpproxy;
pub mod tls;
pub mod units;
pub mod workload;
