//! `hookstorm sink`: judge a webhook *sender* against the contract its
//! profile documents (`docs/sink.md`).
//!
//! With `--target FILE` it drives the sender that file describes (its
//! emit, outbox and reset hooks, and optionally its lifecycle); with no
//! target it starts the built-in reference sender as a child process
//! (`hookstorm sender`), and with `--defect NAME` one of its broken
//! variants, so a run shows the harness catching a known bug. It runs the
//! sender scenarios (the scenario files tagged `sender`), writes the same
//! reports as `hookstorm run`, and exits with the same codes.

use std::path::PathBuf;

use anyhow::Context;
use hookstorm::exit;
use hookstorm::scenario::sender::SenderScenario;
use hookstorm::sink::run::{SinkEvent, SinkOptions, DEFAULT_DRAIN, DEFAULT_TIME_SCALE};
use hookstorm::sink::shrink::{self, Limits};
use hookstorm::sink::target::SenderTarget;
use hookstorm::text::units::HumanDuration;
use hookstorm_receiver::sender::SenderDefect;

use super::catalog::CatalogFlags;

/// Arguments of `hookstorm sink`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The sender target file (profile, accounts, hooks, lifecycle; see
    /// docs/sink.md). Default: the built-in reference sender.
    #[arg(long)]
    target: Option<PathBuf>,
    /// Built-in reference sender only: switch on one deliberate bug (the
    /// names and what each breaks: docs/sink.md; a wrong name lists them).
    #[arg(long)]
    defect: Option<String>,
    /// Sender scenario name or .toml file; repeat for several. Default: every sender scenario.
    #[arg(long = "scenario")]
    scenarios: Vec<String>,
    /// Leave this scenario out; repeatable.
    #[arg(long = "skip")]
    skip: Vec<String>,
    /// Run only sender scenarios with this tag; repeatable.
    #[arg(long = "tag")]
    tags: Vec<String>,
    #[command(flatten)]
    catalog: CatalogFlags,
    /// Seed for everything the sink draws (events, scripts). Random when absent.
    #[arg(long)]
    seed: Option<u64>,
    /// Divide every wait of the contract by this; the sender is told it
    /// (HOOKSTORM_TIME_SCALE) and its timeout (HOOKSTORM_TIMEOUT_MS).
    #[arg(long, env = "HOOKSTORM_SINK_TIME_SCALE", default_value_t = DEFAULT_TIME_SCALE)]
    time_scale: f64,
    /// Status deviations graded non-strict fail the run.
    #[arg(long)]
    strict: bool,
    /// Reports folder.
    #[arg(long, default_value = "reports")]
    out: PathBuf,
    /// How long to wait at most, after emitting, for the sender's outbox to
    /// settle (every event delivered or dead-lettered).
    #[arg(long, default_value_t = HumanDuration(DEFAULT_DRAIN))]
    drain: HumanDuration,
    /// Where the sink listens, e.g. 127.0.0.1:9000 (replaces the target
    /// file's `listen`; default: any free port on 127.0.0.1).
    #[arg(long)]
    listen: Option<String>,
    /// After the run, cut each failing scenario down to the fewest events
    /// that still fail the same invariant, into <run>/shrink/<scenario>/.
    #[arg(long)]
    shrink: bool,
    /// No colours in the console table.
    #[arg(long)]
    no_color: bool,
}

/// Runs `hookstorm sink` and returns its exit code.
pub fn run(args: Args) -> anyhow::Result<i32> {
    if let Err(e) = hookstorm::scenario::check_time_scale(args.time_scale) {
        return Ok(super::usage_error(format!("--time-scale {e}")));
    }
    if args.target.is_some() && args.defect.is_some() {
        return Ok(super::usage_error(
            "--defect configures the built-in reference sender, which --target replaces (hint: drop --defect, or drop --target to judge the built-in sender)",
        ));
    }
    let defect = match args
        .defect
        .as_deref()
        .map(str::parse::<SenderDefect>)
        .transpose()
    {
        Ok(d) => d,
        Err(e) => return Ok(super::usage_error(e)),
    };
    let scenarios = match select(&args) {
        Ok(s) => s,
        Err(e) => return Ok(super::usage_error(format!("{e:#}"))),
    };
    super::keys::block_on_with_key(|key| run_async(args, defect, scenarios, key))
}

