//! Minimal counterexamples: `hookstorm shrink` (and `run --shrink`).
//!
//! A failing scenario run is dozens of deliveries, retries and faults; the
//! engineer wants the smallest input that still fails, as property-based
//! testing gives for code. A [`Plan`] is data, so it can be cut down: this
//! module re-runs reduced plans against the same target (reset between
//! runs, as every scenario is) and keeps a reduction when the *same*
//! invariant still fails with the same verdict.
//!
//! - [`reduce`]: candidate plans (delta debugging over the deliveries, then
//!   accounts, faults, per-delivery simplifications, order), pure.
//! - [`search`]: the loop, bounded by a run count and a time budget, each
//!   candidate tried up to k times and kept if one try fails.
//! - [`output`]: the minimal plan as an explicit scenario file
//!   ([`crate::scenario::explicit`]), its failing run's history and state, and
//!   `shrink.json`, plus the two pieces made for a person:
//! - [`account`]: a short, deterministic story of the minimal failing run
//!   in the profile's words (which deliveries, which copies, what each was
//!   answered, which faults fell in between, what the state shows and what
//!   was expected).
//! - [`replay`]: a bash script that sends the same requests with curl,
//!   signed at run time from secrets in the environment, so the failure can
//!   be reproduced without hookstorm's runner.
//!
//! The real oracle ([`TargetOracle`]) runs each candidate as an explicit
//! scenario through [`crate::run::run_until`], so a candidate is checked
//! exactly as `hookstorm run --scenario <file>` would check the written
//! file. Flaky failures are reported honestly: after the search the
//! minimal plan is run `confirm` more times and the result says how often
//! it failed ("fails 7 of 10 runs").

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::check::{InvariantId, ScenarioCheck, Verdict};
use crate::plan::Plan;
use crate::run::interrupt::Stop;
use crate::run::RunOptions;
use crate::scenario::explicit::{self, Explicit};
use crate::scenario::{Scenario, Workload};
use crate::target::Target;

pub mod account;
mod error;
pub mod output;
pub mod reduce;
pub mod replay;
pub mod search;

pub use error::ShrinkError;
pub use search::{Ended, Limits, Oracle, SearchEvent, Trial};

/// Default for `--max-runs`: runs the search may make.
pub const DEFAULT_MAX_RUNS: usize = 200;
/// Default for `--budget`: how long the search may take.
pub const DEFAULT_BUDGET: Duration = Duration::from_secs(300);
/// Default for `--tries`: tries per candidate.
pub const DEFAULT_TRIES: u32 = 3;
/// Default for `--confirm`: runs of the minimal plan that measure its failure rate.
pub const DEFAULT_CONFIRM: u32 = 10;
/// `run --shrink`: runs per failing scenario.
pub const RUN_SHRINK_MAX_RUNS: usize = 100;
/// `run --shrink`: time per failing scenario.
pub const RUN_SHRINK_BUDGET: Duration = Duration::from_secs(120);

/// How to shrink.
#[derive(Debug, Clone)]
pub struct ShrinkOptions {
    /// The invariant to keep failing; `None`: the first that failed.
    pub invariant: Option<InvariantId>,
    /// Runs at most, the original's tries included.
    pub max_runs: usize,
    /// Time at most for the original's tries and the search.
    pub budget: Duration,
    /// Tries per candidate (and of the original): kept if one fails.
    pub tries: u32,
    /// Runs of the minimal plan after the search, for its failure rate.
    pub confirm: u32,
    /// Where the outputs go.
    pub out_dir: PathBuf,
}

impl ShrinkOptions {
    /// The defaults, writing into `out_dir`.
    pub fn new(out_dir: impl Into<PathBuf>) -> Self {
        ShrinkOptions {
            invariant: None,
            max_runs: DEFAULT_MAX_RUNS,
            budget: DEFAULT_BUDGET,
            tries: DEFAULT_TRIES,
            confirm: DEFAULT_CONFIRM,
            out_dir: out_dir.into(),
        }
    }
}

