//! Interoperability with the providers' own verification code: hookstorm's
//! deliveries (the envelope its profile sends, signed by the same code the
//! sender uses, genuine, in every rotation phase, and forged every way the
//! scenarios forge) are handed to the official `standardwebhooks` and
//! `svix` crates and to Stripe's official Python library. Every genuine
//! delivery verifies; every forged one is rejected; and the one documented
//! difference is proven rather than assumed: Stripe's library accepts a
//! future-dated signature, which is why the stripe profile does not demand
//! a 4xx for one.

use std::io::Write;
use std::process::{Child, Command, Stdio};

use hookstorm::fault::tamper::{self, Keys, SignRequest};
use hookstorm::profile::signature::Secret;
use hookstorm::profile::{Freshness, Profile};
use hookstorm::scenario::{Forgery, Signing};

/// A Standard Webhooks secret (the spec's second test vector's).
pub const SW_SECRET_A: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
/// Another account's Standard Webhooks secret.
pub const SW_SECRET_B: &str = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD";

/// One signed request and what it was meant to be.
pub struct Case {
    /// `genuine:<signing>` or the forgery's name.
    pub what: String,
    /// Whether the provider's own verifier must accept it.
    pub accept: bool,
    /// The headers.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

fn keys(current: &str, other: &str) -> Keys {
    Keys {
        current: vec![Secret::new(current)],
        retired: vec![tamper::derived_secret(7, "retired")],
        other_account: Some(vec![Secret::new(other)]),
        wrong: tamper::derived_secret(7, "wrong"),
    }
}

/// Every genuine signing and every forgery of one delivery under `profile`,
/// with what the provider's verifier must say about it.
pub fn cases(profile: &Profile, current: &str, other: &str) -> Vec<Case> {
    cases_at(profile, current, other, "")
}

/// [`cases`] for requests sent to `url` (some schemes sign it), with the
/// body the profile's provider sends (its template, its format).
pub fn cases_at(profile: &Profile, current: &str, other: &str, url: &str) -> Vec<Case> {
    let body: hookstorm::delivery::Body = serde_json::from_value(serde_json::json!({
        "task": {"id": "tsk_0123456789abcdef", "idempotencyKey": "job-1-r1",
                 "status": "COMPLETED", "createdAt": "2026-11-29T10:00:00Z"},
        "credits": 4,
        "response": {"result": {"answer": "forty-two"}},
    }))
    .unwrap();
    let sent = hookstorm::sender::provider_delivery(
        profile,
        &body,
        "whd_0123456789abcdef",
        Some("job-1".into()),
    );
    let (bytes, id) = (sent.bytes, sent.id);
    let keys = keys(current, other);
    let now = chrono::Utc::now().timestamp();
    let sign = |forgery: Option<Forgery>, signing: Signing| {
        tamper::sign(
            &profile.scheme,
            &keys,
            SignRequest {
                url,
                id: &id,
                body: &bytes,
                forgery,
                signing,
                now,
                tolerance: profile.tolerance_secs(),
                max_body: 1 << 20,
            },
        )
    };
    let mut out = Vec::new();
    for signing in [Signing::Current, Signing::OldAndNew, Signing::NewOnly] {
        let s = sign(None, signing).expect("genuine deliveries always sign");
        out.push(Case {
            what: format!("genuine:{signing:?}"),
            accept: true,
            headers: s.headers,
            body: s.body,
        });
    }
    for forgery in Forgery::ALL {
        // An oversized body is refused for its size, not its signature.
        if forgery == Forgery::Oversized {
            continue;
        }
        let Ok(s) = sign(Some(forgery), Signing::Current) else {
            continue;
        };
        let accept = forgery == Forgery::FutureTimestamp
            && profile.semantics.freshness == Freshness::PastOnly;
        out.push(Case {
            what: forgery.as_str().to_string(),
            accept,
            headers: s.headers,
            body: s.body,
        });
    }
    out
}

fn header_map(headers: &[(String, String)]) -> http::HeaderMap {
    let mut m = http::HeaderMap::new();
    for (k, v) in headers {
        m.append(
            http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
            http::HeaderValue::from_str(v).unwrap(),
        );
    }
    m
}

/// Each case's verdict by an official verifier's `verify(body, headers)`.
fn verdicts<E: std::fmt::Display>(
    cases: &[Case],
    verify: impl Fn(&[u8], &http::HeaderMap) -> Result<(), E>,
) -> Vec<Result<(), String>> {
    cases
        .iter()
        .map(|c| verify(&c.body, &header_map(&c.headers)).map_err(|e| e.to_string()))
        .collect()
}

fn assert_verdicts(name: &str, cases: &[Case], verdicts: &[Result<(), String>]) {
    let mut rejected = 0;
    for (c, v) in cases.iter().zip(verdicts) {
        assert_eq!(
            v.is_ok(),
            c.accept,
            "{name}: {} was {} by the official verifier ({v:?})",
            c.what,
            if v.is_ok() { "accepted" } else { "rejected" }
        );
        rejected += usize::from(v.is_err());
    }
    assert!(
        rejected >= 8,
        "{name}: only {rejected} forgeries were tried"
    );
}

#[test]
fn the_official_standardwebhooks_crate_verifies_every_genuine_delivery_and_rejects_every_forgery() {
    let profile = Profile::builtin("standard-webhooks").unwrap();
    let cases = cases(&profile, SW_SECRET_A, SW_SECRET_B);
    let wh = standardwebhooks::Webhook::new(SW_SECRET_A).unwrap();
    let verdicts = verdicts(&cases, |body, headers| wh.verify(body, headers));
    assert_verdicts("standardwebhooks", &cases, &verdicts);
}

#[test]
fn the_official_svix_crate_verifies_every_genuine_delivery_and_rejects_every_forgery() {
    let profile = Profile::builtin("svix").unwrap();
    let cases = cases(&profile, SW_SECRET_A, SW_SECRET_B);
    assert!(cases[0].headers.iter().any(|(k, _)| k == "svix-signature"));
    let wh = svix::webhooks::Webhook::new(SW_SECRET_A).unwrap();
    let verdicts = verdicts(&cases, |body, headers| wh.verify(body, headers));
    assert_verdicts("svix", &cases, &verdicts);
}

/// A Stripe endpoint secret (the whole `whsec_…` text keys the MAC).
pub const STRIPE_SECRET_A: &str = "whsec_hookstormStripeEndpointSecretA01";
/// Another account's Stripe endpoint secret.
pub const STRIPE_SECRET_B: &str = "whsec_hookstormStripeEndpointSecretB02";

/// The official Stripe library's verifier as a long-lived process: one JSON
/// request per line in (`payload`, `header`, `secret`), one verdict per
/// line out. `stripe.Webhook.construct_event` with its default 300 s
/// tolerance is exactly what Stripe's docs tell integrators to call.
pub const STRIPE_VERIFIER: &str = r#"
import json, sys
import stripe
for line in sys.stdin:
    r = json.loads(line)
    try:
        ev = stripe.Webhook.construct_event(r["payload"], r["header"] or "", r["secret"])
        out = {"ok": True, "id": ev["id"]}
    except Exception as e:
        out = {"ok": False, "error": type(e).__name__ + ": " + str(e)[:200]}
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
"#;

/// Whether Stripe's official Python library can be imported. When it
/// cannot, the Stripe tests are skipped with a message, unless
/// `HOOKSTORM_REQUIRE_STRIPE` is set (CI sets it after installing it).
pub fn stripe_library_or_skip(test: &str) -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import stripe"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        assert!(
            std::env::var_os("HOOKSTORM_REQUIRE_STRIPE").is_none(),
            "{test}: HOOKSTORM_REQUIRE_STRIPE is set but python3 cannot import stripe (pip install stripe)"
        );
        eprintln!(
            "{test}: skipped: python3 cannot import Stripe's official library (pip install stripe)"
        );
    }
    ok
}

