//! Reads one history file in parts, on several threads, and folds it per
//! scenario: the reading half of `hookstorm check`.
//!
//! A million-attempt history is hundreds of megabytes of JSON, and scanning
//! it is most of a check's time. The file is cut into as many parts as
//! there are cores (at most [`MAX_THREADS`], parts of at least
//! [`MIN_PART`] bytes), each cut just after a newline, so every part holds
//! whole lines. Each thread reads its part in [`BLOCK`]-sized pieces (memory
//! stays bounded: no part is ever held whole, nothing is memory-mapped) and
//! folds it into its own [`Aggregator`]s, numbering lines from 1; the parts
//! are then joined in file order ([`Aggregator::absorb`]) with their line
//! numbers moved on by the lines before them. The result, the first error
//! and the warning for a cut last line are exactly those of reading the
//! file line by line: the tests below check that for every way of cutting.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{ErrorKind, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use std::borrow::Cow;

use super::aggregate::{missing_field, AttemptView, ProviderView};
use super::aggregate::{Aggregator, MAX_LINES};
use super::verdict::CheckError;
use super::verdict::HistorySource;
use crate::history::scan::{self, RawLine};

/// At most this many threads read one history. Each part's fold may name
/// every key (retries spread over the file), and they all live until they
/// are joined: four parts of a 200,000-key history spread that way came to
/// 246–255 MiB peak RSS, two to 137–145 MiB (the target is < 256 MiB).
pub(crate) const MAX_THREADS: usize = 2;
/// A part is at least this long (smaller files are read on one thread).
pub(crate) const MIN_PART: u64 = 1 << 20;
/// Each thread reads its part this much at a time (more for a longer line).
const BLOCK: usize = 1 << 20;

/// Which lines to fold and how.
pub(super) struct Filter<'a> {
    /// Fold every scenario's events as one scenario named `all`.
    pub all_as_one: bool,
    /// Fold only this scenario's events.
    pub scenario: Option<&'a str>,
    /// The profile's answer time limit.
    pub answer_limit: Duration,
}

/// What reading one file added.
pub(crate) struct FileRead {
    /// Attempt and provider lines.
    pub events: u64,
    /// Lines read (blank ones and a cut last one included).
    pub lines: u64,
    /// The last line was cut off: what to tell the user.
    pub warning: Option<String>,
}

/// What reading several histories in turn gave.
pub(crate) struct HistoriesRead {
    /// Attempt and provider lines.
    pub events: u64,
    /// Each file and the line numbers it was given.
    pub sources: Vec<HistorySource>,
    /// What the reader had to work around.
    pub warnings: Vec<String>,
}

/// Reads `histories` in turn with `read(index, file, parts, base)`, the
/// line numbers running on from file to file (`base` lines before each),
/// each file in `parts` parts (by default as many as [`parts_for`] says).
pub(crate) fn read_histories(
    histories: &[PathBuf],
    parts: Option<usize>,
    mut read: impl FnMut(usize, &Path, usize, u64) -> Result<FileRead, CheckError>,
) -> Result<HistoriesRead, CheckError> {
    let mut out = HistoriesRead {
        events: 0,
        sources: Vec::new(),
        warnings: Vec::new(),
    };
    let mut line = 0u64;
    for (i, history) in histories.iter().enumerate() {
        let parts =
            parts.unwrap_or_else(|| parts_for(std::fs::metadata(history).map_or(0, |m| m.len())));
        let r = read(i, history, parts, line)?;
        out.events += r.events;
        out.warnings.extend(r.warning);
        out.sources.push(HistorySource {
            path: history.to_path_buf(),
            first_line: line + 1,
            lines: r.lines,
        });
        line += r.lines;
        if line > MAX_LINES {
            return Err(CheckError::TooLong {
                path: history.to_path_buf(),
                max: MAX_LINES,
            });
        }
    }
    Ok(out)
}

