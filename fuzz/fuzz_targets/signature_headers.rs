//! Every signature-header parser: any bytes parse or give an error, never a panic.
#![no_main]
use hookstorm::profile::signature::{self, Encoding};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = signature::parse_timestamped(data);
    let _ = signature::parse_standard(data);
    let _ = signature::parse_prefixed(data, "sha256=", Encoding::Hex);
    let _ = signature::parse_prefixed(data, "v0=", Encoding::Hex);
    let _ = signature::parse_prefixed(data, "", Encoding::Base64);
    let _ = signature::parse_timestamp_header(data);
    let _ = signature::bearer_matches(Some(data), "a-token-of-sixteen");
});
