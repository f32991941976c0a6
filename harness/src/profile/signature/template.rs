//! Signature schemes written as data: what is signed, with which
//! algorithm, and how the result is written into a header.
//!
//! Most providers differ only in a handful of choices: HMAC with SHA-1,
//! SHA-256 or SHA-512 (or an Ed25519 or ECDSA P-256 signature), over a
//! concatenation of the timestamp, the delivery id, the method, the URL,
//! the sorted form parameters and the raw body, written in hex or base64
//! inside a header value such as `sha256={signature}` or
//! `ts={timestamp};h1={signature}`. A [`Template`] is those choices, so a
//! built-in provider is a few lines of TOML and a user's profile file can
//! say the same of a provider hookstorm does not know.
//!
//! Asymmetric keys are derived from the account's secret (SHA-256 of the
//! secret and the algorithm's name): everything that knows the secret
//! signs and verifies with the same key pair, and the receiver under test
//! is given the public key ([`Template::public_key`], `hookstorm sign
//! --public-key`). A run whose secrets are fresh has fresh keys.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use serde::{Deserialize, Serialize};

use super::{malformed, Encoding, ParseError, Received, Secret, VerifyError};

/// The algorithm a [`Template`] signs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Algorithm {
    /// HMAC-SHA1 (Twilio, Intercom's `X-Hub-Signature`).
    HmacSha1,
    /// HMAC-SHA256.
    HmacSha256,
    /// HMAC-SHA512.
    HmacSha512,
    /// Ed25519 (Discord interactions, Standard Webhooks `v1a`).
    Ed25519,
    /// ECDSA over P-256 with SHA-256 (SendGrid's event webhook).
    EcdsaP256,
}

impl Algorithm {
    /// Whether the receiver verifies with a public key.
    pub fn is_asymmetric(self) -> bool {
        matches!(self, Algorithm::Ed25519 | Algorithm::EcdsaP256)
    }

    /// The name in profile files and docs.
    pub fn as_str(self) -> &'static str {
        match self {
            Algorithm::HmacSha1 => "hmac-sha1",
            Algorithm::HmacSha256 => "hmac-sha256",
            Algorithm::HmacSha512 => "hmac-sha512",
            Algorithm::Ed25519 => "ed25519",
            Algorithm::EcdsaP256 => "ecdsa-p256",
        }
    }
}

/// How a timestamp is written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TimeFormat {
    /// Unix seconds.
    #[default]
    Unix,
    /// Unix milliseconds (HubSpot).
    UnixMs,
    /// RFC 3339 in UTC (Twitch EventSub).
    Rfc3339,
}

impl TimeFormat {
    /// `t` (unix seconds) written in this format.
    pub fn write(self, t: i64) -> String {
        match self {
            TimeFormat::Unix => t.to_string(),
            TimeFormat::UnixMs => (t.saturating_mul(1000)).to_string(),
            TimeFormat::Rfc3339 => chrono::DateTime::from_timestamp(t, 0)
                .map(|d| d.format("%Y-%m-%dT%H:%M:%SZ").to_string())
                .unwrap_or_else(|| t.to_string()),
        }
    }

    /// Unix seconds from text in this format.
    pub fn read(self, s: &str) -> Result<i64, ParseError> {
        let bad = || ParseError::BadTimestamp(s.chars().take(32).collect());
        let s = s.trim();
        match self {
            TimeFormat::Unix | TimeFormat::UnixMs => {
                if s.is_empty() || s.len() > 16 || !s.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(bad());
                }
                let n: i64 = s.parse().map_err(|_| bad())?;
                Ok(if self == TimeFormat::UnixMs {
                    n / 1000
                } else {
                    n
                })
            }
            TimeFormat::Rfc3339 => chrono::DateTime::parse_from_rfc3339(s)
                .map(|d| d.timestamp())
                .map_err(|_| bad()),
        }
    }
}

