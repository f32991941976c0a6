//! The handler path on SQLite, with and without group commit, and on
//! Postgres (`fsync=on`, `synchronous_commit=on`, one commit per request;
//! skipped when Postgres is not installed): N concurrent signed deliveries
//! over real HTTP per iteration; throughput is durable acknowledgements per
//! second (each 204 follows its commit).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use hookstorm::profile::signature::{Secret, SignInput};
use hookstorm::profile::Profile;
use hookstorm_receiver::{spawn, Account, Config};
use http::Request;
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

const CONCURRENT: usize = 64;

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let mut group = c.benchmark_group("handler");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .throughput(Throughput::Elements(CONCURRENT as u64));
    let pg = hookstorm_receiver::pgtest::PgServer::start_or_skip();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cases: Vec<(String, String, bool)> = [true, false]
        .into_iter()
        .map(|gc| {
            let url = format!(
                "sqlite://{}",
                dir.path().join(format!("bench-{gc}.db")).display()
            );
            let name = if gc {
                "sqlite/group-commit"
            } else {
                "sqlite/one-commit-per-request"
            };
            (name.to_string(), url, gc)
        })
        .collect();
    if let Some(pg) = &pg {
        let url = rt.block_on(pg.fresh_database()).expect("database");
        cases.push(("postgres/one-commit-per-request".into(), url, false));
    }
    for (name, url, group_commit) in cases {
        let config = Config::new(vec![Account::new(
            "acct_a",
            vec![Secret::new("bench-secret")],
        )])
        .with_worker(false)
        .with_group_commit(group_commit);
        let rx = rt.block_on(spawn(config, &url)).expect("receiver");
        let hook = rx.webhook_url("acct_a");
        let client: Client<_, Full<Bytes>> = Client::builder(TokioExecutor::new())
            .pool_max_idle_per_host(CONCURRENT)
            .build_http();
        let scheme = Profile::default_profile().scheme;
        let counter = AtomicU64::new(0);
        group.bench_function(name.as_str(), |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let start = Instant::now();
                    for _ in 0..iters {
                        let sends = (0..CONCURRENT).map(|_| {
                            let n = counter.fetch_add(1, Ordering::Relaxed);
                            let body = format!(r#"{{"task":{{"id":"tsk_{n}","idempotencyKey":"job-{n}","status":"COMPLETED","createdAt":"2026-11-29T10:00:00Z"}},"credits":1,"response":{{"result":{{}}}}}}"#);
                            let headers = scheme
                                .sign(
                                    &[Secret::new("bench-secret")],
                                    SignInput { id: "m", timestamp: chrono::Utc::now().timestamp(), body: body.as_bytes(), url: "" },
                                )
                                .expect("sign");
                            let mut req = Request::post(&hook);
                            for (k, v) in headers {
                                req = req.header(k, v);
                            }
                            let req = req.body(Full::new(Bytes::from(body))).expect("request");
                            let client = client.clone();
                            async move {
                                let r = client.request(req).await.expect("answer");
                                assert_eq!(r.status(), 204);
                            }
                        });
                        futures_util::future::join_all(sends).await;
                    }
                    start.elapsed()
                })
            })
        });
        rt.block_on(rx.shutdown()).expect("shutdown");
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
