//! The guide's behaviour, proven on both stores.

use anyhow::{ensure, Result};
use hookstorm_receiver::failpoint::Failpoints;
use hookstorm_receiver::store::WorkerRules;
use http::Method;
use proptest::strategy::{Just, Strategy, ValueTree};
use proptest::test_runner::{Config as PropConfig, TestRunner};

use crate::common::{config, now, signed, start, Delivery, StoreKind, SECRET_A, SECRET_B};
use crate::on_both_stores;

on_both_stores!(
    duplicate_delivered_concurrently_is_stored_once,
    duplicate_answers_204_like_the_first,
    test_delivery_is_answered_and_not_stored,
    bad_signature_gets_401_and_stores_nothing,
    oversized_body_gets_413_and_stores_nothing,
    winner_is_the_latest_completed_task_whatever_the_arrival_order,
    poison_row_is_marked_failed_and_does_not_block_its_batch,
    sequenced_resource_keeps_the_highest_sequence,
    admin_api_needs_the_token_and_is_not_on_the_webhook_port,
    state_is_served_as_json_lines_when_asked,
    a_state_of_many_chunks_is_streamed_whole_in_both_forms,
);

async fn duplicate_delivered_concurrently_is_stored_once(kind: StoreKind) -> Result<()> {
    let Some(t) = start(kind, config()).await? else {
        return Ok(());
    };
    let d = Delivery::completed("tsk_1", "job-1", "2026-11-29T10:00:00Z");
    let body = d.body();
    let h = signed(SECRET_A, &body, "msg_1", now());
    let url = t.url("acct_a");
    let sends = (0..8).map(|_| t.http.send(Method::POST, &url, &h, &body));
    let statuses: Vec<u16> = futures_util::future::join_all(sends)
        .await
        .into_iter()
        .map(|r| r.map(|r| r.0))
        .collect::<Result<_>>()?;
    ensure!(statuses.iter().all(|s| *s == 204), "statuses {statuses:?}");
    let s = t.drained().await?;
    ensure!(s.inbox.len() == 1, "inbox {:?}", s.inbox);
    let effects = s.effects.unwrap();
    ensure!(
        effects.len() == 1 && effects[0].count == 1,
        "effects {effects:?}"
    );
    t.rx.shutdown().await?;
    Ok(())
}

async fn duplicate_answers_204_like_the_first(kind: StoreKind) -> Result<()> {
    let Some(t) = start(kind, config()).await? else {
        return Ok(());
    };
    let d = Delivery::completed("tsk_1", "job-1", "2026-11-29T10:00:00Z");
    ensure!(t.deliver(&d).await? == 204);
    ensure!(t.deliver(&d).await? == 204);
    // The first configured account also answers on /webhooks.
    let url = format!("http://{}/webhooks", t.rx.webhook_addr);
    ensure!(t.http.deliver(&url, SECRET_A, &d, "msg_other").await? == 204);
    let s = t.drained().await?;
    ensure!(s.inbox.len() == 1, "inbox {:?}", s.inbox);
    ensure!(s.results.unwrap().len() == 1);
    Ok(())
}

async fn test_delivery_is_answered_and_not_stored(kind: StoreKind) -> Result<()> {
    let Some(t) = start(kind, config()).await? else {
        return Ok(());
    };
    let mut d = Delivery::completed("tsk_test", "job-t", "2026-11-29T10:00:00Z");
    d.test = true;
    ensure!(t.deliver(&d).await? == 204);
    ensure!(t.state().await?.inbox.is_empty());
    Ok(())
}

async fn bad_signature_gets_401_and_stores_nothing(kind: StoreKind) -> Result<()> {
    let Some(t) = start(kind, config()).await? else {
        return Ok(());
    };
    let d = Delivery::completed("tsk_1", "job-1", "2026-11-29T10:00:00Z");
    let body = d.body();
    let url = t.url("acct_a");
    // Wrong secret, another account's secret, stale timestamp, no header, tampered body.
    for h in [
        signed("not-the-secret", &body, "m", now()),
        signed(SECRET_B, &body, "m", now()),
        signed(SECRET_A, &body, "m", now() - 301),
        vec![],
    ] {
        let (status, _, _) = t.http.send(Method::POST, &url, &h, &body).await?;
        ensure!(status == 401, "got {status}");
    }
    let h = signed(SECRET_A, &body, "m", now());
    let tampered = body.replace("COMPLETED", "FAILED");
    ensure!(t.http.send(Method::POST, &url, &h, &tampered).await?.0 == 401);
    ensure!(
        t.http
            .deliver(&t.url("acct_nope"), SECRET_A, &d, "m")
            .await?
            == 404
    );
    ensure!(t.state().await?.inbox.is_empty());
    Ok(())
}

