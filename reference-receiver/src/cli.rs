//! The reference receiver's command line (`hookstorm-receiver`, and
//! `hookstorm receiver` in the harness binary): serve webhooks (the
//! default) or run the worker alone.
//!
//! It lives in the library so that the harness binary can start the
//! reference receiver as a real child process of itself (process scenarios
//! kill it with real signals); `main.rs` stays a thin wrapper.

use crate::config::parse_size;
use crate::failpoint::Failpoints;
use crate::listen::Listen;
use crate::store::{Keying, StoreOptions, WorkerRules};
use crate::{open_store_with, Account, Config, Defect};
use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use hookstorm::profile::signature::Secret;
use hookstorm::profile::Profile;

/// The reference webhook receiver: verify, write, acknowledge, process.
#[derive(Parser, Debug)]
#[command(
    name = "hookstorm-receiver",
    version,
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    command: Option<Cmd>,
    #[command(flatten)]
    serve: ServeArgs,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Serve webhooks and the admin API (the default).
    Serve(Box<ServeArgs>),
    /// Run only the worker against a database, e.g. beside a `--no-worker` server.
    Worker(WorkerArgs),
}

#[derive(Args, Clone, Debug)]
struct ServeArgs {
    /// Store URL: sqlite:///abs/path.db, sqlite://relative.db or postgres://...
    #[arg(
        long,
        env = "HOOKSTORM_RECEIVER_DB",
        default_value = "sqlite://hookstorm-receiver.db"
    )]
    db: String,
    /// Webhook listen address (port 0: any free one, printed), or fd:N for an inherited socket.
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: Listen,
    /// Admin API listen address (never the webhook port), or fd:N.
    #[arg(long, default_value = "127.0.0.1:8081")]
    admin_listen: Listen,
    /// Bind both addresses with SO_REUSEPORT, beside a socket that reserves the port (Unix).
    #[arg(long)]
    reuse_port: bool,
    /// Admin bearer token (random and printed when not given).
    #[arg(long, env = "HOOKSTORM_ADMIN_TOKEN", hide_env_values = true)]
    admin_token: Option<String>,
    /// An account and its secrets: NAME=SECRET[,SECRET2] (repeatable).
    #[arg(
        long = "account",
        value_name = "NAME=SECRET[,SECRET2]",
        env = "HOOKSTORM_RECEIVER_ACCOUNTS",
        hide_env_values = true,
        value_delimiter = ';'
    )]
    accounts: Vec<String>,
    /// A single secret for the single account acct_a (alternative to --account).
    #[arg(
        long,
        env = "HOOKSTORM_RECEIVER_SECRETS",
        hide_env_values = true,
        value_name = "SECRET[,SECRET2]"
    )]
    secret: Option<String>,
    /// Provider profile whose signature scheme and tolerance are verified.
    #[arg(long, default_value = "answerline")]
    profile: String,
    /// Largest accepted body (larger gets 413).
    #[arg(long, default_value = "1MiB", value_parser = parse_size)]
    max_body: usize,
    /// Run a deliberately broken variant.
    #[arg(long, value_name = "NAME")]
    defect: Option<Defect>,
    /// Do not run the worker in this process.
    #[arg(long)]
    no_worker: bool,
    /// One transaction per delivery instead of group commit (SQLite).
    #[arg(long)]
    no_group_commit: bool,
    /// Provider API base URL used by POST /reconcile.
    #[arg(long)]
    provider_url: Option<String>,
    /// Name of the environment variable holding the provider API key.
    #[arg(long, default_value = "HOOKSTORM_PROVIDER_KEY")]
    provider_key_env: String,
}

#[derive(Args, Debug)]
struct WorkerArgs {
    /// Store URL.
    #[arg(long, env = "HOOKSTORM_RECEIVER_DB")]
    db: String,
    /// Run a deliberately broken variant (the worker-side defects).
    #[arg(long, value_name = "NAME")]
    defect: Option<Defect>,
    /// Rows per batch.
    #[arg(long, default_value_t = 64)]
    batch_size: usize,
}

fn secrets(list: &str) -> Vec<Secret> {
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(Secret::new)
        .collect()
}

/// `--account NAME=SECRET[,SECRET2]` values, as (name, secrets); the
/// reference sender reads its accounts the same way.
pub(crate) fn account_specs(specs: &[String]) -> Result<Vec<(String, Vec<Secret>)>> {
    let mut out = Vec::new();
    for spec in specs {
        let (name, list) = spec
            .split_once('=')
            .with_context(|| "bad --account (hint: NAME=SECRET[,SECRET2])".to_string())?;
        let s = secrets(list);
        if name.trim().is_empty() || s.is_empty() {
            bail!("bad --account (hint: NAME=SECRET[,SECRET2])");
        }
        out.push((name.trim().to_string(), s));
    }
    Ok(out)
}

