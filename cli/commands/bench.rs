//! `hookstorm bench`: how much the receiver takes before it breaks, and
//! whether it stays correct while it does; and `hookstorm null-receiver`,
//! the verify-and-204 server that bench, oha and wrk all hit for raw
//! sender comparisons.
//!
//! Targets: a target file, a plain `--url` with `--secret-env`, the
//! built-in null receiver (`--null`), or, with none of them, the built-in
//! reference receiver on SQLite in a temporary folder. A target file's
//! processes are started as `hookstorm run` starts them
//! ([`hookstorm::run::start`]: its `[lifecycle]`, ready before the load,
//! its `[database]` proxy) and stopped after the check; the report names
//! them.
//!
//! The built-in reference receiver runs as a child process (`hookstorm
//! receiver serve`, its worker inside), not in this one: the bench's peak memory (`peak_rss_mib`) is the harness's
//! alone, and the receiver's CPU, database and memory are its own, as any
//! receiver's are.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use hookstorm::bench::{self, mix::Mix, BenchOptions, Rate};
use hookstorm::exit;
use hookstorm::profile::signature::Secret;
use hookstorm::profile::Profile;
use hookstorm::text::units::HumanDuration;

/// Arguments of `hookstorm bench`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Target file (hookstorm.toml). Without it, --url or --null, the
    /// built-in reference receiver is started and benched.
    #[arg(long, conflicts_with = "url")]
    target: Option<PathBuf>,
    /// Receiver URL (`{account}` is replaced); needs --secret-env. No state
    /// probe, so no check.
    #[arg(long)]
    url: Option<String>,
    /// Environment variable holding the secret(s) for --url, comma separated.
    #[arg(long)]
    secret_env: Option<String>,
    /// Sender profile for --url and --null: a built-in name or a .toml file.
    #[arg(long, default_value = hookstorm::profile::DEFAULT_PROFILE)]
    profile: String,
    /// Open loop: constant arrival rate (`5000/s`), or a ramp (`1000..20000/s`).
    /// Without it: closed loop, as fast as the receiver answers.
    #[arg(long)]
    rate: Option<Rate>,
    /// Connections (closed loop: requests in flight).
    #[arg(long, default_value_t = 50)]
    connections: usize,
    /// Measured time (a ramp's steps share it); 10s unless --requests is
    /// given, then unbounded (at most a day).
    #[arg(long)]
    duration: Option<HumanDuration>,
    /// End once this many deliveries were sent after the warmup (a ramp's
    /// steps and a sharded bench's shards share it): the same work from run
    /// to run, whatever the machine's speed.
    #[arg(long, value_name = "N")]
    requests: Option<u64>,
    /// Time before measuring starts (sent and checked, not measured).
    #[arg(long, default_value = "2s")]
    warmup: HumanDuration,
    /// Steps of a ramp.
    #[arg(long, default_value_t = 5)]
    steps: usize,
    /// A ramp step breaks when its p99 exceeds this.
    #[arg(long, default_value = "100ms")]
    break_p99: HumanDuration,
    /// A ramp step breaks when more than this share of requests fail.
    #[arg(long, default_value_t = 0.01)]
    break_errors: f64,
    /// Share of deliveries sent again later (same id and body).
    #[arg(long, default_value_t = 0.05)]
    duplicates: f64,
    /// Share of deliveries sent as two concurrent copies.
    #[arg(long, default_value_t = 0.02)]
    concurrent_duplicates: f64,
    /// Share of deliveries in reordered pairs (newer task first).
    #[arg(long, default_value_t = 0.05)]
    reorder: f64,
    /// Do not check the receiver's state afterwards.
    #[arg(long)]
    no_check: bool,
    /// Bench the built-in null receiver (or, with --url, treat the target as
    /// one): raw sender throughput, no check.
    #[arg(long)]
    null: bool,
    /// Seed of the deliveries. Random when absent.
    #[arg(long)]
    seed: Option<u64>,
    /// How long to wait for the receiver to drain before checking.
    #[arg(long, default_value = "60s")]
    drain: HumanDuration,
    /// Built-in receiver only: its database (default: SQLite in a temp folder).
    #[arg(long)]
    receiver_db: Option<String>,
    /// Carry out a catalog scenario's process and database faults under
    /// the load, with the check after: `kill-under-load`,
    /// `kill-between-commit-and-ack`, `worker-crash`, `db-outage`, … (or a
    /// .toml file); repeatable. What failed is sent again, as a provider
    /// retries. Needs the processes the bench starts: the built-in receiver,
    /// or --target with [lifecycle] (and [database] for a cut).
    #[arg(long = "fault", value_name = "SCENARIO")]
    faults: Vec<String>,
    #[command(flatten)]
    catalog: super::catalog::CatalogFlags,
    /// Reports folder.
    #[arg(long, default_value = "reports")]
    out: PathBuf,
    /// Sender threads: the workers of the sending runtime (default: one per core).
    #[arg(long)]
    threads: Option<usize>,
    /// Print bench.json to stdout instead of the console summary.
    #[arg(long)]
    json: bool,
    /// A limit the bench must keep, as k6 writes it: 'p99<100ms',
    /// 'errors<1%', 'rate>5000/s' (latencies p50 p90 p95 p99 p99.9 max mean);
    /// repeatable. One that does not hold fails the exit code (1).
    #[arg(long = "threshold", value_name = "EXPR")]
    thresholds: Vec<bench::threshold::Threshold>,
    /// Be shard I of N (`2/8`), sending 1/N of --rate with keys of its own;
    /// `hookstorm merge` checks the union. `--shard 8` takes the index from
    /// $HOOKSTORM_SHARD_INDEX or $JOB_COMPLETION_INDEX (Kubernetes).
    #[arg(long, env = "HOOKSTORM_SHARD")]
    shard: Option<hookstorm::shard::Shard>,
    /// Wait until this time before sending (RFC 3339, or +30s from now), so
    /// shards start together.
    #[arg(long, env = "HOOKSTORM_START_AT")]
    start_at: Option<hookstorm::shard::StartAt>,
}

