//! Process and database faults, carried out while the sender delivers a
//! steady stream: the nemesis of a scenario.
//!
//! `kill` sends SIGKILL (or SIGTERM, or SIGSTOP for a pause) to the receiver
//! and restarts it. Each kill is placed by the traffic, never by the clock:
//! after a seeded number of acknowledgements since the last restart, on
//! its trigger (a 2xx read, a request in flight; [`receiver`]), read from
//! the sender's [`TrafficGauge`], so a receiver that takes a second to
//! restart is still killed under load, not the moment it is ready. When the
//! target's receiver honours `HOOKSTORM_FAILPOINTS` and the fault names a
//! crash point, the receiver crashes itself at that point instead
//! (deterministic), and the nemesis restarts it each time. `kill-worker`
//! kills the worker once it is ready and working ([`worker`]).
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
//!
//! Placing the faults is here; `actions` counts what they did,
//! `tally` measures it against the history and the state, and `again`
//! is what a provider sends once the kills are over.

use std::collections::BTreeMap;
use std::time::Duration;

use rand::Rng;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::fault::gauge::TrafficGauge;
use crate::fault_spec::{
    CutDatabaseSpec, CutMode, CutVia, FaultSpec, KillSignal, KillSpec, KillWorkerSpec,
};
use crate::lifecycle::{Cut, LifecycleError, Role, Signal, Supervisor};
use crate::net::tcpproxy::Mode;
use crate::plan::Plan;
use crate::state::probe::Probe;
use crate::target::Target;

mod actions;
mod again;
mod receiver;
mod tally;
mod worker;

pub use actions::{Actions, CutSeen};
pub use again::{redeliveries, MAX_REDELIVERED_AFTER_KILLS, REDELIVER_AFTER_KILLS_SHARE};
pub use tally::{cut_met, kills_met, not_exercised, observations, KillFold, KillTally};

/// Most restarts after crash points in one scenario (a receiver that
/// crashes on every request would otherwise loop for ever).
pub const MAX_CRASH_RESTARTS: u32 = 200;

/// Acknowledgements a (re)started receiver gives before the next kill may
/// land: the kill then meets a receiver that is serving, not one that has
/// just become ready with nothing in flight.
pub const KILL_AFTER_ACKS: u64 = 2;

pub use crate::grading::excuse::{JUST_ANSWERED, MISSED_KILL_RETRIES};

/// Exchanges in flight at most before the stream of first attempts waits,
/// in a scenario that kills: the stream keeps pace with the receiver, so
/// traffic is left for every kill however slowly it answers.
pub const KILL_PACE: u64 = 4;

/// How long after a restart the nemesis waits for a kill's cut-off
/// exchanges to end, at least (a typical answer time more on top).
const CUT_OFF_GRACE: Duration = Duration::from_millis(100);

/// How often the nemesis looks at the traffic gauge while it waits.
const POLL: Duration = Duration::from_millis(5);

/// Readies `gauge` for `faults` before the stream starts: paces it
/// ([`KILL_PACE`]) when they kill a process, and has it remember the
/// deliveries answered when a cut waits for repeats.
pub fn prime(faults: &[FaultSpec], gauge: &TrafficGauge) {
    if faults
        .iter()
        .any(|f| matches!(f, FaultSpec::Kill(_) | FaultSpec::KillWorker(_)))
    {
        gauge.pace(KILL_PACE);
    }
    if faults
        .iter()
        .any(|f| matches!(f, FaultSpec::CutDatabase(c) if c.seen_repeats > 0))
    {
        gauge.remember_deliveries();
    }
}

