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

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use hookstorm::exit;
use hookstorm::run::{RunEvent, RunOptions};
use hookstorm::scenario::Scenario;
use hookstorm::target::Target;
use hookstorm::units::HumanDuration;

/// Arguments of `hookstorm run`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    target: super::target_flags::TargetFlags,
    /// Scenario name or .toml file; repeat for several. Default: every scenario.
    #[arg(long = "scenario")]
    scenarios: Vec<String>,
    /// Leave this scenario out; repeatable.
    #[arg(long = "skip")]
    skip: Vec<String>,
    /// Folder the scenario files come from.
    #[arg(long)]
    scenario_dir: Option<PathBuf>,
    /// Seed for everything (workload, jitter, fault choices). Random when absent.
    #[arg(long)]
    seed: Option<u64>,
    /// Divide every wait by this (overrides the scenarios' own scales).
    #[arg(long)]
    time_scale: Option<f64>,
    /// Status deviations that leave state intact (non-strict) fail the run.
    #[arg(long)]
    strict: bool,
    /// Reports folder.
    #[arg(long, default_value = "reports")]
    out: PathBuf,
    /// Concurrent requests at most.
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
    /// How long to wait at most, after a scenario, for the receiver's state
    /// to settle (every acknowledged key stored, every row processed or
    /// marked failed).
    #[arg(long, default_value = "30s")]
    drain: HumanDuration,
    /// Read a state that still misses acknowledged keys once it has not
    /// changed for this long (raise it for receivers whose queue or worker
    /// pauses longer between writes).
    #[arg(long, default_value_t = HumanDuration(hookstorm::probe::DEFAULT_SETTLE))]
    settle: HumanDuration,
    /// Built-in receiver only: switch on one deliberate bug (see `hookstorm-receiver --help`).
    #[arg(long)]
    defect: Option<String>,
    /// Built-in receiver only: its database (default: SQLite in a temp folder).
    #[arg(long)]
    receiver_db: Option<String>,
    /// No colours in the console table (the same as `--color never`).
    #[arg(long)]
    no_color: bool,
}

/// Runs the scenarios and returns the verdict's exit code.
pub fn run(args: Args) -> anyhow::Result<i32> {
    if let Some(t) = args.time_scale {
        if !(t.is_finite() && t > 0.0) {
            return Ok(super::usage_error(format!(
                "--time-scale {t}: expected a number above 0, like 100"
            )));
        }
    }
    let scenarios = match select_scenarios(&args) {
        Ok(s) => s,
        Err(e) => return Ok(super::usage_error(format!("{e:#}"))),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(run_async(args, scenarios))
}

async fn run_async(args: Args, scenarios: Vec<Scenario>) -> anyhow::Result<i32> {
    // Before anything starts: a signal from now on ends the run in order.
    let stop = hookstorm::interrupt::on_signals().context("installing the Ctrl-C handler")?;
    let seed = args.seed.unwrap_or_else(rand_seed);
    let mut reproduce = String::from("hookstorm run");
    let mut child = None;
    let target: Target = match args.target.given() {
        true => {
            reproduce.push_str(&args.target.reproduce());
            match args.target.resolve() {
                Ok(t) => t,
                Err(e) => {
                    errln!("error: {e}");
                    return Ok(exit::TARGET_UNUSABLE);
                }
            }
        }
        false => {
            let defect = match args
                .defect
                .as_deref()
                .map(str::parse::<hookstorm_receiver::Defect>)
                .transpose()
            {
                Ok(d) => d,
                Err(e) => return Ok(super::usage_error(e)),
            };
            if let Some(d) = &args.defect {
                reproduce.push_str(&format!(" --defect {d}"));
            }
            let mut copts = hookstorm_receiver::child::ChildOptions::new("{hookstorm} receiver");
            copts.defect = defect;
            copts.db = args.receiver_db.clone();
            let prepared = hookstorm_receiver::child::prepare(&copts)
                .context("preparing the built-in reference receiver")?;
            info!(
                "built-in reference receiver{} as a child process on {} ({})",
                args.defect
                    .as_deref()
                    .map(|d| format!(" with defect {d}"))
                    .unwrap_or_default(),
                hookstorm::target::redact_url(&prepared.target.url),
                if args.receiver_db.is_some() {
                    "the given database"
                } else {
                    "SQLite in a temp folder"
                }
            );
            let target = prepared.target.clone();
            child = Some(prepared);
            target
        }
    };
    info!(
        "seed {seed} · profile {} · {} scenario(s) · target {}",
        target.profile.name,
        scenarios.len(),
        target.describe()
    );
    let opts = RunOptions {
        seed,
        time_scale: args.time_scale,
        default_time_scale: 100.0,
        strict: args.strict,
        out_dir: args.out.clone(),
        concurrency: args.concurrency.max(1),
        drain: args.drain.0.max(Duration::from_millis(100)),
        settle: args.settle.0.max(Duration::from_millis(100)),
        reproduce,
    };
    let mut progress = |ev: RunEvent<'_>| match ev {
        RunEvent::ScenarioStarted { name, index, total } => info!("[{index}/{total}] {name} …"),
        RunEvent::ScenarioFinished(r) => {
            info!("      {} in {:.1}s", r.check.verdict(), r.duration_s);
            for n in &r.notes {
                detail!("      note: {n}");
            }
        }
    };
    let outcome = hookstorm::run::run_until(&target, &scenarios, &opts, &mut progress, &stop).await;
    if stop.requested() {
        // The run dropped its supervisor; make sure of every group it started.
        hookstorm::lifecycle::kill_all();
        errln!("interrupted: stopped every process the harness started");
    }
    drop(child);
    match outcome {
        Ok(o) => {
            let color = !args.no_color && crate::ui::color_stdout();
            outln!("{}", hookstorm::report::console_table(&o.report, color));
            outln!("reports: {}", o.dir.display());
            Ok(o.report.exit_code())
        }
        Err(_) if stop.requested() => Ok(exit::INTERRUPTED),
        Err(hookstorm::run::RunError::Target(m)) => {
            errln!("error: target unusable: {m}");
            Ok(exit::TARGET_UNUSABLE)
        }
        Err(e) => Err(e.into()),
    }
}

fn select_scenarios(args: &Args) -> anyhow::Result<Vec<Scenario>> {
    let dir = args
        .scenario_dir
        .clone()
        .unwrap_or_else(default_scenario_dir);
    let mut picked = Vec::new();
    if args.scenarios.is_empty() {
        picked = Scenario::load_dir(&dir)?;
    } else {
        for s in &args.scenarios {
            let path = if s.ends_with(".toml") {
                PathBuf::from(s)
            } else {
                dir.join(format!("{s}.toml"))
            };
            if !path.exists() {
                let known: Vec<String> = Scenario::load_dir(&dir)
                    .map(|v| v.into_iter().map(|s| s.name).collect())
                    .unwrap_or_default();
                anyhow::bail!("no scenario {s:?} (hint: one of {})", known.join(", "));
            }
            picked.push(Scenario::from_file(&path)?);
        }
    }
    picked.retain(|s| !args.skip.contains(&s.name));
    if picked.is_empty() {
        anyhow::bail!("no scenario left to run");
    }
    Ok(picked)
}

/// `./scenarios` when run from a checkout, else the folder shipped with the source.
pub(super) fn default_scenario_dir() -> PathBuf {
    let local = Path::new("scenarios");
    if local.join("baseline.toml").exists() {
        return local.to_path_buf();
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios")
}

fn rand_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos() as u64;
    (nanos ^ (u64::from(std::process::id()) << 32)) % 1_000_000_000
}