/// How the secret becomes a key.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KeyForm {
    /// The secret's bytes as given.
    #[default]
    Text,
    /// Base64 after an optional `whsec_` prefix (Standard Webhooks).
    Whsec,
}

/// How a public key is written for the receiver.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PublicKeyForm {
    /// Lowercase hex of the raw key (Discord's application public key).
    #[default]
    Hex,
    /// Standard base64 of the raw key.
    Base64,
    /// `whpk_` and base64 of the raw key (Standard Webhooks `v1a`).
    Whpk,
    /// Base64 of the DER SubjectPublicKeyInfo (SendGrid's verification key).
    SpkiBase64,
}

/// How an ECDSA signature is written before its encoding.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EcdsaForm {
    /// ASN.1 DER (SendGrid).
    #[default]
    Der,
    /// r and s, 32 bytes each (JOSE's and RFC 9421's ES256).
    Fixed,
}

fn default_value() -> String {
    "{signature}".into()
}

/// A signature scheme as data (`kind = "template"` in a profile file).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Template {
    /// What signs.
    pub algorithm: Algorithm,
    /// The header carrying the signature.
    pub header: String,
    /// The header's value, with `{signature}` and optionally `{timestamp}`.
    #[serde(default = "default_value")]
    pub value: String,
    /// The signed bytes: text with `{timestamp}`, `{id}`, `{method}`,
    /// `{url}`, `{form}` (the form parameters sorted by name, each name
    /// followed by its value) and `{body}`.
    pub signed: String,
    /// How the signature is written.
    #[serde(default = "hex")]
    pub encoding: Encoding,
    /// The header carrying the timestamp, when it has one of its own.
    #[serde(default)]
    pub timestamp_header: Option<String>,
    /// How the timestamp is written.
    #[serde(default)]
    pub timestamp_format: TimeFormat,
    /// The header carrying the delivery id, when the scheme signs it.
    #[serde(default)]
    pub id_header: Option<String>,
    /// How the secret becomes an HMAC key.
    #[serde(default)]
    pub key: KeyForm,
    /// How the public key is written for the receiver (asymmetric only).
    #[serde(default)]
    pub public_key: PublicKeyForm,
    /// How an ECDSA signature is written.
    #[serde(default)]
    pub ecdsa: EcdsaForm,
    /// A JSON pointer to a timestamp inside the signed body (Linear's
    /// `/webhookTimestamp`), in `timestamp_format`, held to the tolerance.
    #[serde(default)]
    pub body_timestamp: Option<String>,
    /// A JSON pointer to where the signature travels inside the body
    /// instead of a header (Mailgun's `/signature/signature`); the body
    /// template holds `{{signature}}` there.
    #[serde(default)]
    pub body_signature: Option<String>,
    /// A JSON pointer to a token in the body that the signature covers
    /// (`{token}`; Mailgun's `/signature/token`, `{{token}}` in the body).
    #[serde(default)]
    pub body_token: Option<String>,
}

fn hex() -> Encoding {
    Encoding::Hex
}

/// The placeholders of [`Template::signed`].
pub const SIGNED_PLACEHOLDERS: [&str; 7] =
    ["timestamp", "id", "method", "url", "form", "body", "token"];

/// One piece of a template: text as it is, or a placeholder's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Piece<'a> {
    /// Text as it is.
    Text(&'a str),
    /// `{name}`.
    Slot(&'a str),
}

/// The pieces of a template; `{` without `}` is text.
pub fn pieces(t: &str) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    let mut rest = t;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else {
            break;
        };
        if open > 0 {
            out.push(Piece::Text(&rest[..open]));
        }
        out.push(Piece::Slot(&rest[open + 1..open + close]));
        rest = &rest[open + close + 1..];
    }
    if !rest.is_empty() {
        out.push(Piece::Text(rest));
    }
    out
}

