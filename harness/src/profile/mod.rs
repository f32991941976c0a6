//! Sender profiles: everything one webhook provider does, as data.
//!
//! A profile bundles the retry schedule, the per-attempt timeout, what counts
//! as success, the header names, the signature scheme, the body shape and the
//! replay tolerance. The built-in profiles below are the single place where
//! the numbers of `docs/contract.md` live; everything else
//! (sender, reference receiver, reports) reads them from here. Custom
//! profiles are TOML files that start from a built-in (`extends`) and
//! override what differs.
//!
//! A profile also carries the provider's *semantics* ([`Semantics`]): which
//! two deliveries are the same event (the identity), which timestamps its
//! official verifier refuses (the freshness), what an update is about (the
//! object) and which of two updates is newer (the order field). A receiver
//! built on a provider's own SDK follows those rules, so the scenarios and
//! the history follow them too: the history's `key` is the profile's
//! identity, its `job` the object, its `created_at` the order field.

pub mod about;
pub mod doc;
pub mod envelope;
mod file;
pub mod handshake;
pub mod providers;
pub mod schedule;
pub mod signature;
pub mod vocabulary;

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{read_toml, ConfigError};
use crate::profile::schedule::{Jitter, Schedule, Waits};
use crate::profile::signature::{Encoding, Scheme};

/// Dashboard redeliveries allowed per account per hour (`docs/contract.md`,
/// "Redelivery": the project's default, configurable per scenario).
pub const REDELIVERY_LIMIT_PER_HOUR: u32 = 100;

/// The built-in profiles written in code, whose body shapes are their own
/// (the others are files over them, [`providers`]).
pub const CORE_NAMES: [&str; 8] = [
    "answerline",
    "standard-webhooks",
    "svix",
    "stripe",
    "github",
    "shopify",
    "slack",
    "generic-hex",
];

/// Names of the built-in profiles, default first: the ones in code, then
/// the provider files in their order.
pub const BUILTIN_NAMES: [&str; CORE_NAMES.len() + providers::FILES.len()] = {
    let mut out = [""; CORE_NAMES.len() + providers::FILES.len()];
    let mut i = 0;
    while i < out.len() {
        out[i] = if i < CORE_NAMES.len() {
            CORE_NAMES[i]
        } else {
            providers::FILES[i - CORE_NAMES.len()].0
        };
        i += 1;
    }
    out
};

/// The default profile's name.
pub const DEFAULT_PROFILE: &str = "answerline";

pub use crate::profile::about::About;
pub use crate::profile::envelope::{BodyFormat, BodyShape};

/// Where a profile's event identity lives: what makes two deliveries the
/// same event, so that a receiver must store it once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind", content = "at")]
pub enum Identity {
    /// The body's `task.id` (answerline): a fresh delivery id does not make
    /// a new event.
    TaskId,
    /// The delivery id header (Standard Webhooks' `webhook-id`, GitHub's
    /// delivery GUID, generic-hex's idempotency key): retries and
    /// redeliveries keep it, and a fresh one is a new message.
    DeliveryId,
    /// A header of its own, set per event and kept when the delivery id
    /// changes (Shopify's `X-Shopify-Event-Id`).
    Header(String),
    /// A JSON pointer into the signed body (Stripe `/id`, Slack `/event_id`).
    Body(String),
}

/// Which timestamps the provider's official verifier refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Freshness {
    /// Too old and too new (|now - t| > tolerance).
    Both,
    /// Only too old: a future timestamp passes the official library.
    PastOnly,
    /// No timestamp is signed: replays cannot be refused by age.
    None,
}

/// What an event *is* under a profile: identity, freshness, object, order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Semantics {
    /// What makes two deliveries the same event.
    pub identity: Identity,
    /// Which timestamps a receiver built on the official library refuses.
    pub freshness: Freshness,
    /// Where the object an update is about lives (a JSON pointer into the
    /// body): the "job" whose newest update wins.
    pub object: Option<String>,
    /// Where the field that orders two updates of one object lives (a JSON
    /// pointer into the body).
    pub order: Option<String>,
}

impl Semantics {
    /// The answerline contract's rules: `task.id`, ±tolerance, job key, `createdAt`.
    pub fn answerline() -> Semantics {
        Semantics {
            identity: Identity::TaskId,
            freshness: Freshness::Both,
            object: Some("/task/idempotencyKey".into()),
            order: Some("/task/createdAt".into()),
        }
    }

    /// The semantics of a built-in body shape.
    pub fn of(shape: BodyShape) -> Semantics {
        let s = |identity, freshness, object: &str, order: &str| Semantics {
            identity,
            freshness,
            object: Some(object.into()),
            order: Some(order.into()),
        };
        match shape {
            BodyShape::Answerline => Semantics::answerline(),
            BodyShape::StandardWebhooks => s(
                Identity::DeliveryId,
                Freshness::Both,
                "/data/id",
                "/timestamp",
            ),
            BodyShape::Stripe => s(
                Identity::Body("/id".into()),
                Freshness::PastOnly,
                "/data/object/id",
                "/created",
            ),
            BodyShape::Github => s(
                Identity::DeliveryId,
                Freshness::None,
                "/issue/id",
                "/issue/updated_at",
            ),
            BodyShape::Shopify => s(
                Identity::Header("X-Shopify-Event-Id".into()),
                Freshness::None,
                "/id",
                "/updated_at",
            ),
            BodyShape::Slack => s(
                Identity::Body("/event_id".into()),
                Freshness::PastOnly,
                "/event/channel",
                "/event_time",
            ),
            BodyShape::GenericHex => s(
                Identity::DeliveryId,
                Freshness::None,
                "/data/order_id",
                "/timestamp",
            ),
        }
    }

