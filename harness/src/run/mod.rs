//! The `run` pipeline: for each scenario, reset the receiver, send the
//! workload with its faults, wait for the receiver to drain, read its state,
//! check the invariants, and finally write the reports.
//!
//! Before the first scenario the [`crate::run::preflight`] checks the target
//! (exit 3 on a configuration mistake); a scenario whose needs the target
//! does not meet is skipped ([`crate::findings::coverage`]); `max_fail` and `timeout`
//! stop a run early, and the scenarios it did not reach are listed as not run.
//!
//! This module decides nothing about verdicts (the checker does) and renders
//! nothing (the reporters do); it sequences them and emits [`RunEvent`]s so
//! the CLI can show progress.

pub mod actor;
pub mod estimate;
pub mod interrupt;
mod notes;
pub mod preflight;
mod scenario;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::check::{self, ScenarioCheck};
use crate::findings::coverage::{self, Skip, TargetFacts};
use crate::findings::note::Note;
use crate::history;
use crate::lifecycle::Supervisor;
use crate::report::{self, RunReport, ScenarioReport};
use crate::run::interrupt::Stop;
use crate::run::preflight::Preflight;
use crate::scenario::Scenario;
use crate::sender::SendError;
use crate::state::late::Owners;
use crate::state::probe::Probe;
use crate::target::Target;

/// How a run is carried out.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The seed that drives everything.
    pub seed: u64,
    /// Overrides every scenario's time scale.
    pub time_scale: Option<f64>,
    /// Time scale for scenarios that set none.
    pub default_time_scale: f64,
    /// Non-strict deviations fail the run.
    pub strict: bool,
    /// The reports folder (`reports/`); the run writes `<out>/<run-id>/`.
    pub out_dir: PathBuf,
    /// Concurrent requests at most.
    pub concurrency: usize,
    /// How long to wait at most for the receiver's state to settle after sending.
    pub drain: Duration,
    /// A state with acknowledged keys still missing that has not changed
    /// for this long is read as it is (see [`Probe::wait_settled`]).
    pub settle: Duration,
    /// The command that reproduces this run, without `--scenario`/`--seed`.
    pub reproduce: String,
    /// Check the target before the first scenario; a problem ends the run
    /// with [`RunError::Preflight`].
    pub preflight: bool,
    /// Stop after this many failing scenarios (`--fail-fast` is 1).
    pub max_fail: Option<usize>,
    /// Stop the whole run after this long; the scenario it cuts short is
    /// unknown, the ones after it are not run.
    pub timeout: Option<Duration>,
    /// A scenario skipped for an unmet need fails the run.
    pub require_all: bool,
}

