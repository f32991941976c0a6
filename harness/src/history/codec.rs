//! The history's codec: writing events as JSON Lines (one writer, or a
//! sink many tasks share), reading them back with line numbers, and
//! [`fold`], the one streaming pass every consumer of a history (the
//! checker, the late-row owners, the kill tally, the retry gaps) is fed by.
//! [`encode_attempt`] writes an attempt line by hand for the bench, where
//! serde's string escaping is a measurable share of the sender's time; the
//! checker's fast reader of those lines is [`super::scan`]. [`diagnose`]
//! names the field of an attempt line serde refused, for both readers.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use super::event::{Event, Outcome};
use super::record::attempt_fields;
use crate::tag::FaultTag;

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
    Ok(BoundedLines {
        r: BufReader::with_capacity(1 << 16, file),
        buf: Vec::new(),
        done: false,
    }
    .enumerate()
    .filter(|(_, l)| !matches!(l, Ok(s) if s.trim().is_empty()))
    .map(move |(i, line)| {
        let line = line.map_err(|e| match e {
            LineError::Io(source) => HistoryError::Io {
                path: path.clone(),
                source,
            },
            LineError::Bad(message) => HistoryError::Line {
                path: path.clone(),
                line: i + 1,
                message,
            },
        })?;
        let bad = |message| HistoryError::Line {
            path: path.clone(),
            line: i + 1,
            message,
        };
        let event: Event = serde_json::from_str(&line)
            .map_err(|e| bad(diagnose(&line).unwrap_or_else(|| e.to_string())))?;
        if let Event::Attempt(a) = &event {
            if let Some(why) = super::record::refused(a.status, Some(&a.sent_at)) {
                return Err(bad(why));
            }
        }
        Ok((i as u64 + 1, event))
    }))
}

enum LineError {
    Io(std::io::Error),
    Bad(String),
}

/// The lines of a history, each at most [`crate::limits::budget::HISTORY_LINE`]
/// bytes of UTF-8: a longer one or one that is not text is an error of
/// its line, never a buffer that grows with the file. After an error the
/// lines end.
struct BoundedLines<R> {
    r: R,
    buf: Vec<u8>,
    done: bool,
}

impl<R: BufRead> Iterator for BoundedLines<R> {
    type Item = Result<String, LineError>;

