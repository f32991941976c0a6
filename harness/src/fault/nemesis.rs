//! Process and database faults, carried out while the sender delivers a
//! steady stream: the nemesis of a scenario.
//!
//! `kill` sends SIGKILL (or SIGTERM, or SIGSTOP for a pause) to the receiver
//! and restarts it. Each kill is placed by the traffic, not by the clock
//! alone: no earlier than a seeded moment, and only once the restarted
//! receiver has acknowledged something and a request is in flight (read
//! from the sender's [`TrafficGauge`]), so a receiver that takes a second to
//! restart is still killed under load, not the moment it is ready. When the
//! target's receiver honours `HOOKSTORM_FAILPOINTS` and the fault names a
//! crash point, the receiver crashes itself at that point instead
//! (deterministic), and the nemesis restarts it each time. `kill-worker`
//! does the same to the worker (at seeded moments).
//!
//! `cut-database` cuts the database through the fault proxy, the stop/start
//! commands or a SQLite lock, and holds the cut until it has been *seen*:
//! until `seen` attempts sent during the cut were answered while it held
//! (and at least `duration` passed), at most `max`. A connection pool that
//! waits for a connection longer than the cut would otherwise wait it out,
//! and the receiver's error path would never run.
//!
//! The nemesis never decides a verdict: the checker reads what the history
//! and the state say. It only counts what it did, and [`KillTally`] measures
//! what the kills did to the attempts, for the report's notes. When a fault
//! met nothing ([`not_exercised`]), the run turns the scenario's passes into
//! unknown: a pass would claim what was never tested.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

use rand::Rng;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::fault::gauge::{TrafficGauge, WindowCount};
use crate::history::{Event, Fold, Intent, Outcome};
use crate::lifecycle::{Cut, LifecycleError, Role, Signal, Supervisor};
use crate::plan::Plan;
use crate::scenario::fault_spec::{
    CutDatabaseSpec, CutMode, CutVia, FaultSpec, KillSignal, KillSpec, KillWorkerSpec,
};
use crate::state::State;
use crate::target::Target;
use crate::tcpproxy::Mode;

/// Most restarts after crash points in one scenario (a receiver that
/// crashes on every request would otherwise loop for ever).
pub const MAX_CRASH_RESTARTS: u32 = 200;

/// Acknowledgements a (re)started receiver gives before the next kill may
/// land: the kill then meets a receiver that is serving, not one that has
/// just become ready with nothing in flight.
pub const KILL_AFTER_ACKS: u64 = 2;

/// Kills of the receiver that cut off no exchange and are placed again, at
/// most, per kill the fault asks for: a kill that lands as the last answer
/// leaves, or while the request waits in a listening socket the harness
/// holds across restarts, tests nothing, and the stream is still running.
pub const MISSED_KILL_RETRIES: u32 = 1;

/// How long after a restart the nemesis waits for a kill's cut-off
/// exchanges to end, at least (a typical answer time more on top).
const CUT_OFF_GRACE: Duration = Duration::from_millis(100);

/// How often the nemesis looks at the traffic gauge while it waits.
const POLL: Duration = Duration::from_millis(5);

/// Whether the faults include process or database faults.
pub fn applies(faults: &[FaultSpec]) -> bool {
    faults.iter().any(FaultSpec::is_process_fault)
}

/// The spread of the steady stream the process faults want.
pub fn spread(faults: &[FaultSpec]) -> Option<Duration> {
    faults.iter().filter_map(FaultSpec::spread).max()
}

/// Why the scenario cannot run against this target, if it cannot.
///
/// Kills need lifecycle control; a database cut needs only database control
/// (`[database]`), so a receiver that runs on its own can still have its
/// database cut through the harness's proxy.
pub fn missing_control(scenario: &str, faults: &[FaultSpec], target: &Target) -> Option<String> {
    if !applies(faults) {
        return None;
    }
    let kills = faults
        .iter()
        .any(|f| matches!(f, FaultSpec::Kill(_) | FaultSpec::KillWorker(_)));
    let life = target.lifecycle.as_ref();
    if kills && life.is_none() {
        return Some(format!(
            "needs lifecycle control, which the target does not describe (hint: add [lifecycle] start = \"…\" and ready = {{ http = \"…\" }} to the target file, or --skip {scenario})"
        ));
    }
    for f in faults {
        match f {
            FaultSpec::KillWorker(_) if life.is_some_and(|l| l.worker.is_none()) => {
                return Some(format!(
                    "needs a separate worker process (hint: add [lifecycle.worker] start = \"…\", or --skip {scenario})"
                ))
            }
            FaultSpec::CutDatabase(c) => {
                if let Err(why) = choose_cut(c, &target.database) {
                    return Some(format!("{why} (hint: or --skip {scenario})"));
                }
            }
            _ => {}
        }
    }
    None
}

