//! The sink: a chaos receiver for a sender under test. It serves one URL
//! per account (`/hooks/{account}`), recognises each request's event by
//! the profile's identity, counts its attempts, answers by the event's
//! script (a status, `Retry-After`, a redirect, a reset, a hang, a slow
//! answer), verifies the signature with the profile's scheme and the
//! account's secrets, and records every request as one attempt line of
//! the history, with what the sink saw ([`Received`]): times on the
//! scenario's monotonic clock, the delivery id, the body's hash, the
//! signature's verdict and timestamp, and the window the profile's
//! schedule gives the attempt (which the report's timeline draws).
//!
//! A redirect points at `/moved/{account}/{n}`, which the sink serves too:
//! a request there is a followed redirect, recorded as such and answered
//! 503. A request for an identity the harness never emitted is answered
//! 400 (a final answer) and recorded.
//!
//! The port is open to anyone, so the sink tells its sender from
//! strangers: a request tied to no emitted event that no account's secret
//! signed (unreadable, another path, an unknown identity) is recorded as
//! foreign traffic (at most [`FOREIGN_RECORDED`] a scenario) and judged by
//! no invariant; a request must arrive whole within
//! [`SINK_READ_DEADLINE`], and at most [`SINK_READING`] connections may be
//! reading one at once (the oldest is closed past it), so idle
//! connections cannot take the sink's descriptors.

use std::collections::VecDeque;
use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use super::crash::{HeldRequest, REQUEST_HOLD_MAX};
use super::plan::{PlannedEvent, SinkPlan};
use super::wire::{self, ReadError, Request};
use crate::check::sender::{
    exchange_end, SenderRules, FOREIGN_RECORDED, HANG_LIMIT, SINK_READING, SINK_READ_DEADLINE,
    SINK_STALL, SLOW_AT,
};
use crate::delivery::TaskStatus;
use crate::history::{Attempt, Event, HistorySink, Intent, Outcome, Received};
use crate::profile::signature::Secret;
use crate::scenario::answer::{self, Answer};

/// How late the sink may be with a slow answer before a close it then
/// finds is put down to its own lateness, not the sender's impatience.
const SINK_LATE: Duration = Duration::from_millis(10);

/// The path of an account's URL.
pub fn hook_path(account: &str) -> String {
    format!("/hooks/{account}")
}

/// What one event's attempts so far left behind: where the next one's
/// window starts.
#[derive(Debug, Clone, Copy, Default)]
struct Last {
    attempts: u32,
    end_ms: f64,
    retry_after: Option<u64>,
    generation: u32,
    final_answer: bool,
    /// The sender gave up waiting for the answer (its timeout fired).
    timed_out: bool,
    /// When the sink reset the attempt's connection (its end), unless the
    /// request after it was already counted as the re-send.
    reset_at_ms: Option<f64>,
}

/// What the sink shares between connections.
struct Shared {
    scenario: String,
    start: Instant,
    rules: SenderRules,
    secrets: BTreeMap<String, Vec<Secret>>,
    events: HashMap<(String, String), PlannedEvent>,
    last: Mutex<HashMap<(String, String), Last>>,
    redirects: Mutex<Vec<(String, String, u32)>>,
    history: HistorySink,
    generation: Arc<AtomicU32>,
    acks: mpsc::UnboundedSender<()>,
    hold: Option<mpsc::UnboundedSender<HeldRequest>>,
    /// Foreign requests recorded so far (at most [`FOREIGN_RECORDED`]).
    foreign: AtomicUsize,
}

/// A running sink; [`SinkServer::stop`] ends it.
pub struct SinkServer {
    addr: SocketAddr,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl std::fmt::Debug for SinkServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SinkServer")
            .field("addr", &self.addr)
            .finish()
    }
}

