//! What each fuzz target does with one input, in one place: the fuzz
//! targets (fuzz_targets/*.rs) call these under libFuzzer, and the test
//! suite (tests/fuzz.rs) calls them on every input of the checked-in
//! corpus. Each writes what it needs into `scratch`, a folder of its own.

// Each fuzz target uses one of these; the test suite uses them all.
#![allow(dead_code)]

use std::path::Path;

use hookstorm::profile::signature::{self, Encoding};

/// Every target, by the name of its file under fuzz_targets.
pub const TARGETS: [&str; 5] = [
    "history_line",
    "scenario",
    "signature_headers",
    "state",
    "target",
];

/// Runs target `name` on `data`; `false` when there is no such target.
pub fn feed(name: &str, data: &[u8], scratch: &Path) -> bool {
    match name {
        "history_line" => history_line(data, scratch),
        "scenario" => scenario(data, scratch),
        "signature_headers" => signature_headers(data),
        "state" => state(data),
        "target" => target(data, scratch),
        _ => return false,
    }
    true
}

/// The history line scanner (the checker's fast path) and the event codec.
pub fn history_line(data: &[u8], scratch: &Path) {
    if let Ok(line) = std::str::from_utf8(data) {
        hookstorm::history::fuzz_scan(line);
    }
    let path = scratch.join("history.jsonl");
    if std::fs::write(&path, data).is_ok() {
        if let Ok(events) = hookstorm::history::read(&path) {
            for e in events.take(64) {
                let _ = e;
            }
        }
    }
}

/// Scenario files: a scenario that parses has sizes that do not overflow
/// (a receiver's workload, a sender's event count).
pub fn scenario(data: &[u8], scratch: &Path) {
    let path = scratch.join("scenario.toml");
    if std::fs::write(&path, data).is_ok() {
        if let Ok(s) = hookstorm::scenario::Scenario::from_file(&path) {
            assert!(hookstorm::scenario::planned_deliveries(&s.workload).is_ok());
            assert!(hookstorm::scenario::check_name(&s.name).is_ok());
        }
        // The same bytes as a sender scenario (tagged `sender`).
        if let Ok(s) = hookstorm::scenario::sender::SenderScenario::from_file(&path) {
            let max = hookstorm::scenario::sender::MAX_EVENTS;
            assert!((1..=max).contains(&s.events), "{} events", s.events);
            assert!(s.check.iter().all(|i| i.is_sender()));
        }
    }
}

/// Every signature-header parser.
pub fn signature_headers(data: &[u8]) {
    let _ = signature::parse_timestamped(data);
    let _ = signature::parse_standard(data);
    let _ = signature::parse_prefixed(data, "sha256=", Encoding::Hex);
    let _ = signature::parse_prefixed(data, "v0=", Encoding::Hex);
    let _ = signature::parse_prefixed(data, "", Encoding::Base64);
    let _ = signature::parse_timestamp_header(data);
    let _ = signature::bearer_matches(Some(data), "a-token-of-sixteen");
}

/// The state parser, both forms.
pub fn state(data: &[u8]) {
    let _ = hookstorm::state::stream::read_any(data, hookstorm::state::State::default());
}

/// Target files.
pub fn target(data: &[u8], scratch: &Path) {
    let path = scratch.join("target.toml");
    if std::fs::write(&path, data).is_ok() {
        let _ = hookstorm::target::Target::from_file(&path);
    }
}

/// The fuzz process's own scratch folder (in the system's temp folder).
pub fn scratch() -> &'static Path {
    static DIR: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let d = std::env::temp_dir().join(format!("hookstorm-fuzz-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&d);
        d
    })
}
