//! The history: every attempt the harness made, Jepsen-style, as JSON Lines.
//!
//! Each line is one [`Event`]. Attempts carry everything the checker needs
//! about their delivery (key, job, account, what the harness meant by it,
//! the task's status and creation time), so a history can be checked again
//! later, with nothing else but the receiver's state, and so the checker can
//! stream it instead of holding a million deliveries in memory.
//!
//! Outcomes follow `docs/history.md`: `ok` (a 2xx the harness accepted),
//! `fail` (definitely did not land), `info` (indeterminate: the receiver may
//! or may not have committed it).

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::delivery::TaskStatus;
use crate::tag::FaultTag;

/// What became of one attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// A 2xx came back and the harness accepted it.
    Ok,
    /// The attempt definitely did not land.
    Fail,
    /// Indeterminate: may or may not have been committed.
    Info,
}

/// What the harness meant a delivery to be, and so what the receiver must do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Intent {
    /// A real, correctly signed result: stored exactly once.
    Genuine,
    /// A verified dashboard test delivery: 2xx, nothing stored.
    Test,
    /// A bad, missing, malformed, stale or future signature, or a tampered
    /// body: 4xx, nothing stored. `detail` names the forgery.
    Forged,
    /// Signed with another account's secret: 4xx, nothing stored.
    CrossAccount,
    /// A body over the receiver's limit: 413 (or 4xx), nothing stored.
    Oversized,
    /// A captured genuine request replayed after the tolerance: 4xx, nothing new.
    ExpiredReplay,
}

impl Intent {
    /// Whether the receiver must store this delivery.
    pub fn must_store(self) -> bool {
        matches!(self, Intent::Genuine)
    }
    /// Whether the receiver must answer 4xx.
    pub fn must_reject(self) -> bool {
        matches!(
            self,
            Intent::Forged | Intent::CrossAccount | Intent::Oversized | Intent::ExpiredReplay
        )
    }
}

/// The kind of transport failure an attempt's `error` records: the
/// history keeps the text, this is what the checker asks of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransportFailure {
    /// No answer within the time limit.
    Timeout,
    /// No connection could be made.
    Connect,
    /// Anything else (reset, closed, not HTTP, a request that could not be built).
    Other,
}

impl TransportFailure {
    /// The kind of the error text the sender wrote.
    pub fn of(error: &str) -> TransportFailure {
        let e = error.to_ascii_lowercase();
        if e.contains("timeout") || e.contains("timed out") {
            TransportFailure::Timeout
        } else if e.contains("connect") {
            TransportFailure::Connect
        } else {
            TransportFailure::Other
        }
    }

    /// The error text of a timeout after `limit`, as the sender writes it.
    pub fn timeout_text(limit: std::time::Duration) -> String {
        format!("timeout after {}", crate::units::format_duration(limit))
    }
}

/// One HTTP attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attempt {
    /// The scenario it belongs to.
    pub scenario: String,
    /// The delivery id (`Webhook-Id`), stable across retries and redeliveries.
    pub delivery: String,
    /// The deduplication key (task id).
    pub key: String,
    /// The job key, when the task has an idempotency key.
    #[serde(default)]
    pub job: Option<String>,
    /// The account the delivery was sent for.
    pub account: String,
    /// 1-based attempt number within its round.
    pub attempt: u32,
    /// 0 for the automatic delivery, 1.. for manual redeliveries.
    #[serde(default)]
    pub round: u32,
    /// Faults applied to this attempt.
    #[serde(default)]
    pub faults: Vec<FaultTag>,
    /// When it was sent (RFC 3339, wall clock).
    pub sent_at: String,
    /// The answer's status, if one came.
    #[serde(default)]
    pub status: Option<u16>,
    /// Time to the answer's head, in milliseconds.
    #[serde(default)]
    pub latency_ms: Option<f64>,
    /// Transport error text (timeout, reset, refused).
    #[serde(default)]
    pub error: Option<String>,
    /// The outcome.
    pub outcome: Outcome,
    /// What the delivery was meant to be.
    pub intent: Intent,
    /// More about the intent (the forgery kind, …).
    #[serde(default)]
    pub detail: Option<String>,
    /// The task's final status.
    #[serde(default)]
    pub task_status: Option<TaskStatus>,
    /// The task's createdAt.
    #[serde(default)]
    pub created_at: Option<String>,
    /// Sequenced workload: the resource.
    #[serde(default)]
    pub resource: Option<String>,
    /// Sequenced workload: the sequence number.
    #[serde(default)]
    pub sequence: Option<u64>,
    /// The delivery is a poison event.
    #[serde(default)]
    pub poison: bool,
    /// This was the last attempt and it failed: the delivery is dead.
    #[serde(default)]
    pub dead: bool,
}

