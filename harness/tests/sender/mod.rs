//! The sender over real HTTP: schedules, redirects, ack loss, duplicates,
//! forgeries, unreachable targets and the history.

mod copies;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hookstorm::history::HistorySink;
use hookstorm::history::{Attempt, Intent, Outcome};
use hookstorm::profile::{Freshness, Profile};
use hookstorm::scenario::Scenario;
use hookstorm::sender::{SendConfig, SendError, SendSummary};
use hookstorm::tag::FaultTag;

use crate::support::*;

/// Plans `s` with the configuration's seed and delivers the plan, as a run does.
async fn send(
    s: &Scenario,
    cfg: &SendConfig,
    sink: &HistorySink,
) -> Result<SendSummary, SendError> {
    hookstorm::sender::send(&hookstorm::workload::plan(s, cfg.seed), cfg, sink).await
}

fn short(mut p: Profile, attempts: u32) -> Profile {
    p.schedule.max_attempts = attempts;
    p
}

#[tokio::test]
async fn retries_follow_the_schedule_scaled_by_time_scale() {
    let dir = tempfile::tempdir().unwrap();
    let profile = Profile::default_profile();
    let behave: Behave = Arc::new(|_, n| (if n < 2 { 503 } else { 204 }, Duration::ZERO));
    let server = serve(
        profile.clone(),
        secrets(&["acct_a"]),
        verifying(4096, behave),
    )
    .await;
    let s = scenario(dir.path(), "[workload]\njobs = 3\n");
    let (sink, path) = sink(dir.path());
    let sum = send(&s, &config(&server, profile, &["acct_a"], 100.0, 7), &sink)
        .await
        .unwrap();
    sink.finish().unwrap();
    assert_eq!((sum.attempts, sum.ok, sum.info, sum.dead), (9, 3, 6, 0));
    let seen = server.seen();
    for key in seen
        .iter()
        .filter_map(|s| s.key.clone())
        .collect::<std::collections::BTreeSet<_>>()
    {
        let times: Vec<Instant> = seen
            .iter()
            .filter(|s| s.key.as_deref() == Some(&key))
            .map(|s| s.start)
            .collect();
        assert_eq!(times.len(), 3);
        // Scaled minimum waits: 2.5 s / 100 and 5 s / 100.
        assert!(
            times[1] - times[0] >= Duration::from_millis(24),
            "{:?}",
            times[1] - times[0]
        );
        assert!(
            times[2] - times[1] >= Duration::from_millis(49),
            "{:?}",
            times[2] - times[1]
        );
        assert!(times[2] - times[0] < Duration::from_millis(1000));
    }
    let lines = attempts(&path);
    assert_eq!(lines.len(), 9);
    assert!(lines
        .iter()
        .all(|a| (a.attempt == 3) == (a.outcome == Outcome::Ok)));
    // Each retry is signed afresh and carries the same delivery id.
    assert!(seen
        .iter()
        .all(|s| s.verified.is_ok() && s.header("Webhook-Id").is_some()));
}

#[tokio::test]
async fn redirects_are_never_followed_and_the_delivery_dies() {
    let dir = tempfile::tempdir().unwrap();
    let profile = short(Profile::default_profile(), 3);
    let server = serve(profile.clone(), secrets(&["acct_a"]), always(308)).await;
    let s = scenario(dir.path(), "[workload]\njobs = 2\n");
    let (sink, path) = sink(dir.path());
    let sum = send(&s, &config(&server, profile, &["acct_a"], 1000.0, 1), &sink)
        .await
        .unwrap();
    sink.finish().unwrap();
    assert_eq!((sum.attempts, sum.info, sum.dead), (6, 6, 2));
    assert!(server.seen().iter().all(|s| s.path != "/elsewhere"));
    let lines = attempts(&path);
    assert!(lines
        .iter()
        .all(|a| a.outcome == Outcome::Info && a.status == Some(308)));
    assert_eq!(lines.iter().filter(|a| a.dead).count(), 2);
    assert!(lines.iter().filter(|a| a.dead).all(|a| a.attempt == 3));
}

