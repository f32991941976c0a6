//! The history's event types: one [`Event`] per JSON line (the run's
//! header, an attempt, a fault action, a provider task), as
//! `docs/history.md` describes them. A leaf of the history module: the
//! codec and the scanner read and write these.

use serde::{Deserialize, Serialize};

use super::failure::TransportFailure;
use super::record::{attempt_fields, owned_type};
use crate::delivery::TaskStatus;
use crate::tag::FaultName;

/// What became of one attempt.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// A 2xx came back and the harness accepted it.
    Ok,
    /// The attempt definitely did not land.
    Fail,
    /// Indeterminate: may or may not have been committed (an attempt
    /// before its answer).
    #[default]
    Info,
}

/// What the harness meant a delivery to be, and so what the receiver must do.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Intent {
    /// A real, correctly signed result: stored exactly once.
    #[default]
    Genuine,
    /// A verified dashboard test delivery: 2xx, nothing stored.
    Test,
    /// A bad, missing, malformed, stale or future signature, or a tampered
    /// body: 4xx, nothing stored. `detail` names the forgery.
    Forged,
    /// Signed with another account's secret: 4xx, nothing stored.
    CrossAccount,
    /// A body over the receiver's limit: 413 (or 4xx), nothing stored.
    Oversized,
    /// A captured genuine request replayed after the tolerance: 4xx, nothing new.
    ExpiredReplay,
}

impl Intent {
    /// Whether the receiver must store this delivery.
    pub fn must_store(self) -> bool {
        matches!(self, Intent::Genuine)
    }
    /// Whether the receiver must answer 4xx.
    pub fn must_reject(self) -> bool {
        matches!(
            self,
            Intent::Forged | Intent::CrossAccount | Intent::Oversized | Intent::ExpiredReplay
        )
    }
}

/// Generates [`Attempt`] from the one list of its fields
/// ([`super::record::attempt_fields`]), adding the sink's nested record.
macro_rules! attempt_struct {
    ($( $(#[doc = $doc:literal])* $(#[serde($($serde:tt)*)])? $name:ident : $kind:ident $($t:ty)? ),* $(,)?) => {
        /// One HTTP attempt.
        #[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
        pub struct Attempt {
            $(
                $(#[doc = $doc])*
                $(#[serde($($serde)*)])?
                pub $name: owned_type!($kind $($t)?),
            )*
            /// In a sink's history (`hookstorm sink`): what the sink saw of this
            /// request from the sender under test and how it answered. Absent in
            /// the harness's own sends.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub sink: Option<Box<Received>>,
        }
    };
}
attempt_fields!(attempt_struct);

/// What the sink saw of one request from a sender under test, and what it
/// answered: the facts the sender invariants (S1–S9) are judged from.
/// Times are milliseconds from the scenario's start on the sink's
/// monotonic clock, so gaps between attempts are exact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Received {
    /// The scripted answer, as the scenario writes it (`503`, `reset`,
    /// `hang`, `slow`, `429 retry-after 60s`, `308`, …).
    pub answer: String,
    /// When the request's first byte arrived.
    pub at_ms: f64,
    /// When the exchange ended: the answer written, the connection reset,
    /// or the sender's close seen.
    pub end_ms: f64,
    /// The request went to a redirect's `Location` (the sender followed a
    /// redirect), not to the URL registered for the account.
    #[serde(default)]
    pub followed: bool,
    /// The delivery id header's value (`Webhook-Id`, …), when sent.
    #[serde(default)]
    pub delivery_id: Option<String>,
    /// Hex SHA-256 of the raw body.
    pub body_sha256: String,
    /// Why the signature did not verify over the raw body with the
    /// account's secrets; absent when it verified.
    #[serde(default)]
    pub signature_error: Option<String>,
    /// The signature's timestamp (unix seconds), for schemes that sign one.
    #[serde(default)]
    pub signed_at: Option<i64>,
    /// The sink's wall clock when the request arrived (unix seconds).
    pub arrived_unix: f64,
    /// The `Retry-After` the sink answered with, in the contract's seconds
    /// (the sender divides it by the time scale, as every wait).
    #[serde(default)]
    pub retry_after_s: Option<u64>,
    /// The sender closed the connection before the sink's answer was due.
    #[serde(default)]
    pub closed_early: bool,
    /// How many times the harness had restarted the sender when the
    /// request was read (for people: the checker goes by the times of the
    /// `kill` lines, since a request read just after a kill may still be
    /// the old process's).
    #[serde(default)]
    pub generation: u32,
    /// The window the profile's schedule gives this retry, in milliseconds
    /// from the scenario's start (from the end of the attempt before it);
    /// absent for a first attempt, after a final answer or a restart.
    #[serde(default)]
    pub window_ms: Option<[f64; 2]>,
    /// The sink could not tie the request to an emitted event and it
    /// carried no valid signature of any account (unreadable, another
    /// path, an identity never emitted): a stranger's, not the sender's.
    /// Such lines are reported as foreign traffic and judged by no
    /// sender invariant.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub foreign: bool,
    /// The immediate re-send after a reset that the profile says its
    /// sender counts as the same attempt (`[sender] resend_after_reset`):
    /// it carries that attempt's number and is no retry of its own.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub resent: bool,
    /// How the body differs from the bytes the sender was asked to send,
    /// when it does (absent: byte for byte, or no emitted event).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_change: Option<BodyChange>,
}

/// How a body a sender sent differs from the bytes it was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BodyChange {
    /// Only whitespace at the end (a trailing newline added or dropped).
    TrailingWhitespace,
    /// Only whitespace between the JSON's tokens (re-indented, minified).
    Whitespace,
    /// The same members in another order (parsed and written again).
    KeyOrder,
    /// The same strings written with other escapes (`\/`, `\u00e9`, …).
    Escapes,
    /// The same numbers written another way (`1.0` for `1`, `1e3`).
    NumberFormat,
    /// Other JSON: a value added, dropped or changed.
    Content,
    /// Other bytes, not both JSON.
    Bytes,
}

impl BodyChange {
    /// Whether the body is still the same JSON value.
    pub fn json_equivalent(self) -> bool {
        !matches!(self, BodyChange::Content | BodyChange::Bytes)
    }

    /// What changed, in words for a finding.
    pub fn words(self) -> &'static str {
        match self {
            BodyChange::TrailingWhitespace => {
                "whitespace at the end (a trailing newline added or dropped)"
            }
            BodyChange::Whitespace => "the whitespace between tokens (parsed and written again)",
            BodyChange::KeyOrder => "the order of object members (parsed and written again)",
            BodyChange::Escapes => "the escapes in strings (parsed and written again)",
            BodyChange::NumberFormat => "how numbers are written (parsed and written again)",
            BodyChange::Content => "the JSON itself: a value added, dropped or changed",
            BodyChange::Bytes => "the bytes (not the same JSON)",
        }
    }
}

impl Attempt {
    /// The kind of transport failure, when the attempt got no answer.
    pub fn transport_failure(&self) -> Option<TransportFailure> {
        self.error.as_deref().map(TransportFailure::of)
    }

    /// The first attempt of genuine delivery `delivery` of `key` for
    /// `account`, sent now, with no answer yet (`info`): the one place an
    /// attempt is built from nothing; everything else adjusts its fields.
    pub fn new(scenario: &str, delivery: &str, key: &str, account: &str) -> Attempt {
        Attempt {
            scenario: scenario.to_string(),
            delivery: delivery.to_string(),
            key: key.to_string(),
            account: account.to_string(),
            attempt: 1,
            sent_at: now_rfc3339(),
            outcome: Outcome::Info,
            intent: Intent::Genuine,
            ..Attempt::default()
        }
    }

    /// A first attempt of a genuine delivery, answered 204 and `ok`: the
    /// base that tests and tools adjust field by field.
    pub fn acknowledged(scenario: &str, account: &str, key: &str) -> Attempt {
        Attempt {
            status: Some(204),
            latency_ms: Some(1.0),
            outcome: Outcome::Ok,
            ..Attempt::new(scenario, &format!("whd_{key}"), key, account)
        }
    }
}

/// Something a fault actor (nemesis) did, outside any single attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FaultEvent {
    /// The scenario.
    pub scenario: String,
    /// When (RFC 3339).
    pub at: String,
    /// The fault's name (`kill`, `cut-database`, `front`, …).
    pub fault: FaultName,
    /// What it did.
    pub action: String,
    /// Free text details.
    #[serde(default)]
    pub detail: Option<String>,
}