fn choose_cut(c: &CutDatabaseSpec, db: &crate::lifecycle::DatabaseConfig) -> Result<Cut, String> {
    let mode = match c.mode {
        CutMode::Refuse => Mode::Refuse,
        CutMode::Reset => Mode::Reset,
        CutMode::Blackhole => Mode::Blackhole,
        CutMode::Latency => Mode::Latency {
            latency_ms: c.latency.0.as_millis() as u64,
        },
    };
    let proxy = db.proxy.is_some().then_some(Cut::Proxy(mode));
    let commands = db.has_commands().then_some(Cut::Commands);
    let sqlite = db.sqlite.is_some().then_some(Cut::SqliteLock);
    // Stop/start commands can only refuse: a silent or slow database needs
    // the proxy (or a lock, which writers wait on in silence).
    let shape_only = matches!(c.mode, CutMode::Blackhole | CutMode::Latency);
    let pick = match c.via {
        CutVia::Auto if shape_only => proxy.or(sqlite),
        CutVia::Auto => proxy.or(commands).or(sqlite),
        CutVia::Proxy => proxy,
        CutVia::Commands => commands,
        CutVia::SqliteLock => sqlite,
    };
    pick.ok_or_else(|| {
        format!(
            "needs database control via {:?}, which the target does not describe ([database] proxy = {{ listen, upstream }}, stop + start commands, or sqlite = PATH)",
            c.via
        )
    })
}

/// What the nemesis did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Actions {
    /// Signals sent by the harness (kill, terminate, pause).
    pub signals: u32,
    /// Crashes at crash points (the process exited by itself).
    pub crashes: u32,
    /// Of those, crashes of the receiver (the process that answers).
    pub receiver_crashes: u32,
    /// Restarts.
    pub restarts: u32,
    /// Database cuts.
    pub cuts: u32,
    /// What each database cut saw, in order.
    pub cut_seen: Vec<CutSeen>,
    /// Things that went wrong while acting (the scenario is then unknown-prone).
    pub errors: Vec<String>,
    /// Events acknowledged before a restart and redelivered after the kills
    /// ([`redeliveries`]).
    pub redelivered: usize,
    /// Kills of the receiver that cut off no exchange and were placed
    /// again ([`MISSED_KILL_RETRIES`]).
    pub missed: u32,
}

/// What one database cut saw while it held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CutSeen {
    /// Attempts sent during the cut and answered before it ended.
    pub answered: WindowCount,
    /// How long it held.
    pub held: Duration,
    /// It ended because `seen` answers came (not at `max`, nor because the
    /// stream ended).
    pub reached: bool,
}

impl Actions {
    /// Kills injected: signals that ended a process, plus crash points fired.
    pub fn kills(&self) -> u32 {
        self.signals + self.crashes
    }

    /// Adds what another pass of the nemesis did.
    pub fn merge(&mut self, other: Actions) {
        self.signals += other.signals;
        self.crashes += other.crashes;
        self.receiver_crashes += other.receiver_crashes;
        self.restarts += other.restarts;
        self.cuts += other.cuts;
        self.cut_seen.extend(other.cut_seen);
        self.errors.extend(other.errors);
        self.redelivered += other.redelivered;
        self.missed += other.missed;
    }
}

/// Sets failpoint environments and restarts what needs it, before sending.
pub async fn prepare(sup: &mut Supervisor, plan: &Plan) -> Result<(), LifecycleError> {
    if !sup.supports_failpoints() {
        return Ok(());
    }
    let seed = plan.seed;
    for f in &plan.faults {
        let (role, fp) = match f {
            FaultSpec::Kill(KillSpec {
                failpoint: Some(fp),
                ..
            }) => (Role::Receiver, fp),
            FaultSpec::KillWorker(KillWorkerSpec {
                failpoint: Some(fp),
                ..
            }) => (Role::Worker, fp),
            _ => continue,
        };
        sup.set_env(role, failpoint_env(fp, seed));
        sup.kill(role).await?;
        sup.restart(role, &format!("with crash point {fp}")).await?;
    }
    Ok(())
}

fn failpoint_env(fp: &str, seed: u64) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("HOOKSTORM_FAILPOINTS".to_string(), fp.to_string()),
        ("HOOKSTORM_FAILPOINT_SEED".to_string(), seed.to_string()),
    ])
}

/// Clears failpoints (restarting processes that had them) and makes sure
/// everything runs again, after sending.
pub async fn finish(sup: &mut Supervisor, plan: &Plan) -> Result<(), LifecycleError> {
    if sup.supports_failpoints() {
        for f in &plan.faults {
            let role = match f {
                FaultSpec::Kill(KillSpec {
                    failpoint: Some(_), ..
                }) => Role::Receiver,
                FaultSpec::KillWorker(KillWorkerSpec {
                    failpoint: Some(_), ..
                }) => Role::Worker,
                _ => continue,
            };
            sup.set_env(role, BTreeMap::new());
            sup.kill(role).await?;
            sup.restart(role, "crash point cleared").await?;
        }
    }
    sup.ensure_up().await
}

/// Crash points in force per process: the point, how many crashes it may
/// still cause, and the seed of the next start.
#[derive(Debug, Default)]
struct CrashPoints {
    points: Vec<(Role, String, u32, u64)>,
}

