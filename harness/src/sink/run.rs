//! The `hookstorm sink` pipeline: for each sender scenario, reset the
//! sender, start the sink, ask the sender to emit the plan's events (in
//! its waves), crash it where the scenario says, wait until its outbox
//! settles (every event delivered or dead-lettered), read the outbox, grade
//! S1–S9 from the history and the outbox, and finally write the same
//! reports a receiver run writes.
//!
//! Like [`crate::run`], it decides no verdict (the checker does) and renders
//! nothing (the reporters do).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU32;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::sync::{mpsc, watch};

use super::crash::{self, Crashes, Signals};
use super::plan::{plan, PlannedEvent, SinkPlan};
use super::server::{SinkServer, SinkSetup};
use super::target::SenderTarget;
use crate::check::sender::{compressed_timeout, judge, SenderRules};
use crate::check::ScenarioCheck;
use crate::findings::note::Note;
use crate::history::{self, Emitted, Event, HistorySink, RunHeader};
use crate::lifecycle::{LifecycleError, Supervisor};
use crate::net::tcpproxy::{HeldCommit, Proxy};
use crate::report::{self, RunReport, ScenarioReport};
use crate::run::interrupt::Stop;
use crate::run::{scenario_seed, write_error, RunError, TargetError};
use crate::scenario::sender::{CrashPoint, SenderScenario};
use crate::state::outbox::Outbox;
use crate::state::probe::ProbeError;

/// The time scale of a sink run when nothing sets one: the answerline's
/// 43-minute window in 2.6 s.
pub const DEFAULT_TIME_SCALE: f64 = 1000.0;

/// How long to wait for a sender's outbox to settle, by default.
pub const DEFAULT_DRAIN: Duration = Duration::from_secs(30);

/// How often the outbox is read while it settles.
const OUTBOX_POLL: Duration = Duration::from_millis(40);

/// The pause before an emit call that failed is made again.
const EMIT_RETRY: Duration = Duration::from_millis(25);

/// The least time an emit call is made again while it fails (a sender
/// restarting after a crash refuses connections for a moment), however
/// short the drain: the drain bounds how long the outbox may take to
/// settle, not how long a restart may take.
pub const EMIT_PATIENCE: Duration = Duration::from_secs(10);

/// How long the sink stays up once the outbox settled: re-sends after a
/// final answer land in it.
const QUIET: Duration = Duration::from_millis(250);

/// How a sink run is carried out.
#[derive(Debug, Clone)]
pub struct SinkOptions {
    /// The seed that drives every plan.
    pub seed: u64,
    /// Real waits are divided by this.
    pub time_scale: f64,
    /// Non-strict deviations fail the run.
    pub strict: bool,
    /// The reports folder; the run writes `<out>/<run-id>/`.
    pub out_dir: PathBuf,
    /// How long to wait at most for the outbox to settle.
    pub drain: Duration,
    /// The command that reproduces this run, without `--scenario`/`--seed`.
    pub reproduce: String,
}

impl SinkOptions {
    /// The timeout the sender is told to keep.
    pub fn timeout(&self, target: &SenderTarget) -> Duration {
        compressed_timeout(target.profile.timeout, self.time_scale)
    }
}

/// A finished sink run.
#[derive(Debug)]
pub struct SinkOutcome {
    /// The report.
    pub report: RunReport,
    /// `<out>/<run-id>`.
    pub dir: PathBuf,
}

