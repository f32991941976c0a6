//! `hookstorm run`: run scenarios against a receiver and gate on the verdict.
//!
//! With no target at all, it starts the built-in reference receiver on an
//! embedded SQLite database in a temporary folder and tests that: the main
//! job of the README, and a way to watch the harness catch a known bug
//! (`--defect NAME`). The built-in receiver runs as a child process of
//! this binary (`hookstorm receiver`, with a separate worker), so the
//! process scenarios can kill it for real. Ctrl-C (or SIGTERM) stops every
//! process the harness started, writes the reports of the scenarios that
//! finished (marked interrupted), points `latest` at them and exits 130.
//!
//! Before the first scenario a preflight checks the target (exit 3 within
//! seconds on a configuration mistake, with the fix in the words of the
//! flags or file it was given with); `--preflight-only` (or `hookstorm
//! doctor`) runs just that. Scenarios are selected on the command line and
//! in the target file's `[scenarios]` (names, tags); one the target cannot
//! run is skipped and listed, which fails the run only with `--require-all`.

use std::path::PathBuf;

use anyhow::Context;
use hookstorm::exit;
use hookstorm::run::preflight::{Preflight, Words};
use hookstorm::run::{RunEvent, RunOptions};
use hookstorm::scenario::Scenario;

use super::resolve::{build_target, Built, BuiltinFlags, DEFAULT_TIME_SCALE};
use super::select::Selection;
use super::target_flags::TargetFlags;
use hookstorm::text::units::HumanDuration;

/// Arguments of `hookstorm run`: its own, then the groups it shares with
/// `doctor` (target, scenarios, built-in receiver).
#[derive(Debug, clap::Args)]
#[command(next_help_heading = "Run")]
pub struct Args {
    /// Stop at the first failing scenario (the same as --max-fail 1).
    #[arg(long)]
    fail_fast: bool,
    /// Stop after this many failing scenarios.
    #[arg(long, value_name = "N")]
    max_fail: Option<usize>,
    /// Stop the whole run after this long (e.g. 10m); the scenario it cuts short is unknown.
    #[arg(long)]
    timeout: Option<HumanDuration>,
    /// Only check the target (as `hookstorm doctor` does), send no scenario.
    #[arg(long)]
    preflight_only: bool,
    /// Skip the preflight check of the target.
    #[arg(long)]
    no_preflight: bool,
    /// Seed for everything (workload, jitter, fault choices). Random when absent.
    #[arg(long)]
    seed: Option<u64>,
    /// Status deviations that leave state intact (non-strict) fail the run.
    #[arg(long)]
    strict: bool,
    /// Reports folder: the run writes its own folder in it
    /// (<out>/<run-id>/) and points <out>/latest at that.
    #[arg(long, default_value = "reports")]
    out: PathBuf,
    #[command(flatten)]
    run: super::run_flags::RunFlags,
    /// No colours in the console table (the same as `--color never`).
    #[arg(long)]
    no_color: bool,
    /// stdout: the console table (human), or one JSON line per scenario,
    /// per finding and for the run (json).
    #[arg(long, value_enum, default_value_t)]
    message_format: super::message::MessageFormat,
    /// Be shard I of N (`2/8`): run every N-th scenario from the I-th, each
    /// against this shard's own receiver; `hookstorm merge` unions them.
    /// `--shard 8` takes the index from $HOOKSTORM_SHARD_INDEX or
    /// $JOB_COMPLETION_INDEX (Kubernetes).
    #[arg(long, env = "HOOKSTORM_SHARD")]
    shard: Option<hookstorm::shard::Shard>,
    /// Wait until this time before the first scenario (RFC 3339, or +30s).
    #[arg(long, env = "HOOKSTORM_START_AT")]
    start_at: Option<hookstorm::shard::StartAt>,
    /// After the run, shrink each failing scenario to a minimal plan that
    /// still fails (bounded per scenario; see `hookstorm shrink`), into
    /// <run>/shrink/<scenario>/.
    #[arg(long)]
    shrink: bool,
    #[command(flatten)]
    target: TargetFlags,
    #[command(flatten)]
    select: Selection,
    #[command(flatten)]
    builtin: BuiltinFlags,
    #[command(flatten)]
    regressions: RegressionFlags,
}

/// Where the regression folder is, for `run` and `explore`.
#[derive(Debug, Clone, Default, clap::Args)]
#[command(next_help_heading = "Regressions")]
pub(super) struct RegressionFlags {
    /// The regression folder (failures `hookstorm explore` found, shrunk),
    /// replayed before anything else. Default: hookstorm-regressions/
    /// beside the --target file, else in the current directory.
    #[arg(long, value_name = "DIR")]
    regressions: Option<PathBuf>,
    /// Leave the regression folder alone.
    #[arg(long)]
    no_regressions: bool,
}

