//! Provider envelopes: the body, ids and headers a real provider would send
//! for one planned delivery.
//!
//! The plan is written once, in the answerline shape (`{task, credits,
//! response}`), and is the same whatever the profile. At send time this
//! module re-dresses each delivery as its profile's provider would: a
//! Stripe event object, a GitHub `issues` payload, a Shopify order, a Slack
//! `event_callback`, a Standard Webhooks `{type, timestamp, data}`, the
//! generic outbox event JSON. Every value is a pure function of the planned
//! delivery (ids are derived from the plan's ids, the order field from its
//! `createdAt`), so a run stays deterministic per seed, every account sees
//! the same event under the same identity, and the updates of one job are
//! updates of one object. The answerline shape is returned untouched, byte
//! for byte.
//!
//! How each provider *writes* its JSON is decided in one place,
//! [`format_of`]: Stripe pretty-prints (two-space indentation, LF), Slack
//! escapes every `/` as `\/`, GitHub writes non-ASCII text as raw UTF-8,
//! the others send compact JSON. A receiver that verifies the signature
//! over a re-serialisation of the parsed body instead of the raw bytes
//! then fails where it would on the provider's own traffic. The
//! `raw-body` scenario goes further: each genuine body carries
//! [`RAW_NOTE`], JSON that no serializer writes back the same way, in a
//! free-form part of the body that identity, object and order never read.

use chrono::DateTime;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::delivery::{job_key, Body, TaskStatus};

/// The body a profile sends: which provider's envelope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BodyShape {
    /// `{task, credits, response}` as in `docs/contract.md`.
    Answerline,
    /// Standard Webhooks / Svix: `{type, timestamp, data}`.
    StandardWebhooks,
    /// A Stripe event object: `{id: "evt_…", object: "event", type, created, data: {object}}`.
    Stripe,
    /// A GitHub `issues` payload: `{action, issue: {id, updated_at, …}, repository, sender}`.
    Github,
    /// A Shopify resource (`orders/updated`: the order itself).
    Shopify,
    /// A Slack Events API `event_callback` envelope (`url_verification` for tests).
    Slack,
    /// The generic outbox event JSON: `{event, data: {order_id, …}, timestamp}`.
    GenericHex,
}

/// How a provider encodes its body.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BodyFormat {
    /// JSON, as the template writes it.
    #[default]
    Json,
    /// `application/x-www-form-urlencoded`: the template's flat JSON
    /// object, each member a parameter (Twilio). Identity, object and
    /// order are read from the parameters as from a JSON object's members.
    Form,
}

/// What `{{sent_ms}}` fills in until the body is signed: 13 digits, the
/// width of every millisecond time from 2001 to 2286, so stamping the
/// send time keeps the body's length.
pub const SENT_MS_MARK: &str = "9999999999998";

/// What `{{sent}}` fills in until the body is signed: 10 digits, the
/// width of every unix second from 2001 to 2286.
pub const SENT_MARK: &str = "9999999997";

/// What `{{token}}` fills in until the body is signed: 50 characters, the
/// width of the token written in its place (Mailgun's).
pub const TOKEN_MARK: &str = "hookstorm-token-mark-hookstorm-token-mark-hookstor";

/// What `{{signature}}` fills in until the body is signed.
pub const SIGNATURE_MARK: &str = "hookstorm-signature-mark";

/// The marks a body can carry until each attempt is signed: its send time
/// (ms or s), a token, a signature.
const MARKS: [&str; 4] = [SENT_MS_MARK, SENT_MARK, TOKEN_MARK, SIGNATURE_MARK];

/// Whether a body carries a mark that each attempt fills when it is
/// signed (its send time, Linear's; its signature, Mailgun's).
pub fn carries_attempt_marks(body: &[u8]) -> bool {
    MARKS
        .iter()
        .any(|m| memchr::memmem::find(body, m.as_bytes()).is_some())
}

/// Whether a body template holds a placeholder filled per attempt.
pub fn template_marks_attempts(template: &str) -> bool {
    ["{{sent_ms}}", "{{sent}}", "{{token}}", "{{signature}}"]
        .iter()
        .any(|p| template.contains(p))
}

/// `body` with every `mark` replaced by `value`.
pub fn replace_mark(body: &[u8], mark: &str, value: &str) -> Vec<u8> {
    let mark = mark.as_bytes();
    let mut out = Vec::with_capacity(body.len());
    let mut rest = body;
    while let Some(at) = memchr::memmem::find(rest, mark) {
        out.extend_from_slice(&rest[..at]);
        out.extend_from_slice(value.as_bytes());
        rest = &rest[at + mark.len()..];
    }
    out.extend_from_slice(rest);
    out
}

/// `body` with its send time (`{{sent_ms}}`, `{{sent}}`) set to `t` (unix
/// seconds).
pub fn stamp_sent(body: &[u8], t: i64) -> Vec<u8> {
    if !carries_attempt_marks(body) {
        return body.to_vec();
    }
    let ms = format!("{:013}", t.saturating_mul(1000).max(0));
    let s = format!("{:010}", t.max(0));
    replace_mark(&replace_mark(body, SENT_MS_MARK, &ms), SENT_MARK, &s)
}

