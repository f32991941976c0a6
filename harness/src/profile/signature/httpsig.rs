//! HTTP Message Signatures (RFC 9421) as a webhook sender uses them.
//!
//! The sender covers the method, the target URI and the body's
//! `Content-Digest` (RFC 9530, SHA-256), adds `created` and `keyid`
//! parameters, and signs the signature base with Ed25519 or ECDSA P-256
//! (ES256, `r‖s`). `Signature-Input` names the covered components under a
//! label, `Signature` carries the signature under the same label. A
//! verifier rebuilds the base from the request it received, so a changed
//! body fails twice: its digest and the signature over the digest.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use serde::{Deserialize, Serialize};

use super::template::{self, Algorithm, EcdsaForm, KeyForm, PublicKeyForm};
use super::{malformed, ParseError, Received, Secret, VerifyError};

/// The components a hookstorm sender covers, in order.
pub const COVERED: [&str; 3] = ["@method", "@target-uri", "content-digest"];

/// The RFC 9421 algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HttpSigAlgorithm {
    /// `ed25519`.
    Ed25519,
    /// `ecdsa-p256-sha256` (ES256).
    EcdsaP256Sha256,
}

impl HttpSigAlgorithm {
    /// The registered name, as the `alg` parameter writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            HttpSigAlgorithm::Ed25519 => "ed25519",
            HttpSigAlgorithm::EcdsaP256Sha256 => "ecdsa-p256-sha256",
        }
    }

    fn algorithm(self) -> Algorithm {
        match self {
            HttpSigAlgorithm::Ed25519 => Algorithm::Ed25519,
            HttpSigAlgorithm::EcdsaP256Sha256 => Algorithm::EcdsaP256,
        }
    }
}

fn default_label() -> String {
    "sig1".into()
}

fn default_keyid() -> String {
    "hookstorm".into()
}

/// RFC 9421 signing (`kind = "http-message-signature"` in a profile file).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpSig {
    /// The algorithm.
    pub algorithm: HttpSigAlgorithm,
    /// The signature's label in both headers.
    #[serde(default = "default_label")]
    pub label: String,
    /// The `keyid` parameter.
    #[serde(default = "default_keyid")]
    pub keyid: String,
    /// How the public key is written for the receiver.
    #[serde(default)]
    pub public_key: PublicKeyForm,
}

/// The headers a signature fills, in order.
pub const HEADERS: [&str; 3] = ["Content-Digest", "Signature-Input", "Signature"];

/// `sha-256=:<base64>:` of `body`.
pub fn content_digest(body: &[u8]) -> String {
    let d = ring::digest::digest(&ring::digest::SHA256, body);
    format!("sha-256=:{}:", B64.encode(d.as_ref()))
}

/// The inner list and parameters of `Signature-Input` (after `label=`).
fn params(components: &[String], created: i64, keyid: &str, alg: &str) -> String {
    let list: Vec<String> = components.iter().map(|c| format!("\"{c}\"")).collect();
    format!(
        "({});created={created};keyid=\"{keyid}\";alg=\"{alg}\"",
        list.join(" ")
    )
}

/// The signature base of RFC 9421 section 2.5.
fn base(
    components: &[String],
    url: &str,
    header: &dyn Fn(&str) -> Option<String>,
    sig_params: &str,
) -> Option<String> {
    let mut out = String::new();
    for c in components {
        let value = match c.as_str() {
            "@method" => "POST".to_string(),
            "@target-uri" => url.to_string(),
            name if name.starts_with('@') => return None,
            name => header(name)?.trim().to_string(),
        };
        out.push_str(&format!("\"{c}\": {value}\n"));
    }
    out.push_str(&format!("\"@signature-params\": {sig_params}"));
    Some(out)
}

/// A parsed `Signature-Input` member.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Input {
    components: Vec<String>,
    created: Option<i64>,
    /// The member's text after `label=`, as signed.
    raw: String,
}

