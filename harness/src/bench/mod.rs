//! `hookstorm bench`: load and correctness at once.
//!
//! Load tools measure speed and know nothing of signatures or state; the
//! bench sends real, freshly signed deliveries of the profile (with a share
//! of duplicates, concurrent duplicates and reordered pairs), records every
//! attempt in a history, and afterwards runs the same checker as `run` on
//! the receiver's state, so the verdict is part of the result.
//!
//! Every profile is spoken as `run` speaks it: the deliveries are made in
//! the answerline shape and dressed per request by the functions `run`'s
//! sender uses (see [`load`]'s encoder), so a receiver that passes `run`
//! accepts them. A bench cannot pass on nothing: a refused delivery is
//! recorded dead and fails I9, I1 over no acknowledged key is unknown
//! ([`no_vacuous_pass`]), and a bench whose refusals pass a share says so
//! while it runs ([`progress`]).
//!
//! - [`mix`]: the deliveries, deterministic from the seed, made on the fly.
//! - [`load`]: open loop (constant arrival rate) and closed loop workers.
//! - [`latency`]: HdrHistogram recording, corrected for coordinated omission.
//! - [`result`]: `bench.json` and `report.html`, ramp break detection, console summary.
//! - [`threshold`]: `--threshold` limits (`p99<100ms`, `errors<1%`, `rate>5000/s`).
//! - [`progress`]: the live progress line.
//! - [`null`]: the null receiver (verify, answer 204, store nothing).

pub mod faults;
pub mod latency;
pub mod load;
pub mod mix;
pub mod null;
pub mod progress;
pub mod result;
pub mod threshold;

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use crate::check::{check_files, CheckOptions, InvariantId};
use crate::history::{Event, RunHeader};
use crate::profile::signature::Secret;
use crate::profile::Profile;
use crate::run::interrupt::Stop;
use crate::state::probe::Probe;

use latency::Percentiles;
use load::{LineSink, LoadTarget, Pace, Phase, WorkerStats};
use mix::{Generator, Mix};
use result::{BenchResult, Machine, Ramp, RampStep};

/// The `--rate` flag: a constant rate or a ramp.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rate {
    /// Requests per second.
    Fixed(f64),
    /// From `from` to `to` requests per second, in steps.
    Ramp {
        /// First step's rate.
        from: f64,
        /// Last step's rate.
        to: f64,
    },
}

/// A rate flag could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("expected RATE like 5000/s or a ramp like 1000..20000/s, got {0:?}")]
pub struct RateParseError(pub String);

impl FromStr for Rate {
    type Err = RateParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || RateParseError(s.to_string());
        let t = s.trim();
        let t = t.strip_suffix("/s").unwrap_or(t);
        let num = |x: &str| -> Result<f64, RateParseError> {
            let v: f64 = x.trim().replace('_', "").parse().map_err(|_| err())?;
            if v.is_finite() && v > 0.0 {
                Ok(v)
            } else {
                Err(err())
            }
        };
        match t.split_once("..") {
            Some((a, b)) => {
                let (from, to) = (num(a)?, num(b)?);
                if to < from {
                    return Err(err());
                }
                Ok(Rate::Ramp { from, to })
            }
            None => Ok(Rate::Fixed(num(t)?)),
        }
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rate::Fixed(r) => write!(f, "{r}/s"),
            Rate::Ramp { from, to } => write!(f, "{from}..{to}/s"),
        }
    }
}

