//! Integration tests of the reference receiver: real HTTP over 127.0.0.1 to
//! a spawned receiver, on SQLite and on a private Postgres server.

mod common;

mod behaviour;
mod defects;
mod hardening;
mod outage;
mod process;
mod reconcile;
