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
//! [`Signer`](crate::profile::signature::Signer) (keyed once) into reused
//! header values, encodes the request into one reused buffer written with
//! one `write`, and appends the attempt line to its batch. Measured
//! against `oha` and `wrk` on the same null receiver in docs/performance.md
//! (`harness/scripts/compare.sh`).
//!
//! Here: one phase ([`run_phase`]: its workers on their runtime, its end
//! and its result). [`target`] is where and how to send, [`worker`] one
//! worker's loop, [`encode`] one request's bytes, [`lane`] one connection
//! and its exchange, [`tally`] what the workers count, [`record`] the
//! history's attempt lines.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::mix::Generator;
use crate::run::interrupt::Stop;

mod encode;
mod lane;
mod record;
mod resend;
mod tally;
mod target;
mod wire;
mod worker;

pub use lane::CUT_AT_END;
pub use record::{refuses, LineSink, SCENARIO};
pub use resend::{ResendCounts, UnderFaults, MAX_RESENDS, RESEND_AFTER};
pub use tally::{Live, Refusal, Refusals, WorkerStats};
pub use target::{LoadError, LoadTarget};

/// How the load is driven.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pace {
    /// Constant arrival rate, requests per second.
    Open(f64),
    /// As fast as the receiver answers.
    Closed,
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
    /// End once this many deliveries were sent after the warmup (a
    /// concurrent duplicate's two copies are one), if that comes before
    /// the duration.
    pub requests: Option<u64>,
}

/// How long requests still in flight at the end of a phase may take to be
/// answered; then they are cut and recorded as unanswered. This is what
/// makes `--duration` a hard bound whatever the receiver does.
pub const END_GRACE: Duration = Duration::from_secs(2);

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
    /// The phase ended because its count of requests was sent.
    pub counted_out: bool,
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

/// Runs one phase from slot `first`, keeping the first refusal in
/// `refusals`; `on_start` gets the live view (for a progress line) before
/// the workers start. The phase ends at its
/// duration (requests in flight get [`END_GRACE`], then are cut), once its
/// count of requests was sent and answered, or, soon after, when `stop`
/// is requested.
#[allow(clippy::too_many_arguments)]
pub async fn run_phase(
    target: &LoadTarget,
    gen: &Generator,
    phase: Phase,
    first: u64,
    sink: Option<LineSink>,
    refusals: &Refusals,
    faults: Option<&Arc<UnderFaults>>,
    stop: &Stop,
    on_start: impl FnOnce(Live),
) -> PhaseResult {
    let connections = phase.connections.max(1);
    let start = Instant::now() + Duration::from_millis(5);
    let measure_from = start + phase.warmup;
    let end = measure_from + phase.duration;
    let hard_end = end + END_GRACE;
    let next = Arc::new(AtomicU64::new(first));
    let shared = Arc::new(worker::Shared {
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
        refusals: refusals.clone(),
        limit: phase.requests.map(|n| worker::Limit {
            requests: n,
            claimed: AtomicU64::new(0),
            reached: AtomicBool::new(false),
        }),
        faults: faults.cloned(),
    });
    let tallies: Arc<Vec<Mutex<WorkerStats>>> =
        Arc::new((0..connections).map(|_| Mutex::default()).collect());
    on_start(Live {
        tallies: tallies.clone(),
        start,
        measure_from,
        refusals: refusals.clone(),
    });
    let threads = phase.threads.clamp(1, connections);
    let stopped = send_all(&shared, &tallies, connections, threads, stop).await;
    let finished = Instant::now();
    let mut tally = WorkerStats::default();
    for t in tallies.iter() {
        tally.merge(&t.lock().unwrap_or_else(|p| p.into_inner()));
    }
    let measured = finished.saturating_duration_since(measure_from);
    let counted_out = shared.limit.as_ref().is_some_and(worker::Limit::reached);
    // Open loop: the slots due while the phase ran its course, or until
    // its count was sent.
    let ran = if counted_out {
        finished.saturating_duration_since(start)
    } else {
        phase.warmup + phase.duration
    };
    let due = match phase.pace {
        Pace::Open(rate) => (rate * ran.as_secs_f64()).min(u64::MAX as f64).ceil() as u64,
        Pace::Closed => 0,
    };
    PhaseResult {
        tally,
        // Open loop: at least the schedule's length; longer when the
        // receiver fell behind and the last answers came late. A stopped
        // phase counts the time it ran.
        measured: match phase.pace {
            Pace::Open(_) if !stopped && !counted_out => phase.duration.max(measured),
            _ => measured.max(Duration::from_millis(1)),
        },
        next_slot: next.load(Ordering::Relaxed),
        due,
        sent: shared.sent.load(Ordering::Relaxed),
        stopped,
        counted_out,
    }
}

/// Runs `connections` senders on `threads` threads until they end, or
/// until `stop` (then they get [`END_GRACE`] to finish): whether it was
/// the stop.
async fn send_all(
    shared: &Arc<worker::Shared>,
    tallies: &Arc<Vec<Mutex<WorkerStats>>>,
    connections: usize,
    threads: usize,
    stop: &Stop,
) -> bool {
    // One work-stealing runtime with a worker per sender thread. Measured
    // against one single-threaded runtime per thread (each with its share of
    // the connections), it sends 5-10% more against the same receiver on
    // two cores, and the receiver switches context a sixth as often.
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
                    set.spawn(worker::run(shared2.clone(), tallies2.clone(), me));
                }
                while set.join_next().await.is_some() {}
            });
            let _ = done_tx.send(());
        });
    match joiner {
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
    }
}
