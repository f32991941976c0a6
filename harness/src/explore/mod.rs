//! `hookstorm explore`: random fault plans against a receiver, every
//! failure shrunk and remembered.
//!
//! The catalog's scenarios each test one failure shape; a bug that needs
//! two faults at once is found only if some scenario happens to combine
//! them. Explore draws plans instead ([`strategy`], proptest strategies
//! over the [`space`] the target can run, weighted towards combinations),
//! runs each against the target through the `run` pipeline (reset between
//! runs, every invariant checked), and shrinks every new failure with the
//! shrinker ([`crate::shrink`]) to a minimal explicit scenario, measured
//! for flakiness ("fails 7 of 10 runs") and written to the
//! [`regressions`] folder, whose scenarios this and every `hookstorm run`
//! replay first. [`coverage`] counts which fault kinds and pairs of kinds
//! the plans held and which met the receiver's traffic; [`output`] writes
//! the session's report folder (the `run` reports of every plan, plus
//! `explore.json` and an explore section in `summary.md`).
//!
//! Everything is deterministic but the receiver: the same seed and target
//! give the same plans, and every plan (failing or not) has the command
//! that runs it alone (`hookstorm explore … --seed S --plan N`).

pub mod coverage;
pub mod output;
pub mod regressions;
pub mod space;
pub mod strategy;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::check::{InvariantId, Verdict};
use crate::findings::coverage::TargetFacts;
use crate::report::{RunReport, ScenarioReport};
use crate::run::interrupt::Stop;
use crate::run::preflight::Preflight;
use crate::run::{RunError, RunOptions};
use crate::scenario::Scenario;
use crate::shrink::{self, FailureRate, Outcome, ShrinkError, ShrinkEvent, ShrinkOptions, Trial};
use crate::target::Target;

use coverage::{Evidence, FaultCoverage};
use space::Space;
use strategy::Draw;

/// Default for `--budget`: how long explore draws and runs plans.
pub const DEFAULT_BUDGET: Duration = Duration::from_secs(300);

/// How to explore.
#[derive(Debug, Clone)]
pub struct ExploreOptions {
    /// Stop starting plans after this long.
    pub budget: Duration,
    /// Stop after this many plans.
    pub runs: Option<u64>,
    /// Run this plan of the seed alone (no regressions replayed first).
    pub plan: Option<u64>,
    /// Stop after this many failing plans.
    pub max_failures: Option<usize>,
    /// The regression folder: replayed first, and where failures go;
    /// `None` leaves it alone.
    pub regressions: Option<PathBuf>,
    /// Check the target before anything (and learn what it can run).
    pub preflight: bool,
    /// How each failure is shrunk (its `out_dir` is set per failure).
    pub shrink: ShrinkOptions,
    /// The command that runs a plan alone, without `--seed`/`--plan`.
    pub reproduce: String,
}

