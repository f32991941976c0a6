//! Provider envelopes: the body, ids and headers a real provider would send
//! for one planned delivery.
//!
//! The plan is written once, in the answerline shape (`{task, credits,
//! response}`), and is the same whatever the profile. At send time this
//! module re-dresses each delivery as its profile's provider would: a
//! Stripe event object, a GitHub `issues` payload, a Shopify order, a Slack
//! `event_callback`, a Standard Webhooks `{type, timestamp, data}`, the
//! outbox guide's event JSON. Every value is a pure function of the planned
//! delivery (ids are derived from the plan's ids, the order field from its
//! `createdAt`), so a run stays deterministic per seed, every account sees
//! the same event under the same identity, and the updates of one job are
//! updates of one object. The answerline shape is returned untouched, byte
//! for byte.

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
    /// The outbox guide's event JSON: `{event, data: {order_id, …}, timestamp}`.
    GenericHex,
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
/// the outbox guide's `order.<event>.<id>` idempotency key for generic-hex.
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
    let want = slack_challenge(body);
    let text = String::from_utf8_lossy(answer);
    let text = text.trim();
    text == want
        || text
            .split('&')
            .any(|p| p.strip_prefix("challenge=") == Some(want.as_str()))
        || serde_json::from_str::<serde_json::Value>(text)
            .ok()
            .and_then(|v| v.get("challenge")?.as_str().map(|c| c == want))
            .unwrap_or(false)
}

/// The body bytes the profile's provider sends for `body`.
pub fn render(shape: BodyShape, body: &Body) -> Vec<u8> {
    let mut v = match shape {
        BodyShape::Answerline => {
            return serde_json::to_vec(body).expect("a body always serializes")
        }
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
        BodyShape::Stripe => {
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
        BodyShape::Github => {
            let failed = body.task.status == TaskStatus::Failed;
            json!({
                "action": if failed { "closed" } else { "edited" },
                "issue": {
                    "id": object_value(shape, body),
                    "number": numeric("github-number", &object_seed(body)) % 10_000,
                    "title": format!("task {}", body.task.id),
                    "state": if failed { "closed" } else { "open" },
                    "body": result_text(body),
                    "created_at": body.task.created_at,
                    "updated_at": body.task.created_at,
                },
                "repository": github_repository(),
                "sender": github_sender(),
            })
        }
        BodyShape::Shopify => {
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
        BodyShape::Slack if body.test => json!({
            "token": "hookstorm-verification-token",
            "challenge": slack_challenge(body),
            "type": "url_verification",
        }),
        BodyShape::Slack => {
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
    serde_json::to_vec(&v).expect("a JSON value always serializes")
}

/// The placeholders a custom body template may use.
pub const TEMPLATE_PLACEHOLDERS: [&str; 9] = [
    "event_id",
    "object_id",
    "order",
    "order_unix",
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
        Ok(Value::Object(_)) => Ok(()),
        Ok(_) => Err("it does not fill to a JSON object".into()),
        Err(e) => Err(format!("it does not fill to valid JSON: {e}")),
    }
}

fn github_repository() -> Value {
    json!({"id": numeric("github-repo", "hookstorm"), "full_name": "hookstorm/demo", "private": true})
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
        assert!(check_template("[]").unwrap_err().contains("JSON object"));
    }

    #[test]
    fn answerline_bodies_are_the_planned_bytes() {
        let b = body(TaskStatus::Completed, "job-1-r1", "2026-11-29T10:00:00Z");
        assert_eq!(
            render(BodyShape::Answerline, &b),
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
            let bytes = render(shape, &b);
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
        let v: Value = serde_json::from_slice(&render(BodyShape::Stripe, &b)).unwrap();
        assert_eq!(v["object"], "event");
        assert_eq!(v["type"], "invoice.paid");
        assert!(v["id"].as_str().unwrap().starts_with("evt_"));
        assert!(v["created"].is_i64());
        assert_eq!(v["data"]["object"]["object"], "invoice");
        let mut t = b.clone();
        t.test = true;
        let v: Value = serde_json::from_slice(&render(BodyShape::Slack, &t)).unwrap();
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
        assert!(echoes_challenge(&t, &render(BodyShape::Slack, &t)));
        assert!(!echoes_challenge(&t, b""));
        assert!(!echoes_challenge(&t, b"ok"));
        assert!(!echoes_challenge(&t, b"{\"challenge\": \"wrong\"}"));
    }
}
