//! A Shopify receiver, written the way Shopify's docs tell app developers
//! to: compare `X-Shopify-Hmac-Sha256` (base64) with the HMAC of the raw
//! body, deduplicate on `X-Shopify-Event-Id` (one event, whatever
//! subscription or retry carries it), and keep per order the payload whose
//! `updated_at` is newest. It stands for Shopify app backends.
//!
//! It passes the catalog below on several seeds. A variant that
//! deduplicates on `X-Shopify-Webhook-Id` looks right on retries (they keep
//! it) but stores an event delivered under a second webhook id twice, and
//! is caught by I2; one that lets the last arrival win is caught by I5.

use base64::Engine as _;
use hookstorm::check::InvariantId;

use super::provider::{self, assert_caught, CATALOG};
use super::vendor::{at, hmac_matches, text, Accepted, Keep, Store, PLAIN_SECRETS};
use super::{ForeignRun, Reply, Request};

/// What the receiver deduplicates on.
#[derive(Clone, Copy)]
enum Dedup {
    /// `X-Shopify-Event-Id`, as the docs say.
    EventId,
    /// Broken: `X-Shopify-Webhook-Id`.
    WebhookId,
}

fn handle(
    req: &Request,
    account: String,
    secret: &str,
    store: &Store,
    dedup: Dedup,
    keep: Keep,
) -> Reply {
    let mac = req.header("X-Shopify-Hmac-Sha256").and_then(|v| {
        base64::engine::general_purpose::STANDARD
            .decode(v.trim())
            .ok()
    });
    if !mac.is_some_and(|m| hmac_matches(secret.as_bytes(), &[&req.body], &m)) {
        return Reply::status(401);
    }
    let Some(order) = req.json() else {
        return Reply::status(400);
    };
    let (Some(event), Some(webhook)) = (
        req.header("X-Shopify-Event-Id"),
        req.header("X-Shopify-Webhook-Id"),
    ) else {
        return Reply::status(400);
    };
    let dedup = match dedup {
        Dedup::EventId => event,
        Dedup::WebhookId => webhook,
    };
    store.accept(
        Accepted {
            account,
            key: event.to_string(),
            dedup: dedup.to_string(),
            object: at(&order, "/id").map(text),
            order: at(&order, "/updated_at").cloned(),
        },
        keep,
    );
    Reply::status(200)
}

fn run(dedup: Dedup, keep: Keep, scenarios: &[&str], seed: u64) -> ForeignRun {
    provider::run(
        "shopify",
        PLAIN_SECRETS,
        scenarios,
        seed,
        move |req, a, s, st| handle(req, a, s, st, dedup, keep),
    )
}

#[test]
fn a_shopify_receiver_deduplicating_on_the_event_id_passes_the_catalog() {
    provider::assert_passes_catalog("shopify", CATALOG, |seed| {
        run(Dedup::EventId, Keep::Newest, CATALOG, seed)
    });
}

#[test]
fn a_shopify_receiver_deduplicating_on_the_webhook_id_fails_exactly_once() {
    let scenarios = &["sequential-duplicates"];
    let run = run(Dedup::WebhookId, Keep::Newest, scenarios, 4);
    assert_caught(&run, "sequential-duplicates", InvariantId::I2);
}

#[test]
fn a_shopify_receiver_keeping_the_last_arrival_fails_correct_winner() {
    let run = run(Dedup::EventId, Keep::LastArrival, &["reverse-order"], 5);
    assert_caught(&run, "reverse-order", InvariantId::I5);
}