/// How to bench.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// Receiver URL; `{account}` is replaced per delivery.
    pub url: String,
    /// Sender profile.
    pub profile: Profile,
    /// Accounts to spread deliveries over.
    pub accounts: Vec<String>,
    /// Secrets per account.
    pub secrets: BTreeMap<String, Vec<Secret>>,
    /// Open loop rate or ramp; `None` is closed loop.
    pub rate: Option<Rate>,
    /// Connections.
    pub connections: usize,
    /// Sender threads (the workers of one runtime).
    pub threads: usize,
    /// Measured time (the whole ramp for a ramp).
    pub duration: Duration,
    /// Unmeasured time before it.
    pub warmup: Duration,
    /// End once this many deliveries were sent after the warmup
    /// (`--requests`; a ramp's steps share it, and a shard takes its share),
    /// if that comes before the duration.
    pub requests: Option<u64>,
    /// Steps of a ramp.
    pub ramp_steps: usize,
    /// A ramp step breaks when its p99 exceeds this.
    pub p99_limit: Duration,
    /// A ramp step breaks when its error share exceeds this.
    pub error_limit: f64,
    /// The delivery mix.
    pub mix: Mix,
    /// Seed of the deliveries.
    pub seed: u64,
    /// Reads the receiver's state; `None` skips the check.
    pub probe: Option<Probe>,
    /// Why there is no probe (shown instead of a verdict).
    pub no_check_reason: String,
    /// How long to wait for the inbox to drain before checking.
    pub drain: Duration,
    /// Reports folder; the bench writes `<out>/<run-id>/bench.json`.
    pub out_dir: PathBuf,
    /// Show the live progress line.
    pub progress: bool,
    /// What is benched, for the report (no secrets).
    pub target_desc: String,
    /// This process is one shard of several: it sends its share of the
    /// rate with keys of its own, leaves the check to `hookstorm merge`,
    /// and writes what the merge needs (see [`crate::shard`]).
    pub shard: Option<crate::shard::Shard>,
    /// Wait until this time before sending (shards start together).
    pub start_at: Option<crate::shard::StartAt>,
    /// The processes started for the bench (by whoever started them), for
    /// the report.
    pub processes: Vec<String>,
}

/// The bench could not run.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// Bad options.
    #[error("{0}")]
    Config(String),
    /// The target cannot be used.
    #[error("target unusable: {0}")]
    Target(String),
    /// Reports or history could not be written.
    #[error("cannot write reports: {0}")]
    Io(String),
}

/// A finished bench.
#[derive(Debug)]
pub struct BenchOutcome {
    /// The result (also in `bench.json`).
    pub result: BenchResult,
    /// `<out>/<run-id>`.
    pub dir: PathBuf,
}

fn summarize(t: &WorkerStats) -> (Percentiles, Percentiles, f64) {
    let err = if t.requests == 0 {
        0.0
    } else {
        t.failed() as f64 / t.requests as f64
    };
    let corrected = Percentiles::of(&t.latency.corrected);
    // Closed loop records one view only (the send is the intended time).
    let uncorrected = if t.latency.uncorrected.is_empty() {
        corrected
    } else {
        Percentiles::of(&t.latency.uncorrected)
    };
    (corrected, uncorrected, err)
}

/// One sender thread per available core.
pub fn default_threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// Why an open-loop phase fell short of its rate, or `None` when it did not.
fn shortfall(rate: f64, r: &load::PhaseResult, connections: usize) -> Option<String> {
    (!r.rate_reached()).then(|| {
        format!(
            "{rate}/s asked, {} of {} requests due were sent ({:.0}/s) before the duration ran out: \
             the sender, the {connections} connection(s) or the receiver cannot go that fast \
             (hint: a lower --rate, more --connections, or closed loop without --rate for the maximum)",
            r.sent, r.due, r.sent as f64 / r.measured.as_secs_f64().max(1e-3)
        )
    })
}

/// How long a bench measures when neither `--duration` nor `--requests`
/// says.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(10);

/// The bound on a bench that `--requests` ends and no `--duration` bounds.
pub const COUNTED_DURATION: Duration = Duration::from_secs(24 * 3600);