/// A body template filled for `body`, in `format`.
pub fn fill(template: &str, format: BodyFormat, shape: BodyShape, body: &Body) -> Vec<u8> {
    let json = fill_template(template, shape, body);
    match format {
        BodyFormat::Json => json,
        BodyFormat::Form => to_form(&json),
    }
}

/// A flat JSON object as form parameters, in the object's key order
/// (strings as they are, other values as JSON writes them, null empty).
fn to_form(json: &[u8]) -> Vec<u8> {
    let Ok(Value::Object(m)) = serde_json::from_slice::<Value>(json) else {
        return json.to_vec();
    };
    let mut out = form_urlencoded::Serializer::new(String::new());
    for (k, v) in &m {
        match v {
            Value::String(s) => out.append_pair(k, s),
            Value::Null => out.append_pair(k, ""),
            other => out.append_pair(k, &other.to_string()),
        };
    }
    out.finish().into_bytes()
}

/// How a provider writes its JSON on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// No whitespace between tokens, non-ASCII as raw UTF-8 (what
    /// `JSON.stringify` and serde_json write).
    Compact,
    /// Two-space indentation, LF newlines, `"key": value`, no trailing
    /// newline, each object's `id` and `object` first and the other keys
    /// sorted (Stripe's event bodies).
    Pretty,
    /// Compact with every `/` written `\/` (PHP's `json_encode` default,
    /// as Slack's API writes it).
    EscapedSlashes,
}

/// The one place each body shape's wire formatting is decided (see
/// `docs/contract.md`, "Body formatting per profile").
pub fn format_of(shape: BodyShape) -> Format {
    match shape {
        BodyShape::Stripe => Format::Pretty,
        BodyShape::Slack => Format::EscapedSlashes,
        BodyShape::Answerline
        | BodyShape::StandardWebhooks
        | BodyShape::Github
        | BodyShape::Shopify
        | BodyShape::GenericHex => Format::Compact,
    }
}

/// The note every genuine body of the `raw-body` scenario carries, as
/// these exact bytes: four-space indentation inside the body's own
/// formatting, `\u00e9` next to a raw `é`, `\/` next to a raw `/`, an emoji,
/// U+2028 escaped and raw, `1.0`, `1e3` and an integer above 2^53. A
/// receiver that parses the body and serializes it again (compact or
/// pretty, `JSON.stringify` or serde_json or Python's `json.dumps`) gets
/// other bytes, and a signature computed over those does not verify.
pub const RAW_NOTE: &str = "{\n    \"text\": \"caf\\u00e9 or café, a\\/b or a/b, 🎉, line\\u2028separator\u{2028}raw\",\n    \"ratio\": 1.0,\n    \"count\": 1e3,\n    \"big\": 9007199254740993\n  }";

/// Where the note goes in a body while it is formatted: a string no
/// planned value contains, replaced by [`RAW_NOTE`] afterwards.
const NOTE_MARK: &str = "\u{1}hookstorm-raw-note\u{1}";

/// `value` written as `shape`'s provider writes it; with `raw_note`, the
/// [`NOTE_MARK`] string in it replaced by [`RAW_NOTE`] and a trailing
/// newline added.
fn write<T: Serialize + ?Sized>(shape: BodyShape, value: &T, raw_note: bool) -> Vec<u8> {
    let mut out = match format_of(shape) {
        Format::Compact => serde_json::to_vec(value),
        Format::Pretty => serde_json::to_vec_pretty(value),
        Format::EscapedSlashes => serde_json::to_vec(value).map(|v| {
            // Outside strings compact JSON has no `/`, so each one is in a string.
            let mut e = Vec::with_capacity(v.len() + 16);
            for b in v {
                if b == b'/' {
                    e.push(b'\\');
                }
                e.push(b);
            }
            e
        }),
    }
    .expect("a body always serializes");
    if raw_note {
        let mark = serde_json::to_vec(NOTE_MARK).expect("a string always serializes");
        if let Some(at) = out.windows(mark.len()).position(|w| w == mark.as_slice()) {
            out.splice(at..at + mark.len(), RAW_NOTE.bytes());
            out.push(b'\n');
        }
    }
    out
}

/// Where a shape's body carries the raw note: a free-form object (its
/// JSON pointer) and the key in it. Answerline puts it in its
/// `response`'s result or error object.
fn note_slot(shape: BodyShape) -> (&'static str, &'static str) {
    match shape {
        BodyShape::Answerline => ("", "note"),
        BodyShape::StandardWebhooks | BodyShape::GenericHex => ("/data", "note"),
        BodyShape::Stripe => ("/data/object/metadata", "note"),
        BodyShape::Github => ("/repository", "custom_properties"),
        BodyShape::Shopify => ("", "note_attributes"),
        BodyShape::Slack => ("/event", "metadata"),
    }
}