/// A final task the provider knows of (reconciliation ground truth).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProviderTask {
    /// The scenario.
    pub scenario: String,
    /// The account.
    pub account: String,
    /// The task id.
    pub key: String,
    /// The job key.
    #[serde(default)]
    pub job: Option<String>,
    /// Its status.
    pub task_status: TaskStatus,
    /// Its createdAt.
    pub created_at: String,
}

/// What a run was: written once at the start of a history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunHeader {
    /// The run id (also the report folder's name).
    pub run_id: String,
    /// The seed that drives everything.
    pub seed: u64,
    /// The sender profile.
    pub profile: String,
    /// Real time is divided by this.
    pub time_scale: f64,
    /// When the run started (RFC 3339).
    pub started_at: String,
    /// hookstorm's version.
    pub version: String,
}

/// An event the harness asked a sender under test to emit (`hookstorm
/// sink`): what its outbox must account for. Written once per event, when
/// the emit call that carried it returned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Emitted {
    /// The scenario.
    pub scenario: String,
    /// When the emit call returned (RFC 3339).
    pub at: String,
    /// The account (the endpoint it goes to).
    pub account: String,
    /// The event's identity under the profile.
    pub key: String,
    /// The job (idempotency key), when the body has one.
    #[serde(default)]
    pub job: Option<String>,
    /// Sequenced events: the resource.
    #[serde(default)]
    pub resource: Option<String>,
    /// Sequenced events: the resource's sequence number.
    #[serde(default)]
    pub sequence: Option<u64>,
    /// The sink's scripted answers to its attempts, in order (the last
    /// repeats).
    pub script: Vec<String>,
}

/// One line of the history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// The run header.
    Run(RunHeader),
    /// An attempt.
    Attempt(Attempt),
    /// A fault action.
    Fault(FaultEvent),
    /// A task the provider finished.
    Provider(ProviderTask),
    /// An event a sender under test was asked to emit (a sink's history).
    Emit(Emitted),
}

impl Event {
    /// The scenario the event belongs to, if any.
    pub fn scenario(&self) -> Option<&str> {
        match self {
            Event::Run(_) => None,
            Event::Attempt(a) => Some(&a.scenario),
            Event::Fault(f) => Some(&f.scenario),
            Event::Provider(p) => Some(&p.scenario),
            Event::Emit(e) => Some(&e.scenario),
        }
    }
}

/// Current wall-clock time as RFC 3339 with milliseconds.
pub fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}