async fn oversized_body_gets_413_and_stores_nothing(kind: StoreKind) -> Result<()> {
    let Some(t) = start(kind, config().with_max_body(1024)).await? else {
        return Ok(());
    };
    let mut d = Delivery::completed("tsk_big", "job-1", "2026-11-29T10:00:00Z");
    d.task_id = format!("tsk_{}", "x".repeat(2000));
    ensure!(t.deliver(&d).await? == 413);
    // Chunked, with no Content-Length: the limit applies while reading.
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut sock = tokio::net::TcpStream::connect(t.rx.webhook_addr).await?;
    let chunk = "y".repeat(600);
    let req = format!(
        "POST /webhooks/acct_a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n{:x}\r\n{chunk}\r\n{:x}\r\n{chunk}\r\n0\r\n\r\n",
        chunk.len(),
        chunk.len()
    );
    sock.write_all(req.as_bytes()).await?;
    let mut answer = String::new();
    let _ = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        sock.read_to_string(&mut answer),
    )
    .await;
    ensure!(answer.starts_with("HTTP/1.1 413"), "answer {answer:?}");
    // Still healthy.
    ensure!(
        t.deliver(&Delivery::completed(
            "tsk_small",
            "job-1",
            "2026-11-29T10:00:00Z"
        ))
        .await?
            == 204
    );
    let s = t.drained().await?;
    ensure!(s.inbox.len() == 1 && s.inbox[0].key == "tsk_small");
    Ok(())
}

async fn winner_is_the_latest_completed_task_whatever_the_arrival_order(
    kind: StoreKind,
) -> Result<()> {
    let Some(t) = start(kind, config()).await? else {
        return Ok(());
    };
    let tasks = vec![
        ("tsk_a", "job-1", "COMPLETED", "2026-11-29T10:00:00Z"),
        ("tsk_c", "job-1-r1", "COMPLETED", "2026-11-29T10:05:00Z"),
        (
            "tsk_b",
            "job-1-r2",
            "COMPLETED",
            "2026-11-29T11:05:00+01:00",
        ),
        ("tsk_d", "job-1-r3", "FAILED", "2026-11-29T10:10:00Z"),
        ("tsk_e", "job-2", "FAILED", "2026-11-29T10:00:00Z"),
    ];
    let mut runner = TestRunner::new(PropConfig {
        cases: 16,
        ..PropConfig::default()
    });
    let strategy = Just(tasks).prop_shuffle();
    for _ in 0..16 {
        let order = strategy
            .new_tree(&mut runner)
            .map_err(|e| anyhow::anyhow!("{e}"))?
            .current();
        t.reset().await?;
        for (id, key, status, created) in &order {
            let d = if *status == "COMPLETED" {
                Delivery::completed(id, key, created)
            } else {
                Delivery::failed(id, key, created)
            };
            ensure!(t.deliver(&d).await? == 204);
        }
        let s = t.drained().await?;
        let winners = s.winners.unwrap();
        ensure!(winners.len() == 1, "order {order:?}: winners {winners:?}");
        ensure!(
            winners[0].job_key == "job-1" && winners[0].task_id == "tsk_c",
            "order {order:?}: winners {winners:?}"
        );
    }
    Ok(())
}

