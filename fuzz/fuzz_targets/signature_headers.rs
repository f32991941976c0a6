//! Every signature-header parser: any bytes parse or give an error, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

#[path = "../entries.rs"]
mod entries;

fuzz_target!(|data: &[u8]| entries::signature_headers(data));