/// How often a plan failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct FailureRate {
    /// Runs that failed the invariant.
    pub failed: u32,
    /// Runs made.
    pub runs: u32,
}

impl FailureRate {
    /// Whether this rate is below `other`'s (a smaller share of runs failed).
    pub fn below(&self, other: &FailureRate) -> bool {
        u64::from(self.failed) * u64::from(other.runs.max(1))
            < u64::from(other.failed) * u64::from(self.runs.max(1))
    }
}

impl std::fmt::Display for FailureRate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "fails {} of {} runs", self.failed, self.runs)
    }
}

/// Progress, for the console.
#[derive(Debug)]
pub enum ShrinkEvent<'a> {
    /// One run of the original plan.
    Original {
        /// 1-based try.
        run: u32,
        /// Tries at most.
        of: u32,
        /// Its deliveries.
        deliveries: usize,
        /// The failure it showed, if it showed one.
        failed: Option<search::Target>,
    },
    /// A candidate was tried.
    Search(SearchEvent<'a>),
    /// One run of the minimal plan, measuring its failure rate.
    Confirm {
        /// 1-based.
        run: u32,
        /// Runs in all.
        of: u32,
        /// Whether it failed the invariant.
        failed: bool,
    },
}

/// A minimal counterexample: everything the outputs are made from. The
/// human account of the minimal run and the script that sends the same
/// signed requests take this report (its plan, check, history file and
/// rate) too; [`output::write`] is where they are written beside the rest.
#[derive(Debug)]
pub struct Report {
    /// The original scenario.
    pub scenario: Scenario,
    /// The run seed the original failed with (`--seed`).
    pub seed: u64,
    /// The failure kept: invariant and verdict.
    pub failure: search::Target,
    /// Every invariant that failed in the original's failing run.
    pub original_failures: Vec<(InvariantId, Verdict)>,
    /// The original plan.
    pub original: Plan,
    /// The minimal plan.
    pub minimal: Plan,
    /// The check of the minimal plan's last failing run.
    pub check: ScenarioCheck,
    /// How often the minimal plan failed in the confirmation runs.
    pub rate: FailureRate,
    /// How often the original plan failed in its tries: every reduction
    /// kept failed at least as often.
    pub original_rate: FailureRate,
    /// Runs the original's tries and the search made.
    pub runs: usize,
    /// The reductions kept, in order.
    pub steps: Vec<String>,
    /// Why the search stopped.
    pub ended: Ended,
    /// Wall time of the whole shrink.
    pub elapsed: Duration,
    /// The target, as reports show it (no secrets).
    pub target: String,
    /// The receiver URL with `{account}` (credentials redacted).
    pub url: String,
    /// The sender profile's name (its scheme signs the requests).
    pub profile: String,
    /// Where the outputs are.
    pub files: output::Files,
}

/// What shrinking found.
#[derive(Debug)]
pub enum Outcome {
    /// A minimal plan that still fails.
    Counterexample(Box<Report>),
    /// The original plan did not fail (the invariant asked for) in any try.
    NotReproduced {
        /// Runs made.
        runs: u32,
        /// The verdicts of the last run, non-passing only.
        verdicts: Vec<(InvariantId, Verdict)>,
    },
}

/// Runs plans against a target as explicit scenarios, through
/// [`crate::run::run_until`], each in its own report folder `<dir>/<n>`
/// (run ids are to the second, so two runs may share one).
pub struct TargetOracle<'a> {
    target: &'a Target,
    scenario: &'a Scenario,
    opts: RunOptions,
    dir: PathBuf,
    runs: usize,
    stop: &'a Stop,
}

impl<'a> TargetOracle<'a> {
    /// An oracle for `scenario` on `target`, with the run's options, its
    /// report folders under `dir`.
    pub fn new(
        target: &'a Target,
        scenario: &'a Scenario,
        run: &RunOptions,
        dir: &Path,
        stop: &'a Stop,
    ) -> Self {
        let opts = RunOptions {
            out_dir: dir.to_path_buf(),
            preflight: false,
            max_fail: None,
            timeout: None,
            require_all: false,
            ..run.clone()
        };
        TargetOracle {
            target,
            scenario,
            opts,
            dir: dir.to_path_buf(),
            runs: 0,
            stop,
        }
    }
}

