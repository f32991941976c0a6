//! The load loops: open loop at a constant arrival rate, closed loop as fast
//! as the receiver answers.
//!
//! Each worker owns one HTTP/1.1 connection ([`wire`]: a plain
//! `TcpStream`, no pool in the way) and a second one, opened lazily, for
//! the other copy of a concurrent duplicate. Workers claim slots from one
//! atomic counter. In open loop slot `k` is due at `start + k / rate`; a
//! worker sleeps until then and the latency is measured from that intended
//! time, so a slow receiver cannot slow the load down and hide its
//! latency. Every request is signed at send time with the profile's scheme
//! and becomes one attempt line, buffered per worker and appended to the
//! history in batches, so memory stays flat however long the run.
//!
//! The connections are driven by hand, not through a pooled client or a
//! load-generation crate, for a measured reason: every request is signed,
//! recorded and (for a duplicate) paired at send time, which a generic load
//! tool cannot do, and the sender must still keep up with tools that replay
//! one pre-signed request. So the per-request path allocates next to
//! nothing: a worker refills one delivery, signs it with the account's
//! [`Signer`] (keyed once) into reused header values, encodes the request
//! into one reused buffer written with one `write`, and appends the attempt
//! line to its batch. Measured against `oha` and `wrk` on the same null
//! receiver in the README ("Performance", `harness/scripts/compare.sh`).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::latency::Recorder;
use super::mix::{Generator, Item};
use crate::history::{encode_attempt, AttemptLine, Failure, Intent, Outcome, TransportFailure};
use crate::profile::signature::{Secret, SignInput, Signer};
use crate::profile::Profile;
use crate::run::interrupt::Stop;
use crate::sender::exchange::{classify, Answer};

mod wire;
use wire::Wire;

/// The scenario name bench attempts carry in the history.
pub const SCENARIO: &str = "bench";

/// How the load is driven.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pace {
    /// Constant arrival rate, requests per second.
    Open(f64),
    /// As fast as the receiver answers.
    Closed,
}

/// Where and how to send.
#[derive(Clone)]
pub struct LoadTarget {
    /// Socket address of the receiver.
    pub addr: SocketAddr,
    /// `Host` header value.
    pub authority: String,
    /// Path per account index (`{account}` substituted).
    pub paths: Vec<String>,
    /// The same paths, parsed.
    pub uris: Vec<http::Uri>,
    /// `Host` header value, parsed.
    pub host: http::HeaderValue,
    /// The profile's delivery id header, parsed.
    pub id_header: Option<http::HeaderName>,
    /// The profile's event header, parsed.
    pub event_header: Option<http::HeaderName>,
    /// Account names, by index.
    pub accounts: Vec<String>,
    /// Account names as JSON strings, by index (for history lines).
    pub accounts_json: Vec<String>,
    /// Secrets per account index (current first).
    pub secrets: Vec<Vec<Secret>>,
    /// The profile's scheme keyed with each account's secrets, by index.
    pub signers: Vec<Signer>,
    /// The headers the signers fill, parsed, in their order.
    pub signed_headers: Vec<http::HeaderName>,
    /// The delivery id header is one the scheme signs (set by the signer).
    pub id_signed: bool,
    /// The sender profile (scheme, timeout, success statuses, headers).
    pub profile: Profile,
}

/// A load target could not be prepared.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The URL is not usable.
    #[error("target url {url:?}: {reason}")]
    BadUrl {
        /// The URL.
        url: String,
        /// What is wrong.
        reason: String,
    },
    /// An account has no secret.
    #[error("account {0:?} has no secret (hint: the target file must define one)")]
    NoSecret(String),
    /// An account's secret cannot key the profile's signature.
    #[error("account {account:?}: cannot sign: {reason}")]
    BadSecret {
        /// The account.
        account: String,
        /// Why.
        reason: String,
    },
    /// The history could not be written.
    #[error("history {path}: {message}")]
    History {
        /// The file.
        path: String,
        /// The error.
        message: String,
    },
}

