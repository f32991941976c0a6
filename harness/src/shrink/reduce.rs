//! Candidate generation: smaller or simpler variants of a [`Plan`], as pure
//! functions.
//!
//! The search ([`super::search`]) asks for candidates in a fixed order of
//! passes: fewer deliveries (delta debugging over the delivery list, see
//! [`ddmin_candidates`]), then fewer accounts and faults, then
//! per-delivery simplifications ([`simplifications`]: fewer copies, fewer
//! redeliveries, no dropped acks, no hold-back, one attempt instead of the
//! full retry schedule, current signing, first wave), then a simpler order
//! ([`in_index_order`]). Every candidate is strictly smaller than its
//! input by [`size`], so a search that keeps only candidates ends; the one
//! exception, [`one_delivery_per_wave`], is tried once.
//! Nothing here runs anything: these functions are tested on plans alone.

use crate::history::Intent;
use crate::plan::Plan;

/// A candidate: what was changed, and the plan it gives.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// What the reduction did, for progress lines and the report.
    pub step: String,
    /// The reduced plan.
    pub plan: Plan,
}

/// How big a plan is, compared lexicographically: deliveries, accounts,
/// faults, then the sum of per-delivery directives, then disorder. Every
/// candidate this module makes is smaller than its input.
pub fn size(plan: &Plan) -> (usize, usize, usize, u64, usize) {
    let directives: u64 = plan
        .deliveries
        .iter()
        .map(|d| {
            u64::from(d.copies - 1)
                + d.redeliveries.len() as u64
                + u64::from(d.drop_acks)
                + u64::from(d.hold_attempts)
                + u64::from(!d.single_attempt)
                + u64::from(d.signing != crate::fault_spec::Signing::Current)
                + u64::from(d.wave)
        })
        .sum();
    let disorder = plan
        .deliveries
        .windows(2)
        .filter(|w| w[0].index > w[1].index)
        .count();
    (
        plan.deliveries.len(),
        plan.accounts.len(),
        plan.faults.len(),
        directives,
        disorder,
    )
}

/// `plan` keeping only the deliveries whose position `keep` accepts, with
/// its waves renumbered so none is empty.
pub fn keep_deliveries(plan: &Plan, keep: impl Fn(usize) -> bool) -> Plan {
    let mut p = plan.clone();
    p.deliveries = plan
        .deliveries
        .iter()
        .enumerate()
        .filter(|(i, _)| keep(*i))
        .map(|(_, d)| d.clone())
        .collect();
    compact_waves(&mut p);
    p
}

/// Renumbers waves 0, 1, 2, … in order, dropping empty ones.
pub fn compact_waves(plan: &mut Plan) {
    let mut waves: Vec<u32> = plan.deliveries.iter().map(|d| d.wave).collect();
    waves.sort_unstable();
    waves.dedup();
    for d in plan.deliveries.iter_mut() {
        d.wave = waves.binary_search(&d.wave).expect("wave is listed") as u32;
    }
}

/// Delta debugging over the deliveries at granularity `n`: the plan split
/// into `n` chunks, each candidate removes one chunk (ddmin's
/// complements). Empty when `n` exceeds the deliveries, or the plan has
/// one delivery or none.
pub fn ddmin_candidates(plan: &Plan, n: usize) -> Vec<Candidate> {
    let len = plan.deliveries.len();
    if len < 2 || n < 2 || n > len {
        return Vec::new();
    }
    let mut out = Vec::new();
    for c in 0..n {
        let (from, to) = (c * len / n, (c + 1) * len / n);
        if from == to {
            continue;
        }
        let step = if to - from == 1 {
            format!("remove delivery {}", from + 1)
        } else {
            format!("remove deliveries {}-{}", from + 1, to)
        };
        out.push(Candidate {
            step,
            plan: keep_deliveries(plan, |i| i < from || i >= to),
        });
    }
    out
}

