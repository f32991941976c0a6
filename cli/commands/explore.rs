//! `hookstorm explore`: random fault plans against a receiver, every
//! failure shrunk and kept in the regression folder.
//!
//! The target is chosen as `run` chooses it (the same flags; without any,
//! the built-in receiver as a child process). Progress goes to stderr, a
//! line per plan; the result (plans, coverage, each failure with the
//! commands that reproduce it, the report folder) to stdout. The exit code
//! is `run`'s over the regressions and plans: 1 when one failed.

use std::path::PathBuf;

use anyhow::Context;
use hookstorm::check::Verdict;
use hookstorm::exit;
use hookstorm::explore::{self, ExploreError, ExploreEvent, ExploreOptions, Explored};
use hookstorm::run::RunOptions;
use hookstorm::shrink::{self, ShrinkOptions};
use hookstorm::text::units::HumanDuration;

use super::resolve::Built;

/// Arguments of `hookstorm explore`: its own, then the groups it shares
/// with `run` (target, built-in receiver, run settings, regressions).
#[derive(Debug, clap::Args)]
#[command(next_help_heading = "Explore")]
pub struct Args {
    #[command(flatten)]
    target: super::target_flags::TargetFlags,
    /// How long to draw and run plans (e.g. 10m); a failure found within it
    /// is still shrunk.
    #[arg(long, default_value_t = HumanDuration(explore::DEFAULT_BUDGET))]
    budget: HumanDuration,
    /// Stop after this many plans (with --budget: whichever comes first).
    #[arg(long, value_name = "N")]
    runs: Option<u64>,
    /// Seed of the plans: the same seed and target draw the same plans.
    /// Random when absent (and printed).
    #[arg(long)]
    seed: Option<u64>,
    /// Run plan N of --seed alone (each plan's reproduce command says it).
    #[arg(long, value_name = "N", requires = "seed")]
    plan: Option<u64>,
    /// Stop after this many failing plans.
    #[arg(long, value_name = "N")]
    max_failures: Option<usize>,
    #[command(flatten)]
    regressions: super::run::RegressionFlags,
    /// Shrinking a failure: runs at most.
    #[arg(long, value_name = "N", default_value_t = shrink::RUN_SHRINK_MAX_RUNS)]
    shrink_runs: usize,
    /// Shrinking a failure: time at most.
    #[arg(long, default_value_t = HumanDuration(shrink::RUN_SHRINK_BUDGET))]
    shrink_budget: HumanDuration,
    /// Shrinking a failure: tries per candidate plan, kept when one fails.
    #[arg(long, value_name = "K", default_value_t = shrink::DEFAULT_TRIES)]
    tries: u32,
    /// Runs of each minimal plan, for "fails X of N runs".
    #[arg(long, value_name = "N", default_value_t = shrink::DEFAULT_CONFIRM)]
    confirm: u32,
    /// Status deviations that leave state intact (non-strict) fail the session.
    #[arg(long)]
    strict: bool,
    /// Reports folder; the session writes <out>/explore-<time>-<seed>/.
    #[arg(long, default_value = "reports")]
    out: PathBuf,
    /// Skip the preflight check of the target.
    #[arg(long)]
    no_preflight: bool,
    #[command(flatten)]
    run: super::run_flags::RunFlags,
    #[command(flatten)]
    builtin: super::resolve::BuiltinFlags,
}

