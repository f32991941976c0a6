//! Grading: a finished fold ([`Aggregator`]) and the receiver's state
//! become one [`Partial`] per invariant, each computed by the invariant's
//! own module (store, order, status, poison, ack), and the partials become
//! the words a reader sees ([`word`]). A panic in one invariant grades it
//! unknown, and a large check grades on two cores.
//!
//! [`Aggregator::findings`] is one share of the keys; a check of
//! everything at once words it straight away ([`Aggregator::finish_rows`]),
//! a check in partitions merges the shares first (`check::spill`).

use std::panic::{catch_unwind, AssertUnwindSafe};

use super::aggregate::{Aggregator, GRADE_ON_TWO_THREADS};
use super::partial::{Findings, Partial, Sections};
use super::verdict::{CheckOptions, InvariantResult, ScenarioCheck, Verdict};
use super::view::{Compact, Rows, StateView};
use super::{ack, order, poison, status, store};
use crate::invariant::InvariantId;
use crate::state::State;

impl Aggregator {
    /// Grades every requested invariant against `state` (or the probe's error).
    pub fn finish(
        mut self,
        scenario: &str,
        state: Result<&State, &str>,
        opts: &CheckOptions,
    ) -> ScenarioCheck {
        let rows = state.map(|s| Compact::of(&mut self.strings, s));
        self.finish_rows(scenario, rows, opts)
    }

    /// A sink that takes the state row by row (interning into this fold's
    /// table) for [`Aggregator::finish_rows`]: a state streamed from a file
    /// or a probe is never held as strings.
    pub(crate) fn state_sink(&mut self) -> Compact<'_> {
        Compact::new(&mut self.strings)
    }

    /// Grades every requested invariant against the state's rows.
    pub(crate) fn finish_rows(
        self,
        scenario: &str,
        state: Result<Rows, &str>,
        opts: &CheckOptions,
    ) -> ScenarioCheck {
        let ids = requested(opts);
        let findings = match state {
            Err(reason) => self.findings(Err(reason), opts, &ids),
            Ok(rows) => {
                let view = StateView::new(&self, rows);
                let mut f = self.findings(Ok(&view), opts, &ids);
                for (id, p) in order::grade_in_place(&self, &view, opts, &ids) {
                    f.partials.insert(id, p);
                }
                f
            }
        };
        findings.into_check(scenario, opts)
    }

    /// What this fold's keys show against `view` (or without a state):
    /// every requested invariant but I5 and I6, which group keys by job
    /// and resource ([`order`]), with the counts, the answers' own
    /// findings and the dead letters.
    pub(crate) fn findings(
        &self,
        view: Result<&StateView, &str>,
        opts: &CheckOptions,
        ids: &[InvariantId],
    ) -> Findings {
        let mut counts = self.counts.clone();
        counts.deliveries += self.deliveries.len();
        let dead = self.settle_deaths(&mut counts);
        let mut f = Findings::new(state_result(view.map(|v| v.rows.sections())));
        f.counts = counts;
        f.status = self.status_fail.clone();
        f.sequenced = self.sequenced;
        f.dead = dead
            .into_iter()
            .map(|(line, mut d, i)| {
                d.recovered = view.is_ok_and(|v| v.stored(&self.keys[i as usize]));
                (line, d)
            })
            .collect();
        let keyed: Vec<InvariantId> = ids
            .iter()
            .copied()
            .filter(|id| !matches!(id, InvariantId::I5 | InvariantId::I6))
            .collect();
        let one = |id: InvariantId| -> Option<Partial> {
            let view = match view {
                Ok(v) => v,
                // Without a state only I9 (and I7's answers, which need no
                // partial) can be judged.
                Err(_) if id == InvariantId::I9 => return Some(ack::acknowledged(self)),
                Err(_) => return None,
            };
            Some(
                catch_unwind(AssertUnwindSafe(|| partial(id, self, view, opts))).unwrap_or_else(
                    |panic| {
                        let msg = panic
                            .downcast_ref::<String>()
                            .cloned()
                            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                            .unwrap_or_default();
                        // A partial that cannot be worded as a pass: the
                        // wording turns it into unknown.
                        Partial::failed(msg)
                    },
                ),
            )
        };
        let partials: Vec<(InvariantId, Option<Partial>)> =
            if self.keys.len() < GRADE_ON_TWO_THREADS || view.is_err() {
                keyed.iter().map(|&id| (id, one(id))).collect()
            } else {
                // The invariants only read the records: a large check grades
                // them on two cores. The two that sort a copy of every row
                // (I2, I3: 10 to 20 MB each at a million keys) share one
                // thread, so they never hold their copies at the same time.
                let heavy = |id: &InvariantId| matches!(id, InvariantId::I2 | InvariantId::I3);
                let (mine, theirs) = std::thread::scope(|s| {
                    let theirs = s.spawn(|| {
                        keyed
                            .iter()
                            .filter(|id| heavy(id))
                            .map(|&id| (id, one(id)))
                            .collect::<Vec<_>>()
                    });
                    let mine: Vec<_> = keyed
                        .iter()
                        .filter(|id| !heavy(id))
                        .map(|&id| (id, one(id)))
                        .collect();
                    (mine, theirs.join())
                });
                let theirs = theirs.unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                mine.into_iter().chain(theirs).collect()
            };
        for (id, p) in partials {
            if let Some(p) = p {
                f.partials.insert(id, p);
            }
        }
        f
    }
}

