//! Where the receiver's kills land: on what the harness sees of its
//! traffic, never on the clock alone.
//!
//! A kill waits for the restarted receiver to have acknowledged a seeded
//! number of attempts, at least [`super::KILL_AFTER_ACKS`] (it is serving,
//! not booting; the seed varies where in the stream it lands), then for its
//! trigger ([`KillTrigger`]): the moment the sender
//! reads a 2xx (`answer`: an answer-then-write receiver has answered and
//! not yet written), or a request in flight a seeded fraction of a typical
//! answer time after it was sent (`in-flight`: between a commit and its
//! answer). What triggered it and what was in flight go on the kill's
//! history line.
//!
//! A kill counts as exercised only when it interrupted work: a request it
//! cut off, or (placed on an answer) an answer read at most
//! [`JUST_ANSWERED`] before the signal, once some kill of the fault has cut
//! a request off (the process killed is the one answering); a pause, a
//! request in flight while it held. One that did not is
//! placed again, so a scenario goes on until it has its number of
//! exercised kills, at most [`super::MISSED_KILL_RETRIES`] more signals per
//! kill and never past the end of the stream.

use std::time::Duration;

use rand::Rng;
use tokio::sync::watch;
use tokio::time::Instant;

use super::{
    gap, revive_all, signal, Actions, CrashPoints, CUT_OFF_GRACE, MISSED_KILL_RETRIES, POLL,
};
use crate::fault::gauge::TrafficGauge;
use crate::fault_spec::{KillSignal, KillSpec, KillTrigger};
use crate::grading::excuse::JUST_ANSWERED;
use crate::lifecycle::{LifecycleError, Role, Supervisor};

/// What the harness saw when a kill's trigger fired.
#[derive(Debug, Clone, Copy)]
struct Seen {
    trigger: KillTrigger,
    in_flight: u64,
    since_ack: Option<Duration>,
    acks: u64,
}

impl Seen {
    fn now(trigger: KillTrigger, gauge: &TrafficGauge, mark: u64) -> Seen {
        Seen {
            trigger,
            in_flight: gauge.in_flight(),
            since_ack: gauge.last_ack().map(|at| at.elapsed()),
            acks: gauge.acks().saturating_sub(mark),
        }
    }

    fn just_answered(&self) -> bool {
        self.since_ack.is_some_and(|d| d <= JUST_ANSWERED)
    }

    /// The kill's history detail.
    fn detail(&self) -> String {
        let ack = match self.since_ack {
            Some(d) => format!(
                "the last 2xx read {:.1} ms before",
                d.as_secs_f64() * 1000.0
            ),
            None => "no 2xx read yet".to_string(),
        };
        format!(
            "on {}: {} in flight, {ack}, {} since the last restart",
            self.trigger.name(),
            crate::text::words::count(self.in_flight, "request"),
            crate::text::words::count(self.acks, "acknowledgement")
        )
    }
}

