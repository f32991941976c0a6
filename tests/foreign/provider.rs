//! The scaffolding every provider receiver (GitHub, Shopify, Slack,
//! Standard Webhooks, Stripe) shares, so that each of their files holds
//! only what its provider decides: how a request is verified, where the
//! identity, object and order field are read from, and which bodies are
//! pings.
//!
//! Shared here: the scenario catalogs they are judged on, the gate every
//! handler starts with (POST only, body size, the account in the URL has a
//! secret), starting the receiver and its state endpoint and running
//! `hookstorm` against them, and the two assertions the tests make (the
//! catalog passes on several seeds; a broken variant is caught by the
//! invariant that names its bug).

use hookstorm::check::{InvariantId, Verdict};

use super::vendor::{self, Store};
use super::{ForeignRun, Reply, Request, Server};

/// The scenarios a plain HTTP receiver without a reconciler can be judged
/// on, for providers that send a test delivery (a ping); `test-delivery`
/// comes last.
pub const CATALOG_WITH_TEST_DELIVERY: &[&str] = &[
    "baseline",
    "account-isolation",
    "bad-signature",
    "concurrent-duplicates",
    "key-rotation",
    "raw-body",
    "replay-window",
    "reverse-order",
    "sequential-duplicates",
    "test-delivery",
];

/// [`CATALOG_WITH_TEST_DELIVERY`] without `test-delivery`, for providers
/// that send no ping.
pub const CATALOG: &[&str] = CATALOG_WITH_TEST_DELIVERY
    .split_at(CATALOG_WITH_TEST_DELIVERY.len() - 1)
    .0;

/// The seeds a correct receiver must pass its catalog on.
pub const SEEDS: [u64; 3] = [1, 2, 3];

/// The secret of `account` among the two accounts' `secrets`.
pub fn secret_of(secrets: [&'static str; 2], account: &str) -> Option<&'static str> {
    match account {
        "acct_a" => Some(secrets[0]),
        "acct_b" => Some(secrets[1]),
        _ => None,
    }
}

/// What every handler checks first, in this order: 405 unless POST, 413
/// for an oversized body, 404 for an account without a secret. Otherwise
/// the account and its secret.
fn admit(req: &Request, secrets: [&'static str; 2]) -> Result<(String, &'static str), Reply> {
    if req.method != "POST" {
        return Err(Reply::status(405));
    }
    if req.too_large {
        return Err(Reply::status(413));
    }
    let account = req.last_segment().to_string();
    let secret = secret_of(secrets, &account).ok_or_else(|| Reply::status(404))?;
    Ok((account, secret))
}

/// Starts a receiver (8 threads) whose admitted requests go to `handle`
/// with the account, its secret and the store, plus its state endpoint,
/// and runs `scenarios` with `seed` under `profile`.
pub fn run(
    profile: &str,
    secrets: [&'static str; 2],
    scenarios: &[&str],
    seed: u64,
    handle: impl Fn(&Request, String, &'static str, &Store) -> Reply + Send + Sync + 'static,
) -> ForeignRun {
    let seed = seed.to_string();
    let mut args = vec!["--seed", seed.as_str()];
    for s in scenarios {
        args.extend(["--scenario", s]);
    }
    run_args(profile, secrets, &args, handle)
}

/// Like [`run`] with `hookstorm run`'s arguments as given.
pub fn run_args(
    profile: &str,
    secrets: [&'static str; 2],
    args: &[&str],
    handle: impl Fn(&Request, String, &'static str, &Store) -> Reply + Send + Sync + 'static,
) -> ForeignRun {
    let store = Store::default();
    let s = store.clone();
    let receiver = Server::start(8, move |req| match admit(req, secrets) {
        Ok((account, secret)) => handle(req, account, secret, &s),
        Err(reply) => reply,
    });
    let state = vendor::state_server(&store);
    vendor::run(profile, &receiver, &state, secrets, args)
}

/// Asserts that the run made by `run_seed` passes every scenario of
/// `catalog` cleanly on each of [`SEEDS`].
pub fn assert_passes_catalog(name: &str, catalog: &[&str], run_seed: impl Fn(u64) -> ForeignRun) {
    for seed in SEEDS {
        let run = run_seed(seed);
        vendor::assert_clean(&format!("{name} seed {seed}"), &run, catalog);
    }
}

/// Asserts that `run` failed (exit 1) and that `scenario` failed `id`.
pub fn assert_caught(run: &ForeignRun, scenario: &str, id: InvariantId) {
    assert_eq!(run.code, 1, "{}", run.explain());
    assert_eq!(
        run.verdict(scenario, id),
        Some(Verdict::Fail),
        "{}",
        run.explain()
    );
}