/// Takes the events of one part of a history, its line numbers starting
/// at 1: the folds of a check in memory ([`Folds`]), or the writer of a
/// check in partitions (`check::spill`).
pub(crate) trait LineSink {
    /// One attempt of `scenario`.
    fn attempt(&mut self, scenario: &str, line: u64, a: &AttemptView) -> std::io::Result<()>;
    /// One provider task of `scenario`.
    fn provider(&mut self, scenario: &str, line: u64, p: &ProviderView) -> std::io::Result<()>;
    /// The part is read: write out what is buffered.
    fn finish(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// One fold per scenario.
pub(super) struct Folds {
    folds: Vec<(String, Aggregator)>,
    answer_limit: Duration,
}

impl Folds {
    fn fold(&mut self, name: &str) -> &mut Aggregator {
        // Scenarios come in runs: the last one used is the likely one.
        let i = match self.folds.iter().rposition(|(n, _)| n == name) {
            Some(i) => i,
            None => {
                self.folds
                    .push((name.to_string(), Aggregator::new(self.answer_limit)));
                self.folds.len() - 1
            }
        };
        &mut self.folds[i].1
    }
}

impl LineSink for Folds {
    fn attempt(&mut self, scenario: &str, line: u64, a: &AttemptView) -> std::io::Result<()> {
        self.fold(scenario).attempt(line, a);
        Ok(())
    }

    fn provider(&mut self, scenario: &str, line: u64, p: &ProviderView) -> std::io::Result<()> {
        self.fold(scenario).provider(line, p);
        Ok(())
    }
}

/// What one part gave: its sink, and how it ended.
struct Part<S> {
    sink: S,
    events: u64,
    lines: u64,
    end: PartEnd,
}

enum PartEnd {
    /// Read to its end.
    Whole,
    /// This line had no newline and is not an event: the writer stopped in it.
    Cut {
        line: u64,
        bytes: usize,
        error: String,
    },
    /// Reading failed.
    Io(std::io::Error),
    /// The sink could not take an event (a spill file could not be written).
    Sink(std::io::Error),
    /// This line is not a history event.
    Bad { line: u64, message: String },
}

/// How many parts to read a file of `len` bytes in.
pub(super) fn parts_for(len: u64) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let most = (len / MIN_PART).max(1);
    cores.min(MAX_THREADS).min(most as usize)
}

/// Reads `path` in `parts` parts and folds it into `folds`; its first line
/// is line `base + 1`.
pub(super) fn fold_file(
    path: &Path,
    filter: &Filter<'_>,
    parts: usize,
    base: u64,
    folds: &mut BTreeMap<String, Aggregator>,
) -> Result<FileRead, CheckError> {
    let answer_limit = filter.answer_limit;
    let make = |_| Folds {
        folds: Vec::new(),
        answer_limit,
    };
    read_file(path, filter, parts, base, make, |sink, at| {
        for (name, fold) in sink.folds {
            match folds.get_mut(&name) {
                Some(whole) => whole.absorb(fold, at),
                None if at == 0 => {
                    folds.insert(name, fold);
                }
                None => {
                    let mut whole = Aggregator::new(answer_limit);
                    whole.absorb(fold, at);
                    folds.insert(name, whole);
                }
            }
        }
    })
}

/// Reads `path` in `parts` parts, each into the sink `make(part)` gives,
/// and hands each part's sink, in file order, to `join` with the number
/// of lines before it (the file's first line is line `base + 1`). The
/// parts after a cut last line are dropped unjoined; a line that is not
/// an event is an error naming it.
pub(crate) fn read_file<S: LineSink + Send>(
    path: &Path,
    filter: &Filter<'_>,
    parts: usize,
    base: u64,
    make: impl Fn(usize) -> S + Sync,
    mut join: impl FnMut(S, u64),
) -> Result<FileRead, CheckError> {
    let io = |source| CheckError::Io {
        path: path.into(),
        source,
    };
    let mut file = File::open(path).map_err(io)?;
    let starts = cut_points(&mut file, parts.max(1)).map_err(io)?;
    let read = |i: usize| {
        let end = starts.get(i + 1).copied();
        read_part(path, starts[i], end, filter, make(i))
    };
    let done: Vec<Part<S>> = if starts.len() == 1 {
        vec![read(0)]
    } else {
        let threads = starts.len().min(MAX_THREADS);
        let next = AtomicUsize::new(0);
        let mut done: Vec<(usize, Part<S>)> = std::thread::scope(|s| {
            let workers: Vec<_> = (0..threads)
                .map(|_| {
                    s.spawn(|| {
                        let mut mine = Vec::new();
                        loop {
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            if i >= starts.len() {
                                return mine;
                            }
                            mine.push((i, read(i)));
                        }
                    })
                })
                .collect();
            workers
                .into_iter()
                .flat_map(|w| match w.join() {
                    Ok(parts) => parts,
                    Err(panic) => std::panic::resume_unwind(panic),
                })
                .collect()
        });
        done.sort_by_key(|(i, _)| *i);
        done.into_iter().map(|(_, p)| p).collect()
    };

    let mut out = FileRead {
        events: 0,
        lines: 0,
        warning: None,
    };
    for part in done {
        let at = base + out.lines;
        join(part.sink, at);
        out.events += part.events;
        out.lines += part.lines;
        match part.end {
            PartEnd::Whole => {}
            PartEnd::Io(source) => return Err(io(source)),
            PartEnd::Sink(source) => return Err(CheckError::Spill { source }),
            PartEnd::Bad { line, message } => {
                return Err(CheckError::History {
                    path: path.into(),
                    line: at + line,
                    message,
                })
            }
            PartEnd::Cut { line, bytes, error } => {
                let line = at + line;
                out.warning = Some(format!(
                    "{}: line {line} was cut off ({bytes} bytes, {error}); checked {} before it",
                    path.display(),
                    match line - 1 {
                        1 => "the 1 line".to_string(),
                        n => format!("the {n} lines"),
                    }
                ));
                // Nothing follows a line without its newline.
                break;
            }
        }
    }
    Ok(out)
}

/// Where each of `parts` parts starts: 0, then just after the first newline
/// at or after each `len * i / parts`; the last part runs to the end of the
/// file (also if it grew meanwhile).
fn cut_points(file: &mut File, parts: usize) -> std::io::Result<Vec<u64>> {
    let len = file.metadata()?.len();
    let mut starts = vec![0u64];
    let mut buf = vec![0u8; 1 << 14];
    for i in 1..parts {
        let at = (len as u128 * i as u128 / parts as u128) as u64;
        let prev = *starts.last().expect("starts with 0");
        if at <= prev {
            starts.push(prev);
            continue;
        }
        // The part starts after the newline that ends the line holding byte `at - 1`.
        let mut pos = at - 1;
        file.seek(SeekFrom::Start(pos))?;
        let start = loop {
            let n = read_some(file, &mut buf)?;
            if n == 0 {
                break len.max(pos);
            }
            if let Some(nl) = memchr::memchr(b'\n', &buf[..n]) {
                break pos + nl as u64 + 1;
            }
            pos += n as u64;
        };
        starts.push(start.max(prev));
    }
    file.seek(SeekFrom::Start(0))?;
    Ok(starts)
}

/// `read`, retried when interrupted.
fn read_some(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    loop {
        match r.read(buf) {
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

/// Reads the bytes from `start` to `end` (or to the end of the file) into
/// `sink`, and has it write out what it buffered.
fn read_part<S: LineSink>(
    path: &Path,
    start: u64,
    end: Option<u64>,
    filter: &Filter<'_>,
    sink: S,
) -> Part<S> {
    let mut part = read_lines(path, start, end, filter, sink);
    if let Err(e) = part.sink.finish() {
        if matches!(part.end, PartEnd::Whole | PartEnd::Cut { .. }) {
            part.end = PartEnd::Sink(e);
        }
    }
    part
}

/// Hands every line from `start` to `end` to `sink`.
fn read_lines<S: LineSink>(
    path: &Path,
    start: u64,
    end: Option<u64>,
    filter: &Filter<'_>,
    sink: S,
) -> Part<S> {
    let mut part = Part {
        sink,
        events: 0,
        lines: 0,
        end: PartEnd::Whole,
    };
    if end.is_some_and(|e| e <= start) {
        return part;
    }
    let opened = File::open(path).and_then(|mut f| {
        f.seek(SeekFrom::Start(start))?;
        Ok(f)
    });
    let file = match opened {
        Ok(f) => f,
        Err(e) => {
            part.end = PartEnd::Io(e);
            return part;
        }
    };
    let mut reader = file.take(end.map_or(u64::MAX, |e| e - start));
    let mut buf = vec![0u8; BLOCK];
    let (mut pos, mut filled, mut eof) = (0usize, 0usize, false);
    loop {
        let line_end = match memchr::memchr(b'\n', &buf[pos..filled]) {
            Some(nl) => pos + nl + 1,
            None if eof => filled,
            None => {
                // Move the partial line to the front, grow for a long one, read on.
                buf.copy_within(pos..filled, 0);
                filled -= pos;
                pos = 0;
                if filled == buf.len() {
                    // A line past the budget is no line the harness wrote;
                    // its end is never looked for.
                    if filled >= crate::limits::budget::HISTORY_LINE {
                        part.end = PartEnd::Bad {
                            line: part.lines + 1,
                            message: format!(
                                "longer than {} without a newline (a history line of hookstorm's is far shorter)",
                                crate::limits::budget::show(crate::limits::budget::HISTORY_LINE)
                            ),
                        };
                        return part;
                    }
                    buf.resize(
                        (buf.len() * 2).min(crate::limits::budget::HISTORY_LINE + 1),
                        0,
                    );
                }
                match read_some(&mut reader, &mut buf[filled..]) {
                    Ok(0) => eof = true,
                    Ok(n) => filled += n,
                    Err(e) => {
                        part.end = PartEnd::Io(e);
                        return part;
                    }
                }
                continue;
            }
        };
        if line_end == pos {
            return part;
        }
        let bytes = &buf[pos..line_end];
        pos = line_end;
        part.lines += 1;
        let text = match std::str::from_utf8(bytes) {
            Ok(text) => text,
            Err(e) => {
                part.end = PartEnd::Bad {
                    line: part.lines,
                    message: format!("not UTF-8 (at byte {} of the line)", e.valid_up_to() + 1),
                };
                return part;
            }
        };
        if let Err(end) = fold_line(text, part.lines, filter, &mut part) {
            part.end = end;
            return part;
        }
    }
}

/// Hands one line (with its newline, if it has one) to the part's sink.
fn fold_line<S: LineSink>(
    text: &str,
    line: u64,
    filter: &Filter<'_>,
    part: &mut Part<S>,
) -> Result<(), PartEnd> {
    if text.trim().is_empty() {
        return Ok(());
    }
    let raw: RawLine = match scan::parse(text) {
        Some(raw) => raw,
        None => match serde_json::from_str(text) {
            Ok(raw) => raw,
            // No newline at the end: the writer stopped in this line.
            Err(e) if !text.ends_with('\n') => {
                return Err(PartEnd::Cut {
                    line,
                    bytes: text.len(),
                    error: e.to_string(),
                })
            }
            Err(e) => {
                return Err(PartEnd::Bad {
                    line,
                    message: crate::history::diagnose(text).unwrap_or_else(|| e.to_string()),
                })
            }
        },
    };
    if matches!(raw.kind.as_ref(), "attempt" | "provider") {
        part.events += 1;
    }
    let Some(name) = raw.scenario.as_deref() else {
        // An attempt the checker cannot place would be passed unseen: the
        // history is not one it can judge.
        if matches!(raw.kind.as_ref(), "attempt" | "provider") {
            return Err(PartEnd::Bad {
                line,
                message: format!(
                    "a `{}` line without its `scenario` field: the checker cannot place it",
                    raw.kind
                ),
            });
        }
        return Ok(());
    };
    let name = if filter.all_as_one { "all" } else { name };
    if filter.scenario.is_some_and(|f| f != name) {
        return Ok(());
    }
    match raw.fold(line, name, &mut part.sink) {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(PartEnd::Sink(e)),
        Err(message) => Err(PartEnd::Bad { line, message }),
    }
}

impl RawLine<'_> {
    /// Hands the line to `sink` as an event of `scenario`; the error names
    /// the missing field, the inner one is the sink's.
    fn fold(
        &self,
        line: u64,
        scenario: &str,
        sink: &mut impl LineSink,
    ) -> Result<std::io::Result<()>, String> {
        fn need<'s>(v: &'s Option<Cow<'_, str>>, field: &str) -> Result<&'s str, String> {
            v.as_deref().ok_or_else(|| missing_field(field))
        }
        match self.kind.as_ref() {
            "attempt" => {
                if let Some(why) = crate::history::refused(self.status, self.sent_at.as_deref()) {
                    return Err(why);
                }
                let view = AttemptView::of_scanned(self)?;
                return Ok(sink.attempt(scenario, line, &view));
            }
            "provider" => {
                let key = need(&self.key, "key")?;
                let account = need(&self.account, "account")?;
                let created_at = need(&self.created_at, "created_at")?;
                let view = ProviderView {
                    account,
                    key,
                    job: self.job.as_deref(),
                    task_status: self
                        .task_status
                        .ok_or_else(|| missing_field("task_status"))?,
                    created_at,
                };
                return Ok(sink.provider(scenario, line, &view));
            }
            "run" | "fault" | "emit" => {}
            other => return Err(format!("unknown event type {other:?}")),
        }
        Ok(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    //! Reading in parts must change nothing: every verdict, summary,
    //! evidence line, count, dead letter, warning and error is the same for
    //! any number of parts, and the same as folding the parsed events one by
    //! one ([`super::super::check`]).
    use std::io::Write;
    use std::path::PathBuf;

    use proptest::prelude::*;

    use crate::check::files::check_in_parts as check_histories_in;
    use crate::check::Partitioning;
    use crate::check::{check, CheckOptions, FileCheck, MultiCheck, ScenarioCheck};
    use crate::delivery::TaskStatus;
    use crate::history::{Attempt, Event, Intent, Outcome, ProviderTask};
    use crate::state::State;
    use crate::tag::FaultTag;

    /// One line of a generated history.
    #[derive(Debug, Clone)]
    enum Line {
        Event(Event),
        /// Written with `\u0031` for a `1` in the key: serde reads it, the scanner steps aside.
        Escaped(Event),
        Blank,
        Text(&'static str),
    }

    fn attempt() -> impl Strategy<Value = Attempt> {
        let pick = |xs: &'static [&'static str]| proptest::sample::select(xs);
        let intent = proptest::sample::select(vec![
            Intent::Genuine,
            Intent::Genuine,
            Intent::Genuine,
            Intent::Test,
            Intent::Forged,
            Intent::CrossAccount,
            Intent::Oversized,
            Intent::ExpiredReplay,
        ]);
        let outcome = proptest::sample::select(vec![Outcome::Ok, Outcome::Fail, Outcome::Info]);
        let status = proptest::option::of(proptest::sample::select(vec![
            200u16, 204, 301, 409, 422, 500, 503,
        ]));
        let faults = proptest::collection::vec(
            pick(&[
                "drop-ack",
                "duplicate-replay",
                "duplicate-concurrent:1/2",
                "front:503",
                "redirect",
                "hold-back",
                "cut-database",
                "front:delay",
                "tamper:signature",
            ])
            .prop_map(FaultTag::parse),
            0..3,
        );
        let task = proptest::option::of(proptest::sample::select(vec![
            TaskStatus::Completed,
            TaskStatus::Failed,
            TaskStatus::Queued,
        ]));
        (
            (
                pick(&["s1", "s1", "s2"]),
                pick(&["k1", "k2", "k3", "k4", "k5"]),
            ),
            (
                pick(&["a", "a", "b"]),
                proptest::option::of(pick(&["j1", "j2"])),
            ),
            (intent, outcome, status, faults),
            (
                proptest::option::of(pick(&["timeout after 15s", "connection reset"])),
                proptest::option::of(proptest::sample::select(vec![3.5f64, 20_000.0])),
                task,
                proptest::option::of(pick(&[
                    "2026-11-29T09:00:00Z",
                    "2026-11-29T09:00:01Z",
                    "not a time",
                ])),
            ),
            (
                proptest::option::of((pick(&["r1", "r2"]), 1u64..4)),
                proptest::bool::weighted(0.1),
                proptest::bool::weighted(0.15),
                1u32..4,
            ),
        )
            .prop_map(
                |(
                    (scenario, key),
                    (account, job),
                    (intent, outcome, status, faults),
                    (error, latency_ms, task_status, created_at),
                    (seq, poison, dead, n),
                )| Attempt {
                    job: job.map(str::to_string),
                    attempt: n,
                    faults,
                    status,
                    latency_ms,
                    error: error.map(str::to_string),
                    outcome,
                    intent,
                    task_status,
                    created_at: created_at.map(str::to_string),
                    resource: seq.map(|(r, _)| r.to_string()),
                    sequence: seq.map(|(_, s)| s),
                    poison,
                    dead,
                    ..Attempt::new(scenario, &format!("whd_{key}"), key, account)
                },
            )
    }

    fn line() -> impl Strategy<Value = Line> {
        let provider = (
            proptest::sample::select(vec!["k1", "k2", "k6"]),
            proptest::sample::select(vec![TaskStatus::Completed, TaskStatus::Failed]),
        )
            .prop_map(|(key, task_status)| {
                Event::Provider(ProviderTask {
                    scenario: "s1".into(),
                    account: "a".into(),
                    key: key.into(),
                    job: Some("j1".into()),
                    task_status,
                    created_at: "2026-11-29T09:00:02Z".into(),
                })
            });
        prop_oneof![
            12 => attempt().prop_map(|a| Line::Event(Event::Attempt(a))),
            2 => attempt().prop_map(|a| Line::Escaped(Event::Attempt(a))),
            2 => provider.prop_map(Line::Event),
            1 => Just(Line::Blank),
            1 => Just(Line::Text(r#"{"type":"fault","scenario":"s1","at":"t","fault":"kill","action":"a","detail":null}"#)),
        ]
    }

    fn text(lines: &[Line]) -> String {
        let mut out = String::new();
        for l in lines {
            match l {
                Line::Event(e) => out.push_str(&serde_json::to_string(e).unwrap()),
                Line::Escaped(e) => out.push_str(
                    &serde_json::to_string(e)
                        .unwrap()
                        .replace(r#""key":"k1""#, r#""key":"k\u0031""#),
                ),
                Line::Blank => out.push_str("  "),
                Line::Text(t) => out.push_str(t),
            }
            out.push('\n');
        }
        out
    }

    /// A state that stores some keys twice, some without account, some unprocessed.
    fn state() -> impl Strategy<Value = State> {
        let row = (
            proptest::sample::select(vec!["k1", "k2", "k3", "k4", "k5", "k6", "k9"]),
            proptest::option::of(proptest::sample::select(vec!["a", "b"])),
            proptest::bool::weighted(0.8),
        )
            .prop_map(|(key, account, processed)| {
                serde_json::json!({"key": key, "account": account, "processed": processed})
            });
        proptest::collection::vec(row, 0..8).prop_map(|inbox| {
            serde_json::from_value(serde_json::json!({
                "inbox": inbox,
                "winners": [{"job_key": "j1", "task_id": "k1", "account": "a"}],
                "effects": [{"key": "k1", "count": 1}, {"key": "k2", "count": 2}],
            }))
            .expect("a state")
        })
    }

    type Checked = Result<(Vec<ScenarioCheck>, Vec<String>), String>;

    fn outcome(r: Result<MultiCheck, crate::check::CheckError>) -> Checked {
        r.map(|m| {
            let FileCheck { checks, warnings } = m.check;
            (checks, warnings)
        })
        .map_err(|e| e.to_string())
    }

    struct Files {
        _dir: tempfile::TempDir,
        history: PathBuf,
        state: PathBuf,
    }

    fn files(history: &[u8], state: &State) -> Files {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("history.jsonl");
        std::fs::File::create(&path)
            .unwrap()
            .write_all(history)
            .unwrap();
        let state_path = dir.path().join("state.json");
        std::fs::write(&state_path, serde_json::to_string(state).unwrap()).unwrap();
        Files {
            _dir: dir,
            history: path,
            state: state_path,
        }
    }

    /// Every way of cutting `history` into parts, down to one line per part.
    fn part_counts(history: &[u8]) -> Vec<usize> {
        vec![2, 3, 5, history.len().max(1)]
    }

    fn check_in_parts(f: &Files, scenario: Option<&str>, parts: usize) -> Checked {
        let opts = CheckOptions::default();
        outcome(check_histories_in(
            std::slice::from_ref(&f.history),
            &f.state,
            scenario,
            &opts,
            Some(parts),
            &Partitioning::default(),
        ))
    }

    fn same_for_any_parts(history: &[u8], state: &State) -> Result<(), TestCaseError> {
        let f = files(history, state);
        for scenario in [None, Some("s1")] {
            let whole = check_in_parts(&f, scenario, 1);
            for parts in part_counts(history) {
                let cut = check_in_parts(&f, scenario, parts);
                prop_assert_eq!(&cut, &whole, "{} parts, scenario {:?}", parts, scenario);
            }
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        #[test]
        fn a_history_read_in_any_number_of_parts_checks_as_read_whole_and_as_folded_event_by_event(
            lines in proptest::collection::vec(line(), 0..60),
            state in state(),
        ) {
            let history = text(&lines);
            same_for_any_parts(history.as_bytes(), &state)?;
            // The oracle: the events folded one by one, as `check` does.
            let events: Vec<(u64, Event)> = lines
                .iter()
                .enumerate()
                .filter_map(|(i, l)| match l {
                    Line::Event(e) | Line::Escaped(e) => {
                        let text = serde_json::to_string(e).unwrap();
                        Some((i as u64 + 1, serde_json::from_str(&text).unwrap()))
                    }
                    _ => None,
                })
                .collect();
            let has_s1 = events.iter().any(|(_, e)| e.scenario() == Some("s1"));
            let any = events.iter().any(|(_, e)| matches!(e, Event::Attempt(_) | Event::Provider(_)));
            if has_s1 && any {
                let opts = CheckOptions::default();
                let expected = check(events, "s1", Ok(&state), &opts);
                let f = files(history.as_bytes(), &state);
                for parts in [1, 2, 3, history.len()] {
                    let got = check_in_parts(&f, Some("s1"), parts);
                    prop_assert_eq!(got, Ok((vec![expected.clone()], Vec::new())), "{} parts", parts);
                }
            }
        }

        #[test]
        fn shards_read_in_parts_check_as_their_concatenation(
            lines in proptest::collection::vec(line(), 1..40),
            cut in 0usize..40,
            state in state(),
        ) {
            let cut = cut.min(lines.len());
            let (a, b) = (text(&lines[..cut]), text(&lines[cut..]));
            let whole = files(format!("{a}{b}").as_bytes(), &state);
            let first = files(a.as_bytes(), &state);
            let second = files(b.as_bytes(), &state);
            let expected = check_in_parts(&whole, None, 1);
            for parts in [1, 2, 7] {
                let got = outcome(check_histories_in(
                    &[first.history.clone(), second.history.clone()],
                    &whole.state,
                    None,
                    &CheckOptions::default(),
                    Some(parts),
                    &Partitioning::default(),
                ));
                prop_assert_eq!(&got, &expected, "{} parts", parts);
            }
        }
    }

    fn ok_line(key: &str, status: u16, outcome: Outcome) -> String {
        let a = Attempt {
            status: Some(status),
            outcome,
            ..Attempt::new("s1", &format!("whd_{key}"), key, "a")
        };
        serde_json::to_string(&Event::Attempt(a)).unwrap()
    }

    #[test]
    fn errors_and_a_cut_last_line_are_the_same_in_any_number_of_parts() {
        let good = ok_line("k1", 204, Outcome::Ok);
        let state = State::default();
        let cases: Vec<Vec<u8>> = vec![
            // A bad line in the middle: the first bad line is named.
            format!("{good}\n{good}\nnot json\n{good}\n{{\"type\":1}}\n").into_bytes(),
            // A line without its account.
            format!(
                "{good}\n{}\n{good}\n",
                good.replace(r#""account":"a","#, "")
            )
            .into_bytes(),
            // An unknown event type.
            format!(
                "{good}\n{}\n",
                good.replace(r#""type":"attempt""#, r#""type":"bogus""#)
            )
            .into_bytes(),
            // Cut in its last line (no newline), with blank lines before.
            format!("{good}\n\n{good}\n{}", &good[..good.len() / 2]).into_bytes(),
            // Not UTF-8 in a later line.
            [
                format!("{good}\n{good}\n").as_bytes(),
                b"{\"type\":\"\xff\"}\n",
                good.as_bytes(),
            ]
            .concat(),
            // Nothing but blanks; and an empty file.
            b"\n \n\t\n".to_vec(),
            Vec::new(),
            // Windows line ends, and no newline after a whole last line.
            format!("{good}\r\n{good}\r\n{good}").into_bytes(),
        ];
        for history in cases {
            let f = files(&history, &state);
            let whole = check_in_parts(&f, None, 1);
            for parts in [2, 3, 4, history.len().max(1)] {
                assert_eq!(
                    check_in_parts(&f, None, parts),
                    whole,
                    "{parts} parts of {:?}",
                    String::from_utf8_lossy(&history)
                );
            }
        }
    }

    #[test]
    fn an_attempt_without_its_scenario_is_an_error_of_its_line_not_a_skip() {
        let good = ok_line("k1", 204, Outcome::Ok);
        let orphan = ok_line("k2", 204, Outcome::Ok).replace(r#""scenario":"s1","#, "");
        assert!(!orphan.contains("scenario"), "{orphan}");
        let history = format!("{good}\n{orphan}\n{good}\n");
        let f = files(history.as_bytes(), &State::default());
        for parts in [1, 2, 3] {
            let e = check_in_parts(&f, None, parts).unwrap_err();
            assert!(
                e.contains("line 2") && e.contains("without its `scenario` field"),
                "{parts} parts: {e}"
            );
        }
    }

    #[test]
    fn a_line_without_an_end_stops_at_the_line_budget_with_its_number() {
        let good = ok_line("k1", 204, Outcome::Ok);
        let mut history = format!("{good}\n").into_bytes();
        history.resize(
            history.len() + crate::limits::budget::HISTORY_LINE + 10,
            b'x',
        );
        let f = files(&history, &State::default());
        let e = check_in_parts(&f, None, 1).unwrap_err();
        assert!(
            e.contains("line 2") && e.contains("longer than 16 MiB"),
            "{e}"
        );
    }

    #[test]
    fn a_line_that_is_not_utf8_is_named_by_its_number() {
        let good = ok_line("k1", 204, Outcome::Ok);
        let history = [format!("{good}\n").as_bytes(), b"{\"type\":\"\xff\"}\n"].concat();
        let f = files(&history, &State::default());
        let e = check_in_parts(&f, None, 1).unwrap_err();
        assert!(e.contains("line 2") && e.contains("not UTF-8"), "{e}");
    }

    #[test]
    fn a_line_longer_than_a_read_block_is_read_whole_in_any_number_of_parts() {
        let long = Attempt {
            detail: Some("x".repeat(super::BLOCK + super::BLOCK / 2)),
            status: Some(301),
            outcome: Outcome::Fail,
            ..Attempt::new("s1", "whd_k2", "k2", "a")
        };
        let history = format!(
            "{}\n{}\n{}\n",
            ok_line("k1", 204, Outcome::Ok),
            serde_json::to_string(&Event::Attempt(long)).unwrap(),
            ok_line("k3", 204, Outcome::Ok)
        );
        let f = files(history.as_bytes(), &State::default());
        let whole = check_in_parts(&f, None, 1);
        let (checks, _) = whole.as_ref().unwrap();
        assert_eq!(checks[0].counts.attempts, 3);
        let redirect = checks[0].result(crate::check::InvariantId::I7).unwrap();
        assert_eq!(redirect.evidence[0].lines, [2]);
        for parts in [2, 3, 4] {
            assert_eq!(check_in_parts(&f, None, parts), whole, "{parts} parts");
        }
    }

    #[test]
    fn bounded_evidence_and_dead_letters_keep_the_first_in_any_number_of_parts() {
        // More redirects than evidence items, more dead deliveries than dead
        // letters kept: the parts must keep the earliest, count them all.
        let mut history = String::new();
        for n in 0..(crate::check::MAX_DEAD_LETTERS + 50) {
            let key = format!("k{n}");
            history.push_str(&ok_line(&key, 301, Outcome::Fail));
            history.push('\n');
            let dead = Attempt {
                status: Some(503),
                outcome: Outcome::Fail,
                dead: true,
                ..Attempt::new("s1", &format!("whd_{key}"), &key, "a")
            };
            history.push_str(&serde_json::to_string(&Event::Attempt(dead)).unwrap());
            history.push('\n');
        }
        let f = files(history.as_bytes(), &State::default());
        let whole = check_in_parts(&f, None, 1);
        let (checks, _) = whole.as_ref().unwrap();
        assert_eq!(checks[0].dead_letters.len(), crate::check::MAX_DEAD_LETTERS);
        assert_eq!(checks[0].counts.dead, crate::check::MAX_DEAD_LETTERS + 50);
        for parts in [2, 3, 16, 301] {
            assert_eq!(check_in_parts(&f, None, parts), whole, "{parts} parts");
        }
    }

    #[test]
    fn cut_points_fall_just_after_a_newline_and_cover_the_file() {
        let text = b"aa\nbbbb\n\ncc\nlast without newline";
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(text).unwrap();
        for parts in 1..=text.len() + 3 {
            let starts = super::cut_points(&mut file, parts).unwrap();
            assert_eq!(starts.len(), parts);
            assert_eq!(starts[0], 0);
            for w in starts.windows(2) {
                assert!(w[0] <= w[1], "{starts:?}");
            }
            for &s in &starts[1..] {
                let s = s as usize;
                assert!(
                    s == 0 || s == text.len() || text[s - 1] == b'\n',
                    "{parts}: {starts:?}"
                );
            }
        }
    }
}