/// Arguments of `hookstorm null-receiver`.
#[derive(Debug, clap::Args)]
pub struct NullArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8088")]
    listen: SocketAddr,
    /// Sender profile whose scheme is verified.
    #[arg(long, default_value = hookstorm::profile::DEFAULT_PROFILE)]
    profile: String,
    /// Environment variable holding the accepted secret(s), comma separated.
    #[arg(long, default_value = "HOOKSTORM_SECRET")]
    secret_env: String,
    /// Worker threads (default: one per core).
    #[arg(long)]
    threads: Option<usize>,
}

fn runtime(threads: Option<usize>) -> anyhow::Result<tokio::runtime::Runtime> {
    let mut b = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = threads {
        b.worker_threads(n.max(1));
    }
    Ok(b.enable_all().build()?)
}

fn secrets_from_env(var: &str) -> Result<Vec<Secret>, String> {
    let v = std::env::var(var).map_err(|_| {
        format!("environment variable {var} is not set (hint: export {var}=whsec_…)")
    })?;
    let list: Vec<Secret> = v
        .split(',')
        .filter(|s| !s.is_empty())
        .map(Secret::new)
        .collect();
    if list.is_empty() {
        return Err(format!("environment variable {var} holds no secret"));
    }
    Ok(list)
}

/// Serves the null receiver until interrupted.
pub fn null_receiver(args: NullArgs) -> anyhow::Result<i32> {
    let profile = match Profile::resolve(&args.profile) {
        Ok(p) => p,
        Err(e) => return Ok(super::usage_error(e)),
    };
    let secrets = match secrets_from_env(&args.secret_env) {
        Ok(s) => s,
        Err(e) => return Ok(super::usage_error(e)),
    };
    let rt = runtime(args.threads)?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(args.listen)
            .await
            .with_context(|| format!("cannot listen on {}", args.listen))?;
        info!(
            "null receiver on http://{}/ (profile {}; verifies, answers 204, stores nothing)",
            listener.local_addr()?,
            profile.name
        );
        bench::null::serve(listener, profile, secrets, async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await;
        Ok(exit::PASS)
    })
}

/// Runs a bench and returns its exit code (the checker's verdict when checked).
pub fn run(args: Args) -> anyhow::Result<i32> {
    let rt = runtime(None)?;
    rt.block_on(run_async(args))
}