impl CrashPoints {
    fn of(plan: &Plan, sup: &Supervisor) -> CrashPoints {
        let seed = plan.seed;
        let mut points = Vec::new();
        if sup.supports_failpoints() {
            for f in &plan.faults {
                match f {
                    FaultSpec::Kill(KillSpec {
                        failpoint: Some(fp),
                        count,
                        ..
                    }) => points.push((Role::Receiver, fp.clone(), *count, seed)),
                    FaultSpec::KillWorker(KillWorkerSpec {
                        failpoint: Some(fp),
                        count,
                        ..
                    }) => points.push((Role::Worker, fp.clone(), *count, seed)),
                    _ => {}
                }
            }
        }
        CrashPoints { points }
    }

    /// Counts a crash of `role` and sets the environment of its next start:
    /// the point with a fresh seed while crashes remain, else none.
    fn crashed(&mut self, sup: &mut Supervisor, role: Role) {
        for (r, fp, left, seed) in &mut self.points {
            if *r != role {
                continue;
            }
            *left = left.saturating_sub(1);
            *seed = seed.wrapping_add(1);
            let env = if *left > 0 {
                failpoint_env(fp, *seed)
            } else {
                BTreeMap::new()
            };
            sup.set_env(role, env);
        }
    }
}

/// Runs the scenario's process faults until `done` turns true (the sender
/// finished), placing them by what `gauge` shows of the sender's traffic;
/// a database cut in progress is always restored first.
///
/// Crash points (`failpoint`) fire at most `count` times: after that the
/// process is restarted without them, so a scenario always ends.
pub async fn nemesis(
    sup: &mut Supervisor,
    plan: &Plan,
    gauge: &TrafficGauge,
    mut done: watch::Receiver<bool>,
) -> Actions {
    let mut acts = Actions::default();
    let mut cps = CrashPoints::of(plan, sup);
    let start = Instant::now();
    let mut rng = plan.rng("nemesis", 0);
    for f in &plan.faults {
        // The receiver's kills are placed by its traffic; the worker answers
        // no request, so its kills keep their moments.
        let kills = match f {
            FaultSpec::Kill(k) => Some((Role::Receiver, k.clone(), Some(gauge), 0)),
            FaultSpec::KillWorker(k) => Some((Role::Worker, k.as_kill(), None, 1)),
            _ => None,
        };
        let r = if let Some((role, spec, gauge, stream)) = kills {
            let crash_points = spec.failpoint.is_some() && sup.supports_failpoints();
            let moments = if crash_points {
                Vec::new()
            } else {
                moments(&mut rng, spec.count, spec.over.0)
            };
            let mut place = Placement {
                gauge,
                rng: plan.rng("kill-placement", stream),
            };
            signals(
                sup, role, &spec, &moments, start, &mut place, &mut done, &mut acts, &mut cps,
            )
            .await
        } else if let FaultSpec::CutDatabase(c) = f {
            cut(sup, c, start, gauge, &mut done, &mut acts, &mut cps).await
        } else {
            Ok(())
        };
        if let Err(e) = r {
            acts.errors.push(e.to_string());
        }
    }
    // Crash points keep firing until the stream ends: keep reviving.
    while !*done.borrow() {
        if let Err(e) = revive_all(sup, &mut acts, &mut cps).await {
            acts.errors.push(e.to_string());
            break;
        }
        if tokio::time::timeout(Duration::from_millis(5), done.changed())
            .await
            .is_ok_and(|r| r.is_err())
        {
            break;
        }
    }
    acts
}

fn moments(rng: &mut impl Rng, count: u32, over: Duration) -> Vec<Duration> {
    let span = over.as_secs_f64().max(0.001);
    let mut m: Vec<Duration> = (0..count)
        .map(|_| Duration::from_secs_f64(rng.gen_range(0.05 * span..0.9 * span)))
        .collect();
    m.sort();
    m
}

async fn revive_all(
    sup: &mut Supervisor,
    acts: &mut Actions,
    cps: &mut CrashPoints,
) -> Result<(), LifecycleError> {
    for role in [Role::Receiver, Role::Worker] {
        if acts.crashes >= MAX_CRASH_RESTARTS || !sup.exited(role) {
            continue;
        }
        acts.crashes += 1;
        if role == Role::Receiver {
            acts.receiver_crashes += 1;
        }
        cps.crashed(sup, role);
        restart(sup, role, "it crashed", acts, cps).await?;
    }
    Ok(())
}

/// Restarts a process; a crash while it starts (a crash point hit by a
/// request that arrived early) counts as a crash and is restarted again.
async fn restart(
    sup: &mut Supervisor,
    role: Role,
    why: &str,
    acts: &mut Actions,
    cps: &mut CrashPoints,
) -> Result<(), LifecycleError> {
    let mut tries = 0;
    loop {
        match sup.restart(role, why).await {
            Ok(()) => {
                acts.restarts += 1;
                return Ok(());
            }
            Err(LifecycleError::Exited { .. }) if tries < 20 => {
                tries += 1;
                acts.crashes += 1;
                if role == Role::Receiver {
                    acts.receiver_crashes += 1;
                }
                cps.crashed(sup, role);
            }
            Err(e) => return Err(e),
        }
    }
}