impl LoadTarget {
    /// Resolves `url` (may contain `{account}`) for `accounts`.
    pub async fn resolve(
        url: &str,
        profile: Profile,
        accounts: &[String],
        secrets: &BTreeMap<String, Vec<Secret>>,
    ) -> Result<LoadTarget, LoadError> {
        let bad = |reason: String| LoadError::BadUrl {
            url: url.to_string(),
            reason,
        };
        let mut paths = Vec::new();
        let mut authority = String::new();
        let mut sec = Vec::new();
        for a in accounts {
            let uri: http::Uri = url
                .replace("{account}", a)
                .parse()
                .map_err(|e| bad(format!("{e}")))?;
            if uri.scheme_str() != Some("http") {
                return Err(bad(
                    "expected http://HOST:PORT/PATH (bench drives raw HTTP/1 connections; for an https receiver, bench its plain-http side or use `hookstorm run`)".into(),
                ));
            }
            authority = uri
                .authority()
                .map(|a| a.to_string())
                .ok_or_else(|| bad("no host".into()))?;
            paths.push(
                uri.path_and_query()
                    .map(|p| p.to_string())
                    .unwrap_or_else(|| "/".into()),
            );
            let s = secrets
                .get(a)
                .filter(|s| !s.is_empty())
                .cloned()
                .ok_or_else(|| LoadError::NoSecret(a.clone()))?;
            sec.push(s);
        }
        let host_port = if authority.contains(':') {
            authority.clone()
        } else {
            format!("{authority}:80")
        };
        let addr = tokio::net::lookup_host(host_port.as_str())
            .await
            .map_err(|e| bad(format!("cannot resolve {host_port}: {e}")))?
            .next()
            .ok_or_else(|| bad(format!("{host_port} resolves to nothing")))?;
        let header = |name: &str| {
            http::HeaderName::from_bytes(name.as_bytes())
                .map_err(|e| bad(format!("profile header {name:?}: {e}")))
        };
        let id_header = profile.delivery_id_header().map(header).transpose()?;
        let event_header = profile.event_header.as_deref().map(header).transpose()?;
        let uris = paths
            .iter()
            .map(|p| p.parse::<http::Uri>().map_err(|e| bad(format!("{e}"))))
            .collect::<Result<_, _>>()?;
        let host = http::HeaderValue::from_str(&authority).map_err(|e| bad(format!("{e}")))?;
        let signers = accounts
            .iter()
            .zip(&sec)
            .map(|(a, s)| {
                profile.scheme.signer(s).map_err(|e| LoadError::BadSecret {
                    account: a.clone(),
                    reason: e.to_string(),
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let names: &[String] = signers.first().map(|s| s.header_names()).unwrap_or(&[]);
        let signed_headers = names
            .iter()
            .map(|n| header(n))
            .collect::<Result<Vec<_>, _>>()?;
        let id_signed = id_header
            .as_ref()
            .is_some_and(|idh| signed_headers.iter().any(|n| n == idh));
        Ok(LoadTarget {
            signers,
            signed_headers,
            id_signed,
            uris,
            host,
            id_header,
            event_header,
            addr,
            authority,
            paths,
            accounts: accounts.to_vec(),
            accounts_json: accounts
                .iter()
                .map(|a| serde_json::to_string(a).unwrap_or_else(|_| "\"\"".into()))
                .collect(),
            secrets: sec,
            profile,
        })
    }
}

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

/// Appends one attempt line of copy `copy` of `item` (see
/// [`crate::history::encode_attempt`]).
fn attempt_line(
    out: &mut Vec<u8>,
    t: &LoadTarget,
    item: &Item,
    copy: u32,
    sent_at: &str,
    a: &Answer,
    outcome: Outcome,
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
        },
    );
}

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
    }

    /// Requests that did not get a success status.
    pub fn failed(&self) -> u64 {
        self.requests - self.ok
    }
}

