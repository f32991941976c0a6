//! Each deliberately broken variant changes the behaviour it claims to (on SQLite;
//! `ok-while-database-down` needs a database that can go away, so Postgres).

use anyhow::{ensure, Result};
use hookstorm_receiver::failpoint::Failpoints;
use hookstorm_receiver::store::WorkerRules;
use hookstorm_receiver::{spawn, Defect};
use http::Method;

use crate::common::{
    config, now, shared_pg, signed, start, Delivery, StoreKind, Target, SECRET_A, SECRET_B,
};

async fn with(defect: Defect) -> Result<Target> {
    Ok(start(StoreKind::Sqlite, config().with_defect(Some(defect)))
        .await?
        .expect("sqlite always runs"))
}

fn at(task: &str, key: &str, created: &str) -> Delivery {
    Delivery::completed(task, key, created)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ack_before_commit_acknowledges_before_the_row_exists() -> Result<()> {
    let t = with(Defect::AckBeforeCommit).await?;
    ensure!(
        t.deliver(&at("tsk_1", "job-1", "2026-11-29T10:00:00Z"))
            .await?
            == 204
    );
    ensure!(!t.rx.store.contains("acct_a".into(), "tsk_1".into()).await?);
    ensure!(t.drained().await?.inbox.len() <= 1);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dedup_on_webhook_id_stores_a_redelivery_under_a_new_id_twice() -> Result<()> {
    let t = with(Defect::DedupOnWebhookId).await?;
    let d = at("tsk_1", "job-1", "2026-11-29T10:00:00Z");
    ensure!(
        t.http
            .deliver(&t.url("acct_a"), SECRET_A, &d, "msg_1")
            .await?
            == 204
    );
    ensure!(
        t.http
            .deliver(&t.url("acct_a"), SECRET_A, &d, "msg_1")
            .await?
            == 204
    );
    ensure!(
        t.http
            .deliver(&t.url("acct_a"), SECRET_A, &d, "msg_2")
            .await?
            == 204
    );
    let s = t.drained().await?;
    ensure!(
        s.inbox.len() == 2 && s.inbox.iter().all(|r| r.key == "tsk_1"),
        "{:?}",
        s.inbox
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_then_insert_stores_concurrent_duplicates() -> Result<()> {
    let t = with(Defect::CheckThenInsert).await?;
    let body = at("tsk_1", "job-1", "2026-11-29T10:00:00Z").body();
    let h = signed(SECRET_A, &body, "msg_1", now());
    let url = t.url("acct_a");
    let sends = (0..6).map(|_| t.http.send(Method::POST, &url, &h, &body));
    for r in futures_util::future::join_all(sends).await {
        ensure!(r?.0 == 204);
    }
    let s = t.drained().await?;
    ensure!(s.inbox.len() > 1, "{:?}", s.inbox);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn last_arrival_wins_picks_the_latest_received_not_the_latest_created() -> Result<()> {
    let t = with(Defect::LastArrivalWins).await?;
    ensure!(
        t.deliver(&at("tsk_new", "job-1-r1", "2026-11-29T11:00:00Z"))
            .await?
            == 204
    );
    ensure!(
        t.deliver(&at("tsk_old", "job-1", "2026-11-29T10:00:00Z"))
            .await?
            == 204
    );
    let w = t.drained().await?.winners.unwrap();
    ensure!(w.len() == 1 && w[0].task_id == "tsk_old", "{w:?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_overwrites_completed_lets_a_later_failure_win() -> Result<()> {
    let t = with(Defect::FailedOverwritesCompleted).await?;
    ensure!(
        t.deliver(&at("tsk_ok", "job-1", "2026-11-29T10:00:00Z"))
            .await?
            == 204
    );
    ensure!(
        t.deliver(&Delivery::failed(
            "tsk_bad",
            "job-1-r1",
            "2026-11-29T10:05:00Z"
        ))
        .await?
            == 204
    );
    let w = t.drained().await?.winners.unwrap();
    ensure!(w.len() == 1 && w[0].task_id == "tsk_bad", "{w:?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keeps_retry_suffix_splits_one_job_into_two() -> Result<()> {
    let t = with(Defect::KeepsRetrySuffix).await?;
    ensure!(
        t.deliver(&at("tsk_1", "job-1", "2026-11-29T10:00:00Z"))
            .await?
            == 204
    );
    ensure!(
        t.deliver(&at("tsk_2", "job-1-r1", "2026-11-29T10:05:00Z"))
            .await?
            == 204
    );
    let w = t.drained().await?.winners.unwrap();
    ensure!(w.len() == 2, "{w:?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stores_test_deliveries_keeps_a_test_row() -> Result<()> {
    let t = with(Defect::StoresTestDeliveries).await?;
    let mut d = at("tsk_test", "job-t", "2026-11-29T10:00:00Z");
    d.test = true;
    ensure!(t.deliver(&d).await? == 204);
    ensure!(t.drained().await?.inbox.len() == 1);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skips_signature_check_stores_an_unsigned_delivery() -> Result<()> {
    let t = with(Defect::SkipsSignatureCheck).await?;
    let body = at("tsk_1", "job-1", "2026-11-29T10:00:00Z").body();
    ensure!(
        t.http
            .send(Method::POST, &t.url("acct_a"), &[], &body)
            .await?
            .0
            == 204
    );
    ensure!(t.drained().await?.inbox.len() == 1);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ignores_timestamp_tolerance_accepts_an_hour_old_signature() -> Result<()> {
    let t = with(Defect::IgnoresTimestampTolerance).await?;
    let body = at("tsk_1", "job-1", "2026-11-29T10:00:00Z").body();
    let h = signed(SECRET_A, &body, "m", now() - 3600);
    ensure!(
        t.http
            .send(Method::POST, &t.url("acct_a"), &h, &body)
            .await?
            .0
            == 204
    );
    ensure!(t.drained().await?.inbox.len() == 1);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rejects_duplicates_409_answers_409_and_keeps_one_row() -> Result<()> {
    let t = with(Defect::RejectsDuplicates409).await?;
    let d = at("tsk_1", "job-1", "2026-11-29T10:00:00Z");
    ensure!(t.deliver(&d).await? == 204);
    ensure!(t.deliver(&d).await? == 409);
    ensure!(t.drained().await?.inbox.len() == 1);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requeues_duplicates_processes_a_redelivered_row_and_runs_its_effect_twice() -> Result<()> {
    let t = with(Defect::RequeuesDuplicates).await?;
    let d = at("tsk_1", "job-1", "2026-11-29T10:00:00Z");
    ensure!(t.deliver(&d).await? == 204);
    let first = t.drained().await?;
    let count = |s: &hookstorm::state::State| -> u64 {
        s.effects
            .iter()
            .flatten()
            .filter(|e| e.key == "tsk_1")
            .map(|e| e.count)
            .sum()
    };
    ensure!(count(&first) == 1, "{:?}", first.effects);
    // The redelivery arrives after the row was processed: the row is
    // re-opened (in the background, after the 204) and processed again.
    ensure!(t.deliver(&d).await? == 204);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let second = loop {
        let s = t.drained().await?;
        if count(&s) >= 2 || std::time::Instant::now() > deadline {
            break s;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    ensure!(second.inbox.len() == 1, "{:?}", second.inbox);
    ensure!(count(&second) == 2, "{:?}", second.effects);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ok_while_database_down_acknowledges_what_it_cannot_store() -> Result<()> {
    let Some(pg) = tokio::task::spawn_blocking(shared_pg).await? else {
        return Ok(());
    };
    // A database that is then dropped stands in for one that went away.
    let url = pg.fresh_database().await?;
    let rx = spawn(
        config().with_defect(Some(Defect::OkWhileDatabaseDown)),
        &url,
    )
    .await?;
    let name = url.rsplit('/').next().unwrap().to_string();
    let (client, conn) = tokio_postgres::connect(&pg.url(), tokio_postgres::NoTls).await?;
    tokio::spawn(conn);
    client
        .batch_execute(&format!("drop database {name} with (force)"))
        .await?;
    let http = crate::common::Http::new();
    let status = http
        .deliver(
            &rx.webhook_url("acct_a"),
            SECRET_A,
            &at("tsk_1", "job-1", "2026-11-29T10:00:00Z"),
            "m",
        )
        .await?;
    ensure!(status == 204, "got {status}");
    rx.shutdown().await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requeues_outage_buffer_processes_a_duplicate_kept_during_an_outage_twice() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("rx.db");
    let rx = spawn(
        config().with_defect(Some(Defect::RequeuesOutageBuffer)),
        &format!("sqlite://{}", path.display()),
    )
    .await?;
    // One writer thread runs the worker's batches and the inserts: under the
    // lock below, a worker batch queued first waits its 5 s out before the
    // insert waits its own, so an answer can take twice the busy timeout.
    let t = crate::common::Http::new().with_timeout(std::time::Duration::from_secs(30));
    let url = rx.webhook_url("acct_a");
    let old = at("tsk_old", "job-1", "2026-11-29T10:00:00Z");
    ensure!(t.deliver(&url, SECRET_A, &old, "msg_1").await? == 204);
    let effects = |s: &hookstorm::state::State, key: &str| -> u64 {
        s.effects
            .iter()
            .flatten()
            .filter(|e| e.key == key)
            .map(|e| e.count)
            .sum()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while effects(&rx.store.state(Default::default()).await?, "tsk_old") < 1 {
        ensure!(std::time::Instant::now() < deadline, "never processed");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    // The database is cut the way the harness cuts SQLite: an exclusive
    // lock, which an insert waits on (5 s) and then gives up.
    let lock = rusqlite::Connection::open(&path)?;
    lock.execute_batch("BEGIN EXCLUSIVE")?;
    // The duplicate's insert gives up on the lock; it is kept and acknowledged.
    ensure!(t.deliver(&url, SECRET_A, &old, "msg_1").await? == 204);
    lock.execute_batch("ROLLBACK")?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(8);
    let s = loop {
        let s = rx.store.state(Default::default()).await?;
        if effects(&s, "tsk_old") >= 2 {
            break s;
        }
        ensure!(std::time::Instant::now() < deadline, "{:?}", s.effects);
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    // Written back, its row was there: re-opened, processed a second time.
    ensure!(s.inbox.len() == 1, "{:?}", s.inbox);
    ensure!(effects(&s, "tsk_old") == 2, "{:?}", s.effects);
    rx.shutdown().await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn poison_blocks_batch_leaves_the_whole_batch_unprocessed() -> Result<()> {
    let t = start(
        StoreKind::Sqlite,
        config()
            .with_defect(Some(Defect::PoisonBlocksBatch))
            .with_worker(false),
    )
    .await?
    .unwrap();
    ensure!(
        t.deliver(&at("tsk_1", "job-1", "2026-11-29T10:00:00Z"))
            .await?
            == 204
    );
    ensure!(
        t.deliver(&at("tsk_poison", "job-2", "2026-02-30T25:61:00Z"))
            .await?
            == 204
    );
    let rules = WorkerRules::new(Some(Defect::PoisonBlocksBatch), 64, Failpoints::none());
    for _ in 0..2 {
        let out = t.rx.store.process_batch(rules.clone()).await?;
        ensure!(out.rolled_back, "{out:?}");
    }
    let s = t.state().await?;
    ensure!(s.inbox.iter().all(|r| !r.processed), "{:?}", s.inbox);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ignores_account_scope_accepts_another_accounts_secret() -> Result<()> {
    let t = with(Defect::IgnoresAccountScope).await?;
    let d = at("tsk_1", "job-1", "2026-11-29T10:00:00Z");
    ensure!(t.http.deliver(&t.url("acct_a"), SECRET_B, &d, "m").await? == 204);
    // Same task id under another account: swallowed as a duplicate.
    ensure!(t.http.deliver(&t.url("acct_b"), SECRET_B, &d, "m").await? == 204);
    let s = t.drained().await?;
    ensure!(s.inbox.len() == 1, "{:?}", s.inbox);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redirects_to_trailing_slash_answers_308() -> Result<()> {
    let t = with(Defect::RedirectsToTrailingSlash).await?;
    let d = at("tsk_1", "job-1", "2026-11-29T10:00:00Z");
    let body = d.body();
    let h = signed(SECRET_A, &body, "m", now());
    let (status, headers, _) = t
        .http
        .send(Method::POST, &t.url("acct_a"), &h, &body)
        .await?;
    ensure!(status == 308, "got {status}");
    ensure!(headers.get("location").unwrap() == "/webhooks/acct_a/");
    ensure!(t.state().await?.inbox.is_empty());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_sequence_overwrites_applies_a_lower_sequence() -> Result<()> {
    let t = with(Defect::StaleSequenceOverwrites).await?;
    for (id, seq) in [("tsk_3", 3), ("tsk_2", 2)] {
        let mut d = at(id, &format!("job-{id}"), "2026-11-29T10:00:00Z");
        d.resource = Some(("order-7".into(), seq));
        ensure!(t.deliver(&d).await? == 204);
        t.drained().await?;
    }
    let r = t.drained().await?.resources.unwrap();
    ensure!(r.len() == 1 && r[0].sequence == 2, "{r:?}");
    Ok(())
}

/// A defect's receiver restarted on the same database (as the kill
/// scenarios do) keeps every row: only a change of inbox key recreates the
/// table, and the worker (which opens the store with the default key) never
/// does, so what `run --defect check-then-insert` reports after a kill is
/// the defect's doing, never a wiped inbox.
#[tokio::test]
async fn a_restarted_defect_store_keeps_its_rows_and_only_a_new_key_recreates_the_inbox(
) -> Result<()> {
    let dir = tempfile::tempdir()?;
    restarts_keep_rows(&format!("sqlite://{}", dir.path().join("r.db").display())).await
}

/// The same on Postgres (skipped without `initdb`, except in CI).
#[tokio::test]
async fn a_restarted_defect_store_keeps_its_rows_on_postgres() -> Result<()> {
    let Some(pg) = tokio::task::spawn_blocking(shared_pg).await? else {
        return Ok(());
    };
    restarts_keep_rows(&pg.fresh_database().await?).await
}

async fn restarts_keep_rows(url: &str) -> Result<()> {
    use hookstorm_receiver::store::{open_store_with, Keying, NewDelivery, StoreOptions};
    let url = url.to_string();
    let opts = |keying| StoreOptions {
        keying,
        ..StoreOptions::default()
    };
    let row = |task: &str| NewDelivery {
        account: "acct_a".into(),
        task_id: task.into(),
        webhook_id: None,
        body: "{}".into(),
    };
    let rows = |s: hookstorm::state::State| s.inbox.len();
    let server = open_store_with(&url, opts(Keying::Unconstrained)).await?;
    server.insert(row("t1")).await?;
    server.insert(row("t2")).await?;
    // The worker opens the same database with the default key.
    let worker = open_store_with(&url, StoreOptions::default()).await?;
    ensure!(rows(worker.state(Default::default()).await?) == 2);
    drop((server, worker));
    // A restart of the defect's server: both rows are still there, and the
    // inbox still has no unique key (the defect still works).
    let server = open_store_with(&url, opts(Keying::Unconstrained)).await?;
    ensure!(rows(server.state(Default::default()).await?) == 2);
    server.insert(row("t1")).await?;
    ensure!(rows(server.state(Default::default()).await?) == 3);
    drop(server);
    // Another defect's key: the inbox is recreated with it.
    let other = open_store_with(&url, opts(Keying::TaskOnly)).await?;
    ensure!(rows(other.state(Default::default()).await?) == 0);
    Ok(())
}