fn accounts(args: &ServeArgs) -> Result<Vec<Account>> {
    let mut out: Vec<Account> = account_specs(&args.accounts)?
        .into_iter()
        .map(|(name, s)| Account::new(&name, s))
        .collect();
    if out.is_empty() {
        if let Some(list) = &args.secret {
            out.push(Account::new("acct_a", secrets(list)));
        }
    }
    if out.is_empty() {
        bail!("no account configured (hint: --account acct_a=SECRET, --secret SECRET or HOOKSTORM_RECEIVER_SECRETS)");
    }
    Ok(out)
}

pub(crate) async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("install SIGTERM handler");
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}

async fn serve(args: ServeArgs) -> Result<()> {
    let profile = Profile::resolve(&args.profile)?;
    let failpoints = Failpoints::from_env()?;
    let mut config = Config::new(accounts(&args)?)
        .with_profile(profile)
        .with_max_body(args.max_body)
        .with_defect(args.defect)
        .with_worker(!args.no_worker)
        .with_group_commit(!args.no_group_commit)
        .with_failpoints(failpoints);
    let generated = args.admin_token.is_none();
    if let Some(t) = &args.admin_token {
        config = config.with_admin_token(t.clone());
    }
    if let Some(url) = &args.provider_url {
        let key = std::env::var(&args.provider_key_env).with_context(|| {
            format!(
                "--provider-url needs the API key in ${} (hint: --provider-key-env VAR)",
                args.provider_key_env
            )
        })?;
        config = config.with_provider(url.clone(), Secret::new(key));
    }
    let store = open_store_with(
        &args.db,
        StoreOptions {
            group_commit: config.group_commit,
            keying: Keying::for_defect(config.defect),
        },
    )
    .await
    .context("opening the store")?;
    let listener = args
        .listen
        .bind(args.reuse_port)
        .await
        .with_context(|| format!("listening on {}", args.listen))?;
    let admin = args
        .admin_listen
        .bind(args.reuse_port)
        .await
        .with_context(|| format!("listening on {}", args.admin_listen))?;
    println!(
        "webhooks: http://{}/webhooks/{{account}}",
        listener.local_addr()?
    );
    println!("admin:    http://{}", admin.local_addr()?);
    if generated {
        // A generated token must be shown or the admin API is unusable; a given one never is.
        println!("admin token (generated): {}", config.admin_token);
    }
    if let Some(d) = config.defect {
        println!("defect:   {} ({})", d.name(), d.description());
    }
    crate::run(listener, admin, store, config, shutdown_signal()).await?;
    Ok(())
}

async fn worker(args: WorkerArgs) -> Result<()> {
    let store = open_store_with(&args.db, StoreOptions::default())
        .await
        .context("opening the store")?;
    let failpoints = std::sync::Arc::new(Failpoints::from_env()?);
    let rules = WorkerRules::new(args.defect, args.batch_size, failpoints);
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let wake = std::sync::Arc::new(tokio::sync::Notify::new());
    println!("worker: draining {}", redact(&args.db));
    let task = tokio::spawn(crate::worker::run_worker(
        store,
        rules,
        std::time::Duration::from_millis(20),
        wake,
        stop_rx,
    ));
    shutdown_signal().await;
    let _ = stop_tx.send(true);
    let _ = task.await;
    Ok(())
}

/// The store URL without any password.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => {
            let creds = &url[s + 3..at];
            match creds.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..s + 3], &url[at..]),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
    }
}

/// Runs the parsed command line until SIGINT/SIGTERM.
pub async fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Some(Cmd::Serve(a)) => serve(*a).await,
        Some(Cmd::Worker(a)) => worker(a).await,
        None => serve(cli.serve).await,
    }
}

/// Runs the command line on a fresh runtime and returns the process exit code.
pub fn main_with(cli: Cli) -> i32 {
    on_runtime(run(cli))
}

/// Runs `main` on a fresh runtime: exit 0 when it ends well, 3 when it
/// fails (nothing was served: the process is unusable as a target).
pub(crate) fn on_runtime(main: impl std::future::Future<Output = Result<()>>) -> i32 {
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: {e}");
            return hookstorm::exit::TARGET_UNUSABLE;
        }
    };
    match rt.block_on(main) {
        Ok(()) => hookstorm::exit::PASS,
        Err(e) => {
            eprintln!("error: {e:#}");
            hookstorm::exit::TARGET_UNUSABLE
        }
    }
}