/// Kills the receiver `k.count` times where its traffic makes each kill
/// interrupt work, each no earlier than its moment after `start`.
#[allow(clippy::too_many_arguments)]
pub(super) async fn kills<R: Rng>(
    sup: &mut Supervisor,
    k: &KillSpec,
    gaps: &[u64],
    gauge: &TrafficGauge,
    rng: &mut R,
    done: &mut watch::Receiver<bool>,
    acts: &mut Actions,
    cps: &mut CrashPoints,
) -> Result<(), LifecycleError> {
    acts.kills_wanted += k.count;
    let bound = k.count * (1 + MISSED_KILL_RETRIES);
    let restarts = k.signal != KillSignal::Stop;
    let mut mark = gauge.acks();
    let (mut met, mut sent) = (0, 0);
    // Kills placed on an answer count only once some kill of the fault cut
    // a request off: proof that the process killed is the one answering
    // (a start command that hands the server to another process is not).
    let (mut on_answer, mut cut_any) = (0, false);
    while met < k.count && sent < bound {
        let trigger = k.trigger(sent as usize);
        let after = mark + gap(gaps, sent);
        let Some(seen) =
            wait_trigger(trigger, gauge, after, mark, rng, sup, done, acts, cps).await?
        else {
            break;
        };
        let cut_off = gauge.cut_off();
        // The receiver is down from just before the signal until it is
        // ready again: attempts that meet that window unanswered are the
        // harness's doing (`receiver-down`). A kill (not a pause) also holds
        // the stream of first attempts until the new process is ready, so
        // traffic is left for the kills after it.
        gauge.receiver_down();
        gauge.hold(restarts);
        let r = signal(sup, Role::Receiver, k, Some(seen.detail()), acts, cps).await;
        let during_pause = !restarts && gauge.in_flight() > 0;
        gauge.receiver_up(restarts);
        if let Err(e) = r {
            gauge.hold(false);
            return Err(e);
        }
        sent += 1;
        mark = gauge.acks();
        // An answer just read counts for a kill placed on it; a kill placed
        // in flight must have cut that request off (a receiver answering
        // from another process than the one killed never is).
        let interrupted = if restarts {
            let answered = trigger == KillTrigger::Answer && seen.just_answered();
            // A kill on an answer waits for a cut-off only while the fault
            // still lacks its proof (the stream goes on meanwhile).
            let cut = seen.in_flight > 0
                && (!answered || !cut_any)
                && cut_off_rose(gauge, cut_off, done).await;
            cut_any |= cut;
            on_answer += u32::from(answered && !cut);
            cut || answered
        } else {
            seen.in_flight > 0 || during_pause
        };
        // Held until what the kill cut off is known: new traffic is kept
        // for the kills after it.
        gauge.hold(false);
        if interrupted {
            met += 1;
            acts.kills_exercised += 1;
        } else {
            acts.missed += 1;
        }
    }
    if restarts && !cut_any {
        acts.kills_exercised -= on_answer;
    }
    Ok(())
}

/// Waits until the receiver's acknowledgements reach `after` (its
/// seeded gap past `mark`, the count at the last restart), then for
/// `trigger`. `None` when the stream ended first.
#[allow(clippy::too_many_arguments)]
async fn wait_trigger<R: Rng>(
    trigger: KillTrigger,
    gauge: &TrafficGauge,
    after: u64,
    mark: u64,
    rng: &mut R,
    sup: &mut Supervisor,
    done: &mut watch::Receiver<bool>,
    acts: &mut Actions,
    cps: &mut CrashPoints,
) -> Result<Option<Seen>, LifecycleError> {
    loop {
        if *done.borrow() {
            return Ok(None);
        }
        revive_all(sup, acts, cps).await?;
        if gauge.acks() < after {
            tokio::time::sleep(POLL).await;
            continue;
        }
        match trigger {
            KillTrigger::Answer => {
                // Woken by the read itself: the signal follows at once.
                if gauge.wait_ack(POLL).await {
                    return Ok(Some(Seen::now(trigger, gauge, mark)));
                }
            }
            KillTrigger::InFlight => {
                if !gauge.wait_start(POLL).await && gauge.in_flight() == 0 {
                    continue;
                }
                let typical = gauge
                    .recent_latency()
                    .unwrap_or(Duration::from_millis(1))
                    .min(Duration::from_millis(200));
                pause(typical.mul_f64(rng.gen_range(0.1..0.6))).await;
                if gauge.in_flight() > 0 {
                    return Ok(Some(Seen::now(trigger, gauge, mark)));
                }
            }
        }
    }
}

/// Whether the kill just made cut off an exchange: the gauge's cut-off
/// count rose past `before` within a grace after the restart (an exchange
/// reset by the kill ends at once; one the harness's held socket kept
/// waiting is answered by the new process instead).
async fn cut_off_rose(gauge: &TrafficGauge, before: u64, done: &watch::Receiver<bool>) -> bool {
    let grace = CUT_OFF_GRACE
        + gauge
            .typical_latency()
            .unwrap_or_default()
            .min(Duration::from_millis(200));
    let until = Instant::now() + grace;
    loop {
        if gauge.cut_off() > before {
            return true;
        }
        if Instant::now() >= until || *done.borrow() {
            return gauge.cut_off() > before;
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Waits `d`. Below the timer's 1 ms resolution it yields instead of
/// sleeping, so a kill can land inside an exchange that takes less than a
/// millisecond (a fast receiver answers in a few hundred microseconds).
async fn pause(d: Duration) {
    if d >= Duration::from_millis(2) {
        tokio::time::sleep(d).await;
        return;
    }
    let until = std::time::Instant::now() + d;
    while std::time::Instant::now() < until {
        tokio::task::yield_now().await;
    }
}
