//! A Postgres server stopped and restarted mid-run: 503 while it is away,
//! recovery when it returns, and no acknowledged row lost.

use std::time::{Duration, Instant};

use anyhow::{ensure, Result};
use hookstorm_receiver::pgtest::PgServer;
use hookstorm_receiver::spawn;

use crate::common::{config, Delivery, Http, SECRET_A};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_outage_gives_503_then_recovers_without_losing_acknowledged_rows() -> Result<()> {
    let Some(mut pg) = tokio::task::spawn_blocking(PgServer::start_or_skip).await? else {
        return Ok(());
    };
    let url = pg.fresh_database().await?;
    let rx = spawn(config(), &url).await?;
    let http = Http::new();
    let hook = rx.webhook_url("acct_a");
    let d = |i: usize| {
        Delivery::completed(
            &format!("tsk_{i}"),
            &format!("job-{i}"),
            "2026-11-29T10:00:00Z",
        )
    };
    let mut acked = Vec::new();
    for i in 0..5 {
        ensure!(http.deliver(&hook, SECRET_A, &d(i), "m").await? == 204);
        acked.push(format!("tsk_{i}"));
    }
    let mut pg = tokio::task::spawn_blocking(move || pg.stop_immediate().map(|_| pg)).await??;
    for i in 5..8 {
        let status = http.deliver(&hook, SECRET_A, &d(i), "m").await?;
        ensure!(
            status == 503,
            "delivery {i} while the database is down answered {status}"
        );
    }
    let health = http
        .send(
            http::Method::GET,
            &format!("{}/healthz", rx.admin_url()),
            &[],
            "",
        )
        .await?
        .0;
    ensure!(health == 503, "healthz answered {health}");
    pg = tokio::task::spawn_blocking(move || pg.start().map(|_| pg)).await??;
    // The sender retries; the receiver reconnects by itself.
    let deadline = Instant::now() + Duration::from_secs(10);
    for i in 5..8 {
        loop {
            let status = http.deliver(&hook, SECRET_A, &d(i), "m").await?;
            if status == 204 {
                acked.push(format!("tsk_{i}"));
                break;
            }
            ensure!(
                Instant::now() < deadline,
                "no recovery: delivery {i} still answers {status}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    let t_state = {
        let bearer = vec![(
            "Authorization".to_string(),
            format!("Bearer {}", rx.admin_token),
        )];
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let (status, _, text) = http
                .send(
                    http::Method::GET,
                    &format!("{}/state", rx.admin_url()),
                    &bearer,
                    "",
                )
                .await?;
            if status == 200 {
                let s: hookstorm::state::State = serde_json::from_str(&text)?;
                if s.drained() && s.inbox.len() == acked.len() {
                    break s;
                }
            }
            ensure!(Instant::now() < deadline, "not drained after recovery");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    for key in &acked {
        ensure!(
            t_state.inbox.iter().filter(|r| &r.key == key).count() == 1,
            "{key} lost or doubled"
        );
    }
    ensure!(t_state.effects.unwrap().iter().all(|e| e.count == 1));
    rx.shutdown().await?;
    drop(pg);
    Ok(())
}