/// Sleeps until `until` while reviving crashed processes; false when `done` fired.
async fn wait_until(
    sup: &mut Supervisor,
    until: Instant,
    done: &mut watch::Receiver<bool>,
    acts: &mut Actions,
    cps: &mut CrashPoints,
) -> Result<bool, LifecycleError> {
    while Instant::now() < until {
        if *done.borrow() {
            return Ok(false);
        }
        revive_all(sup, acts, cps).await?;
        tokio::time::sleep(Duration::from_millis(5).min(until - Instant::now())).await;
    }
    Ok(!*done.borrow())
}

/// Where kills land: by the traffic when a gauge is given, else at their
/// moments alone.
struct Placement<'a, R> {
    gauge: Option<&'a TrafficGauge>,
    rng: R,
}

impl<R: Rng> Placement<'_, R> {
    /// Waits until the receiver has acknowledged [`KILL_AFTER_ACKS`] attempts
    /// since `mark` and a request is in flight, then a seeded fraction of a
    /// typical answer time more, so kills land at varied points inside an
    /// exchange. False when `done` fired first.
    async fn under_load(
        &mut self,
        mark: u64,
        sup: &mut Supervisor,
        done: &mut watch::Receiver<bool>,
        acts: &mut Actions,
        cps: &mut CrashPoints,
    ) -> Result<bool, LifecycleError> {
        let Some(gauge) = self.gauge else {
            return Ok(!*done.borrow());
        };
        loop {
            if *done.borrow() {
                return Ok(false);
            }
            revive_all(sup, acts, cps).await?;
            if gauge.acks() < mark + KILL_AFTER_ACKS {
                tokio::time::sleep(POLL).await;
                continue;
            }
            if !gauge.wait_start(POLL).await && gauge.in_flight() == 0 {
                continue;
            }
            let typical = gauge
                .typical_latency()
                .unwrap_or(Duration::from_millis(1))
                .min(Duration::from_millis(200));
            pause(typical.mul_f64(self.rng.gen_range(0.2..0.9))).await;
            if gauge.in_flight() > 0 {
                return Ok(true);
            }
        }
    }

    /// The acknowledgement count now: the mark for the next kill.
    fn mark(&self) -> u64 {
        self.gauge.map(TrafficGauge::acks).unwrap_or(0)
    }
}

/// Waits `d`. Below the timer's 1 ms resolution it yields instead of
/// sleeping, so a kill can land inside an exchange that takes less than a
/// millisecond (a fast receiver answers in a few hundred microseconds).
async fn pause(d: Duration) {
    if d >= Duration::from_millis(2) {
        tokio::time::sleep(d).await;
        return;
    }
    let until = std::time::Instant::now() + d;
    while std::time::Instant::now() < until {
        tokio::task::yield_now().await;
    }
}

#[allow(clippy::too_many_arguments)]
async fn signals<R: Rng>(
    sup: &mut Supervisor,
    role: Role,
    k: &KillSpec,
    moments: &[Duration],
    start: Instant,
    place: &mut Placement<'_, R>,
    done: &mut watch::Receiver<bool>,
    acts: &mut Actions,
    cps: &mut CrashPoints,
) -> Result<(), LifecycleError> {
    let mut mark = 0;
    let mut retries = MISSED_KILL_RETRIES * moments.len() as u32;
    let mut next = 0;
    while let Some(m) = moments.get(next) {
        if !wait_until(sup, start + *m, done, acts, cps).await? {
            break;
        }
        if !place.under_load(mark, sup, done, acts, cps).await? {
            break;
        }
        // The receiver is down from just before the signal until it is
        // ready again: attempts that meet that window unanswered are the
        // harness's doing (`receiver-down`), not the receiver's.
        let cut_off = place.gauge.map(TrafficGauge::cut_off);
        // A kill (not a pause) also holds the stream of first attempts
        // until the new process is ready, so that traffic is left for the
        // kills after it.
        let restarts = k.signal != KillSignal::Stop;
        if let Some(g) = place.gauge {
            g.receiver_down();
            g.hold(restarts);
        }
        let r = signal(sup, role, k, acts, cps).await;
        if let Some(g) = place.gauge {
            g.receiver_up(restarts);
            g.hold(false);
        }
        r?;
        mark = place.mark();
        // A kill that cut off nothing is placed again (the same moment,
        // which has passed: as soon as the traffic allows).
        let missed = match (place.gauge, cut_off) {
            (Some(g), Some(before)) if restarts && retries > 0 => {
                !met_anything(g, before, done).await
            }
            _ => false,
        };
        if missed {
            retries -= 1;
            acts.missed += 1;
        } else {
            next += 1;
        }
    }
    Ok(())
}

