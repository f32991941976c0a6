//! Crashes of the sender under test (`[sink.crash]`), and keeping it up.
//!
//! A sender that honours `HOOKSTORM_FAILPOINTS` (`[lifecycle] failpoints =
//! true`, as the reference sender does) crashes itself exactly where the
//! scenario says: `crash-before-post` between its outbox commit and the
//! POST, `crash-before-mark` between the 2xx and marking the row
//! delivered. Any other sender is SIGKILLed by the harness at the nearest
//! moment it can see from outside: right after an emit call returned (the
//! rows are committed, the POSTs likely not yet made), or right after the
//! sink answered a 2xx (the row likely not yet marked).
//!
//! With its Postgres behind the harness's proxy (`[database] proxy` in the
//! sender target), a crash before the POST lands on the sender's own
//! commit instead: the proxy holds the first committed save (a transaction
//! that inserted rows) of each emit call from the sender, the sender is killed, and only then does the
//! proxy let the bytes go. The sender dies with its save committed and
//! nothing after it done (an enqueue outside that transaction, the POST,
//! the emit's answer).
//!
//! Either way the sender is restarted at once, each crash and restart is a
//! `fault` line of the history, and the generation the sink stamps on
//! every request goes up, so the checker knows which re-sends a restart
//! explains. A sender that exits on its own is revived the same way.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rand::{Rng, SeedableRng};
use tokio::sync::{mpsc, watch};

use crate::lifecycle::{LifecycleError, Role, Supervisor};
use crate::net::tcpproxy::HeldCommit;
use crate::scenario::sender::{Crash, CrashPoint};
use crate::tag::FaultName;

/// The failpoint trigger of a crash point: one in three hits, seeded.
const TRIGGER: &str = "1/3";

/// Starts in a row that may fail before the watch gives up on the sender.
const MAX_FAILED_STARTS: u32 = 10;

/// What the crashes did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Crashes {
    /// Crashes at a crash point (the sender aborted itself).
    pub at_points: u32,
    /// SIGKILLs the harness sent.
    pub kills: u32,
    /// Exits nobody asked for (revived).
    pub unexpected: u32,
    /// Lifecycle errors (a start that failed: one that crashed before it
    /// was ready is among them, and was started again).
    pub errors: Vec<String>,
}

impl Crashes {
    /// Crashes in all.
    pub fn total(&self) -> u32 {
        self.at_points + self.kills
    }
}

fn failpoint_env(at: CrashPoint, seed: u64) -> BTreeMap<String, String> {
    BTreeMap::from([
        (
            "HOOKSTORM_FAILPOINTS".to_string(),
            format!("crash-{}={TRIGGER}", at.name()),
        ),
        ("HOOKSTORM_FAILPOINT_SEED".to_string(), seed.to_string()),
    ])
}

/// Before a scenario: a sender with failpoints is restarted with its crash
/// point set.
pub async fn arm(
    sup: &mut Supervisor,
    crash: Option<Crash>,
    seed: u64,
) -> Result<(), LifecycleError> {
    if let (Some(c), true) = (crash, sup.supports_failpoints()) {
        if !c.at.is_failpoint() {
            return Ok(());
        }
        sup.set_env(Role::Receiver, failpoint_env(c.at, seed));
        sup.kill(Role::Receiver).await?;
        sup.restart(
            Role::Receiver,
            &format!("with crash point crash-{}", c.at.name()),
        )
        .await?;
    }
    Ok(())
}

/// After a scenario: crash points cleared (restarting the sender without
/// them) and the sender up.
pub async fn disarm(sup: &mut Supervisor, crash: Option<Crash>) -> Result<(), LifecycleError> {
    if crash.is_some_and(|c| c.at.is_failpoint()) && sup.supports_failpoints() {
        sup.set_env(Role::Receiver, BTreeMap::new());
        sup.kill(Role::Receiver).await?;
        sup.restart(Role::Receiver, "crash point cleared").await?;
    }
    sup.ensure_up().await
}

/// A request the sink read and holds unanswered until the watch lets it
/// go: dropped, it goes on to its answer; [`HeldRequest::killed`], the
/// sender it came from is dead and it is answered with nothing.
#[derive(Debug)]
pub struct HeldRequest {
    release: tokio::sync::oneshot::Sender<bool>,
}

impl HeldRequest {
    /// A held request and what its holder waits on (true: the sender was
    /// killed while it waited).
    pub fn new() -> (HeldRequest, tokio::sync::oneshot::Receiver<bool>) {
        let (release, rx) = tokio::sync::oneshot::channel();
        (HeldRequest { release }, rx)
    }

    /// The sender was killed with this request in flight.
    pub fn killed(self) {
        let _ = self.release.send(true);
    }
}

/// The longest the sink holds a request for the watch.
pub const REQUEST_HOLD_MAX: Duration = Duration::from_secs(5);

/// How many of the sender's requests a crash with a POST in flight lets
/// pass before it holds one: seeded, from 1 to this, after each restart.
const REQUESTS_BEFORE_A_MID_POST_CRASH: u64 = 3;