async fn poison_row_is_marked_failed_and_does_not_block_its_batch(kind: StoreKind) -> Result<()> {
    let Some(t) = start(kind, config().with_worker(false)).await? else {
        return Ok(());
    };
    ensure!(
        t.deliver(&Delivery::completed(
            "tsk_1",
            "job-1",
            "2026-11-29T10:00:00Z"
        ))
        .await?
            == 204
    );
    ensure!(
        t.deliver(&Delivery::completed(
            "tsk_poison",
            "job-2",
            "2026-02-30T25:61:00Z"
        ))
        .await?
            == 204
    );
    ensure!(
        t.deliver(&Delivery::completed(
            "tsk_3",
            "job-3",
            "2026-11-29T10:00:00Z"
        ))
        .await?
            == 204
    );
    let out =
        t.rx.store
            .process_batch(WorkerRules::new(None, 64, Failpoints::none()))
            .await?;
    ensure!(
        out.claimed == 3 && out.processed == 2 && out.failed == 1,
        "{out:?}"
    );
    let s = t.state().await?;
    ensure!(s.drained());
    let poison = s.inbox.iter().find(|r| r.key == "tsk_poison").unwrap();
    ensure!(
        poison
            .error
            .as_deref()
            .is_some_and(|e| e.contains("createdAt")),
        "{poison:?}"
    );
    ensure!(s.inbox.iter().filter(|r| r.error.is_none()).count() == 2);
    ensure!(s.results.as_ref().unwrap().len() == 2);
    // Nothing left to do: re-running changes nothing.
    let again =
        t.rx.store
            .process_batch(WorkerRules::new(None, 64, Failpoints::none()))
            .await?;
    ensure!(again.claimed == 0);
    ensure!(t.state().await? == s);
    Ok(())
}

async fn sequenced_resource_keeps_the_highest_sequence(kind: StoreKind) -> Result<()> {
    let Some(t) = start(kind, config()).await? else {
        return Ok(());
    };
    for (id, seq) in [("tsk_1", 1), ("tsk_3", 3), ("tsk_2", 2)] {
        let mut d = Delivery::completed(id, &format!("job-{id}"), "2026-11-29T10:00:00Z");
        d.resource = Some(("order-7".into(), seq));
        ensure!(t.deliver(&d).await? == 204);
        t.drained().await?;
    }
    let s = t.drained().await?;
    let r = s.resources.unwrap();
    ensure!(r.len() == 1 && r[0].sequence == 3, "{r:?}");
    Ok(())
}

async fn admin_api_needs_the_token_and_is_not_on_the_webhook_port(kind: StoreKind) -> Result<()> {
    let Some(t) = start(kind, config()).await? else {
        return Ok(());
    };
    let admin = t.rx.admin_url();
    let none: Vec<(String, String)> = vec![];
    let wrong = vec![("Authorization".to_string(), "Bearer nope".to_string())];
    for (method, path) in [
        (Method::GET, "/state"),
        (Method::POST, "/reset"),
        (Method::POST, "/reconcile"),
        (Method::POST, "/setup"),
    ] {
        ensure!(
            t.http
                .send(method.clone(), &format!("{admin}{path}"), &none, "")
                .await?
                .0
                == 401
        );
        ensure!(
            t.http
                .send(method.clone(), &format!("{admin}{path}"), &wrong, "")
                .await?
                .0
                == 401
        );
        let on_webhook = format!("http://{}{path}", t.rx.webhook_addr);
        let status = t.http.send(method, &on_webhook, &t.bearer(), "").await?.0;
        ensure!(
            status == 404 || status == 405,
            "{path} on the webhook port answered {status}"
        );
    }
    ensure!(
        t.http
            .send(Method::GET, &format!("{admin}/state"), &t.bearer(), "")
            .await?
            .0
            == 200
    );
    ensure!(
        t.http
            .send(Method::GET, &format!("{admin}/healthz"), &none, "")
            .await?
            .0
            == 200
    );
    let setup =
        r#"{"state":"tasks-submitted","params":{"task_ids":["tsk_1","tsk_2"],"account":"acct_a"}}"#;
    let (status, _, text) = t
        .http
        .send(Method::POST, &format!("{admin}/setup"), &t.bearer(), setup)
        .await?;
    ensure!(
        status == 200 && text.contains("\"recorded\":2"),
        "{status} {text}"
    );
    Ok(())
}

