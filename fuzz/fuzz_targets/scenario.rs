//! Scenario files: any bytes give a scenario or a configuration error,
//! never a panic, and no size in a scenario that parses overflows.
#![no_main]
use libfuzzer_sys::fuzz_target;

#[path = "../entries.rs"]
mod entries;

fuzz_target!(|data: &[u8]| entries::scenario(data, entries::scratch()));