#[tokio::test]
async fn a_dropped_ack_causes_a_retry() {
    let dir = tempfile::tempdir().unwrap();
    let profile = Profile::default_profile();
    let server = serve(
        profile.clone(),
        secrets(&["acct_a"]),
        verifying(4096, always(204)),
    )
    .await;
    let s = scenario(
        dir.path(),
        "[workload]\njobs = 4\n[[fault]]\nkind = \"drop-ack\"\nshare = 1.0\ntimes = 1\n",
    );
    let (sink, path) = sink(dir.path());
    let sum = send(&s, &config(&server, profile, &["acct_a"], 200.0, 3), &sink)
        .await
        .unwrap();
    sink.finish().unwrap();
    assert_eq!((sum.attempts, sum.ok, sum.info), (8, 4, 4));
    assert_eq!(server.seen().len(), 8);
    let lines = attempts(&path);
    for a in &lines {
        if a.attempt == 1 {
            assert_eq!(a.outcome, Outcome::Info);
            assert!(a.faults.contains(&FaultTag::DropAck));
        } else {
            assert_eq!(a.outcome, Outcome::Ok);
        }
    }
}

#[tokio::test]
async fn concurrent_duplicates_arrive_at_the_same_time() {
    let dir = tempfile::tempdir().unwrap();
    let profile = Profile::default_profile();
    let slow: Behave = Arc::new(|_, _| (204, Duration::from_millis(150)));
    let server = serve(profile.clone(), secrets(&["acct_a"]), verifying(4096, slow)).await;
    let s = scenario(dir.path(), "[workload]\njobs = 3\n[[fault]]\nkind = \"duplicate\"\nmode = \"concurrent\"\ncopies = [3, 3]\n");
    let (sink, path) = sink(dir.path());
    let sum = send(&s, &config(&server, profile, &["acct_a"], 100.0, 5), &sink)
        .await
        .unwrap();
    sink.finish().unwrap();
    assert_eq!(sum.attempts, 9);
    let seen = server.seen();
    let keys: std::collections::BTreeSet<_> = seen.iter().filter_map(|s| s.key.clone()).collect();
    assert_eq!(keys.len(), 3);
    for key in keys {
        let copies: Vec<_> = seen
            .iter()
            .filter(|s| s.key.as_deref() == Some(&key))
            .collect();
        assert_eq!(copies.len(), 3);
        let latest_start = copies.iter().map(|s| s.start).max().unwrap();
        let earliest_end = copies.iter().map(|s| s.end).min().unwrap();
        assert!(
            latest_start < earliest_end,
            "copies of {key} did not overlap"
        );
        let ids: std::collections::BTreeSet<_> = copies
            .iter()
            .map(|s| s.header("Webhook-Id").unwrap())
            .collect();
        assert_eq!(ids.len(), 1, "copies share one Webhook-Id");
    }
    assert!(attempts(&path).iter().all(|a| a
        .faults
        .iter()
        .any(|f| matches!(f, FaultTag::ConcurrentCopy { .. }))));
}

#[tokio::test]
async fn concurrent_copies_during_a_database_cut_are_traffic_the_cut_meets() {
    let dir = tempfile::tempdir().unwrap();
    let profile = Profile::default_profile();
    let ok: Behave = Arc::new(|_, _| (204, Duration::ZERO));
    let server = serve(profile.clone(), secrets(&["acct_a"]), verifying(4096, ok)).await;
    let s = scenario(dir.path(), "[workload]\njobs = 2\n[[fault]]\nkind = \"duplicate\"\nmode = \"concurrent\"\ncopies = [3, 3]\n");
    let (sink, path) = sink(dir.path());
    let gauge = Arc::new(hookstorm::fault::gauge::TrafficGauge::new());
    gauge.open_window();
    let cfg = SendConfig {
        gauge: Some(gauge.clone()),
        ..config(&server, profile, &["acct_a"], 100.0, 5)
    };
    send(&s, &cfg, &sink).await.unwrap();
    sink.finish().unwrap();
    // Every copy is an exchange the cut's window counts, and says so.
    let seen = gauge.close_window();
    assert_eq!((seen.answered, seen.acks), (6, 6));
    let all = attempts(&path);
    assert_eq!(all.len(), 6);
    assert!(
        all.iter()
            .all(|a| a.faults.contains(&FaultTag::DatabaseCut)),
        "{all:?}"
    );
}