async fn state_is_served_as_json_lines_when_asked(kind: StoreKind) -> Result<()> {
    use hookstorm::state::stream::{read_lines, JSON_LINES};
    use hookstorm::state::State;
    let Some(t) = start(kind, config()).await? else {
        return Ok(());
    };
    for (id, job) in [("tsk_1", "job-1-r1"), ("tsk_2", "job-1-r2")] {
        let d = Delivery::completed(id, job, "2026-11-29T10:00:00Z");
        ensure!(t.deliver(&d).await? == 204);
    }
    let doc = t.drained().await?;
    ensure!(doc.inbox.len() == 2 && doc.winners.as_ref().is_some_and(|w| w.len() == 1));
    let url = format!("{}/state", t.rx.admin_url());
    let accept = |v: &str| {
        let mut h = t.bearer();
        h.push(("Accept".into(), v.into()));
        h
    };
    for (how, url, headers) in [
        (
            "Accept",
            url.clone(),
            accept("application/x-ndjson, application/json;q=0.9"),
        ),
        ("?format=jsonl", format!("{url}?format=jsonl"), t.bearer()),
    ] {
        let (status, h, text) = t.http.send(Method::GET, &url, &headers, "").await?;
        ensure!(status == 200, "{how}: {status} {text}");
        ensure!(
            h.get("content-type").is_some_and(|v| v == JSON_LINES),
            "{how}: {h:?}"
        );
        ensure!(text.lines().count() == 1 + 2 + 2 + 1 + 2, "{how}: {text}");
        let lines = read_lines(text.as_bytes(), State::default()).map_err(anyhow::Error::msg)?;
        ensure!(lines == doc, "{how}: {lines:?} vs {doc:?}");
    }
    // Refused (q=0) or not asked for: the document.
    for headers in [
        accept("application/x-ndjson;q=0, application/json"),
        t.bearer(),
    ] {
        let (status, h, text) = t.http.send(Method::GET, &url, &headers, "").await?;
        ensure!(
            status == 200
                && h.get("content-type")
                    .is_some_and(|v| v == "application/json")
        );
        ensure!(serde_json::from_str::<State>(&text)? == doc);
    }
    Ok(())
}

async fn a_state_of_many_chunks_is_streamed_whole_in_both_forms(kind: StoreKind) -> Result<()> {
    use hookstorm::state::stream::read_lines;
    use hookstorm::state::State;
    use hookstorm_receiver::state_body::CHUNK;
    use hookstorm_receiver::store::{NewDelivery, FEED_BATCH};
    let Some(t) = start(kind, config()).await? else {
        return Ok(());
    };
    // More rows than a feed batch in every filled section, more bytes than
    // a chunk: the answer is sent in several pieces.
    let n = FEED_BATCH * 3 / 2;
    let ids: Vec<usize> = (0..n).collect();
    for group in ids.chunks(100) {
        let inserts = group.iter().map(|i| {
            let d = Delivery::completed(
                &format!("tsk_{i:05}"),
                &format!("job-{}-r{}", i / 2, i % 2 + 1),
                "2026-11-29T10:00:00Z",
            );
            t.rx.store.insert(NewDelivery {
                account: "acct_a".into(),
                task_id: d.task_id.clone(),
                webhook_id: None,
                body: d.body(),
            })
        });
        for r in futures_util::future::join_all(inserts).await {
            r?;
        }
    }
    let doc = t.drained().await?;
    let whole = t.rx.store.state(Default::default()).await?;
    ensure!(
        doc == whole,
        "the streamed document differs from the store's state"
    );
    ensure!(doc.inbox.len() == n && doc.results.as_ref().is_some_and(|r| r.len() == n));
    ensure!(doc.winners.as_ref().is_some_and(|w| w.len() == n / 2));
    let url = format!("{}/state?format=jsonl", t.rx.admin_url());
    let (status, _, text) = t.http.send(Method::GET, &url, &t.bearer(), "").await?;
    ensure!(status == 200, "{status}");
    ensure!(text.len() > 2 * CHUNK, "{} bytes", text.len());
    let lines = read_lines(text.as_bytes(), State::default()).map_err(anyhow::Error::msg)?;
    ensure!(
        lines == whole,
        "the streamed lines differ from the store's state"
    );
    Ok(())
}