/// Explores and returns the exit code.
pub fn run(args: Args) -> anyhow::Result<i32> {
    if let Some(problem) = args.run.problem() {
        return Ok(super::usage_error(problem));
    }
    if let Some(e) = args.builtin.conflict(&args.target) {
        return Ok(super::usage_error(e));
    }
    for (flag, n) in [
        ("--runs", args.runs),
        ("--plan", args.plan),
        ("--max-failures", args.max_failures.map(|n| n as u64)),
        ("--shrink-runs", Some(args.shrink_runs as u64)),
        ("--tries", Some(args.tries.into())),
    ] {
        if n == Some(0) {
            return Ok(super::usage_error(format!("{flag} 0: expected 1 or more")));
        }
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(run_async(args))
}

async fn run_async(args: Args) -> anyhow::Result<i32> {
    let stop = hookstorm::run::interrupt::on_signals().context("installing the Ctrl-C handler")?;
    let seed = args.seed.unwrap_or_else(super::run::rand_seed);
    let Built {
        target,
        child,
        reproduce,
    } = match super::resolve::build_target(&args.target, &args.builtin, "hookstorm run")? {
        Ok(b) => b,
        Err(code) => return Ok(code),
    };
    let explore_reproduce = reproduce.replacen("hookstorm run", "hookstorm explore", 1);
    let run = RunOptions {
        strict: args.strict,
        ..args.run.options(seed, args.out.clone(), reproduce)
    };
    let opts = ExploreOptions {
        budget: args.budget.0,
        runs: args.runs,
        plan: args.plan,
        max_failures: args.max_failures,
        regressions: args.regressions.dir(&args.target),
        preflight: !args.no_preflight,
        shrink: ShrinkOptions {
            max_runs: args.shrink_runs,
            budget: args.shrink_budget.0,
            tries: args.tries,
            confirm: args.confirm,
            ..ShrinkOptions::new(&args.out)
        },
        reproduce: explore_reproduce,
    };
    let bound = match (args.plan, args.runs) {
        (Some(n), _) => format!("plan {n} alone"),
        (None, Some(r)) => format!(
            "{r} plan(s) or {}",
            hookstorm::text::units::format_duration(opts.budget)
        ),
        (None, None) => hookstorm::text::units::format_duration(opts.budget),
    };
    info!(
        "explore: seed {seed} · profile {} · target {} · {bound}",
        target.profile.name,
        target.describe()
    );
    let words = args.target.words_for(&target);
    let max = opts.shrink.max_runs;
    let mut kinds = 0;
    let mut progress = |e: ExploreEvent<'_>| match e {
        ExploreEvent::Preflight(pf) => crate::ui::write_stderr(
            crate::ui::Verbosity::Normal,
            format_args!("{}", super::doctor::preflight_lines(pf, &words)),
        ),
        ExploreEvent::Space(s) => {
            kinds = s.kinds.len();
            info!("space: {}", s.line())
        }
        ExploreEvent::Replaying { dir, count } => info!(
            "replaying {count} regression(s) from {} first",
            dir.display()
        ),
        ExploreEvent::Replayed(r) => info!("  {}: {}", r.name, verdict_words(r)),
        ExploreEvent::Drawn { plan, draw } => info!(
            "[plan {plan}] {}",
            hookstorm::explore::output::describe(draw)
        ),
        ExploreEvent::Checked {
            report, coverage, ..
        } => info!(
            "        {} in {:.1}s · {}",
            verdict_words(report),
            report.duration_s,
            coverage.line(kinds)
        ),
        ExploreEvent::Shrinking(name) => info!("        shrinking {name} …"),
        ExploreEvent::Shrink(e) => super::shrink::print_progress(e, max, "        "),
        ExploreEvent::Found(f) => {
            info!("        {}", hookstorm::explore::output::failure_line(f))
        }
    };
    let result = explore::explore(&target, &run, &opts, &mut progress, &stop).await;
    drop(child);
    if stop.requested() {
        hookstorm::lifecycle::kill_all();
        errln!("interrupted: stopped every process the harness started");
    }
    match result {
        Ok(x) => {
            for line in result_lines(&x) {
                outln!("{line}");
            }
            Ok(x.exit_code())
        }
        Err(ExploreError::Interrupted) => Ok(exit::INTERRUPTED),
        Err(_) if stop.requested() => Ok(exit::INTERRUPTED),
        Err(ExploreError::Run(hookstorm::run::RunError::Preflight(pf))) => {
            if let Some(f) = pf.problem() {
                errln!("error: target unusable: {}", f.render(&words));
            }
            Ok(exit::TARGET_UNUSABLE)
        }
        Err(
            e @ (ExploreError::Run(hookstorm::run::RunError::Target(_)) | ExploreError::Probe(_)),
        ) => {
            errln!("error: {e}");
            Ok(exit::TARGET_UNUSABLE)
        }
        Err(e @ ExploreError::Regressions(_)) => Ok(super::usage_error(e)),
        Err(e) => Err(e.into()),
    }
}

/// `pass`, or `FAIL: I2 exactly-once fail, I3 …`.
fn verdict_words(r: &hookstorm::report::ScenarioReport) -> String {
    let bad: Vec<String> = r
        .check
        .results
        .iter()
        .filter(|x| matches!(x.verdict, Verdict::Fail | Verdict::NonStrict))
        .map(|x| format!("{} {}", x.id, x.verdict))
        .collect();
    match r.check.verdict() {
        _ if r.skipped.is_some() => "skipped".into(),
        Verdict::Pass => "pass".into(),
        Verdict::Unknown if bad.is_empty() => "unknown".into(),
        v => format!("{}: {}", v.as_str().to_uppercase(), bad.join(", ")),
    }
}

/// What the session prints at the end.
fn result_lines(x: &Explored) -> Vec<String> {
    let mut out = vec![format!(
        "explored {} in {:.1}s (seed {}); stopped: {}",
        hookstorm::explore::output::tally(x),
        x.elapsed.as_secs_f64(),
        x.seed,
        hookstorm::explore::output::ended_name(x.ended)
    )];
    out.push(format!(
        "coverage: {}",
        x.coverage.line(x.space.kinds.len())
    ));
    for l in &x.space.left_out {
        out.push(format!("left out: {} (need {})", l.what, l.need));
    }
    if let Some((dir, n)) = &x.regressions {
        let failing = x
            .report
            .scenarios
            .iter()
            .take(*n)
            .filter(|s| s.check.verdict().is_failing(x.report.strict))
            .count();
        out.push(format!(
            "regressions: {n} replayed from {} ({failing} failing)",
            dir.display()
        ));
    }
    for f in &x.failures {
        out.push(format!(
            "{} {}",
            if f.verdict == Verdict::Fail {
                "FAIL"
            } else {
                "NON-STRICT"
            },
            hookstorm::explore::output::failure_line(f)
        ));
        out.push(format!("  plan:       {}", f.reproduce));
        if let Some(r) = &f.replay {
            out.push(format!("  regression: {r}"));
        }
        if let Some(n) = &f.note {
            out.push(format!("  {n}"));
        }
    }
    out.push(format!("reports: {}", x.dir.display()));
    out
}
