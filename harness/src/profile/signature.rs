//! Webhook signature schemes: sign like a sender, verify like a receiver.
//!
//! Every scheme is data (header names plus a construction) so a profile can
//! name one and a custom TOML profile can re-parameterise it. The same code
//! signs deliveries in the harness and verifies them in the reference
//! receiver, and both are proven against the providers' published vectors.
//!
//! Verification compares MACs in constant time (`hmac::Mac::verify_slice`),
//! accepts any one of several signatures (key rotation), ignores signature
//! versions it does not know, and enforces the timestamp tolerance in both
//! directions. Header parsers never panic: whatever bytes arrive, they return
//! a parse or an error.

use std::fmt;

pub mod httpsig;
pub mod template;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// A signing secret. Its `Debug` and `Display` never show the value, so a
/// secret cannot leak into a log line or a report by accident.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret string.
    pub fn new(s: impl Into<String>) -> Self {
        Secret(s.into())
    }
    /// The secret's text; only for keying a MAC.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// How a MAC is written into a header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Encoding {
    /// Lowercase hex.
    Hex,
    /// Standard base64 with padding.
    Base64,
}

impl Encoding {
    fn decode(self, text: &str) -> Option<Vec<u8>> {
        match self {
            Encoding::Hex => hex::decode(text.trim()).ok(),
            Encoding::Base64 => B64.decode(text.trim()).ok(),
        }
    }
}

/// A signature construction and the headers it uses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind", deny_unknown_fields)]
pub enum Scheme {
    /// `t=<unix>,v1=<hex>[,v1=…]` over `"<t>.<body>"`, keyed with the secret
    /// bytes as given (answerline, Stripe).
    TimestampedHex {
        /// The signature header, e.g. `Webhook-Signature`.
        header: String,
    },
    /// Standard Webhooks / Svix: `v1,<base64>` (space separated) over
    /// `"<id>.<timestamp>.<body>"`, keyed with the base64-decoded secret
    /// after stripping `whsec_`.
    StandardWebhooks {
        /// Header carrying the message id (signed).
        id_header: String,
        /// Header carrying the unix timestamp.
        timestamp_header: String,
        /// Header carrying the signatures.
        signature_header: String,
    },
    /// `<prefix><encoded HMAC(body)>` with no timestamp (GitHub, Shopify, generic-hex).
    BodyHmac {
        /// The signature header.
        header: String,
        /// Text before the MAC, e.g. `sha256=`.
        prefix: String,
        /// How the MAC is written.
        encoding: Encoding,
    },
    /// Slack: `v0=<hex HMAC("v0:<ts>:<body>")>` plus a timestamp header.
    Slack {
        /// The signature header.
        signature_header: String,
        /// The timestamp header.
        timestamp_header: String,
    },
    /// A scheme written as data: algorithm, signed bytes and header value
    /// as templates (Twilio, Square, Paddle, Discord, SendGrid, …).
    Template(template::Template),
    /// HTTP Message Signatures (RFC 9421), Ed25519 or ES256.
    HttpMessageSignature(httpsig::HttpSig),
}

/// What a sender signs: the message id, the attempt's timestamp, the raw body.
#[derive(Debug, Clone, Copy)]
pub struct SignInput<'a> {
    /// The delivery id (signed only by Standard Webhooks).
    pub id: &'a str,
    /// Unix seconds of this attempt.
    pub timestamp: i64,
    /// The exact body bytes.
    pub body: &'a [u8],
    /// The URL the request is sent to (signed by Twilio, Square, HubSpot
    /// and HTTP Message Signatures).
    pub url: &'a str,
}

/// Why a signature header could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// Not valid UTF-8 / ASCII.
    #[error("header is not ASCII text")]
    NotText,
    /// Empty header.
    #[error("header is empty")]
    Empty,
    /// A `key=value` element without `=`.
    #[error("element {0:?} is not key=value")]
    NotKeyValue(String),
    /// The timestamp is missing.
    #[error("no timestamp")]
    NoTimestamp,
    /// The timestamp is not an integer.
    #[error("timestamp {0:?} is not unix seconds")]
    BadTimestamp(String),
    /// The header carries no entry this scheme knows.
    #[error("no signature of a known version")]
    NoKnownSignature,
    /// The expected prefix is missing.
    #[error("missing prefix {0:?}")]
    MissingPrefix(String),
    /// The MAC is not in the expected encoding.
    #[error("signature is not valid {0}")]
    BadEncoding(&'static str),
}

/// Why verification failed. Each kind maps to a 4xx in a receiver.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    /// A header the scheme needs is absent.
    #[error("missing header {0}")]
    MissingHeader(String),
    /// A header is present but malformed.
    #[error("malformed header {header}: {source}")]
    Malformed {
        /// The header name.
        header: String,
        /// What was wrong.
        source: ParseError,
    },
    /// The timestamp is further in the past than the tolerance.
    #[error("timestamp is {0} s old, past the tolerance")]
    Stale(i64),
    /// The timestamp is further in the future than the tolerance.
    #[error("timestamp is {0} s in the future, past the tolerance")]
    Future(i64),
    /// No signature matched any secret.
    #[error("no signature matches")]
    Mismatch,
    /// A secret could not be used as a key (e.g. bad base64 after `whsec_`).
    #[error("a configured secret is not usable with this scheme")]
    BadSecret,
}

/// A parsed `t=…,v1=…` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimestampedHeader {
    /// The timestamp.
    pub timestamp: i64,
    /// Every `v1` MAC, decoded; unknown versions are skipped.
    pub signatures: Vec<Vec<u8>>,
}

fn ascii(raw: &[u8]) -> Result<&str, ParseError> {
    let s = std::str::from_utf8(raw).map_err(|_| ParseError::NotText)?;
    if !s.is_ascii() {
        return Err(ParseError::NotText);
    }
    if s.trim().is_empty() {
        return Err(ParseError::Empty);
    }
    Ok(s)
}