#[tokio::test]
async fn sequential_duplicates_replay_and_change_only_the_webhook_id() {
    let dir = tempfile::tempdir().unwrap();
    let profile = Profile::default_profile();
    let server = serve(
        profile.clone(),
        secrets(&["acct_a"]),
        verifying(4096, always(204)),
    )
    .await;
    let s = scenario(
        dir.path(),
        "[workload]\njobs = 2\n[[fault]]\nkind = \"duplicate\"\nmode = \"sequential\"\nreplay = 1\nfresh_id = 1\nredeliver = 1\n",
    );
    let (sink, path) = sink(dir.path());
    let sum = send(&s, &config(&server, profile, &["acct_a"], 100.0, 5), &sink)
        .await
        .unwrap();
    sink.finish().unwrap();
    assert_eq!((sum.attempts, sum.ok), (8, 8));
    let seen = server.seen();
    for key in seen
        .iter()
        .filter_map(|s| s.key.clone())
        .collect::<std::collections::BTreeSet<_>>()
    {
        let reqs: Vec<_> = seen
            .iter()
            .filter(|s| s.key.as_deref() == Some(&key))
            .collect();
        assert_eq!(reqs.len(), 4);
        assert!(reqs
            .iter()
            .all(|r| r.body == reqs[0].body && r.verified.is_ok()));
        let ids: std::collections::BTreeSet<_> = reqs
            .iter()
            .map(|r| r.header("Webhook-Id").unwrap())
            .collect();
        assert_eq!(ids.len(), 2, "one fresh Webhook-Id besides the original");
        // The exact replay carries the first request's signature.
        assert_eq!(
            reqs[0].header("Webhook-Signature"),
            reqs[1].header("Webhook-Signature")
        );
    }
    let lines = attempts(&path);
    assert_eq!(lines.iter().map(|a| a.round).max(), Some(3));
}