/// What the crash watch listens to.
pub struct Signals<'a> {
    /// One message per 2xx the sender took in full.
    pub acks: mpsc::UnboundedReceiver<()>,
    /// One message per emit call that returned.
    pub emitted: mpsc::UnboundedReceiver<()>,
    /// The sender's commits during an emit call, held by the database
    /// proxy: a crash before the POST lands on these instead of on
    /// `emitted`.
    pub commits: Option<&'a mut mpsc::UnboundedReceiver<HeldCommit>>,
    /// The sender's requests, each held unanswered by the sink until the
    /// watch lets it go (a crash with a POST in flight).
    pub requests: Option<mpsc::UnboundedReceiver<HeldRequest>>,
    /// Turns true when the scenario is over.
    pub done: watch::Receiver<bool>,
}

/// The next message of `r`, or never when there is no `r`.
async fn next<T>(r: Option<&mut mpsc::UnboundedReceiver<T>>) -> Option<T> {
    match r {
        Some(r) => r.recv().await,
        None => std::future::pending().await,
    }
}

/// What the history says of a kill the harness made.
fn why_killed(crash: Option<Crash>, on_a_commit: bool) -> &'static str {
    match crash.map(|c| c.at) {
        Some(CrashPoint::BeforeMark) => "killed right after the sink answered 2xx",
        Some(CrashPoint::MidPost) => {
            "killed with a POST in flight: the sink held the request it read, unanswered"
        }
        _ if on_a_commit => {
            "killed the moment its database committed a save during an emit call, before it heard so"
        }
        _ => "killed right after an emit call returned",
    }
}

/// Runs until `done`: revives the sender whenever it exits, and crashes it
/// as `crash` says, `count` times at most. `generation` goes up with every
/// restart.
pub async fn watch(
    sup: &mut Supervisor,
    crash: Option<Crash>,
    seed: u64,
    generation: Arc<AtomicU32>,
    mut signals: Signals<'_>,
) -> Crashes {
    let mut out = Crashes::default();
    let points = sup.supports_failpoints() && crash.is_some_and(|c| c.at.is_failpoint());
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ 0x6d69_642d_706f_7374);
    let mut gap = rng.gen_range(1..=REQUESTS_BEFORE_A_MID_POST_CRASH);
    let mut since_restart = 0u64;
    let mut next_seed = seed;
    let mut failed_starts = 0;
    let left = |out: &Crashes| crash.is_some_and(|c| out.total() < c.count);
    let on_commits = signals.commits.is_some();
    loop {
        // A held commit or request is let go (dropped) only after the kill.
        let mut held: Option<HeldCommit> = None;
        let mut held_request: Option<HeldRequest> = None;
        let kill_now = tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(5)) => false,
            Some(()) = signals.acks.recv() => {
                !points && left(&out) && crash.is_some_and(|c| c.at == CrashPoint::BeforeMark)
            }
            Some(()) = signals.emitted.recv() => {
                !points && !on_commits && left(&out) && crash.is_some_and(|c| c.at == CrashPoint::BeforePost)
            }
            Some(h) = next(signals.commits.as_deref_mut()) => {
                held = Some(h);
                left(&out)
            }
            Some(h) = next(signals.requests.as_mut()) => {
                since_restart += 1;
                let now = left(&out) && since_restart >= gap;
                if now {
                    held_request = Some(h);
                }
                now
            }
            r = signals.done.changed() => {
                if r.is_err() || *signals.done.borrow() {
                    break;
                }
                false
            }
        };
        if kill_now {
            let why = why_killed(crash, held.is_some());
            if let Err(e) = sup.kill(Role::Receiver).await {
                out.errors.push(e.to_string());
            }
            // Only now do the held bytes go on (or the request learn it
            // will never be answered).
            drop(held.take());
            if let Some(h) = held_request.take() {
                h.killed();
            }
            (out.kills, since_restart) = (out.kills + 1, 0);
            gap = rng.gen_range(1..=REQUESTS_BEFORE_A_MID_POST_CRASH);
            generation.fetch_add(1, Ordering::SeqCst);
            if let Err(e) = sup.restart(Role::Receiver, why).await {
                out.errors.push(e.to_string());
                break;
            }
            continue;
        }
        if !sup.running(Role::Receiver) {
            generation.fetch_add(1, Ordering::SeqCst);
            let at_point = points && crash.is_some() && left(&out);
            let why = if at_point {
                out.at_points += 1;
                next_seed = next_seed.wrapping_add(1);
                let env = match crash {
                    Some(c) if left(&out) => failpoint_env(c.at, next_seed),
                    _ => BTreeMap::new(),
                };
                sup.set_env(Role::Receiver, env);
                format!(
                    "the sender crashed at its crash point crash-{}",
                    crash.map(|c| c.at.name()).unwrap_or_default()
                )
            } else {
                out.unexpected += 1;
                "the sender exited on its own".to_string()
            };
            sup.record(FaultName::Kill, why.clone(), None);
            // A start that dies before it is ready (at its crash point, at
            // once) is seen down on the next turn and counted there.
            match sup.restart(Role::Receiver, &why).await {
                Ok(()) => failed_starts = 0,
                Err(e) => {
                    if !matches!(e, LifecycleError::Exited { .. }) {
                        out.errors.push(e.to_string());
                    }
                    failed_starts += 1;
                    if failed_starts > MAX_FAILED_STARTS {
                        break;
                    }
                }
            }
        }
    }
    out
}