/// One phase of load: a pace held for a duration after a warmup.
#[derive(Debug, Clone, Copy)]
pub struct Phase {
    /// Open or closed loop.
    pub pace: Pace,
    /// Connections (workers).
    pub connections: usize,
    /// Measured time.
    pub duration: Duration,
    /// Time before it, sent but not measured.
    pub warmup: Duration,
    /// Sender threads (the workers of one runtime).
    pub threads: usize,
    /// Keep recent latencies for a live progress line.
    pub live: bool,
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
        let p99 = super::latency::Percentiles::of(&rec.corrected).p99_ms;
        (n, e, p99)
    }
}

/// How long requests still in flight at the end of a phase may take to be
/// answered; then they are cut and recorded as unanswered. This is what
/// makes `--duration` a hard bound whatever the receiver does.
pub const END_GRACE: Duration = Duration::from_secs(2);

/// Open loop sleeps in slices of at most this, so a stop request ends a
/// worker that waits for a far slot.
const SLEEP_SLICE: Duration = Duration::from_millis(50);

/// The error text of a request cut at the end of a phase.
pub const CUT_AT_END: &str = "no answer before the bench ended";

struct Shared {
    target: LoadTarget,
    gen: Generator,
    next: Arc<AtomicU64>,
    first: u64,
    pace: Pace,
    start: Instant,
    measure_from: Instant,
    end: Instant,
    /// In-flight requests are cut here: `end` plus [`END_GRACE`].
    hard_end: Instant,
    sink: Option<LineSink>,
    stop: Arc<AtomicBool>,
    /// Slots actually sent (each once, whatever its copies).
    sent: AtomicU64,
    live: bool,
}

