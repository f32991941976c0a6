//! A large synthetic history and its correct state, shared by the
//! `check_bench` example and the `checker` criterion bench: `keys` keys ×
//! 5 attempts (four 503s, then a 204), two keys per job. The attempts of a
//! key follow each other, or (`spread`) come round by round, every key's
//! first attempt, then every key's second, as retries spread over a run:
//! then every part of a history read in parallel names every key.

use std::io::Write;
use std::path::{Path, PathBuf};

use hookstorm::history::{Attempt, Event, Outcome};
use hookstorm::plan::delivery::TaskStatus;
use hookstorm::state::{InboxRow, State};

fn names(dir: &Path, keys: usize, spread: bool) -> (PathBuf, PathBuf) {
    let tail = if spread { "-spread" } else { "" };
    (
        dir.join(format!("history-{keys}{tail}.jsonl")),
        dir.join(format!("state-{keys}.json")),
    )
}

/// The files [`write_history_in`] wrote into `dir`, if both are there.
#[allow(dead_code)] // used by check_bench, not by the criterion bench
pub fn existing(dir: &Path, keys: usize, spread: bool) -> Option<(PathBuf, PathBuf)> {
    let (path, state_path) = names(dir, keys, spread);
    (path.is_file() && state_path.is_file()).then_some((path, state_path))
}

/// Writes `history-<keys>.jsonl` and `state-<keys>.json` into `dir`.
#[allow(dead_code)] // used by the criterion bench, not by check_bench
pub fn write_history(dir: &Path, keys: usize) -> std::io::Result<(PathBuf, PathBuf)> {
    write_history_in(dir, keys, false)
}

/// Writes the history (`history-<keys>-spread.jsonl` when `spread`) and
/// its state into `dir`.
pub fn write_history_in(
    dir: &Path,
    keys: usize,
    spread: bool,
) -> std::io::Result<(PathBuf, PathBuf)> {
    let (path, state_path) = names(dir, keys, spread);
    let mut out = std::io::BufWriter::new(std::fs::File::create(&path)?);
    let mut state = State::default();
    let order: Vec<(usize, u32)> = if spread {
        (1..=5u32)
            .flat_map(|n| (0..keys).map(move |k| (k, n)))
            .collect()
    } else {
        (0..keys)
            .flat_map(|k| (1..=5u32).map(move |n| (k, n)))
            .collect()
    };
    for (k, n) in order {
        let key = format!("tsk_{k:07}");
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
        if n != 5 {
            continue;
        }
        state.inbox.push(InboxRow {
            key,
            account: Some("acct_a".into()),
            processed: true,
            error: None,
        });
    }
    out.flush()?;
    std::fs::write(&state_path, serde_json::to_string(&state)?)?;
    Ok((path, state_path))
}
