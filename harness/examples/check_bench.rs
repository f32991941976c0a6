//! Generates a 1,000,000-attempt history (200k keys x 5 attempts) and times
//! `check_files` on it: `cargo run --release -p hookstorm --example check_bench`.
//!
//! `check_bench KEYS DIR` keeps the files in DIR; a later run with the same
//! arguments finds them there and checks them again without writing them,
//! so a profiler (`perf stat`, `perf record`) sees only the check.
//! `check_bench KEYS DIR spread` writes each key's attempts round by round
//! (all first attempts, then all second ones, …), as retries spread over a
//! real run.

mod synthetic;

use std::time::Instant;

use hookstorm::check::{check_files, CheckOptions};

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let keys: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(200_000);
    // A second argument keeps the files in that folder (for profiling `hookstorm check`).
    let keep = std::env::args().nth(2).map(std::path::PathBuf::from);
    let tmp = tempfile::tempdir()?;
    let dir_path = keep.clone().unwrap_or_else(|| tmp.path().to_path_buf());
    std::fs::create_dir_all(&dir_path)?;
    let spread = std::env::args().nth(3).is_some_and(|a| a == "spread");
    let (path, state_path) = match synthetic::existing(&dir_path, keys, spread) {
        Some(files) if keep.is_some() => files,
        _ => synthetic::write_history_in(&dir_path, keys, spread)?,
    };
    let size = std::fs::metadata(&path)?.len();
    let before = peak_rss_kib();
    let start = Instant::now();
    let res = check_files(&path, &state_path, None, &CheckOptions::default())?;
    let elapsed = start.elapsed();
    println!(
        "checked {} attempts ({} MiB of history, {keys} keys) in {:.2?}; verdict {}; peak RSS {:?} KiB (before check {:?} KiB)",
        res[0].counts.attempts,
        size >> 20,
        elapsed,
        res[0].verdict(),
        peak_rss_kib(),
        before
    );
    Ok(())
}