/// The catalog scenarios `--fault` names and their process and database
/// faults, or what is wrong with them.
fn fault_specs(
    args: &Args,
) -> Result<(Vec<String>, Vec<hookstorm::fault_spec::FaultSpec>), String> {
    if args.faults.is_empty() {
        return Ok((Vec::new(), Vec::new()));
    }
    if args.null || args.url.is_some() {
        return Err("--fault needs the receiver's processes and its state: the built-in receiver or --target FILE, not --url or --null".into());
    }
    if args.shard.is_some() {
        return Err("--fault kills the receiver every shard shares: run it without --shard".into());
    }
    if args.no_check {
        return Err("--fault needs the check after the load: drop --no-check".into());
    }
    let dir = args.catalog.dir();
    let (mut from, mut specs) = (Vec::new(), Vec::new());
    for name in &args.faults {
        let path = super::catalog::find(&dir, name)?;
        let s = hookstorm::scenario::Scenario::from_file(&path).map_err(|e| e.to_string())?;
        if let Some(why) = bench::faults::refuse(&s.name, &s.faults) {
            return Err(why);
        }
        specs.extend(s.faults.into_iter().filter(|f| f.is_process_fault()));
        from.push(s.name);
    }
    Ok((from, specs))
}

fn random_secret() -> Secret {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    let seed = (nanos as u64) ^ u64::from(std::process::id()).rotate_left(32);
    hookstorm::fault::tamper::derived_secret(seed, "null-receiver")
}

/// What a bench sends to, and what was started for it (stopped after).
struct Receiver {
    url: String,
    profile: Profile,
    secrets: BTreeMap<String, Vec<Secret>>,
    accounts: Vec<String>,
    probe: Option<hookstorm::state::probe::Probe>,
    desc: String,
    no_check_reason: String,
    processes: Vec<String>,
    held: Held,
}

impl Receiver {
    /// The receiver target `t` describes (a target file's, or the
    /// built-in one's), checked through `probe` unless that is `None`
    /// (`--no-check`).
    fn of_target(
        t: hookstorm::target::Target,
        probe: Option<hookstorm::state::probe::Probe>,
        desc: String,
        processes: Vec<String>,
        held: Held,
    ) -> Receiver {
        Receiver {
            accounts: t.accounts(),
            url: t.url,
            profile: t.profile,
            secrets: t.secrets,
            probe,
            desc,
            no_check_reason: "--no-check".into(),
            processes,
            held,
        }
    }
}

