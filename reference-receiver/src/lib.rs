//! hookstorm-receiver: the reference webhook receiver.
//!
//! It does what docs/contract.md asks of a receiver —
//! verify the signature on the raw body, write the delivery to an inbox keyed
//! by (account, task id) with "insert, do nothing on conflict", commit, and
//! only then answer 2xx; a worker processes the inbox afterwards — so that
//! the harness has a known-good target, and, through [`Defect`], a set of
//! known-bad ones that each break exactly one invariant.
//!
//! # Layout
//! - [`error`]: the crate's error types.
//! - [`defect`]: the deliberately broken variants and the invariant catching each.
//! - [`failpoint`]: crash points driven by `HOOKSTORM_FAILPOINTS`.
//! - [`config`]: accounts, secrets, limits and options.
//! - [`store`]: the storage trait and its SQLite and Postgres implementations.
//! - [`process`]: the pure part of the worker (what a row becomes).
//! - [`worker`]: the loop that drains the inbox.
//! - [`handler`]: the webhook endpoint.
//! - [`requeue`]: re-opening processed rows, as two defects do.
//! - [`admin`]: the admin API on its own listener.
//! - [`reconcile`]: fetching missing tasks from the provider API.
//! - [`server`]: listeners, graceful shutdown, [`run`] and [`spawn`].
//! - [`pgtest`]: a private Postgres server for tests.
//! - [`listen`]: where it listens (an address, or an inherited socket).
//! - [`cli`]: the command line (also `hookstorm receiver`).
//! - [`sender`]: the other direction, the reference webhook *sender*
//!   (`hookstorm sender`): an outbox on SQLite with a delivery worker, and
//!   its broken variants, for `hookstorm sink` to judge. It lives in this
//!   crate to share its listeners, crash points and build.
//!
//! The harness's side — the target that tests this receiver, started in
//! process or as a supervised child — is the CLI's (`hookstorm_cli::builtin`):
//! the system under test does not build the harness's configuration.
#![warn(missing_docs)]

pub mod admin;
pub mod app;
pub mod cli;
pub mod config;
pub mod defect;
pub mod error;
pub mod failpoint;
pub mod handler;
pub mod listen;
pub mod pgtest;
pub mod process;
pub mod reconcile;
pub mod requeue;
pub mod sender;
pub mod server;
pub mod state_body;
pub mod store;
pub mod worker;

pub use config::{Account, Config};
pub use defect::Defect;
pub use error::{ReceiverError, StoreError};
pub use server::{run, spawn, Spawned};
pub use store::{open_store, open_store_with, Store, StoreOptions};