/// Progress, for the console.
#[derive(Debug)]
pub enum ExploreEvent<'a> {
    /// The preflight finished.
    Preflight(&'a Preflight),
    /// The space was decided.
    Space(&'a Space),
    /// The regression folder's scenarios are about to be replayed.
    Replaying {
        /// The folder.
        dir: &'a Path,
        /// How many scenarios it holds.
        count: usize,
    },
    /// A regression was replayed.
    Replayed(&'a ScenarioReport),
    /// A plan was drawn and is about to run.
    Drawn {
        /// Its number.
        plan: u64,
        /// What it is.
        draw: &'a Draw,
    },
    /// A plan ran and was checked.
    Checked {
        /// Its number.
        plan: u64,
        /// Its report.
        report: &'a ScenarioReport,
        /// The failure kept, if it failed.
        failure: Option<shrink::search::Target>,
        /// The coverage so far.
        coverage: &'a FaultCoverage,
    },
    /// A failing plan is being shrunk.
    Shrinking(&'a str),
    /// The shrinker's progress.
    Shrink(ShrinkEvent<'a>),
    /// A failure is recorded (shrunk, or like an earlier one).
    Found(&'a Failure),
}

/// A failing plan.
#[derive(Debug, Clone)]
pub struct Failure {
    /// The plan's number.
    pub plan: u64,
    /// Its scenario name.
    pub scenario: String,
    /// The failure kept: its invariant and verdict.
    pub invariant: InvariantId,
    /// Its verdict (`Fail`, or `NonStrict`).
    pub verdict: Verdict,
    /// Every invariant that failed or deviated in the plan's run.
    pub failed: Vec<(InvariantId, Verdict)>,
    /// The plan's fault kinds.
    pub faults: Vec<&'static str>,
    /// Its deliveries.
    pub deliveries: usize,
    /// When its check was done, from the start of the session.
    pub at: Duration,
    /// The command that runs the plan alone.
    pub reproduce: String,
    /// An earlier failure (or failing regression) of the same invariant
    /// and verdict: this one was not shrunk again.
    pub like: Option<String>,
    /// The minimal plan, when it was shrunk.
    pub shrunk: Option<Shrunk>,
    /// The regression file written for it.
    pub regression: Option<PathBuf>,
    /// The command that replays that file.
    pub replay: Option<String>,
    /// Why it was not shrunk, or the shrink stopped.
    pub note: Option<String>,
}

/// A failing plan cut down.
#[derive(Debug, Clone)]
pub struct Shrunk {
    /// Deliveries in the minimal plan.
    pub deliveries: usize,
    /// How often it failed in the confirmation runs.
    pub rate: FailureRate,
    /// Runs the shrink made.
    pub runs: usize,
    /// The shrink's folder (history, account, replay script).
    pub dir: PathBuf,
}

/// Why the session stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// `--budget` ran out.
    Budget,
    /// `--runs` plans ran.
    Runs,
    /// `--max-failures` failing plans were found.
    Failures,
    /// The one plan `--plan` asked for ran.
    Plan,
    /// Ctrl-C or SIGTERM.
    Interrupted,
}

/// A finished session.
#[derive(Debug)]
pub struct Explored {
    /// The report folder.
    pub dir: PathBuf,
    /// Every replayed regression and plan, as a run's report.
    pub report: RunReport,
    /// The seed.
    pub seed: u64,
    /// The space plans were drawn from.
    pub space: Space,
    /// The coverage of the plans.
    pub coverage: FaultCoverage,
    /// Plans run.
    pub plans: u64,
    /// The failing plans.
    pub failures: Vec<Failure>,
    /// The regression folder, and how many scenarios were replayed from it.
    pub regressions: Option<(PathBuf, usize)>,
    /// Why it stopped.
    pub ended: Ended,
    /// Wall time.
    pub elapsed: Duration,
    /// When the first failing plan was checked.
    pub first_failure: Option<Duration>,
    /// The time budget.
    pub budget: Duration,
}

impl Explored {
    /// Plans (and regressions) whose run decided nothing: unknown, most
    /// often because their faults met no traffic.
    pub fn undecided(&self) -> usize {
        self.report
            .scenarios
            .iter()
            .filter(|s| s.verdict(false) == Some(Verdict::Unknown))
            .count()
    }

    /// The session's grade: the worst of what its plans and regressions
    /// decided (an unknown plan among decided ones is random exploration's
    /// noise, counted in the report), unknown only when none decided
    /// anything.
    pub fn verdict(&self) -> Verdict {
        self.report
            .scenarios
            .iter()
            .filter_map(|s| s.verdict(false))
            .filter(|v| *v != Verdict::Unknown)
            .reduce(Verdict::worst)
            .unwrap_or(Verdict::Unknown)
    }

    /// The session's exit code, of [`Explored::verdict`]; 130 when it was
    /// interrupted.
    pub fn exit_code(&self) -> i32 {
        if self.report.interrupted {
            return crate::exit::INTERRUPTED;
        }
        self.verdict().exit_code(self.report.strict)
    }
}

/// Why a session could not be carried out.
#[derive(Debug, thiserror::Error)]
pub enum ExploreError {
    /// A run could not be carried out (target unusable, reports not written).
    #[error(transparent)]
    Run(#[from] RunError),
    /// The regression folder holds a file that is no scenario.
    #[error("regression folder: {0}")]
    Regressions(#[from] crate::error::ConfigError),
    /// The target's state source cannot be read.
    #[error("target unusable: {0}")]
    Probe(#[from] crate::state::probe::ProbeError),
    /// A file or folder could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The folder's `SHA256SUMS` could not be brought up to date.
    #[error("sealing the session's folder: {0}")]
    Reseal(#[from] crate::report::seal::SealError),
    /// Stopped by Ctrl-C or SIGTERM before anything ran.
    #[error("interrupted")]
    Interrupted,
}

pub(crate) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ExploreError + '_ {
    move |source| ExploreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The generative scenario of plan `plan` of `seed`.
pub fn scenario_of(draw: &Draw, seed: u64, plan: u64) -> Scenario {
    Scenario {
        name: regressions::plan_name(seed, plan),
        description: format!(
            "Plan {plan} of explore seed {seed}: {}",
            output::describe(draw)
        ),
        expect: "Every genuine delivery stored and processed once, the right result winning, forged and test deliveries refused, every answer as the contract says, whatever these faults do together.".into(),
        when_it_fails: "These faults together break an invariant that no one fault did: read the failing invariant's evidence, then the minimal plan explore cut it down to (its regression file and account.md).".into(),
        check: InvariantId::ALL.into(),
        tags: vec!["explore".into()],
        time_scale: Some(draw.time_scale()),
        drain: None,
        accounts: draw.accounts.clone(),
        workload: draw.workload.clone(),
        faults: draw.faults.clone(),
        explicit: None,
        path: PathBuf::new(),
    }
}

/// The failures a run shows: every failing or deviating invariant.
fn failed_of(r: &ScenarioReport) -> Vec<(InvariantId, Verdict)> {
    r.check
        .results
        .iter()
        .filter(|x| matches!(x.verdict, Verdict::Fail | Verdict::NonStrict))
        .map(|x| (x.id, x.verdict))
        .collect()
}

/// The failure kept of a run, as the shrinker picks it.
fn kept_of(r: &ScenarioReport) -> Option<shrink::search::Target> {
    let trial = Trial {
        check: r.check.clone(),
        history: None,
        state: None,
    };
    shrink::failure_of(&trial, None)
}

/// The preflight before exploring `target`: its event, and the facts it
/// found (an unusable target ends the exploration with the preflight).
async fn preflight(
    target: &Target,
    dir: &Path,
    stop: &Stop,
    on_event: &mut (dyn FnMut(ExploreEvent<'_>) + Send),
) -> Result<TargetFacts, ExploreError> {
    let log_dir = dir.join("runs");
    let d = tokio::select! {
        d = crate::run::doctor(target, &[], &log_dir) => d?,
        _ = stop.wait() => return Err(ExploreError::Interrupted),
    };
    let _ = std::fs::remove_dir_all(dir.join("runs"));
    on_event(ExploreEvent::Preflight(&d.preflight));
    if !d.preflight.usable() {
        return Err(RunError::Preflight(Box::new(d.preflight)).into());
    }
    Ok(d.preflight.facts)
}

/// One session's state.
struct Session<'a> {
    target: &'a Target,
    run: RunOptions,
    opts: &'a ExploreOptions,
    stop: &'a Stop,
    dir: PathBuf,
    started: Instant,
    reports: Vec<ScenarioReport>,
    failures: Vec<Failure>,
    /// Failures seen (invariant, verdict) and where first.
    known: Vec<(InvariantId, Verdict, String)>,
    coverage: FaultCoverage,
    first_failure: Option<Duration>,
}

impl Session<'_> {
    /// Runs `scenarios` through the run pipeline into `runs/<label>`, then
    /// moves each scenario's folder up into the session's folder.
    async fn run_scenarios(
        &self,
        scenarios: &[Scenario],
        label: &str,
    ) -> Result<Vec<ScenarioReport>, ExploreError> {
        let runs = self.dir.join("runs").join(label);
        let opts = RunOptions {
            out_dir: runs.clone(),
            ..self.run.clone()
        };
        let outcome =
            crate::run::run_until(self.target, scenarios, &opts, &mut |_| {}, self.stop).await?;
        for s in &outcome.report.scenarios {
            let from = outcome.dir.join(&s.name);
            if from.is_dir() {
                let to = self.dir.join(&s.name);
                let _ = std::fs::remove_dir_all(&to);
                std::fs::rename(&from, &to).map_err(io(&to))?;
            }
        }
        let _ = std::fs::remove_dir_all(&runs);
        Ok(outcome.report.scenarios)
    }

    /// Replays the regression folder's scenarios.
    async fn replay(
        &mut self,
        dir: &Path,
        on_event: &mut (dyn FnMut(ExploreEvent<'_>) + Send),
    ) -> Result<usize, ExploreError> {
        let scenarios = regressions::load(dir)?;
        if scenarios.is_empty() {
            return Ok(0);
        }
        on_event(ExploreEvent::Replaying {
            dir,
            count: scenarios.len(),
        });
        for r in self.run_scenarios(&scenarios, "regressions").await? {
            on_event(ExploreEvent::Replayed(&r));
            if let Some(f) = kept_of(&r) {
                if self.knows(f.invariant, f.verdict).is_none() {
                    self.known.push((f.invariant, f.verdict, r.name.clone()));
                }
            }
            self.reports.push(r);
        }
        Ok(scenarios.len())
    }

    fn knows(&self, id: InvariantId, v: Verdict) -> Option<&str> {
        self.known
            .iter()
            .find(|(i, w, _)| *i == id && *w == v)
            .map(|(_, _, n)| n.as_str())
    }

    /// Explores plan after plan (or `--plan` alone) until the run count,
    /// the failure count, the budget or a stop ends it: why it ended, and
    /// how many plans ran.
    async fn plans(
        &mut self,
        space: &Space,
        on_event: &mut (dyn FnMut(ExploreEvent<'_>) + Send),
    ) -> Result<(Ended, u64), ExploreError> {
        let mut plans = 0;
        let ended = match self.opts.plan {
            Some(n) => {
                if !self.stop.requested() {
                    self.plan(space, n, on_event).await?;
                    plans = 1;
                }
                Ended::Plan
            }
            None => loop {
                if self.opts.runs.is_some_and(|r| plans >= r) {
                    break Ended::Runs;
                }
                if self
                    .opts
                    .max_failures
                    .is_some_and(|m| self.failures.len() >= m)
                {
                    break Ended::Failures;
                }
                if self.started.elapsed() >= self.opts.budget {
                    break Ended::Budget;
                }
                if self.stop.requested() {
                    break Ended::Interrupted;
                }
                plans += 1;
                self.plan(space, plans, on_event).await?;
            },
        };
        Ok((ended, plans))
    }

    /// Draws, runs and checks plan `n`; shrinks it if it fails anew.
    async fn plan(
        &mut self,
        space: &Space,
        n: u64,
        on_event: &mut (dyn FnMut(ExploreEvent<'_>) + Send),
    ) -> Result<(), ExploreError> {
        let seed = self.run.seed;
        let draw = strategy::draw(space, seed, n);
        on_event(ExploreEvent::Drawn {
            plan: n,
            draw: &draw,
        });
        let scenario = scenario_of(&draw, seed, n);
        let Some(mut report) = self
            .run_scenarios(std::slice::from_ref(&scenario), &n.to_string())
            .await?
            .pop()
        else {
            return Ok(());
        };
        report.reproduce = self.reproduce(n);
        let attempts = read_attempts(&self.dir.join(&report.history));
        self.coverage.add(&Evidence {
            faults: &draw.faults,
            attempts: &attempts,
            notes: &report.notes,
        });
        let kept = kept_of(&report);
        on_event(ExploreEvent::Checked {
            plan: n,
            report: &report,
            failure: kept,
            coverage: &self.coverage,
        });
        let failed = failed_of(&report);
        self.reports.push(report);
        let Some(kept) = kept else {
            return Ok(());
        };
        let at = self.started.elapsed();
        self.first_failure.get_or_insert(at);
        let plan = shrink::original_plan(&scenario, seed);
        let mut failure = Failure {
            plan: n,
            scenario: scenario.name.clone(),
            invariant: kept.invariant,
            verdict: kept.verdict,
            failed,
            faults: draw.faults.iter().map(|f| f.name()).collect(),
            deliveries: plan.deliveries.len(),
            at,
            reproduce: self.reproduce(n),
            like: self.knows(kept.invariant, kept.verdict).map(str::to_string),
            shrunk: None,
            regression: None,
            replay: None,
            note: None,
        };
        if failure.like.is_none() {
            self.known
                .push((kept.invariant, kept.verdict, scenario.name.clone()));
            self.shrink(&scenario, &mut failure, on_event).await?;
        }
        on_event(ExploreEvent::Found(&failure));
        self.failures.push(failure);
        Ok(())
    }

    /// Shrinks a new failure and writes its regression file.
    async fn shrink(
        &mut self,
        scenario: &Scenario,
        failure: &mut Failure,
        on_event: &mut (dyn FnMut(ExploreEvent<'_>) + Send),
    ) -> Result<(), ExploreError> {
        on_event(ExploreEvent::Shrinking(&scenario.name));
        let out = self.dir.join("shrink").join(&scenario.name);
        let opts = ShrinkOptions {
            invariant: Some(failure.invariant),
            out_dir: out.clone(),
            ..self.opts.shrink.clone()
        };
        let run = RunOptions {
            out_dir: out.join("runs"),
            ..self.run.clone()
        };
        let result = shrink::shrink(
            self.target,
            scenario,
            &run,
            &opts,
            &mut |e| on_event(ExploreEvent::Shrink(e)),
            self.stop,
        )
        .await;
        let (plan, header) = match result {
            Ok(Outcome::Counterexample(r)) => {
                failure.shrunk = Some(Shrunk {
                    deliveries: r.minimal.deliveries.len(),
                    rate: r.rate,
                    runs: r.runs,
                    dir: out,
                });
                let header = output::regression_header(
                    failure,
                    self.run.seed,
                    &r.original,
                    Some(&r.minimal),
                    Some(r.rate),
                );
                (r.minimal, header)
            }
            Ok(Outcome::NotReproduced { runs, .. }) => {
                failure.note = Some(format!(
                    "it did not fail again in {runs} run(s), so it was kept as it ran, not shrunk"
                ));
                let plan = shrink::original_plan(scenario, self.run.seed);
                let header = output::regression_header(failure, self.run.seed, &plan, None, None);
                (plan, header)
            }
            Err(ShrinkError::Interrupted) => return Ok(()),
            Err(ShrinkError::Run(e @ RunError::Target(_))) => return Err(e.into()),
            Err(e) => {
                failure.note = Some(format!("shrinking stopped: {e}"));
                let plan = shrink::original_plan(scenario, self.run.seed);
                let header = output::regression_header(failure, self.run.seed, &plan, None, None);
                (plan, header)
            }
        };
        if let Some(dir) = &self.opts.regressions {
            std::fs::create_dir_all(dir).map_err(io(dir))?;
            let write =
                |name: &str| crate::scenario::write::to_toml(scenario, name, &plan, &header);
            let path = regressions::keep(dir, &scenario.name, write).map_err(io(dir))?;
            failure.replay = Some(format!(
                "{} --scenario {}{}",
                self.run.reproduce,
                path.display(),
                self.time_scale_flag()
            ));
            failure.regression = Some(path);
        }
        Ok(())
    }

    /// The command that runs plan `n` alone.
    fn reproduce(&self, n: u64) -> String {
        format!(
            "{} --seed {} --plan {n}{}",
            self.opts.reproduce,
            self.run.seed,
            self.time_scale_flag()
        )
    }

    /// ` --time-scale T` when the session overrides the plans' scales.
    fn time_scale_flag(&self) -> String {
        self.run
            .time_scale
            .map(|t| format!(" --time-scale {t}"))
            .unwrap_or_default()
    }
}

/// Every attempt of a history file (none when it cannot be read).
fn read_attempts(path: &Path) -> Vec<crate::history::Attempt> {
    match crate::history::read(path) {
        Ok(events) => events
            .filter_map(Result::ok)
            .filter_map(|e| match e {
                crate::history::Event::Attempt(a) => Some(a),
                _ => None,
            })
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// Explores `target` at `run.seed`: preflight, the regression folder
/// replayed, then plans until the budget, the run count or the failure
/// count is reached (or `opts.plan` alone); writes the report folder.
pub async fn explore(
    target: &Target,
    run: &RunOptions,
    opts: &ExploreOptions,
    on_event: &mut (dyn FnMut(ExploreEvent<'_>) + Send),
    stop: &Stop,
) -> Result<Explored, ExploreError> {
    let started = Instant::now();
    let started_at = crate::history::now_rfc3339();
    let stem = format!(
        "explore-{}-{:08x}",
        chrono::Utc::now().format("%Y%m%d-%H%M%S"),
        run.seed as u32
    );
    let out_dir = run.out_dir.clone();
    let (run_id, dir) =
        crate::report::folder::create_unique(&out_dir, &stem).map_err(io(&out_dir))?;
    let run = RunOptions {
        preflight: false,
        max_fail: None,
        timeout: None,
        require_all: false,
        ..run.clone()
    };
    let facts = if opts.preflight {
        preflight(target, &dir, stop, on_event).await?
    } else {
        TargetFacts::default()
    };
    let space = Space::of(target, &facts)?;
    on_event(ExploreEvent::Space(&space));
    let mut s = Session {
        target,
        run,
        opts,
        stop,
        dir: dir.clone(),
        started,
        reports: Vec::new(),
        failures: Vec::new(),
        known: Vec::new(),
        coverage: FaultCoverage::default(),
        first_failure: None,
    };
    let mut replayed = None;
    if let (Some(rdir), None) = (&opts.regressions, opts.plan) {
        let n = s.replay(rdir, on_event).await?;
        replayed = Some((rdir.clone(), n));
    }
    let (ended, plans) = s.plans(&space, on_event).await?;
    let ended = if stop.requested() {
        Ended::Interrupted
    } else {
        ended
    };
    let _ = std::fs::remove_dir_all(dir.join("runs"));
    // The session's options never require every scenario.
    let report = RunReport {
        run_id: run_id.clone(),
        started_at,
        duration_s: started.elapsed().as_secs_f64(),
        scenarios: std::mem::take(&mut s.reports),
        interrupted: ended == Ended::Interrupted,
        ..crate::run::empty_report(target, &s.run)
    };
    let explored = Explored {
        dir: dir.clone(),
        report,
        seed: s.run.seed,
        space,
        coverage: s.coverage,
        plans,
        failures: s.failures,
        regressions: replayed,
        ended,
        elapsed: started.elapsed(),
        first_failure: s.first_failure,
        budget: opts.budget,
    };
    output::write(&explored)?;
    crate::run::point_latest(&out_dir, &run_id);
    Ok(explored)
}