impl Attempt {
    /// The kind of transport failure, when the attempt got no answer.
    pub fn transport_failure(&self) -> Option<TransportFailure> {
        self.error.as_deref().map(TransportFailure::of)
    }

    /// A first attempt of a genuine delivery, answered 204 and `ok`: the
    /// base that tests and tools adjust field by field.
    pub fn acknowledged(scenario: &str, account: &str, key: &str) -> Attempt {
        Attempt {
            scenario: scenario.to_string(),
            delivery: format!("whd_{key}"),
            key: key.to_string(),
            job: None,
            account: account.to_string(),
            attempt: 1,
            round: 0,
            faults: Vec::new(),
            sent_at: now_rfc3339(),
            status: Some(204),
            latency_ms: Some(1.0),
            error: None,
            outcome: Outcome::Ok,
            intent: Intent::Genuine,
            detail: None,
            task_status: None,
            created_at: None,
            resource: None,
            sequence: None,
            poison: false,
            dead: false,
        }
    }
}

/// Something a fault actor (nemesis) did, outside any single attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FaultEvent {
    /// The scenario.
    pub scenario: String,
    /// When (RFC 3339).
    pub at: String,
    /// The fault's name (`kill`, `cut-database`, `redirect`, …).
    pub fault: String,
    /// What it did.
    pub action: String,
    /// Free text details.
    #[serde(default)]
    pub detail: Option<String>,
}

/// A final task the provider knows of (reconciliation ground truth).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProviderTask {
    /// The scenario.
    pub scenario: String,
    /// The account.
    pub account: String,
    /// The task id.
    pub key: String,
    /// The job key.
    #[serde(default)]
    pub job: Option<String>,
    /// Its status.
    pub task_status: TaskStatus,
    /// Its createdAt.
    pub created_at: String,
}

/// What a run was: written once at the start of a history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunHeader {
    /// The run id (also the report folder's name).
    pub run_id: String,
    /// The seed that drives everything.
    pub seed: u64,
    /// The sender profile.
    pub profile: String,
    /// Real time is divided by this.
    pub time_scale: f64,
    /// When the run started (RFC 3339).
    pub started_at: String,
    /// hookstorm's version.
    pub version: String,
}

/// One line of the history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// The run header.
    Run(RunHeader),
    /// An attempt.
    Attempt(Attempt),
    /// A fault action.
    Fault(FaultEvent),
    /// A task the provider finished.
    Provider(ProviderTask),
}

impl Event {
    /// The scenario the event belongs to, if any.
    pub fn scenario(&self) -> Option<&str> {
        match self {
            Event::Run(_) => None,
            Event::Attempt(a) => Some(&a.scenario),
            Event::Fault(f) => Some(&f.scenario),
            Event::Provider(p) => Some(&p.scenario),
        }
    }
}

/// A history file could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// I/O on the history file.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A line is not a history event.
    #[error("{path}: line {line}: not a history event: {message}")]
    Line {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// What was wrong.
        message: String,
    },
}

/// Streams events to a JSON Lines file.
pub struct HistoryWriter {
    path: PathBuf,
    out: BufWriter<File>,
    lines: u64,
}

impl HistoryWriter {
    /// Creates (truncates) the file.
    pub fn create(path: &Path) -> Result<Self, HistoryError> {
        let file = File::create(path).map_err(|source| HistoryError::Io {
            path: path.into(),
            source,
        })?;
        Ok(HistoryWriter {
            path: path.into(),
            out: BufWriter::with_capacity(1 << 16, file),
            lines: 0,
        })
    }

