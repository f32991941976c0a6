//! Coverage of the fault space: which fault kinds, and which pairs of
//! kinds, explored plans held, how often, and how often they met the
//! receiver's traffic.
//!
//! A fault in a plan is not yet a fault tested: a cut that fell after the
//! stream ended, or a reorder of one delivery, met nothing. A kind counts
//! as having met traffic in a plan by the rule of [`met`]: the process and
//! database faults by the rules the run already grades them by
//! ([`crate::grading::excuse::EXERCISED`], measured by the nemesis), every other
//! kind when an attempt in the plan's history carries one of its tags
//! ([`crate::grading::excuse::tags_of`]); reorder by shuffle or reversal, which
//! tags no attempt, when the receiver answered two deliveries or more;
//! reconcile when the reconciliation ran. A pair met traffic when both of
//! its kinds did in the same plan.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::fault::nemesis;
use crate::fault_spec::{FaultSpec, KillSignal, ReorderMode};
use crate::findings::note::Note;
use crate::history::Attempt;

/// How often one kind (or pair) was drawn and met traffic.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Count {
    /// Plans that held it.
    pub plans: usize,
    /// Of those, plans in which it met the receiver's traffic.
    pub met: usize,
}

/// The coverage of a session's plans.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FaultCoverage {
    /// Per fault kind.
    pub kinds: BTreeMap<&'static str, Count>,
    /// Per pair of kinds, each pair in [`super::space::KINDS`] order.
    pub pairs: BTreeMap<(&'static str, &'static str), Count>,
    /// Plans counted.
    pub plans: usize,
}

/// What one plan's run left to judge its faults by.
pub struct Evidence<'a> {
    /// The plan's faults.
    pub faults: &'a [FaultSpec],
    /// Its attempts, in history order.
    pub attempts: &'a [Attempt],
    /// What its run said.
    pub notes: &'a [Note],
}

/// The kind's position in [`super::space::KINDS`] (unknown kinds last).
fn rank(kind: &str) -> usize {
    super::space::KINDS
        .iter()
        .position(|k| *k == kind)
        .unwrap_or(usize::MAX)
}

