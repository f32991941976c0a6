//! `hookstorm shrink` (and `run --shrink`): cut a failing scenario down to
//! a minimal plan that still fails the same invariant.
//!
//! The target is chosen as `run` chooses it (the same flags; without any,
//! the built-in receiver as a child process). Progress goes to stderr, one
//! line per run; the result (the minimal plan's headline and where its
//! files are) to stdout. Exit 1 when a counterexample was found, 0 when the
//! failure did not reproduce (which is said), 3 when the target is
//! unusable, 254 on a usage error, 130 when interrupted.

use std::path::PathBuf;

use anyhow::Context;
use hookstorm::check::{InvariantId, Verdict};
use hookstorm::exit;
use hookstorm::report::RunReport;
use hookstorm::run::interrupt::Stop;
use hookstorm::run::RunOptions;
use hookstorm::scenario::Scenario;
use hookstorm::shrink::{self, Outcome, Report, SearchEvent, ShrinkEvent, ShrinkOptions};
use hookstorm::target::Target;
use hookstorm::text::units::HumanDuration;

use super::resolve::{build_target, Built};

/// Arguments of `hookstorm shrink`: its own, then the target's and the
/// built-in receiver's, as `run` has them.
#[derive(Debug, clap::Args)]
#[command(next_help_heading = "Shrink")]
pub struct Args {
    /// The failing scenario: a name or a .toml file.
    #[arg(long)]
    scenario: String,
    /// The run seed it failed with (as `hookstorm run --seed` took it).
    #[arg(long)]
    seed: u64,
    /// The invariant to keep failing (I2 or exactly-once); default: the
    /// first that fails in the original run.
    #[arg(long)]
    invariant: Option<InvariantId>,
    /// Runs at most, the original's tries included.
    #[arg(long, value_name = "N", default_value_t = shrink::DEFAULT_MAX_RUNS)]
    max_runs: usize,
    /// Time at most for the search (e.g. 5m); the smallest plan found so far is kept.
    #[arg(long, default_value_t = HumanDuration(shrink::DEFAULT_BUDGET))]
    budget: HumanDuration,
    /// Tries per candidate plan: kept when one of them fails (races, kills).
    #[arg(long, value_name = "K", default_value_t = shrink::DEFAULT_TRIES)]
    tries: u32,
    /// Runs of the minimal plan after the search, for "fails X of N runs".
    #[arg(long, value_name = "N", default_value_t = shrink::DEFAULT_CONFIRM)]
    confirm: u32,
    /// Reports folder: the shrink writes its own folder in it
    /// (<out>/shrink/<scenario>/), as `run --out` writes <out>/<run-id>/.
    #[arg(long, default_value = "reports")]
    out: PathBuf,
    #[command(flatten)]
    run: super::run_flags::RunFlags,
    #[command(flatten)]
    catalog: super::catalog::CatalogFlags,
    #[command(flatten)]
    target: super::target_flags::TargetFlags,
    #[command(flatten)]
    builtin: super::resolve::BuiltinFlags,
}