/// Finds `label=` in a dictionary header and returns its value text.
fn member<'a>(header: &'a str, label: &str) -> Option<&'a str> {
    // Members are separated by commas outside parentheses and strings.
    let mut depth = 0;
    let mut quoted = false;
    let mut start = 0;
    let bytes = header.as_bytes();
    let mut members = Vec::new();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'"' => quoted = !quoted,
            b'(' if !quoted => depth += 1,
            b')' if !quoted => depth -= 1,
            b',' if !quoted && depth == 0 => {
                members.push(&header[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    members.push(&header[start..]);
    members.into_iter().find_map(|m| {
        let (k, v) = m.trim().split_once('=')?;
        (k.trim() == label).then_some(v.trim())
    })
}

fn parse_input(raw: &str) -> Result<Input, ParseError> {
    let bad = || ParseError::NotKeyValue(raw.chars().take(32).collect());
    let rest = raw.strip_prefix('(').ok_or_else(bad)?;
    let close = rest.find(')').ok_or_else(bad)?;
    let components: Vec<String> = rest[..close]
        .split_whitespace()
        .map(|c| c.trim_matches('"').to_string())
        .collect();
    let mut created = None;
    for p in rest[close + 1..].split(';').filter(|p| !p.is_empty()) {
        if let Some(v) = p.strip_prefix("created=") {
            created = Some(
                v.parse()
                    .map_err(|_| ParseError::BadTimestamp(v.chars().take(32).collect()))?,
            );
        }
    }
    Ok(Input {
        components,
        created,
        raw: raw.to_string(),
    })
}

impl HttpSig {
    /// The header values (as [`HEADERS`]) of a signature by `secret`.
    pub fn sign(&self, secret: &Secret, t: i64, url: &str, body: &[u8]) -> Vec<String> {
        let digest = content_digest(body);
        let components: Vec<String> = COVERED.iter().map(|c| c.to_string()).collect();
        let p = params(&components, t, &self.keyid, self.algorithm.as_str());
        let d = digest.clone();
        let header = move |name: &str| {
            name.eq_ignore_ascii_case("content-digest")
                .then(|| d.clone())
        };
        let b = base(&components, url, &header, &p).expect("covered components resolve");
        let sig = template::sign_bytes(
            self.algorithm.algorithm(),
            KeyForm::Text,
            EcdsaForm::Fixed,
            secret,
            b.as_bytes(),
        )
        .expect("asymmetric keys come from any secret");
        vec![
            digest,
            format!("{}={p}", self.label),
            format!("{}=:{}:", self.label, B64.encode(sig)),
        ]
    }

    /// The timestamp (`created`) a request carries.
    pub fn timestamp_of(&self, header: impl Fn(&str) -> Option<String>) -> Option<i64> {
        let input = header("Signature-Input")?;
        parse_input(member(&input, &self.label)?).ok()?.created
    }

    /// Verifies a request's signature and digest.
    pub fn verify(&self, secrets: &[Secret], r: &Received<'_>) -> Result<(), VerifyError> {
        let input_header = r.get("Signature-Input")?;
        let sig_header = r.get("Signature")?;
        let raw_input = member(&input_header, &self.label)
            .ok_or_else(|| malformed("Signature-Input", ParseError::NoKnownSignature))?;
        let input = parse_input(raw_input).map_err(|e| malformed("Signature-Input", e))?;
        let sig_text = member(&sig_header, &self.label)
            .ok_or_else(|| malformed("Signature", ParseError::NoKnownSignature))?;
        let sig = sig_text
            .strip_prefix(':')
            .and_then(|s| s.strip_suffix(':'))
            .and_then(|s| B64.decode(s).ok())
            .ok_or_else(|| malformed("Signature", ParseError::BadEncoding("byte sequence")))?;
        // Whatever the input says, the sender's own components must be covered.
        for c in COVERED {
            if !input.components.iter().any(|x| x == c) {
                return Err(malformed(
                    "Signature-Input",
                    ParseError::MissingPrefix(format!("\"{c}\"")),
                ));
            }
        }
        let created = input
            .created
            .ok_or_else(|| malformed("Signature-Input", ParseError::NoTimestamp))?;
        r.within(created)?;
        let digest = r.get("Content-Digest")?;
        if digest.trim() != content_digest(r.body) {
            return Err(VerifyError::Mismatch);
        }
        let b = base(&input.components, r.url, r.header, &input.raw)
            .ok_or_else(|| malformed("Signature-Input", ParseError::NoKnownSignature))?;
        for secret in secrets {
            if template::verify_bytes(
                self.algorithm.algorithm(),
                KeyForm::Text,
                EcdsaForm::Fixed,
                secret,
                b.as_bytes(),
                &sig,
            )? {
                return Ok(());
            }
        }
        Err(VerifyError::Mismatch)
    }

    /// The public key a receiver verifies with.
    pub fn public_key(&self, secret: &Secret) -> Option<String> {
        template::public_key(self.algorithm.algorithm(), self.public_key, secret)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_base_covers_method_uri_and_digest_with_its_parameters() {
        let s = HttpSig {
            algorithm: HttpSigAlgorithm::Ed25519,
            label: "sig1".into(),
            keyid: "k".into(),
            public_key: PublicKeyForm::Base64,
        };
        let v = s.sign(&Secret::new("x"), 1_700_000_000, "http://h/p", b"{}");
        assert_eq!(
            v[0],
            "sha-256=:RBNvo1WzZ4oRRq0W9+hknpT7T8If536DEMBg9hyq/4o=:"
        );
        assert_eq!(
            v[1],
            "sig1=(\"@method\" \"@target-uri\" \"content-digest\");created=1700000000;keyid=\"k\";alg=\"ed25519\""
        );
        let h = |n: &str| {
            HEADERS
                .iter()
                .position(|x| x.eq_ignore_ascii_case(n))
                .map(|i| v[i].clone())
        };
        let key = [Secret::new("x")];
        let r = |url, body, now| Received {
            header: &h,
            url,
            body,
            now,
            tolerance: Some(300),
        };
        s.verify(&key, &r("http://h/p", b"{}", 1_700_000_000))
            .unwrap();
        assert!(s
            .verify(&key, &r("http://h/other", b"{}", 1_700_000_000))
            .is_err());
        assert!(s
            .verify(&key, &r("http://h/p", b"{ }", 1_700_000_000))
            .is_err());
        assert_eq!(
            s.verify(&key, &r("http://h/p", b"{}", 1_700_001_000)),
            Err(VerifyError::Stale(1000))
        );
    }

    #[test]
    fn dictionary_members_split_outside_parentheses_and_strings() {
        let h = "a=(\"x\" \"y\");k=\"p,q\", sig1=:AA==:";
        assert_eq!(member(h, "sig1"), Some(":AA==:"));
        assert_eq!(member(h, "a"), Some("(\"x\" \"y\");k=\"p,q\""));
        assert_eq!(member(h, "b"), None);
    }
}