/// Checks the options a bench cannot run with; the error is a usage error.
pub fn validate(opts: &BenchOptions) -> Result<(), BenchError> {
    opts.mix.validate().map_err(BenchError::Config)?;
    let bad = |m: &str| Err(BenchError::Config(m.to_string()));
    if opts.connections == 0 {
        return bad("--connections must be 1 or more");
    }
    if opts.threads == 0 {
        return bad("--threads must be 1 or more");
    }
    if opts.duration.is_zero() {
        return bad("--duration must be above 0, like 10s");
    }
    if opts.requests == Some(0) {
        return bad("--requests must be 1 or more");
    }
    if let (Some(n), Some(Rate::Ramp { .. })) = (opts.requests, opts.rate) {
        if n < opts.ramp_steps as u64 {
            return bad("--requests must be at least --steps for a ramp (the steps share it)");
        }
    }
    if matches!(opts.rate, Some(Rate::Ramp { .. })) && opts.ramp_steps < 2 {
        return bad("--steps must be 2 or more for a ramp");
    }
    if opts.p99_limit.is_zero() {
        return bad("--break-p99 must be above 0, like 100ms");
    }
    if !(opts.error_limit.is_finite() && (0.0..=1.0).contains(&opts.error_limit)) {
        return bad("--break-errors must be a share between 0 and 1, like 0.01");
    }
    if opts.drain.is_zero() {
        return bad("--drain must be above 0, like 60s");
    }
    if opts.accounts.is_empty() {
        return bad("no account to send for");
    }
    Ok(())
}

/// Runs a bench and writes `bench.json` (and points `<out>/latest` at it).
pub async fn run(opts: &BenchOptions) -> Result<BenchOutcome, BenchError> {
    run_until(opts, &Stop::never()).await
}

/// Runs a bench until its duration ran out or `stop` is requested; a
/// stopped bench skips the check and writes `bench.json` for what ran,
/// marked `interrupted`.
pub async fn run_until(opts: &BenchOptions, stop: &Stop) -> Result<BenchOutcome, BenchError> {
    run_under(opts, stop, None).await
}

