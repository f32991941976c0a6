//! The load loops: open loop at a constant arrival rate, closed loop as fast
//! as the receiver answers.
//!
//! Each worker owns one HTTP/1 connection (hyper's `client::conn::http1`
//! over a `TcpStream`, no pool in the way) and a second one, opened lazily,
//! for the other copy of a concurrent duplicate. Workers claim slots from
//! one atomic counter. In open loop slot `k` is due at `start + k / rate`;
//! a worker sleeps until then and the latency is measured from that
//! intended time, so a slow receiver cannot slow the load down and hide its
//! latency. Every request is signed at send time with the profile's scheme
//! and becomes one attempt line, buffered per worker and appended to the
//! history in batches, so memory stays flat however long the run.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use serde::Serialize;

use super::latency::Recorder;
use super::mix::{Generator, Item};
use crate::history::{Intent, Outcome};
use crate::profile::Profile;
use crate::sender::exchange::{classify, Answer};
use crate::signature::{Secret, SignInput};

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
    /// Account names, by index.
    pub accounts: Vec<String>,
    /// Secrets per account index (current first).
    pub secrets: Vec<Vec<Secret>>,
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
                return Err(bad("expected http://HOST:PORT/PATH".into()));
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
        Ok(LoadTarget {
            addr,
            authority,
            paths,
            accounts: accounts.to_vec(),
            secrets: sec,
            profile,
        })
    }
}

/// Appends attempt lines to the history in batches.
#[derive(Clone)]
pub struct LineSink {
    inner: Arc<Mutex<(BufWriter<File>, Option<String>)>>,
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
        let mut w = BufWriter::with_capacity(1 << 20, file);
        serde_json::to_writer(&mut w, header).map_err(|e| err(&e))?;
        w.write_all(b"\n").map_err(|e| err(&e))?;
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
            None => g
                .0
                .flush()
                .and_then(|_| g.0.get_ref().sync_all())
                .map_err(|e| e.to_string()),
        };
        res.map_err(|message| LoadError::History {
            path: self.path.clone(),
            message,
        })
    }
}

/// The attempt line, borrowed: the same JSON as `Event::Attempt`, written
/// without building the owned event.
#[derive(Serialize)]
struct AttemptLine<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    scenario: &'static str,
    delivery: &'a str,
    key: &'a str,
    job: &'a str,
    account: &'a str,
    attempt: u32,
    round: u32,
    faults: Vec<String>,
    sent_at: &'a str,
    status: Option<u16>,
    latency_ms: f64,
    error: Option<&'a str>,
    outcome: Outcome,
    intent: Intent,
    task_status: &'static str,
    created_at: &'a str,
}

/// What one worker saw; merged at the end and read by the progress line.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    /// Latencies of measured requests (after warmup).
    pub latency: Recorder,
    /// Latencies since the progress line last looked.
    pub recent: Recorder,
    /// Requests completed per second of the phase, warmup included.
    pub per_second: Vec<u64>,
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

