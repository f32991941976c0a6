//! Generates a 1,000,000-attempt history (200k keys x 5 attempts) and times
//! `check_files` on it: `cargo run --release -p hookstorm --example check_bench`.

use std::io::Write;
use std::time::Instant;

use hookstorm::check::{check_files, CheckOptions};
use hookstorm::delivery::TaskStatus;
use hookstorm::history::{Attempt, Event, Intent, Outcome};
use hookstorm::state::{InboxRow, State};

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
    let dir_path = keep.unwrap_or_else(|| tmp.path().to_path_buf());
    std::fs::create_dir_all(&dir_path)?;
    let path = dir_path.join("history.jsonl");
    let mut out = std::io::BufWriter::new(std::fs::File::create(&path)?);
    let mut state = State::default();
    for k in 0..keys {
        let key = format!("tsk_{k:07}");
        for n in 1..=5u32 {
            let last = n == 5;
            let a = Attempt {
                scenario: "load".into(),
                delivery: format!("whd_{k:07}"),
                key: key.clone(),
                job: Some(format!("job-{}", k / 2)),
                account: "acct_a".into(),
                attempt: n,
                round: 0,
                faults: vec![],
                sent_at: "2026-11-29T10:00:00.000Z".into(),
                status: Some(if last { 204 } else { 503 }),
                latency_ms: Some(2.5),
                error: None,
                outcome: if last { Outcome::Ok } else { Outcome::Info },
                intent: Intent::Genuine,
                detail: None,
                task_status: Some(TaskStatus::Completed),
                created_at: Some("2026-11-29T09:00:00Z".into()),
                resource: None,
                sequence: None,
                poison: false,
                dead: false,
            };
            serde_json::to_writer(&mut out, &Event::Attempt(a))?;
            out.write_all(b"\n")?;
        }
        state.inbox.push(InboxRow {
            key,
            account: Some("acct_a".into()),
            processed: true,
            error: None,
        });
    }
    out.flush()?;
    drop(out);
    let state_path = dir_path.join("state.json");
    std::fs::write(&state_path, serde_json::to_string(&state)?)?;
    drop(state);
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