/// FNV-1a over `salt` and `text`: stable across platforms and Rust versions.
fn fnv(salt: &str, text: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in salt.bytes().chain([0]).chain(text.bytes()) {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// A GUID (8-4-4-4-12 lowercase hex) derived from `text`.
fn guid(salt: &str, text: &str) -> String {
    let a = fnv(salt, text);
    let b = fnv(&format!("{salt}/2"), text);
    let h = format!("{a:016x}{b:016x}");
    format!(
        "{}-{}-4{}-a{}-{}",
        &h[0..8],
        &h[8..12],
        &h[13..16],
        &h[17..20],
        &h[20..32]
    )
}

/// A positive integer id (10 digits) derived from `text`.
fn numeric(salt: &str, text: &str) -> u64 {
    1_000_000_000 + fnv(salt, text) % 9_000_000_000
}

/// The planned id without its `whd_` prefix.
fn bare(id: &str) -> &str {
    id.strip_prefix("whd_").unwrap_or(id)
}

/// The delivery id a provider would put in its delivery id header, for the
/// plan's id: `msg_…` for Standard Webhooks, a GUID for GitHub and Shopify,
/// the outbox event's `order.<event>.<id>` idempotency key for generic-hex.
pub fn delivery_id(shape: BodyShape, planned: &str) -> String {
    match shape {
        BodyShape::Answerline | BodyShape::Stripe | BodyShape::Slack => planned.to_string(),
        BodyShape::StandardWebhooks => format!("msg_{}", bare(planned)),
        BodyShape::Github => guid("github-delivery", planned),
        BodyShape::Shopify => guid("shopify-webhook", planned),
        BodyShape::GenericHex => format!("order.updated.{}", bare(planned)),
    }
}

/// The provider's event id for a task (the same in every account and on
/// every delivery of it): `evt_…` for Stripe, `Ev…` for Slack, a GUID for
/// Shopify's `X-Shopify-Event-Id`; the task id otherwise.
pub fn event_id(shape: BodyShape, body: &Body) -> String {
    let task = body.task.id.as_str();
    let hex = task.strip_prefix("tsk_").unwrap_or(task);
    match shape {
        BodyShape::Stripe => format!("evt_{hex}"),
        BodyShape::Slack => format!("Ev{}", hex.to_ascii_uppercase()),
        BodyShape::Shopify => guid("shopify-event", task),
        _ => task.to_string(),
    }
}

/// What the object an update is about is derived from: the job key, the
/// sequenced resource, or (for a lone task) the task itself.
fn object_seed(body: &Body) -> String {
    if let Some(k) = &body.task.idempotency_key {
        return job_key(k).to_string();
    }
    if let Some(r) = &body.resource {
        return r.clone();
    }
    body.task.id.clone()
}

/// The object id as it appears in the body (numbers for GitHub and Shopify).
fn object_value(shape: BodyShape, body: &Body) -> Value {
    let seed = object_seed(body);
    match shape {
        BodyShape::Answerline => json!(seed),
        BodyShape::StandardWebhooks => json!(format!("obj_{:016x}", fnv("sw-object", &seed))),
        BodyShape::Stripe => json!(format!("in_{:016x}", fnv("stripe-object", &seed))),
        BodyShape::Github => json!(numeric("github-issue", &seed)),
        BodyShape::Shopify => json!(numeric("shopify-order", &seed)),
        BodyShape::Slack => json!(format!(
            "C{:010X}",
            fnv("slack-channel", &seed) & 0xff_ffff_ffff
        )),
        BodyShape::GenericHex => json!(numeric("outbox-order", &seed)),
    }
}

/// The object id as text: what the history records as the update's job.
pub fn object_id(shape: BodyShape, body: &Body) -> String {
    match object_value(shape, body) {
        Value::String(s) => s,
        v => v.to_string(),
    }
}

/// Unix seconds of an RFC 3339 time; `None` for a poison `createdAt`.
fn unix(created_at: &str) -> Option<i64> {
    DateTime::parse_from_rfc3339(created_at)
        .ok()
        .map(|t| t.timestamp())
}

/// The order field as a unix number, or the poison text as it came.
fn unix_or_text(created_at: &str) -> Value {
    unix(created_at).map_or_else(|| json!(created_at), |t| json!(t))
}

fn amount(body: &Body) -> u64 {
    body.credits as u64 * 100
}

fn result_text(body: &Body) -> String {
    body.response
        .as_ref()
        .map(|r| r.to_string())
        .unwrap_or_default()
}

/// The event type a profile names the delivery with (the event header's
/// value, and the body's `type` where it has one).
pub fn event_type(shape: BodyShape, body: &Body) -> &'static str {
    let failed = body.task.status == TaskStatus::Failed;
    match shape {
        BodyShape::Answerline => {
            if body.test {
                "task.test"
            } else if failed {
                "task.failed"
            } else {
                "task.completed"
            }
        }
        BodyShape::StandardWebhooks if body.test => "webhook.test",
        BodyShape::StandardWebhooks if failed => "task.failed",
        BodyShape::StandardWebhooks => "task.completed",
        BodyShape::Stripe if failed => "invoice.payment_failed",
        BodyShape::Stripe => "invoice.paid",
        BodyShape::Github if body.test => "ping",
        BodyShape::Github => "issues",
        BodyShape::Shopify => "orders/updated",
        BodyShape::Slack if body.test => "url_verification",
        BodyShape::Slack => "event_callback",
        BodyShape::GenericHex => "order.updated",
    }
}

/// The challenge of a Slack `url_verification` body for this delivery.
pub fn slack_challenge(body: &Body) -> String {
    format!("{:016x}", fnv("slack-challenge", &body.task.id))
}

/// Whether an answer to a Slack `url_verification` echoes its challenge in
/// one of the forms Slack accepts: the bare challenge as text, form-encoded
/// `challenge=…`, or JSON `{"challenge": "…"}`.
pub fn echoes_challenge(body: &Body, answer: &[u8]) -> bool {
    echoes(&slack_challenge(body), answer)
}

/// Whether `answer` holds the challenge in one of the forms an echo may
/// take: the whole body as text, `challenge=…`, or JSON `{"challenge": …}`.
pub fn echoes(challenge: &str, answer: &[u8]) -> bool {
    let text = String::from_utf8_lossy(answer);
    let text = text.trim();
    text == challenge
        || text
            .split('&')
            .any(|p| p.strip_prefix("challenge=") == Some(challenge))
        || serde_json::from_str::<serde_json::Value>(text)
            .ok()
            .and_then(|v| v.get("challenge")?.as_str().map(|c| c == challenge))
            .unwrap_or(false)
}

/// The body bytes the profile's provider sends for `body`, formatted as
/// [`format_of`] says; with `raw_note` (the `raw-body` scenario) carrying
/// [`RAW_NOTE`] where [`note_slot`] says, and a trailing newline.
pub fn render(shape: BodyShape, body: &Body, raw_note: bool) -> Vec<u8> {
    let mut v = match shape {
        BodyShape::Answerline if raw_note => {
            let mut noted = body.clone();
            let slot = noted.response.as_mut().and_then(|r| {
                r.as_object_mut()?
                    .values_mut()
                    .next()
                    .and_then(Value::as_object_mut)
            });
            if let Some(slot) = slot {
                slot.insert(note_slot(shape).1.into(), json!(NOTE_MARK));
            }
            return write(shape, &noted, true);
        }
        BodyShape::Answerline => return write(shape, body, false),
        BodyShape::StandardWebhooks => {
            let mut data = json!({
                "id": object_value(shape, body),
                "task_id": body.task.id,
                "status": body.task.status.as_str(),
                "updated_at": body.task.created_at,
                "credits": body.credits,
                "response": body.response,
            });
            if let (Some(r), Some(s)) = (&body.resource, body.sequence) {
                data["resource"] = json!(r);
                data["sequence"] = json!(s);
            }
            json!({
                "type": event_type(shape, body),
                "timestamp": body.task.created_at,
                "data": data,
            })
        }
        BodyShape::Stripe => stripe_body(shape, body),
        BodyShape::Github if body.test => {
            let hook = numeric("github-hook", "hookstorm");
            json!({
                "zen": "Keep it logically awesome.",
                "hook_id": hook,
                "hook": {"type": "Repository", "id": hook, "active": true, "events": ["issues"]},
                "repository": github_repository(),
                "sender": github_sender(),
            })
        }
        BodyShape::Github => github_body(shape, body),
        BodyShape::Shopify => shopify_body(shape, body),
        BodyShape::Slack if body.test => json!({
            "token": "hookstorm-verification-token",
            "challenge": slack_challenge(body),
            "type": "url_verification",
        }),
        BodyShape::Slack => slack_body(shape, body),
        BodyShape::GenericHex => json!({
            "event": event_type(shape, body),
            "data": {
                "order_id": object_value(shape, body),
                "total": format!("{}.00", body.credits),
                "status": body.task.status.as_str(),
            },
            "timestamp": body.task.created_at,
        }),
    };
    if body.test
        && matches!(
            shape,
            BodyShape::StandardWebhooks | BodyShape::Stripe | BodyShape::GenericHex
        )
    {
        v["test"] = json!(true);
    }
    let (parent, key) = note_slot(shape);
    let noted = raw_note
        && match v.pointer_mut(parent).and_then(Value::as_object_mut) {
            Some(o) => o.insert(key.into(), json!(NOTE_MARK)).is_none(),
            None => false,
        };
    match format_of(shape) {
        Format::Pretty => write(shape, &IdFirst(&v), noted),
        Format::Compact | Format::EscapedSlashes => write(shape, &v, noted),
    }
}

/// Stripe's event around an invoice: paid, or open when the task failed.
fn stripe_body(shape: BodyShape, body: &Body) -> Value {
    let failed = body.task.status == TaskStatus::Failed;
    json!({
        "id": event_id(shape, body),
        "object": "event",
        "api_version": "2024-06-20",
        "created": unix_or_text(&body.task.created_at),
        "data": {"object": {
            "id": object_value(shape, body),
            "object": "invoice",
            "amount_paid": if failed { 0 } else { amount(body) },
            "amount_due": amount(body),
            "currency": "usd",
            "status": if failed { "open" } else { "paid" },
            "metadata": {"task_id": body.task.id, "result": result_text(body)},
        }},
        "livemode": false,
        "pending_webhooks": 1,
        "request": {"id": null, "idempotency_key": null},
        "type": event_type(shape, body),
    })
}

/// GitHub's `issues` event: edited, or closed when the task failed.
fn github_body(shape: BodyShape, body: &Body) -> Value {
    let failed = body.task.status == TaskStatus::Failed;
    json!({
        "action": if failed { "closed" } else { "edited" },
        "issue": {
            "id": object_value(shape, body),
            "number": numeric("github-number", &object_seed(body)) % 10_000,
            "title": format!("task {} — résumé prêt ✅", body.task.id),
            "state": if failed { "closed" } else { "open" },
            "body": result_text(body),
            "created_at": body.task.created_at,
            "updated_at": body.task.created_at,
        },
        "repository": github_repository(),
        "sender": github_sender(),
    })
}

/// Shopify's order: paid, or voided when the task failed.
fn shopify_body(shape: BodyShape, body: &Body) -> Value {
    let failed = body.task.status == TaskStatus::Failed;
    let id = object_value(shape, body);
    json!({
        "id": id,
        "admin_graphql_api_id": format!("gid://shopify/Order/{id}"),
        "name": format!("#{}", 1000 + numeric("shopify-name", &object_seed(body)) % 9000),
        "updated_at": body.task.created_at,
        "financial_status": if failed { "voided" } else { "paid" },
        "total_price": format!("{}.00", body.credits),
        "currency": "USD",
        "note": result_text(body),
        "test": body.test,
    })
}

/// Slack's Events API callback: a message event.
fn slack_body(shape: BodyShape, body: &Body) -> Value {
    let t = unix_or_text(&body.task.created_at);
    json!({
        "token": "hookstorm-verification-token",
        "team_id": "T0HOOKSTRM",
        "api_app_id": "A0HOOKSTRM",
        "event": {
            "type": "message",
            "channel": object_value(shape, body),
            "user": "U0HOOKSTRM",
            "text": result_text(body),
            "ts": format!("{}.000100", unix(&body.task.created_at).unwrap_or(0)),
        },
        "type": "event_callback",
        "event_id": event_id(shape, body),
        "event_time": t,
        "authorizations": [{"team_id": "T0HOOKSTRM", "user_id": "U0HOOKSTRM", "is_bot": true}],
        "is_ext_shared_channel": false,
    })
}

/// A JSON value written with each object's `id` and `object` keys first
/// and the rest in sorted order: the key order of Stripe's API objects.
struct IdFirst<'a>(&'a Value);