/// What a request gives a template: the parts it can sign.
#[derive(Debug, Clone, Copy)]
pub struct Parts<'a> {
    /// The delivery id.
    pub id: &'a str,
    /// The timestamp, as written.
    pub timestamp: &'a str,
    /// The URL the request was sent to.
    pub url: &'a str,
    /// The raw body.
    pub body: &'a [u8],
    /// The token (`{token}`), when the scheme has one.
    pub token: &'a str,
}

/// The form parameters of `body`, sorted by name (then value), each name
/// followed by its value: what Twilio signs after the URL.
pub fn sorted_form(body: &[u8]) -> Vec<u8> {
    let mut pairs: Vec<(String, String)> = form_urlencoded::parse(body)
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    pairs.sort();
    let mut out = Vec::new();
    for (k, v) in pairs {
        out.extend_from_slice(k.as_bytes());
        out.extend_from_slice(v.as_bytes());
    }
    out
}

/// Why a profile file's template cannot be used.
pub fn check(t: &Template) -> Result<(), String> {
    for p in pieces(&t.signed) {
        if let Piece::Slot(name) = p {
            if !SIGNED_PLACEHOLDERS.contains(&name) {
                return Err(format!(
                    "signed = {:?}: unknown placeholder {{{name}}} (expected one of {})",
                    t.signed,
                    SIGNED_PLACEHOLDERS.join(", ")
                ));
            }
        }
    }
    if t.body_signature.is_some() {
        let body_time = t.body_timestamp.is_some() || !t.signed.contains("{timestamp}");
        let token = t.body_token.is_some() || !t.signed.contains("{token}");
        return if body_time && token {
            Ok(())
        } else {
            Err("a signature in the body signs only what the body carries (hint: body_timestamp and body_token for {timestamp} and {token})".into())
        };
    }
    if t.signed.contains("{token}") {
        return Err("{token} is signed only with the signature in the body (hint: body_signature and body_token)".into());
    }
    let slots: Vec<&str> = pieces(&t.value)
        .into_iter()
        .filter_map(|p| match p {
            Piece::Slot(s) => Some(s),
            Piece::Text(_) => None,
        })
        .collect();
    if slots.iter().filter(|s| **s == "signature").count() != 1
        || slots
            .iter()
            .any(|s| !["signature", "timestamp"].contains(s))
    {
        return Err(format!(
            "value = {:?}: expected {{signature}} once, and {{timestamp}} at most",
            t.value
        ));
    }
    let signs_time = t.signed.contains("{timestamp}");
    let carries_time = t.timestamp_header.is_some() || slots.contains(&"timestamp");
    if signs_time && !carries_time {
        return Err("the signed bytes hold {timestamp}, but no header carries it (hint: timestamp_header = \"…\" or {timestamp} in value)".into());
    }
    if t.signed.contains("{id}") && t.id_header.is_none() {
        return Err(
            "the signed bytes hold {id}, but no header carries it (hint: id_header = \"…\")".into(),
        );
    }
    Ok(())
}

impl Template {
    /// Whether a timestamp travels with the signature.
    pub fn has_timestamp(&self) -> bool {
        self.timestamp_header.is_some()
            || self.value.contains("{timestamp}")
            || self.body_timestamp.is_some()
    }

    /// The headers a signature fills, in order: id, timestamp, signature.
    pub fn header_names(&self) -> Vec<String> {
        let mut out = Vec::new();
        out.extend(self.id_header.clone());
        out.extend(self.timestamp_header.clone());
        if self.body_signature.is_none() {
            out.push(self.header.clone());
        }
        out
    }

    /// The bytes signed for `parts`.
    pub fn signed_bytes(&self, parts: Parts<'_>) -> Vec<u8> {
        let mut out = Vec::with_capacity(parts.body.len() + parts.url.len() + 64);
        for p in pieces(&self.signed) {
            match p {
                Piece::Text(t) => out.extend_from_slice(t.as_bytes()),
                Piece::Slot("timestamp") => out.extend_from_slice(parts.timestamp.as_bytes()),
                Piece::Slot("id") => out.extend_from_slice(parts.id.as_bytes()),
                Piece::Slot("method") => out.extend_from_slice(b"POST"),
                Piece::Slot("url") => out.extend_from_slice(parts.url.as_bytes()),
                Piece::Slot("form") => out.extend_from_slice(&sorted_form(parts.body)),
                Piece::Slot("body") => out.extend_from_slice(parts.body),
                Piece::Slot("token") => out.extend_from_slice(parts.token.as_bytes()),
                Piece::Slot(other) => {
                    out.push(b'{');
                    out.extend_from_slice(other.as_bytes());
                    out.push(b'}');
                }
            }
        }
        out
    }