    /// Appends one event.
    pub fn write(&mut self, event: &Event) -> Result<(), HistoryError> {
        let io = |source| HistoryError::Io {
            path: self.path.clone(),
            source,
        };
        serde_json::to_writer(&mut self.out, event).map_err(|e| io(e.into()))?;
        self.out.write_all(b"\n").map_err(io)?;
        self.lines += 1;
        Ok(())
    }

    /// Lines written so far.
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// Flushes buffered lines to the OS.
    pub fn flush(&mut self) -> Result<(), HistoryError> {
        self.out.flush().map_err(|source| HistoryError::Io {
            path: self.path.clone(),
            source,
        })
    }

    /// Flushes and fsyncs: after this the history survives a crash.
    pub fn finish(mut self) -> Result<PathBuf, HistoryError> {
        self.flush()?;
        self.out
            .get_ref()
            .sync_all()
            .map_err(|source| HistoryError::Io {
                path: self.path.clone(),
                source,
            })?;
        Ok(self.path)
    }
}

/// Reads a history file event by event, naming the line of any bad one.
pub fn read(
    path: &Path,
) -> Result<impl Iterator<Item = Result<Event, HistoryError>>, HistoryError> {
    Ok(read_numbered(path)?.map(|r| r.map(|(_, e)| e)))
}

/// Like [`read`], with each event's 1-based line number (blank lines are
/// skipped but counted), as the checker's evidence cites them.
pub fn read_numbered(
    path: &Path,
) -> Result<impl Iterator<Item = Result<(u64, Event), HistoryError>>, HistoryError> {
    let file = File::open(path).map_err(|source| HistoryError::Io {
        path: path.into(),
        source,
    })?;
    let path = path.to_path_buf();
    Ok(BufReader::with_capacity(1 << 16, file)
        .lines()
        .enumerate()
        .filter(|(_, l)| !matches!(l, Ok(s) if s.trim().is_empty()))
        .map(move |(i, line)| {
            let line = line.map_err(|source| HistoryError::Io {
                path: path.clone(),
                source,
            })?;
            serde_json::from_str(&line)
                .map(|e| (i as u64 + 1, e))
                .map_err(|e| HistoryError::Line {
                    path: path.clone(),
                    line: i + 1,
                    message: e.to_string(),
                })
        }))
}

/// One consumer of a history, fed event by event: the checker's fold, the
/// late-row owners, the kill tally and the retry gaps all are, so a
/// scenario's history is read once, streaming, whatever needs it.
pub trait Fold {
    /// Takes one event and its 1-based line number.
    fn push(&mut self, line: u64, event: &Event);
}

/// Streams the history at `path` once through every fold in `folds`.
/// Lines that are not history events are skipped (the checker, reading
/// the same file, names them); returns how many events were folded.
pub fn fold(path: &Path, folds: &mut [&mut dyn Fold]) -> Result<u64, HistoryError> {
    let mut n = 0;
    for (line, event) in read_numbered(path)?.filter_map(Result::ok) {
        for f in folds.iter_mut() {
            f.push(line, &event);
        }
        n += 1;
    }
    Ok(n)
}

/// Current wall-clock time as RFC 3339 with milliseconds.
pub fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// A cloneable handle many tasks write events through, concurrently.
///
/// Backed by one [`HistoryWriter`] behind a mutex: a line is serialized and
/// buffered under the lock, so lines never interleave. The first write error
/// is kept and returned by every later write and by [`HistorySink::finish`],
/// so nothing is lost silently; `finish` flushes and fsyncs.
#[derive(Clone)]
pub struct HistorySink {
    inner: std::sync::Arc<std::sync::Mutex<SinkState>>,
}

struct SinkState {
    writer: Option<HistoryWriter>,
    error: Option<String>,
    path: PathBuf,
}

impl HistorySink {
    /// Creates (truncates) the history file.
    pub fn create(path: &Path) -> Result<Self, HistoryError> {
        Ok(Self::from_writer(HistoryWriter::create(path)?))
    }