/// Fewer accounts: accounts no delivery uses are dropped, and every
/// delivery moved to the first account (unless some delivery is a
/// cross-account forgery, which needs two).
pub fn account_candidates(plan: &Plan) -> Vec<Candidate> {
    let mut out = Vec::new();
    let used: Vec<String> = plan
        .accounts
        .iter()
        .filter(|a| plan.deliveries.iter().any(|d| &d.account == *a))
        .cloned()
        .collect();
    if !used.is_empty() && used.len() < plan.accounts.len() {
        let mut p = plan.clone();
        let gone: Vec<String> = plan
            .accounts
            .iter()
            .filter(|a| !used.contains(a))
            .cloned()
            .collect();
        p.accounts = used.clone();
        out.push(Candidate {
            step: format!("drop unused account(s) {}", gone.join(", ")),
            plan: p,
        });
    }
    let cross = plan
        .deliveries
        .iter()
        .any(|d| d.intent == Intent::CrossAccount);
    if used.len() > 1 && !cross {
        let first = used[0].clone();
        let mut p = plan.clone();
        p.accounts = vec![first.clone()];
        for d in p.deliveries.iter_mut() {
            d.account = first.clone();
        }
        out.push(Candidate {
            step: format!("send every delivery to account {first}"),
            plan: p,
        });
    }
    out
}

/// A shorter schedule for the whole plan at once: every delivery gets one
/// attempt instead of its retry schedule. Tried before anything else,
/// since when it still fails every later run is quicker (a receiver that
/// answers 409 or redirects is retried for the whole schedule otherwise).
pub fn one_attempt_each(plan: &Plan) -> Option<Candidate> {
    let n = plan.deliveries.iter().filter(|d| !d.single_attempt).count();
    if n < 2 {
        return None;
    }
    let mut p = plan.clone();
    for d in p.deliveries.iter_mut() {
        d.single_attempt = true;
    }
    Some(Candidate {
        step: format!("{n} deliveries: one attempt each instead of the retry schedule"),
        plan: p,
    })
}

/// The deliveries sent one at a time, each after the one before it is
/// answered: one wave each, in the plan's dispatch order. The one
/// candidate that is not smaller by [`size`] (its waves add directives),
/// so the search tries it once, after its first pass over the deliveries: a failure that needs
/// two deliveries in one order and not at once (a stale sequence applied
/// last) then fails on every run instead of on the runs where the race
/// went its way, and every later reduction is judged on a certain plan.
/// A failure that needs deliveries at once fails less often here and the
/// candidate is dropped. `None` when no wave holds two deliveries, and
/// when a delivery still has its retry schedule: a wave waits until each
/// of its deliveries is answered or dead, so one at a time would wait out
/// every schedule in turn.
pub fn one_delivery_per_wave(plan: &Plan) -> Option<Candidate> {
    if plan.deliveries.iter().any(|d| !d.single_attempt) {
        return None;
    }
    let mut waves: Vec<u32> = plan.deliveries.iter().map(|d| d.wave).collect();
    waves.sort_unstable();
    if waves.windows(2).all(|w| w[0] != w[1]) {
        return None;
    }
    let mut p = plan.clone();
    p.deliveries.sort_by_key(|d| d.wave);
    for (i, d) in p.deliveries.iter_mut().enumerate() {
        d.wave = i as u32;
    }
    Some(Candidate {
        step: format!(
            "{} deliveries: one at a time, each after the one before is answered",
            p.deliveries.len()
        ),
        plan: p,
    })
}

/// Fewer faults: each run-time fault removed in turn.
pub fn fault_candidates(plan: &Plan) -> Vec<Candidate> {
    (0..plan.faults.len())
        .map(|i| {
            let mut p = plan.clone();
            let f = p.faults.remove(i);
            Candidate {
                step: format!("remove fault {}", f.name()),
                plan: p,
            }
        })
        .collect()
}

