//! What a worker counts: latencies, statuses and errors, per second of
//! the phase and in total, merged across workers at the end; and the live
//! view of the tallies the progress line reads while the phase runs.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};

use serde::{Deserialize, Serialize};
use std::time::Instant;

use crate::bench::latency::{Percentiles, Recorder};
use crate::history::{Failure, TransportFailure};

/// What one worker saw; merged at the end and read by the progress line.
#[derive(Debug, Clone, Default)]
pub struct WorkerStats {
    /// Latencies of measured requests (after warmup).
    pub latency: Recorder,
    /// Latencies since the progress line last looked.
    pub recent: Recorder,
    /// Requests completed per second of the phase, warmup included.
    pub per_second: Vec<u64>,
    /// Of those, requests without a success status (the error series).
    pub failed_per_second: Vec<u64>,
    /// Measured requests by status (`"204"`, …) or `"error"`.
    pub statuses: BTreeMap<String, u64>,
    /// Measured transport errors by kind.
    pub errors: BTreeMap<String, u64>,
    /// Measured requests.
    pub requests: u64,
    /// Measured requests graded `ok`.
    pub ok: u64,
    /// Requests during warmup.
    pub warmup_requests: u64,
    /// Errors since the progress line last looked.
    pub recent_errors: u64,
    /// Requests since the progress line last looked.
    pub recent_requests: u64,
    /// Deliveries refused: no copy acknowledged, one refused
    /// ([`super::refuses`]); resends of a delivery aside, warmup included.
    pub refused: u64,
    /// Deliveries sent, resends of a delivery aside, warmup included.
    pub answered: u64,
}

impl WorkerStats {
    /// Adds another worker's tally.
    pub fn merge(&mut self, o: &WorkerStats) {
        self.latency.merge(&o.latency);
        if self.per_second.len() < o.per_second.len() {
            self.per_second.resize(o.per_second.len(), 0);
        }
        for (i, n) in o.per_second.iter().enumerate() {
            self.per_second[i] += n;
        }
        if self.failed_per_second.len() < o.failed_per_second.len() {
            self.failed_per_second.resize(o.failed_per_second.len(), 0);
        }
        for (i, n) in o.failed_per_second.iter().enumerate() {
            self.failed_per_second[i] += n;
        }
        for (k, v) in &o.statuses {
            *self.statuses.entry(k.clone()).or_default() += v;
        }
        for (k, v) in &o.errors {
            *self.errors.entry(k.clone()).or_default() += v;
        }
        self.requests += o.requests;
        self.ok += o.ok;
        self.warmup_requests += o.warmup_requests;
        self.refused += o.refused;
        self.answered += o.answered;
    }

    /// Requests that did not get a success status.
    pub fn failed(&self) -> u64 {
        self.requests - self.ok
    }
}

/// Live view of a phase for the progress line.
#[derive(Clone)]
pub struct Live {
    /// One tally per worker.
    pub tallies: Arc<Vec<Mutex<WorkerStats>>>,
    /// When the phase started.
    pub start: Instant,
    /// When measuring starts.
    pub measure_from: Instant,
    /// The bench's refusals.
    pub refusals: Refusals,
}

impl Live {
    /// Takes the recent counters of every worker: (requests, errors, p99 ms).
    pub fn take_recent(&self) -> (u64, u64, f64) {
        let mut rec = Recorder::default();
        let (mut n, mut e) = (0, 0);
        for t in self.tallies.iter() {
            let mut t = t.lock().unwrap_or_else(|p| p.into_inner());
            rec.merge(&t.recent);
            t.recent.reset();
            n += t.recent_requests;
            e += t.recent_errors;
            t.recent_requests = 0;
            t.recent_errors = 0;
        }
        let p99 = Percentiles::of(&rec.corrected).p99_ms;
        (n, e, p99)
    }

    /// The phase's deliveries sent and refused so far, resends aside,
    /// warmup included.
    pub fn refused(&self) -> (u64, u64) {
        self.tallies.iter().fold((0, 0), |(n, r), t| {
            let t = t.lock().unwrap_or_else(|p| p.into_inner());
            (n + t.answered, r + t.refused)
        })
    }
}

