//! Process and database chaos for real: the reference receiver runs as a
//! child process (`hookstorm receiver`, separate worker) that the harness
//! kills, restarts and cuts off from its database. It survives every
//! process scenario on SQLite and Postgres (outages through the fault proxy
//! and through `pg_ctl -m immediate stop` / `start`); the variants these
//! scenarios target are caught; and an interrupted run leaves no process.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use hookstorm::check::{InvariantId, Verdict};
use hookstorm::lifecycle::{group_members, shell_quote};
use hookstorm::run::RunOutcome;
use hookstorm::scenario::{CutVia, FaultSpec};
use hookstorm::target::Target;
use hookstorm_receiver::child::{prepare, ChildOptions, ChildTarget};
use hookstorm_receiver::pgtest::PgServer;
use hookstorm_receiver::Defect;

use crate::common::*;

const PROCESS_SCENARIOS: [&str; 4] = [
    "db-outage",
    "kill-between-commit-and-ack",
    "kill-under-load",
    "worker-crash",
];

fn child(defect: Option<Defect>, db: Option<String>, proxy: bool) -> ChildTarget {
    let mut o = ChildOptions::new(format!(
        "{} receiver",
        shell_quote(env!("CARGO_BIN_EXE_hookstorm"))
    ));
    o.defect = defect;
    o.db = db;
    o.proxy = proxy;
    prepare(&o).expect("child target")
}

async fn run_on(
    target: &Target,
    scenarios: &[hookstorm::scenario::Scenario],
    seed: u64,
) -> (RunOutcome, tempfile::TempDir) {
    let out = tempfile::tempdir().expect("tempdir");
    let outcome = hookstorm::run::run(
        target,
        scenarios,
        &options(seed, out.path(), false),
        &mut |_| {},
    )
    .await
    .expect("run completes");
    (outcome, out)
}

fn notes(outcome: &RunOutcome, scenario: &str) -> String {
    outcome
        .report
        .scenarios
        .iter()
        .find(|s| s.name == scenario)
        .map(|s| s.notes.join(" | "))
        .unwrap_or_default()
}

fn assert_all_pass(outcome: &RunOutcome, what: &str) {
    let bad = non_passing(&outcome.report);
    assert!(bad.is_empty(), "{what}: {bad:#?}");
    for s in &outcome.report.scenarios {
        eprintln!("{what} · {}: {}", s.name, s.notes.join(" | "));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reference_receiver_on_sqlite_survives_every_process_fault() -> TestResult {
    let c = child(None, None, true);
    let (outcome, _out) = run_on(&c.target, &scenarios(&PROCESS_SCENARIOS), 11).await;
    assert_eq!(outcome.report.scenarios.len(), 4);
    assert_all_pass(&outcome, "sqlite");
    let kul = notes(&outcome, "kill-under-load");
    assert!(kul.contains("5 kill(s) injected"), "{kul}");
    assert!(kul.contains(" 0 acknowledged deliveries lost"), "{kul}");
    let kca = notes(&outcome, "kill-between-commit-and-ack");
    assert!(kca.contains("at crash points"), "{kca}");
    // Every action is in the history, and process output is in the report folder.
    let dir = &outcome.dir;
    let history = std::fs::read_to_string(dir.join("kill-under-load/history.jsonl"))?;
    assert_eq!(history.matches("\"fault\":\"kill\"").count(), 5);
    assert!(history.matches("\"fault\":\"restart\"").count() >= 5);
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
    let history = std::fs::read_to_string(outcome.dir.join("db-outage/history.jsonl"))?;
    assert!(history.contains("stop command") && history.contains("start command"));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ack_before_commit_is_caught_by_kill_between_commit_and_ack() -> TestResult {
    let c = child(Some(Defect::AckBeforeCommit), None, true);
    let (outcome, _out) = run_on(&c.target, &scenarios(&["kill-between-commit-and-ack"]), 14).await;
    assert_eq!(
        verdict(
            &outcome.report,
            "kill-between-commit-and-ack",
            InvariantId::I1
        ),
        Some(Verdict::Fail),
        "{:#?}",
        non_passing(&outcome.report)
    );
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

#[test]
fn a_process_scenario_against_a_target_without_lifecycle_is_skipped_with_a_hint() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let (receiver, target) = hookstorm_receiver::embedded::start(None, None)
            .await
            .unwrap();
        let (outcome, _out) = run_on(&target, &scenarios(&["kill-under-load"]), 16).await;
        receiver.shutdown().await;
        let s = &outcome.report.scenarios[0];
        let skip = s.skipped.as_ref().expect("skipped, not run");
        assert_eq!(skip.need, Some(hookstorm::coverage::Need::Lifecycle));
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

fn write_lifecycle_target(dir: &Path) -> std::io::Result<std::path::PathBuf> {
    let web = hookstorm_receiver::child::free_port()?;
    let admin = hookstorm_receiver::child::free_port()?;
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
start = "exec {{hookstorm}} receiver serve --db sqlite://{db} --listen 127.0.0.1:{web} --admin-listen 127.0.0.1:{admin}"
env = {{ HOOKSTORM_ADMIN_TOKEN = "{token}", HOOKSTORM_RECEIVER_ACCOUNTS = "acct_a={secret}" }}
ready = {{ http = "http://127.0.0.1:{admin}/healthz" }}
ready_timeout = "20s"
"#,
        db = db.display()
    );
    let path = dir.join("target.toml");
    std::fs::write(&path, text)?;
    Ok(path)
}

#[test]
fn ctrl_c_mid_run_leaves_no_receiver_process_behind() -> TestResult {
    let dir = tempfile::tempdir()?;
    let target = write_lifecycle_target(dir.path())?;
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
        let up = std::net::TcpStream::connect(
            std::fs::read_to_string(&target)?
                .lines()
                .find_map(|l| l.strip_prefix("url = \"http://"))
                .and_then(|r| r.split('/').next())
                .unwrap_or("127.0.0.1:1"),
        )
        .is_ok();
        if !groups.is_empty() && up {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!groups.is_empty(), "hookstorm started no receiver");
    // Mid-run: the stream is being sent and the receiver is being killed.
    std::thread::sleep(Duration::from_millis(700));
    let groups: Vec<i32> = children_of(run.id()).into_iter().chain(groups).collect();
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
