//! `hookstorm run`: run scenarios against a receiver and gate on the verdict.
//!
//! With no target at all, it starts the built-in reference receiver on an
//! embedded SQLite database in a temporary folder and tests that: the main
//! job of the README, and a way to watch the harness catch a known bug
//! (`--defect NAME`).

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
    /// Target file (hookstorm.toml). Without it (and without --url) the
    /// built-in reference receiver is started and tested.
    #[arg(long)]
    target: Option<PathBuf>,
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
    /// How long to wait for the receiver to drain its inbox after a scenario.
    #[arg(long, default_value = "30s")]
    drain: HumanDuration,
    /// Built-in receiver only: switch on one deliberate bug (see `hookstorm-receiver --help`).
    #[arg(long)]
    defect: Option<String>,
    /// Built-in receiver only: its database (default: SQLite in a temp folder).
    #[arg(long)]
    receiver_db: Option<String>,
    /// No colours in the console table.
    #[arg(long)]
    no_color: bool,
}

/// Runs the scenarios and returns the verdict's exit code.
pub fn run(args: Args) -> anyhow::Result<i32> {
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
    let seed = args.seed.unwrap_or_else(rand_seed);
    let mut reproduce = String::from("hookstorm run");
    let mut embedded = None;
    let target: Target = match &args.target {
        Some(path) => {
            reproduce.push_str(&format!(" --target {}", path.display()));
            match Target::from_file(path) {
                Ok(t) => t,
                Err(e) => {
                    eprintln!("error: {e}");
                    return Ok(exit::TARGET_UNUSABLE);
                }
            }
        }
        None => {
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
            let (receiver, target) =
                hookstorm_receiver::embedded::start(defect, args.receiver_db.as_deref())
                    .await
                    .context("starting the built-in reference receiver")?;
            eprintln!(
                "built-in reference receiver{} on {} (SQLite in a temp folder)",
                args.defect
                    .as_deref()
                    .map(|d| format!(" with defect {d}"))
                    .unwrap_or_default(),
                receiver.webhook_addr()
            );
            embedded = Some(receiver);
            target
        }
    };
    eprintln!(
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
        reproduce,
    };
    let mut progress = |ev: RunEvent<'_>| match ev {
        RunEvent::ScenarioStarted { name, index, total } => eprintln!("[{index}/{total}] {name} …"),
        RunEvent::ScenarioFinished(r) => {
            eprintln!("      {} in {:.1}s", r.check.verdict(), r.duration_s)
        }
    };
    let outcome = hookstorm::run::run(&target, &scenarios, &opts, &mut progress).await;
    if let Some(r) = embedded {
        r.shutdown().await;
    }
    match outcome {
        Ok(o) => {
            println!(
                "{}",
                hookstorm::report::console_table(&o.report, !args.no_color && is_tty())
            );
            println!("reports: {}", o.dir.display());
            Ok(o.report.exit_code())
        }
        Err(hookstorm::run::RunError::Target(m)) => {
            eprintln!("error: target unusable: {m}");
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

fn is_tty() -> bool {
    use std::io::IsTerminal;
    std::io::stdout().is_terminal()
}
