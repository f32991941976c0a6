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

use hookstorm::check::InvariantId;

use super::provider::{self, assert_caught, CATALOG_WITH_TEST_DELIVERY as CATALOG};
use super::vendor::{at, hmac_matches, text, Accepted, Keep, Store, PLAIN_SECRETS};
use super::{ForeignRun, Reply, Request};

fn handle(req: &Request, account: String, secret: &str, store: &Store, keep: Keep) -> Reply {
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

/// GitHub makes one attempt: no retry schedule to follow.
fn run(keep: Keep, scenarios: &[&str], seed: u64) -> ForeignRun {
    provider::run(
        "github",
        PLAIN_SECRETS,
        scenarios,
        seed,
        move |req, a, s, st| handle(req, a, s, st, keep),
    )
}

#[test]
fn a_github_receiver_deduplicating_on_the_delivery_guid_passes_the_catalog() {
    provider::assert_passes_catalog("github", CATALOG, |seed| run(Keep::Newest, CATALOG, seed));
}

#[test]
fn a_github_receiver_keeping_the_last_arrival_fails_correct_winner() {
    let run = run(Keep::LastArrival, &["reverse-order"], 5);
    assert_caught(&run, "reverse-order", InvariantId::I5);
}