async fn run_async(
    args: Args,
    defect: Option<SenderDefect>,
    scenarios: Vec<SenderScenario>,
    key: Option<hookstorm::report::dsse::SigningKey>,
) -> anyhow::Result<i32> {
    let stop = hookstorm::run::interrupt::on_signals().context("installing the Ctrl-C handler")?;
    let seed = args.seed.unwrap_or_else(super::run::rand_seed);
    let mut reproduce = String::from("hookstorm sink");
    let (mut target, child) = match &args.target {
        Some(path) => {
            reproduce.push_str(&format!(" --target {}", path.display()));
            match SenderTarget::from_file(path) {
                Ok(t) => (t, None),
                Err(e) => {
                    errln!("error: {e}");
                    return Ok(exit::TARGET_UNUSABLE);
                }
            }
        }
        None => {
            if let Some(d) = defect {
                reproduce.push_str(&format!(" --defect {d}"));
            }
            let c = hookstorm_cli::builtin::prepare_sender("{hookstorm} sender", defect)
                .context("preparing the built-in reference sender")?;
            (c.target.clone(), Some(c))
        }
    };
    if let Some(listen) = &args.listen {
        target.listen = listen.clone();
        reproduce.push_str(&format!(" --listen {listen}"));
    }
    if args.drain.0 != DEFAULT_DRAIN {
        let d = args.drain.to_string();
        let d = if d.contains(' ') { format!("'{d}'") } else { d };
        reproduce.push_str(&format!(" --drain {d}"));
    }
    let opts = SinkOptions {
        seed,
        time_scale: args.time_scale,
        strict: args.strict,
        out_dir: args.out.clone(),
        drain: args.drain.0,
        reproduce,
    };
    info!(
        "seed {seed} · profile {} · {} sender scenario(s) · {}",
        target.profile.name,
        scenarios.len(),
        target.describe()
    );
    info!(
        "the sender keeps a time scale of {} (waits divided by it) and a timeout of {}{}",
        opts.time_scale,
        hookstorm::text::units::format_duration(opts.timeout(&target)),
        if target.lifecycle.is_some() {
            " (HOOKSTORM_TIME_SCALE, HOOKSTORM_TIMEOUT_MS in its environment)"
        } else {
            " (start it with them: the harness does not start it)"
        }
    );
    let mut progress = |ev: SinkEvent<'_>| match ev {
        SinkEvent::Started(name, i, n) => info!("[{i}/{n}] {name} …"),
        SinkEvent::Finished(r) => {
            info!("      {} in {:.1}s", r.check.verdict(), r.duration_s);
            for n in &r.notes {
                detail!("      note: {n}");
            }
        }
    };
    let outcome = hookstorm::sink::run::run(&target, &scenarios, &opts, &mut progress, &stop).await;
    if let Ok(o) = &outcome {
        let verdict = Some(o.report.verdict().to_string());
        let code = Some(o.report.exit_code());
        super::keys::sign(&o.dir, key.as_ref(), "sink", verdict, code)?;
    }
    let mut shrunk = Vec::new();
    if let (true, Ok(o)) = (args.shrink, &outcome) {
        for (s, r) in scenarios.iter().zip(&o.report.scenarios) {
            let Some(failed) = r
                .check
                .results
                .iter()
                .find(|x| x.verdict == hookstorm::check::Verdict::Fail)
            else {
                continue;
            };
            let out = o.dir.join("shrink").join(&s.name);
            info!("shrinking {} ({}) …", s.name, failed.id);
            match shrink::shrink(&target, s, failed.id, &opts, &out, Limits::default(), &stop).await {
                Ok(Some(m)) => shrunk.push(format!(
                    "counterexample: {}: {} fails with {} event(s) (from {}), {} runs; replay: {} --scenario {}",
                    s.name,
                    m.invariant,
                    m.to,
                    m.from,
                    m.runs,
                    opts.reproduce,
                    m.file.display()
                )),
                Ok(None) => shrunk.push(format!("{}: the failure did not repeat; nothing to shrink", s.name)),
                Err(e) => shrunk.push(format!("{}: shrinking stopped: {e}", s.name)),
            }
        }
    }
    if stop.requested() {
        hookstorm::lifecycle::kill_all();
        errln!("interrupted: stopped every process the harness started");
    }
    drop(child);
    match outcome {
        Ok(o) => Ok(super::print_run(&o.report, &o.dir, &shrunk, args.no_color)),
        Err(_) if stop.requested() => Ok(exit::INTERRUPTED),
        Err(hookstorm::run::RunError::Target(m)) => {
            errln!("error: sender unusable: {m}");
            Ok(exit::TARGET_UNUSABLE)
        }
        Err(e) => Err(e.into()),
    }
}

/// The sender scenarios the flags select.
fn select(args: &Args) -> anyhow::Result<Vec<SenderScenario>> {
    let dir = args.catalog.dir();
    let all = SenderScenario::load_dir(&dir)?;
    let names = || {
        all.iter()
            .map(|s| s.name.clone())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut picked = Vec::new();
    if args.scenarios.is_empty() {
        picked = all.clone();
    }
    for s in &args.scenarios {
        if s.ends_with(".toml") {
            picked.push(SenderScenario::from_file(std::path::Path::new(s))?);
        } else {
            match all.iter().find(|x| &x.name == s) {
                Some(x) => picked.push(x.clone()),
                None => anyhow::bail!(
                    "no sender scenario {s:?} (hint: {})",
                    hookstorm::text::suggest::closest(s, all.iter().map(|x| x.name.as_str()))
                        .map(|n| format!("did you mean {n}?"))
                        .unwrap_or_else(|| format!("one of {}", names()))
                ),
            }
        }
    }
    if let Some(bad) = args
        .skip
        .iter()
        .find(|n| !all.iter().any(|s| &s.name == *n))
    {
        anyhow::bail!(
            "--skip: no sender scenario {bad:?} (hint: one of {})",
            names()
        );
    }
    picked.retain(|s| !args.skip.contains(&s.name));
    if !args.tags.is_empty() {
        picked.retain(|s| args.tags.iter().any(|t| s.has_tag(t)));
    }
    if picked.is_empty() {
        anyhow::bail!(
            "no sender scenario left to run (hint: `hookstorm list --tag sender` shows them)"
        );
    }
    Ok(picked)
}
