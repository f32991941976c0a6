//! A provider's verification handshake: the request it sends before any
//! event to prove the URL is the receiver's, and what the answer must hold
//! for the provider to enable the URL.
//!
//! A profile file says it in a `[handshake]` table: the body (a template
//! with `{{challenge}}`), headers that differ from an event's, and the
//! answer the provider checks. hookstorm sends it as the profile's test
//! delivery (`test-delivery`, the preflight), and an answer without what
//! the provider checks fails the delivery, as the provider would not
//! enable the URL: Discord's PING wants `{"type": 1}`, Twitch's
//! `webhook_callback_verification` the challenge as text, Zoom's
//! `endpoint.url_validation` the challenge and its HMAC.

use serde::{Deserialize, Serialize};

use crate::profile::signature::Secret;

/// What the provider checks in the answer to its handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Answer {
    /// Any 2xx.
    Status,
    /// The challenge, as the whole body (text), `challenge=…` or JSON
    /// `{"challenge": …}` (Twitch, Slack).
    Echo,
    /// JSON with `"type": 1` (Discord's PONG).
    Pong,
    /// JSON `{"plainToken": challenge, "encryptedToken": hex
    /// HMAC-SHA256(secret, challenge)}` (Zoom).
    ZoomToken,
}

/// A profile's handshake (`[handshake]` in a profile file).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Handshake {
    /// The body, with `{{challenge}}` and the body template's placeholders.
    pub template: String,
    /// What the answer must hold.
    pub answer: Answer,
    /// Headers that differ from an event's (Twitch's message type).
    #[serde(default)]
    pub headers: std::collections::BTreeMap<String, String>,
}

impl Handshake {
    /// Why a 2xx `answer` to the handshake with `challenge` does not
    /// complete it (`secret`: the account's newest, for Zoom's token).
    pub fn refusal(
        &self,
        challenge: &str,
        answer: &[u8],
        secret: Option<&Secret>,
    ) -> Option<String> {
        let json = || serde_json::from_slice::<serde_json::Value>(answer).ok();
        let ok = match self.answer {
            Answer::Status => true,
            Answer::Echo => crate::profile::envelope::echoes(challenge, answer),
            Answer::Pong => json().and_then(|v| v.get("type")?.as_i64()) == Some(1),
            Answer::ZoomToken => {
                let want = secret.map(|s| {
                    let k = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, s.expose().as_bytes());
                    hex::encode(ring::hmac::sign(&k, challenge.as_bytes()))
                });
                json().is_some_and(|v| {
                    v.get("plainToken").and_then(|t| t.as_str()) == Some(challenge)
                        && v.get("encryptedToken").and_then(|t| t.as_str()) == want.as_deref()
                })
            }
        };
        (!ok).then(|| self.describe_answer().to_string())
    }

    /// What the answer must hold, for findings.
    pub fn describe_answer(&self) -> &'static str {
        match self.answer {
            Answer::Status => "the handshake wants a 2xx",
            Answer::Echo => "the answer did not echo the handshake's challenge",
            Answer::Pong => "the answer to the PING was not a PONG ({\"type\": 1})",
            Answer::ZoomToken => {
                "the answer did not hold the plainToken and its encryptedToken (hex HMAC-SHA256 with the secret)"
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(answer: Answer) -> Handshake {
        Handshake {
            template: "{}".into(),
            answer,
            headers: Default::default(),
        }
    }

    #[test]
    fn each_answer_kind_accepts_what_its_provider_checks_and_nothing_less() {
        assert!(h(Answer::Pong)
            .refusal("c", br#"{"type": 1}"#, None)
            .is_none());
        assert!(h(Answer::Pong).refusal("c", b"", None).is_some());
        assert!(h(Answer::Echo).refusal("abc", b"abc", None).is_none());
        assert!(h(Answer::Echo).refusal("abc", b"ok", None).is_some());
        let s = Secret::new("zoom-secret");
        let k = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, b"zoom-secret");
        let token = hex::encode(ring::hmac::sign(&k, b"tok"));
        let good = format!(r#"{{"plainToken": "tok", "encryptedToken": "{token}"}}"#);
        assert!(h(Answer::ZoomToken)
            .refusal("tok", good.as_bytes(), Some(&s))
            .is_none());
        assert!(h(Answer::ZoomToken)
            .refusal(
                "tok",
                br#"{"plainToken": "tok", "encryptedToken": "00"}"#,
                Some(&s)
            )
            .is_some());
        assert!(h(Answer::Status).refusal("x", b"", None).is_none());
    }
}
