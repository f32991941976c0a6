//! Where the worker's kills land: on a worker that is ready and holds
//! work, never on one that is still booting.
//!
//! The worker answers no request, so the traffic gauge cannot say when it
//! is vulnerable; its state can. A kill waits for its seeded moment, then
//! until the worker holds work: its `busy` command exits 0, or else the
//! state shows rows it settled since its last (re)start and rows still
//! waiting (it is taking work, and has more claimed or queued). The kill's
//! history line says what the state showed. While the killed worker
//! restarts, the stream of first attempts is held until it is ready again
//! (its `ready`, or by default the state: a row settled since the kill, or
//! none waiting), so the kills after it still meet work; a worker that is
//! not ready within its ready timeout ends the worker kills (it takes no
//! work: the rows it left are the checker's to judge).
//!
//! A kill counts as exercised only when the worker held work: rows were
//! waiting, or its `busy` command said so.

use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use super::{revive_all, signal, wait_until, Actions, CrashPoints, MISSED_KILL_RETRIES};
use crate::fault::gauge::TrafficGauge;
use crate::lifecycle::{LifecycleError, Ready, Role, Supervisor, DEFAULT_READY_TIMEOUT};
use crate::scenario::fault_spec::KillSpec;
use crate::state::probe::Probe;

/// How often the worker's state (or its `busy` command) is read while a
/// kill waits for it to hold work.
pub const STATE_POLL: Duration = Duration::from_millis(20);

/// What the worker's state showed when a kill's wait ended.
#[derive(Debug, Clone, Copy, Default)]
struct Held {
    /// Rows settled (processed or marked failed), in all.
    settled: usize,
    /// Of those, settled since the worker's last (re)start.
    since_start: usize,
    /// Rows waiting (neither processed nor failed).
    waiting: usize,
    /// The target's `busy` command said the worker holds work.
    by_hook: bool,
}

impl Held {
    fn holds_work(&self) -> bool {
        self.by_hook || self.waiting > 0
    }

    fn detail(&self) -> String {
        if self.by_hook {
            return "on busy: the worker's busy command exited 0".to_string();
        }
        format!(
            "on busy: the state shows {} waiting and {} settled since the worker's start",
            crate::words::count(self.waiting as u64, "row"),
            self.since_start
        )
    }
}

/// Counts the state's settled and waiting rows; `None` when it cannot be read.
async fn read(probe: &Probe) -> Option<(usize, usize)> {
    let state = probe.read_state().await.ok()?;
    let settled = state.inbox.iter().filter(|r| r.settled()).count();
    Some((settled, state.inbox.len() - settled))
}

/// Kills the worker `k.count` times while it holds work, each no earlier
/// than its moment after `start`.
#[allow(clippy::too_many_arguments)]
pub(super) async fn kills(
    sup: &mut Supervisor,
    k: &KillSpec,
    moments: &[Duration],
    start: Instant,
    gauge: &TrafficGauge,
    probe: &Probe,
    done: &mut watch::Receiver<bool>,
    acts: &mut Actions,
    cps: &mut CrashPoints,
) -> Result<(), LifecycleError> {
    acts.worker_kills_wanted += k.count;
    let bound = k.count * (1 + MISSED_KILL_RETRIES);
    let mut base = read(probe).await.map(|(s, _)| s).unwrap_or(0);
    let (mut met, mut sent) = (0, 0);
    while met < k.count && sent < bound {
        let moment = moments
            .get(sent as usize)
            .or(moments.last())
            .copied()
            .unwrap_or_default();
        if !wait_until(sup, start + moment, done, acts, cps).await? {
            break;
        }
        let Some(held) = wait_busy(sup, probe, base, done, acts, cps).await? else {
            break;
        };
        gauge.hold(true);
        let r = signal(sup, Role::Worker, k, Some(held.detail()), acts, cps).await;
        let ready = match r {
            Ok(()) => wait_ready(sup, probe, held.settled, done).await,
            Err(_) => true,
        };
        gauge.hold(false);
        r?;
        sent += 1;
        base = held.settled;
        if held.holds_work() {
            met += 1;
            acts.worker_kills_exercised += 1;
        } else {
            acts.missed += 1;
        }
        if !ready {
            acts.worker_unready += 1;
            sup.record(
                crate::tag::FaultName::Restart,
                "worker not ready".to_string(),
                Some(format!(
                    "it settled no row of those waiting within {}: no further kills of it",
                    crate::units::format_duration(ready_limit(sup))
                )),
            );
            break;
        }
    }
    Ok(())
}

/// Waits until the worker holds work (see the module header); `None`
/// when the stream ended first.
async fn wait_busy(
    sup: &mut Supervisor,
    probe: &Probe,
    base: usize,
    done: &mut watch::Receiver<bool>,
    acts: &mut Actions,
    cps: &mut CrashPoints,
) -> Result<Option<Held>, LifecycleError> {
    loop {
        if *done.borrow() {
            return Ok(None);
        }
        revive_all(sup, acts, cps).await?;
        if sup.busy_command().is_some() {
            if sup.worker_busy().await {
                return Ok(Some(Held {
                    by_hook: true,
                    ..Held::default()
                }));
            }
        } else if let Some((settled, waiting)) = read(probe).await {
            if settled > base && waiting > 0 {
                return Ok(Some(Held {
                    settled,
                    since_start: settled - base,
                    waiting,
                    by_hook: false,
                }));
            }
        }
        tokio::time::sleep(STATE_POLL).await;
    }
}

/// The longest a restarted worker may take to show it is ready.
fn ready_limit(sup: &Supervisor) -> Duration {
    sup.worker_ready_timeout().unwrap_or(DEFAULT_READY_TIMEOUT)
}

/// Waits until a restarted worker ready by the state is ready: a row
/// settled since the kill (`settled` then), or none waiting. A worker with
/// another `ready` was waited for by its restart. False when the limit
/// passed first.
async fn wait_ready(
    sup: &mut Supervisor,
    probe: &Probe,
    settled: usize,
    done: &watch::Receiver<bool>,
) -> bool {
    if !matches!(sup.ready_of(Role::Worker), Some(Ready::State { .. })) {
        return true;
    }
    let until = Instant::now() + ready_limit(sup);
    while Instant::now() < until {
        if let Some((now, waiting)) = read(probe).await {
            if now > settled || waiting == 0 {
                return true;
            }
        }
        if *done.borrow() && Instant::now() + STATE_POLL >= until {
            break;
        }
        tokio::time::sleep(STATE_POLL).await;
    }
    false
}
