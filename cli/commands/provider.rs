//! `hookstorm provider`: serve the provider API on its own, for people who
//! test their reconciliation job by hand.
//!
//! The tasks come from a JSON task book (`--tasks`) or from a scenario's
//! plan (`--scenario NAME --seed N`), in which case they go through their
//! lifecycle (QUEUED, PROCESSING, sometimes back to QUEUED, then COMPLETED
//! or FAILED) over the next minutes, compressed by `--time-scale`. The
//! submitted task ids are printed, one JSON line per account, in the shape
//! of the receiver's `tasks-submitted` setup parameters.

use std::path::PathBuf;

use anyhow::Context;
use hookstorm::profile::signature::Secret;
use hookstorm::provider::{book, Provider, TaskBook};
use hookstorm::scenario::Scenario;
use hookstorm::text::units::HumanDuration;

/// Arguments of `hookstorm provider`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:7070")]
    listen: String,
    /// Environment variable holding the API key callers must send as `Bearer`.
    #[arg(long, default_value = "HOOKSTORM_PROVIDER_KEY")]
    key_env: String,
    /// A task book (JSON, as `--dump` prints it).
    #[arg(long, conflicts_with = "scenario")]
    tasks: Option<PathBuf>,
    /// Build the tasks from this scenario's plan (name or .toml file).
    #[arg(long)]
    scenario: Option<String>,
    /// Seed of the plan.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Divide the tasks' lifecycles by this.
    #[arg(long, default_value_t = 10.0)]
    time_scale: f64,
    #[command(flatten)]
    catalog: super::catalog::CatalogFlags,
    /// Print the task book as JSON and exit.
    #[arg(long)]
    dump: bool,
    /// Stop after this long (default: run until interrupted).
    #[arg(long = "for")]
    duration: Option<HumanDuration>,
}

/// Serves the provider API until interrupted.
pub fn run(args: Args) -> anyhow::Result<i32> {
    if let Err(e) = hookstorm::scenario::check_time_scale(args.time_scale) {
        return Ok(super::usage_error(format!("--time-scale {e}")));
    }
    let book = match load_book(&args) {
        Ok(b) => b,
        Err(e) => return Ok(super::usage_error(format!("{e:#}"))),
    };
    if args.dump {
        outln!("{}", serde_json::to_string_pretty(&book)?);
        return Ok(hookstorm::exit::PASS);
    }
    let Ok(key) = std::env::var(&args.key_env) else {
        return Ok(super::usage_error(format!(
            "environment variable {} is not set (hint: export {}=<api key the receiver sends>)",
            args.key_env, args.key_env
        )));
    };
    let provider = Provider::bind(&args.listen, Secret::new(key))
        .with_context(|| format!("listening on {}", args.listen))?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(async {
        provider.serve()?;
        let finals = book.final_tasks().len();
        let submitted = book.submitted();
        provider.load(book);
        eprintln!(
            "provider API on {} (key from ${}) · {finals} task(s) final now; the others finish over time",
            provider.url(),
            args.key_env
        );
        eprintln!("submitted tasks, per account (POST them to your receiver's setup):");
        for (account, ids) in submitted {
            outln!(
                "{}",
                serde_json::json!({ "account": account, "task_ids": ids })
            );
        }
        match args.duration {
            Some(d) => tokio::time::sleep(d.0).await,
            None => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
        provider.stop().await;
        Ok::<_, anyhow::Error>(hookstorm::exit::PASS)
    })
}

fn load_book(args: &Args) -> anyhow::Result<TaskBook> {
    if let Some(path) = &args.tasks {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let mut book: TaskBook = serde_json::from_str(&text)
            .with_context(|| format!("{}: not a task book", path.display()))?;
        if book.time_scale <= 0.0 {
            book.time_scale = args.time_scale;
        }
        return Ok(book);
    }
    let Some(name) = &args.scenario else {
        anyhow::bail!("give --tasks FILE or --scenario NAME");
    };
    let path = super::catalog::find(&args.catalog.dir(), name).map_err(anyhow::Error::msg)?;
    let scenario = Scenario::from_file(&path)?;
    let seed = hookstorm::run::scenario_seed(args.seed, &scenario.name);
    let plan = hookstorm::workload::plan(&scenario, seed);
    Ok(book::from_plan(&plan, args.time_scale, false))
}