/// [`run_until`] with process and database faults carried out under the
/// load ([`faults`]).
pub async fn run_under(
    opts: &BenchOptions,
    stop: &Stop,
    mut faults: Option<faults::BenchFaults<'_>>,
) -> Result<BenchOutcome, BenchError> {
    validate(opts)?;
    if faults.is_some() && opts.probe.is_none() {
        return Err(BenchError::Config(format!(
            "--fault needs the check after the load, and this bench has none ({})",
            opts.no_check_reason
        )));
    }
    let started_at = crate::history::now_rfc3339();
    let mut run_id = format!(
        "{}-bench-{:08x}",
        chrono::Utc::now().format("%Y%m%d-%H%M%S"),
        opts.seed as u32
    );
    if let Some(s) = opts.shard {
        run_id.push_str(&format!("-shard{}of{}", s.index, s.count));
    }
    let share = |rate: f64| opts.shard.map_or(rate, |s| s.rate(rate));
    let requests = opts
        .requests
        .map(|n| opts.shard.map_or(n, |s| s.count_share(n)));
    let (run_id, dir) = crate::report::folder::create_unique(&opts.out_dir, &run_id)
        .map_err(|e| BenchError::Io(format!("{}: {e}", opts.out_dir.display())))?;
    let target = LoadTarget::resolve(
        &opts.url,
        opts.profile.clone(),
        &opts.accounts,
        &opts.secrets,
    )
    .await
    .map_err(|e| BenchError::Target(e.to_string()))?;
    reachable(&target).await?;
    let notes = reset(opts).await;
    let history_path = dir.join("history.jsonl");
    let header = Event::Run(RunHeader {
        run_id: run_id.clone(),
        seed: opts.seed,
        profile: opts.profile.name.clone(),
        time_scale: 1.0,
        started_at: started_at.clone(),
        version: env!("CARGO_PKG_VERSION").to_string(),
    });
    let sink =
        LineSink::create(&history_path, &header).map_err(|e| BenchError::Io(e.to_string()))?;
    let gen = match opts.shard {
        Some(s) => Generator::for_shard(opts.seed, opts.mix, opts.accounts.len(), s),
        None => Generator::new(opts.seed, opts.mix, opts.accounts.len()),
    };
    let mut manifest = opts
        .shard
        .map(|shard| shard_manifest(opts, shard, &started_at));
    if let Some(m) = &manifest {
        m.write(&dir)
            .map_err(|e| BenchError::Io(format!("{}: {e}", dir.display())))?;
    }
    if let Some(at) = opts.start_at {
        tokio::select! {
            _ = at.wait() => {}
            _ = stop.wait() => {}
        }
    }
    let phase_start_ms = chrono::Utc::now().timestamp_millis();
    let progress = progress::Progress::start(opts.progress);
    let refusals = load::Refusals::default();

    let mut short = Vec::new();
    let under = faults.as_ref().map(|_| {
        Arc::new(load::UnderFaults::new(Arc::new(
            crate::fault::gauge::TrafficGauge::new(),
        )))
    });
    let (done_tx, done_rx) = tokio::sync::watch::channel(false);
    // What the nemesis expects the measured time to carry, from the rate
    // it saw: the count asked, else the rate over the duration.
    let expect = |rate: f64| match requests {
        Some(n) => n.min(usize::MAX as u64) as usize,
        None => (rate * opts.duration.as_secs_f64()).min(1e12) as usize,
    };
    let nemesis = async {
        match (faults.as_mut(), &under, &opts.probe) {
            (Some(f), Some(u), Some(probe)) => Some(
                faults::carry_out(
                    f,
                    u,
                    &sink,
                    &dir,
                    opts.seed,
                    probe,
                    expect,
                    opts.warmup,
                    done_rx,
                )
                .await,
            ),
            _ => None,
        }
    };
    let load = async {
        let kit = PhaseKit {
            target: &target,
            gen: &gen,
            sink: &sink,
            refusals: &refusals,
            under: under.as_ref(),
            stop,
            progress: &progress,
        };
        let loaded = load_phases(opts, &kit, &mut short, requests, share).await;
        let _ = done_tx.send(true);
        loaded
    };
    let ((mode, tally, measured, ramp, target_rate, counted_out), acted) =
        tokio::join!(load, nemesis);
    let faults_result = match (&faults, &acted, &under) {
        (Some(f), Some(a), Some(u)) => Some(faults::result(f, a, u)),
        _ => None,
    };
    progress.stop();
    sink.finish().map_err(|e| BenchError::Io(e.to_string()))?;
    crate::limits::memory::give_back_freed();

    let interrupted = stop.requested();
    let not_exercised = faults_result
        .as_ref()
        .and_then(|f| f.not_exercised.as_deref());
    let (check, check_skipped) = judge(
        opts,
        &dir,
        &history_path,
        refusals.first(),
        not_exercised,
        interrupted,
    )
    .await;
    let check_skipped = match (check_skipped, notes.is_empty()) {
        (Some(s), false) => Some(format!("{s}; {}", notes.join("; "))),
        (s, _) => s,
    };

    let (latency, latency_uncorrected, error_rate) = summarize(&tally);
    let result = BenchResult {
        run_id: run_id.clone(),
        started_at,
        mode: mode.into(),
        target: opts.target_desc.clone(),
        profile: opts.profile.name.clone(),
        seed: opts.seed,
        connections: opts.connections,
        duration_s: measured.as_secs_f64(),
        warmup_s: opts.warmup.as_secs_f64(),
        requests_asked: requests,
        requests_reached: requests.map(|_| counted_out),
        target_rate,
        requests: tally.requests,
        warmup_requests: tally.warmup_requests,
        achieved_rate: tally.requests as f64 / measured.as_secs_f64().max(1e-3),
        latency,
        latency_uncorrected,
        statuses: tally.statuses.clone(),
        errors: tally.errors.clone(),
        error_rate,
        throughput: tally.per_second.clone(),
        errors_per_second: tally.failed_per_second.clone(),
        latency_curve: result::latency_curve(&tally.latency),
        thresholds: Vec::new(),
        ramp,
        mix: opts.mix,
        refused: tally.refused,
        first_refusal: refusals.first().cloned(),
        processes: opts.processes.clone(),
        faults: faults_result,
        check,
        check_skipped,
        machine: Machine::detect(),
        peak_rss_mib: result::peak_rss_mib(),
        history: Some("history.jsonl".into()),
        rate_unreachable: (!short.is_empty()).then(|| short.join("; ")),
        interrupted,
        version: env!("CARGO_PKG_VERSION").to_string(),
    };
    write_results(
        opts,
        &dir,
        &run_id,
        &result,
        &tally,
        manifest.as_mut(),
        phase_start_ms,
    )?;
    Ok(BenchOutcome { result, dir })
}

