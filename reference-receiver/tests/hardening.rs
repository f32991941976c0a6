//! The reference receiver against slow and greedy clients, and the
//! separations it refuses to undo: clients that send nothing or half a
//! head are dropped after the header timeout, connections past the limit
//! get 503 instead of a port that no longer answers, the admin listener is
//! never the webhook address, and a short admin token is refused.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};
use hookstorm_receiver::app::{HEADER_TIMEOUT, MAX_WEBHOOK_CONNECTIONS};

use crate::common::{config, start, StoreKind, SECRET_A};

const BIN: &str = env!("CARGO_BIN_EXE_hookstorm-receiver");

/// Whether the server closed `s` (a read sees the end or a reset).
fn closed(s: &mut TcpStream) -> bool {
    s.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut buf = [0u8; 1];
    match s.read(&mut buf) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => !matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_and_half_sent_heads_are_dropped_after_the_header_timeout() -> Result<()> {
    let Some(t) = start(StoreKind::Sqlite, config()).await? else {
        return Ok(());
    };
    let addr = t.rx.webhook_addr;
    let held = tokio::task::spawn_blocking(move || -> Result<()> {
        let mut conns = Vec::new();
        for i in 0..40 {
            let mut s = TcpStream::connect(addr)?;
            if i % 2 == 0 {
                s.write_all(b"POST /webhooks/acct_a HTTP/1.1\r\nhost: x\r\n")?;
            }
            conns.push(s);
        }
        std::thread::sleep(HEADER_TIMEOUT + Duration::from_secs(2));
        let mut open = 0;
        for s in conns.iter_mut() {
            if !closed(s) {
                open += 1;
            }
        }
        ensure!(open == 0, "{open} of 40 slow connections still open");
        Ok(())
    });
    held.await??;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_past_the_limit_get_503_not_a_dead_port() -> Result<()> {
    let Some(t) = start(StoreKind::Sqlite, config()).await? else {
        return Ok(());
    };
    let addr = t.rx.webhook_addr;
    tokio::task::spawn_blocking(move || -> Result<()> {
        let mut conns = Vec::new();
        for _ in 0..MAX_WEBHOOK_CONNECTIONS {
            let mut s = TcpStream::connect(addr)?;
            s.write_all(b"P")?; // past the first-byte wait: holds a slot
            conns.push(s);
        }
        std::thread::sleep(Duration::from_millis(300));
        let start = Instant::now();
        let mut extra = TcpStream::connect(addr)?;
        extra.set_read_timeout(Some(Duration::from_secs(5)))?;
        let mut answer = String::new();
        extra.read_to_string(&mut answer)?;
        ensure!(
            answer.starts_with("HTTP/1.1 503"),
            "past the limit: {answer:?}"
        );
        ensure!(
            start.elapsed() < Duration::from_secs(2),
            "{:?}",
            start.elapsed()
        );
        Ok(())
    })
    .await??;
    Ok(())
}

async fn serve_fails(args: &[&str]) -> Result<String> {
    let out = tokio::time::timeout(
        Duration::from_secs(20),
        tokio::process::Command::new(BIN)
            .arg("serve")
            .args(args)
            .args(["--account", &format!("acct_a={SECRET_A}")])
            .env_remove("HOOKSTORM_ADMIN_TOKEN")
            .kill_on_drop(true)
            .output(),
    )
    .await
    .context("the receiver did not exit")??;
    ensure!(!out.status.success(), "it started");
    Ok(String::from_utf8_lossy(&out.stderr).into_owned())
}

#[tokio::test]
async fn the_admin_listener_on_the_webhook_address_is_refused() -> Result<()> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let dir = tempfile::tempdir()?;
    let db = format!("sqlite://{}", dir.path().join("r.db").display());
    let addr = format!("127.0.0.1:{port}");
    let e = serve_fails(&[
        "--db",
        &db,
        "--listen",
        &addr,
        "--admin-listen",
        &addr,
        "--reuse-port",
    ])
    .await?;
    ensure!(e.contains("is the webhook address"), "{e}");
    Ok(())
}

#[tokio::test]
async fn a_short_admin_token_is_refused() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let db = format!("sqlite://{}", dir.path().join("r.db").display());
    for token in ["", "x", "fifteen-chars!!"] {
        let e = serve_fails(&[
            "--db",
            &db,
            "--listen",
            "127.0.0.1:0",
            "--admin-listen",
            "127.0.0.1:0",
            "--admin-token",
            token,
        ])
        .await?;
        ensure!(e.contains("at least 16"), "{token:?}: {e}");
    }
    Ok(())
}