/// Simpler versions of delivery `i`, most reduced first within each
/// directive: fewer copies, fewer redeliveries, no dropped acks, no
/// hold-back, a single attempt, current signing, the first wave.
pub fn simplifications(plan: &Plan, i: usize) -> Vec<Candidate> {
    let Some(d) = plan.deliveries.get(i) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let n = i + 1;
    let mut with = |step: String, f: &dyn Fn(&mut crate::plan::PlannedDelivery)| {
        let mut p = plan.clone();
        f(&mut p.deliveries[i]);
        compact_waves(&mut p);
        out.push(Candidate { step, plan: p });
    };
    if d.copies > 1 {
        with(
            format!("delivery {n}: one copy instead of {}", d.copies),
            &|d| d.copies = 1,
        );
        if d.copies > 2 {
            with(
                format!("delivery {n}: two copies instead of {}", d.copies),
                &|d| d.copies = 2,
            );
        }
    }
    if !d.redeliveries.is_empty() {
        if d.redeliveries.len() > 1 {
            with(format!("delivery {n}: no redeliveries"), &|d| {
                d.redeliveries.clear()
            });
        }
        for (r, what) in d.redeliveries.iter().enumerate() {
            let what = crate::scenario::explicit::redelivery_text(what);
            with(
                format!("delivery {n}: without redelivery {what}"),
                &move |d| {
                    d.redeliveries.remove(r);
                },
            );
        }
    }
    if d.drop_acks > 0 {
        with(format!("delivery {n}: no dropped acks"), &|d| {
            d.drop_acks = 0
        });
        if d.drop_acks > 1 {
            with(format!("delivery {n}: one dropped ack"), &|d| {
                d.drop_acks = 1
            });
        }
    }
    if d.hold_attempts > 0 {
        with(format!("delivery {n}: no held-back attempts"), &|d| {
            d.hold_attempts = 0
        });
        if d.hold_attempts > 1 {
            with(format!("delivery {n}: one held-back attempt"), &|d| {
                d.hold_attempts = 1
            });
        }
    }
    if !d.single_attempt {
        with(
            format!("delivery {n}: one attempt instead of the retry schedule"),
            &|d| d.single_attempt = true,
        );
    }
    if d.signing != crate::fault_spec::Signing::Current {
        with(
            format!("delivery {n}: signed with the current secrets"),
            &|d| d.signing = crate::fault_spec::Signing::Current,
        );
    }
    if d.wave > 0 {
        with(format!("delivery {n}: in the first wave"), &|d| d.wave = 0);
    }
    out
}

