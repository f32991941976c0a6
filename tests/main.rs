//! End-to-end tests of hookstorm against the reference receiver (and of
//! `hookstorm sink` against the reference sender and a Python one): every
//! scenario passes against the correct receiver (SQLite and Postgres), every
//! deliberately broken variant is caught by the invariant that names its bug,
//! runs are reproducible from their seed, and the SQL probe reads a receiver
//! that knows nothing of hookstorm; report.html draws in a real browser, and
//! the CI action, container image, `init` and thresholds work as documented,
//! and the paths into production (image, Action, workflow, Kubernetes Job,
//! the wheel and the npm packages) run end to end; `hookstorm verify` checks a report folder.

mod bench;
mod catalog;
mod chaos;
mod ci;
mod cli;
mod common;
mod defects;
mod determinism;
mod docs;
mod examples;
mod explore;
mod foreign;
mod fuzz;
mod hostile;
mod layout;
mod paths;
mod reference;
mod replay;
mod report_html;
mod robust;
mod shard;
mod shrink;
mod signing;
mod sink;
mod sql_probe;
mod tls;
mod verify;
mod zoo;
