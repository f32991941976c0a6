//! Reconciliation against a small provider API served on 127.0.0.1.

use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use anyhow::{ensure, Result};
use bytes::Bytes;
use hookstorm::profile::signature::Secret;
use http::{Method, Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;

use crate::common::{config, start, Delivery, StoreKind};
use crate::on_both_stores;

const API_KEY: &str = "provider-key";

async fn provider(throttled: Arc<AtomicUsize>) -> Result<String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let throttled = throttled.clone();
            tokio::spawn(async move {
                let svc = service_fn(move |req: Request<Incoming>| {
                    let throttled = throttled.clone();
                    async move {
                        let auth_ok = req
                            .headers()
                            .get("authorization")
                            .is_some_and(|v| v == &format!("Bearer {API_KEY}")[..]);
                        let id = req
                            .uri()
                            .path()
                            .rsplit('/')
                            .next()
                            .unwrap_or("")
                            .to_string();
                        let (status, body) = if !auth_ok {
                            (StatusCode::UNAUTHORIZED, String::new())
                        } else {
                            match id.as_str() {
                                "tsk_1" => (StatusCode::OK, Delivery::completed("tsk_1", "job-1", "2026-11-29T10:00:00Z").body()),
                                "tsk_3" => {
                                    throttled.fetch_add(1, Ordering::SeqCst);
                                    (StatusCode::TOO_MANY_REQUESTS, String::new())
                                }
                                "tsk_4" => (
                                    StatusCode::OK,
                                    r#"{"task":{"id":"tsk_4","idempotencyKey":"job-4","status":"PROCESSING","createdAt":"2026-11-29T10:00:00Z"},"credits":0}"#.to_string(),
                                ),
                                _ => (StatusCode::NOT_FOUND, String::new()),
                            }
                        };
                        let mut r = Response::new(Full::new(Bytes::from(body)));
                        *r.status_mut() = status;
                        Ok::<_, Infallible>(r)
                    }
                });
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    Ok(format!("http://{addr}"))
}

on_both_stores!(reconcile_fetches_missing_final_tasks_and_skips_the_rest);

async fn reconcile_fetches_missing_final_tasks_and_skips_the_rest(kind: StoreKind) -> Result<()> {
    let throttled = Arc::new(AtomicUsize::new(0));
    let url = provider(throttled.clone()).await?;
    let Some(t) = start(kind, config().with_provider(url, Secret::new(API_KEY))).await? else {
        return Ok(());
    };
    ensure!(
        t.deliver(&Delivery::completed(
            "tsk_5",
            "job-5",
            "2026-11-29T10:00:00Z"
        ))
        .await?
            == 204
    );
    let admin = t.rx.admin_url();
    let setup = r#"{"state":"tasks-submitted","params":{"task_ids":["tsk_1","tsk_2","tsk_3","tsk_4","tsk_5"],"account":"acct_a"}}"#;
    ensure!(
        t.http
            .send(Method::POST, &format!("{admin}/setup"), &t.bearer(), setup)
            .await?
            .0
            == 200
    );
    let (status, _, text) = t
        .http
        .send(Method::POST, &format!("{admin}/reconcile"), &t.bearer(), "")
        .await?;
    ensure!(status == 200, "{status} {text}");
    let counts: serde_json::Value = serde_json::from_str(&text)?;
    ensure!(
        counts["missing"] == 4 && counts["fetched"] == 2 && counts["inserted"] == 1,
        "{counts}"
    );
    ensure!(
        counts["not_found"] == 1 && counts["not_final"] == 1 && counts["throttled"] == 1,
        "{counts}"
    );
    ensure!(throttled.load(Ordering::SeqCst) > 1, "429 was not retried");
    let s = t.drained().await?;
    let mut keys: Vec<_> = s.inbox.iter().map(|r| r.key.as_str()).collect();
    keys.sort();
    ensure!(keys == ["tsk_1", "tsk_5"], "{keys:?}");
    // A second pass finds tsk_1 present and inserts nothing.
    let (_, _, text) = t
        .http
        .send(Method::POST, &format!("{admin}/reconcile"), &t.bearer(), "")
        .await?;
    let again: serde_json::Value = serde_json::from_str(&text)?;
    ensure!(again["inserted"] == 0 && again["missing"] == 3, "{again}");
    Ok(())
}
