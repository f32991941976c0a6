//! The history line scanner (the checker's fast path) and the event codec:
//! any line is read or refused with its line number, never a panic, and
//! the fast path agrees with serde on what it accepts.
#![no_main]
use libfuzzer_sys::fuzz_target;

#[path = "../entries.rs"]
mod entries;

fuzz_target!(|data: &[u8]| entries::history_line(data, entries::scratch()));