/// What the sink needs to start.
pub struct SinkSetup {
    /// The scenario's name (the history's `scenario`).
    pub scenario: String,
    /// The scenario's start: every time in the history counts from it.
    pub start: Instant,
    /// The profile and time scale the sender is judged by.
    pub rules: SenderRules,
    /// Per account, the secrets a signature may be made with.
    pub secrets: BTreeMap<String, Vec<Secret>>,
    /// The events the sender is asked to emit.
    pub plan: SinkPlan,
    /// Where attempt lines go.
    pub history: HistorySink,
    /// How many times the harness has restarted the sender.
    pub generation: Arc<AtomicU32>,
    /// Told after every 2xx the sender took in full (crashes between the
    /// 2xx and marking the row delivered listen).
    pub acks: mpsc::UnboundedSender<()>,
    /// When set, every request of an emitted event is held unanswered
    /// until the crash watch lets it go (a crash with a POST in flight).
    pub hold: Option<mpsc::UnboundedSender<HeldRequest>>,
}

impl SinkServer {
    /// Serves the sink on `listener`.
    pub fn spawn(listener: TcpListener, setup: SinkSetup) -> std::io::Result<SinkServer> {
        let addr = listener.local_addr()?;
        let events = setup
            .plan
            .events
            .into_iter()
            .map(|e| ((e.account.clone(), e.key.clone()), e))
            .collect();
        let shared = Arc::new(Shared {
            scenario: setup.scenario,
            start: setup.start,
            rules: setup.rules,
            secrets: setup.secrets,
            events,
            last: Mutex::new(HashMap::new()),
            redirects: Mutex::new(Vec::new()),
            history: setup.history,
            generation: setup.generation,
            acks: setup.acks,
            hold: setup.hold,
            foreign: AtomicUsize::new(0),
        });
        let (stop, stopped) = watch::channel(false);
        let stalls = tokio::spawn(watch_stalls(shared.clone(), stopped.clone()));
        let task = tokio::spawn(async move {
            accept_loop(listener, shared, stopped).await;
            let _ = stalls.await;
        });
        Ok(SinkServer { addr, stop, task })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The URL of an account.
    pub fn url(&self, account: &str) -> String {
        format!("http://{}{}", self.addr, hook_path(account))
    }

    /// Stops accepting and drops open connections.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    let mut conns = tokio::task::JoinSet::new();
    // Connections still reading their request, oldest first.
    let mut reading: VecDeque<(Arc<AtomicBool>, tokio::task::AbortHandle)> = VecDeque::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    continue;
                };
                let _ = stream.set_nodelay(true);
                make_room(&mut reading);
                let read = Arc::new(AtomicBool::new(false));
                let handle = conns.spawn(serve(stream, shared.clone(), read.clone()));
                reading.push_back((read, handle));
            }
            _ = stop.changed() => break,
        }
        while conns.try_join_next().is_some() {}
    }
    conns.abort_all();
}

/// Keeps the connections still reading a request under [`SINK_READING`]:
/// forgets those that finished reading, and closes the oldest reader when
/// the sink is full. A sender writes its request as soon as it connects,
/// so the oldest reader is a stranger's idle connection.
fn make_room(reading: &mut VecDeque<(Arc<AtomicBool>, tokio::task::AbortHandle)>) {
    if reading.len() < SINK_READING {
        return;
    }
    reading.retain(|(read, handle)| !read.load(Ordering::Relaxed) && !handle.is_finished());
    while reading.len() >= SINK_READING {
        if let Some((_, oldest)) = reading.pop_front() {
            oldest.abort();
        }
    }
}

/// How often the sink looks at its own clock.
const TICK: Duration = Duration::from_millis(5);