    /// The header values (as [`Template::header_names`]) of a signature
    /// by `secret` at unix time `t`.
    pub fn sign(
        &self,
        secret: &Secret,
        id: &str,
        t: i64,
        url: &str,
        body: &[u8],
    ) -> Result<Vec<String>, VerifyError> {
        let ts = self.timestamp_format.write(t);
        let mut out = Vec::new();
        if self.id_header.is_some() {
            out.push(id.to_string());
        }
        if self.timestamp_header.is_some() {
            out.push(ts.clone());
        }
        // A signature that travels in the body is written by `sign_body`.
        if self.body_signature.is_some() {
            return Ok(out);
        }
        let sig = self.signature_text(
            secret,
            Parts {
                id,
                timestamp: &ts,
                url,
                body,
                token: "",
            },
        )?;
        let mut value = String::new();
        for p in pieces(&self.value) {
            match p {
                Piece::Text(t) => value.push_str(t),
                Piece::Slot("signature") => value.push_str(&sig),
                Piece::Slot("timestamp") => value.push_str(&ts),
                Piece::Slot(other) => {
                    value.push('{');
                    value.push_str(other);
                    value.push('}');
                }
            }
        }
        out.push(value);
        Ok(out)
    }

    /// The signature of `parts` by `secret`, in the scheme's encoding.
    fn signature_text(&self, secret: &Secret, parts: Parts<'_>) -> Result<String, VerifyError> {
        let raw = sign_bytes(
            self.algorithm,
            self.key,
            self.ecdsa,
            secret,
            &self.signed_bytes(parts),
        )?;
        Ok(match self.encoding {
            Encoding::Hex => hex::encode(raw),
            Encoding::Base64 => B64.encode(raw),
        })
    }

    /// The body of one attempt: its marks filled (send time, token) and,
    /// for a signature that travels in the body, signed by `secret` (none:
    /// the signature left empty).
    pub fn sign_body(
        &self,
        secret: Option<&Secret>,
        id: &str,
        t: i64,
        url: &str,
        body: &[u8],
    ) -> Result<Vec<u8>, VerifyError> {
        use crate::profile::envelope::{replace_mark, stamp_sent, SIGNATURE_MARK, TOKEN_MARK};
        let body = stamp_sent(body, t);
        if self.body_signature.is_none() {
            return Ok(body);
        }
        let token = token_for(id, t);
        let body = replace_mark(&body, TOKEN_MARK, &token);
        let sig = match secret {
            Some(secret) => self.signature_text(
                secret,
                Parts {
                    id,
                    timestamp: &self.timestamp_format.write(t),
                    url,
                    body: &body,
                    token: &token,
                },
            )?,
            None => String::new(),
        };
        Ok(replace_mark(&body, SIGNATURE_MARK, &sig))
    }