impl Serialize for IdFirst<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        const FIRST: [&str; 2] = ["id", "object"];
        match self.0 {
            Value::Object(m) => {
                let mut map = s.serialize_map(Some(m.len()))?;
                for k in FIRST {
                    if let Some(v) = m.get(k) {
                        map.serialize_entry(k, &IdFirst(v))?;
                    }
                }
                for (k, v) in m.iter().filter(|(k, _)| !FIRST.contains(&k.as_str())) {
                    map.serialize_entry(k, &IdFirst(v))?;
                }
                map.end()
            }
            Value::Array(a) => s.collect_seq(a.iter().map(IdFirst)),
            v => v.serialize(s),
        }
    }
}

/// The placeholders a custom body template may use.
pub const TEMPLATE_PLACEHOLDERS: [&str; 15] = [
    "sent_ms",
    "sent",
    "token",
    "signature",
    "challenge",
    "event_id",
    "object_id",
    "order",
    "order_unix",
    "order_ms",
    "type",
    "task_id",
    "status",
    "credits",
    "test",
];

/// Fills a custom profile's body template for `body`. Placeholders are
/// written `{{name}}`: `event_id`, `object_id`, `type`, `task_id` and
/// `status` as bare text (quote them in the template), `order` as the RFC
/// 3339 time (quote it), and `order_unix`, `credits` and `test` as JSON
/// values (a poison event's `order_unix` is its impossible date as a JSON
/// string). Unknown placeholders are left as they are; [`check_template`]
/// refuses them when the profile is loaded.
pub fn fill_template(template: &str, shape: BodyShape, body: &Body) -> Vec<u8> {
    let esc = |s: &str| {
        let q = serde_json::to_string(s).expect("a string always serializes");
        q[1..q.len() - 1].to_string()
    };
    let mut out = String::with_capacity(template.len() + 64);
    let mut rest = template;
    while let Some(open) = rest.find("{{") {
        out.push_str(&rest[..open]);
        let after = &rest[open + 2..];
        let Some(close) = after.find("}}") else {
            out.push_str(&rest[open..]);
            rest = "";
            break;
        };
        let name = after[..close].trim();
        let value = match name {
            "event_id" => esc(&event_id(shape, body)),
            "object_id" => esc(&object_id(shape, body)),
            "order" => esc(&body.task.created_at),
            "order_unix" => unix_or_text(&body.task.created_at).to_string(),
            "sent_ms" => SENT_MS_MARK.to_string(),
            "sent" => SENT_MARK.to_string(),
            "token" => TOKEN_MARK.to_string(),
            "signature" => SIGNATURE_MARK.to_string(),
            "challenge" => slack_challenge(body),
            "order_ms" => match unix_or_text(&body.task.created_at) {
                Value::Number(n) => (n.as_i64().unwrap_or_default() * 1000).to_string(),
                other => other.to_string(),
            },
            "type" => esc(event_type(shape, body)),
            "task_id" => esc(&body.task.id),
            "status" => body.task.status.as_str().to_string(),
            "credits" => body.credits.to_string(),
            "test" => body.test.to_string(),
            _ => format!("{{{{{name}}}}}"),
        };
        out.push_str(&value);
        rest = &after[close + 2..];
    }
    out.push_str(rest);
    out.into_bytes()
}

