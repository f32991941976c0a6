//! The fault front and the provider API over real HTTP on 127.0.0.1.

use bytes::Bytes;
use hookstorm::fault::front::{Front, FrontConfig};
use hookstorm::history::{Event, Outcome};
use hookstorm::profile::signature::Secret;
use hookstorm::profile::Profile;
use hookstorm::provider::{book, Provider};
use hookstorm::scenario::Scenario;
use hookstorm::sender::send;
use hookstorm::tag::{FaultName, FaultTag};
use http_body_util::{BodyExt, Empty};

use crate::support::*;

async fn through_front(
    dir: &std::path::Path,
    s: &Scenario,
    server: &Server,
    time_scale: f64,
) -> (
    hookstorm::sender::SendSummary,
    Vec<Event>,
    hookstorm::fault::front::FrontCounts,
) {
    let profile = Profile::default_profile();
    let (sink, path) = sink(dir);
    let front = Front::start(FrontConfig {
        scenario: s.name.clone(),
        spec: s.front().expect("a front").clone(),
        seed: 3,
        target_url: server.url(),
        sink: Some(sink.clone()),
    })
    .await
    .unwrap();
    let mut cfg = config(server, profile, &["acct_a"], time_scale, 3);
    cfg.url = front.url();
    cfg.front = Some(front.tags());
    let sum = send(&hookstorm::workload::plan(s, cfg.seed), &cfg, &sink)
        .await
        .unwrap();
    let counts = front.stop().await;
    sink.finish().unwrap();
    let events = hookstorm::history::read(&path)
        .unwrap()
        .map(|e| e.unwrap())
        .collect();
    (sum, events, counts)
}

fn attempts(events: &[Event]) -> Vec<&hookstorm::history::Attempt> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Attempt(a) => Some(a),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn front_fails_the_first_attempts_then_forwards_bytes_that_still_verify() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(
        Profile::default_profile(),
        secrets(&["acct_a"]),
        verifying(4096, always(204)),
    )
    .await;
    let s = scenario(
        dir.path(),
        "[workload]\njobs = 3\n[[fault]]\nkind = \"front\"\nfail_first = 2\nstatus = 429\n",
    );
    let (sum, events, counts) = through_front(dir.path(), &s, &server, 200.0).await;
    assert_eq!((sum.attempts, sum.ok, sum.dead), (9, 3, 0));
    assert_eq!((counts.failed, counts.forwarded), (6, 3));
    let seen = server.seen();
    assert_eq!(seen.len(), 3, "the receiver sees only forwarded attempts");
    assert!(seen.iter().all(|s| s.verified.is_ok()));
    for a in attempts(&events) {
        let tagged = a.faults.contains(&FaultTag::FrontStatus(429));
        assert_eq!(
            tagged,
            a.attempt <= 2,
            "attempt {} {:?}",
            a.attempt,
            a.faults
        );
        assert_eq!(a.outcome == Outcome::Ok, a.attempt == 3);
    }
    let faults = events
        .iter()
        .filter(|e| matches!(e, Event::Fault(f) if f.fault == FaultName::Front))
        .count();
    assert_eq!(faults, 6);
}

#[tokio::test]
async fn a_redirecting_front_is_never_followed_and_the_deliveries_die() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(
        Profile::default_profile(),
        secrets(&["acct_a"]),
        verifying(4096, always(204)),
    )
    .await;
    let s = scenario(
        dir.path(),
        "[workload]\njobs = 2\n[[fault]]\nkind = \"front\"\nredirect = 307\n",
    );
    let (sum, events, _) = through_front(dir.path(), &s, &server, 5000.0).await;
    assert_eq!((sum.attempts, sum.ok, sum.dead), (20, 0, 2));
    assert!(server.seen().is_empty());
    assert_eq!(sum.redirects.len(), 1);
    let r = sum.redirects[0].clone();
    assert!(r.by_front);
    assert_eq!(r.status, 307);
    assert!(r.location.unwrap().ends_with("/webhooks/acct_a/"));
    assert!(attempts(&events)
        .iter()
        .all(|a| a.status == Some(307) && a.faults.contains(&FaultTag::FrontRedirect)));
}