    fn next(&mut self) -> Option<Self::Item> {
        use std::io::Read;
        let cap = crate::limits::budget::HISTORY_LINE;
        if self.done {
            return None;
        }
        self.buf.clear();
        let n = match (&mut self.r)
            .take(cap as u64 + 1)
            .read_until(b'\n', &mut self.buf)
        {
            Ok(0) => return None,
            Ok(n) => n,
            Err(e) => return Some(Err(LineError::Io(e))),
        };
        if n > cap && self.buf.last() != Some(&b'\n') {
            self.done = true;
            return Some(Err(LineError::Bad(format!(
                "longer than {} without a newline",
                crate::limits::budget::show(cap)
            ))));
        }
        if self.buf.last() == Some(&b'\n') {
            self.buf.pop();
            if self.buf.last() == Some(&b'\r') {
                self.buf.pop();
            }
        }
        match String::from_utf8(std::mem::take(&mut self.buf)) {
            Ok(s) => Some(Ok(s)),
            Err(e) => Some(Err(LineError::Bad(format!(
                "not UTF-8 (at byte {} of the line)",
                e.utf8_error().valid_up_to() + 1
            )))),
        }
    }
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

/// Where whole history events go besides the sender's attempts: a run's
/// [`HistorySink`], or a bench's line sink. The lifecycle supervisor writes
/// its fault lines (kills, restarts, cuts) through it.
pub trait EventSink: Send + Sync {
    /// Appends one event; a write error is kept by the sink for its end.
    fn event(&self, event: Event);
}

impl EventSink for HistorySink {
    fn event(&self, event: Event) {
        let _ = self.write(event);
    }
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

/// One genuine, COMPLETED first attempt as the bench records it, borrowed:
/// the fields [`encode_attempt`] writes.
pub(crate) struct AttemptLine<'a> {
    /// The scenario (plain text, needs no escaping).
    pub scenario: &'a str,
    /// The delivery id (plain).
    pub delivery: &'a str,
    /// The key (plain).
    pub key: &'a str,
    /// The job (plain).
    pub job: &'a str,
    /// The account, already encoded as a JSON string.
    pub account_json: &'a str,
    /// The fault tags.
    pub faults: &'a [FaultTag],
    /// When it was sent (RFC 3339).
    pub sent_at: &'a str,
    /// The answer's status.
    pub status: Option<u16>,
    /// Time to the answer, in milliseconds (written with 3 decimals).
    pub latency_ms: f64,
    /// The transport error text (escaped through serde_json).
    pub error: Option<&'a str>,
    /// The outcome.
    pub outcome: Outcome,
    /// The task's createdAt (plain).
    pub created_at: &'a str,
    /// This attempt ended the delivery's schedule unacknowledged.
    pub dead: bool,
}

/// Appends one attempt line: the same JSON as `Event::Attempt` (a test
/// reads it back), written by hand because serde's escaping of strings the
/// harness generated itself is a measurable share of a 100k/s sender. Only
/// the account and the error text can need escaping; they go through
/// serde_json.
pub(crate) fn encode_attempt(out: &mut Vec<u8>, a: &AttemptLine<'_>) {
    // Straight into the caller's batch: no line buffer of its own.
    let mut put = |t: &str| out.extend_from_slice(t.as_bytes());
    put(r#"{"type":"attempt","scenario":""#);
    put(a.scenario);
    put(r#"","delivery":""#);
    put(a.delivery);
    put(r#"","key":""#);
    put(a.key);
    put(r#"","job":""#);
    put(a.job);
    put(r#"","account":"#);
    put(a.account_json);
    put(r#","attempt":1,"round":0,"faults":["#);
    for (i, f) in a.faults.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.push(b'"');
        // Writing into a Vec cannot fail.
        let _ = write!(out, "{f}");
        out.push(b'"');
    }
    out.extend_from_slice(br#"],"sent_at":""#);
    out.extend_from_slice(a.sent_at.as_bytes());
    out.extend_from_slice(br#"","status":"#);
    match a.status {
        Some(code) => push_dec_bytes(out, u64::from(code)),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(br#","latency_ms":"#);
    let micros = (a.latency_ms * 1000.0).round().max(0.0) as u64;
    push_dec_bytes(out, micros / 1000);
    let frac = micros % 1000;
    out.extend_from_slice(&[
        b'.',
        b'0' + (frac / 100) as u8,
        b'0' + (frac / 10 % 10) as u8,
        b'0' + (frac % 10) as u8,
    ]);
    out.extend_from_slice(br#","error":"#);
    match a.error {
        Some(e) => {
            if serde_json::to_writer(&mut *out, e).is_err() {
                out.extend_from_slice(b"null");
            }
        }
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(match a.outcome {
        Outcome::Ok => br#","outcome":"ok""#,
        Outcome::Fail => br#","outcome":"fail""#,
        Outcome::Info => br#","outcome":"info""#,
    });
    out.extend_from_slice(br#","intent":"genuine","task_status":"COMPLETED","created_at":""#);
    out.extend_from_slice(a.created_at.as_bytes());
    out.extend_from_slice(if a.dead {
        b"\",\"dead\":true}\n".as_slice()
    } else {
        b"\"}\n".as_slice()
    });
}

/// Appends `v` in decimal to a byte buffer.
fn push_dec_bytes(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(crate::text::decimal::digits(v, &mut [0u8; 20]));
}

/// Appends `v` in decimal without going through `fmt`.
pub(crate) fn push_dec(out: &mut String, v: u64) {
    let mut buf = [0u8; 20];
    let digits = crate::text::decimal::digits(v, &mut buf);
    out.push_str(std::str::from_utf8(digits).expect("ascii digits"));
}

/// Names the field serde refused on an attempt line: each field's value
/// is read alone as its kind's type, and the first that fails is named
/// with why (`field `round`: invalid type: string "x", expected u32`).
/// Only on a line serde refused, so the cost is the error's; `None` when
/// the line is no attempt or no one field is to blame.
macro_rules! diagnose_fields {
    ($( $(#[doc = $doc:literal])* $(#[serde($($serde:tt)*)])? $name:ident : $kind:ident $($t:ty)? ),* $(,)?) => {
        pub(crate) fn diagnose(line: &str) -> Option<String> {
            use serde::Deserialize;
            use super::event::{Intent, Outcome};
            use super::record::{nullable, owned_type};
            use crate::delivery::TaskStatus;
            let map: serde_json::Map<String, serde_json::Value> = serde_json::from_str(line).ok()?;
            if map.get("type")?.as_str()? != "attempt" {
                return None;
            }
            $(
                if let Some(v) = map.get(stringify!($name)) {
                    let skip = v.is_null() && nullable!($kind $($t)?);
                    if !skip {
                        if let Err(e) = <owned_type!($kind $($t)?)>::deserialize(v) {
                            return Some(format!("field `{}`: {e}", stringify!($name)));
                        }
                    }
                }
            )*
            None
        }
    };
}
attempt_fields!(diagnose_fields);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delivery::TaskStatus;
    use crate::history::Attempt;

    fn attempt(n: u32, outcome: Outcome) -> Event {
        Event::Attempt(Attempt {
            job: Some("job-1".into()),
            attempt: n,
            sent_at: "2026-11-29T10:00:01.000Z".into(),
            status: Some(204),
            latency_ms: Some(1.5),
            outcome,
            task_status: Some(TaskStatus::Completed),
            created_at: Some("2026-11-29T10:00:00Z".into()),
            ..Attempt::new("baseline", "whd_1", "tsk_1", "acct_a")
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
    fn hand_encoded_attempt_lines_read_back_as_the_attempts_they_record() {
        // Several lines into one batch: each must parse (serde) as exactly
        // the attempt it stands for, whatever came before it in the buffer.
        let faults = [
            vec![],
            vec![FaultTag::Replay],
            vec![FaultTag::ConcurrentCopy { k: 2, n: 2 }, FaultTag::Reorder],
        ];
        let cases = [
            (Some(204), 1.25, None, Outcome::Ok, r#""acct_a""#, "acct_a"),
            (
                None,
                0.0,
                Some("timeout after 2s"),
                Outcome::Info,
                r#""b""#,
                "b",
            ),
            (
                None,
                1234.5,
                Some("reset \"by\" peer\n\u{1}é"),
                Outcome::Fail,
                r#""q\"uote""#,
                "q\"uote",
            ),
            (Some(500), 0.001, None, Outcome::Info, r#""c""#, "c"),
        ];
        let mut batch = Vec::new();
        let mut expected = Vec::new();
        for (i, (status, latency, error, outcome, account_json, account)) in
            cases.into_iter().enumerate()
        {
            let f = &faults[i % faults.len()];
            let delivery = format!("whd_{i}");
            let key = format!("tsk_{i}");
            encode_attempt(
                &mut batch,
                &AttemptLine {
                    scenario: "bench",
                    delivery: &delivery,
                    key: &key,
                    job: "job-7",
                    account_json,
                    faults: f,
                    sent_at: "2026-11-30T23:59:59.999Z",
                    status,
                    latency_ms: latency,
                    error,
                    outcome,
                    created_at: "2026-01-01T00:00:00Z",
                    dead: status == Some(500),
                },
            );
            expected.push(Event::Attempt(Attempt {
                job: Some("job-7".into()),
                faults: f.clone(),
                sent_at: "2026-11-30T23:59:59.999Z".into(),
                status,
                latency_ms: Some(latency),
                error: error.map(str::to_string),
                outcome,
                task_status: Some(TaskStatus::Completed),
                created_at: Some("2026-01-01T00:00:00Z".into()),
                dead: status == Some(500),
                ..Attempt::new("bench", &delivery, &key, account)
            }));
        }
        let text = String::from_utf8(batch).unwrap();
        let read: Vec<Event> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect();
        assert_eq!(read, expected);
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
