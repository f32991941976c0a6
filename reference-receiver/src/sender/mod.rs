//! The reference webhook sender (`hookstorm sender`): the outbox pattern on
//! SQLite, with a delivery worker, so that `hookstorm
//! sink` has a known-good sender to judge, and, through [`SenderDefect`],
//! known-bad ones that each break one sender invariant.
//!
//! An emit call commits its events to the outbox in one transaction and
//! answers; the worker delivers each row, signed afresh per attempt with
//! the profile's scheme, retries on the profile's jittered schedule (and
//! no sooner than `Retry-After`), never after a 2xx or a status the
//! profile makes final, never following a redirect, and dead-letters a row
//! whose attempts run out. Nothing it owes lives only in memory, so a
//! crash anywhere (its crash points: before the POST, before marking a
//! 2xx) loses nothing: after a restart the worker delivers what is still
//! pending, under the identity the row was committed with.
//!
//! - [`defect`]: the broken variants and the invariant catching each.
//! - [`outbox`]: the SQLite outbox.
//! - [`deliver`]: one attempt (headers, signature, POST, timeout).
//! - [`worker`]: the delivery loop.
//! - [`api`]: emit, outbox listing, reset, health.
//! - [`cli`]: `hookstorm sender`.

pub mod api;
pub mod cli;
pub mod defect;
pub mod deliver;
pub mod outbox;
pub mod worker;

pub use defect::SenderDefect;