impl RegressionFlags {
    /// The folder, unless `--no-regressions`.
    pub(super) fn dir(&self, target: &TargetFlags) -> Option<PathBuf> {
        if self.no_regressions {
            return None;
        }
        Some(self.regressions.clone().unwrap_or_else(|| {
            hookstorm::explore::regressions::default_dir(target.target.as_deref())
        }))
    }
}

/// Runs the scenarios and returns the verdict's exit code.
pub fn run(args: Args) -> anyhow::Result<i32> {
    if let Some(problem) = args.run.problem() {
        return Ok(super::usage_error(problem));
    }
    if args.preflight_only {
        return super::doctor::run(super::doctor::Args {
            target: args.target,
            select: args.select,
            builtin: args.builtin,
        });
    }
    if args.max_fail == Some(0) {
        return Ok(super::usage_error(
            "--max-fail 0: expected 1 or more (--fail-fast is --max-fail 1)",
        ));
    }
    let (mut scenarios, require_all) = match args.select.for_target(&args.target) {
        Ok(picked) => picked,
        Err(code) => return Ok(code),
    };
    // The regression folder's scenarios first: a bug explore once found is
    // checked on every run until it is fixed.
    if let Some(dir) = args.regressions.dir(&args.target) {
        let found = match hookstorm::explore::regressions::load(&dir) {
            Ok(found) => found,
            Err(e) => return Ok(super::usage_error(format!("regression folder: {e}"))),
        };
        let mut fresh: Vec<Scenario> = found
            .into_iter()
            .filter(|r| !scenarios.iter().any(|s| s.name == r.name))
            .collect();
        if !fresh.is_empty() {
            info!("{} regression(s) from {} first", fresh.len(), dir.display());
        }
        fresh.append(&mut scenarios);
        scenarios = fresh;
    }
    let scenarios = match args.shard {
        Some(s) => s.take(scenarios),
        None => scenarios,
    };
    super::keys::block_on_with_key(|key| run_async(args, scenarios, require_all, key))
}

async fn run_async(
    args: Args,
    scenarios: Vec<Scenario>,
    require_all: bool,
    key: Option<hookstorm::report::dsse::SigningKey>,
) -> anyhow::Result<i32> {
    // Before anything starts: a signal from now on ends the run in order.
    let stop = hookstorm::run::interrupt::on_signals().context("installing the Ctrl-C handler")?;
    let seed = args.seed.unwrap_or_else(rand_seed);
    let Built {
        target,
        child,
        reproduce,
    } = match build_target(&args.target, &args.builtin, "hookstorm run")? {
        Ok(b) => b,
        Err(code) => return Ok(code),
    };
    info!(
        "seed {seed} · profile {} · {} scenario(s) · target {}",
        target.profile.name,
        scenarios.len(),
        target.describe()
    );
    info!(
        "{}",
        hookstorm::run::estimate::Estimate::of(
            &target.profile,
            &scenarios,
            args.run.time_scale,
            DEFAULT_TIME_SCALE
        )
        .line()
    );
    if let (true, Some(p)) = (args.target.given(), &target.provider) {
        // With `[provider] listen = "127.0.0.1:0"` this is where it landed.
        info!("provider API on {}", p.url());
    }
    // Run ids are time and seed, the same for every shard of a run: each
    // shard reports into a folder of its own.
    let out_dir = match args.shard {
        Some(s) => args.out.join(format!("shard{}of{}", s.index, s.count)),
        None => args.out.clone(),
    };
    let opts = RunOptions {
        strict: args.strict,
        preflight: !args.no_preflight,
        max_fail: if args.fail_fast {
            Some(1)
        } else {
            args.max_fail
        },
        timeout: args.timeout.map(|t| t.0),
        require_all,
        ..args.run.options(seed, out_dir, reproduce)
    };
    let words = args.target.words_for(&target);
    let json_lines = args.message_format == super::message::MessageFormat::Json;
    let mut progress = |ev: RunEvent<'_>| match ev {
        RunEvent::ScenarioStarted { name, index, total } => info!("[{index}/{total}] {name} …"),
        RunEvent::ScenarioFinished(r) if json_lines => {
            for line in super::message::scenario_lines(r, opts.require_all) {
                super::message::emit(&line);
            }
        }
        RunEvent::ScenarioFinished(r) => match &r.skipped {
            Some(skip) => info!("      skipped: {}", skip.reason),
            None => {
                info!("      {} in {:.1}s", r.check.verdict(), r.duration_s);
                for n in &r.notes {
                    detail!("      note: {n}");
                }
            }
        },
        RunEvent::Preflight(pf) => crate::ui::write_stderr(
            crate::ui::Verbosity::Normal,
            format_args!("{}", super::doctor::preflight_lines(pf, &words)),
        ),
    };
    if let Some(at) = args.start_at {
        tokio::select! {
            _ = at.wait() => {}
            _ = stop.wait() => {}
        }
    }
    let started_at = chrono::Utc::now().to_rfc3339();
    let outcome = hookstorm::run::run_until(&target, &scenarios, &opts, &mut progress, &stop).await;
    if let Ok(o) = &outcome {
        let manifest = args
            .shard
            .map(|s| shard_manifest(s, seed, &target, &scenarios, started_at, o));
        finish_folder(o, manifest, key.as_ref())?;
    }
    // `--shrink`: each failing scenario cut down, against the same target.
    let mut shrunk = Vec::new();
    if let (true, Ok(o), false) = (args.shrink, &outcome, stop.requested()) {
        shrunk =
            super::shrink::after_run(&target, &scenarios, &opts, &o.report, &o.dir, &stop).await;
    }
    if stop.requested() {
        // The run dropped its supervisor; make sure of every group it started.
        hookstorm::lifecycle::kill_all();
        errln!("interrupted: stopped every process the harness started");
    }
    drop(child);
    conclude(
        outcome,
        &shrunk,
        json_lines,
        stop.requested(),
        &words,
        args.no_color,
    )
}

