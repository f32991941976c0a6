//! Generates a synthetic history and its state and times the check of
//! them: `cargo run --release -p hookstorm --example check_bench`.
//!
//! `check_bench KEYS [DIR] [spread] [--attempts N] [--compare] [--partitions N]`:
//! `KEYS` keys (200,000 by default) × N attempts (5 by default; the last a
//! 204), so the default is a 1,000,000-attempt history. With `DIR` the
//! files are kept there and a later run with the same arguments checks
//! them again without writing them, so a profiler (`perf stat`, `perf
//! record`) sees only the check. `spread` writes each key's attempts
//! round by round (all first attempts, then all second ones, …), as
//! retries spread over a real run. `--partitions N` cuts the check into N
//! partitions (by default as many as the inputs ask for: one, in memory,
//! while the estimated keys fit); with
//! `--compare` the same files are then also checked in memory, in one
//! partition, and both times and peak RSS are printed side by side (the
//! peak is reset between the two, through `/proc/self/clear_refs`), with
//! the verdicts held equal.

mod synthetic;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use hookstorm::check::{check_partitioned, CheckOptions, Partitioning, ScenarioCheck};

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Lets the peak RSS start again from what the process holds now.
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

struct Measured {
    checks: Vec<ScenarioCheck>,
    elapsed: Duration,
    /// User and system CPU time of the process (all threads).
    cpu: Duration,
    peak_kib: Option<u64>,
}

/// The CPU time the process has used, all its threads.
fn cpu_time() -> Duration {
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage only writes the struct it is given.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(u.ru_utime) + tv(u.ru_stime)
}

fn measure(
    history: &Path,
    state: &Path,
    how: &Partitioning,
) -> Result<Measured, Box<dyn std::error::Error>> {
    reset_peak();
    let cpu = cpu_time();
    let start = Instant::now();
    let m = check_partitioned(
        &[history.to_path_buf()],
        state,
        None,
        &CheckOptions::default(),
        how,
    )?;
    Ok(Measured {
        elapsed: start.elapsed(),
        cpu: cpu_time() - cpu,
        peak_kib: peak_rss_kib(),
        checks: m.check.checks,
    })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse::<u32>().ok())
    };
    let compare = args.iter().any(|a| a == "--compare");
    let attempts = flag("--attempts").unwrap_or(5);
    let partitions = flag("--partitions");
    let takes_value =
        |i: usize| i > 0 && ["--attempts", "--partitions"].contains(&args[i - 1].as_str());
    let plain: Vec<&String> = args
        .iter()
        .enumerate()
        .filter(|(i, a)| !a.starts_with("--") && !takes_value(*i))
        .map(|(_, a)| a)
        .collect();
    let keys: usize = plain
        .first()
        .and_then(|a| a.parse().ok())
        .unwrap_or(200_000);
    let keep = plain.get(1).map(PathBuf::from);
    let spread = plain.get(2).is_some_and(|a| *a == "spread");
    let tmp = tempfile::tempdir()?;
    let dir_path = keep.clone().unwrap_or_else(|| tmp.path().to_path_buf());
    std::fs::create_dir_all(&dir_path)?;
    let (path, state_path) = match synthetic::existing(&dir_path, keys, attempts, spread) {
        Some(files) if keep.is_some() => files,
        _ => synthetic::write_history_in(&dir_path, keys, attempts, spread)?,
    };
    let size = std::fs::metadata(&path)?.len();
    let how = Partitioning {
        partitions,
        ..Partitioning::default()
    };
    let auto = measure(&path, &state_path, &how)?;
    let show = |what: &str, m: &Measured| {
        println!(
            "{what}: checked {} attempts ({} MiB of history, {keys} keys) in {:.2?} ({:.3} s per million attempts; {:.2?} of CPU); verdict {}; peak RSS {} MiB",
            m.checks[0].counts.attempts,
            size >> 20,
            m.elapsed,
            m.elapsed.as_secs_f64() * 1e6 / m.checks[0].counts.attempts.max(1) as f64,
            m.cpu,
            m.checks[0].verdict(),
            m.peak_kib.map_or("?".into(), |k| (k >> 10).to_string()),
        );
    };
    let parts = partitions.unwrap_or_else(|| {
        hookstorm::check::spill::partitions_needed(std::slice::from_ref(&path), &state_path, None)
    });
    show(&format!("{parts} partition(s)"), &auto);
    if compare {
        let whole = Partitioning {
            partitions: Some(1),
            ..Partitioning::default()
        };
        let mem = measure(&path, &state_path, &whole)?;
        show("in memory", &mem);
        assert_eq!(mem.checks, auto.checks, "the two checks disagree");
        println!(
            "time ratio (partitions / in memory): {:.2}; CPU ratio: {:.2}; peak RSS ratio: {}",
            auto.elapsed.as_secs_f64() / mem.elapsed.as_secs_f64(),
            auto.cpu.as_secs_f64() / mem.cpu.as_secs_f64(),
            match (auto.peak_kib, mem.peak_kib) {
                (Some(a), Some(m)) => format!("{:.2}", a as f64 / m as f64),
                _ => "?".into(),
            }
        );
    }
    Ok(())
}