    /// One line saying what the history's key, job and created_at mean
    /// under these rules, for the run's notes.
    pub fn describe(&self) -> String {
        let identity = match &self.identity {
            Identity::TaskId => "the body's task.id".to_string(),
            Identity::DeliveryId => "the delivery id header".to_string(),
            Identity::Header(h) => format!("the {h} header"),
            Identity::Body(p) => format!("the body's {p}"),
        };
        let freshness = match self.freshness {
            Freshness::Both => "timestamps refused too old and too new",
            Freshness::PastOnly => "timestamps refused only too old",
            Freshness::None => "no timestamp window",
        };
        format!(
            "key = {identity}; job = the object at {}; created_at = the order field at {}; {freshness}",
            self.object.as_deref().unwrap_or("(none)"),
            self.order.as_deref().unwrap_or("(none)"),
        )
    }

    /// Whether a receiver built on the provider's library refuses a
    /// timestamp further in the future than the tolerance.
    pub fn refuses_future(&self) -> bool {
        self.freshness == Freshness::Both
    }

    /// The event identity of a request, found where the profile says
    /// (`id_header` names the delivery id header): what a receiver
    /// deduplicates on. `None` when it is absent.
    pub fn identity_of<H: crate::profile::signature::HeaderSource + ?Sized>(
        &self,
        id_header: Option<&str>,
        headers: &H,
        body: &[u8],
    ) -> Option<String> {
        let header = |name: &str| {
            headers
                .header(name)
                .and_then(|v| std::str::from_utf8(v).ok())
                .map(str::to_string)
        };
        match &self.identity {
            Identity::TaskId => pointer_text(body, "/task/id"),
            Identity::DeliveryId => header(id_header?),
            Identity::Header(name) => header(name),
            Identity::Body(pointer) => pointer_text(body, pointer),
        }
    }
}

/// The value at a JSON pointer in `body`, as text (numbers written out).
/// A body that is not JSON is read as form parameters, each a member of
/// one object (`/MessageSid` of a Twilio callback).
pub fn pointer_text(body: &[u8], pointer: &str) -> Option<String> {
    let v: serde_json::Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(_) if !body.is_empty() && body.iter().all(|b| b.is_ascii_graphic()) => {
            serde_json::Value::Object(
                form_urlencoded::parse(body)
                    .map(|(k, v)| (k.into_owned(), serde_json::Value::String(v.into_owned())))
                    .collect(),
            )
        }
        Err(_) => return None,
    };
    match v.pointer(pointer)? {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Null => None,
        other => Some(other.to_string()),
    }
}

/// What a provider's test delivery is, if it has one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TestDelivery {
    /// A delivery marked `"test": true` (a dashboard's "send test").
    Flag,
    /// An event of a test type (`webhook.test`).
    TestEvent,
    /// GitHub's `ping` when a hook is created.
    Ping,
    /// Slack's `url_verification` challenge.
    UrlVerification,
    /// None: every event is an ordinary event (Stripe's test-mode events
    /// and Shopify's test orders are processed like any other).
    None,
}

impl TestDelivery {
    /// The test delivery of a built-in body shape.
    pub fn of(shape: BodyShape) -> TestDelivery {
        match shape {
            BodyShape::Answerline | BodyShape::GenericHex => TestDelivery::Flag,
            BodyShape::StandardWebhooks => TestDelivery::TestEvent,
            // Stripe's test-mode events and Shopify's test orders
            // (`"test": true`) are ordinary events, processed like any other.
            BodyShape::Stripe | BodyShape::Shopify => TestDelivery::None,
            BodyShape::Github => TestDelivery::Ping,
            BodyShape::Slack => TestDelivery::UrlVerification,
        }
    }

    /// How docs and skips name it.
    pub fn describe(self) -> &'static str {
        match self {
            TestDelivery::Flag => "a delivery marked \"test\": true",
            TestDelivery::TestEvent => "a webhook.test event",
            TestDelivery::Ping => "a ping event",
            TestDelivery::UrlVerification => "a url_verification challenge",
            TestDelivery::None => {
                "none: the provider's test-mode events are ordinary events, processed like any other"
            }
        }
    }
}

/// What a profile's test delivery is ([`Profile::test_kind`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TestKind<'a> {
    /// The provider's handshake, as its `[about]` names it.
    Handshake(&'a str),
    /// None: the provider sends no test deliveries.
    None,
    /// The body shape's own ([`TestDelivery::of`]).
    Shape(BodyShape),
}

/// A range of HTTP status codes, inclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct StatusRange(pub u16, pub u16);

impl StatusRange {
    /// Whether `code` lies in the range.
    pub fn contains(&self, code: u16) -> bool {
        (self.0..=self.1).contains(&code)
    }
}

impl<'de> Deserialize<'de> for StatusRange {
    /// A status as a number (`410`) or as text (`"410"`, `"4xx"`, `"400-428"`).
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form {
            Code(u64),
            Text(String),
        }
        let s = match Form::deserialize(d)? {
            Form::Code(c) => c.to_string(),
            Form::Text(t) => t,
        };
        parse_status_range(&s).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "expected a status like 200, 2xx or 200-299, got {s:?}"
            ))
        })
    }
}

