//! The history line scanner (the checker's fast path) and the event codec:
//! any line is read or refused with its line number, never a panic, and
//! the fast path agrees with serde on what it accepts.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(line) = std::str::from_utf8(data) {
        hookstorm::history::fuzz_scan(line);
    }
    let path = std::env::temp_dir().join(format!("hookstorm-fuzz-{}-history.jsonl", std::process::id()));
    if std::fs::write(&path, data).is_ok() {
        if let Ok(events) = hookstorm::history::read(&path) {
            for e in events.take(64) {
                let _ = e;
            }
        }
    }
});