#[tokio::test]
async fn a_stalled_upload_is_cut_and_only_the_retry_arrives_whole() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(
        Profile::default_profile(),
        secrets(&["acct_a"]),
        verifying(4096, always(204)),
    )
    .await;
    let s = scenario(
        dir.path(),
        "[workload]\njobs = 2\n[[fault]]\nkind = \"front\"\nfail_first = 1\nstall_body = true\nstall_after_bytes = 30\nstall_for = \"200ms\"\n",
    );
    let (sum, events, counts) = through_front(dir.path(), &s, &server, 200.0).await;
    assert_eq!((sum.attempts, sum.ok, sum.dead), (4, 2, 0));
    assert_eq!(counts.stalled, 2);
    let whole: Vec<_> = server
        .seen()
        .into_iter()
        .filter(|s| s.key.is_some())
        .collect();
    assert_eq!(whole.len(), 2, "only the retries carried a whole body");
    for a in attempts(&events).iter().filter(|a| a.attempt == 1) {
        assert_eq!(a.status, None);
        assert!(a.faults.contains(&FaultTag::FrontStall));
    }
}

async fn get(url: &str, method: http::Method, key: Option<&str>) -> (u16, serde_json::Value) {
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<Empty<Bytes>>();
    let mut req = http::Request::builder().method(method).uri(url);
    if let Some(k) = key {
        req = req.header("Authorization", format!("Bearer {k}"));
    }
    let resp = client
        .request(req.body(Empty::new()).unwrap())
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&body).unwrap_or_default())
}

#[tokio::test]
async fn the_provider_api_serves_final_tasks_throttles_forgets_and_requires_its_key() {
    let dir = tempfile::tempdir().unwrap();
    let s = scenario(
        dir.path(),
        "[workload]\njobs = 3\n[[fault]]\nkind = \"reconcile\"\npending = 2\nexpired = 1\nthrottle_share = 1.0\n",
    );
    let provider = Provider::bind("127.0.0.1:0", Secret::new("k-test")).unwrap();
    provider.serve().unwrap();
    let b = book::from_plan(&hookstorm::workload::plan(&s, 9), 1.0, true);
    let finals = b.final_tasks();
    assert_eq!(
        finals.len(),
        3,
        "pending and expired tasks are not final ground truth"
    );
    let expired = b.tasks.iter().find(|t| t.expired).unwrap().id().unwrap();
    let submitted: usize = b.submitted().iter().map(|(_, ids)| ids.len()).sum();
    assert_eq!(submitted, 6);
    provider.load(b);
    let base = provider.url();
    let task = format!("{base}/v1/async/task/{}", finals[0].key);

    assert_eq!(get(&task, http::Method::GET, None).await.0, 401);
    assert_eq!(get(&task, http::Method::GET, Some("wrong")).await.0, 401);
    assert_eq!(get(&task, http::Method::GET, Some("k-test")).await.0, 429);
    let (status, body) = get(&task, http::Method::GET, Some("k-test")).await;
    assert_eq!(status, 200);
    assert_eq!(body["task"]["id"], finals[0].key.as_str());
    assert!(body["response"].is_object());
    let gone = format!("{base}/v1/async/task/{expired}");
    assert_eq!(get(&gone, http::Method::GET, Some("k-test")).await.0, 404);
    let unknown = format!("{base}/v1/async/task/tsk_unknown");
    assert_eq!(
        get(&unknown, http::Method::GET, Some("k-test")).await.0,
        404
    );

    let status_url = format!("{base}/v1/async/status");
    let (_, st) = get(&status_url, http::Method::GET, Some("k-test")).await;
    assert_eq!(
        st["queuedTasks"].as_u64().unwrap() + st["processingTasks"].as_u64().unwrap(),
        2
    );
    let queue = format!("{base}/v1/async/queue");
    let (code, del) = get(&queue, http::Method::DELETE, Some("k-test")).await;
    assert_eq!(code, 200);
    let (_, st2) = get(&status_url, http::Method::GET, Some("k-test")).await;
    assert_eq!(st2["queuedTasks"], 0);
    assert_eq!(del["deleted"], st["queuedTasks"]);
    provider.stop().await;
}

#[tokio::test]
async fn a_provider_lifecycle_goes_back_to_queued_and_ends_final() {
    let dir = tempfile::tempdir().unwrap();
    let s = scenario(dir.path(), "[workload]\njobs = 20\n");
    let b = book::from_plan(&hookstorm::workload::plan(&s, 4), 1.0, false);
    let mut requeued = 0;
    for t in &b.tasks {
        let end = t.stages.last().unwrap();
        assert!(end.1.is_final());
        assert!(!t.status_at(end.0 - 1).is_final());
        assert_eq!(
            t.status_at(i64::MIN),
            hookstorm::delivery::TaskStatus::Queued
        );
        if t.stages.len() > 3 {
            requeued += 1;
        }
    }
    assert!(requeued > 0, "some tasks go from PROCESSING back to QUEUED");
}