fn parse_unix(s: &str) -> Result<i64, ParseError> {
    let t = s.trim();
    if t.is_empty() || t.len() > 12 || !t.bytes().all(|b| b.is_ascii_digit()) {
        return Err(ParseError::BadTimestamp(t.chars().take(32).collect()));
    }
    t.parse()
        .map_err(|_| ParseError::BadTimestamp(t.chars().take(32).collect()))
}

/// Parses `t=<unix>,v1=<hex>[,v1=<hex>…]`; other versions (`v0=`, `v2=`) are ignored.
pub fn parse_timestamped(raw: &[u8]) -> Result<TimestampedHeader, ParseError> {
    let s = ascii(raw)?;
    let mut timestamp = None;
    let mut signatures = Vec::new();
    for element in s.split(',') {
        let element = element.trim();
        let (k, v) = element
            .split_once('=')
            .ok_or_else(|| ParseError::NotKeyValue(element.chars().take(32).collect()))?;
        match k.trim() {
            "t" => timestamp = Some(parse_unix(v)?),
            "v1" => signatures.push(
                Encoding::Hex
                    .decode(v)
                    .ok_or(ParseError::BadEncoding("hex"))?,
            ),
            _ => {}
        }
    }
    let timestamp = timestamp.ok_or(ParseError::NoTimestamp)?;
    if signatures.is_empty() {
        return Err(ParseError::NoKnownSignature);
    }
    Ok(TimestampedHeader {
        timestamp,
        signatures,
    })
}

/// Parses a Standard Webhooks signature header: space-separated `v1,<base64>`
/// entries; other versions are ignored.
pub fn parse_standard(raw: &[u8]) -> Result<Vec<Vec<u8>>, ParseError> {
    let s = ascii(raw)?;
    let mut out = Vec::new();
    for entry in s.split_whitespace() {
        let (version, sig) = entry
            .split_once(',')
            .ok_or_else(|| ParseError::NotKeyValue(entry.chars().take(32).collect()))?;
        if version == "v1" {
            out.push(
                Encoding::Base64
                    .decode(sig)
                    .ok_or(ParseError::BadEncoding("base64"))?,
            );
        }
    }
    if out.is_empty() {
        return Err(ParseError::NoKnownSignature);
    }
    Ok(out)
}

/// Parses `<prefix><encoded MAC>` (GitHub `sha256=…`, Shopify base64, Slack `v0=…`).
pub fn parse_prefixed(raw: &[u8], prefix: &str, encoding: Encoding) -> Result<Vec<u8>, ParseError> {
    let s = ascii(raw)?.trim();
    let rest = s
        .strip_prefix(prefix)
        .ok_or_else(|| ParseError::MissingPrefix(prefix.to_string()))?;
    encoding.decode(rest).ok_or(match encoding {
        Encoding::Hex => ParseError::BadEncoding("hex"),
        Encoding::Base64 => ParseError::BadEncoding("base64"),
    })
}

/// Parses a bare unix timestamp header.
pub fn parse_timestamp_header(raw: &[u8]) -> Result<i64, ParseError> {
    parse_unix(ascii(raw)?)
}

fn key_for(scheme: &Scheme, secret: &Secret) -> Result<Vec<u8>, VerifyError> {
    match scheme {
        Scheme::StandardWebhooks { .. } => {
            let s = secret.expose();
            let s = s.strip_prefix("whsec_").unwrap_or(s);
            B64.decode(s).map_err(|_| VerifyError::BadSecret)
        }
        _ => Ok(secret.expose().as_bytes().to_vec()),
    }
}

fn mac(key: &[u8], parts: &[&[u8]]) -> HmacSha256 {
    let mut m = HmacSha256::new_from_slice(key).expect("HMAC takes keys of any length");
    for p in parts {
        m.update(p);
    }
    m
}

fn signed_parts<'a>(scheme: &Scheme, id: &'a str, ts: &'a str, body: &'a [u8]) -> Vec<&'a [u8]> {
    match scheme {
        Scheme::TimestampedHex { .. } => vec![ts.as_bytes(), b".", body],
        Scheme::StandardWebhooks { .. } => vec![id.as_bytes(), b".", ts.as_bytes(), b".", body],
        Scheme::BodyHmac { .. } => vec![body],
        Scheme::Slack { .. } => vec![b"v0:", ts.as_bytes(), b":", body],
        Scheme::Template(_) | Scheme::HttpMessageSignature(_) => {
            unreachable!("data schemes build their own bytes")
        }
    }
}

/// What the verifier of a scheme written as data reads of one request.
pub struct Received<'a> {
    /// A header's value as text, by name (any case).
    pub header: &'a dyn Fn(&str) -> Option<String>,
    /// The URL it was addressed to.
    pub url: &'a str,
    /// The raw body.
    pub body: &'a [u8],
    /// The verifier's clock, unix seconds.
    pub now: i64,
    /// The largest |now - t| accepted, when the scheme carries a time.
    pub tolerance: Option<i64>,
}

impl Received<'_> {
    /// A header the scheme needs.
    pub fn get(&self, name: &str) -> Result<String, VerifyError> {
        (self.header)(name).ok_or_else(|| VerifyError::MissingHeader(name.into()))
    }

    /// Whether a signed time `t` lies within the tolerance.
    pub fn within(&self, t: i64) -> Result<(), VerifyError> {
        within(t, self.now, self.tolerance)
    }
}

/// The error of a malformed header.
pub fn malformed(header: &str, source: ParseError) -> VerifyError {
    VerifyError::Malformed {
        header: header.to_string(),
        source,
    }
}