impl FaultCoverage {
    /// Counts one plan: each of its faults (and each pair) held, and met
    /// or not.
    pub fn add(&mut self, e: &Evidence<'_>) {
        self.plans += 1;
        let mut held: Vec<(&'static str, bool)> =
            e.faults.iter().map(|f| (f.name(), met(f, e))).collect();
        held.sort_by_key(|(k, _)| rank(k));
        held.dedup_by_key(|(k, _)| *k);
        for (k, m) in &held {
            let c = self.kinds.entry(*k).or_default();
            c.plans += 1;
            c.met += usize::from(*m);
        }
        for (i, (a, ma)) in held.iter().enumerate() {
            for (b, mb) in &held[i + 1..] {
                let c = self.pairs.entry((*a, *b)).or_default();
                c.plans += 1;
                c.met += usize::from(*ma && *mb);
            }
        }
    }

    /// Pairs that met traffic in at least one plan.
    pub fn pairs_met(&self) -> usize {
        self.pairs.values().filter(|c| c.met > 0).count()
    }

    /// Kinds that met traffic in at least one plan.
    pub fn kinds_met(&self) -> usize {
        self.kinds.values().filter(|c| c.met > 0).count()
    }

    /// `kinds 8/10 met · pairs 21/45 met` against a space of `kinds` kinds.
    pub fn line(&self, kinds: usize) -> String {
        let pairs = kinds * kinds.saturating_sub(1) / 2;
        format!(
            "kinds {}/{kinds} met · pairs {}/{pairs} met",
            self.kinds_met(),
            self.pairs_met()
        )
    }
}

/// Whether fault `f` met the receiver's traffic in its plan's run.
pub fn met(f: &FaultSpec, e: &Evidence<'_>) -> bool {
    let process = || {
        e.notes.iter().find_map(|n| match n {
            Note::Process { actions, tally } => Some((actions, tally.as_ref())),
            _ => None,
        })
    };
    match f {
        FaultSpec::CutDatabase(_) => process().is_some_and(|(a, t)| nemesis::cut_met(a, t)),
        FaultSpec::Kill(k) if k.signal == KillSignal::Stop => process().is_some(),
        FaultSpec::Kill(_) => {
            process().is_some_and(|(a, t)| t.is_some_and(|t| nemesis::kills_met(a, t)))
        }
        FaultSpec::KillWorker(_) => process().is_some(),
        FaultSpec::Reconcile(_) => e.notes.iter().any(|n| matches!(n, Note::Reconciled(_))),
        FaultSpec::Reorder(r) if r.mode != ReorderMode::HoldBack => {
            e.attempts.iter().filter(|a| a.status.is_some()).count() >= 2
        }
        FaultSpec::Redeliver(_) => {
            tagged(f, e.attempts)
                || e.notes
                    .iter()
                    .any(|n| matches!(n, Note::Redeliveries { refused, .. } if *refused > 0))
        }
        _ => tagged(f, e.attempts),
    }
}

/// Whether an attempt carries one of `f`'s tags.
fn tagged(f: &FaultSpec, attempts: &[Attempt]) -> bool {
    let tags = crate::grading::excuse::tags_of(f);
    attempts
        .iter()
        .any(|a| a.faults.iter().any(|t| tags.contains(&t.pattern())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tag::FaultTag;

    fn attempt(tags: Vec<FaultTag>, status: Option<u16>) -> Attempt {
        Attempt {
            faults: tags,
            status,
            ..Attempt::new("s", "whd_1", "t1", "acct_a")
        }
    }

    fn spec(kind: &str) -> FaultSpec {
        super::super::space::probe_spec(kind)
    }

    #[test]
    fn a_fault_met_traffic_when_an_attempt_carries_its_tag() {
        let attempts = vec![
            attempt(vec![FaultTag::ConcurrentCopy { k: 1, n: 2 }], Some(204)),
            attempt(vec![FaultTag::DropAck], Some(204)),
        ];
        let e = Evidence {
            faults: &[],
            attempts: &attempts,
            notes: &[],
        };
        assert!(met(&spec("duplicate"), &e));
        assert!(met(&spec("drop-ack"), &e));
        assert!(!met(&spec("front"), &e));
        assert!(!met(&spec("tamper"), &e));
        assert!(
            met(&spec("reorder"), &e),
            "a shuffle of two answered deliveries"
        );
        assert!(!met(&spec("cut-database"), &e), "no nemesis note: no cut");
        assert!(!met(&spec("reconcile"), &e));
    }

    #[test]
    fn kinds_and_pairs_are_counted_per_plan_and_a_pair_met_only_when_both_did() {
        let mut c = FaultCoverage::default();
        let faults = [spec("front"), spec("duplicate"), spec("drop-ack")];
        let attempts = vec![
            attempt(vec![FaultTag::FrontStatus(503)], Some(503)),
            attempt(vec![FaultTag::DropAck], Some(204)),
        ];
        c.add(&Evidence {
            faults: &faults,
            attempts: &attempts,
            notes: &[],
        });
        c.add(&Evidence {
            faults: &faults[..1],
            attempts: &attempts,
            notes: &[],
        });
        assert_eq!(c.plans, 2);
        assert_eq!(c.kinds["front"], Count { plans: 2, met: 2 });
        assert_eq!(c.kinds["duplicate"], Count { plans: 1, met: 0 });
        // Pairs are keyed in the space's order, whatever the plan's.
        assert_eq!(
            c.pairs[&("duplicate", "drop-ack")],
            Count { plans: 1, met: 0 }
        );
        assert_eq!(c.pairs[&("drop-ack", "front")], Count { plans: 1, met: 1 });
        assert_eq!(c.line(10), "kinds 2/10 met · pairs 1/45 met");
    }
}
