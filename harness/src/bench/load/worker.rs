//! One worker's loop: it claims the next slot from the phase's counter,
//! waits (open loop) for the slot's due time, refills, signs and sends the
//! delivery (both copies of a concurrent duplicate at once, on its two
//! connections), counts the answers in its tally and appends their attempt
//! lines to its batch. Everything a request needs is reused from one to
//! the next, so the loop allocates next to nothing per request.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::encode::{dress, encode_request};
use super::lane::{exchange, Lane};
use super::record::{attempt_line, ends_refused, refuses, LineSink};
use super::resend::UnderFaults;
use super::tally::{count_status, error_kind, Refusal, Refusals, WorkerStats};
use super::target::LoadTarget;
use super::Pace;
use crate::bench::latency::MAX_MICROS;
use crate::bench::mix::{wall_clock_into, Generator, Item, Kind};
use crate::fault::gauge::TrafficGauge;
use crate::history::{Failure, Intent, TransportFailure};
use crate::sender::exchange::{classify, Answer};

/// Open loop sleeps in slices of at most this, so a stop request ends a
/// worker that waits for a far slot.
const SLEEP_SLICE: Duration = Duration::from_millis(50);

/// A worker's batch of attempt lines is appended to the history once it
/// holds this many bytes.
const FLUSH_AT: usize = 64 * 1024;

/// What every worker of a phase shares: the target, the deliveries, the
/// slot counter, the schedule, the history and the stop flag.
pub(super) struct Shared {
    pub(super) target: LoadTarget,
    pub(super) gen: Generator,
    pub(super) next: Arc<AtomicU64>,
    pub(super) first: u64,
    pub(super) pace: Pace,
    pub(super) start: Instant,
    pub(super) measure_from: Instant,
    pub(super) end: Instant,
    /// In-flight requests are cut here: `end` plus [`END_GRACE`](super::END_GRACE).
    pub(super) hard_end: Instant,
    pub(super) sink: Option<LineSink>,
    pub(super) stop: Arc<AtomicBool>,
    /// Slots actually sent (each once, whatever its copies).
    pub(super) sent: AtomicU64,
    pub(super) live: bool,
    /// Where the first refusal is kept.
    pub(super) refusals: Refusals,
    /// The phase's count of measured requests, if it has one.
    pub(super) limit: Option<Limit>,
    /// Under faults: the gauge to report to and the resends.
    pub(super) faults: Option<Arc<UnderFaults>>,
}

/// A count of requests that ends a phase (`--requests`).
pub(super) struct Limit {
    /// Deliveries sent after the warmup, at most.
    pub(super) requests: u64,
    /// Measured sends claimed so far (one past the count once it is reached).
    pub(super) claimed: AtomicU64,
    /// The count was reached: every worker stops claiming.
    pub(super) reached: AtomicBool,
}

impl Limit {
    /// Claims one measured send; `false` once the count is spent.
    fn claim(&self) -> bool {
        let n = self.claimed.fetch_add(1, Ordering::Relaxed);
        if n + 1 >= self.requests {
            self.reached.store(true, Ordering::Relaxed);
        }
        n < self.requests
    }

    /// Whether the count was reached.
    pub(super) fn reached(&self) -> bool {
        self.reached.load(Ordering::Relaxed)
    }
}

/// What a worker reuses from one request to the next: its connections,
/// its batch of history lines, the send time, the signed header values,
/// the encoded request and the answers.
struct Kit {
    lane: Lane,
    lane2: Lane,
    lines: Vec<u8>,
    sent_at: String,
    values: Vec<String>,
    request: Vec<u8>,
    answers: Vec<Answer>,
}