/// Notes every stretch the sink was not scheduled, as a `sink-stall` line
/// whose `detail` is its length in milliseconds.
async fn watch_stalls(shared: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    let mut last = Instant::now();
    loop {
        tokio::select! {
            _ = tokio::time::sleep(TICK) => {}
            _ = stop.changed() => return,
        }
        let now = Instant::now();
        let late = now.saturating_duration_since(last).saturating_sub(TICK);
        last = now;
        if late >= SINK_STALL {
            let ms = late.as_secs_f64() * 1000.0;
            let _ = shared
                .history
                .write(Event::Fault(crate::history::FaultEvent {
                    scenario: shared.scenario.clone(),
                    at: crate::history::now_rfc3339(),
                    fault: crate::tag::FaultName::SinkStall,
                    action: format!("the sink was not scheduled for {ms:.0} ms"),
                    detail: Some(format!("{ms:.0}")),
                }));
        }
    }
}

fn ms_since(start: Instant, t: Instant) -> f64 {
    t.saturating_duration_since(start).as_secs_f64() * 1000.0
}

fn rfc3339_of(unix: f64) -> String {
    let secs = unix.floor() as i64;
    let nanos = ((unix - unix.floor()) * 1e9) as u32;
    chrono::DateTime::from_timestamp(secs, nanos)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// The attempt number of a request for a planned event, the window the
/// profile's schedule gives it, and whether it is the immediate re-send
/// after a reset that the profile says its sender counts as the same
/// attempt (`[sender] resend_after_reset`).
fn number(
    shared: &Shared,
    slot: &(String, String),
    generation: u32,
    at_ms: f64,
) -> (u32, Option<[f64; 2]>, bool) {
    let mut last = shared.last.lock().unwrap_or_else(|p| p.into_inner());
    let l = last.entry(slot.clone()).or_default();
    let resend = shared.rules.profile.sender.resend_after_reset;
    if let (Some(reset_at), Some(d)) = (l.reset_at_ms.take(), resend) {
        if l.generation == generation && at_ms - reset_at <= d.as_secs_f64() * 1000.0 {
            return (l.attempts.max(1), None, true);
        }
    }
    let n = l.attempts + 1;
    let window = (n > 1 && l.generation == generation && !l.final_answer)
        .then(|| shared.rules.window(n, l.retry_after, l.timed_out))
        .flatten()
        .map(|(lo, hi)| [l.end_ms + lo, l.end_ms + hi]);
    l.attempts = n;
    l.generation = generation;
    (n, window, false)
}

/// Where a request went.
enum Route {
    /// The URL registered for an account.
    Hook(String),
    /// A redirect's `Location`: the n-th redirect the sink gave.
    Moved(usize),
    /// Nowhere the sink serves.
    Unknown,
}

fn route(path: &str) -> Route {
    let path = path.split('?').next().unwrap_or_default();
    if let Some(account) = path.strip_prefix("/hooks/") {
        if !account.is_empty() && !account.contains('/') {
            return Route::Hook(account.to_string());
        }
    }
    if let Some(rest) = path.strip_prefix("/moved/") {
        if let Some(n) = rest.rsplit('/').next().and_then(|n| n.parse().ok()) {
            return Route::Moved(n);
        }
    }
    Route::Unknown
}

/// Reads one request within the sink's budget; one too large or not HTTP
/// is answered (413, 400) and recorded as unreadable, and gives `None`.
async fn read(stream: &mut TcpStream, shared: &Shared) -> Option<Request> {
    let limit = crate::limits::budget::SINK_REQUEST;
    let read = tokio::time::timeout(SINK_READ_DEADLINE, wire::read_request(stream, limit));
    let Ok(got) = read.await else {
        return None;
    };
    match got {
        Ok(r) => Some(r),
        Err(ReadError::TooLarge(at, unix)) => {
            let _ = wire::answer(stream, 413, &[]).await;
            record_unreadable(
                shared,
                at,
                unix,
                "the request exceeded the sink's budget (1 MiB)",
            );
            None
        }
        Err(ReadError::Malformed(why)) => {
            let _ = wire::answer(stream, 400, &[]).await;
            record_unreadable(
                shared,
                Instant::now(),
                0.0,
                &format!("not an HTTP request: {why}"),
            );
            None
        }
        Err(ReadError::Closed) => None,
    }
}

/// The account a request to `path` is for, and, when it follows one of
/// the sink's redirects, the attempt it continues.
fn addressed(shared: &Shared, path: &str) -> (String, Option<u32>) {
    match route(path) {
        Route::Hook(a) => (a, None),
        Route::Moved(n) => {
            let r = shared
                .redirects
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(n)
                .cloned();
            match r {
                Some((a, _, attempt)) => (a, Some(attempt)),
                None => (String::new(), Some(0)),
            }
        }
        Route::Unknown => (String::new(), None),
    }
}

/// Why the request's signature does not verify with `account`'s secrets
/// (`None`: it does).
fn signature_error(shared: &Shared, account: &str, req: &Request) -> Option<String> {
    let profile = &shared.rules.profile;
    match shared.secrets.get(account) {
        Some(secrets) => profile
            .scheme
            .verify_request(
                secrets,
                req.headers.as_slice(),
                &crate::profile::signature::request_url(req.headers.as_slice(), &req.path),
                &req.body,
                req.first_byte_unix as i64,
                profile.tolerance_secs(),
            )
            .err()
            .map(|e| e.to_string()),
        None => Some(format!("no account {account:?} at this sink")),
    }
}

/// One connection: one request, one answer.
async fn serve(mut stream: TcpStream, shared: Arc<Shared>, read_done: Arc<AtomicBool>) {
    let req = read(&mut stream, &shared).await;
    read_done.store(true, Ordering::Relaxed);
    let Some(req) = req else {
        return;
    };
    let generation = shared.generation.load(Ordering::SeqCst);
    let profile = &shared.rules.profile;
    let id_header = profile.delivery_id_header();
    let key = profile
        .semantics
        .identity_of(id_header, req.headers.as_slice(), &req.body)
        .unwrap_or_else(|| "(no identity)".into());
    let (account, followed) = addressed(&shared, &req.path);
    let slot = (account.clone(), key.clone());
    let planned = shared.events.get(&slot);
    let at_ms = ms_since(shared.start, req.first_byte);
    // The attempt number and the window it must land in.
    let (n, window, resent) = match (followed, planned) {
        (Some(attempt), _) => (attempt, None, false),
        (None, Some(_)) => number(&shared, &slot, generation, at_ms),
        (None, None) => (0, None, false),
    };
    let script_answer = match (followed, planned, account.is_empty()) {
        (Some(_), _, _) => Answer::Status(503),
        (None, Some(p), _) => answer::nth(&p.script, n),
        (None, None, true) => Answer::Status(404),
        (None, None, false) => Answer::Status(400),
    };
    let verified = signature_error(&shared, &account, &req);
    // Tied to no emitted event and signed by no account: a stranger's.
    let foreign =
        planned.is_none() && (account.is_empty() || (followed.is_none() && verified.is_some()));
    if foreign && !record_foreign(&shared) {
        let _ = play(stream, script_answer, &shared, &account, &key, n, &req).await;
        return;
    }
    let mut killed = false;
    if let (Some(hold), Some(_), None) = (&shared.hold, planned, followed) {
        let (held, released) = HeldRequest::new();
        if hold.send(held).is_ok() {
            killed = matches!(
                tokio::time::timeout(REQUEST_HOLD_MAX, released).await,
                Ok(Ok(true))
            );
        }
    }
    let signed_at = profile.scheme.timestamp_of(req.headers.as_slice());
    let delivery_id = id_header.and_then(|h| {
        req.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(h))
            .map(|(_, v)| v.clone())
    });
    let (status, closed_early, error, end) = if killed {
        // Its sender is dead: nobody is left to answer.
        let error =
            "the harness killed the sender while this request was in flight; it was never answered";
        (None, true, Some(error.to_string()), Instant::now())
    } else {
        play(stream, script_answer, &shared, &account, &key, n, &req).await
    };
    let end_ms = ms_since(shared.start, end);
    let outcome = match status {
        Some(s) if (200..300).contains(&s) && !closed_early => Outcome::Ok,
        Some(_) if !closed_early => Outcome::Fail,
        _ => Outcome::Info,
    };
    if outcome == Outcome::Ok && followed.is_none() {
        let _ = shared.acks.send(());
    }
    let mut a = Attempt::new(
        &shared.scenario,
        delivery_id.as_deref().unwrap_or(&key),
        &key,
        if account.is_empty() {
            "(none)"
        } else {
            &account
        },
    );
    a.attempt = n.max(1);
    a.sent_at = rfc3339_of(req.first_byte_unix);
    a.status = status;
    a.latency_ms = Some(((end_ms - at_ms) * 10.0).round() / 10.0);
    a.error = error;
    a.outcome = outcome;
    a.intent = Intent::Genuine;
    if let Some(p) = planned {
        a.job = p.job.clone();
        a.task_status = Some(TaskStatus::Completed);
        a.created_at = Some(p.created_at.clone());
        a.resource = p.resource.clone();
        a.sequence = p.sequence;
    } else {
        a.detail = Some(match route(&req.path) {
            Route::Unknown => format!("{} {}: no such endpoint at the sink", req.method, req.path),
            _ => "an event identity the harness never emitted".into(),
        });
    }
    a.sink = Some(Box::new(Received {
        answer: script_answer.to_string(),
        at_ms: (at_ms * 1000.0).round() / 1000.0,
        end_ms: (end_ms * 1000.0).round() / 1000.0,
        followed: followed.is_some(),
        delivery_id,
        body_sha256: hex::encode(Sha256::digest(&req.body)),
        signature_error: verified,
        signed_at,
        arrived_unix: req.first_byte_unix,
        retry_after_s: script_answer.retry_after(),
        closed_early,
        generation,
        window_ms: window,
        foreign,
        resent,
        body_change: planned.and_then(|p| crate::check::sender::body_change(&req.body, &p.body)),
    }));
    if let Some(got) = &a.sink {
        let end = exchange_end(Some(script_answer), got, shared.rules.timeout_ms());
        let mut last = shared.last.lock().unwrap_or_else(|p| p.into_inner());
        match (followed, planned) {
            (None, Some(_)) => {
                let l = last.entry(slot).or_default();
                l.end_ms = end;
                l.retry_after = if closed_early {
                    None
                } else {
                    script_answer.retry_after()
                };
                l.timed_out =
                    closed_early && matches!(script_answer, Answer::Hang | Answer::Slow(_));
                l.reset_at_ms = (script_answer == Answer::Reset && !resent).then_some(end_ms);
                l.final_answer = outcome == Outcome::Ok
                    || (!closed_early && status.is_some_and(|s| profile.gives_up_on(s)));
            }
            // The followed request ends the redirected attempt as the sender sees it.
            (Some(_), _) => {
                if let Some(l) = last.get_mut(&slot) {
                    l.end_ms = l.end_ms.max(end);
                }
            }
            (None, None) => {}
        }
    }
    let _ = shared.history.write(Event::Attempt(a));
}

