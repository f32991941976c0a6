//! `hookstorm sender`: the reference sender's command line. It serves its
//! API (emit, outbox, reset, health) on one address and runs the delivery
//! worker beside it, until SIGINT or SIGTERM.
//!
//! The compressed contract comes from the environment `hookstorm sink`
//! sets for a sender it starts (`HOOKSTORM_TIME_SCALE`,
//! `HOOKSTORM_TIMEOUT_MS`, `HOOKSTORM_SEED`), the secrets from
//! `HOOKSTORM_SENDER_ACCOUNTS`, the crash points from
//! `HOOKSTORM_FAILPOINTS`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Args;

use hookstorm::profile::signature::Secret;
use hookstorm::profile::Profile;

use super::api;
use super::defect::SenderDefect;
use super::outbox::Outbox;
use super::worker::Worker;
use crate::failpoint::Failpoints;
use crate::listen::Listen;

/// Arguments of `hookstorm sender`.
#[derive(Args, Debug, Clone)]
pub struct SenderArgs {
    /// The outbox's SQLite file.
    #[arg(long, default_value = "hookstorm-sender.db")]
    db: PathBuf,
    /// Where the API listens (port 0: any free one, printed), or fd:N.
    #[arg(long, default_value = "127.0.0.1:9100")]
    listen: Listen,
    /// Bind with SO_REUSEPORT, beside a socket that reserves the port (Unix).
    #[arg(long)]
    reuse_port: bool,
    /// The profile it keeps: a built-in name or a .toml path (default: the
    /// reference sender's own, scenarios/profiles/reference-sender.toml).
    #[arg(long)]
    profile: Option<String>,
    /// An account and its secrets: NAME=SECRET[,SECRET2] (repeatable).
    #[arg(
        long = "account",
        value_name = "NAME=SECRET[,SECRET2]",
        env = "HOOKSTORM_SENDER_ACCOUNTS",
        hide_env_values = true,
        value_delimiter = ';'
    )]
    accounts: Vec<String>,
    /// Divide every wait by this.
    #[arg(long, env = "HOOKSTORM_TIME_SCALE", default_value_t = 1.0)]
    time_scale: f64,
    /// One attempt's timeout in milliseconds (default: the profile's, divided by the time scale).
    #[arg(long, env = "HOOKSTORM_TIMEOUT_MS")]
    timeout_ms: Option<u64>,
    /// Seeds the jitter.
    #[arg(long, env = "HOOKSTORM_SEED", default_value_t = 0)]
    seed: u64,
    /// API bearer token (none: the API is open).
    #[arg(long, env = "HOOKSTORM_ADMIN_TOKEN", hide_env_values = true)]
    admin_token: Option<String>,
    /// Run a deliberately broken variant.
    #[arg(long, value_name = "NAME")]
    defect: Option<SenderDefect>,
}

fn accounts(specs: &[String]) -> Result<BTreeMap<String, Vec<Secret>>> {
    let out: BTreeMap<String, Vec<Secret>> =
        crate::cli::account_specs(specs)?.into_iter().collect();
    if out.is_empty() {
        bail!("no account configured (hint: --account acct_a=SECRET or HOOKSTORM_SENDER_ACCOUNTS)");
    }
    Ok(out)
}

async fn serve(args: SenderArgs) -> Result<()> {
    let profile = match &args.profile {
        None => hookstorm::sink::reference_profile(),
        Some(p) => Profile::resolve(p)?,
    };
    if !(args.time_scale > 0.0 && args.time_scale.is_finite()) {
        bail!(
            "--time-scale {}: expected a number above 0",
            args.time_scale
        );
    }
    let timeout = match args.timeout_ms {
        Some(ms) => Duration::from_millis(ms.max(1)),
        None => profile.timeout.div_f64(args.time_scale),
    };
    let outbox = Arc::new(
        Outbox::open(&args.db)
            .with_context(|| format!("opening the outbox {}", args.db.display()))?,
    );
    let wake = Arc::new(tokio::sync::Notify::new());
    let listener = args
        .listen
        .bind(args.reuse_port)
        .await
        .with_context(|| format!("listening on {}", args.listen))?;
    println!("sender api: http://{}", listener.local_addr()?);
    if let Some(d) = args.defect {
        println!("defect: {} ({})", d.name(), d.description());
    }
    let server = hookstorm::net::httpd::Server::spawn(
        listener,
        api::handler(outbox.clone(), wake.clone(), args.admin_token.clone()),
    )?;
    let worker = Arc::new(Worker {
        outbox,
        profile,
        secrets: accounts(&args.accounts)?,
        time_scale: args.time_scale,
        timeout,
        seed: args.seed,
        defect: args.defect,
        failpoints: Arc::new(Failpoints::from_env()?),
        wake,
    });
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let task = tokio::spawn(worker.run(stop_rx));
    crate::cli::shutdown_signal().await;
    let _ = stop_tx.send(true);
    let _ = task.await;
    server.stop().await;
    Ok(())
}

/// Runs the reference sender on a fresh runtime; returns the exit code.
pub fn main_with(args: SenderArgs) -> i32 {
    crate::cli::on_runtime(serve(args))
}