impl Findings {
    /// Words every requested invariant: the scenario's check.
    pub fn into_check(self, scenario: &str, opts: &CheckOptions) -> ScenarioCheck {
        let mut ids = opts.invariants.clone();
        ids.sort();
        ids.dedup();
        let results = ids
            .iter()
            .map(|&id| {
                let empty = Partial::default();
                let p = self.partials.get(&id).unwrap_or(&empty);
                word(id, p, &self, opts)
            })
            .collect();
        ScenarioCheck {
            scenario: scenario.to_string(),
            results,
            counts: self.counts,
            dead_letters: self.dead.into_iter().map(|(_, d)| d).collect(),
            observations: Vec::new(),
        }
    }
}

/// What a check says of a state it read (its sections), or could not
/// (the probe's error, as every invariant that needs the state says it).
pub(crate) fn state_result(state: Result<Sections, &str>) -> Result<Sections, String> {
    state.map_err(|reason| format!("not checked: the state probe failed: {reason}"))
}

/// The invariants `opts` asks for, in order, once each.
pub(crate) fn requested(opts: &CheckOptions) -> Vec<InvariantId> {
    let mut ids = opts.invariants.clone();
    ids.sort();
    ids.dedup();
    ids
}

fn partial(id: InvariantId, agg: &Aggregator, view: &StateView, opts: &CheckOptions) -> Partial {
    match id {
        InvariantId::I1 => store::no_loss(agg, view, opts),
        InvariantId::I2 => store::exactly_once(agg, view, opts),
        InvariantId::I3 => store::processed_once(agg, view, opts),
        InvariantId::I4 => store::no_phantom(agg, view),
        InvariantId::I7 => status::conformance(agg, view),
        InvariantId::I8 => poison::isolation(agg, view),
        InvariantId::I9 => ack::acknowledged(agg),
        // I5 and I6 are graded over records grouped by job and resource
        // (`order`); a sender's invariants only by `hookstorm sink`.
        _ => Partial::default(),
    }
}

/// Words one invariant from its merged partial and the scenario's findings.
pub(crate) fn word(
    id: InvariantId,
    p: &Partial,
    f: &Findings,
    opts: &CheckOptions,
) -> InvariantResult {
    if id.is_sender() {
        return sender_unknown(id);
    }
    if let Some(msg) = p.failure() {
        return InvariantResult::new(
            id,
            Verdict::Unknown,
            format!("not checked: the checker failed: {msg}"),
        );
    }
    let sections: Sections = match &f.state {
        Ok(s) => *s,
        Err(reason) => {
            return match id {
                InvariantId::I7 if !f.status.is_empty() => status::history_only(&f.status),
                InvariantId::I9 => ack::acknowledged_result(p),
                _ => InvariantResult::new(id, Verdict::Unknown, reason.clone()),
            }
        }
    };
    match id {
        InvariantId::I1 => store::no_loss_result(p, opts),
        InvariantId::I2 => store::exactly_once_result(p, sections, opts),
        InvariantId::I3 => store::processed_once_result(p, sections),
        InvariantId::I4 => store::no_phantom_result(p),
        InvariantId::I5 => order::correct_winner_result(p, sections, opts),
        InvariantId::I6 => order::no_stale_overwrite_result(p, f.sequenced, sections),
        InvariantId::I7 => status::conformance_result(p, &f.status, f.counts.attempts, opts),
        InvariantId::I8 => poison::isolation_result(p),
        InvariantId::I9 => ack::acknowledged_result(p),
        sender => sender_unknown(sender),
    }
}

/// A sender's invariant asked of a receiver's history.
fn sender_unknown(id: InvariantId) -> InvariantResult {
    InvariantResult::new(
        id,
        Verdict::Unknown,
        "not checked: a sender's invariant, judged by hookstorm sink from a sink's history",
    )
}