/// What a bench started and stops once it is over.
#[derive(Default)]
struct Held {
    /// The built-in reference receiver, its prepared target and its logs.
    builtin: Option<(
        hookstorm::lifecycle::Supervisor,
        hookstorm_cli::builtin::ChildTarget,
        tempfile::TempDir,
    )>,
    /// A target's processes (its `[lifecycle]`, its database proxy).
    started: Option<(hookstorm::lifecycle::Supervisor, tempfile::TempDir)>,
    /// The built-in null receiver's stop.
    null_stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Held {
    /// The supervisor of what was started, if anything was.
    fn supervisor(&mut self) -> Option<&mut hookstorm::lifecycle::Supervisor> {
        match (&mut self.builtin, &mut self.started) {
            (Some((sup, _, _)), _) | (None, Some((sup, _))) => Some(sup),
            _ => None,
        }
    }

    /// Stops everything.
    async fn stop(self) {
        if let Some(tx) = self.null_stop {
            let _ = tx.send(());
        }
        if let Some((supervisor, prepared, logs)) = self.builtin {
            supervisor.shutdown().await;
            drop((prepared, logs));
        }
        if let Some((supervisor, logs)) = self.started {
            supervisor.shutdown().await;
            drop(logs);
        }
    }
}

/// The receiver the flags name (a target file, a URL or the null
/// receiver, else the built-in reference receiver), started as `run`
/// starts it; `Err(code)` is an error already printed.
async fn receiver(
    args: &Args,
    fault_from: &[String],
    fault_specs: &[hookstorm::fault_spec::FaultSpec],
) -> anyhow::Result<Result<Receiver, i32>> {
    if let Some(path) = &args.target {
        target_receiver(args, path, fault_from, fault_specs).await
    } else if args.url.is_some() || args.null {
        url_receiver(args).await
    } else {
        builtin_receiver(args, fault_specs).await
    }
}

/// The receiver of a target file: its `[lifecycle]`, `[database]` proxy
/// and provider API started as `run` starts them (none for a shard).
async fn target_receiver(
    args: &Args,
    path: &Path,
    fault_from: &[String],
    fault_specs: &[hookstorm::fault_spec::FaultSpec],
) -> anyhow::Result<Result<Receiver, i32>> {
    let t = match hookstorm::target::Target::from_file(path) {
        Ok(t) => t,
        Err(e) => {
            errln!("error: {e}");
            return Ok(Err(exit::TARGET_UNUSABLE));
        }
    };
    if let Some(why) = fault_from
        .iter()
        .find_map(|name| hookstorm::fault::nemesis::missing_control(name, fault_specs, &t))
    {
        errln!("error: --fault {}: {why}", fault_from.join(", "));
        return Ok(Err(exit::TARGET_UNUSABLE));
    }
    // What `run` starts: the [lifecycle] processes (ready before the
    // load), the [database] proxy, the provider API.
    let logs = tempfile::Builder::new()
        .prefix("hookstorm-bench-")
        .tempdir()
        .context("a folder for the receiver's logs")?;
    let start = async {
        if args.shard.is_some() {
            // Shards share one receiver: none of them starts it.
            if t.lifecycle.is_some() {
                info!("a shard does not start the target's [lifecycle]: start the receiver the shards share once, outside them");
            }
            return t
                .probe()
                .map(|p| (p, None))
                .map_err(|e| anyhow::anyhow!("{e}"));
        }
        hookstorm::run::start(&t, logs.path())
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))
    };
    let mut processes = Vec::new();
    let mut held = Held::default();
    let target_probe = match start.await {
        Ok((p, sup)) => {
            if let Some(sup) = sup {
                processes = bench::processes(&t, &sup);
                for p in &processes {
                    info!("started {p}");
                }
                held.started = Some((sup, logs));
            }
            p
        }
        Err(e) => {
            errln!("error: {e}");
            return Ok(Err(exit::TARGET_UNUSABLE));
        }
    };
    let probe = (!(args.no_check || args.null)).then_some(target_probe);
    let desc = t.describe();
    Ok(Ok(Receiver::of_target(t, probe, desc, processes, held)))
}

/// A receiver at `--url` (with `--secret-env`), or the built-in null
/// receiver (`--null`), started here: no state to check either way.
async fn url_receiver(args: &Args) -> anyhow::Result<Result<Receiver, i32>> {
    let p = match Profile::resolve(&args.profile) {
        Ok(p) => p,
        Err(e) => return Ok(Err(super::usage_error(e))),
    };
    let list = match (&args.secret_env, &args.url) {
        (Some(var), _) => match secrets_from_env(var) {
            Ok(s) => s,
            Err(e) => return Ok(Err(super::usage_error(e))),
        },
        (None, None) => vec![random_secret()],
        (None, Some(_)) => {
            return Ok(Err(super::usage_error(
                "--url needs --secret-env VAR (the secret the receiver verifies)",
            )))
        }
    };
    let accounts = vec!["acct_a".to_string()];
    let mut held = Held::default();
    let u = match &args.url {
        Some(u) => {
            if let Err(e) = super::target_flags::url_flag(u) {
                return Ok(Err(super::usage_error(e)));
            }
            u.clone()
        }
        None => {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
            let addr = listener.local_addr()?;
            let (tx, rx) = tokio::sync::oneshot::channel::<()>();
            held.null_stop = Some(tx);
            tokio::spawn(bench::null::serve(
                listener,
                p.clone(),
                list.clone(),
                async {
                    let _ = rx.await;
                },
            ));
            info!("built-in null receiver on {addr}");
            format!("http://{addr}/webhooks/{{account}}")
        }
    };
    let desc = hookstorm::target::redact_url(&u);
    let (url, profile) = (u, p);
    let secrets = BTreeMap::from([(accounts[0].clone(), list)]);
    let probe = None;
    let processes = Vec::new();
    let no_check_reason = if args.null {
        "null receiver: it stores nothing".into()
    } else {
        "no state probe for a plain --url (hint: use --target FILE)".into()
    };
    Ok(Ok(Receiver {
        url,
        profile,
        secrets,
        accounts,
        probe,
        desc,
        no_check_reason,
        processes,
        held,
    }))
}