/// A shard's manifest as it starts: what `hookstorm merge` needs of it.
fn shard_manifest(
    opts: &BenchOptions,
    shard: crate::shard::Shard,
    started_at: &str,
) -> crate::shard::ShardManifest {
    crate::shard::ShardManifest {
        kind: "bench".into(),
        shard,
        run_seed: opts.seed,
        seed: shard.seed(opts.seed),
        status: crate::shard::ShardStatus::Running,
        profile: opts.profile.name.clone(),
        target: opts.target_desc.clone(),
        started_at: started_at.to_string(),
        phase_start_ms: None,
        scenarios: vec![load::SCENARIO.to_string()],
        planned: 0,
        history: "history.jsonl".into(),
        unchecked: opts.probe.is_none().then(|| opts.no_check_reason.clone()),
        version: env!("CARGO_PKG_VERSION").to_string(),
    }
}

/// The bench's check, or why there is none: skipped when interrupted, for
/// a shard (the merge checks), or without a probe. A fault that met
/// nothing (`not_exercised`) turns the passes unknown: it proves nothing.
async fn judge(
    opts: &BenchOptions,
    dir: &std::path::Path,
    history: &std::path::Path,
    first_refusal: Option<&load::Refusal>,
    not_exercised: Option<&str>,
    interrupted: bool,
) -> (Option<result::Correctness>, Option<String>) {
    match &opts.probe {
        _ if interrupted => (None, Some("interrupted (Ctrl-C or SIGTERM)".to_string())),
        _ if opts.shard.is_some() => (
            None,
            Some("a shard: `hookstorm merge` checks the union of the shards' histories against the state read once after all of them finished".to_string()),
        ),
        None => (None, Some(opts.no_check_reason.clone())),
        Some(probe) => match check(probe, opts, dir, history, first_refusal).await {
            Ok(mut v) => {
                if let Some(why) = not_exercised {
                    v.check.not_exercised(why);
                    v.verdict = v.check.verdict();
                }
                (Some(v), None)
            }
            Err(why) => (None, Some(why)),
        },
    }
}

/// Whether the receiver takes a connection within 2 s: a bench of a
/// receiver that is not there ends before it starts, saying so.
async fn reachable(target: &LoadTarget) -> Result<(), BenchError> {
    match tokio::time::timeout(
        Duration::from_secs(2),
        tokio::net::TcpStream::connect(target.addr),
    )
    .await
    .map_err(|_| "no connection within 2s".to_string())
    .and_then(|r| r.map_err(|e| e.to_string()))
    {
        Ok(_) => Ok(()),
        Err(e) => Err(BenchError::Target(format!(
            "{} is unreachable: {e} (hint: is the receiver running and listening there?)",
            target.addr
        ))),
    }
}

/// Empties the receiver's state before the load, when this bench is the
/// one to do it; what went wrong or was left undone, as notes.
async fn reset(opts: &BenchOptions) -> Vec<String> {
    let mut notes = Vec::new();
    // Shards share one store: only shard 0 empties it, and only while the
    // common start is still ahead; the others, or shard 0 once the start
    // passed, would wipe rows another shard already sent.
    let resets = match opts.shard {
        None => true,
        Some(s) if s.count == 1 => true,
        Some(s) => s.index == 0 && opts.start_at.is_some_and(|a| !a.remaining().is_zero()),
    };
    if opts.shard.is_some_and(|s| s.index == 0) && !resets {
        notes.push(
            "the state was not reset: shard 0 resets only before a --start-at still ahead".into(),
        );
    }
    if let (Some(p), true) = (&opts.probe, resets) {
        if let Err(e) = p.reset().await {
            notes.push(format!("reset failed: {e}"));
        }
    }
    notes
}

