//! A Slack Events API receiver, written the way Slack's docs (and Bolt's
//! request verification) tell app developers to: compute
//! `v0=HMAC(signing secret, "v0:<ts>:<body>")` and compare it in constant
//! time, refuse a request timestamp more than 5 minutes old, answer a
//! `url_verification` body with its `challenge`, acknowledge at once and
//! deduplicate on `event_id` (Slack retries with `X-Slack-Retry-Num`,
//! possibly while the first request still runs), and keep per channel the
//! event whose `event_time` is newest. It stands for Slack apps.
//!
//! It passes the catalog below on several seeds; a variant that lets the
//! last arrival win is caught by I5, and one that acknowledges a
//! `url_verification` with a bare 200 (Slack would never enable its URL)
//! by I7.

use hookstorm::check::InvariantId;

use super::provider::{self, assert_caught, CATALOG_WITH_TEST_DELIVERY as CATALOG};
use super::vendor::{at, hmac_matches, text, Accepted, Keep, Store, PLAIN_SECRETS};
use super::{ForeignRun, Reply, Request};

/// Bolt's window: a request timestamp older than this is refused.
const MAX_AGE_SECS: i64 = 5 * 60;

/// How the receiver answers a `url_verification` body.
#[derive(Clone, Copy)]
enum Challenge {
    /// With its `challenge`, as Slack asks.
    Echo,
    /// Broken: a bare 200.
    Ignore,
}

fn handle(
    req: &Request,
    account: String,
    secret: &str,
    store: &Store,
    keep: Keep,
    challenge: Challenge,
) -> Reply {
    let Some(ts) = req
        .header("X-Slack-Request-Timestamp")
        .and_then(|t| t.trim().parse::<i64>().ok())
    else {
        return Reply::status(401);
    };
    if ts < chrono::Utc::now().timestamp() - MAX_AGE_SECS {
        return Reply::status(401);
    }
    let mac = req
        .header("X-Slack-Signature")
        .and_then(|v| v.strip_prefix("v0="))
        .and_then(|h| hex::decode(h).ok());
    let ts = ts.to_string();
    let signed: [&[u8]; 4] = [b"v0:", ts.as_bytes(), b":", &req.body];
    if !mac.is_some_and(|m| hmac_matches(secret.as_bytes(), &signed, &m)) {
        return Reply::status(401);
    }
    let Some(body) = req.json() else {
        return Reply::status(400);
    };
    if body["type"] == "url_verification" {
        return match challenge {
            Challenge::Echo => {
                Reply::Status(200, body["challenge"].as_str().unwrap_or_default().into())
            }
            Challenge::Ignore => Reply::status(200),
        };
    }
    let Some(event_id) = at(&body, "/event_id").map(text) else {
        return Reply::status(400);
    };
    store.accept(
        Accepted {
            account,
            key: event_id.clone(),
            dedup: event_id,
            object: at(&body, "/event/channel").map(text),
            order: at(&body, "/event_time").cloned(),
        },
        keep,
    );
    Reply::status(200)
}

fn run(keep: Keep, scenarios: &[&str], seed: u64) -> ForeignRun {
    run_answering(keep, Challenge::Echo, scenarios, seed)
}

fn run_answering(keep: Keep, challenge: Challenge, scenarios: &[&str], seed: u64) -> ForeignRun {
    provider::run(
        "slack",
        PLAIN_SECRETS,
        scenarios,
        seed,
        move |req, a, s, st| handle(req, a, s, st, keep, challenge),
    )
}

#[test]
fn a_slack_receiver_deduplicating_on_event_id_passes_the_catalog() {
    provider::assert_passes_catalog("slack", CATALOG, |seed| run(Keep::Newest, CATALOG, seed));
}

#[test]
fn a_slack_receiver_keeping_the_last_arrival_fails_correct_winner() {
    let run = run(Keep::LastArrival, &["reverse-order"], 5);
    assert_caught(&run, "reverse-order", InvariantId::I5);
}

#[test]
fn a_slack_receiver_answering_url_verification_without_its_challenge_fails_conformance() {
    let run = run_answering(Keep::Newest, Challenge::Ignore, &["test-delivery"], 5);
    assert_caught(&run, "test-delivery", InvariantId::I7);
    assert!(
        run.explain().contains("challenge"),
        "the finding names the challenge: {}",
        run.explain()
    );
}