/// The built-in reference receiver as a child process (with a proxy and
/// a worker of its own under `--fault`, as `run` runs it).
async fn builtin_receiver(
    args: &Args,
    fault_specs: &[hookstorm::fault_spec::FaultSpec],
) -> anyhow::Result<Result<Receiver, i32>> {
    let mut copts = hookstorm_cli::builtin::ChildOptions::new("{hookstorm} receiver");
    copts.db = args.receiver_db.clone();
    // Without --fault nothing is injected below HTTP: no proxy in the
    // way, and the worker inside the receiver (one process, one
    // writer). With it, the receiver runs as `run` runs it.
    if fault_specs.is_empty() {
        copts.proxy = false;
        copts.separate_worker = false;
    }
    let prepared = hookstorm_cli::builtin::prepare(&copts)
        .context("preparing the built-in reference receiver")?;
    let t = prepared.target.clone();
    let logs = tempfile::tempdir().context("a folder for the receiver's logs")?;
    let life = t
        .lifecycle
        .clone()
        .expect("the built-in child target has a lifecycle");
    let supervisor = hookstorm::lifecycle::Supervisor::start(life, t.database.clone(), logs.path())
        .await
        .context("starting the built-in reference receiver")?;
    info!(
        "built-in reference receiver as a child process on {} ({})",
        hookstorm::target::redact_url(&t.url),
        if args.receiver_db.is_some() {
            "the given database"
        } else {
            "SQLite in a temp folder"
        }
    );
    let processes = vec![format!(
        "built-in reference receiver{}",
        supervisor
            .pid(hookstorm::lifecycle::Role::Receiver)
            .map_or_else(String::new, |p| format!(" (pid {p})"))
    )];
    let held = Held {
        builtin: Some((supervisor, prepared, logs)),
        ..Held::default()
    };
    // A big state takes longer to serve than a scenario's: the probe
    // gets the drain window, not the default 10 s.
    let probe = if args.no_check {
        None
    } else {
        Some(
            t.probe()?
                .with_timeout(args.drain.0.max(hookstorm::state::probe::DEFAULT_TIMEOUT)),
        )
    };
    let desc = "built-in reference receiver".to_string();
    Ok(Ok(Receiver::of_target(t, probe, desc, processes, held)))
}

