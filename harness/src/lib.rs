//! hookstorm: a chaos and conformance harness for webhook receivers (and,
//! with `hookstorm sink`, for the senders that call them).
//!
//! It behaves like a webhook provider on its worst day (retries on the
//! documented schedule, duplicates, reordering, lost acks, forged and test
//! deliveries), records every attempt, reads the receiver's resulting state
//! and proves or disproves that every event was stored and processed exactly
//! once and that the right result won for every job.
//!
//! # Layout
//! The top-level modules from the bottom up: each imports only the modules
//! of the lines before its own (and, within its line, none that imports it
//! back). The pipeline's stages keep the order data flows through them
//! (profile, scenario, plan, fault, sender, check, report, run); what
//! every stage names, such as the history's types, the receiver's state
//! and a delivery's body, sits below the stages that fill it in. Each line
//! starts with its modules, before the first colon; `tests/layout.rs`
//! holds the code to this order.
//!
//! - [`limits`], [`text`], [`error`], [`exit`], [`invariant`], [`tag`],
//!   [`delivery`], [`fault_spec`], [`net`], `docs_table`: the leaves every
//!   stage may use: [`limits`] (the byte budget of every read from
//!   outside, and how the process asks the allocator for large buffers),
//!   [`text`] (human durations, counts in words, "did you mean …?"),
//!   [`error`] (configuration errors that name file and line), [`exit`]
//!   (the documented exit codes), [`invariant`] (the ids I1–I9 and S1–S9),
//!   [`tag`] (the faults each attempt carries), [`delivery`] (a delivery's
//!   body, task and status as the contract defines them), [`fault_spec`]
//!   (each fault's settings as a scenario writes them), [`net`] (https,
//!   the TCP fault proxy, the small HTTP server loop, HTTP/1.1 answers
//!   read off any stream).
//! - [`history`]: the JSON Lines history of attempts: its types, its codec
//!   and the one streaming fold every consumer shares.
//! - [`profile`]: sender profiles (built-in and TOML), with
//!   [`profile::schedule`] (retry schedules as pure, seeded functions),
//!   [`profile::signature`] (schemes that sign and verify),
//!   [`profile::envelope`] (each provider's body and headers) and
//!   [`profile::vocabulary`] (a profile's words for identity, object and order).
//! - [`lifecycle`]: starting, signalling and restarting the receiver's
//!   processes.
//! - [`state`]: the receiver's state, read by [`state::probe`] over HTTP,
//!   SQL or a command; [`state::late`] keeps the rows that land after
//!   their scenario's state was read, and [`state::outbox`] reads a
//!   sender's own outbox listing.
//! - [`plan`]: the plan, every delivery of a scenario and its directives,
//!   and the random streams every stage draws from.
//! - [`scenario`]: scenario files (workload and faults as data), with
//!   [`scenario::explicit`] (the form that lists a plan's deliveries as they
//!   are) and [`scenario::sender`] (sender scenarios).
//! - [`provider`]: the provider API receivers reconcile against.
//! - [`target`]: the target file.
//! - [`grading`]: the rules every grader shares, each written once:
//!   [`grading::excuse`] (what each fault excuses, when a fault counts as
//!   exercised, what each provider does after a failure),
//!   [`grading::outcome`] (what each attempt came to: accepted, rejected as
//!   required, dead by design, …) and [`grading::gaps`] (retry gaps
//!   against the scaled schedule).
//! - [`fault`]: every fault kind: duplicate, reorder, drop_ack, tamper (plan
//!   time); front, redeliver, nemesis (kill, kill-worker, cut-database) and
//!   reconcile (run time); [`fault::gauge`] is the live traffic the
//!   nemesis places its faults by.
//! - [`workload`]: a scenario and a seed made into a plan, once per
//!   scenario run, its plan-time faults applied.
//! - [`sender`]: delivers a plan over real HTTP the way a profile says.
//! - [`check`]: the invariants I1–I9 over history and state (and the
//!   sender invariants S1–S9 in [`check::sender`]).
//! - [`findings`]: what a run found beside its verdicts:
//!   [`findings::coverage`] (what scenarios need, why one was skipped and
//!   what ran) and [`findings::note`] (what a run says beyond its
//!   verdicts, typed, which reporters word).
//! - [`report`]: report.json, junit.xml, summary.md, report.html and the
//!   console table, each opening with the conformance statement
//!   ([`report::conformance`]: the levels a run establishes), sealed with
//!   SHA-256 digests ([`report::seal`]) that `hookstorm verify` checks
//!   ([`report::verify`]), and signed with a key in the environment
//!   ([`report::attest`], DSSE envelopes in [`report::dsse`]).
//! - [`run`]: the pipeline of `hookstorm run`, scenario by scenario, with
//!   [`run::actor`] (the run-time faults behind one trait: set up, act
//!   while sending, tear down, findings; the run composes them without
//!   naming any, and they call the sender and word notes, so they live
//!   here and not in [`fault`]),
//!   [`run::preflight`] (a target's configuration checked in seconds),
//!   [`run::estimate`] (how long a run will take) and [`run::interrupt`]
//!   (stopping cleanly on a signal).
//! - [`shard`]: one process of N (`--shard I/N`): which shard, its seed,
//!   its share and the manifest it leaves.
//! - [`sink`]: the other direction, `hookstorm sink`: a chaos receiver
//!   for a webhook *sender* under test, the sender scenarios'
//!   pipeline, and its reports.
//! - [`shrink`]: cuts a failing scenario's plan down to a minimal one.
//! - [`explore`]: `hookstorm explore`, random fault plans drawn from the
//!   space the target can run, every failure shrunk and kept in a
//!   regression folder that `run` replays first.
//! - [`bench`]: `hookstorm bench`, load and correctness at once.
//! - [`merge`]: `hookstorm merge`, the shards' folders (of a bench or a
//!   run) into one verdict, each admitted first ([`merge::admit`]: its
//!   seal, and with a key its signature).
#![warn(missing_docs)]

pub mod bench;
pub mod check;
pub mod delivery;
#[cfg(test)]
mod docs_table;
pub mod error;
pub mod exit;
pub mod explore;
pub mod fault;
pub mod fault_spec;
pub mod findings;
pub mod grading;
pub mod history;
pub mod invariant;
pub mod lifecycle;
pub mod limits;
pub mod merge;
pub mod net;
pub mod plan;
pub mod profile;
pub mod provider;
pub mod report;
pub mod run;
pub mod scenario;
pub mod sender;
pub mod shard;
pub mod shrink;
pub mod sink;
pub mod state;
pub mod tag;
pub mod target;
pub mod text;
pub mod workload;