/// Whether a signed time `t` lies within `tolerance` of `now`, both ways.
fn within(t: i64, now: i64, tolerance: Option<i64>) -> Result<(), VerifyError> {
    if let Some(tol) = tolerance {
        let age = now.saturating_sub(t);
        if age > tol {
            return Err(VerifyError::Stale(age));
        }
        if -age > tol {
            return Err(VerifyError::Future(-age));
        }
    }
    Ok(())
}

/// The URL a request was addressed to, as a receiver reconstructs it to
/// check a signature that covers the URL: `http://`, its `Host`, its path
/// and query.
pub fn request_url<H: HeaderSource + ?Sized>(headers: &H, path_and_query: &str) -> String {
    let host = headers
        .header("host")
        .and_then(|h| std::str::from_utf8(h).ok())
        .unwrap_or_default();
    format!("http://{host}{path_and_query}")
}

/// A header's value as text, for the schemes written as data.
fn text_header<H: HeaderSource + ?Sized>(headers: &H) -> impl Fn(&str) -> Option<String> + '_ {
    move |name| {
        headers
            .header(name)
            .and_then(|v| std::str::from_utf8(v).ok())
            .map(str::to_string)
    }
}

/// Looks a header up by (case-insensitive) name.
pub trait HeaderSource {
    /// The raw value of the first header with this name.
    fn header(&self, name: &str) -> Option<&[u8]>;
}

impl HeaderSource for http::HeaderMap {
    fn header(&self, name: &str) -> Option<&[u8]> {
        self.get(name).map(|v| v.as_bytes())
    }
}

impl HeaderSource for [(String, String)] {
    fn header(&self, name: &str) -> Option<&[u8]> {
        self.iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_bytes())
    }
}

impl Scheme {
    /// Whether the scheme carries a timestamp (and so has a replay window).
    pub fn has_timestamp(&self) -> bool {
        match self {
            Scheme::BodyHmac { .. } => false,
            Scheme::Template(t) => t.has_timestamp(),
            _ => true,
        }
    }

    /// Whether the receiver verifies with a public key (derived from the
    /// account's secret, see [`template`]).
    pub fn is_asymmetric(&self) -> bool {
        match self {
            Scheme::Template(t) => t.algorithm.is_asymmetric(),
            Scheme::HttpMessageSignature(_) => true,
            _ => false,
        }
    }

    /// The public key a receiver verifies `secret`'s signatures with, as
    /// the provider hands it out; `None` for HMAC schemes.
    pub fn public_key(&self, secret: &Secret) -> Option<String> {
        match self {
            Scheme::Template(t) => t.public_key(secret),
            Scheme::HttpMessageSignature(h) => h.public_key(secret),
            _ => None,
        }
    }

    /// Whether the signature travels in the body (Mailgun's), not a header.
    pub fn signs_into_body(&self) -> bool {
        matches!(self, Scheme::Template(t) if t.body_signature.is_some())
    }

    /// Whether the signature covers the body: a changed body fails it.
    /// Mailgun's signs only a timestamp and a token.
    pub fn signs_body(&self) -> bool {
        match self {
            Scheme::Template(t) => t.signed.contains("{body}") || t.signed.contains("{form}"),
            _ => true,
        }
    }

    /// The body one attempt sends: its per-attempt marks filled (the send
    /// time of `input`, a token) and a signature that travels in the body
    /// written by the newest of `secrets` (none given: left empty).
    pub fn sign_body(
        &self,
        secrets: &[Secret],
        input: SignInput<'_>,
    ) -> Result<Vec<u8>, VerifyError> {
        match self {
            Scheme::Template(t) => t.sign_body(
                secrets.last(),
                input.id,
                input.timestamp,
                input.url,
                input.body,
            ),
            _ => Ok(crate::profile::envelope::stamp_sent(
                input.body,
                input.timestamp,
            )),
        }
    }

    /// Whether the signature covers the URL the request goes to.
    pub fn signs_url(&self) -> bool {
        match self {
            Scheme::Template(t) => t.signed.contains("{url}"),
            Scheme::HttpMessageSignature(_) => true,
            _ => false,
        }
    }

    /// Whether a signature header carries one signature only, so a key
    /// rotation signs with the newest secret.
    pub fn single_signature(&self) -> bool {
        !matches!(
            self,
            Scheme::TimestampedHex { .. } | Scheme::StandardWebhooks { .. }
        )
    }

    /// The signed timestamp a request carries (unix seconds), for schemes
    /// that sign one; `None` when the scheme has none or the header is
    /// missing or malformed.
    pub fn timestamp_of<H: HeaderSource + ?Sized>(&self, headers: &H) -> Option<i64> {
        match self {
            Scheme::TimestampedHex { header } => parse_timestamped(headers.header(header)?)
                .ok()
                .map(|p| p.timestamp),
            Scheme::StandardWebhooks {
                timestamp_header, ..
            }
            | Scheme::Slack {
                timestamp_header, ..
            } => parse_timestamp_header(headers.header(timestamp_header)?).ok(),
            Scheme::BodyHmac { .. } => None,
            Scheme::Template(t) => t.timestamp_of(text_header(headers)),
            Scheme::HttpMessageSignature(h) => h.timestamp_of(text_header(headers)),
        }
    }

    /// The headers a sender sets: one signature per secret (rotation), and
    /// the timestamp header where the scheme has one. Body-only schemes can
    /// carry one signature only, so they sign with the first secret.
    ///
    /// Keys the MACs on every call; a sender signing many deliveries with
    /// the same secrets keys them once with [`Scheme::signer`].
    pub fn sign(
        &self,
        secrets: &[Secret],
        input: SignInput<'_>,
    ) -> Result<Vec<(String, String)>, VerifyError> {
        let keyed = keyed_macs(self, secrets)?;
        let mut values = Vec::new();
        sign_into(self, &keyed, secrets, input, &mut values)?;
        Ok(self.header_names().into_iter().zip(values).collect())
    }