/// Writes `bench.json` and `report.html` into `dir`, a shard's latency
/// file and finished manifest, and points `<out>/latest` at the run.
fn write_results(
    opts: &BenchOptions,
    dir: &std::path::Path,
    run_id: &str,
    result: &BenchResult,
    tally: &WorkerStats,
    manifest: Option<&mut crate::shard::ShardManifest>,
    phase_start_ms: i64,
) -> Result<(), BenchError> {
    let json = serde_json::to_vec_pretty(result).map_err(|e| BenchError::Io(e.to_string()))?;
    let path = dir.join("bench.json");
    std::fs::write(&path, json).map_err(|e| BenchError::Io(format!("{}: {e}", path.display())))?;
    result::write_html(dir, result).map_err(BenchError::Io)?;
    if let Some(m) = manifest {
        let hdr = serde_json::to_vec(&latency::RecorderData::encode(&tally.latency))
            .map_err(|e| BenchError::Io(e.to_string()))?;
        let path = dir.join(crate::shard::LATENCY_FILE);
        std::fs::write(&path, hdr)
            .map_err(|e| BenchError::Io(format!("{}: {e}", path.display())))?;
        m.phase_start_ms = Some(phase_start_ms);
        m.planned = tally.requests + tally.warmup_requests;
        m.status = if result.interrupted {
            crate::shard::ShardStatus::Interrupted
        } else {
            crate::shard::ShardStatus::Finished
        };
        m.write(dir)
            .map_err(|e| BenchError::Io(format!("{}: {e}", dir.display())))?;
    }
    let latest = opts.out_dir.join("latest");
    let _ = std::fs::remove_file(&latest);
    #[cfg(unix)]
    let _ = std::os::unix::fs::symlink(run_id, &latest);
    Ok(())
}

/// What the load of a bench measured: its mode, its tally, the measured
/// time, the ramp, the rate asked, and whether its count was sent.
type Loaded = (
    &'static str,
    WorkerStats,
    Duration,
    Option<Ramp>,
    Option<f64>,
    bool,
);

/// What every load phase of one bench shares: where it sends, what, where
/// the lines go, the faults' bookkeeping, the stop and the live progress.
struct PhaseKit<'a> {
    target: &'a LoadTarget,
    gen: &'a Generator,
    sink: &'a LineSink,
    refusals: &'a load::Refusals,
    under: Option<&'a Arc<load::UnderFaults>>,
    stop: &'a Stop,
    progress: &'a progress::Progress,
}

impl PhaseKit<'_> {
    /// Runs one phase from schedule slot `slot`.
    async fn run(&self, phase: Phase, slot: u64) -> load::PhaseResult {
        load::run_phase(
            self.target,
            self.gen,
            phase,
            slot,
            Some(self.sink.clone()),
            self.refusals,
            self.under,
            self.stop,
            |l| self.progress.attach(l),
        )
        .await
    }
}

/// The load of a bench: one phase, or a ramp's steps.
async fn load_phases(
    opts: &BenchOptions,
    kit: &PhaseKit<'_>,
    short: &mut Vec<String>,
    requests: Option<u64>,
    share: impl Fn(f64) -> f64,
) -> Loaded {
    match opts.rate {
        Some(Rate::Ramp { from, to }) => {
            ramp_phases(opts, kit, (from, to), short, requests, &share).await
        }
        other => {
            let (pace, mode, rate) = match other {
                Some(Rate::Fixed(r)) => (Pace::Open(share(r)), "open", Some(share(r))),
                _ => (Pace::Closed, "closed", None),
            };
            let phase = Phase {
                pace,
                connections: opts.connections,
                duration: opts.duration,
                warmup: opts.warmup,
                threads: opts.threads,
                live: opts.progress,
                requests,
            };
            let r = kit.run(phase, 0).await;
            if let Some(why) = rate.and_then(|rate| shortfall(rate, &r, opts.connections)) {
                short.push(why);
            }
            (mode, r.tally, r.measured, None, rate, r.counted_out)
        }
    }
}

