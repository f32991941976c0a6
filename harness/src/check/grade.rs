//! Grading: a finished fold ([`Aggregator`]) and the receiver's state
//! become one result per invariant, each computed by the invariant's own
//! module (store, order, status, poison, ack); a panic in one grades it
//! unknown, and a large check grades on two cores.

use std::panic::{catch_unwind, AssertUnwindSafe};

use super::aggregate::{Aggregator, GRADE_ON_TWO_THREADS};
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
        let mut ids = opts.invariants.clone();
        ids.sort();
        ids.dedup();
        let mut counts = self.counts.clone();
        counts.deliveries += self.deliveries.len();

        let (results, dead_letters) = match state {
            Err(reason) => {
                let results = ids
                    .iter()
                    .map(|&id| {
                        if id == InvariantId::I7 && !self.status_fail.is_empty() {
                            status::history_only(&self)
                        } else if id == InvariantId::I9 {
                            ack::acknowledged(&self)
                        } else {
                            InvariantResult::new(
                                id,
                                Verdict::Unknown,
                                format!("not checked: the state probe failed: {reason}"),
                            )
                        }
                    })
                    .collect();
                let dead = self.dead.iter().map(|(d, _)| d.clone()).collect();
                (results, dead)
            }
            Ok(rows) => {
                let view = StateView::new(&self, rows);
                let one = |id: InvariantId| {
                    catch_unwind(AssertUnwindSafe(|| grade(id, &self, &view, opts))).unwrap_or_else(
                        |panic| {
                            let msg = panic
                                .downcast_ref::<String>()
                                .cloned()
                                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                                .unwrap_or_default();
                            InvariantResult::new(
                                id,
                                Verdict::Unknown,
                                format!("not checked: the checker failed: {msg}"),
                            )
                        },
                    )
                };
                let results = if self.keys.len() < GRADE_ON_TWO_THREADS {
                    ids.iter().map(|&id| one(id)).collect()
                } else {
                    // The invariants only read the records: a large check
                    // grades them on two cores. The three that sort a copy of
                    // every row or record (I2, I3, I5: 10 to 20 MB each at a
                    // million keys) share one thread, so they never hold
                    // their copies at the same time.
                    let heavy = |id: &InvariantId| {
                        matches!(id, InvariantId::I2 | InvariantId::I3 | InvariantId::I5)
                    };
                    let (mine, theirs) = std::thread::scope(|s| {
                        let theirs = s.spawn(|| {
                            ids.iter()
                                .filter(|id| heavy(id))
                                .map(|&id| one(id))
                                .collect::<Vec<_>>()
                        });
                        let mine: Vec<_> = ids
                            .iter()
                            .filter(|id| !heavy(id))
                            .map(|&id| one(id))
                            .collect();
                        (mine, theirs.join())
                    });
                    let theirs = theirs.unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                    let (mut mine_left, mut theirs_left) = (mine.into_iter(), theirs.into_iter());
                    ids.iter()
                        .filter_map(|id| {
                            if heavy(id) {
                                theirs_left.next()
                            } else {
                                mine_left.next()
                            }
                        })
                        .collect()
                };
                let dead = self
                    .dead
                    .iter()
                    .map(|(d, i)| {
                        let mut d = d.clone();
                        d.recovered = view.stored(&self.keys[*i as usize]);
                        d
                    })
                    .collect();
                (results, dead)
            }
        };
        ScenarioCheck {
            scenario: scenario.to_string(),
            results,
            counts,
            dead_letters,
            observations: Vec::new(),
        }
    }
}

fn grade(
    id: InvariantId,
    agg: &Aggregator,
    view: &StateView,
    opts: &CheckOptions,
) -> InvariantResult {
    match id {
        InvariantId::I1 => store::no_loss(agg, view, opts),
        InvariantId::I2 => store::exactly_once(agg, view, opts),
        InvariantId::I3 => store::processed_once(agg, view, opts),
        InvariantId::I4 => store::no_phantom(agg, view),
        InvariantId::I5 => order::correct_winner(agg, view, opts),
        InvariantId::I6 => order::no_stale_overwrite(agg, view),
        InvariantId::I7 => status::conformance(agg, view, opts),
        InvariantId::I8 => poison::isolation(agg, view),
        InvariantId::I9 => ack::acknowledged(agg),
        sender => InvariantResult::new(
            sender,
            Verdict::Unknown,
            "not checked: a sender's invariant, judged by hookstorm sink from a sink's history",
        ),
    }
}
