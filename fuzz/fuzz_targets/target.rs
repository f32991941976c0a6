//! Target files: any bytes give a target or a configuration error, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let path = std::env::temp_dir().join(format!("hookstorm-fuzz-{}-target.toml", std::process::id()));
    if std::fs::write(&path, data).is_ok() {
        let _ = hookstorm::target::Target::from_file(&path);
    }
});
