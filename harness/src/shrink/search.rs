//! The search loop: try candidates from [`super::reduce`] against an
//! [`Oracle`] and keep each one that still fails the same invariant.
//!
//! A candidate is tried up to `tries` times and kept only when it fails at
//! least as often as the plan it reduces failed in its own tries
//! ([`Limits::baseline`]): a plan that failed every run stays one that
//! fails every run, and a race is never traded for a rarer one. A plan
//! that failed once in k is reduced by candidates that fail once in k. The loop is bounded by a run
//! count and a deadline; when either runs out it stops with the smallest
//! plan kept so far, which still failed. It is generic over the oracle so
//! its logic is tested against pure models (a plan fails when it holds a
//! given pair of deliveries, or fails with some probability); the real
//! oracle runs the plan against the target ([`super::TargetOracle`]).

use std::time::Instant;

use crate::check::{InvariantId, ScenarioCheck, Verdict};
use crate::plan::Plan;

use super::error::ShrinkError;
use super::reduce::{self, Candidate};

/// One run of a plan: the check, and where its history is.
#[derive(Debug, Clone)]
pub struct Trial {
    /// The checker's result.
    pub check: ScenarioCheck,
    /// The run's history file, if the oracle keeps one.
    pub history: Option<std::path::PathBuf>,
    /// The run's state file, if one was read.
    pub state: Option<std::path::PathBuf>,
}

impl Trial {
    /// The verdict of `id` in this run (`Unknown` when it was not checked).
    pub fn verdict(&self, id: InvariantId) -> Verdict {
        self.check
            .result(id)
            .map(|r| r.verdict)
            .unwrap_or(Verdict::Unknown)
    }
}

/// Runs a plan and checks it.
#[allow(async_fn_in_trait)]
pub trait Oracle {
    /// Runs `plan` once (the target reset first) and returns its check.
    async fn run(&mut self, plan: &Plan) -> Result<Trial, ShrinkError>;
    /// A trial that is no longer needed (its files may go).
    fn discard(&mut self, _trial: Trial) {}
}

/// What counts as "the same failure": this invariant with this verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target {
    /// The invariant.
    pub invariant: InvariantId,
    /// Its verdict in the original failing run (`Fail`, or `NonStrict`).
    pub verdict: Verdict,
}

impl Target {
    /// Whether `trial` shows the same failure.
    pub fn fails(&self, trial: &Trial) -> bool {
        trial.verdict(self.invariant) == self.verdict
    }
}

/// The search's limits.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Runs at most (every try of every candidate counts).
    pub max_runs: usize,
    /// Stop starting runs after this instant.
    pub deadline: Instant,
    /// Tries per candidate.
    pub tries: u32,
    /// How often the plan being reduced failed: `(failed, runs)`. A
    /// candidate is kept only when it fails at least as often over its
    /// tries (a plan that failed every run must fail every try).
    pub baseline: (u32, u32),
}

impl Limits {
    /// Failures a candidate needs in [`Limits::tries`] tries to be kept:
    /// the baseline's rate, rounded up, at least one.
    pub fn needed(&self) -> u32 {
        let tries = u64::from(self.tries.max(1));
        let (failed, runs) = (
            u64::from(self.baseline.0),
            u64::from(self.baseline.1.max(1)),
        );
        (failed * tries).div_ceil(runs).clamp(1, tries) as u32
    }
}

/// Progress of the search.
#[derive(Debug)]
pub enum SearchEvent<'a> {
    /// A candidate was tried.
    Tried {
        /// Runs so far.
        runs: usize,
        /// What it changed.
        step: &'a str,
        /// Its deliveries.
        deliveries: usize,
        /// How many tries it took, and whether one failed (it was kept).
        tries: u32,
        /// Kept.
        kept: bool,
    },
}

/// Why the search stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// No candidate of the smallest plan fails: it is minimal for these reductions.
    Minimal,
    /// The run count ran out.
    Runs,
    /// The time budget ran out.
    Time,
}

/// The result of a search.
#[derive(Debug)]
pub struct Search {
    /// The smallest failing plan.
    pub plan: Plan,
    /// Its last failing trial.
    pub trial: Trial,
    /// Runs made.
    pub runs: usize,
    /// The reductions kept, in order.
    pub steps: Vec<String>,
    /// The plan after each kept reduction, in order (the last is `plan`).
    pub chain: Vec<Plan>,
    /// Why it stopped.
    pub ended: Ended,
}