    /// The headers a signature of this scheme fills, in the order
    /// [`Signer::sign_values`] writes them.
    fn header_names(&self) -> Vec<String> {
        match self {
            Scheme::TimestampedHex { header } | Scheme::BodyHmac { header, .. } => {
                vec![header.clone()]
            }
            Scheme::StandardWebhooks {
                id_header,
                timestamp_header,
                signature_header,
            } => vec![
                id_header.clone(),
                timestamp_header.clone(),
                signature_header.clone(),
            ],
            Scheme::Slack {
                signature_header,
                timestamp_header,
            } => vec![timestamp_header.clone(), signature_header.clone()],
            Scheme::Template(t) => t.header_names(),
            Scheme::HttpMessageSignature(_) => {
                httpsig::HEADERS.iter().map(|h| h.to_string()).collect()
            }
        }
    }

    /// A signer for `secrets`, keyed once: fails as [`Scheme::sign`] would
    /// (a secret this scheme cannot use as a key).
    pub fn signer(&self, secrets: &[Secret]) -> Result<Signer, VerifyError> {
        let keyed = keyed_macs(self, secrets)?;
        if let Scheme::Template(t) = self {
            // A secret that cannot key the template fails here, not per delivery.
            if let Some(s) = secrets.first() {
                t.sign(s, "", 0, "", b"")?;
            }
        }
        Ok(Signer {
            scheme: self.clone(),
            keyed,
            secrets: secrets.to_vec(),
            names: self.header_names(),
        })
    }

    /// Verifies a request: any one signature matching any one secret passes;
    /// `tolerance` (seconds) bounds |now - timestamp| where the scheme has a
    /// timestamp.
    pub fn verify<H: HeaderSource + ?Sized>(
        &self,
        secrets: &[Secret],
        headers: &H,
        body: &[u8],
        now: i64,
        tolerance: Option<i64>,
    ) -> Result<(), VerifyError> {
        self.verify_request(secrets, headers, "", body, now, tolerance)
    }

    /// [`Scheme::verify`] for a request sent to `url`, which schemes that
    /// sign the URL (Twilio, Square, HubSpot, RFC 9421) cover.
    pub fn verify_request<H: HeaderSource + ?Sized>(
        &self,
        secrets: &[Secret],
        headers: &H,
        url: &str,
        body: &[u8],
        now: i64,
        tolerance: Option<i64>,
    ) -> Result<(), VerifyError> {
        let header = text_header(headers);
        let received = Received {
            header: &header,
            url,
            body,
            now,
            tolerance,
        };
        match self {
            Scheme::Template(t) => return t.verify(secrets, &received),
            Scheme::HttpMessageSignature(h) => return h.verify(secrets, &received),
            _ => {}
        }
        let get = |name: &str| {
            headers
                .header(name)
                .ok_or_else(|| VerifyError::MissingHeader(name.to_string()))
        };
        let malformed = |name: &str| {
            let name = name.to_string();
            move |source| VerifyError::Malformed {
                header: name,
                source,
            }
        };
        let (ts, id, candidates): (Option<i64>, String, Vec<Vec<u8>>) = match self {
            Scheme::TimestampedHex { header } => {
                let p = parse_timestamped(get(header)?).map_err(malformed(header))?;
                (Some(p.timestamp), String::new(), p.signatures)
            }
            Scheme::StandardWebhooks {
                id_header,
                timestamp_header,
                signature_header,
            } => {
                let id = ascii(get(id_header)?)
                    .map_err(malformed(id_header))?
                    .to_string();
                let ts = parse_timestamp_header(get(timestamp_header)?)
                    .map_err(malformed(timestamp_header))?;
                let sigs =
                    parse_standard(get(signature_header)?).map_err(malformed(signature_header))?;
                (Some(ts), id, sigs)
            }
            Scheme::BodyHmac {
                header,
                prefix,
                encoding,
            } => {
                let m =
                    parse_prefixed(get(header)?, prefix, *encoding).map_err(malformed(header))?;
                (None, String::new(), vec![m])
            }
            Scheme::Slack {
                signature_header,
                timestamp_header,
            } => {
                let ts = parse_timestamp_header(get(timestamp_header)?)
                    .map_err(malformed(timestamp_header))?;
                let m = parse_prefixed(get(signature_header)?, "v0=", Encoding::Hex)
                    .map_err(malformed(signature_header))?;
                (Some(ts), String::new(), vec![m])
            }
            Scheme::Template(_) | Scheme::HttpMessageSignature(_) => {
                unreachable!("verified above")
            }
        };
        if let Some(ts) = ts {
            within(ts, now, tolerance)?;
        }
        let ts_text = ts.map(|t| t.to_string()).unwrap_or_default();
        let parts = signed_parts(self, &id, &ts_text, body);
        let mut usable = false;
        for secret in secrets {
            let Ok(key) = key_for(self, secret) else {
                continue;
            };
            usable = true;
            let base = mac(&key, &parts);
            for candidate in &candidates {
                // verify_slice compares in constant time.
                if base.clone().verify_slice(candidate).is_ok() {
                    return Ok(());
                }
            }
        }
        if usable {
            Err(VerifyError::Mismatch)
        } else {
            Err(VerifyError::BadSecret)
        }
    }
}

/// A [`Scheme`] keyed once for a fixed list of secrets.
///
/// HMAC keying hashes the key into two SHA-256 states; a signer does that
/// once per secret and clones the keyed state for each delivery, and
/// [`Signer::sign_values`] writes the header values into buffers the caller
/// reuses, with no parts list or per-MAC allocation. This is what lets the
/// bench sign every request at send time and still keep up with load tools
/// that replay one pre-signed request. [`Scheme::sign`] is this, keyed per
/// call, so the providers' vectors prove both.
#[derive(Clone)]
pub struct Signer {
    scheme: Scheme,
    /// One keyed MAC per secret, in order.
    keyed: Vec<HmacSha256>,
    /// The secrets themselves, for the schemes written as data.
    secrets: Vec<Secret>,
    /// The header names [`Signer::sign_values`] fills, in order.
    names: Vec<String>,
}

