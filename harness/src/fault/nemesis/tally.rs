//! What the process and database faults did to the attempts, measured
//! from the history and the state once the scenario is over, and what
//! follows from it: whether the faults met anything at all (else the
//! scenario's passes become unknown) and what they showed that is no
//! failure (a receiver silent while its database was cut).

use std::collections::{BTreeMap, HashMap, HashSet};

use super::actions::Actions;
use crate::fault_spec::FaultSpec;
use crate::grading::excuse::{Exercised, Met};
use crate::history::{Event, Fold, Intent, Outcome};
use crate::state::State;
use crate::tag::FaultTag;

/// What helps a receiver that hangs on a silent database: a wait the
/// client itself ends. A server-side `statement_timeout` never fires when
/// the network to the database is silent (the server never sees the
/// query), so it is not advised.
pub const SILENT_DATABASE_ADVICE: &str = "a server-side statement_timeout never fires while the network is silent: give the client a timeout of its own, under the provider's (asyncpg command_timeout and the pool's acquire timeout, node-postgres query_timeout and connectionTimeoutMillis, pgjdbc socketTimeout, libpq's tcp_user_timeout for psycopg, a SQLite busy timeout shorter than the cut), and answer 503 when it fires";

/// Why the scenario's faults tested less than they were asked to, if they
/// did: each fault is measured by its row of [`crate::grading::excuse::EXERCISED`]
/// (a database cut must have met an attempt; every kill must have
/// interrupted work). `tally` is `None` when the state could not be read
/// (the checker is then unknown anyway).
pub fn not_exercised(
    faults: &[FaultSpec],
    acts: &Actions,
    tally: Option<&KillTally>,
) -> Option<String> {
    let mut why: Vec<String> = Vec::new();
    for f in faults {
        let Some(row) = Exercised::of(f) else {
            continue;
        };
        if let Some(reason) = unmet(row.met, acts, tally) {
            if !why.contains(&reason) {
                why.push(reason);
            }
        }
    }
    (!why.is_empty()).then(|| why.join("; "))
}

/// Why `met` was not reached, if it was not.
fn unmet(met: Met, acts: &Actions, tally: Option<&KillTally>) -> Option<String> {
    let show = |n: u32, what: &str| crate::text::words::count(u64::from(n), what);
    match met {
        Met::CutAttempt if !cut_met(acts, tally) => {
            Some(match acts.cut_seen.iter().map(|s| s.held).max() {
                None => "the database was never cut (the stream ended before the cut was due, or the cut failed)".to_string(),
                Some(held) => format!(
                    "no attempt was answered while the database was cut ({} at most), so the receiver's answer to a missing database was never seen (hint: its connection pool may wait longer than the cut; raise the cut's max)",
                    crate::text::units::format_duration(held)
                ),
            })
        }
        Met::CutAttempt => None,
        Met::EveryKillInterrupted | Met::EveryPauseHeldRequest => {
            // No state: the checker is unknown anyway.
            tally?;
            if acts.receiver_crashes > 0 || acts.kills_exercised >= acts.kills_wanted {
                return None;
            }
            Some(format!(
                "{} (a request in flight cut off, or an answer read at most {} ms before) in {} sent before the stream ended, so nothing was in flight to lose",
                acts.receiver_kills_met(),
                crate::grading::excuse::JUST_ANSWERED.as_millis(),
                show(acts.signals.saturating_sub(acts.worker_signals), "signal")
            ))
        }
        Met::EveryWorkerKillHeldWork => {
            if acts.worker_crashes() > 0
                || acts.worker_kills_exercised >= acts.worker_kills_wanted
            {
                return None;
            }
            let unready = if acts.worker_unready > 0 {
                ", and after a restart it settled none of the rows waiting (it took no work)"
            } else {
                ""
            };
            Some(format!(
                "{} before the stream ended{unready}",
                acts.worker_kills_met()
            ))
        }
    }
}

/// Whether the database cuts met an attempt (the `cut-database` row of
/// [`crate::grading::excuse::EXERCISED`]): one sent during a cut was answered while
/// it held, or got no answer in time (a receiver that hangs on a silent
/// database met it too; that is an observation, not a pass by default).
/// `tally` is `None` when the state could not be read.
pub fn cut_met(acts: &Actions, tally: Option<&KillTally>) -> bool {
    acts.cut_seen.iter().any(|s| s.answered.answered > 0)
        || tally.is_some_and(|t| t.cut_unanswered > 0)
}

/// Whether the receiver's kills met anything at all (explore's coverage):
/// a kill interrupted work, a crash point fired in the receiver, or an
/// attempt was cut short or went unanswered while it was down.
pub fn kills_met(acts: &Actions, tally: &KillTally) -> bool {
    acts.kills_exercised > 0 || acts.receiver_crashes > 0 || tally.interrupted > 0 || tally.down > 0
}

