//! A large synthetic history and its correct state, shared by the
//! `check_bench` example and the `checker` criterion bench: `keys` keys ×
//! 5 attempts (four 503s, then a 204; or any number of attempts, the last
//! a 204), two keys per job, and the winners a correct receiver reports.
//! The attempts of a key follow each other, or
//! (`spread`) come round by round, every key's first attempt, then every
//! key's second, as retries spread over a run: then every part of a
//! history read in parallel names every key. Both files are written as
//! they are made (the state row by row), so a history of tens of
//! millions of deliveries costs the writer no memory.

use std::io::Write;
use std::path::{Path, PathBuf};

use hookstorm::delivery::TaskStatus;
use hookstorm::history::{Attempt, Event, Outcome};
use hookstorm::state::stream::{JsonWriter, Row, Section, StateSink};
use hookstorm::state::{InboxRow, Winner};

fn names(dir: &Path, keys: usize, attempts: u32, spread: bool) -> (PathBuf, PathBuf) {
    let tail = if spread { "-spread" } else { "" };
    let per = if attempts == 5 {
        String::new()
    } else {
        format!("x{attempts}")
    };
    (
        dir.join(format!("history-{keys}{per}{tail}.jsonl")),
        dir.join(format!("state-{keys}.json")),
    )
}

/// The files [`write_history_in`] wrote into `dir`, if both are there.
#[allow(dead_code)] // used by check_bench, not by the criterion bench
pub fn existing(
    dir: &Path,
    keys: usize,
    attempts: u32,
    spread: bool,
) -> Option<(PathBuf, PathBuf)> {
    let (path, state_path) = names(dir, keys, attempts, spread);
    (path.is_file() && state_path.is_file()).then_some((path, state_path))
}

/// Writes `history-<keys>.jsonl` and `state-<keys>.json` into `dir`.
#[allow(dead_code)] // used by the criterion bench, not by check_bench
pub fn write_history(dir: &Path, keys: usize) -> std::io::Result<(PathBuf, PathBuf)> {
    write_history_in(dir, keys, 5, false)
}

/// Writes the history of `keys` keys × `attempts` attempts
/// (`history-<keys>[x<attempts>][-spread].jsonl`) and its state into `dir`.
pub fn write_history_in(
    dir: &Path,
    keys: usize,
    attempts: u32,
    spread: bool,
) -> std::io::Result<(PathBuf, PathBuf)> {
    let attempts = attempts.max(1);
    let (path, state_path) = names(dir, keys, attempts, spread);
    let mut out = std::io::BufWriter::new(std::fs::File::create(&path)?);
    let state_out = std::io::BufWriter::new(std::fs::File::create(&state_path)?);
    let mut state = JsonWriter::new(state_out);
    let to_io = std::io::Error::other;
    state.section(Section::Inbox).map_err(to_io)?;
    let order: Box<dyn Iterator<Item = (usize, u32)>> = if spread {
        Box::new((1..=attempts).flat_map(move |n| (0..keys).map(move |k| (k, n))))
    } else {
        Box::new((0..keys).flat_map(move |k| (1..=attempts).map(move |n| (k, n))))
    };
    for (k, n) in order {
        let key = format!("tsk_{k:07}");
        let last = n == attempts;
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
        if !last {
            continue;
        }
        let row = InboxRow {
            key,
            account: Some("acct_a".into()),
            processed: true,
            error: None,
        };
        state.row(Row::Inbox(row)).map_err(to_io)?;
    }
    // Two keys per job, created at the same instant: the larger task id wins.
    state.section(Section::Winners).map_err(to_io)?;
    for job in 0..keys.div_ceil(2) {
        let winner = Winner {
            job_key: format!("job-{job}"),
            task_id: format!("tsk_{:07}", (2 * job + 1).min(keys - 1)),
            account: Some("acct_a".into()),
        };
        state.row(Row::Winners(winner)).map_err(to_io)?;
    }
    out.flush()?;
    state.finish().map_err(to_io)?;
    state.into_inner().flush()?;
    Ok((path, state_path))
}