struct State<'o, O: Oracle> {
    oracle: &'o mut O,
    target: Target,
    limits: Limits,
    best: Plan,
    trial: Trial,
    runs: usize,
    steps: Vec<String>,
    chain: Vec<Plan>,
    out_of: Option<Ended>,
}

impl<O: Oracle> State<'_, O> {
    fn budget_left(&mut self) -> bool {
        if self.out_of.is_some() {
            return false;
        }
        if self.runs >= self.limits.max_runs {
            self.out_of = Some(Ended::Runs);
        } else if Instant::now() >= self.limits.deadline {
            self.out_of = Some(Ended::Time);
        }
        self.out_of.is_none()
    }

    /// Tries a candidate up to `tries` times; keeps it once it has failed
    /// as often as the baseline asks ([`Limits::needed`]), drops it as soon
    /// as it no longer can.
    async fn attempt(
        &mut self,
        c: Candidate,
        on_event: &mut (dyn FnMut(SearchEvent<'_>) + Send),
    ) -> Result<bool, ShrinkError> {
        let all = self.limits.tries.max(1);
        let needed = self.limits.needed();
        let (mut tries, mut failed) = (0, 0);
        let mut last_fail: Option<Trial> = None;
        while tries < all && failed + (all - tries) >= needed && self.budget_left() {
            tries += 1;
            self.runs += 1;
            let trial = self.oracle.run(&c.plan).await?;
            if !self.target.fails(&trial) {
                self.oracle.discard(trial);
                continue;
            }
            failed += 1;
            if let Some(old) = last_fail.replace(trial) {
                self.oracle.discard(old);
            }
            if failed >= needed {
                on_event(SearchEvent::Tried {
                    runs: self.runs,
                    step: &c.step,
                    deliveries: c.plan.deliveries.len(),
                    tries,
                    kept: true,
                });
                let trial = last_fail.take().expect("a failing try");
                let old = std::mem::replace(&mut self.trial, trial);
                self.oracle.discard(old);
                self.chain.push(c.plan.clone());
                self.best = c.plan;
                self.steps.push(c.step);
                return Ok(true);
            }
        }
        if let Some(t) = last_fail {
            self.oracle.discard(t);
        }
        if tries > 0 {
            on_event(SearchEvent::Tried {
                runs: self.runs,
                step: &c.step,
                deliveries: c.plan.deliveries.len(),
                tries,
                kept: false,
            });
        }
        Ok(false)
    }

    /// Tries candidates in order; keeps the first that fails.
    async fn first_of(
        &mut self,
        cands: Vec<Candidate>,
        on_event: &mut (dyn FnMut(SearchEvent<'_>) + Send),
    ) -> Result<bool, ShrinkError> {
        for c in cands {
            if self.attempt(c, on_event).await? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// ddmin over the deliveries: remove chunks, refining the granularity
    /// when no chunk can go.
    async fn deliveries(
        &mut self,
        on_event: &mut (dyn FnMut(SearchEvent<'_>) + Send),
    ) -> Result<bool, ShrinkError> {
        let mut progress = false;
        let mut n = 2;
        while self.budget_left() && self.best.deliveries.len() >= 2 {
            let len = self.best.deliveries.len();
            let cands = reduce::ddmin_candidates(&self.best, n.min(len));
            if self.first_of(cands, on_event).await? {
                progress = true;
                n = (n - 1).max(2);
            } else if n >= len {
                break;
            } else {
                n = (2 * n).min(len);
            }
        }
        Ok(progress)
    }

    /// Per-delivery simplifications, delivery by delivery.
    async fn simplify(
        &mut self,
        on_event: &mut (dyn FnMut(SearchEvent<'_>) + Send),
    ) -> Result<bool, ShrinkError> {
        let mut progress = false;
        let mut i = 0;
        while i < self.best.deliveries.len() && self.budget_left() {
            // Kept: this delivery may simplify further; otherwise the next.
            if self
                .first_of(reduce::simplifications(&self.best, i), on_event)
                .await?
            {
                progress = true;
            } else {
                i += 1;
            }
        }
        Ok(progress)
    }
}

/// Searches from `start`, whose failing trial is `trial`, for the smallest
/// plan that still fails `target`: rounds of every pass until a round
/// keeps nothing or the limits run out.
pub async fn minimize<O: Oracle>(
    oracle: &mut O,
    target: Target,
    limits: Limits,
    start: Plan,
    trial: Trial,
    on_event: &mut (dyn FnMut(SearchEvent<'_>) + Send),
) -> Result<Search, ShrinkError> {
    let mut s = State {
        oracle,
        target,
        limits,
        best: start,
        trial,
        runs: 0,
        steps: Vec::new(),
        chain: Vec::new(),
        out_of: None,
    };
    let mut ordered = false;
    loop {
        let mut progress = false;
        if let Some(c) = reduce::one_attempt_each(&s.best) {
            progress |= s.attempt(c, on_event).await?;
        }
        progress |= s.deliveries(on_event).await?;
        // Once, after the first deliveries pass: it is not smaller (see
        // its docs), so a round that undid it and tried it again would
        // never end. After that pass, it orders only the deliveries a
        // race kept from going, not the whole plan.
        if !ordered {
            ordered = true;
            if let Some(c) = reduce::one_delivery_per_wave(&s.best) {
                progress |= s.attempt(c, on_event).await?;
            }
        }
        while s
            .first_of(reduce::account_candidates(&s.best), on_event)
            .await?
        {
            progress = true;
        }
        while s
            .first_of(reduce::fault_candidates(&s.best), on_event)
            .await?
        {
            progress = true;
        }
        progress |= s.simplify(on_event).await?;
        if let Some(c) = reduce::in_index_order(&s.best) {
            progress |= s.attempt(c, on_event).await?;
        }
        if !progress || s.out_of.is_some() {
            break;
        }
    }
    Ok(Search {
        plan: s.best,
        trial: s.trial,
        runs: s.runs,
        steps: s.steps,
        chain: s.chain,
        ended: s.out_of.unwrap_or(Ended::Minimal),
    })
}

/// A plan confirmed: how often it failed, and its last failing trial.
#[derive(Debug)]
pub struct Confirmed {
    /// The plan.
    pub plan: Plan,
    /// Failures of `runs`.
    pub failed: u32,
    /// Runs made.
    pub runs: u32,
    /// Its last failing trial, if one failed.
    pub trial: Option<Trial>,
    /// Reductions undone because the plan they gave failed less often
    /// than the original.
    pub undone: usize,
}

/// Runs the last plan of `chain` `confirm` times; while it fails less
/// often than `baseline` (`(failed, runs)` of the original), steps back to
/// the plan before it, down to `original`, which is taken whatever it does. A
/// counterexample is then never less certain than the failure it came
/// from: a reduction the search kept by luck is undone here.
pub async fn confirm<O: Oracle>(
    oracle: &mut O,
    target: Target,
    original: &Plan,
    chain: &[Plan],
    baseline: (u32, u32),
    confirm: u32,
    on_run: &mut (dyn FnMut(usize, u32, bool) + Send),
) -> Result<Confirmed, ShrinkError> {
    let (bf, bn) = (u64::from(baseline.0), u64::from(baseline.1.max(1)));
    let plans = chain.iter().rev().chain(std::iter::once(original));
    for (undone, plan) in plans.enumerate() {
        let last = undone == chain.len();
        let (mut failed, mut trial) = (0u32, None);
        for c in 1..=confirm {
            let t = oracle.run(plan).await?;
            let fails = target.fails(&t);
            on_run(undone, c, fails);
            if fails {
                failed += 1;
                if let Some(old) = trial.replace(t) {
                    oracle.discard(old);
                }
            } else {
                oracle.discard(t);
            }
            // Stop as soon as the rate can no longer reach the baseline's.
            let best = u64::from(failed + (confirm - c));
            if !last && best * bn < bf * u64::from(confirm) {
                break;
            }
        }
        if last || u64::from(failed) * bn >= bf * u64::from(confirm.max(1)) || confirm == 0 {
            return Ok(Confirmed {
                plan: plan.clone(),
                failed,
                runs: confirm,
                trial,
                undone,
            });
        }
        if let Some(t) = trial {
            oracle.discard(t);
        }
    }
    unreachable!("the original is always taken last")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{Counts, InvariantResult};
    use crate::scenario::Scenario;
    use rand::{Rng, SeedableRng};

    fn check(fails: bool) -> ScenarioCheck {
        ScenarioCheck {
            scenario: "m".into(),
            results: vec![InvariantResult::new(
                InvariantId::I2,
                if fails { Verdict::Fail } else { Verdict::Pass },
                "",
            )],
            counts: Counts::default(),
            dead_letters: Vec::new(),
            observations: Vec::new(),
        }
    }

    fn trial(fails: bool) -> Trial {
        Trial {
            check: check(fails),
            history: None,
            state: None,
        }
    }

    /// A model receiver: a plan fails when it holds every listed delivery
    /// index with two copies or more, with probability `p` per run.
    struct Model {
        needs: Vec<usize>,
        p: f64,
        rng: rand_chacha::ChaCha8Rng,
        runs: usize,
    }

    /// A model whose failure is certain while the plan holds `sure` (a
    /// hold-back that fixes the order) and a coin flip without it.
    struct Certain {
        model: Model,
        sure: usize,
    }

    impl Oracle for Certain {
        async fn run(&mut self, plan: &Plan) -> Result<Trial, ShrinkError> {
            let m = &mut self.model;
            m.runs += 1;
            let holds = m.needs.iter().all(|n| {
                plan.deliveries
                    .iter()
                    .any(|d| d.index == *n && d.copies >= 2)
            });
            let p = if plan.deliveries.iter().any(|d| d.index == self.sure) {
                1.0
            } else {
                m.p
            };
            Ok(trial(holds && m.rng.gen_bool(p)))
        }
    }

    impl Oracle for Model {
        async fn run(&mut self, plan: &Plan) -> Result<Trial, ShrinkError> {
            self.runs += 1;
            let holds = self.needs.iter().all(|n| {
                plan.deliveries
                    .iter()
                    .any(|d| d.index == *n && d.copies >= 2)
            });
            Ok(trial(holds && self.rng.gen_bool(self.p)))
        }
    }

    fn start(jobs: usize) -> Plan {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.toml");
        std::fs::write(
            &path,
            format!(
                "name = \"m\"\ndescription = \"d\"\nexpect = \"e\"\nwhen_it_fails = \"w\"\ncheck = [\"I2\"]\naccounts = [\"acct_a\", \"acct_b\"]\n[workload]\njobs = {jobs}\n[[fault]]\nkind = \"duplicate\"\nmode = \"concurrent\"\ncopies = [3, 6]\n[[fault]]\nkind = \"drop-ack\"\nshare = 1.0\n"
            ),
        )
        .unwrap();
        let s = Scenario::from_file(&path).unwrap();
        let mut p = crate::workload::plan(&s, 3);
        p.faults.clear();
        p
    }

    fn limits(max_runs: usize, tries: u32) -> Limits {
        Limits {
            max_runs,
            deadline: Instant::now() + std::time::Duration::from_secs(60),
            tries,
            baseline: (1, tries),
        }
    }

    const I2_FAILS: Target = Target {
        invariant: InvariantId::I2,
        verdict: Verdict::Fail,
    };

    async fn search(model: &mut Model, plan: Plan, l: Limits) -> Search {
        minimize(model, I2_FAILS, l, plan, trial(true), &mut |_| {})
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn a_deterministic_failure_shrinks_to_exactly_the_deliveries_it_needs() {
        let plan = start(20);
        assert_eq!(plan.deliveries.len(), 40);
        let (a, b) = (plan.deliveries[7].index, plan.deliveries[31].index);
        let mut m = Model {
            needs: vec![a, b],
            p: 1.0,
            rng: rand_chacha::ChaCha8Rng::seed_from_u64(1),
            runs: 0,
        };
        let s = search(&mut m, plan, limits(1000, 1)).await;
        assert_eq!(s.ended, Ended::Minimal);
        let idx: Vec<usize> = s.plan.deliveries.iter().map(|d| d.index).collect();
        assert_eq!(idx, vec![a, b]);
        // Everything the model does not need is simplified away.
        for d in &s.plan.deliveries {
            assert_eq!(d.copies, 2, "the fewest copies that still fail");
            assert_eq!(d.drop_acks, 0);
            assert!(d.single_attempt);
        }
        assert_eq!(s.plan.accounts.len(), 1, "{:?}", s.plan.accounts);
        assert_eq!(s.runs, m.runs);
        assert!(s.runs < 150, "ddmin took {} runs", s.runs);
        assert!(!s.steps.is_empty());
    }

    #[tokio::test]
    async fn the_run_count_bounds_the_search_and_what_is_kept_still_failed() {
        let plan = start(20);
        let need = plan.deliveries[5].index;
        let mut m = Model {
            needs: vec![need],
            p: 1.0,
            rng: rand_chacha::ChaCha8Rng::seed_from_u64(1),
            runs: 0,
        };
        let s = search(&mut m, plan.clone(), limits(3, 1)).await;
        assert_eq!((s.ended, s.runs, m.runs), (Ended::Runs, 3, 3));
        assert!(s.plan.deliveries.iter().any(|d| d.index == need));
        assert!(s.plan.deliveries.len() < plan.deliveries.len());
    }

    #[tokio::test]
    async fn a_flaky_failure_is_still_shrunk_when_candidates_get_several_tries() {
        let plan = start(10);
        let need = plan.deliveries[3].index;
        let mut m = Model {
            needs: vec![need],
            p: 0.5,
            rng: rand_chacha::ChaCha8Rng::seed_from_u64(9),
            runs: 0,
        };
        // Each candidate gets 8 tries: a reduction that keeps the failing
        // delivery is missed with probability 1/256.
        let s = search(&mut m, plan, limits(2000, 8)).await;
        assert_eq!(s.plan.deliveries.len(), 1);
        assert_eq!(s.plan.deliveries[0].index, need);
    }

    #[tokio::test]
    async fn a_plan_nothing_can_be_taken_from_ends_minimal_without_changes() {
        let mut plan = start(1);
        plan.deliveries.truncate(1);
        plan.accounts.truncate(1);
        let d = &mut plan.deliveries[0];
        d.copies = 2;
        d.drop_acks = 0;
        d.single_attempt = true;
        let idx = d.index;
        let mut m = Model {
            needs: vec![idx],
            p: 1.0,
            rng: rand_chacha::ChaCha8Rng::seed_from_u64(1),
            runs: 0,
        };
        let s = search(&mut m, plan.clone(), limits(100, 3)).await;
        assert_eq!(s.ended, Ended::Minimal);
        assert_eq!(s.plan, plan);
        assert!(s.steps.is_empty());
        // The one candidate (one copy) was tried 3 times and never failed.
        assert_eq!(s.runs, 3);
    }

    #[tokio::test]
    async fn a_failure_that_fails_every_run_shrinks_only_to_plans_that_fail_every_run() {
        for seed in 1..=10 {
            let plan = start(10);
            let need = plan.deliveries[3].index;
            let sure = plan.deliveries[7].index;
            let mut m = Certain {
                model: Model {
                    needs: vec![need],
                    p: 0.6,
                    rng: rand_chacha::ChaCha8Rng::seed_from_u64(seed),
                    runs: 0,
                },
                sure,
            };
            let l = Limits {
                baseline: (3, 3),
                ..limits(2000, 3)
            };
            let s = minimize(&mut m, I2_FAILS, l, plan.clone(), trial(true), &mut |_| {})
                .await
                .unwrap();
            let c = confirm(
                &mut m,
                I2_FAILS,
                &plan,
                &s.chain,
                (3, 3),
                10,
                &mut |_, _, _| {},
            )
            .await
            .unwrap();
            assert!(c.plan.deliveries.len() <= plan.deliveries.len());
            let kept: Vec<usize> = c.plan.deliveries.iter().map(|d| d.index).collect();
            assert!(
                kept.contains(&sure) && kept.contains(&need),
                "seed {seed}: the delivery that made the failure certain was cut: {kept:?}"
            );
            // The minimal plan fails every run, as the original did.
            for _ in 0..10 {
                assert!(m.run(&c.plan).await.unwrap().verdict(InvariantId::I2) == Verdict::Fail);
            }
        }
    }

    #[test]
    fn a_candidate_needs_the_baselines_rate_rounded_up() {
        let l = |baseline, tries| Limits {
            baseline,
            ..limits(1, tries)
        };
        assert_eq!(l((3, 3), 3).needed(), 3);
        assert_eq!(l((1, 3), 3).needed(), 1);
        assert_eq!(l((2, 3), 3).needed(), 2);
        assert_eq!(l((1, 2), 3).needed(), 2);
        assert_eq!(l((0, 3), 3).needed(), 1);
        assert_eq!(l((5, 5), 1).needed(), 1);
    }
}
