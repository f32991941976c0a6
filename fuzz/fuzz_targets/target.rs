//! Target files: any bytes give a target or a configuration error, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

#[path = "../entries.rs"]
mod entries;

fuzz_target!(|data: &[u8]| entries::target(data, entries::scratch()));
