//! The fuzz corpus as a regression suite: every input the fuzz targets
//! (fuzz/fuzz_targets) ever kept is fed to the same entry points, in a
//! plain test binary, on every `cargo test`. A parser that panics on an
//! input fuzzing once found fails here without the instrumented build;
//! finding new inputs is `.ci/fuzz`'s job (docs/ci/fuzz.md).

use std::path::{Path, PathBuf};

use hookstorm::profile::signature::{self, Encoding};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz")
}

/// What each fuzz target does with one input: the same calls, the same
/// assertions as its file under fuzz/fuzz_targets.
fn feed(target: &str, data: &[u8], scratch: &Path) {
    match target {
        "history_line" => {
            if let Ok(line) = std::str::from_utf8(data) {
                hookstorm::history::fuzz_scan(line);
            }
            let path = scratch.join("history.jsonl");
            std::fs::write(&path, data).unwrap();
            if let Ok(events) = hookstorm::history::read(&path) {
                for e in events.take(64) {
                    let _ = e;
                }
            }
        }
        "scenario" => {
            let path = scratch.join("scenario.toml");
            std::fs::write(&path, data).unwrap();
            if let Ok(s) = hookstorm::scenario::Scenario::from_file(&path) {
                assert!(hookstorm::scenario::planned_deliveries(&s.workload).is_ok());
                assert!(hookstorm::scenario::check_name(&s.name).is_ok());
            }
        }
        "signature_headers" => {
            let _ = signature::parse_timestamped(data);
            let _ = signature::parse_standard(data);
            let _ = signature::parse_prefixed(data, "sha256=", Encoding::Hex);
            let _ = signature::parse_prefixed(data, "v0=", Encoding::Hex);
            let _ = signature::parse_prefixed(data, "", Encoding::Base64);
            let _ = signature::parse_timestamp_header(data);
            let _ = signature::bearer_matches(Some(data), "a-token-of-sixteen");
        }
        "state" => {
            let _ = hookstorm::state::stream::read_any(data, hookstorm::state::State::default());
        }
        "target" => {
            let path = scratch.join("target.toml");
            std::fs::write(&path, data).unwrap();
            let _ = hookstorm::target::Target::from_file(&path);
        }
        other => panic!("fuzz target {other} has no replay here: add it to feed()"),
    }
}

fn names(dir: &Path, ext: Option<&str>) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| ext.is_none_or(|x| p.extension().is_some_and(|e| e == x)))
        .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .collect();
    v.sort();
    v
}

#[test]
fn every_input_the_fuzz_targets_kept_is_parsed_without_a_panic() {
    let targets = names(&root().join("fuzz_targets"), Some("rs"));
    assert_eq!(
        targets,
        [
            "history_line",
            "scenario",
            "signature_headers",
            "state",
            "target"
        ],
        "a fuzz target was added or removed: replay it in feed()"
    );
    let scratch = tempfile::tempdir().unwrap();
    let mut fed = 0;
    for t in &targets {
        for dir in [
            root().join("corpus").join(t),
            root().join("artifacts").join(t),
        ] {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.filter_map(Result::ok) {
                let path = entry.path();
                let data = std::fs::read(&path).unwrap();
                let caught = std::panic::catch_unwind(|| feed(t, &data, scratch.path()));
                assert!(
                    caught.is_ok(),
                    "{t} panicked on {} (replay: cargo fuzz run --fuzz-dir fuzz {t} {})",
                    path.display(),
                    path.display()
                );
                fed += 1;
            }
        }
    }
    // The corpus is checked in: an empty replay would prove nothing.
    assert!(fed > 1_000, "only {fed} corpus inputs found under fuzz/");
}

#[test]
fn a_panicking_entry_point_is_reported_with_the_input_that_did_it() {
    // The replay's own failure path: a target the replay does not know
    // panics, and catch_unwind sees it (so a real panic would be caught
    // and named, not abort the suite).
    let scratch = tempfile::tempdir().unwrap();
    let caught = std::panic::catch_unwind(|| feed("no-such-target", b"x", scratch.path()));
    assert!(caught.is_err());
}