    /// Wraps an open writer.
    pub fn from_writer(writer: HistoryWriter) -> Self {
        let path = writer.path.clone();
        HistorySink {
            inner: std::sync::Arc::new(std::sync::Mutex::new(SinkState {
                writer: Some(writer),
                error: None,
                path,
            })),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, SinkState> {
        // A panic elsewhere while holding the lock leaves a usable writer.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Appends one event.
    pub fn write(&self, event: Event) -> Result<(), HistoryError> {
        let mut st = self.lock();
        let path = st.path.clone();
        if let Some(msg) = &st.error {
            return Err(sink_error(&path, msg));
        }
        let Some(w) = st.writer.as_mut() else {
            return Err(sink_error(&path, "history already finished"));
        };
        if let Err(e) = w.write(&event) {
            st.error = Some(e.to_string());
            return Err(e);
        }
        Ok(())
    }

    /// Lines written so far.
    pub fn lines(&self) -> u64 {
        self.lock().writer.as_ref().map(|w| w.lines()).unwrap_or(0)
    }

    /// The first write error, if any.
    pub fn error(&self) -> Option<String> {
        self.lock().error.clone()
    }

    /// Flushes the buffer to the OS (not fsync): for readers during a run.
    pub fn flush(&self) -> Result<(), HistoryError> {
        let mut st = self.lock();
        match st.writer.as_mut() {
            Some(w) => w.flush(),
            None => Ok(()),
        }
    }

    /// Flushes and fsyncs; returns the lines written. Later writes fail.
    pub fn finish(&self) -> Result<u64, HistoryError> {
        let mut st = self.lock();
        let path = st.path.clone();
        if let Some(msg) = &st.error {
            return Err(sink_error(&path, msg));
        }
        let Some(w) = st.writer.take() else {
            return Err(sink_error(&path, "history already finished"));
        };
        let lines = w.lines();
        w.finish()?;
        Ok(lines)
    }
}

fn sink_error(path: &Path, msg: &str) -> HistoryError {
    HistoryError::Io {
        path: path.into(),
        source: std::io::Error::other(msg.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attempt(n: u32, outcome: Outcome) -> Event {
        Event::Attempt(Attempt {
            scenario: "baseline".into(),
            delivery: "whd_1".into(),
            key: "tsk_1".into(),
            job: Some("job-1".into()),
            account: "acct_a".into(),
            attempt: n,
            round: 0,
            faults: vec![],
            sent_at: "2026-11-29T10:00:01.000Z".into(),
            status: Some(204),
            latency_ms: Some(1.5),
            error: None,
            outcome,
            intent: Intent::Genuine,
            detail: None,
            task_status: Some(TaskStatus::Completed),
            created_at: Some("2026-11-29T10:00:00Z".into()),
            resource: None,
            sequence: None,
            poison: false,
            dead: false,
        })
    }

    #[test]
    fn history_round_trips_through_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.jsonl");
        let mut w = HistoryWriter::create(&path).unwrap();
        w.write(&attempt(1, Outcome::Info)).unwrap();
        w.write(&attempt(2, Outcome::Ok)).unwrap();
        w.finish().unwrap();
        let events: Vec<Event> = read(&path).unwrap().collect::<Result<_, _>>().unwrap();
        assert_eq!(
            events,
            vec![attempt(1, Outcome::Info), attempt(2, Outcome::Ok)]
        );
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text
            .lines()
            .next()
            .unwrap()
            .starts_with(r#"{"type":"attempt""#));
    }

    #[test]
    fn concurrent_sink_writes_lose_no_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.jsonl");
        let sink = HistorySink::create(&path).unwrap();
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let s = sink.clone();
                std::thread::spawn(move || {
                    for n in 0..200 {
                        s.write(attempt(n, Outcome::Ok)).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(sink.finish().unwrap(), 1600);
        assert!(sink.write(attempt(1, Outcome::Ok)).is_err());
        assert_eq!(read(&path).unwrap().filter(|e| e.is_ok()).count(), 1600);
    }

    #[test]
    fn a_bad_line_is_named_by_number() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.jsonl");
        let good = serde_json::to_string(&attempt(1, Outcome::Ok)).unwrap();
        std::fs::write(&path, format!("{good}\n{{\"type\":\"nope\"}}\n")).unwrap();
        let err = read(&path)
            .unwrap()
            .nth(1)
            .unwrap()
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 2"), "{err}");
    }
}
