//! Process and database chaos for real: the reference receiver runs as a
//! child process (`hookstorm receiver`, separate worker) that the harness
//! kills, restarts and cuts off from its database. It survives every
//! process scenario on SQLite and Postgres (outages through the fault proxy
//! and through `pg_ctl -m immediate stop` / `start`), and every cut is held
//! until the receiver has answered during it; the variants these scenarios
//! target are caught; kills land under load even when the receiver is slow
//! to restart, and kills that interrupt nothing leave the scenario unknown;
//! and an interrupted run leaves no process.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use hookstorm::check::{InvariantId, Verdict};
use hookstorm::lifecycle::group_members;
use hookstorm::run::RunOutcome;
use hookstorm::scenario::{CutVia, FaultSpec};
use hookstorm_cli::builtin::child::Reservation;
use hookstorm_receiver::pgtest::PgServer;
use hookstorm_receiver::Defect;

use crate::common::count_before;
use crate::common::*;

const PROCESS_SCENARIOS: [&str; 5] = [
    "db-blackhole",
    "db-outage",
    "kill-between-commit-and-ack",
    "kill-under-load",
    "worker-crash",
];

fn notes(outcome: &RunOutcome, scenario: &str) -> String {
    outcome
        .report
        .scenarios
        .iter()
        .find(|s| s.name == scenario)
        .map(|s| s.said().join(" | "))
        .unwrap_or_default()
}

/// Every database cut of the run's outage scenarios held until as many
/// attempts as its scenario's `seen` were answered during it.
fn assert_cuts_seen(outcome: &RunOutcome, what: &str) {
    for scenario in scenarios(&["db-outage", "db-blackhole"]) {
        let n = notes(outcome, &scenario.name);
        if n.is_empty() {
            continue;
        }
        let want = scenario
            .faults
            .iter()
            .find_map(|f| match f {
                FaultSpec::CutDatabase(c) => Some(u64::from(c.seen)),
                _ => None,
            })
            .expect("a cut");
        let seen = count_before(&n, "attempt(s) answered during the cut").unwrap_or(0);
        eprintln!(
            "{what} · {}: {seen} attempt(s) answered during the cut",
            scenario.name
        );
        assert!(
            seen >= want,
            "{what} {}: the cut holds until {want} seen: {n}",
            scenario.name
        );
    }
}