impl fmt::Debug for Signer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The keyed states are derived from the secrets: never shown.
        f.debug_struct("Signer")
            .field("scheme", &self.scheme)
            .field("secrets", &self.keyed.len())
            .finish()
    }
}

impl Signer {
    /// The headers [`Signer::sign_values`] fills, in its order.
    pub fn header_names(&self) -> &[String] {
        &self.names
    }

    /// The body one attempt sends, as [`Scheme::sign_body`] makes it.
    pub fn sign_body(&self, input: SignInput<'_>) -> Vec<u8> {
        self.scheme
            .sign_body(&self.secrets, input)
            .expect("a signer's secrets were checked when it was made")
    }

    /// The headers to set, as [`Scheme::sign`] returns them.
    pub fn sign(&self, input: SignInput<'_>) -> Vec<(String, String)> {
        let mut values = Vec::new();
        self.sign_values(input, &mut values);
        self.names.iter().cloned().zip(values).collect()
    }

    /// Writes the value of each of [`Signer::header_names`] into `values`
    /// (resized to match; each string is cleared and refilled, so its
    /// capacity is reused from one delivery to the next).
    pub fn sign_values(&self, input: SignInput<'_>, values: &mut Vec<String>) {
        sign_into(&self.scheme, &self.keyed, &self.secrets, input, values)
            .expect("a signer's secrets were checked when it was made");
    }
}

/// One keyed MAC per secret, in order.
fn keyed_macs(scheme: &Scheme, secrets: &[Secret]) -> Result<Vec<HmacSha256>, VerifyError> {
    if matches!(
        scheme,
        Scheme::Template(_) | Scheme::HttpMessageSignature(_)
    ) {
        return Ok(Vec::new());
    }
    secrets
        .iter()
        .map(|s| key_for(scheme, s).map(|k| mac(&k, &[])))
        .collect()
}

/// Signs `input` with the `keyed` MACs of `scheme`: the value of each of
/// its headers, in order, into `values` (each cleared, capacity kept).
fn sign_into(
    scheme: &Scheme,
    keyed: &[HmacSha256],
    secrets: &[Secret],
    input: SignInput<'_>,
    values: &mut Vec<String>,
) -> Result<(), VerifyError> {
    // The schemes written as data sign with the newest secret (one
    // signature per header).
    let data = match scheme {
        Scheme::Template(t) => match secrets.last() {
            Some(s) => Some(t.sign(s, input.id, input.timestamp, input.url, input.body)?),
            None => Some(t.header_names().iter().map(|_| String::new()).collect()),
        },
        Scheme::HttpMessageSignature(h) => match secrets.last() {
            Some(s) => Some(h.sign(s, input.timestamp, input.url, input.body)),
            None => Some(httpsig::HEADERS.iter().map(|_| String::new()).collect()),
        },
        _ => None,
    };
    if let Some(v) = data {
        *values = v;
        return Ok(());
    }
    values.resize_with(
        match scheme {
            Scheme::TimestampedHex { .. } | Scheme::BodyHmac { .. } => 1,
            Scheme::StandardWebhooks { .. } => 3,
            Scheme::Slack { .. } => 2,
            Scheme::Template(_) | Scheme::HttpMessageSignature(_) => unreachable!(),
        },
        String::new,
    );
    for v in values.iter_mut() {
        v.clear();
    }
    let mut ts_buf = [0u8; 20];
    let ts = format_unix(input.timestamp, &mut ts_buf);
    let mac_of = |k: &HmacSha256| {
        let mut m = k.clone();
        match scheme {
            Scheme::TimestampedHex { .. } => {
                m.update(ts.as_bytes());
                m.update(b".");
            }
            Scheme::StandardWebhooks { .. } => {
                m.update(input.id.as_bytes());
                m.update(b".");
                m.update(ts.as_bytes());
                m.update(b".");
            }
            Scheme::BodyHmac { .. } | Scheme::Template(_) | Scheme::HttpMessageSignature(_) => {}
            Scheme::Slack { .. } => {
                m.update(b"v0:");
                m.update(ts.as_bytes());
                m.update(b":");
            }
        }
        m.update(input.body);
        m.finalize().into_bytes()
    };
    match scheme {
        Scheme::TimestampedHex { .. } => {
            let v = &mut values[0];
            v.push_str("t=");
            v.push_str(ts);
            for k in keyed {
                v.push_str(",v1=");
                push_hex(v, &mac_of(k));
            }
        }
        Scheme::StandardWebhooks { .. } => {
            values[0].push_str(input.id);
            values[1].push_str(ts);
            let v = &mut values[2];
            for (i, k) in keyed.iter().enumerate() {
                if i > 0 {
                    v.push(' ');
                }
                v.push_str("v1,");
                B64.encode_string(mac_of(k), v);
            }
        }
        Scheme::BodyHmac {
            prefix, encoding, ..
        } => {
            let v = &mut values[0];
            v.push_str(prefix);
            if let Some(k) = keyed.first() {
                match encoding {
                    Encoding::Hex => push_hex(v, &mac_of(k)),
                    Encoding::Base64 => B64.encode_string(mac_of(k), v),
                }
            }
        }
        Scheme::Slack { .. } => {
            values[0].push_str(ts);
            let v = &mut values[1];
            v.push_str("v0=");
            if let Some(k) = keyed.first() {
                push_hex(v, &mac_of(k));
            }
        }
        Scheme::Template(_) | Scheme::HttpMessageSignature(_) => unreachable!(),
    }
    Ok(())
}