/// The first answer that refused a delivery ([`super::refuses`]): what the
/// receiver said, for the I9 finding and the console.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refusal {
    /// The status.
    pub status: u16,
    /// The answer's body, at most [`super::lane::KEPT_BODY`] bytes of it
    /// (invalid UTF-8 replaced).
    pub body: String,
    /// The delivery id it refused.
    pub delivery: String,
    /// The history key of that delivery.
    pub key: String,
    /// The account.
    pub account: String,
}

/// The first refusal of a bench, across its phases, kept by whichever
/// worker met it first.
#[derive(Debug, Clone, Default)]
pub struct Refusals {
    first: Arc<OnceLock<Refusal>>,
}

impl Refusals {
    /// The first refusal, if any came.
    pub fn first(&self) -> Option<&Refusal> {
        self.first.get()
    }

    /// Whether a worker should read the body of a failed answer (no
    /// refusal is kept yet).
    pub(super) fn wants_body(&self) -> bool {
        self.first.get().is_none()
    }

    /// Keeps `r` unless one was kept before.
    pub(super) fn keep(&self, r: impl FnOnce() -> Refusal) {
        if self.first.get().is_none() {
            let _ = self.first.set(r());
        }
    }
}

/// Error kinds short enough to count, by the failure's kind: `connect`
/// when nothing was sent (no connection, or no request to send),
/// `timeout`, else a short word for the way an open exchange broke, else
/// the detail's first 60 characters.
pub(super) fn error_kind(f: &Failure) -> String {
    match f.kind() {
        TransportFailure::Connect | TransportFailure::Request => return "connect".into(),
        TransportFailure::Timeout => return "timeout".into(),
        TransportFailure::Other => {}
    }
    let t = f.detail().to_ascii_lowercase();
    for k in ["reset", "closed", "broken pipe"] {
        if t.contains(k) {
            return k.to_string();
        }
    }
    f.detail().chars().take(60).collect()
}

/// Counts one more answer with status `status` (`"204"`, …) or `"error"`
/// under its text, allocating the key only the first time it is seen.
pub(super) fn count_status(statuses: &mut BTreeMap<String, u64>, status: Option<u16>) {
    let mut buf = [0u8; 20];
    let key = match status {
        Some(s) => std::str::from_utf8(crate::text::decimal::digits(s.into(), &mut buf))
            .expect("ascii digits"),
        None => "error",
    };
    match statuses.get_mut(key) {
        Some(n) => *n += 1,
        None => {
            statuses.insert(key.to_string(), 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::load::CUT_AT_END;
    use std::time::Duration;

    #[test]
    fn statuses_are_counted_under_their_text() {
        let mut m = BTreeMap::new();
        for s in [Some(204), Some(204), None, Some(5), Some(65535), Some(0)] {
            count_status(&mut m, s);
        }
        let expect: BTreeMap<String, u64> =
            [("204", 2), ("error", 1), ("5", 1), ("65535", 1), ("0", 1)]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect();
        assert_eq!(m, expect);
    }

    #[test]
    fn errors_are_counted_by_their_transport_failure_kind() {
        use TransportFailure::*;
        let kind = |k, detail: &str| error_kind(&Failure::new(k, detail));
        assert_eq!(
            error_kind(&Failure::timeout(Duration::from_secs(2))),
            "timeout"
        );
        assert_eq!(
            kind(
                Connect,
                "tcp connect error: Connection refused (os error 111)"
            ),
            "connect"
        );
        assert_eq!(
            kind(Request, "header x holds the control byte 0x0d"),
            "connect"
        );
        // A detail that merely says "timed out" is counted by its kind.
        assert_eq!(
            kind(Other, "Connection timed out (os error 110)"),
            "Connection timed out (os error 110)"
        );
        assert_eq!(
            kind(Other, "connection closed before the status line"),
            "closed"
        );
        assert_eq!(
            kind(Other, "reading the answer: Connection reset by peer"),
            "reset"
        );
        assert_eq!(kind(Other, "Broken pipe (os error 32)"), "broken pipe");
        assert_eq!(error_kind(&Failure::other(CUT_AT_END)), CUT_AT_END);
    }
}