#[tokio::test]
async fn every_forgery_fails_verification_and_every_genuine_delivery_passes() {
    for name in [
        "answerline",
        "standard-webhooks",
        "github",
        "slack",
        "shopify",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let profile = Profile::builtin(name).unwrap();
        let accounts = ["acct_a", "acct_b"];
        let server = serve(
            profile.clone(),
            secrets(&accounts),
            verifying(4096, always(204)),
        )
        .await;
        let s = scenario(
            dir.path(),
            "accounts = [\"acct_a\", \"acct_b\"]\n[workload]\njobs = 6\ntest_deliveries = 1\n\
             [[fault]]\nkind = \"tamper\"\nforgeries = [\"tampered-body\", \"wrong-secret\", \"missing-header\", \"malformed-header\", \
             \"unknown-scheme-only\", \"stale-timestamp\", \"future-timestamp\", \"cross-account\", \"oversized\", \"expired-replay\", \"retired-secret\"]\n\
             rotation = [\"old+new\", \"new-only\"]\n",
        );
        let (sink, path) = sink(dir.path());
        let sum = send(
            &s,
            &config(&server, profile.clone(), &accounts, 100.0, 9),
            &sink,
        )
        .await
        .unwrap();
        sink.finish().unwrap();
        let lines = attempts(&path);
        let seen = server.seen();
        assert_eq!(lines.len(), seen.len(), "{name}: one line per request");
        // Without a timestamp, stale, future and expired forgeries do not
        // apply; where the provider's own verifier accepts a future
        // timestamp (Slack), the future forgery does not.
        let expected_skips = match profile.semantics.freshness {
            Freshness::Both => 0,
            Freshness::PastOnly => 2,
            Freshness::None => 2 * 3,
        };
        assert_eq!(sum.skipped, expected_skips, "{name}");
        for a in &lines {
            let reqs: Vec<_> = seen
                .iter()
                .filter(|s| {
                    // A Slack url_verification (its test delivery) carries no event id.
                    let same = s.key.as_deref() == Some(&a.key)
                        || (a.intent == Intent::Test && s.key.is_none());
                    same && s.path.ends_with(&a.account)
                })
                .collect();
            assert!(!reqs.is_empty(), "{name}: {} never arrived", a.key);
            match a.intent {
                Intent::Genuine | Intent::Test => {
                    assert_eq!(
                        a.outcome,
                        Outcome::Ok,
                        "{name}: {:?} {:?}",
                        a.detail,
                        a.status
                    );
                    assert!(reqs.iter().any(|r| r.verified.is_ok()));
                }
                Intent::Oversized => {
                    assert_eq!((a.status, a.outcome), (Some(413), Outcome::Fail), "{name}");
                }
                Intent::ExpiredReplay => {
                    assert_eq!((a.status, a.outcome), (Some(401), Outcome::Fail), "{name}");
                    assert!(reqs.iter().any(|r| r.verified.is_err()));
                }
                Intent::Forged | Intent::CrossAccount => {
                    assert!(
                        reqs.iter().all(|r| r.verified.is_err()),
                        "{name}: {:?} verified",
                        a.detail
                    );
                    assert_eq!(
                        (a.status, a.outcome),
                        (Some(401), Outcome::Fail),
                        "{name}: {:?}",
                        a.detail
                    );
                }
            }
        }
        let forged = lines.iter().filter(|a| a.intent.must_reject()).count();
        assert!(forged >= 2 * 8, "{name}: {forged} forged attempts");
    }
}

#[tokio::test]
async fn an_unreachable_target_fails_fast() {
    let dir = tempfile::tempdir().unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let s = scenario(dir.path(), "[workload]\njobs = 3\n");
    let (sink, _) = sink(dir.path());
    let mut cfg = hookstorm::sender::SendConfig::new(
        format!("http://127.0.0.1:{port}/webhooks/{{account}}"),
        Profile::default_profile(),
        secrets(&["acct_a"]),
    );
    cfg.time_scale = 1.0;
    let t = Instant::now();
    let e = send(&s, &cfg, &sink).await.unwrap_err();
    assert!(matches!(e, SendError::Unreachable { .. }), "{e}");
    assert!(t.elapsed() < Duration::from_secs(3));
    assert_eq!(sink.finish().unwrap(), 0);
}

#[tokio::test]
async fn bad_urls_and_missing_secrets_are_config_errors() {
    let dir = tempfile::tempdir().unwrap();
    let s = scenario(
        dir.path(),
        "accounts = [\"acct_a\", \"acct_b\"]\n[workload]\njobs = 1\n",
    );
    let (sink, _) = sink(dir.path());
    let cfg = hookstorm::sender::SendConfig::new(
        "ftp://127.0.0.1/{account}",
        Profile::default_profile(),
        secrets(&["acct_a", "acct_b"]),
    );
    assert!(matches!(
        send(&s, &cfg, &sink).await,
        Err(SendError::BadUrl { .. })
    ));
    let cfg = hookstorm::sender::SendConfig::new(
        "http://127.0.0.1:9/{account}",
        Profile::default_profile(),
        secrets(&["acct_a"]),
    );
    let e = send(&s, &cfg, &sink).await.unwrap_err().to_string();
    assert!(e.contains("acct_b"), "{e}");
}