/// Whether a body template uses only known placeholders and fills to a
/// JSON object; `Err` says what is wrong.
pub fn check_template(template: &str) -> Result<(), String> {
    let mut rest = template;
    while let Some(open) = rest.find("{{") {
        let after = &rest[open + 2..];
        let close = after
            .find("}}")
            .ok_or_else(|| "a `{{` without its `}}`".to_string())?;
        let name = after[..close].trim();
        if !TEMPLATE_PLACEHOLDERS.contains(&name) {
            return Err(format!(
                "unknown placeholder {{{{{name}}}}} (expected one of {})",
                TEMPLATE_PLACEHOLDERS.join(", ")
            ));
        }
        rest = &after[close + 2..];
    }
    let sample: Body = serde_json::from_value(json!({
        "task": {"id": "tsk_0000000000000000", "idempotencyKey": "job-1",
                 "status": "COMPLETED", "createdAt": crate::delivery::EPOCH},
        "credits": 1,
    }))
    .expect("the sample body parses");
    let filled = fill_template(template, BodyShape::Answerline, &sample);
    match serde_json::from_slice::<Value>(&filled) {
        Ok(Value::Object(_) | Value::Array(_)) => Ok(()),
        Ok(_) => Err("it does not fill to a JSON object or array".into()),
        Err(e) => Err(format!("it does not fill to valid JSON: {e}")),
    }
}