fn parse_status_range(s: &str) -> Option<StatusRange> {
    let s = s.trim();
    if let Some(d) = s.strip_suffix("xx") {
        let d: u16 = d.parse().ok()?;
        return (1..=5)
            .contains(&d)
            .then_some(StatusRange(d * 100, d * 100 + 99));
    }
    if let Some((a, b)) = s.split_once('-') {
        let (a, b) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
        return (a <= b && (100..=599).contains(&a) && b <= 599).then_some(StatusRange(a, b));
    }
    let c: u16 = s.parse().ok()?;
    (100..=599).contains(&c).then_some(StatusRange(c, c))
}

/// A sender's complete behaviour.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Profile {
    /// Name shown in reports.
    pub name: String,
    /// When each attempt is sent.
    pub schedule: Schedule,
    /// How long one attempt may take before it is a timeout.
    pub timeout: Duration,
    /// How long connecting may take, when the provider sets it apart.
    pub connect_timeout: Option<Duration>,
    /// Statuses that count as delivered. Redirects are never followed.
    pub success: Vec<StatusRange>,
    /// Statuses after which the provider stops retrying at once (e.g. 410):
    /// final answers, like a 2xx.
    pub give_up_on: Vec<StatusRange>,
    /// Header carrying the delivery id, stable across retries (when the
    /// scheme does not set it itself).
    pub id_header: Option<String>,
    /// Header naming the event type, if the provider sends one.
    pub event_header: Option<String>,
    /// The signature scheme.
    pub scheme: Scheme,
    /// Largest |now - t| a receiver should accept, for timestamped schemes.
    pub tolerance: Option<Duration>,
    /// The body shape.
    pub body: BodyShape,
    /// Identity, freshness, object and order: what an event is.
    pub semantics: Semantics,
    /// A custom profile's own body template (JSON with `{{placeholders}}`,
    /// see [`crate::profile::envelope::fill_template`]); it replaces the body shape's
    /// envelope, whose ids it still uses.
    pub body_template: Option<String>,
    /// What a sender under this profile promises of the bodies it sends
    /// (`hookstorm sink`, S6): the bytes it was given, or only the same
    /// JSON.
    pub body_fidelity: BodyFidelity,
    /// What a sender under this profile does beyond its schedule
    /// (`hookstorm sink`): waits after a timeout, `Retry-After`, timers.
    pub sender: SenderTiming,
    /// How the body is encoded: JSON, or form parameters (Twilio).
    pub body_format: BodyFormat,
    /// Headers the provider sends on every request, as they are.
    pub headers: Vec<(String, String)>,
    /// Where the profile's facts come from and what was chosen where the
    /// provider's documentation is silent (docs/profiles.md is made of it).
    pub about: About,
    /// The verification handshake the provider sends as its test
    /// delivery, for the profiles written as files that have one.
    pub handshake: Option<handshake::Handshake>,
}

/// What a sender does beyond its schedule, in words a vendor's
/// documentation uses (a profile file's `[sender]` table). The default is
/// what every built-in profile promises.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct SenderTiming {
    /// After a timeout the next attempt waits at least this long, whatever
    /// the schedule says (scaled like every wait of the contract).
    pub min_wait_after_timeout: Option<Duration>,
    /// What it does with a `Retry-After`.
    pub retry_after: RetryAfter,
    /// The resolution of its timers (`1s`: waits are whole seconds): a
    /// retry may come this much (real time, not scaled) either side of its
    /// window, and the jitter's spread is not judged.
    pub timer_resolution: Option<Duration>,
    /// A request this soon (real time) after the sink reset the attempt
    /// before is the sender's immediate re-send, counted as the same
    /// attempt, not a retry.
    pub resend_after_reset: Option<Duration>,
}

/// What a sender does with a `Retry-After` answer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RetryAfter {
    /// Waits at least as long as it asks (S3 holds it to that).
    #[default]
    Honoured,
    /// Waits as it asks, but at most this many times the scheduled wait
    /// (then jittered as the schedule is).
    Capped(f64),
    /// Promises nothing: retries follow the schedule alone, S3 is not
    /// checked.
    NotPromised,
}

impl RetryAfter {
    /// The wait a `Retry-After` of `asked` makes before attempt whose
    /// scheduled base wait is `base`; `None` when it is not promised.
    pub fn wait(self, asked: Duration, base: Duration) -> Option<Duration> {
        match self {
            RetryAfter::Honoured => Some(asked),
            RetryAfter::Capped(f) => Some(asked.min(base.mul_f64(f.max(0.0)))),
            RetryAfter::NotPromised => None,
        }
    }
}

/// What a sender promises of each body it sends.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BodyFidelity {
    /// The bytes it was given, byte for byte (every built-in profile).
    #[default]
    Bytes,
    /// The same JSON: whitespace, key order, escapes and number
    /// formatting may change (its signature still covers what it sends).
    Json,
}

impl Profile {
    /// Whether the provider numbers its updates per resource (answerline's
    /// `resource` and `sequence`): the scenarios about sequenced resources
    /// apply to its receivers, and to no other provider's.
    pub fn sequences_resources(&self) -> bool {
        self.body == BodyShape::Answerline
    }

