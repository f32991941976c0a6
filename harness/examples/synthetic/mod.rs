//! A large synthetic history and its correct state, shared by the
//! `check_bench` example and the `checker` criterion bench: `keys` keys ×
//! 5 attempts (four 503s, then a 204), two keys per job.

use std::io::Write;
use std::path::{Path, PathBuf};

use hookstorm::delivery::TaskStatus;
use hookstorm::history::{Attempt, Event, Outcome};
use hookstorm::state::{InboxRow, State};

/// The files [`write_history`] wrote into `dir` for `keys`, if both are there.
#[allow(dead_code)] // used by check_bench, not by the criterion bench
pub fn existing(dir: &Path, keys: usize) -> Option<(PathBuf, PathBuf)> {
    let path = dir.join(format!("history-{keys}.jsonl"));
    let state_path = dir.join(format!("state-{keys}.json"));
    (path.is_file() && state_path.is_file()).then_some((path, state_path))
}

/// Writes `history-<keys>.jsonl` and `state-<keys>.json` into `dir`.
pub fn write_history(dir: &Path, keys: usize) -> std::io::Result<(PathBuf, PathBuf)> {
    let path = dir.join(format!("history-{keys}.jsonl"));
    let mut out = std::io::BufWriter::new(std::fs::File::create(&path)?);
    let mut state = State::default();
    for k in 0..keys {
        let key = format!("tsk_{k:07}");
        for n in 1..=5u32 {
            let last = n == 5;
            let a = Attempt {
                job: Some(format!("job-{}", k / 2)),
                attempt: n,
                sent_at: "2026-11-29T10:00:00.000Z".into(),
                status: Some(if last { 204 } else { 503 }),
                latency_ms: Some(2.5),
                outcome: if last { Outcome::Ok } else { Outcome::Info },
                task_status: Some(TaskStatus::Completed),
                created_at: Some("2026-11-29T09:00:00Z".into()),
                ..Attempt::new("load", &format!("whd_{k:07}"), &key, "acct_a")
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
    let state_path = dir.join(format!("state-{keys}.json"));
    std::fs::write(&state_path, serde_json::to_string(&state)?)?;
    Ok((path, state_path))
}