fn github_repository() -> Value {
    json!({"id": numeric("github-repo", "hookstorm"), "full_name": "hookstorm/demo", "private": true,
           "description": "Démo des webhooks 🪝 — ünïcödé"})
}

fn github_sender() -> Value {
    json!({"login": "hookstorm", "id": numeric("github-user", "hookstorm"), "type": "User"})
}

/// Headers the provider adds beyond the signature and delivery id: GitHub's
/// hook id, Shopify's event id, trigger time and shop, Slack's retry count
/// and reason on a retry (`attempt` counts from 1).
pub fn extra_headers(shape: BodyShape, body: &Body, attempt: u32) -> Vec<(String, String)> {
    let h = |k: &str, v: String| (k.to_string(), v);
    match shape {
        BodyShape::Github => vec![
            h(
                "X-GitHub-Hook-ID",
                numeric("github-hook", "hookstorm").to_string(),
            ),
            h(
                "X-GitHub-Hook-Installation-Target-Type",
                "repository".into(),
            ),
        ],
        BodyShape::Shopify => vec![
            h("X-Shopify-Event-Id", event_id(shape, body)),
            h("X-Shopify-Triggered-At", body.task.created_at.clone()),
            h(
                "X-Shopify-Shop-Domain",
                "hookstorm-demo.myshopify.com".into(),
            ),
            h("X-Shopify-API-Version", "2024-07".into()),
        ],
        BodyShape::Slack if attempt > 1 => vec![
            h("X-Slack-Retry-Num", (attempt - 1).to_string()),
            h("X-Slack-Retry-Reason", "http_timeout".into()),
        ],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{pointer_text, Semantics};

    fn body(status: TaskStatus, key: &str, created: &str) -> Body {
        serde_json::from_value(json!({
            "task": {"id": "tsk_00ff00ff00ff00ff", "idempotencyKey": key, "status": status.as_str(), "createdAt": created},
            "credits": 3,
            "response": {"result": {"answer": "a"}},
        }))
        .unwrap()
    }

    const SHAPES: [BodyShape; 6] = [
        BodyShape::StandardWebhooks,
        BodyShape::Stripe,
        BodyShape::Github,
        BodyShape::Shopify,
        BodyShape::Slack,
        BodyShape::GenericHex,
    ];

    #[test]
    fn templates_fill_every_placeholder_and_stay_json() {
        let t = r#"{"id": "{{event_id}}", "kind": "{{type}}", "at": {{order_unix}}, "obj": {"id": "{{object_id}}", "v": "{{order}}"}, "n": {{credits}}, "test": {{test}}}"#;
        check_template(t).unwrap();
        let b = body(TaskStatus::Completed, "job-1", "2026-11-29T10:00:00Z");
        let v: Value = serde_json::from_slice(&fill_template(t, BodyShape::Stripe, &b)).unwrap();
        assert_eq!(v["id"], event_id(BodyShape::Stripe, &b));
        assert_eq!(v["obj"]["id"], object_id(BodyShape::Stripe, &b));
        assert_eq!(v["kind"], "invoice.paid");
        assert!(v["at"].is_i64());
        assert_eq!(v["test"], false);
        let poison = body(
            TaskStatus::Completed,
            "job-1",
            crate::delivery::POISON_CREATED_AT,
        );
        let v: Value =
            serde_json::from_slice(&fill_template(t, BodyShape::Stripe, &poison)).unwrap();
        assert_eq!(v["at"], crate::delivery::POISON_CREATED_AT);
        assert!(check_template(r#"{"a": "{{nope}}"}"#)
            .unwrap_err()
            .contains("unknown placeholder"));
        assert!(check_template(r#"{"a": {{event_id}}}"#)
            .unwrap_err()
            .contains("valid JSON"));
        assert!(check_template("[]").is_ok());
        assert!(check_template("\"text\"")
            .unwrap_err()
            .contains("JSON object"));
    }

    #[test]
    fn answerline_bodies_are_the_planned_bytes() {
        let b = body(TaskStatus::Completed, "job-1-r1", "2026-11-29T10:00:00Z");
        assert_eq!(
            render(BodyShape::Answerline, &b, false),
            serde_json::to_vec(&b).unwrap()
        );
        assert_eq!(delivery_id(BodyShape::Answerline, "whd_1"), "whd_1");
    }

    #[test]
    fn every_envelope_carries_its_object_and_order_where_its_semantics_say() {
        let b = body(TaskStatus::Completed, "job-1-r1", "2026-11-29T10:00:00Z");
        let unix = DateTime::parse_from_rfc3339("2026-11-29T10:00:00Z")
            .unwrap()
            .timestamp()
            .to_string();
        for shape in SHAPES {
            let sem = Semantics::of(shape);
            let bytes = render(shape, &b, false);
            let object = pointer_text(&bytes, sem.object.as_deref().unwrap());
            assert_eq!(object, Some(object_id(shape, &b)), "{shape:?}");
            let order = pointer_text(&bytes, sem.order.as_deref().unwrap()).unwrap();
            assert!(
                order == "2026-11-29T10:00:00Z" || order == unix,
                "{shape:?}: {order}"
            );
            if let crate::profile::Identity::Body(p) = &sem.identity {
                assert_eq!(pointer_text(&bytes, p), Some(event_id(shape, &b)));
            }
        }
    }

    #[test]
    fn the_updates_of_one_job_are_updates_of_one_object() {
        let a = body(TaskStatus::Completed, "job-7", "2026-11-29T10:00:00Z");
        let mut b = body(TaskStatus::Failed, "job-7-r2", "2026-11-29T10:05:00Z");
        b.task.id = "tsk_1111111111111111".into();
        let c = body(TaskStatus::Completed, "job-8", "2026-11-29T10:00:00Z");
        for shape in SHAPES {
            assert_eq!(object_id(shape, &a), object_id(shape, &b), "{shape:?}");
            assert_ne!(object_id(shape, &a), object_id(shape, &c), "{shape:?}");
            assert_ne!(event_id(shape, &a), event_id(BodyShape::Answerline, &b));
        }
    }

    #[test]
    fn stripe_bodies_are_event_objects_and_slack_tests_are_url_verifications() {
        let b = body(TaskStatus::Completed, "job-1", "2026-11-29T10:00:00Z");
        let v: Value = serde_json::from_slice(&render(BodyShape::Stripe, &b, false)).unwrap();
        assert_eq!(v["object"], "event");
        assert_eq!(v["type"], "invoice.paid");
        assert!(v["id"].as_str().unwrap().starts_with("evt_"));
        assert!(v["created"].is_i64());
        assert_eq!(v["data"]["object"]["object"], "invoice");
        let mut t = b.clone();
        t.test = true;
        let v: Value = serde_json::from_slice(&render(BodyShape::Slack, &t, false)).unwrap();
        assert_eq!(v["type"], "url_verification");
        assert_eq!(v["challenge"], slack_challenge(&t));
        let id = delivery_id(BodyShape::Github, "whd_0123456789abcdef");
        assert_eq!(id.len(), 36);
        assert_eq!(id.matches('-').count(), 4);
    }

    #[test]
    fn a_url_verification_answer_echoes_the_challenge_as_text_form_or_json() {
        let mut t = body(TaskStatus::Completed, "job-1", "2026-11-29T10:00:00Z");
        t.test = true;
        let c = slack_challenge(&t);
        assert!(echoes_challenge(&t, c.as_bytes()));
        assert!(echoes_challenge(&t, format!("{c}\n").as_bytes()));
        assert!(echoes_challenge(&t, format!("challenge={c}").as_bytes()));
        assert!(echoes_challenge(
            &t,
            json!({ "challenge": c }).to_string().as_bytes()
        ));
        // The request body echoed whole carries it too, as Slack reads JSON.
        assert!(echoes_challenge(&t, &render(BodyShape::Slack, &t, false)));
        assert!(!echoes_challenge(&t, b""));
        assert!(!echoes_challenge(&t, b"ok"));
        assert!(!echoes_challenge(&t, b"{\"challenge\": \"wrong\"}"));
    }

    #[test]
    fn stripe_bodies_are_pretty_printed_with_two_spaces_and_id_first() {
        let b = body(TaskStatus::Completed, "job-1", "2026-11-29T10:00:00Z");
        let text = String::from_utf8(render(BodyShape::Stripe, &b, false)).unwrap();
        let id = event_id(BodyShape::Stripe, &b);
        assert!(
            text.starts_with(&format!(
                "{{\n  \"id\": \"{id}\",\n  \"object\": \"event\",\n  \"api_version\": "
            )),
            "{text}"
        );
        let invoice = object_id(BodyShape::Stripe, &b);
        assert!(text.contains(&format!(
            "\n  \"data\": {{\n    \"object\": {{\n      \"id\": \"{invoice}\",\n      \"object\": \"invoice\","
        )));
        assert!(!text.contains('\r') && !text.contains('\t') && text.ends_with("\n}"));
        // A compact re-serialisation (what JSON.stringify writes) differs.
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_ne!(serde_json::to_string(&v).unwrap(), text);
    }

    #[test]
    fn slack_bodies_escape_every_slash() {
        let mut b = body(TaskStatus::Completed, "job-1", "2026-11-29T10:00:00Z");
        b.response = Some(json!({"result": {"answer": "https://example.com/a"}}));
        let bytes = render(BodyShape::Slack, &b, false);
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(text.contains(r"https:\/\/example.com\/a"), "{text}");
        assert!(text
            .match_indices('/')
            .all(|(i, _)| text[..i].ends_with('\\')));
        let v: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(v["event"]["text"], result_text(&b));
    }

    #[test]
    fn github_bodies_carry_non_ascii_text_as_raw_utf8() {
        let b = body(TaskStatus::Completed, "job-1", "2026-11-29T10:00:00Z");
        let text = String::from_utf8(render(BodyShape::Github, &b, false)).unwrap();
        assert!(
            text.contains("résumé prêt ✅") && text.contains("🪝"),
            "{text}"
        );
        assert!(!text.contains("\\u"), "{text}");
    }

    #[test]
    fn compact_profiles_send_what_serde_json_writes() {
        let b = body(TaskStatus::Failed, "job-1", "2026-11-29T10:00:00Z");
        for shape in SHAPES {
            if format_of(shape) != Format::Compact {
                continue;
            }
            let bytes = render(shape, &b, false);
            let v: Value = serde_json::from_slice(&bytes).unwrap();
            assert_eq!(serde_json::to_vec(&v).unwrap(), bytes, "{shape:?}");
        }
    }

    #[test]
    fn a_raw_note_survives_no_reserialisation_and_moves_no_field_the_checker_reads() {
        let b = body(TaskStatus::Completed, "job-1-r1", "2026-11-29T10:00:00Z");
        let note: Value = serde_json::from_str(RAW_NOTE).unwrap();
        assert_eq!(note["big"], json!(9_007_199_254_740_993u64));
        for shape in [BodyShape::Answerline].into_iter().chain(SHAPES) {
            let plain = render(shape, &b, false);
            let noted = render(shape, &b, true);
            let text = String::from_utf8(noted.clone()).unwrap();
            assert!(
                text.contains(RAW_NOTE) && text.ends_with("}\n"),
                "{shape:?}: {text}"
            );
            let v: Value = serde_json::from_slice(&noted).unwrap();
            let (parent, key) = note_slot(shape);
            let at = if shape == BodyShape::Answerline {
                "/response/result/note".to_string()
            } else {
                format!("{parent}/{key}")
            };
            assert_eq!(v.pointer(&at), Some(&note), "{shape:?}");
            for again in [
                serde_json::to_vec(&v).unwrap(),
                serde_json::to_vec_pretty(&v).unwrap(),
            ] {
                assert_ne!(again, noted, "{shape:?}");
            }
            let sem = if shape == BodyShape::Answerline {
                Semantics::answerline()
            } else {
                Semantics::of(shape)
            };
            let mut pointers = vec![sem.object.unwrap(), sem.order.unwrap()];
            if let crate::profile::Identity::Body(p) = sem.identity {
                pointers.push(p);
            }
            for p in pointers {
                assert_eq!(
                    pointer_text(&plain, &p),
                    pointer_text(&noted, &p),
                    "{shape:?} {p}"
                );
                assert!(pointer_text(&noted, &p).is_some(), "{shape:?} {p}");
            }
        }
    }
}