async fn run_async(args: Args) -> anyhow::Result<i32> {
    // Before anything starts: a signal from now on ends the bench in order
    // (bench.json for what ran, the built-in receiver and its folder removed).
    let stop = hookstorm::run::interrupt::on_signals().context("installing the Ctrl-C handler")?;
    let key = match super::keys::signing_key() {
        Ok(k) => k,
        Err(code) => return Ok(code),
    };
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos() as u64
            % 1_000_000_000
    });
    if args.shard.is_some() && args.target.is_none() && args.url.is_none() {
        return Ok(super::usage_error(
            "--shard needs the one receiver every shard sends to: --target FILE or --url URL",
        ));
    }
    // The faults under load: read before anything starts.
    let (fault_from, fault_specs) = match fault_specs(&args) {
        Ok(f) => f,
        Err(e) => return Ok(super::usage_error(e)),
    };
    let r = match receiver(&args, &fault_from, &fault_specs).await? {
        Ok(r) => r,
        Err(code) => return Ok(code),
    };
    let (opts, mut held) = bench_options(&args, seed, r);
    if let Some(s) = args.shard {
        info!("shard {s}: 1/{} of the rate, keys of its own", s.count);
    }
    let bound = match (opts.requests, args.duration) {
        (Some(n), Some(d)) => format!(
            "{n} requests or {}",
            hookstorm::text::units::format_duration(d.0)
        ),
        (Some(n), None) => format!("{n} requests"),
        (None, _) => hookstorm::text::units::format_duration(opts.duration),
    };
    info!(
        "seed {seed} · {} · {} connections · {bound} (+{} warmup)",
        opts.rate
            .map(|r| format!("open loop {r}"))
            .unwrap_or_else(|| "closed loop".into()),
        opts.connections,
        hookstorm::text::units::format_duration(opts.warmup)
    );
    if !fault_specs.is_empty() {
        info!("faults under load: {}", fault_from.join(", "));
    }
    let faults = match held.supervisor() {
        Some(sup) if !fault_specs.is_empty() => Some(bench::faults::BenchFaults {
            sup,
            from: fault_from.clone(),
            specs: fault_specs.clone(),
        }),
        _ => None,
    };
    let outcome = bench::run_under(&opts, &stop, faults).await;
    held.stop().await;
    let mut outcome = match outcome {
        Ok(o) => o,
        Err(e @ bench::BenchError::Config(_)) => return Ok(super::usage_error(e)),
        Err(e @ bench::BenchError::Target(_)) => {
            errln!("error: {e}");
            return Ok(exit::TARGET_UNUSABLE);
        }
        Err(e) => return Err(e.into()),
    };
    if !args.thresholds.is_empty() && !outcome.result.interrupted {
        outcome.result.thresholds = args
            .thresholds
            .iter()
            .map(|t| outcome.result.hold(t))
            .collect();
        bench::result::rewrite(&outcome.dir, &outcome.result).map_err(anyhow::Error::msg)?;
    }
    seal_and_sign(&outcome, key.as_ref())?;
    let thresholds_broken = outcome.result.thresholds.iter().any(|t| !t.passed);
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&outcome.result)?);
    } else {
        out!("{}", outcome.result.console());
        outln!(
            "reports: {} · {}",
            outcome.dir.join("bench.json").display(),
            outcome.dir.join("report.html").display()
        );
    }
    if outcome.result.interrupted {
        errln!("interrupted: bench.json holds what ran");
        return Ok(exit::INTERRUPTED);
    }
    let code = match &outcome.result.check {
        Some(v) => v.check.verdict().exit_code(false),
        None => exit::PASS,
    };
    // A broken threshold fails a bench the checker passed.
    Ok(if thresholds_broken && code == exit::PASS {
        exit::FAIL
    } else {
        code
    })
}

/// Seals the bench's folder (`SHA256SUMS`) and, with a key in the
/// environment, signs it.
fn seal_and_sign(
    outcome: &bench::BenchOutcome,
    key: Option<&hookstorm::report::dsse::SigningKey>,
) -> anyhow::Result<()> {
    bench::result::seal(&outcome.dir)
        .map_err(|e| anyhow::anyhow!("sealing {}: {e}", outcome.dir.display()))?;
    let verdict = outcome.result.check.as_ref().map(|c| c.verdict.to_string());
    super::keys::sign(&outcome.dir, key, "bench", verdict, None)
}

/// The bench's options: the flags, the seed, and the receiver `r` found
/// (whose processes, when hookstorm started them, are held apart).
fn bench_options(args: &Args, seed: u64, r: Receiver) -> (BenchOptions, Held) {
    let mix = Mix {
        duplicates: args.duplicates,
        concurrent_duplicates: args.concurrent_duplicates,
        reorder: args.reorder,
    };
    let opts = BenchOptions {
        url: r.url,
        profile: r.profile,
        accounts: r.accounts,
        secrets: r.secrets,
        rate: args.rate,
        connections: args.connections,
        threads: args.threads.unwrap_or_else(bench::default_threads),
        duration: match (&args.duration, args.requests) {
            (Some(d), _) => d.0,
            (None, None) => bench::DEFAULT_DURATION,
            (None, Some(_)) => bench::COUNTED_DURATION,
        },
        requests: args.requests,
        warmup: args.warmup.0,
        ramp_steps: args.steps,
        p99_limit: args.break_p99.0,
        error_limit: args.break_errors,
        mix,
        seed,
        probe: r.probe,
        no_check_reason: r.no_check_reason,
        drain: args.drain.0.max(Duration::from_millis(100)),
        out_dir: args.out.clone(),
        progress: is_tty() && crate::ui::verbosity() > crate::ui::Verbosity::Quiet,
        target_desc: r.desc,
        shard: args.shard,
        start_at: args.start_at,
        processes: r.processes,
    };
    (opts, r.held)
}

fn is_tty() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal()
}