fn assert_all_pass(outcome: &RunOutcome, what: &str) {
    let bad = non_passing(&outcome.report);
    assert!(bad.is_empty(), "{what}: {bad:#?}");
    for s in &outcome.report.scenarios {
        eprintln!("{what} · {}: {}", s.name, s.said().join(" | "));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reference_receiver_on_sqlite_survives_every_process_fault() -> TestResult {
    let c = child(None, None, true);
    let started = Instant::now();
    let (outcome, _out) = run_on(&c.target, &scenarios(&PROCESS_SCENARIOS), 11).await;
    eprintln!(
        "sqlite: process scenarios took {:.1}s",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(outcome.report.scenarios.len(), 5);
    assert_all_pass(&outcome, "sqlite");
    assert_cuts_seen(&outcome, "sqlite");
    let kul = notes(&outcome, "kill-under-load");
    // The scenario's 5 kills, each interrupting work, plus one more for
    // each that interrupted nothing (at most two more per kill).
    let kills = count_before(&kul, "kill(s) injected").unwrap_or(0);
    let missed = count_before(&kul, "kill(s) interrupted no work").unwrap_or(0);
    assert!(missed <= 10 && kills == 5 + missed, "{kul}");
    assert!(
        kul.contains("5 of 5 kills of the receiver interrupted work"),
        "{kul}"
    );
    assert!(
        count_before(&kul, "attempt(s) interrupted").unwrap_or(0) > 0,
        "{kul}"
    );
    assert!(kul.contains(" 0 acknowledged deliveries lost"), "{kul}");
    let kca = notes(&outcome, "kill-between-commit-and-ack");
    assert!(kca.contains("at crash points"), "{kca}");
    // Every action is in the history, and process output is in the report folder.
    let dir = &outcome.dir;
    let history = std::fs::read_to_string(dir.join("kill-under-load/history.jsonl"))?;
    assert_eq!(history.matches("\"fault\":\"kill\"").count() as u64, kills);
    assert!(history.matches("\"fault\":\"restart\"").count() as u64 >= kills);
    assert!(dir.join("kill-under-load/receiver.log").exists());
    assert!(dir.join("worker-crash/worker.log").exists());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reference_receiver_on_postgres_survives_every_process_fault_and_both_outages() -> TestResult
{
    let Some(pg) = PgServer::start_or_skip() else {
        return Ok(());
    };
    // Through the fault proxy (the receiver's connection string points at it).
    let c = child(None, Some(pg.fresh_database().await?), true);
    assert!(c.target.database.proxy.is_some());
    let (outcome, _out) = run_on(&c.target, &scenarios(&PROCESS_SCENARIOS), 12).await;
    assert_all_pass(&outcome, "postgres via proxy");
    assert_cuts_seen(&outcome, "postgres via proxy");
    let history = std::fs::read_to_string(outcome.dir.join("db-blackhole/history.jsonl"))?;
    assert!(
        history.contains("-> blackhole"),
        "the blackhole went through the proxy"
    );
    let history = std::fs::read_to_string(outcome.dir.join("db-outage/history.jsonl"))?;
    assert!(
        history.contains("proxy 127.0.0.1"),
        "the cut went through the proxy"
    );
    assert!(
        history.contains("\"status\":503"),
        "the receiver answered 503 while its database was gone"
    );

    // Through real pg_ctl stop (immediate) and start.
    let mut c = child(None, Some(pg.fresh_database().await?), false);
    let (stop, start) = pg.ctl_commands();
    c.target.database.stop = Some(stop);
    c.target.database.start = Some(start);
    let mut outage = scenarios(&["db-outage"]);
    for f in &mut outage[0].faults {
        if let FaultSpec::CutDatabase(cut) = f {
            cut.via = CutVia::Commands;
        }
    }
    let (outcome, _out) = run_on(&c.target, &outage, 13).await;
    assert_all_pass(&outcome, "postgres via pg_ctl");
    assert_cuts_seen(&outcome, "postgres via pg_ctl");
    let history = std::fs::read_to_string(outcome.dir.join("db-outage/history.jsonl"))?;
    assert!(history.contains("stop command") && history.contains("start command"));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ok_while_database_down_is_caught_by_db_outage() -> TestResult {
    let Some(pg) = PgServer::start_or_skip() else {
        return Ok(());
    };
    let c = child(
        Some(Defect::OkWhileDatabaseDown),
        Some(pg.fresh_database().await?),
        true,
    );
    let (outcome, _out) = run_on(&c.target, &scenarios(&["db-outage"]), 15).await;
    assert_eq!(
        verdict(&outcome.report, "db-outage", InvariantId::I1),
        Some(Verdict::Fail),
        "{:#?}",
        non_passing(&outcome.report)
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ok_while_database_down_is_caught_on_sqlite_now_that_the_cut_outlasts_the_busy_timeout(
) -> TestResult {
    // The lock is waited on for 5 s (busy timeout): a 1 s cut was waited out
    // and this defect passed on SQLite. Held until seen, the cut makes the
    // receiver answer while the lock holds, and the 204 it answers is caught.
    let c = child(Some(Defect::OkWhileDatabaseDown), None, true);
    let (outcome, _out) = run_on(&c.target, &scenarios(&["db-outage"]), 15).await;
    let n = notes(&outcome, "db-outage");
    eprintln!("ok-while-database-down on sqlite: {n}");
    assert!(count_before(&n, "acknowledged)").unwrap_or(0) > 0, "{n}");
    assert_eq!(
        verdict(&outcome.report, "db-outage", InvariantId::I1),
        Some(Verdict::Fail),
        "{:#?}",
        non_passing(&outcome.report)
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kills_land_under_load_when_the_receiver_is_slow_to_restart() -> TestResult {
    // An interpreter or a pre-forking server: ready 0.8 s after each start.
    // Kills at fixed offsets fired the moment it was ready, with nothing in
    // flight; placed by the traffic, they interrupt attempts.
    let mut c = child(None, None, true);
    let life = c.target.lifecycle.as_mut().expect("lifecycle");
    life.start = format!("sleep 0.8; {}", life.start);
    let started = Instant::now();
    let (outcome, _out) = run_on(&c.target, &scenarios(&["kill-under-load"]), 17).await;
    let kul = notes(&outcome, "kill-under-load");
    eprintln!(
        "slow restart, seed 17, {:.1}s: {kul}",
        started.elapsed().as_secs_f64()
    );
    assert_all_pass(&outcome, "slow restart");
    let kills = count_before(&kul, "kill(s) injected").unwrap_or(0);
    let interrupted = count_before(&kul, "attempt(s) interrupted").unwrap_or(0);
    assert!(kills > 0 && interrupted > 0, "{kul}");
    assert!(kul.contains(" 0 acknowledged deliveries lost"), "{kul}");
    // No kill fired the moment the receiver was ready again: each one after
    // a restart waited for the restarted receiver to acknowledge attempts.
    let history = std::fs::read_to_string(outcome.dir.join("kill-under-load/history.jsonl"))?;
    let mut acks_since_restart: Option<usize> = None;
    let mut checked = 0;
    for line in history.lines() {
        let e: serde_json::Value = serde_json::from_str(line)?;
        match (
            e["type"].as_str(),
            e["fault"].as_str(),
            e["outcome"].as_str(),
        ) {
            (Some("fault"), Some("restart"), _) => acks_since_restart = Some(0),
            (Some("fault"), Some("kill"), _) => {
                if let Some(n) = acks_since_restart {
                    assert!(n >= 1, "a kill fired with no ack since the restart: {kul}");
                    checked += 1;
                }
                acks_since_restart = None;
            }
            (Some("attempt"), _, Some("ok")) => {
                if let Some(n) = acks_since_restart.as_mut() {
                    *n += 1;
                }
            }
            _ => {}
        }
    }
    assert!(checked > 0, "some kill followed a restart: {kul}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_booting_worker_is_killed_only_once_it_is_ready_and_holds_work() -> TestResult {
    // A worker that takes 1.5 s to boot (an interpreter loading its app, a
    // Celery worker connecting to its broker), killed by signals, not by
    // crash points: no kill may land while it boots, and each kill must
    // meet it holding work.
    let mut c = child(None, None, true);
    let life = c.target.lifecycle.as_mut().expect("lifecycle");
    life.failpoints = false;
    let worker = life.worker.as_mut().expect("a separate worker");
    worker.start = format!("sleep 1.5; {}", worker.start);
    let (outcome, _out) = run_on(&c.target, &scenarios(&["worker-crash"]), 3).await;
    let said = notes(&outcome, "worker-crash");
    let history = std::fs::read_to_string(outcome.dir.join("worker-crash/history.jsonl"))?;
    let faults: Vec<&str> = history
        .lines()
        .filter(|l| l.starts_with("{\"type\":\"fault\""))
        .collect();
    eprintln!("slow worker: {said}\n{}", faults.join("\n"));
    assert_all_pass(&outcome, "slow worker");
    let mut started: Option<chrono::DateTime<chrono::FixedOffset>> = None;
    let (mut kills, mut after_restart) = (0, 0);
    for line in history.lines() {
        let e: serde_json::Value = serde_json::from_str(line)?;
        let action = e["action"].as_str().unwrap_or_default();
        if e["type"].as_str() != Some("fault") || !action.contains("worker") {
            continue;
        }
        let at = chrono::DateTime::parse_from_rfc3339(e["at"].as_str().unwrap_or_default())?;
        match e["fault"].as_str() {
            Some("restart") if action.starts_with("start worker") => {
                // The restart line is written once the start returned; the
                // process began up to its boot before.
                started = Some(at);
            }
            Some("kill") => {
                kills += 1;
                let detail = e["detail"].as_str().unwrap_or_default();
                assert!(
                    detail.starts_with("on answer: a 2xx read, the worker working (")
                        && !detail.contains("(0 rows settled"),
                    "a worker kill that did not wait for the worker to work: {line}"
                );
                if let Some(s) = started.take() {
                    let since = at - s;
                    assert!(
                        since >= chrono::Duration::milliseconds(1),
                        "a kill before the restarted worker was up: {line}"
                    );
                    after_restart += 1;
                }
            }
            _ => {}
        }
    }
    assert!(
        kills >= 4,
        "four kills that met work, in {kills} kills: {said}"
    );
    assert!(after_restart >= 3, "kills after restarts: {after_restart}");
    // Each kill after the first waited for the worker's boot: the kill
    // lines come at least its 1.5 s after the kill before them.
    let kill_times: Vec<_> = history
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| {
            e["fault"].as_str() == Some("kill")
                && e["action"].as_str().unwrap_or_default().contains("worker")
        })
        .filter_map(|e| chrono::DateTime::parse_from_rfc3339(e["at"].as_str()?).ok())
        .collect();
    for w in kill_times.windows(2) {
        assert!(
            w[1] - w[0] >= chrono::Duration::milliseconds(1500),
            "a kill {} ms after the one before: the worker was still booting",
            (w[1] - w[0]).num_milliseconds()
        );
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kills_that_interrupt_nothing_leave_kill_under_load_unknown() -> TestResult {
    // A start command that hands the server off (a wrapper that daemonizes
    // it, a container runtime that returns): the process the harness
    // supervises and kills is not the one answering. Here the receiver runs
    // in this test process and the lifecycle supervises a stand-in. Every
    // kill lands while requests are in flight, and none interrupts one.
    let (receiver, mut target) = hookstorm_cli::builtin::start(None, None).await?;
    let ready = target
        .state
        .http
        .as_deref()
        .expect("the embedded receiver has an admin URL")
        .replace("/state", "/healthz");
    target.lifecycle = Some(hookstorm::lifecycle::LifecycleConfig {
        start: "exec sleep 600".into(),
        dir: None,
        env: Default::default(),
        ready: hookstorm::lifecycle::Ready::Http { http: ready },
        ready_timeout: None,
        failpoints: false,
        worker: None,
    });
    let (outcome, _out) = run_on(&target, &scenarios(&["kill-under-load"]), 18).await;
    receiver.shutdown().await;
    let s = &outcome.report.scenarios[0];
    let n = s.said().join(" | ");
    eprintln!("kills hitting a stand-in: {:?}; {n}", s.check.verdict());
    assert!(count_before(&n, "kill(s) injected").unwrap_or(0) > 0, "{n}");
    assert_eq!(count_before(&n, "attempt(s) interrupted"), Some(0), "{n}");
    assert_eq!(s.check.verdict(), Verdict::Unknown, "{n}");
    let i1 = s.check.result(InvariantId::I1).expect("I1 checked");
    assert!(i1.summary.contains("not exercised"), "{}", i1.summary);
    assert!(
        n.contains("0 of 5 kills of the receiver interrupted work"),
        "{n}"
    );
    Ok(())
}

#[test]
fn a_process_scenario_against_a_target_without_lifecycle_is_skipped_with_a_hint() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let (receiver, target) = hookstorm_cli::builtin::start(None, None).await.unwrap();
        let (outcome, _out) = run_on(&target, &scenarios(&["kill-under-load"]), 16).await;
        receiver.shutdown().await;
        let s = &outcome.report.scenarios[0];
        let skip = s.skipped.as_ref().expect("skipped, not run");
        assert_eq!(
            skip.need,
            Some(hookstorm::findings::coverage::Need::Lifecycle)
        );
        assert!(skip.reason.contains("[lifecycle]"), "{skip:?}");
        assert_eq!(s.verdict(false), None);
    });
}

/// Pids whose parent is `ppid`.
fn children_of(ppid: u32) -> Vec<i32> {
    hookstorm::lifecycle::processes()
        .into_iter()
        .filter(|p| p.ppid as u32 == ppid)
        .map(|p| p.pid)
        .collect()
}

/// A target file whose receiver serves on two ports this test reserves
/// (and holds for as long as it keeps the reservations).
fn write_lifecycle_target(dir: &Path) -> std::io::Result<(std::path::PathBuf, [Reservation; 2])> {
    let ports = [Reservation::new()?, Reservation::new()?];
    let web = ports[0].addr()?.port();
    let admin = ports[1].addr()?.port();
    let token = hookstorm_receiver::config::random_token();
    let secret = format!("whsec_{}", hookstorm_receiver::config::random_token());
    let db = dir.join("r.db");
    let text = format!(
        r#"url = "http://127.0.0.1:{web}/webhooks/{{account}}"
[accounts.acct_a]
secrets = ["{secret}"]
[state]
http = "http://127.0.0.1:{admin}/state"
token = "{token}"
[lifecycle]
start = "exec {{hookstorm}} receiver serve --db sqlite://{db} --listen 127.0.0.1:{web} --admin-listen 127.0.0.1:{admin} --reuse-port"
env = {{ HOOKSTORM_ADMIN_TOKEN = "{token}", HOOKSTORM_RECEIVER_ACCOUNTS = "acct_a={secret}" }}
ready = {{ http = "http://127.0.0.1:{admin}/healthz" }}
ready_timeout = "20s"
"#,
        db = db.display()
    );
    let path = dir.join("target.toml");
    std::fs::write(&path, text)?;
    Ok((path, ports))
}

/// Whether `GET /healthz` on `admin` answers 200 within half a second.
fn healthy(admin: std::net::SocketAddr) -> bool {
    crate::common::get_status(admin, "/healthz", None, Duration::from_millis(500)) == Some(200)
}

#[test]
fn ctrl_c_mid_run_leaves_no_receiver_process_behind() -> TestResult {
    let dir = tempfile::tempdir()?;
    let (target, ports) = write_lifecycle_target(dir.path())?;
    let mut run = Command::new(env!("CARGO_BIN_EXE_hookstorm"))
        .args(["run", "--target"])
        .arg(&target)
        .args(["--scenario-dir"])
        .arg(scenario_dir())
        .args([
            "--scenario",
            "kill-under-load",
            "--seed",
            "3",
            "--time-scale",
            "1",
            "--out",
        ])
        .arg(dir.path().join("reports"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut groups = Vec::new();
    while Instant::now() < deadline {
        groups = children_of(run.id());
        let up = healthy(ports[1].addr()?);
        if !groups.is_empty() && up {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!groups.is_empty(), "hookstorm started no receiver");
    // Mid-run: the stream is being sent and the receiver is being killed,
    // seen as a receiver the first look did not find (one was killed and
    // restarted).
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let now = children_of(run.id());
        if now.iter().any(|pid| !groups.contains(pid)) {
            groups.extend(now);
            break;
        }
        assert!(
            run.try_wait()?.is_none(),
            "the run ended before a receiver was restarted"
        );
        assert!(
            Instant::now() < deadline,
            "no receiver was killed and restarted: {now:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // SAFETY: sends SIGINT to the child this test started.
    unsafe {
        libc::kill(run.id() as i32, libc::SIGINT);
    }
    let deadline = Instant::now() + Duration::from_secs(15);
    let status = loop {
        if let Some(s) = run.try_wait()? {
            break s;
        }
        assert!(
            Instant::now() < deadline,
            "hookstorm did not exit on SIGINT"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(130));
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let survivors: Vec<i32> = groups.iter().flat_map(|g| group_members(*g)).collect();
        if survivors.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "processes survived the interrupted run: {survivors:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}