/// Starts [`STRIPE_VERIFIER`] with its stdin and stdout piped.
pub fn spawn_stripe_verifier() -> Child {
    Command::new("python3")
        .args(["-c", STRIPE_VERIFIER])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start python3")
}

/// Runs Stripe's official verifier over `(payload, header, secret)` triples.
pub fn stripe_verify_batch(items: &[(Vec<u8>, Option<String>, &str)]) -> Vec<Result<(), String>> {
    let lines = items.iter().map(|(payload, header, secret)| {
        serde_json::json!({
            "payload": String::from_utf8_lossy(payload),
            "header": header,
            "secret": secret,
        })
    });
    verdict_lines(spawn_stripe_verifier(), lines)
}

/// Feeds `lines` to a verifier process (one JSON request per line) and
/// reads its verdicts (one `{"ok", "error"}` per line).
pub fn verdict_lines(
    mut child: Child,
    lines: impl Iterator<Item = serde_json::Value>,
) -> Vec<Result<(), String>> {
    {
        let mut stdin = child.stdin.take().unwrap();
        for line in lines {
            writeln!(stdin, "{line}").unwrap();
        }
    }
    let out = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            if v["ok"] == true {
                Ok(())
            } else {
                Err(v["error"].as_str().unwrap_or_default().to_string())
            }
        })
        .collect()
}

#[test]
fn stripes_official_library_verifies_every_genuine_delivery_rejects_every_forgery_and_accepts_a_future_one(
) {
    if !stripe_library_or_skip("stripe interop") {
        return;
    }
    let profile = Profile::builtin("stripe").unwrap();
    let cases = cases(&profile, STRIPE_SECRET_A, STRIPE_SECRET_B);
    assert!(
        cases
            .iter()
            .any(|c| c.what == "future-timestamp" && c.accept),
        "the future-dated delivery is among the cases"
    );
    let items: Vec<_> = cases
        .iter()
        .map(|c| {
            let header = c
                .headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case("Stripe-Signature"))
                .map(|(_, v)| v.clone());
            (c.body.clone(), header, STRIPE_SECRET_A)
        })
        .collect();
    let verdicts = stripe_verify_batch(&items);
    assert_eq!(verdicts.len(), cases.len());
    assert_verdicts("stripe (official python library)", &cases, &verdicts);
}