/// Whether the kill just made cut off an exchange: the gauge's cut-off
/// count rose past `before` within a grace after the restart (an exchange
/// reset by the kill ends at once; one the harness's held socket kept
/// waiting is answered by the new process instead).
async fn met_anything(gauge: &TrafficGauge, before: u64, done: &watch::Receiver<bool>) -> bool {
    let grace = CUT_OFF_GRACE
        + gauge
            .typical_latency()
            .unwrap_or_default()
            .min(Duration::from_millis(200));
    let until = Instant::now() + grace;
    loop {
        if gauge.cut_off() > before {
            return true;
        }
        if Instant::now() >= until || *done.borrow() {
            return gauge.cut_off() > before;
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Sends one kill's signal and brings the process back.
async fn signal(
    sup: &mut Supervisor,
    role: Role,
    k: &KillSpec,
    acts: &mut Actions,
    cps: &mut CrashPoints,
) -> Result<(), LifecycleError> {
    match k.signal {
        KillSignal::Kill => {
            sup.kill(role).await?;
            acts.signals += 1;
            restart(sup, role, "after SIGKILL", acts, cps).await?;
        }
        KillSignal::Term => {
            sup.signal(role, Signal::Term)?;
            acts.signals += 1;
            let deadline = Instant::now() + Duration::from_secs(5);
            while sup.pid(role).is_some() && Instant::now() < deadline {
                if sup.exited(role) {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            sup.kill(role).await?;
            restart(sup, role, "after SIGTERM", acts, cps).await?;
        }
        KillSignal::Stop => {
            sup.signal(role, Signal::Stop)?;
            tokio::time::sleep(k.pause.0).await;
            sup.signal(role, Signal::Cont)?;
        }
    }
    Ok(())
}

/// Cuts the database at `at` and holds the cut until `seen` attempts sent
/// during it were answered (and `duration` passed), or `max` passed, or the
/// stream ended; then restores it and records what the cut saw.
async fn cut(
    sup: &mut Supervisor,
    c: &CutDatabaseSpec,
    start: Instant,
    gauge: &TrafficGauge,
    done: &mut watch::Receiver<bool>,
    acts: &mut Actions,
    cps: &mut CrashPoints,
) -> Result<(), LifecycleError> {
    let how = choose_cut(c, sup.database()).map_err(|reason| LifecycleError::Command {
        command: "cut-database".into(),
        reason,
    })?;
    if !wait_until(sup, start + c.at.0, done, acts, cps).await? {
        return Ok(());
    }
    sup.cut_database(how).await?;
    gauge.open_window();
    acts.cuts += 1;
    let began = Instant::now();
    let (min, max) = (c.duration.0, c.max.0.max(c.duration.0));
    let mut reached = false;
    loop {
        let held = began.elapsed();
        if held >= max || *done.borrow() {
            break;
        }
        if held >= min && gauge.window_count().answered >= u64::from(c.seen) {
            reached = true;
            break;
        }
        if let Err(e) = revive_all(sup, acts, cps).await {
            acts.errors.push(e.to_string());
        }
        tokio::time::sleep(POLL.min(max - held)).await;
    }
    let seen = CutSeen {
        answered: gauge.close_window(),
        held: began.elapsed(),
        reached,
    };
    acts.cut_seen.push(seen);
    sup.restore_database_noting(how, Some(seen.detail(c))).await
}

impl CutSeen {
    /// The history's detail on `restore-database`: what the cut saw and
    /// why it ended.
    fn detail(&self, c: &CutDatabaseSpec) -> String {
        let why = if self.reached {
            "until seen"
        } else if self.held >= c.max.0 {
            "until max"
        } else {
            "until the stream ended"
        };
        format!(
            "{} attempt(s) answered while the database was cut ({} acknowledged); held {} {why} (at least {}, at most {}, until {} answered)",
            self.answered.answered,
            self.answered.acks,
            crate::units::format_duration(self.held),
            c.duration,
            c.max,
            c.seen
        )
    }
}

/// Why the scenario's faults tested nothing, if they did not: every
/// database cut went by with no attempt answered while it held, or the
/// receiver's kills (signals or crash points) interrupted no attempt.
/// `tally` is `None` when the state could not be read (the checker is then
/// unknown anyway). Pauses (`signal = "stop"`) and worker kills are not
/// judged here: they need not cut an exchange short to test something.
pub fn not_exercised(plan: &Plan, acts: &Actions, tally: Option<&KillTally>) -> Option<String> {
    let mut why = Vec::new();
    // A cut is exercised when an attempt met it: answered while it held,
    // or left without an answer in time (a receiver that hangs on a silent
    // database met it too; that is an observation, not a pass by default).
    if plan
        .faults
        .iter()
        .any(|f| matches!(f, FaultSpec::CutDatabase(_)))
        && acts.cut_seen.iter().all(|s| s.answered.answered == 0)
        && tally.is_none_or(|t| t.cut_unanswered == 0)
    {
        why.push(match acts.cut_seen.iter().map(|s| s.held).max() {
            None => "the database was never cut (the stream ended before the cut was due, or the cut failed)".to_string(),
            Some(held) => format!(
                "no attempt was answered while the database was cut ({} at most), so the receiver's answer to a missing database was never seen (hint: its connection pool may wait longer than the cut; raise the cut's max)",
                crate::units::format_duration(held)
            ),
        });
    }
    let kills = plan.faults.iter().any(|f| {
        matches!(f, FaultSpec::Kill(k) if matches!(k.signal, KillSignal::Kill | KillSignal::Term))
    });
    if let (true, Some(t)) = (kills, tally) {
        if t.interrupted == 0 && acts.receiver_crashes == 0 && t.down == 0 {
            why.push(format!(
                "{} kill(s) of the receiver interrupted no attempt, none landed between commit and answer, and no attempt went unanswered while the receiver was down, so nothing was in flight to lose",
                acts.signals
            ));
        }
    }
    (!why.is_empty()).then(|| why.join("; "))
}

/// Share of the events acknowledged before the last restart that are
/// redelivered once the kills are over (at least one, at most
/// [`MAX_REDELIVERED_AFTER_KILLS`]).
pub const REDELIVER_AFTER_KILLS_SHARE: f64 = 0.25;

/// Most events acknowledged before a kill that are redelivered after it.
pub const MAX_REDELIVERED_AFTER_KILLS: usize = 12;

/// What is sent again once a scenario's kills are over, as a plan of its
/// own (sent with `first_round = 1`, so every attempt carries
/// `duplicate-redeliver`) whose note says why; `None` when nothing is.
///
/// A real provider sends an event it already had acknowledged again (an
/// acknowledgement lost on the way, a manual resend, an at-least-once
/// queue), and a crash is when a dedupe kept in process memory forgets:
/// so a seeded share of the deliveries acknowledged before the last
/// restart is redelivered after it, and must be a no-op (I2). Under a
/// profile that makes one attempt ([`crate::excuse::Recovery::Redelivery`],
/// GitHub), the deliveries the kills left dead are redelivered too, as a
/// team's redelivery script does through the provider's API: each must
/// then be stored once (I1, I9).
pub fn redeliveries(
    plan: &Plan,
    sent: &crate::sender::SendSummary,
    last_restart: Option<std::time::Instant>,
    recovery: crate::excuse::Recovery,
) -> Option<Plan> {
    let restart = last_restart?;
    let mut before: Vec<usize> = sent
        .acked
        .iter()
        .filter(|(_, at)| *at < restart)
        .map(|(i, _)| *i)
        .collect();
    before.sort_unstable();
    before.dedup();
    let mut rng = plan.rng("redeliver-after-kills", 0);
    let want = ((before.len() as f64 * REDELIVER_AFTER_KILLS_SHARE).ceil() as usize)
        .clamp(usize::from(!before.is_empty()), MAX_REDELIVERED_AFTER_KILLS);
    let acked: Vec<usize> =
        rand::seq::index::sample(&mut rng, before.len(), want.min(before.len()))
            .into_iter()
            .map(|k| before[k])
            .collect();
    let dead: Vec<usize> = if recovery == crate::excuse::Recovery::Redelivery {
        sent.died.clone()
    } else {
        Vec::new()
    };
    if acked.is_empty() && dead.is_empty() {
        return None;
    }
    let mut chosen: Vec<usize> = acked.iter().chain(&dead).copied().collect();
    chosen.sort_unstable();
    chosen.dedup();
    let deliveries = plan
        .deliveries
        .iter()
        .filter(|d| chosen.binary_search(&d.index).is_ok())
        .map(|d| {
            let mut d = d.clone();
            d.redeliveries.clear();
            d.wave = 0;
            d.copies = 1;
            d.hold_attempts = 0;
            d.drop_acks = 0;
            d
        })
        .collect();
    let mut action = format!(
        "redeliver {} event(s) acknowledged before the last restart",
        acked.len()
    );
    if !dead.is_empty() {
        action.push_str(&format!(
            " and {} the kills left dead (the provider makes no automatic retry)",
            dead.len()
        ));
    }
    Some(Plan {
        scenario: plan.scenario.clone(),
        seed: plan.seed,
        accounts: plan.accounts.clone(),
        faults: Vec::new(),
        deliveries,
        notes: vec![crate::plan::FaultNote {
            fault: crate::tag::FaultName::Redeliver,
            action,
            detail: Some("a provider sends acknowledged events again (a lost acknowledgement, a manual resend); after a crash a dedupe kept in memory has forgotten them, so each must be a no-op".into()),
        }],
    })
}

/// What the scenario's faults showed that is worth reporting but is not a
/// failure ([`crate::excuse::Effect::Informational`]): a receiver that gave
/// no answer at all while its database was cut.
pub fn observations(plan: &Plan, acts: &Actions, tally: Option<&KillTally>) -> Vec<String> {
    let cut = plan
        .faults
        .iter()
        .any(|f| matches!(f, FaultSpec::CutDatabase(_)));
    let Some(t) = tally.filter(|t| cut && t.cut_unanswered > 0) else {
        return Vec::new();
    };
    let held = acts
        .cut_seen
        .iter()
        .map(|s| s.held)
        .max()
        .unwrap_or_default();
    let rule = crate::excuse::EXERCISED
        .iter()
        .find(|e| e.fault == "cut-database")
        .map(|e| e.informational)
        .unwrap_or_default();
    if acts.cut_seen.iter().all(|s| s.answered.answered == 0) {
        vec![format!(
            "{rule}: no answer for {} while the database was silent ({} attempt(s) sent during the cut got none in time); a statement timeout would answer 503 within the limit",
            crate::units::format_duration(held),
            t.cut_unanswered
        )]
    } else {
        vec![format!(
            "{} attempt(s) sent while the database was cut got no answer in time; the others were answered: some of the receiver's waits on its database have no timeout",
            t.cut_unanswered
        )]
    }
}

/// What the kills did to the attempts, measured from the history and state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KillTally {
    /// Genuine attempts cut off with no answer (reset, closed, timed out).
    pub interrupted: usize,
    /// Of those, attempts whose delivery is stored: the receiver had
    /// committed it when the kill ended the exchange, or a retry stored it.
    /// With a crash-after-commit point every one of them landed between
    /// commit and answer.
    pub stored_after_interruption: usize,
    /// Deliveries acknowledged (2xx) whose row is missing.
    pub lost: usize,
    /// Deliveries stored more than once.
    pub doubled: usize,
    /// Genuine attempts sent while the database was cut that got no answer
    /// (a timeout, a reset): they met the cut even though none was answered.
    pub cut_unanswered: usize,
    /// Genuine attempts left unanswered while the harness had the receiver
    /// down (`receiver-down`: refused, reset or timed out): the kill met them.
    pub down: usize,
}

/// Per genuine key, what the kills could have done to its attempts,
/// folded from the history as it streams by: attempts cut off with no
/// answer, and whether any attempt was acknowledged.
#[derive(Debug, Default)]
pub struct KillFold {
    keys: HashMap<(String, String), (usize, bool)>,
    cut_unanswered: usize,
    down: usize,
}

impl Fold for KillFold {
    fn push(&mut self, _line: u64, e: &Event) {
        let Event::Attempt(a) = e else { return };
        if a.intent != Intent::Genuine || a.poison {
            return;
        }
        let interrupted = a.outcome == Outcome::Info && a.status.is_none();
        if a.status.is_none() && a.faults.contains(&crate::tag::FaultTag::DatabaseCut) {
            self.cut_unanswered += 1;
        }
        if a.faults.contains(&crate::tag::FaultTag::ReceiverDown) {
            self.down += 1;
        }
        let acked = a.outcome == Outcome::Ok;
        if !interrupted && !acked {
            return;
        }
        let k = self
            .keys
            .entry((a.account.clone(), a.key.clone()))
            .or_default();
        k.0 += usize::from(interrupted);
        k.1 |= acked;
    }
}

impl KillFold {
    /// The tally of the folded attempts against the (filtered) state.
    pub fn finish(self, state: &State) -> KillTally {
        let stored: HashSet<(Option<&str>, &str)> = state
            .inbox
            .iter()
            .map(|r| (r.account.as_deref(), r.key.as_str()))
            .collect();
        let mut counts: BTreeMap<(Option<&str>, &str), usize> = BTreeMap::new();
        for r in &state.inbox {
            *counts
                .entry((r.account.as_deref(), r.key.as_str()))
                .or_default() += 1;
        }
        let mut t = KillTally {
            doubled: counts.values().filter(|n| **n > 1).count(),
            cut_unanswered: self.cut_unanswered,
            down: self.down,
            ..KillTally::default()
        };
        for ((account, key), (interrupted, acked)) in self.keys {
            let is_stored = stored.contains(&(Some(account.as_str()), key.as_str()))
                || stored.contains(&(None, key.as_str()));
            t.interrupted += interrupted;
            if is_stored {
                t.stored_after_interruption += interrupted;
            } else if acked {
                t.lost += 1;
            }
        }
        t
    }
}

impl KillTally {
    /// Measures a scenario's events against its (filtered) state.
    pub fn measure<'a>(events: impl IntoIterator<Item = &'a Event>, state: &State) -> KillTally {
        let mut f = KillFold::default();
        for e in events {
            f.push(0, e);
        }
        f.finish(state)
    }
}

/// The report note for a scenario with process faults.
pub fn note(acts: &Actions, tally: Option<&KillTally>) -> String {
    let mut s = format!(
        "process faults: {} kill(s) injected ({} by the harness, {} at crash points), {} restart(s), {} database cut(s)",
        acts.kills(),
        acts.signals,
        acts.crashes,
        acts.restarts,
        acts.cuts
    );
    for c in &acts.cut_seen {
        s.push_str(&format!(
            "; {} attempt(s) answered during the cut ({} acknowledged), held {}",
            c.answered.answered,
            c.answered.acks,
            crate::units::format_duration(c.held)
        ));
    }
    if let Some(t) = tally {
        s.push_str(&format!(
            "; {} attempt(s) interrupted, {} of them stored (landed between commit and answer or by a retry); {} acknowledged deliveries lost; {} stored twice",
            t.interrupted, t.stored_after_interruption, t.lost, t.doubled
        ));
    }
    if acts.missed > 0 {
        s.push_str(&format!(
            "; {} kill(s) cut off no exchange and were placed again",
            acts.missed
        ));
    }
    if acts.redelivered > 0 {
        s.push_str(&format!(
            "; {} event(s) acknowledged before a restart redelivered after the kills",
            acts.redelivered
        ));
    }
    for e in &acts.errors {
        s.push_str(&format!("; error: {e}"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn kill_moments_are_seeded_sorted_and_inside_the_stream() {
        let mut a = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let mut b = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let m = moments(&mut a, 5, Duration::from_secs(2));
        assert_eq!(m, moments(&mut b, 5, Duration::from_secs(2)));
        assert!(m.windows(2).all(|w| w[0] <= w[1]));
        assert!(m.iter().all(|d| *d < Duration::from_secs(2)));
    }

    #[test]
    fn a_cut_uses_the_proxy_first_and_names_what_is_missing() {
        let spec: CutDatabaseSpec = toml::from_str("via = \"auto\"").unwrap();
        let mut db = crate::lifecycle::DatabaseConfig::default();
        assert!(choose_cut(&spec, &db)
            .unwrap_err()
            .contains("needs database control"));
        db.stop = Some("x".into());
        db.start = Some("y".into());
        assert_eq!(choose_cut(&spec, &db).unwrap(), Cut::Commands);
        db.proxy = Some(crate::lifecycle::ProxyConfig {
            listen: "a".into(),
            upstream: "b".into(),
        });
        assert_eq!(choose_cut(&spec, &db).unwrap(), Cut::Proxy(Mode::Reset));
    }

    fn scenario_with(fault: &str) -> Plan {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.toml");
        std::fs::write(
            &path,
            format!("name = \"s\"\ndescription = \"d\"\nexpect = \"e\"\nwhen_it_fails = \"w\"\ncheck = [\"I1\"]\n[[fault]]\n{fault}\n"),
        )
        .unwrap();
        crate::plan::workload::plan(&crate::scenario::Scenario::from_file(&path).unwrap(), 0)
    }

    fn seen(answered: u64) -> CutSeen {
        CutSeen {
            answered: WindowCount { answered, acks: 0 },
            held: Duration::from_secs(2),
            reached: answered > 0,
        }
    }

    #[test]
    fn a_cut_nobody_answered_during_is_not_exercised() {
        let s = scenario_with("kind = \"cut-database\"");
        let mut acts = Actions {
            cuts: 1,
            cut_seen: vec![seen(0)],
            ..Actions::default()
        };
        let why = not_exercised(&s, &acts, Some(&KillTally::default())).unwrap();
        assert!(
            why.contains("no attempt was answered while the database was cut"),
            "{why}"
        );
        acts.cut_seen = vec![seen(0), seen(4)];
        assert_eq!(not_exercised(&s, &acts, Some(&KillTally::default())), None);
        let why = not_exercised(&s, &Actions::default(), None).unwrap();
        assert!(why.contains("never cut"), "{why}");
    }

    #[test]
    fn a_cut_the_receiver_hung_on_is_exercised_and_reported_as_an_observation() {
        let s = scenario_with("kind = \"cut-database\"");
        let acts = Actions {
            cuts: 1,
            cut_seen: vec![seen(0)],
            ..Actions::default()
        };
        let hung = KillTally {
            cut_unanswered: 43,
            ..KillTally::default()
        };
        assert_eq!(not_exercised(&s, &acts, Some(&hung)), None);
        let obs = observations(&s, &acts, Some(&hung));
        assert_eq!(obs.len(), 1, "{obs:?}");
        assert!(obs[0].contains("43 attempt(s)"), "{obs:?}");
        assert!(obs[0].contains("statement timeout"), "{obs:?}");
        assert!(observations(&s, &acts, Some(&KillTally::default())).is_empty());
    }

    #[test]
    fn kills_that_interrupt_nothing_are_not_exercised_unless_a_crash_point_fired() {
        let s = scenario_with("kind = \"kill\"\ncount = 3");
        let mut acts = Actions {
            signals: 3,
            ..Actions::default()
        };
        let quiet = KillTally::default();
        let why = not_exercised(&s, &acts, Some(&quiet)).unwrap();
        assert!(
            why.contains("3 kill(s) of the receiver interrupted no attempt"),
            "{why}"
        );
        assert_eq!(
            not_exercised(&s, &acts, None),
            None,
            "no state: unknown anyway"
        );
        let hit = KillTally {
            interrupted: 2,
            ..KillTally::default()
        };
        assert_eq!(not_exercised(&s, &acts, Some(&hit)), None);
        acts.receiver_crashes = 1;
        assert_eq!(not_exercised(&s, &acts, Some(&quiet)), None);
        let pause = scenario_with("kind = \"kill\"\nsignal = \"stop\"");
        assert_eq!(
            not_exercised(&pause, &Actions::default(), Some(&quiet)),
            None
        );
    }

    #[test]
    fn a_blackhole_never_falls_back_to_stop_and_start_commands() {
        let spec: CutDatabaseSpec = toml::from_str("mode = \"blackhole\"").unwrap();
        let mut db = crate::lifecycle::DatabaseConfig {
            stop: Some("x".into()),
            start: Some("y".into()),
            ..Default::default()
        };
        assert!(choose_cut(&spec, &db).is_err());
        db.sqlite = Some("r.db".into());
        assert_eq!(choose_cut(&spec, &db).unwrap(), Cut::SqliteLock);
        db.proxy = Some(crate::lifecycle::ProxyConfig {
            listen: "a".into(),
            upstream: "b".into(),
        });
        assert_eq!(choose_cut(&spec, &db).unwrap(), Cut::Proxy(Mode::Blackhole));
    }
}