/// Progress of a run, for the console.
#[derive(Debug)]
pub enum RunEvent<'a> {
    /// A scenario starts.
    ScenarioStarted {
        /// Its name.
        name: &'a str,
        /// 1-based position.
        index: usize,
        /// Scenarios in the run.
        total: usize,
    },
    /// A scenario finished and was checked (or was skipped).
    ScenarioFinished(&'a ScenarioReport),
    /// The preflight finished (whether or not the target is usable).
    Preflight(&'a Preflight),
}

/// Why a run could not be carried out at all.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The target could not be reached or used.
    #[error("target unusable: {0}")]
    Target(#[from] TargetError),
    /// A report folder or file could not be written.
    #[error("cannot write reports: {}: {source}", path.display())]
    Write {
        /// The folder or file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A scenario's history could not be written or read back.
    #[error("cannot write reports: {0}")]
    History(#[from] crate::history::HistoryError),
    /// The reports could not be written.
    #[error("cannot write reports: {0}")]
    Reports(#[from] report::ReportError),
    /// The sender failed on its own (a crashed sending task).
    #[error("{0}")]
    Sender(SendError),
    /// The preflight found a configuration mistake.
    #[error("target unusable: {}", .0.problem().map(|f| f.render(&preflight::Words::generic())).unwrap_or_default())]
    Preflight(Box<Preflight>),
}

/// What made the target unusable.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    /// The state source cannot be read.
    #[error(transparent)]
    Probe(#[from] crate::state::probe::ProbeError),
    /// Its processes (or its database control) could not be started.
    #[error(transparent)]
    Lifecycle(#[from] crate::lifecycle::LifecycleError),
    /// The provider API could not be served.
    #[error("provider API on {url}: {source}")]
    Provider {
        /// Where it was to listen.
        url: String,
        /// Why it could not.
        #[source]
        source: std::io::Error,
    },
    /// The receiver cannot be sent to (bad URL, nothing listening, a
    /// secret that does not fit).
    #[error(transparent)]
    Send(SendError),
    /// A scenario's fault could not be set up.
    #[error(transparent)]
    Fault(#[from] crate::run::actor::SetupError),
    /// The run was stopped while the receiver started.
    #[error("interrupted while starting the receiver")]
    Interrupted,
    /// The database proxy could not listen.
    #[error("database proxy on {listen}: {source}")]
    DatabaseProxy {
        /// Where it was to listen.
        listen: String,
        /// Why it could not.
        #[source]
        source: std::io::Error,
    },
}

impl From<SendError> for RunError {
    /// A send error that says the target is unusable is one; a history
    /// that could not be written is the run's own failure.
    fn from(e: SendError) -> RunError {
        match e {
            SendError::Unreachable { .. } | SendError::BadUrl { .. } | SendError::Config(_) => {
                RunError::Target(TargetError::Send(e))
            }
            SendError::History(h) => RunError::History(h),
            e @ SendError::Internal(_) => RunError::Sender(e),
        }
    }
}

/// A new run's id (time and seed, and `-2`, … when another run took
/// it) and its folder `<out>/<run-id>`, created new.
pub(crate) fn new_run_dir(out: &Path, seed: u64) -> Result<(String, PathBuf), RunError> {
    let stem = format!(
        "{}-{:08x}",
        chrono::Utc::now().format("%Y%m%d-%H%M%S"),
        seed as u32
    );
    crate::report::folder::create_unique(out, &stem).map_err(write_error(out))
}

/// A folder or file could not be written.
pub(crate) fn write_error(path: &Path) -> impl FnOnce(std::io::Error) -> RunError + '_ {
    move |source| RunError::Write {
        path: path.to_path_buf(),
        source,
    }
}

/// What `hookstorm doctor` found: the preflight, and which scenarios would
/// be skipped and why.
#[derive(Debug)]
pub struct Doctor {
    /// The preflight.
    pub preflight: Preflight,
    /// Each scenario and why it would be skipped (`None`: it would run).
    pub skips: Vec<(String, Option<Skip>)>,
}

/// A finished run: its report and where it was written.
#[derive(Debug)]
pub struct RunOutcome {
    /// The report.
    pub report: RunReport,
    /// `<out>/<run-id>`.
    pub dir: PathBuf,
}

/// The seed of one scenario, derived from the run seed and its name, so a
/// scenario run alone with the same seed gets the same deliveries.
pub fn scenario_seed(seed: u64, name: &str) -> u64 {
    // FNV-1a: stable across platforms and releases, unlike std's hasher.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ seed;
    for b in name.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Runs every scenario against the target.
pub async fn run(
    target: &Target,
    scenarios: &[Scenario],
    opts: &RunOptions,
    on_event: &mut (dyn FnMut(RunEvent<'_>) + Send),
) -> Result<RunOutcome, RunError> {
    run_until(target, scenarios, opts, on_event, &Stop::never()).await
}

/// Runs every scenario against the target until `interrupt` is requested. A
/// stopped run drops the scenario in progress (its processes are killed
/// with the supervisor), writes the reports of the scenarios that
/// finished, marked `interrupted`, and points `latest` at them.
pub async fn run_until(
    target: &Target,
    scenarios: &[Scenario],
    opts: &RunOptions,
    on_event: &mut (dyn FnMut(RunEvent<'_>) + Send),
    interrupt: &Stop,
) -> Result<RunOutcome, RunError> {
    let started = Instant::now();
    let started_at = history::now_rfc3339();
    let (run_id, dir) = new_run_dir(&opts.out_dir, opts.seed)?;
    // A signal while the receiver starts ends the run before any scenario.
    let (probe, mut supervisor) = tokio::select! {
        r = start(target, &dir) => r?,
        _ = interrupt.wait() => {
            return Err(TargetError::Interrupted.into())
        }
    };
    let (facts, preflight_keys) = if opts.preflight {
        let pf = preflight::check(target, &probe).await;
        on_event(RunEvent::Preflight(&pf));
        if !pf.usable() {
            if let Some(sup) = supervisor.take() {
                sup.shutdown().await;
            }
            return Err(RunError::Preflight(Box::new(pf)));
        }
        (pf.facts, pf.keys)
    } else {
        (TargetFacts::default(), Vec::new())
    };

    let deadline = opts.timeout.map(|t| tokio::time::Instant::now() + t);
    let mut failures = 0;
    // Once set, (label, reason) of why the remaining scenarios are not run.
    let mut stop: Option<(String, String)> = None;
    let mut reports = Vec::new();
    let mut owners = Owners::default();
    owners.set_aside(preflight_keys.iter().map(|(a, k)| (a.as_str(), k.as_str())));
    let mut rechecks: Vec<Option<scenario::Recheck>> = Vec::new();
    for (i, scenario) in scenarios.iter().enumerate() {
        // Interrupted: the report holds the scenarios that finished.
        if interrupt.requested() {
            break;
        }
        if stop.is_none() && deadline.is_some_and(|d| tokio::time::Instant::now() >= d) {
            stop = Some(timeout_stop(opts));
        }
        if let Some((label, reason)) = &stop {
            reports.push(skipped_report(
                scenario,
                opts,
                Skip::stopped(scenario, label, reason),
            ));
            rechecks.push(None);
            continue;
        }
        on_event(RunEvent::ScenarioStarted {
            name: &scenario.name,
            index: i + 1,
            total: scenarios.len(),
        });
        let (report, recheck) = match coverage::unmet(scenario, target, &probe, &facts) {
            Some(skip) => (skipped_report(scenario, opts, skip), None),
            None => {
                let began = Instant::now();
                let one = scenario::run_scenario(
                    target,
                    &probe,
                    scenario,
                    opts,
                    &dir,
                    &run_id,
                    supervisor.as_mut(),
                    (i, &mut owners),
                );
                // `None`: the run's --timeout cut the scenario short.
                let bounded = async move {
                    match deadline {
                        None => one.await.map(Some),
                        Some(d) => match tokio::time::timeout_at(d, one).await {
                            Ok(r) => r.map(Some),
                            Err(_) => Ok(None),
                        },
                    }
                };
                let finished = tokio::select! {
                    r = bounded => r?,
                    _ = interrupt.wait() => break,
                };
                match finished {
                    Some(done) => done,
                    None => {
                        stop = Some(timeout_stop(opts));
                        (
                            cut_short_report(scenario, opts, target, began.elapsed()),
                            None,
                        )
                    }
                }
            }
        };
        on_event(RunEvent::ScenarioFinished(&report));
        if counts_as_failing(&report, opts) {
            failures += 1;
            if opts.max_fail.is_some_and(|m| failures >= m) && stop.is_none() {
                stop = Some(fail_stop(opts, failures, &scenario.name));
            }
        }
        reports.push(report);
        rechecks.push(recheck);
    }
    // Not after Ctrl-C: the user asked to stop, not for one more read.
    if !interrupt.requested() {
        read_late_rows(&probe, &mut owners, &rechecks).await;
    }
    judge_late_rows(&owners, &mut reports, &rechecks);
    let interrupted = interrupt.requested();
    if let Some(sup) = supervisor.take() {
        sup.end(interrupted).await;
    }

    let report = RunReport {
        run_id: run_id.clone(),
        started_at,
        duration_s: started.elapsed().as_secs_f64(),
        scenarios: reports,
        interrupted,
        ..empty_report(target, opts)
    };
    let report = report::write_reports(&dir, &report)?.report;
    point_latest(&opts.out_dir, &run_id);
    Ok(RunOutcome { report, dir })
}

/// Rows no scenario's read saw yet, read once after the last scenario
/// when some scenario asked to be judged again with late rows.
async fn read_late_rows(
    probe: &Probe,
    owners: &mut Owners,
    rechecks: &[Option<scenario::Recheck>],
) {
    if rechecks.iter().any(Option::is_some) {
        // Within the budget of the largest scenario that asked.
        let deliveries = rechecks.iter().flatten().map(|r| r.deliveries).max();
        let probe = probe.holding(deliveries.unwrap_or(0));
        if let Ok(state) = probe.read_state().await {
            owners.take_final(&state);
        }
    }
}

/// Judges again every scenario that got late rows, and notes the rows a
/// scenario's reset found written again.
fn judge_late_rows(
    owners: &Owners,
    reports: &mut [ScenarioReport],
    rechecks: &[Option<scenario::Recheck>],
) {
    for (&i, rows) in owners.late() {
        if let (Some(report), Some(Some(r))) = (reports.get_mut(i), rechecks.get(i)) {
            scenario::judge_late_rows(report, r, rows);
        }
    }
    for (&i, &n) in owners.restored() {
        if let Some(report) = reports.get_mut(i) {
            report.notes.push(Note::WrittenAgain { rows: n });
        }
    }
}

/// The report of a run (or an exploration) of `target` under `opts`
/// before its first scenario.
pub(crate) fn empty_report(target: &Target, opts: &RunOptions) -> RunReport {
    RunReport {
        run_id: String::new(),
        seed: opts.seed,
        profile: target.profile.name.clone(),
        time_scale: target
            .profile
            .time_scale(opts.time_scale, None, opts.default_time_scale),
        target: target.describe(),
        started_at: String::new(),
        duration_s: 0.0,
        strict: opts.strict,
        require_all: opts.require_all,
        hookstorm_version: env!("CARGO_PKG_VERSION").to_string(),
        scenarios: Vec::new(),
        machine: Some(machine()),
        interrupted: false,
        seal: None,
    }
}

/// Starts what the target needs for a run (lifecycle, database proxy,
/// provider API) and builds its probe; `run`, `doctor` and `bench` start
/// a target alike. With lifecycle control the harness owns the
/// receiver's processes for the whole run; dropping the supervisor (error,
/// Ctrl-C) kills them, [`Supervisor::shutdown`] stops them.
pub async fn start(target: &Target, dir: &Path) -> Result<(Probe, Option<Supervisor>), RunError> {
    let probe = target.probe().map_err(TargetError::from)?;
    // With database control alone the supervisor runs the fault proxy and
    // cuts the database.
    let supervisor = match &target.lifecycle {
        Some(life) => Some(
            Supervisor::start(life.clone(), target.database.clone(), dir)
                .await
                .map_err(TargetError::from)?,
        ),
        None if target.database.has_control() => Some(
            Supervisor::database_only(target.database.clone(), dir)
                .await
                .map_err(TargetError::from)?,
        ),
        None => None,
    };
    if let Some(p) = &target.provider {
        p.serve().map_err(|source| TargetError::Provider {
            url: p.url(),
            source,
        })?;
    }
    Ok((probe, supervisor))
}

/// `hookstorm doctor`: starts the target as a run would, runs the preflight
/// and says which scenarios would be skipped; sends no scenario. The logs
/// of the processes it starts go to `log_dir` (created only then); it
/// writes nothing else.
pub async fn doctor(
    target: &Target,
    scenarios: &[Scenario],
    log_dir: &Path,
) -> Result<Doctor, RunError> {
    let (probe, supervisor) = start(target, log_dir).await?;
    let pf = preflight::check(target, &probe).await;
    if let Some(sup) = supervisor {
        sup.shutdown().await;
    }
    let skips = scenarios
        .iter()
        .map(|s| {
            (
                s.name.clone(),
                coverage::unmet(s, target, &probe, &pf.facts),
            )
        })
        .collect();
    Ok(Doctor {
        preflight: pf,
        skips,
    })
}

/// Whether a finished scenario counts toward `max_fail`.
fn counts_as_failing(report: &ScenarioReport, opts: &RunOptions) -> bool {
    match &report.skipped {
        Some(skip) => opts.require_all && skip.need.is_some(),
        None => report.check.verdict().is_failing(opts.strict),
    }
}

fn fail_stop(opts: &RunOptions, failures: usize, last: &str) -> (String, String) {
    match opts.max_fail {
        Some(1) => (
            "--fail-fast".into(),
            format!("--fail-fast stopped the run after {last} failed"),
        ),
        _ => {
            let label = format!("--max-fail {failures}");
            let reason = format!(
                "{label} stopped the run after {failures} failing scenarios (the last {last})"
            );
            (label, reason)
        }
    }
}

fn timeout_stop(opts: &RunOptions) -> (String, String) {
    let t = opts
        .timeout
        .map(crate::text::units::format_duration)
        .unwrap_or_default();
    (
        "--timeout".into(),
        format!("the run's --timeout of {t} ran out"),
    )
}

/// The command that reproduces one scenario of this run (an explicit
/// scenario by its file: its name is the scenario it was cut from).
pub(super) fn reproduce_command(opts: &RunOptions, scenario: &Scenario) -> String {
    let which = match &scenario.explicit {
        Some(_) if !scenario.path.as_os_str().is_empty() => scenario.path.display().to_string(),
        _ => scenario.name.clone(),
    };
    format!(
        "{} --scenario {} --seed {}{}",
        opts.reproduce,
        which,
        opts.seed,
        opts.time_scale
            .map(|t| format!(" --time-scale {t}"))
            .unwrap_or_default()
    )
}

/// The report of a scenario that did not run: no checks, the reason as its note.
fn skipped_report(scenario: &Scenario, opts: &RunOptions, skip: Skip) -> ScenarioReport {
    ScenarioReport {
        name: scenario.name.clone(),
        description: scenario.description.clone(),
        when_it_fails: scenario.when_it_fails.clone(),
        check: ScenarioCheck {
            scenario: scenario.name.clone(),
            results: Vec::new(),
            counts: Default::default(),
            dead_letters: Vec::new(),
            observations: Vec::new(),
        },
        reproduce: reproduce_command(opts, scenario),
        duration_s: 0.0,
        history: String::new(),
        state: None,
        notes: vec![Note::Reason(skip.reason.clone())],
        skipped: Some(skip),
        graded_with: None,
        gap_slack_ms: None,
    }
}

/// The report of a scenario the run's timeout cut short: every invariant unknown.
fn cut_short_report(
    scenario: &Scenario,
    opts: &RunOptions,
    target: &Target,
    took: Duration,
) -> ScenarioReport {
    let (_, reason) = timeout_stop(opts);
    let why = format!("{reason} during this scenario");
    let check = check::check(
        std::iter::empty(),
        &scenario.name,
        Err(why.as_str()),
        &scenario::check_options(scenario, opts, target, false),
    );
    ScenarioReport {
        name: scenario.name.clone(),
        description: scenario.description.clone(),
        when_it_fails: scenario.when_it_fails.clone(),
        check,
        reproduce: reproduce_command(opts, scenario),
        duration_s: took.as_secs_f64(),
        history: format!("{}/history.jsonl", scenario.name),
        state: None,
        notes: vec![Note::Reason(why)],
        skipped: None,
        graded_with: None,
        gap_slack_ms: None,
    }
}

/// Points `<out>/latest` at the report folder `run_id` (a symlink, where
/// the platform has them).
pub fn point_latest(out: &Path, run_id: &str) {
    let latest = out.join("latest");
    let _ = std::fs::remove_file(&latest);
    #[cfg(unix)]
    let _ = std::os::unix::fs::symlink(run_id, &latest);
}

/// The machine a run ran on, as reports show it (`linux x86_64 · 2 cores`).
pub fn machine() -> String {
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    format!(
        "{} {} · {} cores",
        std::env::consts::OS,
        std::env::consts::ARCH,
        cores
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_send_error_is_the_targets_fault_only_when_it_says_so() {
        let unreachable = RunError::from(SendError::Unreachable {
            url: "http://127.0.0.1:9/w".into(),
            error: "refused".into(),
        });
        assert!(matches!(
            unreachable,
            RunError::Target(TargetError::Send(SendError::Unreachable { .. }))
        ));
        assert!(unreachable
            .to_string()
            .starts_with("target unusable: target http://127.0.0.1:9/w is unreachable"));
        let config = RunError::from(SendError::Config("no secret".into()));
        assert!(matches!(config, RunError::Target(_)), "{config}");
        let crashed = RunError::from(SendError::Internal("a task panicked".into()));
        assert!(matches!(crashed, RunError::Sender(_)), "{crashed}");
        let dir = Path::new("/nonexistent/reports");
        let e = write_error(dir)(std::io::Error::from(std::io::ErrorKind::PermissionDenied));
        assert!(
            e.to_string()
                .starts_with("cannot write reports: /nonexistent/reports: "),
            "{e}"
        );
    }

    #[test]
    fn scenario_seeds_are_stable_and_distinct() {
        assert_eq!(scenario_seed(7, "baseline"), scenario_seed(7, "baseline"));
        assert_ne!(scenario_seed(7, "baseline"), scenario_seed(8, "baseline"));
        assert_ne!(scenario_seed(7, "baseline"), scenario_seed(7, "ack-loss"));
    }
}
