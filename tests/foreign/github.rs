//! A GitHub receiver, written the way GitHub's docs tell integrators to:
//! compare `X-Hub-Signature-256` with the HMAC of the raw body in constant
//! time, treat `X-GitHub-Delivery` as the delivery's identity (a
//! redelivery keeps it), answer `ping` without storing anything, and keep
//! per issue the payload whose `issue.updated_at` is newest. It stands for
//! receivers of GitHub App and repository webhooks (Octokit's `verify`
//! does the same comparison).
//!
//! GitHub signs no timestamp, so no replay window is demanded of it. It
//! passes the catalog below on several seeds; a variant that lets the last
//! arrival win is caught by I5.

use hookstorm::check::{InvariantId, Verdict};

use super::vendor::{self, at, hmac_matches, plain_secret, text, Accepted, Keep, Store};
use super::{Reply, Request, Server};

/// The scenarios a plain HTTP receiver without a reconciler can be judged on
/// (GitHub makes one attempt: no retry schedule to follow).
pub const CATALOG: &[&str] = &[
    "baseline",
    "account-isolation",
    "bad-signature",
    "concurrent-duplicates",
    "key-rotation",
    "replay-window",
    "reverse-order",
    "sequential-duplicates",
    "test-delivery",
];

fn handle(req: &Request, store: &Store, keep: Keep) -> Reply {
    if req.method != "POST" {
        return Reply::status(405);
    }
    if req.too_large {
        return Reply::status(413);
    }
    let account = req.last_segment().to_string();
    let Some(secret) = plain_secret(&account) else {
        return Reply::status(404);
    };
    let mac = req
        .header("X-Hub-Signature-256")
        .and_then(|v| v.strip_prefix("sha256="))
        .and_then(|h| hex::decode(h).ok());
    if !mac.is_some_and(|m| hmac_matches(secret.as_bytes(), &[&req.body], &m)) {
        return Reply::status(401);
    }
    if req.header("X-GitHub-Event") == Some("ping") {
        return Reply::status(204);
    }
    let Some(payload) = req.json() else {
        return Reply::status(400);
    };
    let Some(delivery) = req.header("X-GitHub-Delivery") else {
        return Reply::status(400);
    };
    store.accept(
        Accepted {
            account,
            key: delivery.to_string(),
            dedup: delivery.to_string(),
            object: at(&payload, "/issue/id").map(text),
            order: at(&payload, "/issue/updated_at").cloned(),
        },
        keep,
    );
    Reply::status(204)
}

fn run(keep: Keep, scenarios: &[&str], seed: u64) -> super::ForeignRun {
    let store = Store::default();
    let s = store.clone();
    let receiver = Server::start(8, move |req| handle(req, &s, keep));
    let state = vendor::state_server(&store);
    vendor::run(
        "github",
        &receiver,
        &state,
        vendor::PLAIN_SECRETS,
        scenarios,
        seed,
    )
}

#[test]
fn a_github_receiver_deduplicating_on_the_delivery_guid_passes_the_catalog() {
    for seed in [1, 2, 3] {
        let run = run(Keep::Newest, CATALOG, seed);
        vendor::assert_clean(&format!("github seed {seed}"), &run, CATALOG);
    }
}

#[test]
fn a_github_receiver_keeping_the_last_arrival_fails_correct_winner() {
    let run = run(Keep::LastArrival, &["reverse-order"], 5);
    assert_eq!(run.code, 1, "{}", run.explain());
    assert_eq!(
        run.verdict("reverse-order", InvariantId::I5),
        Some(Verdict::Fail),
        "{}",
        run.explain()
    );
}
