//! Scenario files: any bytes give a scenario or a configuration error,
//! never a panic, and no size in a scenario that parses overflows.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let path = hookstorm_fuzz_path("scenario.toml");
    if std::fs::write(&path, data).is_ok() {
        if let Ok(s) = hookstorm::scenario::Scenario::from_file(&path) {
            assert!(hookstorm::scenario::planned_deliveries(&s.workload).is_ok());
            assert!(hookstorm::scenario::check_name(&s.name).is_ok());
        }
    }
});

fn hookstorm_fuzz_path(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("hookstorm-fuzz-{}-{name}", std::process::id()))
}