    /// Whether the provider has the API hookstorm serves for a receiver to
    /// reconcile against (answerline's task listing): the reconciliation
    /// scenarios apply to its receivers, and to no other provider's.
    pub fn has_reconciliation_api(&self) -> bool {
        self.body == BodyShape::Answerline
    }

    /// A built-in profile by name.
    pub fn builtin(name: &str) -> Option<Profile> {
        Some(match name {
            "answerline" => answerline(name),
            "standard-webhooks" | "svix" => standard_webhooks(name),
            "stripe" => stripe(name),
            "github" => github(name),
            "shopify" => shopify(name),
            "slack" => slack(name),
            "generic-hex" => generic_hex(name),
            _ => {
                let text = providers::file(name)?;
                let origin = Path::new("providers").join(format!("{name}.toml"));
                return Some(
                    Self::from_toml(text, &origin)
                        .unwrap_or_else(|e| panic!("built-in profile {name}: {e}")),
                );
            }
        })
    }

    /// The default profile (`answerline`).
    pub fn default_profile() -> Profile {
        Self::builtin(DEFAULT_PROFILE).expect("the default profile is built in")
    }

    /// A built-in name, or the path of a custom TOML profile.
    pub fn resolve(name_or_path: &str) -> Result<Profile, ConfigError> {
        if let Some(p) = Self::builtin(name_or_path) {
            return Ok(p);
        }
        let path = Path::new(name_or_path);
        if path.extension().is_some_and(|e| e == "toml") || path.exists() {
            return Self::from_file(path);
        }
        let hint = match crate::text::suggest::closest(name_or_path, BUILTIN_NAMES) {
            Some(near) => format!("did you mean {near}?"),
            None => format!(
                "use one of {} or the path of a .toml profile",
                BUILTIN_NAMES.join(", ")
            ),
        };
        Err(ConfigError::invalid(
            name_or_path,
            format!("no such profile (hint: {hint})"),
        ))
    }

    /// Loads a custom profile from a TOML file.
    pub fn from_file(path: &Path) -> Result<Profile, ConfigError> {
        let file: file::ProfileFile = read_toml(path)?;
        file.into_profile(path)
    }

    /// Reads a custom profile from TOML text; `origin` names it in errors
    /// (and a body template is found beside it).
    pub fn from_toml(text: &str, origin: &Path) -> Result<Profile, ConfigError> {
        let file: file::ProfileFile = crate::error::parse_toml(origin, text)?;
        file.into_profile(origin)
    }

    /// Whether the provider sends test deliveries: a built-in body shape
    /// that has them, or a body template that marks one (`{{test}}`).
    pub fn has_test_deliveries(&self) -> bool {
        if self.handshake.is_some() {
            return true;
        }
        match &self.body_template {
            Some(t) => t.contains("{{test}}"),
            None => TestDelivery::of(self.body) != TestDelivery::None,
        }
    }

    /// What the provider's test delivery is, for the docs' tables: its
    /// handshake (in the provider's words), none (a body template that
    /// marks none), or its body shape's.
    pub fn test_kind(&self) -> TestKind<'_> {
        match (&self.handshake, &self.about.handshake) {
            (Some(_), Some(text)) => TestKind::Handshake(text),
            _ if self.body_template.is_some() && !self.has_test_deliveries() => TestKind::None,
            _ => TestKind::Shape(self.body),
        }
    }

    /// The `Content-Type` of the bodies the provider sends.
    pub fn content_type(&self) -> &'static str {
        match self.body_format {
            BodyFormat::Json => "application/json",
            BodyFormat::Form => "application/x-www-form-urlencoded",
        }
    }

    /// The body the provider sends for `body`: its own template in its
    /// format (the handshake's, always JSON, for a test delivery of a
    /// provider that has one), else its body shape's envelope (with the
    /// `raw-body` note when `raw_note`).
    pub fn render(&self, body: &crate::delivery::Body, raw_note: bool) -> Vec<u8> {
        match (&self.handshake, &self.body_template) {
            (Some(h), Some(_)) if body.test => {
                envelope::fill(&h.template, envelope::BodyFormat::Json, self.body, body)
            }
            (_, Some(t)) => envelope::fill(t, self.body_format, self.body, body),
            (_, None) => envelope::render(self.body, body, raw_note),
        }
    }

    /// Why the answer to a test delivery does not complete the provider's
    /// handshake, if it does not (`secret`: the account's newest).
    pub fn handshake_refusal(
        &self,
        body: &crate::delivery::Body,
        answer: &[u8],
        secret: Option<&signature::Secret>,
    ) -> Option<String> {
        if !body.test {
            return None;
        }
        match &self.handshake {
            Some(h) => h.refusal(&envelope::slack_challenge(body), answer, secret),
            None if self.body == BodyShape::Slack && self.body_template.is_none() => {
                (!envelope::echoes_challenge(body, answer))
                    .then(|| "the answer did not echo the url_verification challenge".to_string())
            }
            None => None,
        }
    }

    /// Whether `status` counts as delivered.
    pub fn is_success(&self, status: u16) -> bool {
        self.success.iter().any(|r| r.contains(status))
    }

    /// Whether the provider stops retrying at once after `status`.
    pub fn gives_up_on(&self, status: u16) -> bool {
        self.give_up_on.iter().any(|r| r.contains(status))
    }

    /// The header that carries the delivery id, whoever sets it.
    pub fn delivery_id_header(&self) -> Option<&str> {
        match &self.scheme {
            Scheme::StandardWebhooks { id_header, .. } => Some(id_header),
            _ => self.id_header.as_deref(),
        }
    }

    /// Whether a failed update can win its object (I5). Under a
    /// provider's rules every update of an object is a candidate for
    /// "newest wins", whatever its event type (an `invoice.payment_failed`
    /// is as much an update of its invoice as an `invoice.paid`); only the
    /// answerline's own body ranks a FAILED task below every COMPLETED one,
    /// so that a FAILED task never wins.
    pub fn failed_can_win(&self) -> bool {
        !(self.body == BodyShape::Answerline && self.body_template.is_none())
    }

    /// The tolerance in whole seconds, as verifiers take it.
    pub fn tolerance_secs(&self) -> Option<i64> {
        self.tolerance.map(|t| t.as_secs() as i64)
    }

    /// How many times faster than a scenario's own `time_scale` this
    /// profile's schedule is played. Scenario files tune their scale to the
    /// answerline's retry window (10 attempts, at most 2,555 s); a profile
    /// whose window is N times longer is played N times faster (rounded to
    /// a whole number), so that every scenario's compressed window stays
    /// what it is under the answerline: Stripe's 55 hours go 77 times
    /// faster. A window no longer than the answerline's keeps the
    /// scenario's scale (factor 1).
    pub fn time_scale_factor(&self) -> f64 {
        let reference = Profile::default_profile().schedule.window().1.as_secs_f64();
        let own = self.schedule.window().1.as_secs_f64();
        (own / reference).round().max(1.0)
    }

    /// The time scale a scenario is sent with under this profile, the one
    /// rule of it: `flag` (`--time-scale`) when given, as it is; otherwise
    /// the scenario's own `time_scale` (or the run's `default` when it sets
    /// none) times [`Profile::time_scale_factor`].
    pub fn time_scale(&self, flag: Option<f64>, scenario: Option<f64>, default: f64) -> f64 {
        flag.unwrap_or_else(|| scenario.unwrap_or(default) * self.time_scale_factor())
    }
}