/// Worker `me`: sends slots until the phase ends or is stopped, counting
/// into `tally[me]`, then appends what is left of its batch.
pub(super) async fn run(shared: Arc<Shared>, tally: Arc<Vec<Mutex<WorkerStats>>>, me: usize) {
    let t = &shared.target;
    let mut kit = Kit {
        lane: Lane::new(),
        lane2: Lane::new(),
        lines: Vec::with_capacity(FLUSH_AT + 4096),
        sent_at: String::with_capacity(24),
        values: Vec::new(),
        request: Vec::with_capacity(1024),
        answers: Vec::with_capacity(2),
    };
    // Reused from one request to the next: the delivery.
    let mut item = shared.gen.item(shared.first);
    loop {
        if shared.stop.load(Ordering::Relaxed) || shared.limit.as_ref().is_some_and(Limit::reached)
        {
            break;
        }
        // Under faults: nothing goes out while the nemesis holds the
        // stream (a killed receiver restarting), and a failed delivery due
        // to be sent again goes before the next slot.
        if let Some(f) = &shared.faults {
            f.gauge.wait_while_held(SLEEP_SLICE).await;
            if Instant::now() >= shared.end {
                break;
            }
            if f.gauge.held() {
                continue;
            }
            if let Some((slot, sends)) = f.due(Instant::now()) {
                shared.gen.fill(slot, &mut item);
                dress(t, &mut item);
                item.resend = sends;
                item.copies = 1;
                let now = Instant::now();
                send(
                    &shared,
                    &tally[me],
                    &mut kit,
                    &item,
                    now,
                    now >= shared.measure_from,
                )
                .await;
                continue;
            }
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
                // Nothing goes out before the phase starts: with no warmup,
                // every request is measured.
                if Instant::now() < shared.start {
                    tokio::time::sleep_until(shared.start.into()).await;
                }
                let now = Instant::now();
                if now >= shared.end {
                    break;
                }
                now
            }
        };
        // Measured by when it is really sent: a sender far behind an
        // unreachable rate still measures what it sends after the warmup
        // (latency still counts from the intended time).
        let measured = Instant::now() >= shared.measure_from;
        if measured && shared.limit.as_ref().is_some_and(|l| !l.claim()) {
            break;
        }
        shared.sent.fetch_add(1, Ordering::Relaxed);
        shared.gen.fill(slot, &mut item);
        dress(t, &mut item);
        send(&shared, &tally[me], &mut kit, &item, intended, measured).await;
    }
    if let Some(sink) = &shared.sink {
        sink.append(&kit.lines);
    }
}

/// One request's exchange, as every copy of it is sent: told to the gauge
/// under faults (begun before the request goes out, answered, a 2xx or
/// not, the moment its answer is in).
struct Exchange<'a> {
    gauge: Option<&'a TrafficGauge>,
    t: &'a LoadTarget,
    request: &'a [u8],
    sent: Instant,
    hard_end: Instant,
    keep: Option<&'a crate::profile::Profile>,
}

impl Exchange<'_> {
    /// The exchange on `lane`.
    async fn on(&self, lane: &mut Lane) -> Answer {
        let t = self.t;
        let ticket = self.gauge.map(TrafficGauge::begin);
        let a = exchange(
            lane,
            t.addr,
            self.request,
            t.profile.timeout,
            self.sent,
            self.hard_end,
            self.keep,
        )
        .await;
        if let (Some(ticket), Some(s)) = (ticket, a.status) {
            ticket.answered(
                t.profile.is_success(s),
                Duration::from_secs_f64(a.latency_ms / 1000.0),
            );
        }
        a
    }
}