/// `scenario` with `plan` as its explicit deliveries.
pub fn explicit_scenario(scenario: &Scenario, plan: &Plan) -> Scenario {
    Scenario {
        accounts: plan.accounts.clone(),
        faults: plan.faults.clone(),
        workload: Workload {
            jobs: 0,
            ..Workload::default()
        },
        explicit: Some(Explicit {
            seed: plan.seed,
            deliveries: plan.deliveries.clone(),
        }),
        path: PathBuf::new(),
        ..scenario.clone()
    }
}

impl Oracle for TargetOracle<'_> {
    async fn run(&mut self, plan: &Plan) -> Result<Trial, ShrinkError> {
        let s = explicit_scenario(self.scenario, plan);
        self.runs += 1;
        self.opts.out_dir = self.dir.join(self.runs.to_string());
        let outcome =
            crate::run::run_until(self.target, &[s], &self.opts, &mut |_| {}, self.stop).await;
        if self.stop.requested() {
            return Err(ShrinkError::Interrupted);
        }
        let outcome = outcome?;
        let dir = outcome.dir;
        let Some(r) = outcome.report.scenarios.into_iter().next() else {
            return Err(ShrinkError::Interrupted);
        };
        Ok(Trial {
            history: (!r.history.is_empty()).then(|| dir.join(&r.history)),
            state: r.state.as_ref().map(|s| dir.join(s)),
            check: r.check,
        })
    }

    fn discard(&mut self, trial: Trial) {
        // <dir>/<n>/<run-id>/<scenario>/history.jsonl: the trial's folder goes.
        if let Some(own) = trial.history.as_deref().and_then(|h| h.ancestors().nth(3)) {
            if own.parent() == Some(self.dir.as_path()) {
                let _ = std::fs::remove_dir_all(own);
            }
        }
    }
}

/// The failure a trial shows: `wanted` if it fails (or deviates) there,
/// else the first invariant that fails, else the first non-strict one.
pub fn failure_of(trial: &Trial, wanted: Option<InvariantId>) -> Option<search::Target> {
    let bad = |v: Verdict| matches!(v, Verdict::Fail | Verdict::NonStrict);
    if let Some(id) = wanted {
        let v = trial.verdict(id);
        return bad(v).then_some(search::Target {
            invariant: id,
            verdict: v,
        });
    }
    [Verdict::Fail, Verdict::NonStrict]
        .into_iter()
        .find_map(|want| {
            trial
                .check
                .results
                .iter()
                .find(|r| r.verdict == want)
                .map(|r| search::Target {
                    invariant: r.id,
                    verdict: r.verdict,
                })
        })
}

/// The plan the original run sends: `scenario` for run seed `seed`, its
/// plan-time faults already in the deliveries (so only run-time faults are
/// listed) and its stream notes dropped, as an explicit file carries it.
pub fn original_plan(scenario: &Scenario, seed: u64) -> Plan {
    let mut plan = crate::workload::plan(scenario, crate::run::scenario_seed(seed, &scenario.name));
    plan.faults.retain(explicit::is_run_time);
    plan.notes.clear();
    plan
}

/// The names of `plan`'s faults that act while it is sent (the others are
/// already in its deliveries).
pub(crate) fn run_time_faults(plan: &Plan) -> Vec<&'static str> {
    plan.faults
        .iter()
        .filter(|f| explicit::is_run_time(f))
        .map(|f| f.name())
        .collect()
}

/// What trying the original plan showed.
struct Originals {
    /// The first failure, with its trial.
    first: Option<(search::Target, Trial)>,
    /// The last trial that did not fail: its verdicts say what the
    /// original showed when it never failed.
    last: Option<Trial>,
    /// Trials made.
    made: u32,
    /// How often the original failed.
    rate: FailureRate,
}