    /// Reads `{signature}` and `{timestamp}` back out of a header value.
    pub fn parse_value<'v>(&self, v: &'v str) -> Result<(&'v str, Option<&'v str>), ParseError> {
        let ps = pieces(&self.value);
        let mut rest = v.trim();
        let mut sig = None;
        let mut ts = None;
        for (i, p) in ps.iter().enumerate() {
            match p {
                Piece::Text(t) => {
                    rest = rest
                        .strip_prefix(t)
                        .ok_or_else(|| ParseError::MissingPrefix(t.to_string()))?;
                }
                Piece::Slot(name) => {
                    let end = match ps.get(i + 1) {
                        Some(Piece::Text(next)) => rest
                            .find(next)
                            .ok_or_else(|| ParseError::MissingPrefix(next.to_string()))?,
                        _ => rest.len(),
                    };
                    let (got, after) = rest.split_at(end);
                    match *name {
                        "signature" => sig = Some(got),
                        "timestamp" => ts = Some(got),
                        _ => {}
                    }
                    rest = after;
                }
            }
        }
        if !rest.is_empty() {
            return Err(ParseError::NotKeyValue(rest.chars().take(32).collect()));
        }
        Ok((sig.ok_or(ParseError::NoKnownSignature)?, ts))
    }

    /// The header value of a signature the receiver must not know: the
    /// text before the signature (its version tag) replaced by `v9=`.
    pub fn unknown_version(&self, v: &str) -> String {
        match self.parse_value(v) {
            Ok((sig, ts)) => {
                let mut out = String::new();
                let ps = pieces(&self.value);
                for (i, p) in ps.iter().enumerate() {
                    match p {
                        Piece::Text(t)
                            if matches!(ps.get(i + 1), Some(Piece::Slot("signature"))) =>
                        {
                            // Keep separators before the tag (`;` of `ts=…;h1=`).
                            let keep = t.rfind([';', ',', ' ']).map_or(0, |k| k + 1);
                            out.push_str(&t[..keep]);
                        }
                        Piece::Text(t) => out.push_str(t),
                        Piece::Slot("signature") => {
                            out.push_str("v9=");
                            out.push_str(sig);
                        }
                        Piece::Slot(_) => out.push_str(ts.unwrap_or_default()),
                    }
                }
                out
            }
            Err(_) => format!("v9={v}"),
        }
    }

    /// A header value of this scheme's shape that does not parse.
    pub fn garbage(&self) -> String {
        self.value
            .replace("{signature}", "not-a-signature!")
            .replace("{timestamp}", "not-a-time")
    }

    /// The timestamp a request carries, as unix seconds.
    pub fn timestamp_of(&self, header: impl Fn(&str) -> Option<String>) -> Option<i64> {
        let text = match &self.timestamp_header {
            Some(h) => header(h)?,
            None => {
                let v = header(&self.header)?;
                self.parse_value(&v).ok()?.1?.to_string()
            }
        };
        self.timestamp_format.read(&text).ok()
    }

    /// Checks a request's signature against every secret.
    pub fn verify(&self, secrets: &[Secret], r: &Received<'_>) -> Result<(), VerifyError> {
        let in_body = |p: &str| {
            crate::profile::pointer_text(r.body, p)
                .filter(|v| !v.is_empty())
                .ok_or_else(|| VerifyError::MissingHeader(p.to_string()))
        };
        let value;
        let (sig_text, ts_in_value) = match &self.body_signature {
            Some(p) => {
                value = in_body(p)?;
                (value.as_str(), None)
            }
            None => {
                value = r.get(&self.header)?;
                self.parse_value(&value)
                    .map_err(|e| malformed(&self.header, e))?
            }
        };
        let token = match &self.body_token {
            Some(p) => in_body(p)?,
            None => String::new(),
        };
        let ts_text = match &self.timestamp_header {
            Some(h) => Some(r.get(h)?),
            None => ts_in_value.map(str::to_string),
        };
        let body_time = match &self.body_timestamp {
            Some(p) => Some(
                crate::profile::pointer_text(r.body, p)
                    .ok_or_else(|| malformed(p, ParseError::NoTimestamp))?,
            ),
            None => None,
        };
        if let Some(text) = ts_text.as_ref().or(body_time.as_ref()) {
            let name = self
                .timestamp_header
                .as_deref()
                .or(self.body_timestamp.as_deref())
                .unwrap_or(&self.header);
            let t = self
                .timestamp_format
                .read(text)
                .map_err(|e| malformed(name, e))?;
            r.within(t)?;
        }
        let id = match &self.id_header {
            Some(h) => r.get(h)?,
            None => String::new(),
        };
        let sig = self
            .encoding
            .decode(sig_text)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| {
                malformed(
                    &self.header,
                    ParseError::BadEncoding(match self.encoding {
                        Encoding::Hex => "hex",
                        Encoding::Base64 => "base64",
                    }),
                )
            })?;
        let signed_time = ts_text.as_deref().or(body_time.as_deref());
        let bytes = self.signed_bytes(Parts {
            id: &id,
            timestamp: signed_time.unwrap_or_default(),
            url: r.url,
            body: r.body,
            token: &token,
        });
        let mut usable = false;
        for secret in secrets {
            match verify_bytes(self.algorithm, self.key, self.ecdsa, secret, &bytes, &sig) {
                Ok(true) => return Ok(()),
                Ok(false) => usable = true,
                Err(_) => {}
            }
        }
        Err(if usable {
            VerifyError::Mismatch
        } else {
            VerifyError::BadSecret
        })
    }

    /// The public key a receiver verifies with, for asymmetric algorithms.
    pub fn public_key(&self, secret: &Secret) -> Option<String> {
        public_key(self.algorithm, self.public_key, secret)
    }
}