/// Signs and sends `item` (both copies of a concurrent duplicate at once,
/// on the worker's two connections), counts the answers into `tally`,
/// appends their attempt lines to the worker's batch, and under faults
/// queues the delivery to be sent again when it failed.
async fn send(
    shared: &Shared,
    tally: &Mutex<WorkerStats>,
    kit: &mut Kit,
    item: &Item,
    intended: Instant,
    measured: bool,
) {
    let t = &shared.target;
    let gauge = shared.faults.as_deref().map(|f| f.gauge.as_ref());
    let now_unix = wall_clock_into(&mut kit.sent_at);
    let sent = Instant::now();
    kit.answers.clear();
    // Until a refusal is kept, a failed answer's body is read: what the
    // receiver said is the first thing to know of a refused delivery.
    let keep = shared.refusals.wants_body().then_some(&t.profile);
    match encode_request(t, item, now_unix, &mut kit.values, &mut kit.request) {
        Err(e) => kit.answers.push(Answer::failed(
            Failure::new(TransportFailure::Request, e),
            0.0,
        )),
        // Both copies of a concurrent duplicate carry the same bytes:
        // one delivery, signed once at its send time.
        Ok(()) => {
            let x = Exchange {
                gauge,
                t,
                request: &kit.request,
                sent,
                hard_end: shared.hard_end,
                keep,
            };
            if item.copies > 1 {
                let (a, b) = tokio::join!(x.on(&mut kit.lane), x.on(&mut kit.lane2));
                kit.answers.push(a);
                kit.answers.push(b);
            } else {
                let a = x.on(&mut kit.lane).await;
                kit.answers.push(a);
            }
        }
    }
    let answers = &kit.answers;
    for a in answers {
        if let (true, Some(status)) = (keep.is_some() && refuses(&t.profile, a), a.status) {
            shared.refusals.keep(|| Refusal {
                status,
                body: String::from_utf8_lossy(&a.body).into_owned(),
                delivery: item.id.clone(),
                key: item.key.clone(),
                account: t.accounts[item.account].clone(),
            });
        }
    }
    let acked = answers
        .iter()
        .any(|a| a.status.is_some_and(|s| t.profile.is_success(s)));
    let refused = !acked && answers.iter().any(|a| refuses(&t.profile, a));
    {
        let mut tl = tally.lock().unwrap_or_else(|p| p.into_inner());
        let late = sent.saturating_duration_since(intended);
        count_answers(shared, &mut tl, item, answers, late, measured, refused);
    }
    // Under faults, what failed and was not refused comes back, as a
    // provider's retry would (a resend of a duplicate is the duplicate's
    // original's business).
    if let Some(f) = &shared.faults {
        if !acked && !refused && !matches!(item.kind, Kind::Duplicate { .. }) {
            f.failed(item.slot, item.resend + 1);
        }
    }
    if let Some(sink) = &shared.sink {
        for (i, a) in answers.iter().enumerate() {
            let grade = classify(&t.profile, Intent::Genuine, a);
            attempt_line(
                &mut kit.lines,
                t,
                item,
                i as u32 + 1,
                &kit.sent_at,
                a,
                grade.outcome,
                ends_refused(t, item, a, answers),
            );
        }
        if kit.lines.len() >= FLUSH_AT {
            sink.append(&kit.lines);
            kit.lines.clear();
        }
    }
}

/// Counts one send's answers into the worker's tally `tl`: the second
/// they came in, the refused delivery, and, once measuring, latency
/// (`late` is how long after its intended time the send went out),
/// statuses and errors.
fn count_answers(
    shared: &Shared,
    tl: &mut WorkerStats,
    item: &Item,
    answers: &[Answer],
    late: Duration,
    measured: bool,
    refused: bool,
) {
    let t = &shared.target;
    let sec = Instant::now()
        .saturating_duration_since(shared.start)
        .as_secs() as usize;
    if tl.per_second.len() <= sec {
        tl.per_second.resize(sec + 1, 0);
    }
    if tl.failed_per_second.len() <= sec {
        tl.failed_per_second.resize(sec + 1, 0);
    }
    // Refusals are counted by delivery, resends of one aside: a
    // delivery is refused when no copy was acknowledged and one was
    // refused (a 409 to a duplicate is no refused delivery).
    if !matches!(item.kind, Kind::Duplicate { .. }) {
        if item.resend == 0 {
            tl.answered += 1;
        }
        if refused {
            tl.refused += 1;
        }
    }
    for a in answers {
        let ok = a.status.is_some_and(|s| t.profile.is_success(s));
        tl.per_second[sec] += 1;
        tl.recent_requests += 1;
        if !ok {
            tl.recent_errors += 1;
            tl.failed_per_second[sec] += 1;
        }
        let lat = Duration::from_secs_f64(a.latency_ms / 1000.0);
        let corrected = lat + late;
        if shared.live {
            let _ = tl
                .recent
                .corrected
                .record((corrected.as_micros() as u64).clamp(1, MAX_MICROS));
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
                    .record((lat.as_micros() as u64).clamp(1, MAX_MICROS));
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
