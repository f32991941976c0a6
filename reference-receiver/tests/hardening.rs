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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_holding_2000_connections_leaves_room_for_another() -> Result<()> {
    let Some(t) = start(StoreKind::Sqlite, config()).await? else {
        return Ok(());
    };
    let addr = t.rx.webhook_addr;
    // The greedy client, from 127.0.0.1, tries to hold 2,000 connections.
    let greedy = tokio::task::spawn_blocking(move || -> Result<Vec<TcpStream>> {
        let mut conns = Vec::new();
        for _ in 0..2000 {
            let mut s = TcpStream::connect(addr)?;
            let _ = s.write_all(b"P");
            conns.push(s);
        }
        Ok(conns)
    })
    .await??;
    tokio::time::sleep(Duration::from_millis(500)).await;
    // Still open: a read without waiting finds nothing yet (the others
    // were answered 503 and closed).
    let open = |s: &mut TcpStream| -> bool {
        let _ = s.set_nonblocking(true);
        let mut buf = [0u8; 256];
        matches!(s.read(&mut buf), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
    };
    let mut greedy = greedy;
    let held = greedy.iter_mut().map(open).filter(|o| *o).count();
    ensure!(
        held <= hookstorm_receiver::app::per_client(MAX_WEBHOOK_CONNECTIONS),
        "one client holds {held} connections"
    );
    // A well-behaved client, from 127.0.0.2, is answered, not turned away.
    for _ in 0..4 {
        let socket = tokio::net::TcpSocket::new_v4()?;
        socket.bind("127.0.0.2:0".parse()?)?;
        let mut s = socket.connect(addr).await?.into_std()?;
        s.set_nonblocking(false)?;
        s.set_read_timeout(Some(Duration::from_secs(5)))?;
        s.write_all(b"POST /webhooks/acct_a HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}")?;
        let mut answer = String::new();
        let _ = s.read_to_string(&mut answer);
        ensure!(
            answer.starts_with("HTTP/1.1 4"),
            "the other client got {:?}",
            answer.lines().next()
        );
    }
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