/// `t` in decimal, as `i64::to_string` writes it, without allocating.
fn format_unix(t: i64, buf: &mut [u8; 20]) -> &str {
    // |i64::MIN| has 19 digits, so there is always room for the sign.
    let mut i = buf.len() - crate::text::decimal::digits(t.unsigned_abs(), buf).len();
    if t < 0 {
        i -= 1;
        buf[i] = b'-';
    }
    std::str::from_utf8(&buf[i..]).expect("ascii digits")
}

/// Appends `bytes` as lowercase hex.
fn push_hex(out: &mut String, bytes: &[u8]) {
    const D: &[u8; 16] = b"0123456789abcdef";
    out.reserve(bytes.len() * 2);
    for b in bytes {
        out.push(D[usize::from(b >> 4)] as char);
        out.push(D[usize::from(b & 15)] as char);
    }
}

/// Whether an `Authorization` header value is `Bearer <token>`, compared in
/// constant time (the provider API and the admin API both gate on this).
pub fn bearer_matches(authorization: Option<&[u8]>, token: &str) -> bool {
    use subtle::ConstantTimeEq;
    let given = authorization.unwrap_or_default();
    let expected = format!("Bearer {token}");
    given.len() == expected.len() && bool::from(given.ct_eq(expected.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::Profile;
    use proptest::prelude::*;

    fn scheme(profile: &str) -> Scheme {
        Profile::builtin(profile).unwrap().scheme
    }

    /// Schemes that hold a timestamp inside the body (Linear) verify only
    /// bodies that carry one: the arbitrary bodies below do not, and
    /// their scheme is proven in `template`'s tests and against Linear's SDK.
    fn reads_time_from_body(s: &Scheme) -> bool {
        matches!(s, Scheme::Template(t) if t.body_timestamp.is_some())
    }

    fn headers(v: Vec<(String, String)>) -> Vec<(String, String)> {
        v
    }

    /// The schemes written in code, each as a profile file's
    /// `kind = "template"` says it: a user's file can express every
    /// built-in scheme, and this proves the two sign alike.
    #[test]
    fn every_scheme_written_in_code_is_one_a_profile_file_can_write() {
        let as_file = |name: &str| -> String {
            match name {
                "answerline" => "header = \"Webhook-Signature\"\nvalue = \"t={timestamp},v1={signature}\"\nsigned = \"{timestamp}.{body}\"".into(),
                "stripe" => "header = \"Stripe-Signature\"\nvalue = \"t={timestamp},v1={signature}\"\nsigned = \"{timestamp}.{body}\"".into(),
                "standard-webhooks" | "svix" => {
                    let p = if name == "svix" { "svix" } else { "webhook" };
                    format!("header = \"{p}-signature\"\nvalue = \"v1,{{signature}}\"\nsigned = \"{{id}}.{{timestamp}}.{{body}}\"\nencoding = \"base64\"\nkey = \"whsec\"\nid_header = \"{p}-id\"\ntimestamp_header = \"{p}-timestamp\"")
                }
                "github" => "header = \"X-Hub-Signature-256\"\nvalue = \"sha256={signature}\"\nsigned = \"{body}\"".into(),
                "shopify" => "header = \"X-Shopify-Hmac-Sha256\"\nsigned = \"{body}\"\nencoding = \"base64\"".into(),
                "slack" => "header = \"X-Slack-Signature\"\nvalue = \"v0={signature}\"\nsigned = \"v0:{timestamp}:{body}\"\ntimestamp_header = \"X-Slack-Request-Timestamp\"".into(),
                "generic-hex" => "header = \"X-Webhook-Signature\"\nsigned = \"{body}\"".into(),
                other => panic!("no file form for {other}"),
            }
        };
        for name in crate::profile::CORE_NAMES {
            let text = format!(
                "name = \"x\"\nextends = \"{name}\"\n[signature]\nkind = \"template\"\nalgorithm = \"hmac-sha256\"\n{}\n",
                as_file(name)
            );
            let file = Profile::from_toml(&text, std::path::Path::new("x.toml"))
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            let core = Profile::builtin(name).unwrap();
            let secret = [Secret::new("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")];
            let input = SignInput {
                id: "msg_1",
                timestamp: 1_700_000_000,
                body: br#"{"a":1}"#,
                url: "",
            };
            let mut a = core.scheme.sign(&secret, input).unwrap();
            let mut b = file.scheme.sign(&secret, input).unwrap();
            a.sort();
            b.sort();
            assert_eq!(a, b, "{name}");
            file.scheme
                .verify(
                    &secret,
                    a.as_slice(),
                    input.body,
                    input.timestamp,
                    Some(300),
                )
                .unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }

    #[test]
    fn standard_webhooks_vectors_sign_and_verify() {
        let cases = [
            (
                "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD",
                "msg_27UH4WbU6Z5A5EzD8u03UvzRbpk",
                1649367553,
                r#"{"email":"test@example.com","username":"test_user"}"#,
                "v1,tZ1I4/hDygAJgO5TYxiSd6Sd0kDW6hPenDe+bTa3Kkw=",
            ),
            (
                "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
                "msg_p5jXN8AQM9LWM0D4loKWxJek",
                1614265330,
                r#"{"test": 2432232314}"#,
                "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
            ),
        ];
        for profile in ["standard-webhooks", "svix"] {
            let s = scheme(profile);
            let Scheme::StandardWebhooks {
                signature_header, ..
            } = &s
            else {
                panic!()
            };
            for (secret, id, ts, body, expected) in cases {
                let secrets = [Secret::new(secret)];
                let h = s
                    .sign(
                        &secrets,
                        SignInput {
                            id,
                            timestamp: ts,
                            body: body.as_bytes(),
                            url: "",
                        },
                    )
                    .unwrap();
                let sig = h.iter().find(|(k, _)| k == signature_header).unwrap();
                assert_eq!(sig.1, expected);
                let h = headers(h);
                s.verify(&secrets, h.as_slice(), body.as_bytes(), ts, Some(300))
                    .unwrap();
                assert_eq!(
                    s.verify(&secrets, h.as_slice(), b"{}", ts, Some(300)),
                    Err(VerifyError::Mismatch)
                );
            }
        }
    }

    #[test]
    fn the_signed_timestamp_is_read_back_from_each_timestamped_scheme() {
        for profile in [
            "answerline",
            "standard-webhooks",
            "stripe",
            "slack",
            "github",
        ] {
            let s = scheme(profile);
            let secrets = [Secret::new("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")];
            let h = s
                .sign(
                    &secrets,
                    SignInput {
                        id: "msg_1",
                        timestamp: 1_700_000_123,
                        body: b"{}",
                        url: "",
                    },
                )
                .unwrap();
            let want = s.has_timestamp().then_some(1_700_000_123);
            assert_eq!(s.timestamp_of(h.as_slice()), want, "{profile}");
        }
        let none: Vec<(String, String)> = Vec::new();
        assert_eq!(scheme("answerline").timestamp_of(none.as_slice()), None);
    }

    #[test]
    fn github_vector_signs_and_verifies() {
        let s = scheme("github");
        let secrets = [Secret::new("It's a Secret to Everybody")];
        let h = s
            .sign(
                &secrets,
                SignInput {
                    id: "x",
                    timestamp: 0,
                    body: b"Hello, World!",
                    url: "",
                },
            )
            .unwrap();
        assert_eq!(
            h[0],
            (
                "X-Hub-Signature-256".to_string(),
                "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
                    .to_string()
            )
        );
        s.verify(&secrets, h.as_slice(), b"Hello, World!", 0, Some(300))
            .unwrap();
    }

    #[test]
    fn slack_vector_signs_and_verifies() {
        let body = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
        let s = scheme("slack");
        let secrets = [Secret::new("8f742231b10e8888abcd99yyyzzz85a5")];
        let h = s
            .sign(
                &secrets,
                SignInput {
                    id: "",
                    timestamp: 1531420618,
                    body: body.as_bytes(),
                    url: "",
                },
            )
            .unwrap();
        let sig = h.iter().find(|(k, _)| k == "X-Slack-Signature").unwrap();
        assert_eq!(
            sig.1,
            "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"
        );
        s.verify(
            &secrets,
            h.as_slice(),
            body.as_bytes(),
            1531420618 + 299,
            Some(300),
        )
        .unwrap();
        assert_eq!(
            s.verify(
                &secrets,
                h.as_slice(),
                body.as_bytes(),
                1531420618 + 301,
                Some(300)
            ),
            Err(VerifyError::Stale(301))
        );
    }

    #[test]
    fn stripe_ignores_the_test_mode_v0_entry() {
        let s = scheme("stripe");
        let secrets = [Secret::new("whsec_test_secret")];
        let h = s
            .sign(
                &secrets,
                SignInput {
                    id: "",
                    timestamp: 1000,
                    body: b"{}",
                    url: "",
                },
            )
            .unwrap();
        let (name, value) = &h[0];
        let with_v0 = vec![(name.clone(), format!("{value},v0=deadbeef"))];
        s.verify(&secrets, with_v0.as_slice(), b"{}", 1000, Some(300))
            .unwrap();
    }

    #[test]
    fn rotation_header_carries_one_v1_per_secret_and_either_verifies() {
        let s = scheme("answerline");
        let old = Secret::new("old-secret");
        let new = Secret::new("new-secret");
        let h = s
            .sign(
                &[old.clone(), new.clone()],
                SignInput {
                    id: "d",
                    timestamp: 50,
                    body: b"x",
                    url: "",
                },
            )
            .unwrap();
        assert_eq!(h[0].1.matches("v1=").count(), 2);
        s.verify(
            std::slice::from_ref(&new),
            h.as_slice(),
            b"x",
            50,
            Some(300),
        )
        .unwrap();
        s.verify(&[old], h.as_slice(), b"x", 50, Some(300)).unwrap();
        let only_old = s
            .sign(
                &[Secret::new("retired")],
                SignInput {
                    id: "d",
                    timestamp: 50,
                    body: b"x",
                    url: "",
                },
            )
            .unwrap();
        assert_eq!(
            s.verify(&[new], only_old.as_slice(), b"x", 50, Some(300)),
            Err(VerifyError::Mismatch)
        );
    }

    #[test]
    fn tolerance_is_enforced_in_both_directions() {
        let s = scheme("answerline");
        let k = [Secret::new("k")];
        let h = s
            .sign(
                &k,
                SignInput {
                    id: "d",
                    timestamp: 10_000,
                    body: b"x",
                    url: "",
                },
            )
            .unwrap();
        assert!(s.verify(&k, h.as_slice(), b"x", 10_300, Some(300)).is_ok());
        assert_eq!(
            s.verify(&k, h.as_slice(), b"x", 10_301, Some(300)),
            Err(VerifyError::Stale(301))
        );
        assert!(s.verify(&k, h.as_slice(), b"x", 9_700, Some(300)).is_ok());
        assert_eq!(
            s.verify(&k, h.as_slice(), b"x", 9_699, Some(300)),
            Err(VerifyError::Future(301))
        );
    }

    #[test]
    fn unknown_scheme_versions_only_are_rejected_as_malformed() {
        let s = scheme("answerline");
        let h = vec![("Webhook-Signature".to_string(), "t=5,v2=abcd".to_string())];
        let e = s
            .verify(&[Secret::new("k")], h.as_slice(), b"x", 5, Some(300))
            .unwrap_err();
        assert!(matches!(
            e,
            VerifyError::Malformed {
                source: ParseError::NoKnownSignature,
                ..
            }
        ));
    }

    #[test]
    fn missing_header_is_named() {
        let s = scheme("answerline");
        let none: Vec<(String, String)> = vec![];
        assert_eq!(
            s.verify(&[Secret::new("k")], none.as_slice(), b"x", 5, Some(300)),
            Err(VerifyError::MissingHeader("Webhook-Signature".into()))
        );
    }

    #[test]
    fn bearer_tokens_match_only_exactly() {
        assert!(bearer_matches(Some(b"Bearer t0k"), "t0k"));
        assert!(!bearer_matches(Some(b"Bearer t0K"), "t0k"));
        assert!(!bearer_matches(Some(b"Bearer t0k2"), "t0k"));
        assert!(!bearer_matches(Some(b"t0k"), "t0k"));
        assert!(!bearer_matches(None, "t0k"));
    }

    #[test]
    fn a_reused_signer_signs_each_delivery_as_a_fresh_key_would() {
        // One signer and one set of value buffers across deliveries of
        // shrinking size: a value left over from the previous delivery, or a
        // keyed state that kept the previous message, would differ here.
        let secrets = [
            Secret::new("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"),
            Secret::new("whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"),
        ];
        let deliveries: [(&str, i64, &[u8]); 4] = [
            (
                "msg_long_identifier_1",
                1_795_000_000,
                b"{\"a\":\"a longer body\"}",
            ),
            ("m2", 1_649_367_553, b"{}"),
            ("3", 7, b""),
            ("m4", -12, b"x"),
        ];
        for name in crate::profile::BUILTIN_NAMES {
            let scheme = Profile::builtin(name).unwrap().scheme;
            for n in 0..=2 {
                let signer = scheme.signer(&secrets[..n]).unwrap();
                let mut values = Vec::new();
                for (id, timestamp, body) in deliveries {
                    let input = SignInput {
                        id,
                        timestamp,
                        body,
                        url: "",
                    };
                    signer.sign_values(input, &mut values);
                    let reused: Vec<(String, String)> = signer
                        .header_names()
                        .iter()
                        .cloned()
                        .zip(values.clone())
                        .collect();
                    let fresh = scheme.sign(&secrets[..n], input).unwrap();
                    assert_eq!(signer.sign(input), fresh);
                    assert_eq!(reused, fresh, "{name} with {n} secret(s), {id:?}");
                    // Receivers read unix seconds only: a negative time is
                    // compared as text above, not verified.
                    if n > 0 && timestamp >= 0 && !reads_time_from_body(&scheme) {
                        scheme
                            .verify(&secrets[..n], reused.as_slice(), body, timestamp, None)
                            .unwrap_or_else(|e| panic!("{name} with {n} secret(s): {e}"));
                    }
                }
            }
        }
    }

    #[test]
    fn signed_timestamps_read_as_decimal_text() {
        let mut buf = [0u8; 20];
        for t in [0, 7, -12, 1_795_000_000, i64::MAX, i64::MIN] {
            assert_eq!(format_unix(t, &mut buf), t.to_string());
        }
    }

    #[test]
    fn a_secret_unusable_as_a_key_fails_the_signer() {
        let s = scheme("standard-webhooks");
        let bad = [Secret::new("whsec_not base64!")];
        assert_eq!(s.signer(&bad).unwrap_err(), VerifyError::BadSecret);
        assert!(!format!(
            "{:?}",
            scheme("github").signer(&[Secret::new("hidden")]).unwrap()
        )
        .contains("hidden"));
    }

    #[test]
    fn secrets_never_print() {
        let s = Secret::new("supersecret");
        assert!(!format!("{s:?} {s}").contains("supersecret"));
    }

    proptest! {
        #[test]
        fn header_parsers_never_panic_on_arbitrary_bytes(raw in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = parse_timestamped(&raw);
            let _ = parse_standard(&raw);
            let _ = parse_prefixed(&raw, "sha256=", Encoding::Hex);
            let _ = parse_prefixed(&raw, "", Encoding::Base64);
            let _ = parse_timestamp_header(&raw);
        }

        #[test]
        fn header_parsers_reject_what_they_cannot_parse(text in "[ -~]{0,80}") {
            // Anything accepted must round-trip to a meaningful parse.
            if let Ok(p) = parse_timestamped(text.as_bytes()) {
                prop_assert!(!p.signatures.is_empty());
                prop_assert!(text.contains("t=") && text.contains("v1="));
            }
            if let Ok(s) = parse_standard(text.as_bytes()) {
                prop_assert!(!s.is_empty() && text.contains("v1,"));
            }
            if parse_prefixed(text.as_bytes(), "sha256=", Encoding::Hex).is_ok() {
                prop_assert!(text.trim().starts_with("sha256="));
            }
        }

        #[test]
        fn every_scheme_verifies_what_it_signs_and_nothing_else(
            body in proptest::collection::vec(any::<u8>(), 0..256),
            ts in 1_000_000_000i64..2_000_000_000,
            flip in any::<usize>(),
        ) {
            for name in crate::profile::BUILTIN_NAMES {
                let p = Profile::builtin(name).unwrap();
                // Twilio's construction decodes the form before it signs
                // ("a=b" and "ab=" sign alike, "+" and "%20" too): arbitrary
                // bytes are no form, and a flipped bit can sign the same.
                let signs_form = matches!(&p.scheme, Scheme::Template(t) if t.signed.contains("{form}"));
                if reads_time_from_body(&p.scheme) || signs_form {
                    continue;
                }
                let secret = [Secret::new("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")];
                let h = p.scheme.sign(&secret, SignInput { id: "msg_1", timestamp: ts, body: &body, url: "" }).unwrap();
                prop_assert!(p.scheme.verify(&secret, h.as_slice(), &body, ts, Some(300)).is_ok());
                if !body.is_empty() {
                    let mut tampered = body.clone();
                    let i = flip % tampered.len();
                    tampered[i] ^= 0x01;
                    prop_assert!(p.scheme.verify(&secret, h.as_slice(), &tampered, ts, Some(300)).is_err());
                }
            }
        }
    }
}