/// Plays one scripted answer: returns the status answered (if any),
/// whether the sender closed before the answer was due (for `hang`:
/// whether it gave up at all), the transport error text, and when the
/// exchange ended: for an answer, the moment before it was written (the
/// sender cannot have had it sooner, so a gap measured from there is
/// never longer than the sender's own wait).
async fn play(
    mut stream: TcpStream,
    ans: Answer,
    shared: &Shared,
    account: &str,
    key: &str,
    n: u32,
    req: &Request,
) -> (Option<u16>, bool, Option<String>, Instant) {
    let timeout = shared.rules.timeout;
    let stream = &mut stream;
    match ans {
        Answer::Status(s) => {
            let end = Instant::now();
            let ok = wire::answer(stream, s, &[]).await;
            (Some(s), !ok, None, end)
        }
        Answer::RetryAfter { status, secs } => {
            let end = Instant::now();
            let ok =
                wire::answer(stream, status, &[("Retry-After".into(), secs.to_string())]).await;
            (Some(status), !ok, None, end)
        }
        Answer::Redirect(s) => {
            let k = {
                let mut r = shared.redirects.lock().unwrap_or_else(|p| p.into_inner());
                r.push((account.to_string(), key.to_string(), n));
                r.len() - 1
            };
            let host = stream
                .local_addr()
                .map(|a| a.to_string())
                .unwrap_or_default();
            let location = format!("http://{host}/moved/{account}/{k}");
            let end = Instant::now();
            let ok = wire::answer(stream, s, &[("Location".into(), location)]).await;
            (Some(s), !ok, None, end)
        }
        Answer::Reset => {
            let end = Instant::now();
            wire::reset(stream);
            (
                None,
                false,
                Some("reset by the sink (scripted)".into()),
                end,
            )
        }
        Answer::Hang => {
            let limit = timeout * HANG_LIMIT;
            let closed = wire::until_closed(stream, limit).await;
            let end = Instant::now();
            let held = end.saturating_duration_since(req.first_byte);
            let error = if closed {
                format!(
                    "held without an answer; the sender closed it after {}",
                    crate::text::units::format_duration(held)
                )
            } else {
                format!(
                    "held without an answer for {}; the sender never closed it",
                    crate::text::units::format_duration(held)
                )
            };
            (None, closed, Some(error), end)
        }
        Answer::Slow(s) => {
            let due = timeout.mul_f64(SLOW_AT);
            let wait = due.saturating_sub(req.first_byte.elapsed());
            if wire::until_closed(stream, wait).await {
                let end = Instant::now();
                let took = end.saturating_duration_since(req.first_byte);
                // A sink that ran late itself (a loaded machine) found the
                // close only after its answer was due: not the sender's doing.
                let sink_late = took > due + SINK_LATE;
                let error = if sink_late {
                    format!(
                        "the sink ran late: its answer was due at {}, it looked at {} and the sender had closed the connection",
                        crate::text::units::format_duration(due),
                        crate::text::units::format_duration(took)
                    )
                } else {
                    format!(
                        "the sender closed the connection after {}, before the answer due at {}",
                        crate::text::units::format_duration(took),
                        crate::text::units::format_duration(due)
                    )
                };
                return (None, !sink_late, Some(error), end);
            }
            let end = Instant::now();
            let ok = wire::answer(stream, s, &[]).await;
            (Some(s), !ok, None, end)
        }
    }
}

