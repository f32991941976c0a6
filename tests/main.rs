//! End-to-end tests of hookstorm against the reference receiver: every
//! scenario passes against the correct receiver (SQLite and Postgres), every
//! deliberately broken variant is caught by the invariant that names its bug,
//! runs are reproducible from their seed, and the SQL probe reads a receiver
//! that knows nothing of hookstorm.

mod bench;
mod catalog;
mod chaos;
mod cli;
mod common;
mod defects;
mod determinism;
mod docs;
mod foreign;
mod reference;
mod robust;
mod shard;
mod sql_probe;
mod tls;
