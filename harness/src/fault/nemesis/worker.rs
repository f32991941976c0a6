//! Where the worker's kills land: on a worker that is ready and holds
//! work, never on one that is still booting.
//!
//! The worker answers no request, so the traffic gauge cannot say when it
//! is vulnerable; its state can. A kill waits for a seeded number of
//! acknowledgements since the worker was ready, then until it holds work: its `busy` command exits 0, or else the
//! state shows rows it settled since its last (re)start (it is working,
//! not booting) and the sender reads a 2xx (a row just committed: the
//! moment the worker takes it). Right after the signal, before the
//! restart, the state is read again: the rows still unfinished are what
//! the dead worker left (its restart line says how many), and a kill
//! counts only when there were some.
//!
//! While a killed worker restarts, the stream of first attempts is held
//! until it is ready again (its `ready`, waited for by the restart) and
//! working: it settled a row. Until then the stream waits while rows wait
//! and lets one in while none does (the same before the first kill), so
//! the kills after it still meet work. A worker that settles no row within its ready
//! timeout ends the worker kills (it takes no work: the rows it left are
//! the checker's to judge).

use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use super::{gap, revive_all, Actions, CrashPoints, MISSED_KILL_RETRIES};
use crate::fault::gauge::TrafficGauge;
use crate::fault_spec::KillSpec;
use crate::lifecycle::{LifecycleError, Role, Supervisor, DEFAULT_READY_TIMEOUT};
use crate::state::probe::Probe;
use crate::state::stream::{Discard, Settling};

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
            "on answer: a 2xx read, the worker working ({} settled since its start)",
            crate::text::words::count(self.since_start as u64, "row")
        )
    }
}

/// Counts the state's settled and waiting rows without keeping them (it
/// is read every [`STATE_POLL`]); `None` when it cannot be read.
async fn read(probe: &Probe) -> Option<(usize, usize)> {
    let s = probe.read_state_into(Settling::new(Discard)).await.ok()?;
    Some(((s.rows - s.unsettled) as usize, s.unsettled as usize))
}

/// Kills the worker `k.count` times while it holds work, each no earlier
/// than its moment after `start`.
#[allow(clippy::too_many_arguments)]
pub(super) async fn kills(
    sup: &mut Supervisor,
    k: &KillSpec,
    gaps: &[u64],
    gauge: &TrafficGauge,
    probe: &Probe,
    done: &mut watch::Receiver<bool>,
    acts: &mut Actions,
    cps: &mut CrashPoints,
) -> Result<(), LifecycleError> {
    acts.worker_kills_wanted += k.count;
    let bound = k.count * (1 + MISSED_KILL_RETRIES);
    let mut base = read(probe).await.map(|(s, _)| s).unwrap_or(0);
    // A worker has proven nothing until it has settled a row: the stream
    // waits (one row in at a time) until it has.
    let working = wait_working(probe, gauge, base, ready_limit(sup), done).await;
    gauge.hold(false);
    if !working {
        if !*done.borrow() {
            acts.worker_unready += 1;
        }
        return Ok(());
    }
    let (mut met, mut sent) = (0, 0);
    while met < k.count && sent < bound {
        // A seeded number of acknowledgements since the worker was ready:
        // the seed varies where in the stream the kill lands.
        let after = gauge.acks() + gap(gaps, sent).saturating_sub(1);
        while gauge.acks() < after {
            if *done.borrow() {
                return Ok(());
            }
            revive_all(sup, acts, cps).await?;
            let _ = gauge.wait_ack(STATE_POLL).await;
        }
        let Some(mut held) = wait_busy(sup, probe, gauge, base, done, acts, cps).await? else {
            break;
        };
        gauge.hold(true);
        let r = kill_and_measure(sup, probe, &mut held, acts, cps).await;
        let ready = match r {
            Ok(()) => wait_working(probe, gauge, held.settled, ready_limit(sup), done).await,
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
                    crate::text::units::format_duration(ready_limit(sup))
                )),
            );
            break;
        }
    }
    Ok(())
}

/// Kills the worker, reads what it left unfinished (the dead worker
/// settles nothing more) into `held`, and restarts it.
async fn kill_and_measure(
    sup: &mut Supervisor,
    probe: &Probe,
    held: &mut Held,
    acts: &mut Actions,
    cps: &mut CrashPoints,
) -> Result<(), LifecycleError> {
    sup.kill_noting(Role::Worker, Some(held.detail())).await?;
    acts.signalled(Role::Worker);
    let mut why = "after SIGKILL".to_string();
    if !held.by_hook {
        if let Some((settled, waiting)) = read(probe).await {
            held.waiting = waiting;
            held.since_start += settled.saturating_sub(held.settled);
            held.settled = settled;
            why = format!(
                "after SIGKILL, which left {} unfinished",
                crate::text::words::count(waiting as u64, "row")
            );
        }
    }
    super::restart(sup, Role::Worker, &why, acts, cps).await
}

/// Waits until the worker holds work (see the module header); `None`
/// when the stream ended first.
async fn wait_busy(
    sup: &mut Supervisor,
    probe: &Probe,
    gauge: &TrafficGauge,
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
            tokio::time::sleep(STATE_POLL).await;
            continue;
        }
        // Working: it settled a row since its start. Then the kill lands
        // the moment the sender reads a 2xx: a row just committed, the
        // moment the worker takes it.
        if let Some((settled, _)) = read(probe).await {
            if settled > base {
                while !gauge.wait_ack(STATE_POLL).await {
                    if *done.borrow() {
                        return Ok(None);
                    }
                }
                return Ok(Some(Held {
                    settled,
                    since_start: settled - base,
                    waiting: 0,
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

/// Waits until a worker judged ready by the state is working: it settled
/// a row past `base`. Meanwhile the stream of first attempts is held while
/// rows wait (the worker has work it has not done) and let through while
/// none does (it needs a row to show it works). False when `limit` passed
/// first; the stream is held when it returns.
async fn wait_working(
    probe: &Probe,
    gauge: &TrafficGauge,
    base: usize,
    limit: Duration,
    done: &watch::Receiver<bool>,
) -> bool {
    let until = Instant::now() + limit;
    while Instant::now() < until {
        if let Some((settled, waiting)) = read(probe).await {
            if settled > base {
                gauge.hold(true);
                return true;
            }
            gauge.hold(waiting > 0);
        }
        if *done.borrow() {
            gauge.hold(true);
            return false;
        }
        tokio::time::sleep(STATE_POLL).await;
    }
    gauge.hold(true);
    false
}