/// What the scenario's faults showed that is worth reporting but is not a
/// failure ([`crate::grading::excuse::Effect::Informational`]): a receiver that gave
/// no answer at all while its database was cut.
pub fn observations(
    faults: &[FaultSpec],
    acts: &Actions,
    tally: Option<&KillTally>,
) -> Vec<String> {
    let cut = faults
        .iter()
        .any(|f| matches!(f, FaultSpec::CutDatabase(_)));
    let Some(t) = tally.filter(|t| cut && t.cut_unanswered > 0) else {
        return Vec::new();
    };
    let held = acts
        .cut_seen
        .iter()
        .map(|s| s.held)
        .max()
        .unwrap_or_default();
    let rule = crate::grading::excuse::EXERCISED
        .iter()
        .find(|e| e.fault == "cut-database")
        .map(|e| e.informational)
        .unwrap_or_default();
    if acts.cut_seen.iter().all(|s| s.answered.answered == 0) {
        vec![format!(
            "{rule}: no answer for {} while the database was silent ({} sent during the cut got none in time); {}",
            crate::text::units::format_duration(held),
            crate::text::words::count(t.cut_unanswered, "attempt"),
            SILENT_DATABASE_ADVICE
        )]
    } else {
        vec![format!(
            "{} sent while the database was cut got no answer in time; the others were answered: some of the receiver's waits on its database have no timeout; {}",
            crate::text::words::count(t.cut_unanswered, "attempt"),
            SILENT_DATABASE_ADVICE
        )]
    }
}

/// What the kills did to the attempts, measured from the history and state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KillTally {
    /// Genuine attempts cut off with no answer (reset, closed, timed out).
    pub interrupted: usize,
    /// Of those, attempts whose delivery is stored: the receiver had
    /// committed it when the kill ended the exchange, or a retry stored it.
    /// With a crash-after-commit point every one of them landed between
    /// commit and answer.
    pub stored_after_interruption: usize,
    /// Deliveries acknowledged (2xx) whose row is missing.
    pub lost: usize,
    /// Deliveries stored more than once.
    pub doubled: usize,
    /// Genuine attempts sent while the database was cut that got no answer
    /// (a timeout, a reset): they met the cut even though none was answered.
    pub cut_unanswered: usize,
    /// Genuine attempts left unanswered while the harness had the receiver
    /// down (`receiver-down`: refused, reset or timed out): the kill met them.
    pub down: usize,
}

/// Per genuine key, what the kills could have done to its attempts,
/// folded from the history as it streams by: attempts cut off with no
/// answer, and whether any attempt was acknowledged.
#[derive(Debug, Default)]
pub struct KillFold {
    keys: HashMap<(String, String), (usize, bool)>,
    cut_unanswered: usize,
    down: usize,
}

impl Fold for KillFold {
    fn push(&mut self, _line: u64, e: &Event) {
        let Event::Attempt(a) = e else { return };
        if a.intent != Intent::Genuine || a.poison {
            return;
        }
        let interrupted = a.outcome == Outcome::Info && a.status.is_none();
        if a.status.is_none() && a.faults.contains(&FaultTag::DatabaseCut) {
            self.cut_unanswered += 1;
        }
        if a.faults.contains(&FaultTag::ReceiverDown) {
            self.down += 1;
        }
        let acked = a.outcome == Outcome::Ok;
        if !interrupted && !acked {
            return;
        }
        let k = self
            .keys
            .entry((a.account.clone(), a.key.clone()))
            .or_default();
        k.0 += usize::from(interrupted);
        k.1 |= acked;
    }
}

impl KillFold {
    /// The tally of the folded attempts against the (filtered) state.
    pub fn finish(self, state: &State) -> KillTally {
        let stored: HashSet<(Option<&str>, &str)> = state
            .inbox
            .iter()
            .map(|r| (r.account.as_deref(), r.key.as_str()))
            .collect();
        let mut counts: BTreeMap<(Option<&str>, &str), usize> = BTreeMap::new();
        for r in &state.inbox {
            *counts
                .entry((r.account.as_deref(), r.key.as_str()))
                .or_default() += 1;
        }
        let mut t = KillTally {
            doubled: counts.values().filter(|n| **n > 1).count(),
            cut_unanswered: self.cut_unanswered,
            down: self.down,
            ..KillTally::default()
        };
        for ((account, key), (interrupted, acked)) in self.keys {
            let is_stored = stored.contains(&(Some(account.as_str()), key.as_str()))
                || stored.contains(&(None, key.as_str()));
            t.interrupted += interrupted;
            if is_stored {
                t.stored_after_interruption += interrupted;
            } else if acked {
                t.lost += 1;
            }
        }
        t
    }
}

impl KillTally {
    /// Measures a scenario's events against its (filtered) state.
    pub fn measure<'a>(events: impl IntoIterator<Item = &'a Event>, state: &State) -> KillTally {
        let mut f = KillFold::default();
        for e in events {
            f.push(0, e);
        }
        f.finish(state)
    }
}

#[cfg(test)]
mod advice {
    #[test]
    fn the_silent_database_advice_and_the_target_docs_name_the_same_client_timeouts() {
        let docs = include_str!("../../../../docs/target.md");
        for knob in [
            "command_timeout",
            "query_timeout",
            "connectionTimeoutMillis",
            "socketTimeout",
            "tcp_user_timeout",
        ] {
            assert!(super::SILENT_DATABASE_ADVICE.contains(knob), "{knob}");
            assert!(
                docs.contains(&format!("`{knob}`")),
                "docs/target.md lacks {knob}"
            );
        }
    }
}