/// The answerline provider the contract describes.
fn answerline(name: &str) -> Profile {
    let secs = Duration::from_secs;
    Profile {
        name: name.into(),
        schedule: Schedule {
            max_attempts: 10,
            waits: Waits::Exponential {
                base: secs(5),
                factor: 2.0,
                cap: None,
            },
            jitter: Jitter::ShortenUpToHalf,
        },
        timeout: secs(15),
        connect_timeout: None,
        success: vec![StatusRange(200, 299)],
        give_up_on: vec![],
        id_header: Some("Webhook-Id".into()),
        event_header: None,
        scheme: Scheme::TimestampedHex {
            header: "Webhook-Signature".into(),
        },
        tolerance: Some(secs(300)),
        body: BodyShape::Answerline,
        semantics: Semantics::of(BodyShape::Answerline),
        body_template: None,
        body_fidelity: BodyFidelity::Bytes,
        sender: SenderTiming::default(),
        body_format: BodyFormat::Json,
        headers: Vec::new(),
        about: about::of_builtin(name),
        handshake: None,
    }
}

/// Standard Webhooks, under its own header names or Svix's (`name`).
fn standard_webhooks(name: &str) -> Profile {
    let secs = Duration::from_secs;
    let (id, ts, sig) = if name == "svix" {
        ("svix-id", "svix-timestamp", "svix-signature")
    } else {
        ("webhook-id", "webhook-timestamp", "webhook-signature")
    };
    Profile {
        name: name.into(),
        schedule: Schedule {
            max_attempts: 8,
            waits: Waits::List(vec![
                secs(5),
                secs(5 * 60),
                secs(30 * 60),
                secs(2 * 3600),
                secs(5 * 3600),
                secs(10 * 3600),
                secs(10 * 3600),
            ]),
            jitter: Jitter::None,
        },
        timeout: secs(15),
        connect_timeout: None,
        success: vec![StatusRange(200, 299)],
        give_up_on: vec![StatusRange(410, 410)],
        id_header: None,
        event_header: None,
        scheme: Scheme::StandardWebhooks {
            id_header: id.into(),
            timestamp_header: ts.into(),
            signature_header: sig.into(),
        },
        tolerance: Some(secs(300)),
        body: BodyShape::StandardWebhooks,
        semantics: Semantics::of(BodyShape::StandardWebhooks),
        body_template: None,
        body_fidelity: BodyFidelity::Bytes,
        sender: SenderTiming::default(),
        body_format: BodyFormat::Json,
        headers: Vec::new(),
        about: about::of_builtin(name),
        handshake: None,
    }
}

/// Stripe's webhooks.
///
/// Stripe does not publish its intervals: modelled as 1 h doubling,
/// capped at 24 h, 7 attempts (55 h, inside the documented 3 days).
fn stripe(name: &str) -> Profile {
    let secs = Duration::from_secs;
    Profile {
        name: name.into(),
        schedule: Schedule {
            max_attempts: 7,
            waits: Waits::Exponential {
                base: secs(3600),
                factor: 2.0,
                cap: Some(secs(24 * 3600)),
            },
            jitter: Jitter::None,
        },
        timeout: secs(15),
        connect_timeout: None,
        success: vec![StatusRange(200, 299)],
        give_up_on: vec![],
        id_header: None,
        event_header: None,
        scheme: Scheme::TimestampedHex {
            header: "Stripe-Signature".into(),
        },
        tolerance: Some(secs(300)),
        body: BodyShape::Stripe,
        semantics: Semantics::of(BodyShape::Stripe),
        body_template: None,
        body_fidelity: BodyFidelity::Bytes,
        sender: SenderTiming::default(),
        body_format: BodyFormat::Json,
        headers: Vec::new(),
        about: about::of_builtin(name),
        handshake: None,
    }
}

