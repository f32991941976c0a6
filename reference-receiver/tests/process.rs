//! The real binary: a crash right after the commit (failpoint) followed by
//! a retry, and the worker running as its own process.

use std::os::unix::process::ExitStatusExt;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};
use hookstorm::state::State;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::common::{Delivery, Http, SECRET_A};

const BIN: &str = env!("CARGO_BIN_EXE_hookstorm-receiver");
const TOKEN: &str = "test-admin-token";

struct Running {
    child: Child,
    webhook: String,
    admin: String,
}

async fn serve(db: &str, extra: &[&str], failpoints: Option<&str>) -> Result<Running> {
    let mut cmd = Command::new(BIN);
    cmd.args([
        "serve",
        "--db",
        db,
        "--listen",
        "127.0.0.1:0",
        "--admin-listen",
        "127.0.0.1:0",
    ])
    .args([
        "--admin-token",
        TOKEN,
        "--account",
        &format!("acct_a={SECRET_A}"),
    ])
    .args(extra)
    .env_remove("HOOKSTORM_FAILPOINTS")
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .kill_on_drop(true);
    if let Some(fp) = failpoints {
        cmd.env("HOOKSTORM_FAILPOINTS", fp);
    }
    let mut child = cmd.spawn()?;
    let mut lines = BufReader::new(child.stdout.take().context("stdout")?).lines();
    let (mut webhook, mut admin) = (None, None);
    while webhook.is_none() || admin.is_none() {
        let line = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
            .await
            .context("no start-up line")??
            .context("receiver exited at start-up")?;
        if let Some(rest) = line.strip_prefix("webhooks: ") {
            webhook = Some(rest.replace("{account}", "acct_a"));
        } else if let Some(rest) = line.strip_prefix("admin:") {
            admin = Some(rest.trim().to_string());
        }
    }
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Ok(Running {
        child,
        webhook: webhook.unwrap(),
        admin: admin.unwrap(),
    })
}

async fn state(http: &Http, admin: &str) -> Result<State> {
    let bearer = vec![("Authorization".to_string(), format!("Bearer {TOKEN}"))];
    let (status, _, text) = http
        .send(http::Method::GET, &format!("{admin}/state"), &bearer, "")
        .await?;
    ensure!(status == 200, "state answered {status}");
    Ok(serde_json::from_str(&text)?)
}

async fn drained(http: &Http, admin: &str) -> Result<State> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let s = state(http, admin).await?;
        if s.drained() && !s.inbox.is_empty() {
            return Ok(s);
        }
        if Instant::now() > deadline {
            bail!("not drained: {s:?}");
        }
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
}

fn terminate(child: &Child) {
    if let Some(pid) = child.id() {
        unsafe {
            libc::kill(pid as i32, libc::SIGTERM);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_after_commit_then_retry_leaves_one_row_processed_once() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let db = format!("sqlite://{}", dir.path().join("rx.db").display());
    let http = Http::new();
    let d = Delivery::completed("tsk_1", "job-1", "2026-11-29T10:00:00Z");

    let mut first = serve(&db, &[], Some("crash-after-commit=1")).await?;
    let answer = http.deliver(&first.webhook, SECRET_A, &d, "msg_1").await;
    ensure!(
        answer.is_err(),
        "the crash should cut the answer, got {answer:?}"
    );
    let status = tokio::time::timeout(Duration::from_secs(10), first.child.wait()).await??;
    ensure!(status.signal() == Some(libc::SIGABRT), "exit {status:?}");

    let mut second = serve(&db, &[], None).await?;
    ensure!(http.deliver(&second.webhook, SECRET_A, &d, "msg_1").await? == 204);
    let s = drained(&http, &second.admin).await?;
    ensure!(s.inbox.len() == 1 && s.inbox[0].processed, "{:?}", s.inbox);
    let effects = s.effects.unwrap();
    ensure!(effects.len() == 1 && effects[0].count == 1, "{effects:?}");
    terminate(&second.child);
    let status = tokio::time::timeout(Duration::from_secs(10), second.child.wait()).await??;
    ensure!(status.success(), "graceful stop exited {status:?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_process_drains_the_inbox_of_a_server_without_worker() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let db = format!("sqlite://{}", dir.path().join("rx.db").display());
    let http = Http::new();
    let mut server = serve(&db, &["--no-worker"], None).await?;
    for i in 0..3 {
        let d = Delivery::completed(&format!("tsk_{i}"), "job-1", "2026-11-29T10:00:00Z");
        ensure!(http.deliver(&server.webhook, SECRET_A, &d, "m").await? == 204);
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    ensure!(state(&http, &server.admin)
        .await?
        .inbox
        .iter()
        .all(|r| !r.processed));
    let mut worker = Command::new(BIN)
        .args(["worker", "--db", &db])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let s = drained(&http, &server.admin).await?;
    ensure!(s.inbox.len() == 3 && s.results.unwrap().len() == 3);
    terminate(&worker);
    terminate(&server.child);
    let _ = tokio::time::timeout(Duration::from_secs(10), worker.wait()).await?;
    let _ = tokio::time::timeout(Duration::from_secs(10), server.child.wait()).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ack_before_commit_loses_an_acknowledged_delivery_when_it_crashes() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let db = format!("sqlite://{}", dir.path().join("rx.db").display());
    let http = Http::new();
    let d = Delivery::completed("tsk_1", "job-1", "2026-11-29T10:00:00Z");
    let mut first = serve(
        &db,
        &["--defect", "ack-before-commit"],
        Some("crash-before-commit=1"),
    )
    .await?;
    ensure!(http.deliver(&first.webhook, SECRET_A, &d, "msg_1").await? == 204);
    let status = tokio::time::timeout(Duration::from_secs(10), first.child.wait()).await??;
    ensure!(status.signal() == Some(libc::SIGABRT), "exit {status:?}");
    let mut second = serve(&db, &[], None).await?;
    ensure!(
        state(&http, &second.admin).await?.inbox.is_empty(),
        "the acknowledged row should be lost"
    );
    terminate(&second.child);
    let _ = tokio::time::timeout(Duration::from_secs(10), second.child.wait()).await?;
    Ok(())
}