/// A ramp from `from` to `to` requests a second (this process's `share`
/// of each): `--ramp-steps` open phases sharing the duration and the
/// count, one series of seconds, and the step where the receiver broke.
async fn ramp_phases(
    opts: &BenchOptions,
    kit: &PhaseKit<'_>,
    (from, to): (f64, f64),
    short: &mut Vec<String>,
    requests: Option<u64>,
    share: &impl Fn(f64) -> f64,
) -> Loaded {
    let steps = opts.ramp_steps.max(2);
    let step_len = opts.duration / steps as u32;
    let mut all = WorkerStats::default();
    let mut out = Vec::new();
    let mut slot = 0;
    let mut measured = Duration::ZERO;
    let mut counted_out = true;
    for i in 0..steps {
        if kit.stop.requested() {
            break;
        }
        let rate = share(from + (to - from) * i as f64 / (steps - 1) as f64);
        let phase = Phase {
            pace: Pace::Open(rate),
            connections: opts.connections,
            duration: step_len,
            warmup: if i == 0 { opts.warmup } else { Duration::ZERO },
            threads: opts.threads,
            live: opts.progress,
            // The steps share the count as they share the duration.
            requests: requests.map(|n| crate::shard::count_share(n, steps as u64, i as u64)),
        };
        let r = kit.run(phase, slot).await;
        slot = r.next_slot;
        counted_out &= r.counted_out;
        if let Some(why) = shortfall(rate, &r, opts.connections) {
            short.push(format!("step {}: {why}", i + 1));
        }
        let (lat, _, err) = summarize(&r.tally);
        out.push(RampStep {
            rate,
            achieved: r.tally.requests as f64 / r.measured.as_secs_f64(),
            requests: r.tally.requests,
            p99_ms: lat.p99_ms,
            error_rate: err,
        });
        measured += r.measured;
        // The series of a ramp runs on: append this step's seconds.
        let mut t = r.tally;
        let series = std::mem::take(&mut t.per_second);
        let failed = std::mem::take(&mut t.failed_per_second);
        all.merge(&t);
        all.failed_per_second.resize(all.per_second.len(), 0);
        all.per_second.extend(series);
        all.failed_per_second.extend(failed);
    }
    let p99_limit_ms = opts.p99_limit.as_secs_f64() * 1000.0;
    let ramp = Ramp {
        broke_at: result::find_break(&out, p99_limit_ms, opts.error_limit),
        steps: out,
        p99_limit_ms,
        error_limit: opts.error_limit,
    };
    (
        "ramp",
        all,
        measured,
        Some(ramp),
        Some(share(to)),
        counted_out,
    )
}

/// Drains, reads the state, saves it, and checks the history against it.
///
/// In bounded memory: every read of the drain wait streams the state into
/// `state.json` while counting unsettled rows (the last read's file
/// stays), and the checker folds the history, then streams that file into
/// interned ids. No step holds the state's text or its strings.
///
/// A bench proves nothing about what was never acknowledged: see
/// [`no_vacuous_pass`].
async fn check(
    probe: &Probe,
    opts: &BenchOptions,
    dir: &std::path::Path,
    history: &std::path::Path,
    first_refusal: Option<&load::Refusal>,
) -> Result<result::Correctness, String> {
    let state_path = dir.join("state.json");
    let (drained, _rows) = probe
        .wait_drained_to(opts.drain, &state_path)
        .await
        .map_err(|e| format!("cannot read the receiver's state: {e}"))?;
    let copts = CheckOptions {
        invariants: InvariantId::ALL.to_vec(),
        strict: false,
        answer_limit: opts.profile.timeout,
        drained,
        reconciled: false,
        vocabulary: crate::profile::vocabulary::Vocabulary::of(&opts.profile),
    };
    let (history, state_path) = (history.to_path_buf(), state_path.clone());
    let res = tokio::task::spawn_blocking(move || {
        check_files(&history, &state_path, Some(load::SCENARIO), &copts)
    })
    .await
    .map_err(|e| e.to_string())?
    .map_err(|e| e.to_string())?;
    let mut check = res
        .into_iter()
        .next()
        .ok_or_else(|| "the checker returned nothing".to_string())?;
    no_vacuous_pass(&mut check, first_refusal);
    Ok(result::Correctness {
        verdict: check.verdict(),
        check,
        drained,
    })
}