/// GitHub's webhooks.
fn github(name: &str) -> Profile {
    let secs = Duration::from_secs;
    Profile {
        name: name.into(),
        schedule: Schedule {
            max_attempts: 1,
            waits: Waits::List(vec![]),
            jitter: Jitter::None,
        },
        timeout: secs(10),
        connect_timeout: None,
        success: vec![StatusRange(200, 299)],
        give_up_on: vec![],
        id_header: Some("X-GitHub-Delivery".into()),
        event_header: Some("X-GitHub-Event".into()),
        scheme: Scheme::BodyHmac {
            header: "X-Hub-Signature-256".into(),
            prefix: "sha256=".into(),
            encoding: Encoding::Hex,
        },
        tolerance: None,
        body: BodyShape::Github,
        semantics: Semantics::of(BodyShape::Github),
        body_template: None,
        body_fidelity: BodyFidelity::Bytes,
        sender: SenderTiming::default(),
        body_format: BodyFormat::Json,
        headers: Vec::new(),
        about: about::of_builtin(name),
        handshake: None,
    }
}

/// Shopify's webhooks.
///
/// 8 retries over about 4 h: 1 min doubling (255 min in all).
fn shopify(name: &str) -> Profile {
    let secs = Duration::from_secs;
    Profile {
        name: name.into(),
        schedule: Schedule {
            max_attempts: 9,
            waits: Waits::Exponential {
                base: secs(60),
                factor: 2.0,
                cap: None,
            },
            jitter: Jitter::None,
        },
        timeout: secs(5),
        connect_timeout: Some(secs(1)),
        success: vec![StatusRange(200, 299)],
        give_up_on: vec![],
        id_header: Some("X-Shopify-Webhook-Id".into()),
        event_header: Some("X-Shopify-Topic".into()),
        scheme: Scheme::BodyHmac {
            header: "X-Shopify-Hmac-Sha256".into(),
            prefix: String::new(),
            encoding: Encoding::Base64,
        },
        tolerance: None,
        body: BodyShape::Shopify,
        semantics: Semantics::of(BodyShape::Shopify),
        body_template: None,
        body_fidelity: BodyFidelity::Bytes,
        sender: SenderTiming::default(),
        body_format: BodyFormat::Json,
        headers: Vec::new(),
        about: about::of_builtin(name),
        handshake: None,
    }
}

/// Slack's Events API.
///
/// Three retries: at once, after 1 min, after 5 min; 3 s timeout.
fn slack(name: &str) -> Profile {
    let secs = Duration::from_secs;
    Profile {
        name: name.into(),
        schedule: Schedule {
            max_attempts: 4,
            waits: Waits::List(vec![Duration::ZERO, secs(60), secs(300)]),
            jitter: Jitter::None,
        },
        timeout: secs(3),
        connect_timeout: None,
        success: vec![StatusRange(200, 299)],
        give_up_on: vec![],
        id_header: None,
        event_header: None,
        scheme: Scheme::Slack {
            signature_header: "X-Slack-Signature".into(),
            timestamp_header: "X-Slack-Request-Timestamp".into(),
        },
        tolerance: Some(secs(300)),
        body: BodyShape::Slack,
        semantics: Semantics::of(BodyShape::Slack),
        body_template: None,
        body_fidelity: BodyFidelity::Bytes,
        sender: SenderTiming::default(),
        body_format: BodyFormat::Json,
        headers: Vec::new(),
        about: about::of_builtin(name),
        handshake: None,
    }
}