impl Tally {
    /// Adds another worker's tally.
    pub fn merge(&mut self, o: &Tally) {
        self.latency.merge(&o.latency);
        if self.per_second.len() < o.per_second.len() {
            self.per_second.resize(o.per_second.len(), 0);
        }
        for (i, n) in o.per_second.iter().enumerate() {
            self.per_second[i] += n;
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
}

/// Live view of a phase for the progress line.
#[derive(Clone)]
pub struct Live {
    /// One tally per worker.
    pub tallies: Arc<Vec<Mutex<Tally>>>,
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

struct Shared {
    target: LoadTarget,
    gen: Generator,
    next: Arc<AtomicU64>,
    first: u64,
    pace: Pace,
    start: Instant,
    measure_from: Instant,
    end: Instant,
    sink: Option<LineSink>,
    stop: Arc<AtomicBool>,
}

type Conn = SendRequest<Full<Bytes>>;

async fn connect(addr: SocketAddr) -> Result<Conn, String> {
    let stream = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let _ = stream.set_nodelay(true);
    let (send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| format!("handshake: {e}"))?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(send)
}

/// Error kinds short enough to count.
fn error_kind(text: &str) -> String {
    let t = text.to_ascii_lowercase();
    for k in [
        "timeout",
        "refused",
        "reset",
        "closed",
        "broken pipe",
        "connect",
    ] {
        if t.contains(k) {
            return k.to_string();
        }
    }
    text.chars().take(60).collect()
}

/// Sends one copy on `conn` (connecting first when needed).
async fn exchange(
    conn: &mut Option<Conn>,
    addr: SocketAddr,
    req: http::Request<Full<Bytes>>,
    timeout: Duration,
    sent: Instant,
) -> Answer {
    let ms = |s: Instant| s.elapsed().as_secs_f64() * 1000.0;
    let fut = async {
        if conn.as_ref().map_or(true, |c| c.is_closed()) {
            *conn = Some(connect(addr).await.map_err(|e| (e, true))?);
        }
        let c = conn.as_mut().expect("connected above");
        if c.ready().await.is_err() {
            *conn = Some(connect(addr).await.map_err(|e| (e, true))?);
        }
        let c = conn.as_mut().expect("connected above");
        let resp = c
            .send_request(req)
            .await
            .map_err(|e| (e.to_string(), false))?;
        let status = resp.status().as_u16();
        let latency = ms(sent);
        let _ = resp.into_body().collect().await;
        Ok::<_, (String, bool)>((status, latency))
    };
    match tokio::time::timeout(timeout, fut).await {
        Ok(Ok((status, latency))) => Answer {
            status: Some(status),
            latency_ms: latency,
            error: None,
            connect_failed: false,
        },
        Ok(Err((error, connect_failed))) => {
            *conn = None;
            Answer {
                status: None,
                latency_ms: ms(sent),
                error: Some(error),
                connect_failed,
            }
        }
        Err(_) => {
            *conn = None;
            Answer {
                status: None,
                latency_ms: ms(sent),
                error: Some(format!(
                    "timeout after {}",
                    crate::units::format_duration(timeout)
                )),
                connect_failed: false,
            }
        }
    }
}

fn request(
    t: &LoadTarget,
    item: &Item,
    now_unix: i64,
) -> Result<http::Request<Full<Bytes>>, String> {
    let p = &t.profile;
    let signed = p
        .scheme
        .sign(
            &t.secrets[item.account],
            SignInput {
                id: &item.id,
                timestamp: now_unix,
                body: &item.body,
            },
        )
        .map_err(|e| format!("cannot sign: {e}"))?;
    let mut b = http::Request::post(t.paths[item.account].as_str())
        .header(http::header::HOST, t.authority.as_str())
        .header(http::header::CONTENT_TYPE, "application/json");
    if let Some(idh) = p.delivery_id_header() {
        if !signed.iter().any(|(k, _)| k.eq_ignore_ascii_case(idh)) {
            b = b.header(idh, item.id.as_str());
        }
    }
    if let Some(ev) = &p.event_header {
        b = b.header(ev.as_str(), "task.completed");
    }
    for (k, v) in &signed {
        b = b.header(k.as_str(), v.as_str());
    }
    b.body(Full::new(Bytes::copy_from_slice(&item.body)))
        .map_err(|e| format!("cannot build the request: {e}"))
}

const FLUSH_AT: usize = 64 * 1024;

async fn worker(shared: Arc<Shared>, tally: Arc<Vec<Mutex<Tally>>>, me: usize) {
    let t = &shared.target;
    let mut conn: Option<Conn> = None;
    let mut conn2: Option<Conn> = None;
    let mut lines: Vec<u8> = Vec::with_capacity(FLUSH_AT + 4096);
    let timeout = t.profile.timeout;
    loop {
        if shared.stop.load(Ordering::Relaxed) {
            break;
        }
        let slot = shared.next.fetch_add(1, Ordering::Relaxed);
        let intended = match shared.pace {
            Pace::Open(rate) => {
                let at = shared.start
                    + Duration::from_secs_f64((slot - shared.first) as f64 / rate);
                if at >= shared.end {
                    break;
                }
                tokio::time::sleep_until(at.into()).await;
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
        let item = shared.gen.item(slot);
        let now_unix = chrono::Utc::now().timestamp();
        let sent_at = crate::history::now_rfc3339();
        let sent = Instant::now();
        let answers: Vec<Answer> = match request(t, &item, now_unix) {
            Err(e) => vec![Answer {
                status: None,
                latency_ms: 0.0,
                error: Some(e),
                connect_failed: true,
            }],
            Ok(req) if item.copies > 1 => {
                let again = request(t, &item, now_unix).expect("signed once already");
                let (a, b) = tokio::join!(
                    exchange(&mut conn, t.addr, req, timeout, sent),
                    exchange(&mut conn2, t.addr, again, timeout, sent)
                );
                vec![a, b]
            }
            Ok(req) => vec![exchange(&mut conn, t.addr, req, timeout, sent).await],
        };
        let done = Instant::now();
        let measured = intended >= shared.measure_from;
        {
            let mut tl = tally[me].lock().unwrap_or_else(|p| p.into_inner());
            let sec = done.saturating_duration_since(shared.start).as_secs() as usize;
            if tl.per_second.len() <= sec {
                tl.per_second.resize(sec + 1, 0);
            }
            for a in &answers {
                let ok = a.status.is_some_and(|s| t.profile.is_success(s));
                tl.per_second[sec] += 1;
                tl.recent_requests += 1;
                if !ok {
                    tl.recent_errors += 1;
                }
                let lat = Duration::from_secs_f64(a.latency_ms / 1000.0);
                let corrected = lat + sent.saturating_duration_since(intended);
                tl.recent.record_durations(corrected, lat);
                if !measured {
                    tl.warmup_requests += 1;
                    continue;
                }
                tl.latency.record_durations(corrected, lat);
                tl.requests += 1;
                if ok {
                    tl.ok += 1;
                }
                let key = match (a.status, &a.error) {
                    (Some(s), _) => s.to_string(),
                    (None, _) => "error".to_string(),
                };
                *tl.statuses.entry(key).or_default() += 1;
                if let Some(e) = &a.error {
                    *tl.errors.entry(error_kind(e)).or_default() += 1;
                }
            }
        }
        if let Some(sink) = &shared.sink {
            for (i, a) in answers.iter().enumerate() {
                let grade = classify(&t.profile, Intent::Genuine, a);
                let line = AttemptLine {
                    kind: "attempt",
                    scenario: SCENARIO,
                    delivery: &item.id,
                    key: &item.key,
                    job: &item.job,
                    account: &t.accounts[item.account],
                    attempt: 1,
                    round: 0,
                    faults: item.faults(i as u32 + 1),
                    sent_at: &sent_at,
                    status: a.status,
                    latency_ms: a.latency_ms,
                    error: a.error.as_deref(),
                    outcome: grade.outcome,
                    intent: Intent::Genuine,
                    task_status: "COMPLETED",
                    created_at: &item.created_at,
                };
                if serde_json::to_writer(&mut lines, &line).is_ok() {
                    lines.push(b'\n');
                }
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
    pub tally: Tally,
    /// Measured wall time (from the end of warmup to the last answer).
    pub measured: Duration,
    /// The next free slot (for a following phase).
    pub next_slot: u64,
}

/// Runs one phase from slot `first`; `on_start` gets the live view (for a
/// progress line) before the workers start.
pub async fn run_phase(
    target: &LoadTarget,
    gen: &Generator,
    phase: Phase,
    first: u64,
    sink: Option<LineSink>,
    on_start: impl FnOnce(Live),
) -> PhaseResult {
    let connections = phase.connections.max(1);
    let start = Instant::now() + Duration::from_millis(5);
    let measure_from = start + phase.warmup;
    let end = measure_from + phase.duration;
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
        sink,
        stop: Arc::new(AtomicBool::new(false)),
    });
    let tallies: Arc<Vec<Mutex<Tally>>> =
        Arc::new((0..connections).map(|_| Mutex::default()).collect());
    on_start(Live {
        tallies: tallies.clone(),
        start,
        measure_from,
    });
    let mut set = tokio::task::JoinSet::new();
    for me in 0..connections {
        set.spawn(worker(shared.clone(), tallies.clone(), me));
    }
    while set.join_next().await.is_some() {}
    let finished = Instant::now();
    let mut tally = Tally::default();
    for t in tallies.iter() {
        tally.merge(&t.lock().unwrap_or_else(|p| p.into_inner()));
    }
    let measured = finished.saturating_duration_since(measure_from);
    PhaseResult {
        tally,
        // Open loop stops claiming at `end`; the wall time is the schedule's.
        measured: match phase.pace {
            Pace::Open(_) => phase.duration.max(Duration::from_millis(1)),
            Pace::Closed => measured.max(Duration::from_millis(1)),
        },
        next_slot: next.load(Ordering::Relaxed),
    }
}
