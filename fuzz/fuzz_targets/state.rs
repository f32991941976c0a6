//! The state parser, both forms: any bytes give a state or an error, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

#[path = "../entries.rs"]
mod entries;

fuzz_target!(|data: &[u8]| entries::state(data));