/// Progress, for the console.
#[derive(Debug)]
pub enum SinkEvent<'a> {
    /// A scenario starts: (name, 1-based index, total).
    Started(&'a str, usize, usize),
    /// A scenario finished.
    Finished(&'a ScenarioReport),
}

/// The environment a started sender gets: the compressed contract.
pub fn sender_env(opts: &SinkOptions, target: &SenderTarget) -> BTreeMap<String, String> {
    BTreeMap::from([
        (
            "HOOKSTORM_TIME_SCALE".to_string(),
            opts.time_scale.to_string(),
        ),
        (
            "HOOKSTORM_TIMEOUT_MS".to_string(),
            opts.timeout(target).as_millis().to_string(),
        ),
        ("HOOKSTORM_SEED".to_string(), opts.seed.to_string()),
    ])
}

/// Runs every scenario against the sender, until `stop` is requested.
pub async fn run(
    target: &SenderTarget,
    scenarios: &[SenderScenario],
    opts: &SinkOptions,
    on_event: &mut (dyn FnMut(SinkEvent<'_>) + Send),
    stop: &Stop,
) -> Result<SinkOutcome, RunError> {
    let started = Instant::now();
    let started_at = history::now_rfc3339();
    let (run_id, dir) = crate::run::new_run_dir(&opts.out_dir, opts.seed)?;
    // The proxy is up before the sender first connects through it.
    let mut commits =
        match &target.database_proxy {
            None => None,
            Some(p) => Some(CommitWatch::start(&p.listen, &p.upstream).await.map_err(
                |source| TargetError::DatabaseProxy {
                    listen: p.listen.clone(),
                    source,
                },
            )?),
        };
    let mut supervisor = match &target.lifecycle {
        None => None,
        Some(life) => {
            let mut life = life.clone();
            life.env.extend(sender_env(opts, target));
            let start = Supervisor::start_as("sender", life, Default::default(), &dir);
            tokio::select! {
                s = start => Some(s.map_err(TargetError::from)?),
                _ = stop.wait() => return Err(TargetError::Interrupted.into()),
            }
        }
    };
    let mut reports = Vec::new();
    for (i, s) in scenarios.iter().enumerate() {
        if stop.requested() {
            break;
        }
        on_event(SinkEvent::Started(&s.name, i + 1, scenarios.len()));
        let one = run_scenario(
            target,
            s,
            opts,
            &dir,
            &run_id,
            supervisor.as_mut(),
            commits.as_mut(),
        );
        let report = tokio::select! {
            r = one => r?,
            _ = stop.wait() => break,
        };
        on_event(SinkEvent::Finished(&report));
        reports.push(report);
    }
    let interrupted = stop.requested();
    if let Some(sup) = supervisor.take() {
        sup.end(interrupted).await;
    }
    let report = RunReport {
        run_id: run_id.clone(),
        seed: opts.seed,
        profile: target.profile.name.clone(),
        time_scale: opts.time_scale,
        target: target.describe(),
        started_at,
        duration_s: started.elapsed().as_secs_f64(),
        strict: opts.strict,
        require_all: false,
        hookstorm_version: env!("CARGO_PKG_VERSION").to_string(),
        scenarios: reports,
        machine: Some(crate::run::machine()),
        interrupted,
        seal: None,
    };
    report::write_reports(&dir, &report)?;
    crate::run::point_latest(&opts.out_dir, &run_id);
    Ok(SinkOutcome { report, dir })
}

/// The sender's database proxy and the commits it holds.
pub struct CommitWatch {
    proxy: Proxy,
    held: mpsc::UnboundedReceiver<HeldCommit>,
}

impl CommitWatch {
    async fn start(listen: &str, upstream: &str) -> std::io::Result<CommitWatch> {
        let (proxy, held) = Proxy::watching_commits(listen, upstream).await?;
        Ok(CommitWatch { proxy, held })
    }
}

/// The command that reproduces one scenario of this run.
fn reproduce(opts: &SinkOptions, s: &SenderScenario) -> String {
    let which = match &s.listed {
        Some(_) => s.path.display().to_string(),
        None => s.name.clone(),
    };
    format!(
        "{} --scenario {which} --seed {} --time-scale {}",
        opts.reproduce, opts.seed, opts.time_scale
    )
}

/// What the emits and the settle loop saw.
#[derive(Debug, Default)]
struct Drive {
    /// Emit calls that failed, with why.
    emit_errors: Vec<String>,
    /// The last outbox read (or why it failed).
    outbox: Option<Result<Outbox, String>>,
    /// The outbox settled before the drain ended.
    settled: bool,
    /// How long emitting and settling took.
    took: Duration,
}

/// Runs one scenario: its report.
async fn run_scenario(
    target: &SenderTarget,
    s: &SenderScenario,
    opts: &SinkOptions,
    run_dir: &Path,
    run_id: &str,
    mut supervisor: Option<&mut Supervisor>,
    commits: Option<&mut CommitWatch>,
) -> Result<ScenarioReport, RunError> {
    let begun = Instant::now();
    let dir = run_dir.join(&s.name);
    std::fs::create_dir_all(&dir).map_err(write_error(&dir))?;
    let history_path = dir.join("history.jsonl");
    let outbox_path = dir.join("outbox.json");
    let mut notes: Vec<Note> = reset(target).await.into_iter().collect();
    let plan = plan(s, scenario_seed(opts.seed, &s.name), &target.profile);
    let mut invariants: Vec<crate::invariant::InvariantId> = s.check.iter().copied().collect();
    if target.profile.sender.retry_after == crate::profile::RetryAfter::NotPromised
        && invariants.contains(&crate::invariant::InvariantId::S3)
    {
        invariants.retain(|i| *i != crate::invariant::InvariantId::S3);
        notes.push(Note::Said(
            "S3 not checked: the profile promises nothing about Retry-After ([sender] retry_after = \"not-promised\"); its retries are held to the schedule (S1)".into(),
        ));
    }
    let rules = SenderRules {
        invariants,
        profile: target.profile.clone(),
        time_scale: opts.time_scale,
        timeout: opts.timeout(target),
    };
    let history = HistorySink::create(&history_path)?;
    history.write(Event::Run(RunHeader {
        run_id: run_id.to_string(),
        seed: plan.seed,
        profile: target.profile.name.clone(),
        time_scale: opts.time_scale,
        started_at: history::now_rfc3339(),
        version: env!("CARGO_PKG_VERSION").to_string(),
    }))?;
    if let Some(sup) = supervisor.as_deref_mut() {
        sup.attach(std::sync::Arc::new(history.clone()), &s.name, &dir);
        sup.ensure_up().await.map_err(TargetError::from)?;
        crash::arm(sup, s.crash, plan.seed)
            .await
            .map_err(TargetError::from)?;
    }
    // Where the sender's log stands: a sender that keeps running from an
    // earlier scenario writes elsewhere, and this scenario's part is
    // copied into its own folder at the end.
    let log_mark = supervisor
        .as_deref()
        .and_then(|sup| sup.log_position(crate::lifecycle::Role::Receiver));
    let listener = listen(target).await?;
    let generation = Arc::new(AtomicU32::new(0));
    let (acks_tx, acks_rx) = mpsc::unbounded_channel();
    let (emitted_tx, emitted_rx) = mpsc::unbounded_channel();
    let (done_tx, done_rx) = watch::channel(false);
    // A crash with a POST in flight: the sink holds each request for the watch.
    let (hold_tx, hold_rx) = match (s.crash, supervisor.is_some()) {
        (Some(c), true) if c.at == CrashPoint::MidPost => {
            let (tx, rx) = mpsc::unbounded_channel();
            (Some(tx), Some(rx))
        }
        _ => (None, None),
    };
    let server = SinkServer::spawn(
        listener,
        SinkSetup {
            scenario: s.name.clone(),
            start: begun,
            rules: rules.clone(),
            secrets: target.secrets.clone(),
            plan: plan.clone(),
            history: history.clone(),
            generation: generation.clone(),
            acks: acks_tx,
            hold: hold_tx,
        },
    )
    .map_err(|e| RunError::Write {
        path: dir.clone(),
        source: e,
    })?;
    let drain = s.drain.unwrap_or(opts.drain);
    // A crash before the POST lands on the sender's own commit when its
    // database is behind the proxy and it has no crash points of its own.
    let on_commit = commits.is_some()
        && s.crash.is_some_and(|c| c.at == CrashPoint::BeforePost)
        && supervisor
            .as_deref()
            .is_some_and(|sup| !sup.supports_failpoints());
    let (arm, held) = match commits {
        Some(c) => {
            while c.held.try_recv().is_ok() {}
            (on_commit.then_some(&c.proxy), Some(&mut c.held))
        }
        None => (None, None),
    };
    let drive = async {
        let d = drive(
            target,
            s,
            &plan,
            Driving {
                server: &server,
                history: &history,
                emitted: &emitted_tx,
                arm,
            },
            drain,
        )
        .await;
        let _ = done_tx.send(true);
        d
    };
    let signals = Signals {
        acks: acks_rx,
        emitted: emitted_rx,
        commits: held.filter(|_| on_commit),
        requests: hold_rx,
        done: done_rx,
    };
    let watch_crashes = async {
        match supervisor.as_deref_mut() {
            Some(sup) => crash::watch(sup, s.crash, plan.seed, generation.clone(), signals).await,
            None => Crashes::default(),
        }
    };
    let (driven, crashes) = tokio::join!(drive, watch_crashes);
    server.stop().await;
    if let Some((log, from)) = &log_mark {
        copy_log_part(log, *from, &dir.join("sender.log"));
    }
    if let Some(sup) = supervisor {
        // A restart that clears a crash point belongs to no scenario's log.
        sup.log_to(run_dir);
        if let Err(e) = crash::disarm(sup, s.crash).await {
            notes.push(Note::Said(format!(
                "the sender could not be restarted cleanly: {e}"
            )));
        }
        sup.detach();
    }
    history.finish()?;
    let events: Vec<(u64, Event)> = history::read_numbered(&history_path)?
        .filter_map(Result::ok)
        .collect();
    let outbox = save_outbox(&driven, &outbox_path)?;
    let outbox_ref = match &outbox {
        Ok(o) => Ok(o),
        Err(e) => Err(e.as_str()),
    };
    let mut check: ScenarioCheck = judge(&events, &s.name, outbox_ref, &rules);
    if let Some(e) = driven.emit_errors.first() {
        check.not_exercised(&format!("the sender did not take every event: {e}"));
    }
    if s.crash.is_some() && crashes.total() == 0 {
        check.not_exercised("the sender never crashed");
    }
    notes.extend(scenario_notes(
        s, &plan, &rules, &driven, &crashes, &check, drain,
    ));
    Ok(ScenarioReport {
        name: s.name.clone(),
        description: s.description.clone(),
        when_it_fails: s.when_it_fails.clone(),
        check,
        reproduce: reproduce(opts, s),
        duration_s: begun.elapsed().as_secs_f64(),
        history: format!("{}/history.jsonl", s.name),
        state: outbox.is_ok().then(|| format!("{}/outbox.json", s.name)),
        notes,
        skipped: None,
        // A sink's history is graded by its own rules (`check::sender`),
        // not again by `hookstorm verify`'s receiver check.
        graded_with: None,
        gap_slack_ms: None,
    })
}

/// Calls the target's reset hook, when it has one: a note when it failed.
async fn reset(target: &SenderTarget) -> Option<Note> {
    let r = target.reset.as_ref()?;
    r.post(&json!({})).await.err().map(|e| Note::ResetFailed {
        error: e.to_string(),
    })
}

/// Copies what `log` gained since byte `from` to `to`, unless `log` is
/// `to` already (the sender was started in this scenario's folder).
fn copy_log_part(log: &Path, from: u64, to: &Path) {
    use std::io::{Seek, SeekFrom};
    if log == to {
        return;
    }
    let Ok(mut f) = std::fs::File::open(log) else {
        return;
    };
    if f.seek(SeekFrom::Start(from)).is_err() {
        return;
    }
    if let Ok(mut out) = std::fs::File::create(to) {
        let _ = std::io::copy(&mut f, &mut out);
    }
}

/// The sink's listening socket, at the target's `listen` address.
async fn listen(target: &SenderTarget) -> Result<tokio::net::TcpListener, RunError> {
    tokio::net::TcpListener::bind(&target.listen)
        .await
        .map_err(|e| {
            TargetError::from(LifecycleError::Spawn {
                name: "sink".into(),
                command: format!("listen on {}", target.listen),
                source: e,
            })
            .into()
        })
}

/// The outbox the drive read last (or why there is none), saved to `path`.
fn save_outbox(driven: &Drive, path: &Path) -> Result<Result<Outbox, String>, RunError> {
    let outbox = driven
        .outbox
        .clone()
        .unwrap_or_else(|| Err("the outbox was never read".into()));
    if let Ok(o) = &outbox {
        let json = serde_json::to_vec_pretty(o).unwrap_or_default();
        std::fs::write(path, json).map_err(write_error(path))?;
    }
    Ok(outbox)
}

/// One event as the emit hook receives it.
fn emit_json(e: &PlannedEvent, server: &SinkServer) -> serde_json::Value {
    let headers: serde_json::Map<String, serde_json::Value> = e
        .headers
        .iter()
        .map(|(k, v)| (k.clone(), json!(v)))
        .collect();
    json!({
        "account": e.account,
        "url": server.url(&e.account),
        "key": e.key,
        "type": e.event_type,
        "body": String::from_utf8_lossy(&e.body),
        "delivery_id": e.delivery_id,
        "headers": headers,
        "resource": e.resource,
        "sequence": e.sequence,
    })
}

/// Emits the plan wave by wave, then waits for the outbox to settle.
/// What the emit calls report to and arm.
struct Driving<'a> {
    server: &'a SinkServer,
    history: &'a HistorySink,
    /// Told of every emit call that returned.
    emitted: &'a mpsc::UnboundedSender<()>,
    /// Armed for the span of each emit call: its first committed write is
    /// held for the crash watch.
    arm: Option<&'a Proxy>,
}

async fn drive(
    target: &SenderTarget,
    s: &SenderScenario,
    plan: &SinkPlan,
    with: Driving<'_>,
    drain: Duration,
) -> Drive {
    let Driving {
        server,
        history,
        emitted,
        arm,
    } = with;
    let began = Instant::now();
    let mut d = Drive::default();
    for wave in 0..plan.waves {
        if wave > 0 {
            tokio::time::sleep(s.spacing).await;
        }
        let batch: Vec<&PlannedEvent> = plan.events.iter().filter(|e| e.wave == wave).collect();
        let body =
            json!({ "events": batch.iter().map(|e| emit_json(e, server)).collect::<Vec<_>>() });
        if let Some(p) = arm {
            p.arm_commit(true);
        }
        let called = emit(target, &body, drain.max(EMIT_PATIENCE)).await;
        if let Some(p) = arm {
            p.arm_commit(false);
        }
        match called {
            Err(e) => d.emit_errors.push(e.to_string()),
            Ok(_) => {
                let at = history::now_rfc3339();
                for e in batch {
                    let _ = history.write(Event::Emit(Emitted {
                        scenario: s.name.clone(),
                        at: at.clone(),
                        account: e.account.clone(),
                        key: e.key.clone(),
                        job: e.job.clone(),
                        resource: e.resource.clone(),
                        sequence: e.sequence,
                        script: e.script.iter().map(ToString::to_string).collect(),
                    }));
                }
                let _ = emitted.send(());
            }
        }
    }
    let keys: Vec<(&str, &str)> = plan
        .events
        .iter()
        .map(|e| (e.account.as_str(), e.key.as_str()))
        .collect();
    let deadline = began + drain;
    loop {
        let read = read_outbox(target).await;
        let settled = matches!(&read, Ok(o) if o.settled(keys.iter().copied()));
        d.outbox = Some(read);
        if settled {
            d.settled = true;
            break;
        }
        if Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(OUTBOX_POLL).await;
    }
    if d.settled {
        tokio::time::sleep(QUIET).await;
        d.outbox = Some(read_outbox(target).await);
    }
    d.took = began.elapsed();
    d
}

/// One emit call, repeated while it fails (a sender restarting after a
/// crash refuses connections for a moment), for at most `limit`. An emit
/// is idempotent per (account, key), so a repeat of a call that did land
/// adds nothing.
async fn emit(
    target: &SenderTarget,
    body: &serde_json::Value,
    limit: Duration,
) -> Result<serde_json::Value, ProbeError> {
    let deadline = Instant::now() + limit;
    loop {
        match target.emit.post(body).await {
            Ok(v) => return Ok(v),
            Err(e) if Instant::now() >= deadline => return Err(e),
            Err(_) => tokio::time::sleep(EMIT_RETRY).await,
        }
    }
}

async fn read_outbox(target: &SenderTarget) -> Result<Outbox, String> {
    let bytes = target
        .outbox
        .read(crate::limits::budget::OUTBOX_LISTING)
        .await
        .map_err(|e: ProbeError| e.to_string())?;
    Outbox::parse(&bytes).map_err(|e| format!("{}: {e}", target.outbox.describe()))
}

/// What the run says about one scenario beyond its verdicts.
fn scenario_notes(
    s: &SenderScenario,
    plan: &SinkPlan,
    rules: &SenderRules,
    d: &Drive,
    crashes: &Crashes,
    check: &ScenarioCheck,
    drain: Duration,
) -> Vec<Note> {
    let mut notes = Vec::new();
    let c = &check.counts;
    notes.push(Note::Said(format!(
        "asked the sender to emit {} event(s) in {} emit call(s); {} request(s) arrived ({} ok, {} fail, {} info) in {}",
        plan.events.len(),
        plan.waves,
        c.attempts,
        c.ok,
        c.fail,
        c.info,
        crate::text::units::format_duration(d.took)
    )));
    notes.push(Note::Said(format!(
        "the sender was held to the {} profile at 1/{} time: waits divided by {}, a timeout of {}",
        rules.profile.name,
        rules.time_scale,
        rules.time_scale,
        crate::text::units::format_duration(rules.timeout)
    )));
    for e in &d.emit_errors {
        notes.push(Note::Said(format!("an emit call failed: {e}")));
    }
    if !d.settled {
        let why = match &d.outbox {
            Some(Err(e)) => format!("the outbox could not be read: {e}"),
            _ => "events were still pending".into(),
        };
        notes.push(Note::Said(format!(
            "the outbox did not settle within the drain of {} ({why})",
            crate::text::units::format_duration(drain)
        )));
    }
    if let Some(cr) = s.crash {
        notes.push(Note::Said(format!(
            "crashes (crash-{}, {} at most): {} at the sender's own crash point, {} SIGKILL(s) by the harness; restarted each time",
            cr.at.name(),
            cr.count,
            crashes.at_points,
            crashes.kills
        )));
        if crashes.total() == 0 {
            notes.push(Note::NotExercised {
                reason: "the sender never crashed".into(),
            });
        }
    }
    if crashes.unexpected > 0 {
        notes.push(Note::Said(format!(
            "the sender exited on its own {} time(s) and was revived",
            crashes.unexpected
        )));
    }
    for e in &crashes.errors {
        notes.push(Note::Said(format!("lifecycle: {e}")));
    }
    notes
}