/// The token of one attempt (50 hex characters, as wide as Mailgun's):
/// derived from its delivery id and time, so each attempt has its own.
fn token_for(id: &str, t: i64) -> String {
    let d = ring::digest::digest(&ring::digest::SHA256, format!("{id}\0{t}").as_bytes());
    hex::encode(d.as_ref())[..50].to_string()
}

fn hmac_key(form: KeyForm, secret: &Secret) -> Result<Vec<u8>, VerifyError> {
    match form {
        KeyForm::Text => Ok(secret.expose().as_bytes().to_vec()),
        KeyForm::Whsec => {
            let s = secret.expose();
            B64.decode(s.strip_prefix("whsec_").unwrap_or(s))
                .map_err(|_| VerifyError::BadSecret)
        }
    }
}

fn hmac_alg(a: Algorithm) -> Option<ring::hmac::Algorithm> {
    Some(match a {
        Algorithm::HmacSha1 => ring::hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY,
        Algorithm::HmacSha256 => ring::hmac::HMAC_SHA256,
        Algorithm::HmacSha512 => ring::hmac::HMAC_SHA512,
        Algorithm::Ed25519 | Algorithm::EcdsaP256 => return None,
    })
}

/// 32 bytes derived from the secret for `algorithm`'s private key.
fn seed(algorithm: Algorithm, secret: &Secret, round: u8) -> [u8; 32] {
    let d = ring::digest::digest(
        &ring::digest::SHA256,
        format!(
            "hookstorm {} key {round}\0{}",
            algorithm.as_str(),
            secret.expose()
        )
        .as_bytes(),
    );
    let mut out = [0u8; 32];
    out.copy_from_slice(d.as_ref());
    out
}

fn ed25519(secret: &Secret) -> ring::signature::Ed25519KeyPair {
    ring::signature::Ed25519KeyPair::from_seed_unchecked(&seed(Algorithm::Ed25519, secret, 0))
        .expect("every 32-byte seed is an Ed25519 key")
}

fn p256(secret: &Secret) -> p256::ecdsa::SigningKey {
    // A SHA-256 output is a valid scalar but for odds of about 2^-32.
    (0..=u8::MAX)
        .find_map(|r| {
            p256::ecdsa::SigningKey::from_slice(&seed(Algorithm::EcdsaP256, secret, r)).ok()
        })
        .expect("some round gives a scalar")
}

/// The DER SubjectPublicKeyInfo prefix of an uncompressed P-256 point.
const P256_SPKI_PREFIX: [u8; 26] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a,
    0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];