/// Runs the original plan `tries` times: each later failure must be the
/// first one's (of `invariant`, when given) to count.
async fn try_original(
    oracle: &mut TargetOracle<'_>,
    original: &Plan,
    tries: u32,
    invariant: Option<InvariantId>,
    on_event: &mut (dyn FnMut(ShrinkEvent<'_>) + Send),
) -> Result<Originals, ShrinkError> {
    let mut first: Option<(search::Target, Trial)> = None;
    let mut last = None;
    let mut made = 0;
    let mut rate = FailureRate { failed: 0, runs: 0 };
    for t in 1..=tries {
        made = t;
        let trial = oracle.run(original).await?;
        rate.runs += 1;
        let failed = match &first {
            Some((f, _)) => f.fails(&trial).then_some(*f),
            None => failure_of(&trial, invariant),
        };
        on_event(ShrinkEvent::Original {
            run: t,
            of: tries,
            deliveries: original.deliveries.len(),
            failed,
        });
        if let Some(f) = failed {
            rate.failed += 1;
            if first.is_none() {
                first = Some((f, trial));
                continue;
            }
        }
        if let Some(old) = last.replace(trial) {
            oracle.discard(old);
        }
    }
    Ok(Originals {
        first,
        last,
        made,
        rate,
    })
}

/// Shrinks `scenario`'s failure at run seed `run.seed` on `target`.
pub async fn shrink(
    target: &Target,
    scenario: &Scenario,
    run: &RunOptions,
    opts: &ShrinkOptions,
    on_event: &mut (dyn FnMut(ShrinkEvent<'_>) + Send),
    stop: &Stop,
) -> Result<Outcome, ShrinkError> {
    let started = Instant::now();
    let deadline = started + opts.budget;
    let runs_dir = opts.out_dir.join("runs");
    std::fs::create_dir_all(&runs_dir).map_err(|e| ShrinkError::Io {
        path: runs_dir.clone(),
        source: e,
    })?;
    let mut oracle = TargetOracle::new(target, scenario, run, &runs_dir, stop);
    let original = original_plan(scenario, run.seed);

    // The original, `tries` times: it must fail before anything is cut, and
    // how often it fails is the rate every reduction must keep.
    let tries = opts.tries.max(1);
    let Originals {
        first,
        last,
        made,
        rate: original_rate,
    } = try_original(&mut oracle, &original, tries, opts.invariant, on_event).await?;
    let Some((failure, trial)) = first else {
        let verdicts = last
            .as_ref()
            .map(|t| {
                t.check
                    .results
                    .iter()
                    .filter(|r| r.verdict != Verdict::Pass)
                    .map(|r| (r.id, r.verdict))
                    .collect()
            })
            .unwrap_or_default();
        let _ = std::fs::remove_dir_all(&runs_dir);
        return Ok(Outcome::NotReproduced {
            runs: made,
            verdicts,
        });
    };
    if let Some(old) = last {
        oracle.discard(old);
    }
    let original_failures = trial
        .check
        .results
        .iter()
        .filter(|r| matches!(r.verdict, Verdict::Fail | Verdict::NonStrict))
        .map(|r| (r.id, r.verdict))
        .collect();

    let limits = Limits {
        max_runs: opts.max_runs.saturating_sub(made as usize),
        deadline,
        tries,
        baseline: (original_rate.failed, original_rate.runs),
    };
    let found = search::minimize(
        &mut oracle,
        failure,
        limits,
        original.clone(),
        trial,
        &mut |e| on_event(ShrinkEvent::Search(e)),
    )
    .await?;

    // The minimal plan, `confirm` more times: how often does it fail? One
    // that fails less often than the original is undone, step by step.
    let confirmed = search::confirm(
        &mut oracle,
        failure,
        &original,
        &found.chain,
        (original_rate.failed, original_rate.runs),
        opts.confirm,
        &mut |_, c, failed| {
            on_event(ShrinkEvent::Confirm {
                run: c,
                of: opts.confirm,
                failed,
            })
        },
    )
    .await?;
    let (kept, rate, minimal) = match confirmed.trial {
        Some(t) => {
            oracle.discard(found.trial);
            (
                t,
                FailureRate {
                    failed: confirmed.failed,
                    runs: confirmed.runs,
                },
                confirmed.plan,
            )
        }
        // No confirming run failed (or none was asked for): the search's
        // last failing trial stands for the plan.
        None => (
            found.trial,
            FailureRate {
                failed: confirmed.failed,
                runs: confirmed.runs,
            },
            confirmed.plan,
        ),
    };
    let mut steps = found.steps;
    steps.truncate(steps.len().saturating_sub(confirmed.undone));
    let mut report = Report {
        scenario: scenario.clone(),
        seed: run.seed,
        failure,
        original_failures,
        original,
        minimal,
        check: kept.check.clone(),
        rate,
        original_rate,
        runs: made as usize + found.runs,
        steps,
        ended: found.ended,
        elapsed: started.elapsed(),
        target: target.describe(),
        url: crate::target::redact_url(&target.url),
        profile: target.profile.name.clone(),
        files: output::Files::default(),
    };
    report.files = output::write(&report, &kept, &opts.out_dir, target)?;
    let _ = std::fs::remove_dir_all(&runs_dir);
    Ok(Outcome::Counterexample(Box::new(report)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{Counts, InvariantResult};

    fn trial(results: &[(InvariantId, Verdict)]) -> Trial {
        Trial {
            check: ScenarioCheck {
                scenario: "s".into(),
                results: results
                    .iter()
                    .map(|(id, v)| InvariantResult::new(*id, *v, ""))
                    .collect(),
                counts: Counts::default(),
                dead_letters: Vec::new(),
                observations: Vec::new(),
            },
            history: None,
            state: None,
        }
    }

    #[test]
    fn the_first_failing_invariant_is_kept_unless_one_is_asked_for() {
        use InvariantId::*;
        let t = trial(&[
            (I1, Verdict::Pass),
            (I2, Verdict::NonStrict),
            (I5, Verdict::Fail),
            (I7, Verdict::Fail),
        ]);
        let f = failure_of(&t, None).unwrap();
        assert_eq!((f.invariant, f.verdict), (I5, Verdict::Fail));
        let f = failure_of(&t, Some(I7)).unwrap();
        assert_eq!((f.invariant, f.verdict), (I7, Verdict::Fail));
        let f = failure_of(&t, Some(I2)).unwrap();
        assert_eq!(f.verdict, Verdict::NonStrict);
        assert!(failure_of(&t, Some(I1)).is_none());
        assert!(
            failure_of(&t, Some(I3)).is_none(),
            "not checked is no failure"
        );
        let only_non_strict = trial(&[(I7, Verdict::NonStrict), (I1, Verdict::Unknown)]);
        assert_eq!(failure_of(&only_non_strict, None).unwrap().invariant, I7);
        assert!(failure_of(&trial(&[(I1, Verdict::Unknown)]), None).is_none());
    }

    #[test]
    fn a_failure_rate_reads_as_fails_x_of_k_runs() {
        let r = FailureRate {
            failed: 7,
            runs: 10,
        };
        assert_eq!(r.to_string(), "fails 7 of 10 runs");
    }

    #[test]
    fn the_original_plan_lists_only_run_time_faults() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("o.toml");
        std::fs::write(
            &path,
            "name = \"o\"\ndescription = \"d\"\nexpect = \"e\"\nwhen_it_fails = \"w\"\ncheck = [\"I2\"]\n[workload]\njobs = 3\n[[fault]]\nkind = \"duplicate\"\nmode = \"concurrent\"\n[[fault]]\nkind = \"front\"\nfail_first = 1\n",
        )
        .unwrap();
        let s = Scenario::from_file(&path).unwrap();
        let p = original_plan(&s, 5);
        assert_eq!(p.faults.len(), 1);
        assert_eq!(p.faults[0].name(), "front");
        assert!(p.notes.is_empty());
        assert!(p.deliveries.iter().all(|d| d.copies >= 2));
        // As an explicit scenario it plans the same deliveries under any run seed.
        let e = explicit_scenario(&s, &p);
        assert_eq!(crate::workload::plan(&e, 77).deliveries, p.deliveries);
    }
}