/// Shrinks and returns the exit code.
pub fn run(args: Args) -> anyhow::Result<i32> {
    if let Some(problem) = args.run.problem() {
        return Ok(super::usage_error(problem));
    }
    for (flag, n) in [
        ("--max-runs", args.max_runs as u64),
        ("--tries", args.tries.into()),
    ] {
        if n == 0 {
            return Ok(super::usage_error(format!("{flag} 0: expected 1 or more")));
        }
    }
    if let Some(e) = args.builtin.conflict(&args.target) {
        return Ok(super::usage_error(e));
    }
    let path = match super::catalog::find(&args.catalog.dir(), &args.scenario) {
        Ok(p) => p,
        Err(e) => return Ok(super::usage_error(e)),
    };
    let scenario = match Scenario::from_file(&path) {
        Ok(s) => s,
        Err(e) => return Ok(super::usage_error(e)),
    };
    if let Some(id) = args.invariant {
        let checked = hookstorm::findings::coverage::invariants(&scenario);
        if !checked.contains(&id) {
            let list: Vec<&str> = checked.iter().map(|i| i.code()).collect();
            return Ok(super::usage_error(format!(
                "--invariant {}: scenario {} does not check it (hint: one of {})",
                id.code(),
                scenario.name,
                list.join(", ")
            )));
        }
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(run_async(args, scenario))
}

async fn run_async(args: Args, scenario: Scenario) -> anyhow::Result<i32> {
    let stop = hookstorm::run::interrupt::on_signals().context("installing the Ctrl-C handler")?;
    let Built {
        target,
        child,
        mut reproduce,
    } = match build_target(&args.target, &args.builtin, "hookstorm run")? {
        Ok(b) => b,
        Err(code) => return Ok(code),
    };
    if let Some(t) = args.run.time_scale {
        reproduce.push_str(&format!(" --time-scale {t}"));
    }
    let out = args.out.join("shrink").join(&scenario.name);
    let run = args
        .run
        .options(args.seed, out.join("runs"), reproduce.clone());
    let opts = ShrinkOptions {
        invariant: args.invariant,
        max_runs: args.max_runs,
        budget: args.budget.0,
        tries: args.tries,
        confirm: args.confirm,
        out_dir: out.clone(),
    };
    info!(
        "shrinking {} (seed {}) on {} · at most {} runs, {} · {} tries per candidate",
        scenario.name,
        args.seed,
        target.describe(),
        opts.max_runs,
        hookstorm::text::units::format_duration(opts.budget),
        opts.tries
    );
    let result = shrink_one(&target, &scenario, &run, &opts, &stop).await;
    drop(child);
    if stop.requested() {
        hookstorm::lifecycle::kill_all();
        errln!("interrupted: stopped every process the harness started");
        return Ok(exit::INTERRUPTED);
    }
    match result {
        Ok(Outcome::Counterexample(r)) => {
            for line in result_lines(&r, &reproduce) {
                outln!("{line}");
            }
            Ok(exit::FAIL)
        }
        Ok(Outcome::NotReproduced { runs, verdicts }) => {
            outln!(
                "{}",
                not_reproduced(&scenario, args.seed, args.invariant, runs, &verdicts)
            );
            Ok(exit::PASS)
        }
        Err(shrink::ShrinkError::Run(hookstorm::run::RunError::Target(m))) => {
            errln!("error: target unusable: {m}");
            Ok(exit::TARGET_UNUSABLE)
        }
        Err(shrink::ShrinkError::Interrupted) => Ok(exit::INTERRUPTED),
        Err(e) => Err(e.into()),
    }
}

/// Shrinks one scenario, printing progress on stderr.
async fn shrink_one(
    target: &Target,
    scenario: &Scenario,
    run: &RunOptions,
    opts: &ShrinkOptions,
    stop: &Stop,
) -> Result<Outcome, shrink::ShrinkError> {
    let max = opts.max_runs;
    let mut progress = |e: ShrinkEvent<'_>| print_progress(e, max, "");
    shrink::shrink(target, scenario, run, opts, &mut progress, stop).await
}

/// One shrink event on stderr (`max`: the run count it is bounded by),
/// each line after `indent`.
pub(super) fn print_progress(e: ShrinkEvent<'_>, max: usize, indent: &str) {
    match e {
        ShrinkEvent::Original {
            run,
            of,
            deliveries,
            failed,
        } => info!(
            "{indent}[original {run}/{of}] {deliveries} deliveries: {}",
            match failed {
                Some(f) => format!("{} {}", f.invariant, f.verdict),
                None => "no failure".into(),
            }
        ),
        ShrinkEvent::Search(SearchEvent::Tried {
            runs,
            step,
            deliveries,
            tries,
            kept,
        }) => {
            let tried = if tries > 1 {
                format!(" ({tries} tries)")
            } else {
                String::new()
            };
            if kept {
                let left = shrink::output::deliveries(deliveries);
                info!("{indent}[run {runs}/{max}] {step} -> {left}: still fails{tried}, kept");
            } else {
                detail!("{indent}[run {runs}/{max}] {step}: passes{tried}, undone");
            }
        }
        ShrinkEvent::Confirm { run, of, failed } => detail!(
            "{indent}[confirm {run}/{of}] {}",
            if failed { "fails" } else { "passes" }
        ),
    }
}

/// What a counterexample prints: the headline, the steps and the files.
fn result_lines(r: &Report, reproduce: &str) -> Vec<String> {
    let mut out = vec![format!("counterexample: {}", shrink::output::headline(r))];
    if r.rate.failed < r.rate.runs {
        out.push(format!(
            "  flaky: the minimal plan {}; a reduction was kept when at least one of its tries failed",
            r.rate
        ));
    }
    out.push(format!(
        "  {} runs in {:.1}s; stopped because {}",
        r.runs,
        r.elapsed.as_secs_f64(),
        shrink::output::ended_words(r.ended)
    ));
    out.push(format!("  scenario: {}", r.files.scenario.display()));
    if let Some(h) = &r.files.history {
        out.push(format!("  history:  {}", h.display()));
    }
    out.push(format!("  summary:  {}", r.files.summary.display()));
    out.push(format!("  account:  {}", r.files.account.display()));
    match (&r.files.replay, &r.files.replay_skipped) {
        (Some(p), _) => out.push(format!("  curl:     {}", p.display())),
        (None, Some(why)) => out.push(format!("  curl:     not written: {why}")),
        (None, None) => {}
    }
    out.push(format!(
        "  replay:   {} --scenario {}",
        reproduce,
        r.files.scenario.display()
    ));
    out
}

fn not_reproduced(
    scenario: &Scenario,
    seed: u64,
    wanted: Option<InvariantId>,
    runs: u32,
    verdicts: &[(InvariantId, Verdict)],
) -> String {
    let what = match wanted {
        Some(id) => format!("{id} did not fail"),
        None => "no invariant failed".into(),
    };
    let mut line = format!(
        "no counterexample: {} at seed {seed}: {what} in {runs} run(s), so there is nothing to shrink",
        scenario.name
    );
    if !verdicts.is_empty() {
        let list: Vec<String> = verdicts
            .iter()
            .map(|(id, v)| format!("{} {v}", id.code()))
            .collect();
        line.push_str(&format!(" (last run: {})", list.join(", ")));
    }
    line
}

/// `run --shrink`: shrinks every scenario of `report` that failed, each
/// bounded, into `<dir>/shrink/<scenario>/`; returns the lines to print.
pub(super) async fn after_run(
    target: &Target,
    scenarios: &[Scenario],
    opts: &RunOptions,
    report: &RunReport,
    dir: &std::path::Path,
    stop: &Stop,
) -> Vec<String> {
    let mut lines = Vec::new();
    for r in &report.scenarios {
        if r.skipped.is_some() || r.check.verdict() != Verdict::Fail {
            continue;
        }
        let Some(s) = scenarios.iter().find(|s| s.name == r.name) else {
            continue;
        };
        if stop.requested() {
            break;
        }
        let out = dir.join("shrink").join(&s.name);
        let run = RunOptions {
            out_dir: out.join("runs"),
            ..opts.clone()
        };
        let sopts = ShrinkOptions {
            max_runs: shrink::RUN_SHRINK_MAX_RUNS,
            budget: shrink::RUN_SHRINK_BUDGET,
            ..ShrinkOptions::new(&out)
        };
        info!("shrinking {} …", s.name);
        match shrink_one(target, s, &run, &sopts, stop).await {
            Ok(Outcome::Counterexample(c)) => {
                lines.extend(result_lines(&c, &opts.reproduce));
            }
            Ok(Outcome::NotReproduced { runs, verdicts }) => {
                lines.push(not_reproduced(s, opts.seed, None, runs, &verdicts))
            }
            Err(e) => lines.push(format!("shrinking {} stopped: {e}", s.name)),
        }
    }
    lines
}