/// The raw public key of `secret` under `algorithm`: 32 bytes (Ed25519)
/// or the 65-byte uncompressed point (P-256); `None` for HMAC.
pub fn raw_public_key(algorithm: Algorithm, secret: &Secret) -> Option<Vec<u8>> {
    use ring::signature::KeyPair as _;
    match algorithm {
        Algorithm::Ed25519 => Some(ed25519(secret).public_key().as_ref().to_vec()),
        Algorithm::EcdsaP256 => Some(
            p256(secret)
                .verifying_key()
                .to_encoded_point(false)
                .as_bytes()
                .to_vec(),
        ),
        _ => None,
    }
}

/// The public key of `secret` written as `form`.
pub fn public_key(algorithm: Algorithm, form: PublicKeyForm, secret: &Secret) -> Option<String> {
    let raw = raw_public_key(algorithm, secret)?;
    Some(match form {
        PublicKeyForm::Hex => hex::encode(raw),
        PublicKeyForm::Base64 => B64.encode(raw),
        PublicKeyForm::Whpk => format!("whpk_{}", B64.encode(raw)),
        PublicKeyForm::SpkiBase64 if algorithm == Algorithm::EcdsaP256 => {
            B64.encode([P256_SPKI_PREFIX.as_slice(), &raw].concat())
        }
        PublicKeyForm::SpkiBase64 => {
            // Ed25519's SubjectPublicKeyInfo: OID 1.3.101.112.
            let prefix = [
                0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00,
            ];
            B64.encode([prefix.as_slice(), &raw].concat())
        }
    })
}

/// Signs `bytes` with the key `secret` gives under `algorithm`.
pub fn sign_bytes(
    algorithm: Algorithm,
    key: KeyForm,
    ecdsa: EcdsaForm,
    secret: &Secret,
    bytes: &[u8],
) -> Result<Vec<u8>, VerifyError> {
    if let Some(alg) = hmac_alg(algorithm) {
        let k = ring::hmac::Key::new(alg, &hmac_key(key, secret)?);
        return Ok(ring::hmac::sign(&k, bytes).as_ref().to_vec());
    }
    Ok(match algorithm {
        Algorithm::Ed25519 => ed25519(secret).sign(bytes).as_ref().to_vec(),
        _ => {
            use p256::ecdsa::signature::Signer as _;
            let sig: p256::ecdsa::Signature = p256(secret).sign(bytes);
            match ecdsa {
                EcdsaForm::Der => sig.to_der().as_bytes().to_vec(),
                EcdsaForm::Fixed => sig.to_bytes().to_vec(),
            }
        }
    })
}