/// The processes a supervisor runs for `target`, for the report: the
/// receiver and its worker (their `[lifecycle]` commands, redacted, and
/// pids) and the database fault proxy.
pub fn processes(
    target: &crate::target::Target,
    sup: &crate::lifecycle::Supervisor,
) -> Vec<String> {
    use crate::lifecycle::Role;
    use crate::state::probe::redact_text;
    let mut out = Vec::new();
    if let Some(life) = &target.lifecycle {
        let pid = |r| {
            sup.pid(r)
                .map_or_else(String::new, |p| format!(" (pid {p})"))
        };
        out.push(format!(
            "receiver `{}`{}",
            redact_text(&life.start),
            pid(Role::Receiver)
        ));
        if let Some(w) = &life.worker {
            out.push(format!(
                "worker `{}`{}",
                redact_text(&w.start),
                pid(Role::Worker)
            ));
        }
    }
    if let Some(p) = sup.proxy() {
        out.push(format!("database proxy on {}", p.local_addr()));
    }
    out
}

/// What a bench's check cannot claim. A bench sends each delivery once
/// (a refusal is recorded as its last attempt, so I9 fails it as a run's
/// delivery whose retries ran out); and where no delivery was
/// acknowledged, I1 ("every acknowledged key is stored") held of nothing:
/// it becomes unknown, never a pass. A failing I9 gets the first refusal,
/// its status and what the receiver said, as its first evidence.
pub fn no_vacuous_pass(check: &mut crate::check::ScenarioCheck, first: Option<&load::Refusal>) {
    use crate::check::{Evidence, Verdict};
    let acknowledged = check.counts.ok;
    for r in &mut check.results {
        match r.id {
            InvariantId::I1 if acknowledged == 0 && r.verdict == Verdict::Pass => {
                r.verdict = Verdict::Unknown;
                r.summary = format!(
                    "not exercised: the receiver acknowledged no delivery, so no-loss held of nothing (had: {})",
                    r.summary
                );
            }
            InvariantId::I9 if r.verdict == Verdict::Fail => {
                if let Some(f) = first {
                    let body: String = f.body.trim().chars().take(300).collect();
                    r.evidence.insert(
                        0,
                        Evidence::new(
                            f.key.clone(),
                            Some(f.account.clone()),
                            format!(
                                "the first refusal: delivery {} was answered {} with {}",
                                f.delivery,
                                f.status,
                                if body.is_empty() {
                                    "an empty body".to_string()
                                } else {
                                    format!("the body {body:?}")
                                }
                            ),
                            Vec::new(),
                        ),
                    );
                    r.evidence_total += 1;
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_parse_as_fixed_or_ramp() {
        assert_eq!("5000/s".parse(), Ok(Rate::Fixed(5000.0)));
        assert_eq!("250".parse(), Ok(Rate::Fixed(250.0)));
        assert_eq!(
            "1000..20000/s".parse(),
            Ok(Rate::Ramp {
                from: 1000.0,
                to: 20000.0
            })
        );
        for bad in ["", "fast", "0/s", "-5/s", "20..10/s", "1..x/s"] {
            let e = bad.parse::<Rate>().unwrap_err();
            assert!(e.to_string().contains("expected RATE"), "{bad}: {e}");
        }
    }
}