/// Whether one more request of foreign traffic is recorded (at most
/// [`FOREIGN_RECORDED`] per scenario; past it they are only answered).
fn record_foreign(shared: &Shared) -> bool {
    shared.foreign.fetch_add(1, Ordering::Relaxed) < FOREIGN_RECORDED
}

/// Records a request the sink could not read: foreign traffic (a sender
/// that sent it instead of an event is caught by what then never arrived).
fn record_unreadable(shared: &Shared, at: Instant, unix: f64, why: &str) {
    if !record_foreign(shared) {
        return;
    }
    let at_ms = ms_since(shared.start, at);
    let mut a = Attempt::new(&shared.scenario, "(unreadable)", "(unreadable)", "(none)");
    a.sent_at = rfc3339_of(unix);
    a.outcome = Outcome::Fail;
    a.error = Some(why.to_string());
    a.detail = Some(why.to_string());
    a.sink = Some(Box::new(Received {
        answer: "413".into(),
        at_ms,
        end_ms: at_ms,
        followed: false,
        delivery_id: None,
        body_sha256: String::new(),
        signature_error: Some(why.to_string()),
        signed_at: None,
        arrived_unix: unix,
        retry_after_s: None,
        closed_early: false,
        generation: shared.generation.load(Ordering::SeqCst),
        window_ms: None,
        foreign: true,
        resent: false,
        body_change: None,
    }));
    let _ = shared.history.write(Event::Attempt(a));
}