/// Whether `sig` is `secret`'s signature of `bytes`; `Err` when the secret
/// cannot key this algorithm.
pub fn verify_bytes(
    algorithm: Algorithm,
    key: KeyForm,
    ecdsa: EcdsaForm,
    secret: &Secret,
    bytes: &[u8],
    sig: &[u8],
) -> Result<bool, VerifyError> {
    if let Some(alg) = hmac_alg(algorithm) {
        let k = ring::hmac::Key::new(alg, &hmac_key(key, secret)?);
        // ring compares in constant time.
        return Ok(ring::hmac::verify(&k, bytes, sig).is_ok());
    }
    let public = raw_public_key(algorithm, secret).expect("asymmetric");
    Ok(match algorithm {
        Algorithm::Ed25519 => {
            ring::signature::UnparsedPublicKey::new(&ring::signature::ED25519, &public)
                .verify(bytes, sig)
                .is_ok()
        }
        _ => {
            use p256::ecdsa::signature::Verifier as _;
            let parsed = match ecdsa {
                EcdsaForm::Der => p256::ecdsa::Signature::from_der(sig),
                EcdsaForm::Fixed => p256::ecdsa::Signature::from_slice(sig),
            };
            let Ok(parsed) = parsed else {
                return Ok(false);
            };
            p256(secret).verifying_key().verify(bytes, &parsed).is_ok()
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(signed: &str, value: &str) -> Template {
        Template {
            algorithm: Algorithm::HmacSha256,
            header: "X-Sig".into(),
            value: value.into(),
            signed: signed.into(),
            encoding: Encoding::Hex,
            timestamp_header: None,
            timestamp_format: TimeFormat::Unix,
            id_header: None,
            key: KeyForm::Text,
            public_key: PublicKeyForm::Hex,
            ecdsa: EcdsaForm::Der,
            body_timestamp: None,
            body_signature: None,
            body_token: None,
        }
    }

    #[test]
    fn a_header_value_template_reads_back_its_signature_and_timestamp() {
        let p = t("{timestamp}:{body}", "ts={timestamp};h1={signature}");
        assert_eq!(p.parse_value("ts=17;h1=abcd"), Ok(("abcd", Some("17"))));
        assert!(p.parse_value("h1=abcd").is_err());
        assert!(p.parse_value("ts=17;h1=abcd;x").is_ok());
        assert_eq!(p.unknown_version("ts=17;h1=abcd"), "ts=17;v9=abcd");
        let g = t("{body}", "sha256={signature}");
        assert_eq!(g.unknown_version("sha256=ab"), "v9=ab");
    }

    #[test]
    fn the_github_vector_signs_under_a_template_as_under_the_built_in_scheme() {
        let g = t("{body}", "sha256={signature}");
        let v = g
            .sign(
                &Secret::new("It's a Secret to Everybody"),
                "",
                0,
                "",
                b"Hello, World!",
            )
            .unwrap();
        assert_eq!(
            v,
            ["sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"]
        );
    }

    #[test]
    fn asymmetric_signatures_verify_with_the_secrets_key_and_no_other() {
        for (alg, form) in [
            (Algorithm::Ed25519, EcdsaForm::Der),
            (Algorithm::EcdsaP256, EcdsaForm::Der),
            (Algorithm::EcdsaP256, EcdsaForm::Fixed),
        ] {
            let mut s = t("{timestamp}{body}", "{signature}");
            s.algorithm = alg;
            s.ecdsa = form;
            s.encoding = Encoding::Base64;
            s.timestamp_header = Some("X-Ts".into());
            let a = Secret::new("a");
            let v = s.sign(&a, "", 100, "", b"{}").unwrap();
            let h = |name: &str| match name {
                "X-Ts" => Some(v[0].clone()),
                "X-Sig" => Some(v[1].clone()),
                _ => None,
            };
            let r = |body: &'static [u8]| Received {
                header: &h,
                url: "",
                body,
                now: 100,
                tolerance: Some(300),
            };
            s.verify(std::slice::from_ref(&a), &r(b"{}")).unwrap();
            assert_eq!(
                s.verify(&[Secret::new("b")], &r(b"{}")),
                Err(VerifyError::Mismatch)
            );
            assert_eq!(
                s.verify(std::slice::from_ref(&a), &r(b"{ }")),
                Err(VerifyError::Mismatch)
            );
            assert!(s.public_key(&a).is_some());
        }
    }

    #[test]
    fn form_parameters_are_signed_sorted_by_name_and_decoded() {
        assert_eq!(
            sorted_form(b"To=%2B1555&Body=hi+there&AccountSid=AC1"),
            b"AccountSidAC1Bodyhi thereTo+1555".to_vec()
        );
    }

    #[test]
    fn a_template_that_signs_what_no_header_carries_is_refused() {
        assert!(check(&t("{timestamp}.{body}", "{signature}")).is_err());
        assert!(check(&t("{body}", "{timestamp}")).is_err());
        assert!(check(&t("{bodyy}", "{signature}")).is_err());
        assert!(check(&t("{timestamp}.{body}", "t={timestamp},v1={signature}")).is_ok());
    }

    #[test]
    fn timestamps_read_back_in_every_format() {
        for f in [TimeFormat::Unix, TimeFormat::UnixMs, TimeFormat::Rfc3339] {
            assert_eq!(f.read(&f.write(1_700_000_000)), Ok(1_700_000_000));
        }
        assert!(TimeFormat::Rfc3339.read("yesterday").is_err());
    }
}
