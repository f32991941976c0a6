//! The bench's history: the run header, then one attempt line per copy
//! sent, encoded into each worker's batch and appended to one shared file
//! a batch at a time, so memory stays flat however long the run.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};

use super::target::{LoadError, LoadTarget};
use crate::bench::mix::{Item, Kind};
use crate::history::{encode_attempt, AttemptLine, Outcome};
use crate::sender::exchange::Answer;

/// The scenario name bench attempts carry in the history.
pub const SCENARIO: &str = "bench";

/// Appends attempt lines to the history in batches.
#[derive(Clone)]
pub struct LineSink {
    inner: Arc<Mutex<(File, Option<String>)>>,
    path: String,
}

impl LineSink {
    /// Creates (truncates) the file and writes the run header line.
    pub fn create(path: &Path, header: &crate::history::Event) -> Result<LineSink, LoadError> {
        let err = |e: &dyn std::fmt::Display| LoadError::History {
            path: path.display().to_string(),
            message: e.to_string(),
        };
        let file = File::create(path).map_err(|e| err(&e))?;
        let mut w = file;
        let mut line = serde_json::to_vec(header).map_err(|e| err(&e))?;
        line.push(b'\n');
        w.write_all(&line).map_err(|e| err(&e))?;
        Ok(LineSink {
            inner: Arc::new(Mutex::new((w, None))),
            path: path.display().to_string(),
        })
    }

    /// Appends whole lines; the first error is kept for [`LineSink::finish`].
    pub fn append(&self, lines: &[u8]) {
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if g.1.is_none() {
            if let Err(e) = g.0.write_all(lines) {
                g.1 = Some(e.to_string());
            }
        }
    }

    /// Flushes and fsyncs.
    pub fn finish(&self) -> Result<(), LoadError> {
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let res = match g.1.take() {
            Some(e) => Err(e),
            None => {
                g.0.flush()
                    .and_then(|_| g.0.sync_all())
                    .map_err(|e| e.to_string())
            }
        };
        res.map_err(|message| LoadError::History {
            path: self.path.clone(),
            message,
        })
    }
}

/// The supervisor's fault lines (kills, restarts, cuts under load) go
/// into the bench's history between the workers' batches.
impl crate::history::EventSink for LineSink {
    fn event(&self, event: crate::history::Event) {
        if let Ok(mut line) = serde_json::to_vec(&event) {
            line.push(b'\n');
            self.append(&line);
        }
    }
}

/// Whether `a` refuses a genuine delivery for good under `profile`: an
/// answer the receiver gave (not a transport error) that is no success
/// and that a provider does not retry as a passing condition: a 4xx other
/// than 408 and 429, or a status the profile gives up on. A bench sends
/// each delivery once, so such an answer ends its schedule: the attempt
/// is recorded `dead`, and I9 fails it as it fails a run's delivery whose
/// retries ran out. Answers a provider retries (5xx, 408, 429, timeouts,
/// resets: overload is what a bench provokes) are counted as errors, not
/// judged: the delivery's schedule has not run out.
pub fn refuses(profile: &crate::profile::Profile, a: &Answer) -> bool {
    match a.status {
        Some(s) if profile.is_success(s) => false,
        Some(s) => ((400..500).contains(&s) && s != 408 && s != 429) || profile.gives_up_on(s),
        None => false,
    }
}

/// Whether the attempt `a` of `item` ends its delivery unacknowledged:
/// it was refused ([`refuses`]), no other copy sent with it (`answers`)
/// was acknowledged, and it is no resend of a delivery sent before (whose
/// first send decides its fate).
pub(super) fn ends_refused(t: &LoadTarget, item: &Item, a: &Answer, answers: &[Answer]) -> bool {
    refuses(&t.profile, a)
        && !matches!(item.kind, Kind::Duplicate { .. })
        && !answers
            .iter()
            .any(|o| o.status.is_some_and(|s| t.profile.is_success(s)))
}

/// Appends one attempt line of copy `copy` of `item` (see
/// [`crate::history::encode_attempt`]); `dead` when it ended its delivery
/// unacknowledged ([`ends_refused`]).
#[allow(clippy::too_many_arguments)]
pub(super) fn attempt_line(
    out: &mut Vec<u8>,
    t: &LoadTarget,
    item: &Item,
    copy: u32,
    sent_at: &str,
    a: &Answer,
    outcome: Outcome,
    dead: bool,
) {
    encode_attempt(
        out,
        &AttemptLine {
            scenario: SCENARIO,
            delivery: &item.id,
            key: &item.key,
            job: &item.job,
            account_json: &t.accounts_json[item.account],
            faults: &item.faults(copy),
            sent_at,
            status: a.status,
            latency_ms: a.latency_ms,
            error: a.error(),
            outcome,
            created_at: &item.created_at,
            dead,
        },
    );
}