#[tokio::test]
async fn hold_back_sends_older_tasks_after_the_newest_is_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    let profile = Profile::default_profile();
    let server = serve(
        profile.clone(),
        secrets(&["acct_a"]),
        verifying(4096, always(204)),
    )
    .await;
    let s = scenario(dir.path(), "[workload]\njobs = 3\ntasks_per_job = 3\n[[fault]]\nkind = \"reorder\"\nmode = \"hold-back\"\nhold_attempts = 1\n");
    let (sink, path) = sink(dir.path());
    let sum = send(&s, &config(&server, profile, &["acct_a"], 1000.0, 2), &sink)
        .await
        .unwrap();
    sink.finish().unwrap();
    assert_eq!((sum.ok, sum.fail), (9, 6));
    let lines = attempts(&path);
    let seen = server.seen();
    for job in lines
        .iter()
        .filter_map(|a| a.job.clone())
        .collect::<std::collections::BTreeSet<_>>()
    {
        let mut tasks: Vec<_> = lines
            .iter()
            .filter(|a| a.job.as_deref() == Some(&job) && a.outcome == Outcome::Ok)
            .collect();
        tasks.sort_by(|a, b| b.created_at.cmp(&a.created_at));
        let arrival = |key: &str| {
            seen.iter()
                .position(|s| s.key.as_deref() == Some(key))
                .unwrap()
        };
        let newest = arrival(&tasks[0].key);
        assert!(
            tasks[1..].iter().all(|t| arrival(&t.key) > newest),
            "{job}: an older task arrived first"
        );
    }
}

#[tokio::test]
async fn every_shipped_scenario_runs_quickly_against_a_fast_receiver() {
    let dir = tempfile::tempdir().unwrap();
    let profile = Profile::default_profile();
    let accounts = ["acct_a", "acct_b"];
    let server = serve(
        profile.clone(),
        secrets(&accounts),
        verifying(4096, always(204)),
    )
    .await;
    let all = hookstorm::scenario::Scenario::load_dir(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios"),
    )
    .unwrap();
    let (sink, path) = sink(dir.path());
    let t = Instant::now();
    let mut total = 0;
    for s in &all {
        let mut cfg = config(
            &server,
            profile.clone(),
            &accounts,
            s.time_scale.unwrap_or(100.0),
            11,
        );
        cfg.concurrency = 16;
        let sum = send(s, &cfg, &sink)
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", s.name));
        assert_eq!(sum.dead, 0, "{}", s.name);
        assert!(!sum.unreachable && sum.skipped == 0, "{}", s.name);
        total += sum.attempts;
    }
    let elapsed = t.elapsed();
    sink.finish().unwrap();
    assert_eq!(attempts(&path).len(), total);
    assert_eq!(
        server.seen().len()
            + attempts(&path)
                .iter()
                .filter(|a| a.status.is_none())
                .count(),
        total
    );
    eprintln!("{} scenarios, {total} attempts in {elapsed:?}", all.len());
    assert!(elapsed < Duration::from_secs(20), "{elapsed:?}");
}

#[tokio::test]
async fn the_same_seed_sends_the_same_requests_twice() {
    let dir = tempfile::tempdir().unwrap();
    let profile = Profile::default_profile();
    let s = scenario(dir.path(), "[workload]\njobs = 6\ntasks_per_job = 2\n[[fault]]\nkind = \"reorder\"\nmode = \"shuffle\"\n");
    let mut runs = Vec::new();
    for seed in [4, 4, 5] {
        let server = serve(
            profile.clone(),
            secrets(&["acct_a"]),
            verifying(4096, always(204)),
        )
        .await;
        let (sink, _) = sink(dir.path());
        send(
            &s,
            &config(&server, profile.clone(), &["acct_a"], 100.0, seed),
            &sink,
        )
        .await
        .unwrap();
        sink.finish().unwrap();
        let mut sent: Vec<(String, Vec<u8>)> = server
            .seen()
            .iter()
            .map(|r| (r.header("Webhook-Id").unwrap().to_string(), r.body.clone()))
            .collect();
        sent.sort();
        runs.push(sent);
    }
    assert_eq!(runs[0], runs[1]);
    assert_ne!(runs[0], runs[2]);
}