/// Error kinds short enough to count, by the failure's kind: `connect`
/// when nothing was sent (no connection, or no request to send),
/// `timeout`, else a short word for the way an open exchange broke, else
/// the detail's first 60 characters.
fn error_kind(f: &Failure) -> String {
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

/// A connection of a worker and its alarm. One timer per connection, armed
/// at a request's time limit only when it goes off before that limit, in
/// place of a timer set and cancelled for every request: limits never move
/// back, so an alarm set for an earlier request can only ring early.
struct Lane {
    conn: Option<Wire>,
    alarm: Pin<Box<tokio::time::Sleep>>,
}

impl Lane {
    fn new() -> Lane {
        Lane {
            conn: None,
            alarm: Box::pin(tokio::time::sleep_until(Instant::now().into())),
        }
    }
}

/// Sends one copy (`request`, encoded) on the lane's connection,
/// connecting first when there is none or the peer closed it while idle;
/// gives up at the profile's `timeout` or at `hard_end`, whichever comes
/// first. The latency is taken when the answer head is in; the body is
/// then read past (an error there keeps the status, and drops the
/// connection).
async fn exchange(
    lane: &mut Lane,
    addr: SocketAddr,
    request: &[u8],
    timeout: Duration,
    sent: Instant,
    hard_end: Instant,
) -> Answer {
    let cut = hard_end.saturating_duration_since(sent) < timeout;
    let timeout = timeout.min(hard_end.saturating_duration_since(sent));
    let limit = sent + timeout;
    let ms = |s: Instant| s.elapsed().as_secs_f64() * 1000.0;
    let Lane { conn, alarm } = lane;
    let fut = async {
        if conn.as_mut().is_none_or(|c| c.stale()) {
            *conn = Some(Box::pin(Wire::connect(addr)).await?);
        }
        let c = conn.as_mut().expect("connected above");
        let head = c.send(request).await?;
        let latency = ms(sent);
        if !c.finish(&head).await.unwrap_or(false) {
            *conn = None;
        }
        Ok::<_, Failure>((head.status, latency))
    };
    let answered = async {
        tokio::pin!(fut);
        loop {
            tokio::select! {
                biased;
                out = &mut fut => return Ok(out),
                () = alarm.as_mut() => {
                    if Instant::now() >= limit {
                        return Err(());
                    }
                    alarm.as_mut().reset(limit.into());
                }
            }
        }
    };
    match answered.await {
        Ok(Ok((status, latency))) => Answer {
            location: None,
            body: Bytes::new(),
            status: Some(status),
            latency_ms: latency,
            failure: None,
        },
        Ok(Err(failure)) => {
            *conn = None;
            Answer::failed(failure, ms(sent))
        }
        Err(_) => {
            *conn = None;
            let failure = if cut {
                Failure::other(CUT_AT_END)
            } else {
                Failure::timeout(timeout)
            };
            Answer::failed(failure, ms(sent))
        }
    }
}

/// Encodes the request of `item` signed at `now_unix` into `out` (cleared
/// first): the HTTP/1.1 head, then the body. `values` is the worker's
/// reused buffer for the signed header values. A value that cannot be a
/// header value (a control character) is an error (what is wrong with the
/// request), as hyper's would be.
fn encode_request(
    t: &LoadTarget,
    item: &Item,
    now_unix: i64,
    values: &mut Vec<String>,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    t.signers[item.account].sign_values(
        SignInput {
            id: &item.id,
            timestamp: now_unix,
            body: &item.body,
        },
        values,
    );
    out.clear();
    out.extend_from_slice(b"POST ");
    out.extend_from_slice(t.paths[item.account].as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
    let mut header = |name: &str, value: &[u8]| -> Result<(), String> {
        if let Some(b) = value
            .iter()
            .find(|b| (**b < 0x20 && **b != b'\t') || **b == 0x7f)
        {
            return Err(format!("header {name} holds the control byte 0x{b:02x}"));
        }
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value);
        out.extend_from_slice(b"\r\n");
        Ok(())
    };
    header("host", t.authority.as_bytes())?;
    header("content-type", b"application/json")?;
    if let Some(idh) = &t.id_header {
        if !t.id_signed {
            header(idh.as_str(), item.id.as_bytes())?;
        }
    }
    if let Some(ev) = &t.event_header {
        header(ev.as_str(), b"task.completed")?;
    }
    for (name, v) in t.signed_headers.iter().zip(values.iter()) {
        header(name.as_str(), v.as_bytes())?;
    }
    let mut digits = [0u8; 20];
    header(
        "content-length",
        crate::decimal::digits(item.body.len() as u64, &mut digits),
    )?;
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(&item.body);
    Ok(())
}

/// Counts one more answer with status `status` (`"204"`, …) or `"error"`
/// under its text, allocating the key only the first time it is seen.
fn count_status(statuses: &mut BTreeMap<String, u64>, status: Option<u16>) {
    let mut buf = [0u8; 20];
    let key = match status {
        Some(s) => {
            std::str::from_utf8(crate::decimal::digits(s.into(), &mut buf)).expect("ascii digits")
        }
        None => "error",
    };
    match statuses.get_mut(key) {
        Some(n) => *n += 1,
        None => {
            statuses.insert(key.to_string(), 1);
        }
    }
}

const FLUSH_AT: usize = 64 * 1024;

async fn worker(shared: Arc<Shared>, tally: Arc<Vec<Mutex<WorkerStats>>>, me: usize) {
    let t = &shared.target;
    let mut lane = Lane::new();
    let mut lane2 = Lane::new();
    let mut lines: Vec<u8> = Vec::with_capacity(FLUSH_AT + 4096);
    // Reused from one request to the next: the delivery, its send time,
    // the signed header values, the encoded request and the answers.
    let mut item = shared.gen.item(shared.first);
    let mut sent_at = String::with_capacity(24);
    let mut values: Vec<String> = Vec::new();
    let mut request: Vec<u8> = Vec::with_capacity(1024);
    let mut answers: Vec<Answer> = Vec::with_capacity(2);
    let timeout = t.profile.timeout;
    loop {
        if shared.stop.load(Ordering::Relaxed) {
            break;
        }
        let slot = shared.next.fetch_add(1, Ordering::Relaxed);
        let intended = match shared.pace {
            Pace::Open(rate) => {
                let at =
                    shared.start + Duration::from_secs_f64((slot - shared.first) as f64 / rate);
                // A slot is sent only while the phase lasts: a rate the
                // machine cannot reach ends with the phase, behind schedule.
                if at >= shared.end || Instant::now() >= shared.end {
                    break;
                }
                loop {
                    if shared.stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let now = Instant::now();
                    if now >= at {
                        break;
                    }
                    tokio::time::sleep_until((at.min(now + SLEEP_SLICE)).into()).await;
                }
                if shared.stop.load(Ordering::Relaxed) {
                    break;
                }
                at
            }
            Pace::Closed => {
                let now = Instant::now();
                if now >= shared.end {
                    break;
                }
                now
            }
        };
        shared.sent.fetch_add(1, Ordering::Relaxed);
        shared.gen.fill(slot, &mut item);
        let now_unix = super::mix::wall_clock_into(&mut sent_at);
        let sent = Instant::now();
        answers.clear();
        match encode_request(t, &item, now_unix, &mut values, &mut request) {
            Err(e) => answers.push(Answer::failed(
                Failure::new(TransportFailure::Request, e),
                0.0,
            )),
            // Both copies of a concurrent duplicate carry the same bytes:
            // one delivery, signed once at its send time.
            Ok(()) if item.copies > 1 => {
                let (a, b) = tokio::join!(
                    exchange(&mut lane, t.addr, &request, timeout, sent, shared.hard_end),
                    exchange(&mut lane2, t.addr, &request, timeout, sent, shared.hard_end)
                );
                answers.push(a);
                answers.push(b);
            }
            Ok(()) => answers
                .push(exchange(&mut lane, t.addr, &request, timeout, sent, shared.hard_end).await),
        }
        let done = Instant::now();
        // Measured by when it was really sent: a sender far behind an
        // unreachable rate still measures what it sends after the warmup
        // (latency still counts from the intended time).
        let measured = sent >= shared.measure_from;
        {
            let mut tl = tally[me].lock().unwrap_or_else(|p| p.into_inner());
            let sec = done.saturating_duration_since(shared.start).as_secs() as usize;
            if tl.per_second.len() <= sec {
                tl.per_second.resize(sec + 1, 0);
            }
            if tl.failed_per_second.len() <= sec {
                tl.failed_per_second.resize(sec + 1, 0);
            }
            for a in &answers {
                let ok = a.status.is_some_and(|s| t.profile.is_success(s));
                tl.per_second[sec] += 1;
                tl.recent_requests += 1;
                if !ok {
                    tl.recent_errors += 1;
                    tl.failed_per_second[sec] += 1;
                }
                let lat = Duration::from_secs_f64(a.latency_ms / 1000.0);
                let corrected = lat + sent.saturating_duration_since(intended);
                if shared.live {
                    let _ = tl.recent.corrected.record(
                        (corrected.as_micros() as u64).clamp(1, super::latency::MAX_MICROS),
                    );
                }
                if !measured {
                    tl.warmup_requests += 1;
                    continue;
                }
                match shared.pace {
                    Pace::Open(_) => tl.latency.record_durations(corrected, lat),
                    // Closed loop sends when it claims: both views are one.
                    Pace::Closed => {
                        let _ = tl
                            .latency
                            .corrected
                            .record((lat.as_micros() as u64).clamp(1, super::latency::MAX_MICROS));
                    }
                }
                tl.requests += 1;
                if ok {
                    tl.ok += 1;
                }
                count_status(&mut tl.statuses, a.status);
                if let Some(f) = &a.failure {
                    *tl.errors.entry(error_kind(f)).or_default() += 1;
                }
            }
        }
        if let Some(sink) = &shared.sink {
            for (i, a) in answers.iter().enumerate() {
                let grade = classify(&t.profile, Intent::Genuine, a);
                attempt_line(
                    &mut lines,
                    t,
                    &item,
                    i as u32 + 1,
                    &sent_at,
                    a,
                    grade.outcome,
                );
            }
            if lines.len() >= FLUSH_AT {
                sink.append(&lines);
                lines.clear();
            }
        }
    }
    if let Some(sink) = &shared.sink {
        sink.append(&lines);
    }
}

/// What a phase did.
#[derive(Debug, Clone)]
pub struct PhaseResult {
    /// Every worker's tally, merged.
    pub tally: WorkerStats,
    /// Measured wall time (from the end of warmup to the last answer).
    pub measured: Duration,
    /// The next free slot (for a following phase).
    pub next_slot: u64,
    /// Open loop: slots due within the phase (warmup included).
    pub due: u64,
    /// Slots sent (each once, whatever its copies).
    pub sent: u64,
    /// A stop request ended the phase early.
    pub stopped: bool,
}

impl PhaseResult {
    /// Open loop: the rate was not reached when fewer than this share of
    /// the slots due were sent.
    pub const REACHED_SHARE: f64 = 0.95;

    /// Whether an open-loop phase sent (nearly) every slot due; always true
    /// in closed loop and in a stopped phase (it did not run its course).
    pub fn rate_reached(&self) -> bool {
        self.stopped || self.due == 0 || self.sent as f64 >= self.due as f64 * Self::REACHED_SHARE
    }
}

/// Runs one phase from slot `first`; `on_start` gets the live view (for a
/// progress line) before the workers start. The phase ends at its
/// duration (requests in flight get [`END_GRACE`], then are cut) or, soon
/// after, when `stop` is requested.
pub async fn run_phase(
    target: &LoadTarget,
    gen: &Generator,
    phase: Phase,
    first: u64,
    sink: Option<LineSink>,
    stop: &Stop,
    on_start: impl FnOnce(Live),
) -> PhaseResult {
    let connections = phase.connections.max(1);
    let start = Instant::now() + Duration::from_millis(5);
    let measure_from = start + phase.warmup;
    let end = measure_from + phase.duration;
    let hard_end = end + END_GRACE;
    let next = Arc::new(AtomicU64::new(first));
    let shared = Arc::new(Shared {
        target: target.clone(),
        gen: gen.clone(),
        next: next.clone(),
        first,
        pace: phase.pace,
        start,
        measure_from,
        end,
        hard_end,
        sink,
        stop: Arc::new(AtomicBool::new(false)),
        sent: AtomicU64::new(0),
        live: phase.live,
    });
    let tallies: Arc<Vec<Mutex<WorkerStats>>> =
        Arc::new((0..connections).map(|_| Mutex::default()).collect());
    on_start(Live {
        tallies: tallies.clone(),
        start,
        measure_from,
    });
    // One work-stealing runtime with a worker per sender thread. Measured
    // against one single-threaded runtime per thread (each with its share of
    // the connections), it sends 5-10% more against the same receiver on
    // two cores, and the receiver switches context a sixth as often.
    let threads = phase.threads.clamp(1, connections);
    let (shared2, tallies2) = (shared.clone(), tallies.clone());
    let (done_tx, done_rx) = tokio::sync::oneshot::channel::<()>();
    // A plain thread joins the senders: a runtime never waits for it, so a
    // stopped phase can leave a sender stuck on a hung connection behind.
    let joiner = std::thread::Builder::new()
        .name("bench-join".into())
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(threads)
                .thread_name("bench-send")
                .enable_all()
                .build()
                .expect("the sender runtime builds");
            rt.block_on(async move {
                let mut set = tokio::task::JoinSet::new();
                for me in 0..connections {
                    set.spawn(worker(shared2.clone(), tallies2.clone(), me));
                }
                while set.join_next().await.is_some() {}
            });
            let _ = done_tx.send(());
        });
    let stopped = match joiner {
        Err(_) => false,
        Ok(_) => {
            let mut done_rx = done_rx;
            tokio::select! {
                _ = &mut done_rx => false,
                _ = stop.wait() => {
                    shared.stop.store(true, Ordering::Relaxed);
                    // Senders finish what they are doing; one stuck on a hung
                    // connection is left behind after the grace.
                    let _ = tokio::time::timeout(END_GRACE, done_rx).await;
                    true
                }
            }
        }
    };
    let finished = Instant::now();
    let mut tally = WorkerStats::default();
    for t in tallies.iter() {
        tally.merge(&t.lock().unwrap_or_else(|p| p.into_inner()));
    }
    let measured = finished.saturating_duration_since(measure_from);
    let due = match phase.pace {
        Pace::Open(rate) => (rate * (phase.warmup + phase.duration).as_secs_f64())
            .min(u64::MAX as f64)
            .ceil() as u64,
        Pace::Closed => 0,
    };
    PhaseResult {
        tally,
        // Open loop: at least the schedule's length; longer when the
        // receiver fell behind and the last answers came late. A stopped
        // phase counts the time it ran.
        measured: match phase.pace {
            Pace::Open(_) if !stopped => phase.duration.max(measured),
            _ => measured.max(Duration::from_millis(1)),
        },
        next_slot: next.load(Ordering::Relaxed),
        due,
        sent: shared.sent.load(Ordering::Relaxed),
        stopped,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn target(profile: &str, secret: &str) -> LoadTarget {
        let accounts = vec!["acct_a".to_string(), "acct_b".to_string()];
        let secrets = accounts
            .iter()
            .map(|a| (a.clone(), vec![Secret::new(secret)]))
            .collect();
        LoadTarget::resolve(
            "http://127.0.0.1:9/hooks/{account}?v=1",
            Profile::builtin(profile).unwrap(),
            &accounts,
            &secrets,
        )
        .await
        .unwrap()
    }

    #[tokio::test]
    async fn an_encoded_request_is_the_signed_delivery_a_receiver_verifies() {
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let gen = Generator::new(4, super::super::mix::Mix::default(), 2);
        for name in crate::profile::BUILTIN_NAMES {
            let t = target(name, secret).await;
            let (mut values, mut out) = (Vec::new(), Vec::new());
            for slot in [0, 1, 77] {
                let item = gen.item(slot);
                let now = 1_795_000_000 + slot as i64;
                encode_request(&t, &item, now, &mut values, &mut out).unwrap();
                let mut h = [httparse::EMPTY_HEADER; 32];
                let mut req = httparse::Request::new(&mut h);
                let httparse::Status::Complete(n) = req.parse(&out).unwrap() else {
                    panic!("{name}: partial head")
                };
                assert_eq!(req.method, Some("POST"));
                assert_eq!(req.path, Some(t.paths[item.account].as_str()));
                let headers: Vec<(String, String)> = req
                    .headers
                    .iter()
                    .map(|h| {
                        (
                            h.name.to_string(),
                            String::from_utf8(h.value.to_vec()).unwrap(),
                        )
                    })
                    .collect();
                let get = |k: &str| {
                    headers
                        .iter()
                        .filter(|(n, _)| n.eq_ignore_ascii_case(k))
                        .map(|(_, v)| v.as_str())
                        .collect::<Vec<_>>()
                };
                assert_eq!(get("host"), ["127.0.0.1:9"], "{name}");
                assert_eq!(get("content-length"), [item.body.len().to_string()]);
                assert_eq!(&out[n..], &item.body[..], "{name}: body");
                if let Some(idh) = t.profile.delivery_id_header() {
                    assert_eq!(get(idh), [item.id.as_str()], "{name}: one id header");
                }
                t.profile
                    .scheme
                    .verify(
                        &[Secret::new(secret)],
                        headers.as_slice(),
                        &item.body,
                        now,
                        Some(300),
                    )
                    .unwrap_or_else(|e| panic!("{name}: {e}"));
            }
        }
    }

    #[tokio::test]
    async fn a_header_value_with_a_control_byte_is_refused_not_sent() {
        let t = target("answerline", "k").await;
        let mut item = Generator::new(1, super::super::mix::Mix::none(), 2).item(3);
        item.id = "whd_\r\nx-injected: 1".into();
        let (mut values, mut out) = (Vec::new(), Vec::new());
        let e = encode_request(&t, &item, 5, &mut values, &mut out).unwrap_err();
        assert!(e.contains("control byte 0x0d"), "{e}");
    }

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