/// A generic provider: an HMAC-SHA256 of the body in hex.
fn generic_hex(name: &str) -> Profile {
    let secs = Duration::from_secs;
    Profile {
        name: name.into(),
        schedule: Schedule {
            max_attempts: 5,
            waits: Waits::Exponential {
                base: secs(10),
                factor: 4.0,
                cap: None,
            },
            jitter: Jitter::None,
        },
        timeout: secs(10),
        connect_timeout: None,
        success: vec![StatusRange(200, 299)],
        give_up_on: vec![],
        id_header: Some("X-Idempotency-Key".into()),
        event_header: Some("X-Webhook-Event".into()),
        scheme: Scheme::BodyHmac {
            header: "X-Webhook-Signature".into(),
            prefix: String::new(),
            encoding: Encoding::Hex,
        },
        tolerance: None,
        body: BodyShape::GenericHex,
        semantics: Semantics::of(BodyShape::GenericHex),
        body_template: None,
        body_fidelity: BodyFidelity::Bytes,
        sender: SenderTiming::default(),
        body_format: BodyFormat::Json,
        headers: Vec::new(),
        about: about::of_builtin(name),
        handshake: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_name_resolves() {
        for name in BUILTIN_NAMES {
            let p = Profile::resolve(name).unwrap();
            assert_eq!(p.name, name);
            assert!(p.is_success(200) && p.is_success(204));
            assert!(!p.is_success(301) && !p.is_success(500));
        }
    }

    #[test]
    fn answerline_matches_the_contract() {
        let p = Profile::default_profile();
        assert_eq!(p.schedule.max_attempts, 10);
        assert_eq!(p.timeout, Duration::from_secs(15));
        assert_eq!(p.tolerance_secs(), Some(300));
        assert_eq!(p.delivery_id_header(), Some("Webhook-Id"));
    }

    #[test]
    fn unknown_profile_names_give_a_hint() {
        let e = Profile::resolve("nope").unwrap_err().to_string();
        assert!(e.contains("hint: use one of answerline"), "{e}");
        let e = Profile::resolve("strpe").unwrap_err().to_string();
        assert!(
            e.ends_with("no such profile (hint: did you mean stripe?)"),
            "{e}"
        );
    }

    #[test]
    fn shipped_example_profiles_parse() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/profiles");
        let mut n = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "toml") {
                Profile::from_file(&path).unwrap_or_else(|e| panic!("{e}"));
                n += 1;
            }
        }
        assert!(n >= 2);
    }

    #[test]
    fn custom_profile_errors_name_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.toml");
        std::fs::write(&path, "name = \"x\"\n[schedule]\nbase = \"5 parsecs\"\n").unwrap();
        let e = Profile::from_file(&path).unwrap_err().to_string();
        assert!(
            e.contains("line 3") && e.contains("expected DURATION"),
            "{e}"
        );
    }

    #[test]
    fn each_builtin_names_its_providers_identity_and_freshness() {
        let sem = |n: &str| Profile::builtin(n).unwrap().semantics;
        assert_eq!(sem("answerline"), Semantics::answerline());
        assert_eq!(sem("standard-webhooks").identity, Identity::DeliveryId);
        assert_eq!(sem("svix").freshness, Freshness::Both);
        assert_eq!(sem("stripe").identity, Identity::Body("/id".into()));
        assert_eq!(sem("stripe").freshness, Freshness::PastOnly);
        assert_eq!(sem("stripe").order.as_deref(), Some("/created"));
        assert_eq!(sem("github").freshness, Freshness::None);
        assert_eq!(sem("github").order.as_deref(), Some("/issue/updated_at"));
        assert_eq!(
            sem("shopify").identity,
            Identity::Header("X-Shopify-Event-Id".into())
        );
        assert_eq!(sem("slack").identity, Identity::Body("/event_id".into()));
        assert_eq!(sem("slack").freshness, Freshness::PastOnly);
        assert_eq!(sem("generic-hex").identity, Identity::DeliveryId);
        assert!(!sem("stripe").refuses_future() && sem("answerline").refuses_future());
    }

    #[test]
    fn identity_is_read_where_the_profile_says() {
        let headers = vec![
            ("webhook-id".to_string(), "msg_1".to_string()),
            ("X-Shopify-Event-Id".to_string(), "ev-guid".to_string()),
        ];
        let body = br#"{"id":"evt_9","event_id":"Ev9","task":{"id":"tsk_9"}}"#;
        let of = |n: &str| {
            let p = Profile::builtin(n).unwrap();
            p.semantics
                .identity_of(p.delivery_id_header(), headers.as_slice(), body)
        };
        assert_eq!(of("answerline").as_deref(), Some("tsk_9"));
        assert_eq!(of("standard-webhooks").as_deref(), Some("msg_1"));
        assert_eq!(of("stripe").as_deref(), Some("evt_9"));
        assert_eq!(of("shopify").as_deref(), Some("ev-guid"));
        assert_eq!(of("slack").as_deref(), Some("Ev9"));
        assert_eq!(of("github"), None);
    }

    #[test]
    fn a_profile_file_says_what_its_sender_does_in_its_vendors_words() {
        let dir = tempfile::tempdir().unwrap();
        let load = |text: &str| {
            let path = dir.path().join("s.toml");
            std::fs::write(
                &path,
                format!("name = \"vendor\"\nextends = \"svix\"\n{text}"),
            )
            .unwrap();
            Profile::from_file(&path)
        };
        let p = load("body_fidelity = \"json\"\n[sender]\nmin_wait_after_timeout = \"60s\"\nretry_after = \"capped\"\nretry_after_cap = 2.0\ntimer_resolution = \"1s\"\nresend_after_reset = \"10ms\"\n").unwrap();
        assert_eq!(p.sender.resend_after_reset, Some(Duration::from_millis(10)));
        assert_eq!(p.body_fidelity, BodyFidelity::Json);
        assert_eq!(
            p.sender.min_wait_after_timeout,
            Some(Duration::from_secs(60))
        );
        assert_eq!(p.sender.retry_after, RetryAfter::Capped(2.0));
        assert_eq!(p.sender.timer_resolution, Some(Duration::from_secs(1)));
        assert_eq!(
            RetryAfter::Capped(2.0).wait(Duration::from_secs(3600), Duration::from_secs(5)),
            Some(Duration::from_secs(10))
        );
        let p = load("[sender]\nretry_after = \"not-promised\"\n").unwrap();
        assert_eq!(
            p.sender
                .retry_after
                .wait(Duration::from_secs(9), Duration::from_secs(1)),
            None
        );
        for (text, says) in [
            (
                "[sender]\nretry_after = \"capped\"\n",
                "needs retry_after_cap",
            ),
            (
                "[sender]\nretry_after_cap = 2.0\n",
                "goes with retry_after = \"capped\"",
            ),
            (
                "[sender]\nretry_after = \"sometimes\"\n",
                "honoured, capped or not-promised",
            ),
        ] {
            let e = load(text).unwrap_err().to_string();
            assert!(e.contains(says), "{text}: {e}");
        }
        assert_eq!(
            Profile::builtin("svix").unwrap().sender,
            SenderTiming::default()
        );
    }

    #[test]
    fn custom_profiles_name_identity_object_and_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.toml");
        std::fs::write(
            &path,
            "name = \"acme\"\nextends = \"github\"\nbody = \"stripe\"\n[semantics]\n\
             identity = \"header:X-Acme-Event\"\nfreshness = \"past-only\"\norder = \"/data/object/version\"\n",
        )
        .unwrap();
        let p = Profile::from_file(&path).unwrap();
        assert_eq!(p.body, BodyShape::Stripe);
        assert_eq!(
            p.semantics.identity,
            Identity::Header("X-Acme-Event".into())
        );
        assert_eq!(p.semantics.freshness, Freshness::PastOnly);
        assert_eq!(p.semantics.object.as_deref(), Some("/data/object/id"));
        assert_eq!(p.semantics.order.as_deref(), Some("/data/object/version"));
        let shipped =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/profiles/acme-events.toml");
        let acme = Profile::from_file(&shipped).unwrap();
        assert!(acme
            .body_template
            .as_deref()
            .unwrap()
            .contains("{{event_id}}"));
        std::fs::write(dir.path().join("t.json"), r#"{"id": "{{evt}}"}"#).unwrap();
        std::fs::write(&path, "name = \"x\"\nbody_template = \"t.json\"\n").unwrap();
        let e = Profile::from_file(&path).unwrap_err().to_string();
        assert!(e.contains("unknown placeholder {{evt}}"), "{e}");
        std::fs::write(&path, "name = \"x\"\n[semantics]\nidentity = \"uuid\"\n").unwrap();
        let e = Profile::from_file(&path).unwrap_err().to_string();
        assert!(e.contains("header:<name>"), "{e}");
        std::fs::write(&path, "name = \"x\"\n[semantics]\norder = \"created\"\n").unwrap();
        let e = Profile::from_file(&path).unwrap_err().to_string();
        assert!(e.contains("JSON pointer"), "{e}");
    }

    #[test]
    fn each_builtin_profile_plays_its_schedule_in_about_the_answerlines_compressed_window() {
        // (profile, factor): the longest window over answerline's 2,555 s.
        let expected = [
            ("answerline", 1.0),
            ("standard-webhooks", 39.0), // 27.6 h
            ("svix", 39.0),
            ("stripe", 77.0), // 55 h
            ("github", 1.0),  // no retries
            ("shopify", 6.0), // 255 min
            ("slack", 1.0),   // 6 min: shorter, kept as it is
            ("generic-hex", 1.0),
        ];
        assert_eq!(expected.len(), CORE_NAMES.len());
        let reference = Profile::default_profile().schedule.window().1.as_secs_f64() / 100.0;
        for name in BUILTIN_NAMES {
            let p = Profile::builtin(name).unwrap();
            // The provider files' factors follow from their schedules alone.
            let factor = expected
                .iter()
                .find(|(n, _)| *n == name)
                .map_or(p.time_scale_factor(), |(_, f)| *f);
            assert_eq!(p.time_scale_factor(), factor, "{name}");
            let scale = p.time_scale(None, Some(100.0), 1.0);
            assert_eq!(scale, 100.0 * factor, "{name}");
            // At a scenario's 100x the compressed window is at most about
            // the answerline's (25.6 s), never the hours of the real one.
            let window = p.schedule.window().1.as_secs_f64() / scale;
            assert!(window <= reference * 1.1, "{name}: {window:.1}s");
        }
    }

    #[test]
    fn the_time_scale_flag_wins_over_the_profile_and_the_scenario() {
        let stripe = Profile::builtin("stripe").unwrap();
        assert_eq!(stripe.time_scale(Some(10.0), Some(100.0), 100.0), 10.0);
        assert_eq!(stripe.time_scale(None, Some(2000.0), 100.0), 154_000.0);
        assert_eq!(stripe.time_scale(None, None, 100.0), 7_700.0);
        let answerline = Profile::default_profile();
        assert_eq!(answerline.time_scale(None, Some(1000.0), 100.0), 1000.0);
        assert_eq!(answerline.time_scale(None, None, 100.0), 100.0);
    }

    #[test]
    fn status_ranges_parse_in_three_forms() {
        assert_eq!(parse_status_range("2xx"), Some(StatusRange(200, 299)));
        assert_eq!(parse_status_range("200-204"), Some(StatusRange(200, 204)));
        assert_eq!(parse_status_range("202"), Some(StatusRange(202, 202)));
        assert_eq!(parse_status_range("9xx"), None);
        assert_eq!(parse_status_range("300-200"), None);
    }

    #[test]
    fn give_up_statuses_are_numbers_or_ranges() {
        #[derive(Deserialize)]
        struct T {
            g: Vec<StatusRange>,
        }
        let t: T = toml::from_str("g = [410, \"400-407\", \"5xx\"]").unwrap();
        assert_eq!(
            t.g,
            [
                StatusRange(410, 410),
                StatusRange(400, 407),
                StatusRange(500, 599)
            ]
        );
        assert!(toml::from_str::<T>("g = [99]").is_err());
        let svix = Profile::builtin("svix").unwrap();
        assert!(svix.gives_up_on(410) && !svix.gives_up_on(400));
    }
}
