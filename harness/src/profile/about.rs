//! Where a profile's facts come from: the provider, its documentation,
//! its official verifier, its handshake, and the choices hookstorm made
//! where the documentation says nothing. `docs/profiles.md` is generated
//! from this and the profile's numbers ([`crate::profile::doc`]), so the
//! page and the code cannot say different things.

use serde::{Deserialize, Serialize};

/// What a profile says about itself.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct About {
    /// The provider and the product its webhooks come from.
    #[serde(default)]
    pub provider: String,
    /// The provider's documentation of its webhooks.
    #[serde(default)]
    pub docs: Option<String>,
    /// The official verifier a receiver calls, and where it installs from.
    #[serde(default)]
    pub verifier: Option<String>,
    /// The verification handshake before any event, in the provider's words.
    #[serde(default)]
    pub handshake: Option<String>,
    /// Each a fact the documentation leaves out, and the choice made:
    /// "not documented: …; hookstorm …".
    #[serde(default)]
    pub notes: Vec<String>,
}

/// The about of the profiles written in code (the others carry theirs in
/// their file).
pub fn of_builtin(name: &str) -> About {
    let a =
        |provider: &str, verifier: Option<&str>, handshake: Option<&str>, notes: &[&str]| About {
            provider: provider.into(),
            docs: None,
            verifier: verifier.map(str::to_string),
            handshake: handshake.map(str::to_string),
            notes: notes.iter().map(|n| n.to_string()).collect(),
        };
    match name {
        "answerline" => a(
            "answerline, the contract in docs/contract.md",
            Some("the reference receiver (`hookstorm-receiver`)"),
            Some("a delivery marked \"test\": true"),
            &[],
        ),
        "standard-webhooks" => a(
            "Standard Webhooks (standardwebhooks.com)",
            Some("`standardwebhooks` (crates.io, PyPI, npm)"),
            Some("a webhook.test event"),
            &[],
        ),
        "svix" => a(
            "Svix",
            Some("`svix` (crates.io, PyPI, npm)"),
            Some("a webhook.test event"),
            &[],
        ),
        "stripe" => a(
            "Stripe",
            Some("`stripe` (PyPI): `Webhook.construct_event`"),
            None,
            &["not documented: the retry intervals (\"up to three days, exponential backoff\"); hookstorm waits 1 h doubling, capped at 24 h, 7 attempts"],
        ),
        "github" => a(
            "GitHub",
            Some("`@octokit/webhooks-methods` (npm)"),
            Some("a ping event when the hook is created"),
            &[],
        ),
        "shopify" => a(
            "Shopify",
            Some("`@shopify/shopify-api` (npm)"),
            None,
            &["not documented: the intervals of the 8 retries over 4 hours; hookstorm waits 1 min doubling"],
        ),
        "slack" => a(
            "Slack Events API",
            Some("`slack_sdk` (PyPI): `SignatureVerifier`"),
            Some("a url_verification challenge, answered with the challenge"),
            &[],
        ),
        "generic-hex" => a(
            "A generic outbox sender (hex HMAC of the body)",
            None,
            Some("a delivery marked \"test\": true"),
            &[],
        ),
        _ => About::default(),
    }
}
