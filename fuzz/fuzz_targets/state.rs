//! The state parser, both forms: any bytes give a state or an error, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = hookstorm::state::stream::read_any(data, hookstorm::state::State::default());
});