/// Sends the scenario `body` (workload and faults) with `seed` for acct_a
/// under `profile` to a receiver that verifies every request and answers
/// 204. Returns the receiver, the summary, the history's attempts and the
/// history's path.
async fn send_verified(
    dir: &Path,
    profile: Profile,
    body: &str,
    seed: u64,
) -> (Server, SendSummary, Vec<Attempt>, PathBuf) {
    let server = serve(
        profile.clone(),
        secrets(&["acct_a"]),
        verifying(4096, always(204)),
    )
    .await;
    let s = scenario(dir, body);
    let (sink, path) = sink(dir);
    let sum = send(
        &s,
        &config(&server, profile, &["acct_a"], 100.0, seed),
        &sink,
    )
    .await
    .unwrap();
    sink.finish().unwrap();
    let lines = attempts(&path);
    (server, sum, lines, path)
}

/// A sequential replay under a fresh delivery id, under three profiles: the
/// history's key is each provider's event identity, so the replay is the
/// same event where the identity lives in the body (answerline's task id,
/// Stripe's event id, a custom template's `/id`) and a new message where
/// it is the delivery id (Standard Webhooks). Every request carries the profile's envelope, and
/// the receiver finds in it the identity the history recorded.
#[tokio::test]
async fn fresh_id_replays_keep_or_change_the_identity_as_each_provider_does() {
    let acme = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../scenarios/profiles/acme-events.toml"
    );
    for (name, fresh_is_new) in [
        ("answerline", false),
        ("stripe", false),
        ("standard-webhooks", true),
        (acme, false),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let (server, _, lines, _) = send_verified(
            dir.path(),
            Profile::resolve(name).unwrap(),
            "[workload]\njobs = 3\n[[fault]]\nkind = \"duplicate\"\nmode = \"sequential\"\nshare = 1.0\nreplay = 0\nfresh_id = 1\nredeliver = 1\n",
            3,
        )
        .await;
        assert_eq!(lines.len(), 9, "{name}");
        let firsts: Vec<_> = lines.iter().filter(|a| a.faults.is_empty()).collect();
        assert_eq!(firsts.len(), 3, "{name}");
        for first in firsts {
            let fresh = lines
                .iter()
                .find(|a| {
                    a.faults.contains(&FaultTag::FreshId)
                        && a.detail.as_deref() == Some(&format!("fresh id for {}", first.delivery))
                })
                .unwrap_or_else(|| panic!("{name}: no fresh-id replay of {}", first.delivery));
            assert_ne!(fresh.delivery, first.delivery, "{name}");
            assert_eq!(fresh.key != first.key, fresh_is_new, "{name}: {fresh:?}");
            assert_eq!(fresh.job, first.job, "{name}: same object");
            let redelivered = lines
                .iter()
                .find(|a| a.delivery == first.delivery && a.faults.contains(&FaultTag::Redeliver))
                .unwrap_or_else(|| panic!("{name}: no redelivery of {}", first.delivery));
            assert_eq!(
                redelivered.key, first.key,
                "{name}: a redelivery is the same event"
            );
        }
        // Every request verified, and its identity is the key the history holds.
        let seen = server.seen();
        assert_eq!(seen.len(), 9, "{name}");
        for r in &seen {
            assert!(r.verified.is_ok(), "{name}: {:?}", r.verified);
            let key = r
                .key
                .as_deref()
                .unwrap_or_else(|| panic!("{name}: no identity"));
            assert!(lines.iter().any(|a| a.key == key), "{name}: {key}");
        }
        let first_body: serde_json::Value = serde_json::from_slice(&seen[0].body).unwrap();
        match name {
            "stripe" => assert_eq!(first_body["object"], "event"),
            "standard-webhooks" => assert!(first_body["data"].is_object()),
            _ if name == acme => {
                // The custom template, with Stripe's ids and the identity at /id.
                assert!(first_body["kind"].is_string(), "{first_body}");
                assert!(lines
                    .iter()
                    .any(|a| Some(a.key.as_str()) == first_body["id"].as_str()));
                assert!(lines.iter().all(|a| a.key.starts_with("evt_")));
            }
            _ => assert!(first_body["task"].is_object()),
        }
    }
}