/// Whether the faults include process or database faults.
pub fn applies(faults: &[FaultSpec]) -> bool {
    faults.iter().any(FaultSpec::is_process_fault)
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
    fn of(stream: Stream<'_>, sup: &Supervisor) -> CrashPoints {
        let seed = stream.seed;
        let mut points = Vec::new();
        if sup.supports_failpoints() {
            for f in stream.faults {
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

/// What the nemesis places its faults in: the faults, the seed of their
/// placement, and how many deliveries the stream carries (a scenario's
/// plan, or what a bench expects to send while it measures).
#[derive(Debug, Clone, Copy)]
pub struct Stream<'a> {
    /// The scenario (or the bench's name for its load), for the seeds.
    pub scenario: &'a str,
    /// The run's seed.
    pub seed: u64,
    /// The faults to carry out, in order.
    pub faults: &'a [FaultSpec],
    /// Deliveries in the stream: the kills fall within its first half.
    pub deliveries: usize,
}

impl<'a> Stream<'a> {
    /// The stream of a scenario's plan.
    pub fn of(plan: &'a Plan) -> Stream<'a> {
        Stream {
            scenario: &plan.scenario,
            seed: plan.seed,
            faults: &plan.faults,
            deliveries: plan.deliveries.len(),
        }
    }

    fn rng(&self, purpose: &str, index: u64) -> rand_chacha::ChaCha8Rng {
        crate::plan::rng_for(self.seed, self.scenario, purpose, index)
    }
}

/// Runs the stream's process faults until `done` turns true (the sender
/// finished), placing them by what `gauge` shows of the sender's traffic;
/// a database cut in progress is always restored first.
///
/// Crash points (`failpoint`) fire at most `count` times: after that the
/// process is restarted without them, so a scenario always ends.
pub async fn nemesis(
    sup: &mut Supervisor,
    stream: Stream<'_>,
    gauge: &TrafficGauge,
    probe: &Probe,
    mut done: watch::Receiver<bool>,
) -> Actions {
    let mut acts = Actions::default();
    let mut cps = CrashPoints::of(stream, sup);
    let start = Instant::now();
    let mut rng = stream.rng("nemesis", 0);
    for f in stream.faults {
        let r = match f {
            // Crash points fire in the process itself: revived below.
            _ if crash_points(f, sup) => Ok(()),
            FaultSpec::Kill(k) => {
                let gaps = gaps(&mut rng, k.count, stream.deliveries);
                let mut place = stream.rng("kill-placement", 0);
                receiver::kills(
                    sup, k, &gaps, gauge, &mut place, &mut done, &mut acts, &mut cps,
                )
                .await
            }
            FaultSpec::KillWorker(w) => {
                let k = w.as_kill();
                let gaps = gaps(&mut rng, k.count, stream.deliveries);
                worker::kills(sup, &k, &gaps, gauge, probe, &mut done, &mut acts, &mut cps).await
            }
            FaultSpec::CutDatabase(c) => {
                cut(sup, c, start, gauge, &mut done, &mut acts, &mut cps).await
            }
            _ => Ok(()),
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

/// The acknowledgements signal number `sent` (from 0) waits for after
/// the one before: its own gap, or the last one for the signals that place
/// missed kills again.
fn gap(gaps: &[u64], sent: u32) -> u64 {
    gaps.get(sent as usize)
        .or(gaps.last())
        .copied()
        .unwrap_or(KILL_AFTER_ACKS)
}

/// Whether `f` is carried out by the target's own crash points.
fn crash_points(f: &FaultSpec, sup: &Supervisor) -> bool {
    let point = match f {
        FaultSpec::Kill(k) => k.failpoint.is_some(),
        FaultSpec::KillWorker(w) => w.failpoint.is_some(),
        _ => false,
    };
    point && sup.supports_failpoints()
}

/// Seeded gaps between kills, in acknowledgements: each at least
/// [`KILL_AFTER_ACKS`] (a restarted process is serving, not booting), at
/// most what lets every kill fall within the first half of a stream of
/// `deliveries`, so the rest of it carries the kills placed again.
fn gaps(rng: &mut impl Rng, count: u32, deliveries: usize) -> Vec<u64> {
    let share = (deliveries as u64 / (2 * u64::from(count.max(1)))).max(KILL_AFTER_ACKS);
    (0..count)
        .map(|_| rng.gen_range(KILL_AFTER_ACKS..=share))
        .collect()
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

/// Sends one kill's signal (noting `detail` on its history line) and
/// brings the process back.
async fn signal(
    sup: &mut Supervisor,
    role: Role,
    k: &KillSpec,
    detail: Option<String>,
    acts: &mut Actions,
    cps: &mut CrashPoints,
) -> Result<(), LifecycleError> {
    match k.signal {
        KillSignal::Kill => {
            sup.kill_noting(role, detail).await?;
            acts.signalled(role);
            restart(sup, role, "after SIGKILL", acts, cps).await?;
        }
        KillSignal::Term => {
            sup.signal_noting(role, Signal::Term, detail)?;
            acts.signalled(role);
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
            sup.signal_noting(role, Signal::Stop, detail)?;
            acts.signalled(role);
            tokio::time::sleep(k.pause.0).await;
            sup.signal(role, Signal::Cont)?;
        }
    }
    Ok(())
}

/// Cuts the database at `at` and holds the cut until `seen` attempts sent
/// during it were answered, `seen_repeats` of them to deliveries answered
/// before (and `duration` passed), or `max` passed, or the stream ended;
/// then restores it and records what the cut saw.
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
        let count = gauge.window_count();
        if held >= min
            && count.answered >= u64::from(c.seen)
            && count.repeats >= u64::from(c.seen_repeats)
        {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fault::gauge::WindowCount;
    use rand::SeedableRng;

    #[test]
    fn kill_gaps_are_seeded_and_fit_every_kill_in_the_first_half_of_the_stream() {
        let mut a = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let mut b = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let g = gaps(&mut a, 6, 40);
        assert_eq!(g, gaps(&mut b, 6, 40));
        assert!(g.iter().all(|n| (KILL_AFTER_ACKS..=3).contains(n)), "{g:?}");
        assert!(g.iter().sum::<u64>() <= 20);
        let few = gaps(&mut a, 2, 4);
        assert!(few.iter().all(|n| *n == KILL_AFTER_ACKS), "{few:?}");
        assert_eq!(gap(&g, 100), g[5]);
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
        crate::workload::plan(&crate::scenario::Scenario::from_file(&path).unwrap(), 0)
    }

    fn seen(answered: u64) -> CutSeen {
        CutSeen {
            answered: WindowCount {
                answered,
                acks: 0,
                repeats: 0,
            },
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
        let why = not_exercised(&s.faults, &acts, Some(&KillTally::default())).unwrap();
        assert!(
            why.contains("no attempt was answered while the database was cut"),
            "{why}"
        );
        acts.cut_seen = vec![seen(0), seen(4)];
        assert_eq!(
            not_exercised(&s.faults, &acts, Some(&KillTally::default())),
            None
        );
        let why = not_exercised(&s.faults, &Actions::default(), None).unwrap();
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
        assert_eq!(not_exercised(&s.faults, &acts, Some(&hung)), None);
        let obs = observations(&s.faults, &acts, Some(&hung));
        assert_eq!(obs.len(), 1, "{obs:?}");
        assert!(obs[0].contains("43 attempts"), "{obs:?}");
        assert!(obs[0].contains("node-postgres query_timeout"), "{obs:?}");
        assert!(observations(&s.faults, &acts, Some(&KillTally::default())).is_empty());
    }

    #[test]
    fn a_kill_scenario_is_exercised_only_when_every_kill_interrupted_work() {
        let s = scenario_with("kind = \"kill\"\ncount = 3");
        let quiet = KillTally::default();
        let mut acts = Actions {
            signals: 9,
            kills_wanted: 3,
            kills_exercised: 2,
            missed: 7,
            ..Actions::default()
        };
        let why = not_exercised(&s.faults, &acts, Some(&quiet)).unwrap();
        assert!(
            why.contains("2 of 3 kills of the receiver interrupted work"),
            "{why}"
        );
        assert_eq!(
            not_exercised(&s.faults, &acts, None),
            None,
            "no state: unknown anyway"
        );
        // A request cut short after the fact does not stand in for a kill
        // that met nothing: each kill must have met work itself.
        let hit = KillTally {
            interrupted: 2,
            ..KillTally::default()
        };
        assert!(not_exercised(&s.faults, &acts, Some(&hit)).is_some());
        acts.kills_exercised = 3;
        assert_eq!(not_exercised(&s.faults, &acts, Some(&quiet)), None);
        let crash_points = Actions {
            receiver_crashes: 1,
            ..Actions::default()
        };
        assert_eq!(not_exercised(&s.faults, &crash_points, Some(&quiet)), None);
    }

    #[test]
    fn no_kill_kind_is_always_exercised() {
        let quiet = KillTally::default();
        let pause = scenario_with("kind = \"kill\"\nsignal = \"stop\"\ncount = 2");
        let paused = Actions {
            signals: 2,
            kills_wanted: 2,
            ..Actions::default()
        };
        let why = not_exercised(&pause.faults, &paused, Some(&quiet)).unwrap();
        assert!(why.contains("0 of 2 kills"), "{why}");
        let worker = scenario_with("kind = \"kill-worker\"\ncount = 4");
        let booting = Actions {
            signals: 4,
            worker_signals: 4,
            worker_kills_wanted: 4,
            worker_kills_exercised: 1,
            worker_unready: 1,
            ..Actions::default()
        };
        let why = not_exercised(&worker.faults, &booting, Some(&quiet)).unwrap();
        assert!(
            why.contains("1 of 4 kills of the worker met it ready and holding work"),
            "{why}"
        );
        assert!(why.contains("took no work"), "{why}");
        let held = Actions {
            worker_kills_exercised: 4,
            ..booting.clone()
        };
        assert_eq!(not_exercised(&worker.faults, &held, Some(&quiet)), None);
        let crashed = Actions {
            crashes: 1,
            ..Actions::default()
        };
        assert_eq!(not_exercised(&worker.faults, &crashed, None), None);
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