/// The deliveries in index order (the order the workload made them), if
/// that differs from the plan's.
pub fn in_index_order(plan: &Plan) -> Option<Candidate> {
    let sorted = plan.deliveries.windows(2).all(|w| w[0].index < w[1].index);
    if sorted {
        return None;
    }
    let mut p = plan.clone();
    p.deliveries.sort_by_key(|d| d.index);
    Some(Candidate {
        step: "send in the order the workload made them".into(),
        plan: p,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Redelivery;
    use crate::scenario::Scenario;

    fn plan(faults: &str, workload: &str, accounts: &str) -> Plan {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.toml");
        std::fs::write(
            &path,
            format!(
                "name = \"r\"\ndescription = \"d\"\nexpect = \"e\"\nwhen_it_fails = \"w\"\ncheck = [\"I2\"]\naccounts = {accounts}\n{workload}\n{faults}"
            ),
        )
        .unwrap();
        let s = Scenario::from_file(&path).unwrap();
        crate::workload::plan(&s, 11)
    }

    #[test]
    fn ddmin_splits_into_n_chunks_that_cover_every_delivery_once() {
        let p = plan("", "[workload]\njobs = 10\n", "[\"acct_a\"]");
        for n in 2..=10 {
            let c = ddmin_candidates(&p, n);
            assert_eq!(c.len(), n);
            let removed: usize = c.iter().map(|c| 10 - c.plan.deliveries.len()).sum();
            assert_eq!(removed, 10, "granularity {n}");
            assert!(c.iter().all(|c| size(&c.plan) < size(&p)));
        }
        assert!(ddmin_candidates(&p, 11).is_empty());
        assert_eq!(ddmin_candidates(&p, 10)[3].step, "remove delivery 4");
        assert_eq!(ddmin_candidates(&p, 2)[1].step, "remove deliveries 6-10");
    }

    #[test]
    fn removing_deliveries_renumbers_the_waves_that_are_left() {
        let p = plan(
            "[[fault]]\nkind = \"reorder\"\nmode = \"reverse\"\n",
            "[workload]\njobs = 1\ntasks_per_job = 4\n",
            "[\"acct_a\"]",
        );
        assert_eq!(p.waves(), 4);
        let first_wave = |i: usize| p.deliveries[i].wave == 0;
        let q = keep_deliveries(&p, |i| !first_wave(i));
        assert_eq!(q.deliveries.len(), 3);
        assert_eq!(q.waves(), 3);
        let mut waves: Vec<u32> = q.deliveries.iter().map(|d| d.wave).collect();
        waves.sort();
        assert_eq!(waves, vec![0, 1, 2]);
    }

    #[test]
    fn accounts_are_dropped_when_unused_or_merged_into_one() {
        let p = plan("", "[workload]\njobs = 2\n", "[\"acct_a\", \"acct_b\"]");
        let only_a = keep_deliveries(&p, |i| p.deliveries[i].account == "acct_a");
        let c = account_candidates(&only_a);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].plan.accounts, vec!["acct_a"]);
        assert!(c[0].step.contains("acct_b"));
        let c = account_candidates(&p);
        assert_eq!(c.len(), 1, "both used: only the merge");
        assert!(c[0].plan.deliveries.iter().all(|d| d.account == "acct_a"));
        assert!(size(&c[0].plan) < size(&p));
    }

    #[test]
    fn a_cross_account_forgery_keeps_its_two_accounts() {
        let p = plan(
            "[[fault]]\nkind = \"tamper\"\nforgeries = [\"cross-account\"]\n",
            "[workload]\njobs = 1\n",
            "[\"acct_a\", \"acct_b\"]",
        );
        assert!(account_candidates(&p).is_empty());
    }

    #[test]
    fn each_directive_of_a_delivery_is_simplified_and_every_step_is_smaller() {
        let mut p = plan("", "[workload]\njobs = 1\n", "[\"acct_a\"]");
        {
            let d = &mut p.deliveries[0];
            d.copies = 5;
            d.redeliveries = vec![Redelivery::Replay, Redelivery::Redeliver];
            d.drop_acks = 2;
            d.hold_attempts = 3;
            d.signing = crate::fault_spec::Signing::NewOnly;
        }
        let c = simplifications(&p, 0);
        let steps: Vec<&str> = c.iter().map(|c| c.step.as_str()).collect();
        assert_eq!(
            steps,
            vec![
                "delivery 1: one copy instead of 5",
                "delivery 1: two copies instead of 5",
                "delivery 1: no redeliveries",
                "delivery 1: without redelivery replay",
                "delivery 1: without redelivery redeliver",
                "delivery 1: no dropped acks",
                "delivery 1: one dropped ack",
                "delivery 1: no held-back attempts",
                "delivery 1: one held-back attempt",
                "delivery 1: one attempt instead of the retry schedule",
                "delivery 1: signed with the current secrets",
            ]
        );
        assert!(c.iter().all(|c| size(&c.plan) < size(&p)));
        assert_eq!(
            c[4].plan.deliveries[0].redeliveries,
            vec![Redelivery::Replay]
        );
        assert!(simplifications(&p, 1).is_empty());
    }

    #[test]
    fn a_shuffled_plan_can_be_put_back_in_index_order() {
        let p = plan(
            "[[fault]]\nkind = \"reorder\"\nmode = \"shuffle\"\n",
            "[workload]\njobs = 8\n",
            "[\"acct_a\"]",
        );
        let c = in_index_order(&p).expect("shuffled");
        assert!(size(&c.plan) < size(&p));
        assert!(in_index_order(&c.plan).is_none());
        assert_eq!(fault_candidates(&p).len(), p.faults.len());
    }

    #[test]
    fn every_delivery_can_get_one_attempt_at_once() {
        let p = plan("", "[workload]\njobs = 3\n", "[\"acct_a\"]");
        let c = one_attempt_each(&p).expect("genuine deliveries retry");
        assert_eq!(
            c.step,
            "3 deliveries: one attempt each instead of the retry schedule"
        );
        assert!(c.plan.deliveries.iter().all(|d| d.single_attempt));
        assert!(size(&c.plan) < size(&p));
        assert!(one_attempt_each(&c.plan).is_none());
    }

    #[test]
    fn deliveries_of_one_wave_can_be_sent_one_at_a_time_in_their_order() {
        let p = plan(
            "[[fault]]\nkind = \"reorder\"\nmode = \"shuffle\"\n",
            "[workload]\njobs = 4\n",
            "[\"acct_a\"]",
        );
        assert!(one_delivery_per_wave(&p).is_none(), "a retry schedule each");
        let p = one_attempt_each(&p).expect("genuine deliveries retry").plan;
        let c = one_delivery_per_wave(&p).expect("one wave holds them all");
        let order = |p: &Plan| p.deliveries.iter().map(|d| d.index).collect::<Vec<_>>();
        assert_eq!(order(&c.plan), order(&p), "the dispatch order is kept");
        let waves: Vec<u32> = c.plan.deliveries.iter().map(|d| d.wave).collect();
        assert_eq!(waves, (0..p.deliveries.len() as u32).collect::<Vec<_>>());
        assert!(one_delivery_per_wave(&c.plan).is_none());
        let mut one = c.plan.clone();
        one.deliveries.truncate(1);
        assert!(one_delivery_per_wave(&one).is_none());
    }
}