/// Where the provider's own verifier accepts a future timestamp (Stripe),
/// the future-dated forgery is not sent and the history says why; where it
/// refuses one (answerline, Standard Webhooks) it is sent and refused.
#[tokio::test]
async fn future_timestamps_are_demanded_only_where_the_provider_refuses_them() {
    for (name, sent) in [
        ("answerline", true),
        ("standard-webhooks", true),
        ("stripe", false),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let (_server, sum, lines, path) = send_verified(
            dir.path(),
            Profile::builtin(name).unwrap(),
            "[workload]\njobs = 1\n[[fault]]\nkind = \"tamper\"\nforgeries = [\"future-timestamp\", \"stale-timestamp\"]\neach = 1\n",
            5,
        )
        .await;
        let future = lines
            .iter()
            .filter(|a| a.detail.as_deref() == Some("future-timestamp"))
            .count();
        let stale = lines
            .iter()
            .filter(|a| a.detail.as_deref() == Some("stale-timestamp"))
            .count();
        assert_eq!((future, stale), (usize::from(sent), 1), "{name}");
        assert_eq!(sum.skipped, usize::from(!sent), "{name}");
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text.contains("accepts a future timestamp"),
            !sent,
            "{name}: the skip is explained"
        );
    }
}

/// Slack gives up on an answer after 3 s and retries at once, with
/// `X-Slack-Retry-Num`: the retry reaches the receiver while its first
/// request is still running, as Slack's duplicates do. Both carry the same
/// `event_id`, the identity the history records.
#[tokio::test]
async fn slack_retries_overlap_a_first_request_that_is_still_running() {
    let dir = tempfile::tempdir().unwrap();
    let profile = short(Profile::builtin("slack").unwrap(), 2);
    // Each request as the handler starts it: when, its retry headers, its
    // identity, and when its (slow) handling is due to end.
    type Log = Vec<(
        Instant,
        Option<String>,
        Option<String>,
        Option<String>,
        Instant,
    )>;
    let log: Arc<std::sync::Mutex<Log>> = Arc::default();
    let l = log.clone();
    let behave: Behave = Arc::new(move |s: &Seen, _| {
        let retry = s.header("X-Slack-Retry-Num").map(str::to_string);
        let delay = if retry.is_none() {
            Duration::from_millis(4500)
        } else {
            Duration::ZERO
        };
        l.lock().unwrap().push((
            s.start,
            retry,
            s.header("X-Slack-Retry-Reason").map(str::to_string),
            s.key.clone(),
            s.start + delay,
        ));
        (200, delay)
    });
    let server = serve(
        profile.clone(),
        secrets(&["acct_a"]),
        verifying(4096, behave),
    )
    .await;
    let s = scenario(dir.path(), "[workload]\njobs = 1\n");
    let (sink, path) = sink(dir.path());
    let sum = send(&s, &config(&server, profile, &["acct_a"], 100.0, 2), &sink)
        .await
        .unwrap();
    sink.finish().unwrap();
    assert_eq!((sum.attempts, sum.ok, sum.info), (2, 1, 1));
    let lines = attempts(&path);
    assert_eq!(lines[0].key, lines[1].key);
    assert!(lines[0].key.starts_with("Ev"), "{}", lines[0].key);
    let log = log.lock().unwrap().clone();
    assert_eq!(log.len(), 2, "two requests reached the handler");
    let (first, retry) = (&log[0], &log[1]);
    assert_eq!(first.1, None);
    assert_eq!(retry.1.as_deref(), Some("1"));
    assert_eq!(retry.2.as_deref(), Some("http_timeout"));
    assert!(
        retry.0 < first.4,
        "the retry started {:?} after the first request's handling ended",
        retry.0 - first.4
    );
    assert_eq!(retry.3, first.3);
    assert_eq!(retry.3.as_deref(), Some(lines[0].key.as_str()));
}
