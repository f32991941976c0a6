//! hookstorm: a chaos and conformance harness for webhook receivers.
//!
//! It behaves like a webhook provider on its worst day (retries on the
//! documented schedule, duplicates, reordering, lost acks, forged and test
//! deliveries), records every attempt, reads the receiver's resulting state
//! and proves or disproves that every event was stored and processed exactly
//! once and that the right result won for every job.
//!
//! # Layout
//! The pipeline, in the order data flows through it (each stage imports
//! only the stages before it):
//! - [`profile`]: sender profiles (built-in and TOML), with [`schedule`]
//!   (retry schedules as pure, seeded functions), [`signature`] (schemes
//!   that sign and verify) and [`envelope`] (each provider's body and headers).
//! - [`scenario`]: scenario files (workload and faults as data).
//! - [`plan`]: the plan, every delivery of a scenario and its directives,
//!   made once per scenario run; [`delivery`] is the body it carries.
//! - [`workload`]: a scenario plus a seed becomes a deterministic plan;
//!   [`explicit`] is the scenario form that lists a plan's deliveries as
//!   they are (`[[delivery]]`).
//! - [`fault`]: every fault kind: duplicate, reorder, drop_ack, tamper (plan
//!   time); front, redeliver, nemesis (kill, kill-worker, cut-database) and
//!   reconcile (run time).
//! - [`sender`]: delivers a plan over real HTTP the way a profile says.
//! - [`history`]: the JSON Lines history of attempts: its types, its codec
//!   and the one streaming fold every consumer shares; [`tag`] types the
//!   faults each attempt carries.
//! - [`probe`]: reads the receiver's state ([`state`]) over HTTP, SQL or a command.
//! - [`check`]: the invariants I1–I9 over history and state, worded by
//!   [`vocabulary`] (a profile's words for identity, object and order);
//!   [`excuse`] is the one table of what each fault excuses, when a fault
//!   counts as exercised, and what each provider does after a failure.
//! - [`report`]: report.json, junit.xml, summary.md and the console table.
//!
//! Around it:
//! - [`run`]: the pipeline of `hookstorm run`, scenario by scenario; its
//!   private `hooks` start the front and write a send's notes.
//! - [`target`]: the target file (URL, accounts, secrets, probe); [`tls`]:
//!   https for the sender and the HTTP probe.
//! - [`shrink`]: cuts a failing scenario's plan down to a minimal one
//!   that still fails the same invariant (`hookstorm shrink`).
//! - [`preflight`]: checks a target's configuration in seconds before a run.
//! - [`estimate`]: how long a run will take, said before its first scenario.
//! - [`coverage`]: what scenarios need from a target, skips, and what ran.
//! - [`late`]: rows that land after their scenario's state was read.
//! - [`gaps`]: retry gaps measured against the scaled schedule.
//! - [`lifecycle`]: starting, signalling and restarting the receiver's processes.
//! - [`tcpproxy`]: a TCP fault proxy between a receiver and its database.
//! - [`gauge`]: the sender's live traffic counters the nemesis places its faults by.
//! - [`provider`]: the provider API (task lookups) receivers reconcile against.
//! - [`httpd`]: the small HTTP server loop the front and the provider share.
//! - [`interrupt`]: stopping a run cleanly on a signal.
//! - [`bench`]: `hookstorm bench`, load and correctness at once.
//! - [`budget`]: the byte budget of every read from outside (answers,
//!   state rows, hook output, files, history lines), one table.
//! - [`units`]: human durations (`15s`, `5m`); [`error`]: configuration
//!   errors that name file and line; [`exit`]: the documented exit codes.
//! - [`shard`]: one process of N (`--shard I/N`): its seed, share and manifest.
//! - [`merge`]: `hookstorm merge`, the shards' folders into one verdict.
#![warn(missing_docs)]

pub mod bench;
pub mod budget;
pub mod check;
pub mod coverage;
mod decimal;
pub mod delivery;
pub mod envelope;
pub mod error;
pub mod estimate;
pub mod excuse;
pub mod exit;
pub mod explicit;
pub mod fault;
pub mod gaps;
pub mod gauge;
pub mod history;
mod hooks;
pub mod httpd;
pub mod interrupt;
pub mod late;
pub mod lifecycle;
pub mod memory;
pub mod merge;
pub mod plan;
pub mod preflight;
pub mod probe;
pub mod profile;
pub mod provider;
pub mod report;
pub mod run;
pub mod scenario;
pub mod schedule;
pub mod sender;
pub mod shard;
pub mod shrink;
pub mod signature;
pub mod state;
pub mod tag;
pub mod target;
pub mod tcpproxy;
pub mod tls;
pub mod units;
pub mod vocabulary;
pub mod workload;