/// What a run leaves in its folder after its reports: a shard's manifest,
/// then the signature over both (with a key in the environment).
fn finish_folder(
    o: &hookstorm::run::RunOutcome,
    manifest: Option<hookstorm::shard::ShardManifest>,
    key: Option<&hookstorm::report::dsse::SigningKey>,
) -> anyhow::Result<()> {
    if let Some(m) = manifest {
        m.write(&o.dir)
            .with_context(|| format!("writing {}", o.dir.display()))?;
    }
    let verdict = Some(o.report.verdict().to_string());
    super::keys::sign(&o.dir, key, "run", verdict, Some(o.report.exit_code()))
}

/// Prints how the run ended and returns its exit code.
fn conclude(
    outcome: Result<hookstorm::run::RunOutcome, hookstorm::run::RunError>,
    shrunk: &[String],
    json_lines: bool,
    stopped: bool,
    words: &Words,
    no_color: bool,
) -> anyhow::Result<i32> {
    match outcome {
        Ok(o) if json_lines => {
            for line in shrunk {
                info!("{line}");
            }
            super::message::emit(&super::message::run_line(&o.report, &o.dir));
            Ok(o.report.exit_code())
        }
        Ok(o) => Ok(super::print_run(&o.report, &o.dir, shrunk, no_color)),
        Err(_) if stopped => Ok(exit::INTERRUPTED),
        Err(hookstorm::run::RunError::Target(m)) => {
            errln!("error: target unusable: {m}");
            Ok(exit::TARGET_UNUSABLE)
        }
        Err(hookstorm::run::RunError::Preflight(pf)) => {
            preflight_failed(&pf, words);
            Ok(exit::TARGET_UNUSABLE)
        }
        Err(e) => Err(e.into()),
    }
}

/// What a shard of a run leaves beside its report for `hookstorm merge`.
fn shard_manifest(
    shard: hookstorm::shard::Shard,
    seed: u64,
    target: &hookstorm::target::Target,
    scenarios: &[Scenario],
    started_at: String,
    o: &hookstorm::run::RunOutcome,
) -> hookstorm::shard::ShardManifest {
    hookstorm::shard::ShardManifest {
        kind: "run".into(),
        shard,
        run_seed: seed,
        seed,
        status: if o.report.interrupted {
            hookstorm::shard::ShardStatus::Interrupted
        } else {
            hookstorm::shard::ShardStatus::Finished
        },
        profile: target.profile.name.clone(),
        target: target.describe(),
        started_at,
        phase_start_ms: None,
        scenarios: scenarios.iter().map(|s| s.name.clone()).collect(),
        planned: scenarios.len() as u64,
        history: "history.jsonl".into(),
        unchecked: None,
        version: env!("CARGO_PKG_VERSION").to_string(),
    }
}

/// Says why the preflight found the target unusable (the preflight's own
/// lines, shown unless `-q`, already hold its FAIL line: once is enough).
fn preflight_failed(pf: &Preflight, words: &Words) {
    match pf.problem() {
        Some(_) if crate::ui::verbosity() >= crate::ui::Verbosity::Normal => {
            errln!("error: target unusable: fix what the preflight's FAIL line says")
        }
        Some(f) => errln!("error: target unusable: {}", f.render(words)),
        None => errln!("error: target unusable"),
    }
}

/// A seed for a run that names none: time and pid, below a billion.
pub(super) fn rand_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos() as u64;
    (nanos ^ (u64::from(std::process::id()) << 32)) % 1_000_000_000
}
