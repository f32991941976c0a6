//! The fuzz corpus as a regression suite: every input the fuzz targets
//! (fuzz/fuzz_targets) ever kept is fed to the same entry points, in a
//! plain test binary, on every `cargo test`. A parser that panics on an
//! input fuzzing once found fails here without the instrumented build;
//! finding new inputs is `.ci/fuzz`'s job. What each target does is
//! fuzz/entries.rs, shared with the fuzz targets.

use std::path::{Path, PathBuf};

#[path = "../fuzz/entries.rs"]
mod entries;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz")
}

/// The stems of the `.rs` files in `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .collect();
    v.sort();
    v
}

#[test]
fn every_input_the_fuzz_targets_kept_is_parsed_without_a_panic() {
    let targets = rust_files(&root().join("fuzz_targets"));
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
                let caught = std::panic::catch_unwind(|| {
                    assert!(entries::feed(t, &data, scratch.path()), "no entry for {t}")
                });
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
fn a_target_the_entries_do_not_know_is_refused() {
    let scratch = tempfile::tempdir().unwrap();
    assert!(!entries::feed("no-such-target", b"x", scratch.path()));
}
