//! The words a report uses for a profile's event identity, the object an
//! update is about and the field that orders two updates.
//!
//! The checker works on the history's `key` (the event identity) and `job`
//! (the object) whatever the profile, but a Stripe integrator thinks in
//! events, objects and `created`, not in answerline tasks, jobs and
//! `createdAt`. Findings and summaries take their nouns from here, so the
//! answerline text stays exactly as it was and every other profile reads in
//! its provider's terms.

use serde::{Deserialize, Serialize};

use crate::profile::{BodyShape, Identity, Profile, Semantics};

/// The nouns of one profile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Vocabulary {
    /// What one stored key is: `task`, `event`, `message`, `delivery`.
    pub event: String,
    /// The key itself: `task id`, `event id`, `message id (webhook-id)`.
    pub key: String,
    /// The object a run of updates is about: `job`, `object`, `issue`.
    pub object: String,
    /// The field that orders two updates of one object: `createdAt`, `created`.
    pub order: String,
    /// A final status that can win: `COMPLETED`, `successful`.
    pub completed: String,
    /// A final status that never wins: `FAILED`, `failed`.
    pub failed: String,
}

impl Default for Vocabulary {
    fn default() -> Self {
        Vocabulary::answerline()
    }
}

impl Vocabulary {
    /// The answerline contract's words: task, task id, job, createdAt.
    pub fn answerline() -> Vocabulary {
        Vocabulary {
            event: "task".into(),
            key: "task id".into(),
            object: "job".into(),
            order: "createdAt".into(),
            completed: "COMPLETED".into(),
            failed: "FAILED".into(),
        }
    }

    /// The words of a profile: the answerline's for answerline bodies with
    /// answerline rules, else the provider's (built-in shapes) or words made
    /// from the custom semantics' header names and JSON pointers.
    pub fn of(profile: &Profile) -> Vocabulary {
        if profile.body == BodyShape::Answerline
            && profile.body_template.is_none()
            && profile.semantics == Semantics::answerline()
        {
            return Vocabulary::answerline();
        }
        let sem = &profile.semantics;
        let generic = |event: &str| Vocabulary {
            event: event.into(),
            key: match &sem.identity {
                Identity::TaskId => "task id".into(),
                Identity::DeliveryId => format!("{event} id (delivery id header)"),
                Identity::Header(h) => format!("{event} id ({h})"),
                Identity::Body(p) => format!("{event} id ({})", field(p)),
            },
            object: match &sem.object {
                Some(p) => format!("object ({})", field(p)),
                None => "object".into(),
            },
            order: sem
                .order
                .as_deref()
                .map(field)
                .unwrap_or("order field".into()),
            completed: "successful".into(),
            failed: "failed".into(),
        };
        let builtin = profile.body_template.is_none() && sem == &Semantics::of(profile.body);
        if !builtin {
            let event = match sem.identity {
                Identity::DeliveryId => "message",
                _ => "event",
            };
            return generic(event);
        }
        let words = |event: &str, key: &str, object: &str, order: &str| Vocabulary {
            key: key.into(),
            object: object.into(),
            order: order.into(),
            ..generic(event)
        };
        match profile.body {
            BodyShape::Answerline => generic("task"),
            BodyShape::StandardWebhooks => words(
                "message",
                "message id (webhook-id)",
                "object (data.id)",
                "timestamp",
            ),
            BodyShape::Stripe => words("event", "event id", "object (data.object.id)", "created"),
            BodyShape::Github => words(
                "delivery",
                "delivery GUID (X-GitHub-Delivery)",
                "issue",
                "updated_at",
            ),
            BodyShape::Shopify => words(
                "event",
                "event id (X-Shopify-Event-Id)",
                "resource",
                "updated_at",
            ),
            BodyShape::Slack => words("event", "event_id", "channel", "event_time"),
            BodyShape::GenericHex => words(
                "event",
                "idempotency key",
                "order (data.order_id)",
                "timestamp",
            ),
        }
    }

    /// The words of a run whose history names `profile`: a built-in
    /// profile's, else neutral ones (a custom profile's file is not at hand
    /// when a history is checked on its own).
    pub fn of_name(profile: &str) -> Vocabulary {
        match Profile::builtin(profile) {
            Some(p) => Vocabulary::of(&p),
            None => Vocabulary {
                event: "event".into(),
                key: "event id".into(),
                object: "object".into(),
                order: "order field".into(),
                completed: "successful".into(),
                failed: "failed".into(),
            },
        }
    }

    /// The plural of a noun (`job` → `jobs`, `object (data.id)` → `objects (data.id)`).
    pub fn plural(noun: &str) -> String {
        crate::text::words::plural(noun)
    }

    /// The rule I5 holds a receiver to, in these words.
    pub fn winner_rule(&self) -> String {
        if self == &Vocabulary::answerline() {
            return "most recent COMPLETED; ties to the larger task id".into();
        }
        format!(
            "newest {} {} by {}; ties to the larger {}",
            self.completed, self.event, self.order, self.key
        )
    }

    /// Whether these are the answerline's words (some hints only make sense there).
    pub fn is_answerline(&self) -> bool {
        self == &Vocabulary::answerline()
    }
}

/// The per-profile rules as a Markdown table, one row per built-in profile
/// and one for custom profiles, made from the code the sender and the
/// checker use: [`Semantics`] (identity, freshness, object, order),
/// [`Profile::failed_can_win`] (which updates can win, I5), the test
/// delivery [`crate::profile::envelope`] renders, and these words. `docs/state.md`
/// and `docs/invariants.md` carry it between `<!-- semantics:begin -->` and
/// `<!-- semantics:end -->`; a test fails when they differ.
pub fn semantics_table() -> String {
    let mut out = String::from(
        "| profile | `key` (event identity) | freshness | job (object) | winner ordered by | which updates can win | test delivery | words in findings |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    for name in crate::profile::BUILTIN_NAMES {
        let p = Profile::builtin(name).expect("a built-in profile");
        let sem = &p.semantics;
        let identity = match &sem.identity {
            Identity::TaskId => "the body's `task.id`".to_string(),
            Identity::DeliveryId => match p.delivery_id_header() {
                Some(h) => format!("the `{h}` header (the delivery id)"),
                None => "the delivery id header".to_string(),
            },
            Identity::Header(h) => format!("the `{h}` header"),
            Identity::Body(ptr) => format!("the body's `{}`", field(ptr)),
        };
        let tolerance = p.tolerance_secs().unwrap_or_default();
        let freshness = match sem.freshness {
            crate::profile::Freshness::Both => format!("±{tolerance} s"),
            crate::profile::Freshness::PastOnly => format!("only too old (> {tolerance} s)"),
            crate::profile::Freshness::None => "none".to_string(),
        };
        let pointer = |ptr: &Option<String>| {
            ptr.as_deref()
                .map_or("(none)".to_string(), |x| format!("`{}`", field(x)))
        };
        let mut object = pointer(&sem.object);
        if p.body == BodyShape::Answerline {
            object.push_str(" without its `-rN`");
        }
        let failed = crate::profile::envelope::event_type(p.body, &sample(false, true));
        let can_win = if p.failed_can_win() {
            format!("every update, whatever its type: a failed one (`{failed}`) wins when it is the newest")
        } else {
            format!("COMPLETED tasks only: a FAILED one (`{failed}`) never wins")
        };
        let v = Vocabulary::of(&p);
        out.push_str(&format!(
            "| `{name}` | {identity} | {freshness} | {object} | {} | {can_win} | {} | {}, {}, {} |\n",
            pointer(&sem.order),
            match p.test_kind() {
                crate::profile::TestKind::Handshake(text) => text.to_string(),
                crate::profile::TestKind::None => "none".to_string(),
                crate::profile::TestKind::Shape(shape) => test_delivery(shape),
            },
            v.event,
            v.object,
            v.order
        ));
    }
    out.push_str(
        "| custom | `[semantics] identity` | `[semantics] freshness` | `[semantics] object` | `[semantics] order` | every update, unless the body is the answerline's own | the body shape's, or the template's `{{test}}` | event (message for delivery-id identity), object (pointer), the order pointer's field |\n",
    );
    out
}

/// A delivery body for the table: genuine or test, COMPLETED or FAILED.
fn sample(test: bool, failed: bool) -> crate::delivery::Body {
    use crate::delivery::{Body, Task, TaskStatus};
    Body {
        task: Task {
            id: "tsk_0".into(),
            idempotency_key: Some("job-0".into()),
            status: if failed {
                TaskStatus::Failed
            } else {
                TaskStatus::Completed
            },
            created_at: "2026-01-01T00:00:00Z".into(),
        },
        credits: 1,
        response: None,
        test,
        resource: None,
        sequence: None,
    }
}

/// What a test delivery is under a body shape: its own event type, a
/// `"test": true` in the body, or both, as [`crate::profile::envelope`] renders it.
fn test_delivery(shape: BodyShape) -> String {
    let (test, genuine) = (sample(true, false), sample(false, false));
    let kind = crate::profile::envelope::event_type(shape, &test);
    let own_type = kind != crate::profile::envelope::event_type(shape, &genuine);
    let flagged = serde_json::from_slice::<serde_json::Value>(&crate::profile::envelope::render(
        shape, &test, false,
    ))
    .ok()
    .and_then(|v| v.get("test").and_then(serde_json::Value::as_bool))
        == Some(true);
    let mut text = match (own_type, flagged) {
        (true, true) => format!("a `{kind}` event with `\"test\": true`"),
        (true, false) => format!("a `{kind}` event"),
        (false, true) => "`\"test\": true` in the body".to_string(),
        (false, false) => "none".to_string(),
    };
    if shape == BodyShape::Slack {
        text.push_str(", answered with its `challenge`");
    }
    text
}

/// A JSON pointer as a dotted field name (`/data/object/id` → `data.object.id`).
fn field(pointer: &str) -> String {
    pointer.trim_start_matches('/').replace('/', ".")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answerline_keeps_its_words_and_rule() {
        let v = Vocabulary::of(&Profile::builtin("answerline").unwrap());
        assert_eq!(v, Vocabulary::answerline());
        assert_eq!(
            v.winner_rule(),
            "most recent COMPLETED; ties to the larger task id"
        );
    }

    #[test]
    fn every_builtin_profile_names_its_identity_object_and_order() {
        let stripe = Vocabulary::of_name("stripe");
        assert_eq!(
            (stripe.event.as_str(), stripe.order.as_str()),
            ("event", "created")
        );
        assert_eq!(
            stripe.winner_rule(),
            "newest successful event by created; ties to the larger event id"
        );
        assert_eq!(Vocabulary::of_name("github").object, "issue");
        assert_eq!(Vocabulary::of_name("slack").order, "event_time");
        for name in crate::profile::BUILTIN_NAMES {
            let v = Vocabulary::of_name(name);
            assert!(!v.event.is_empty() && !v.object.is_empty(), "{name}");
        }
    }

    #[test]
    fn unknown_profiles_get_neutral_words() {
        let v = Vocabulary::of_name("acme-custom");
        assert_eq!((v.event.as_str(), v.object.as_str()), ("event", "object"));
    }

    #[test]
    fn the_semantics_table_says_which_updates_can_win_per_profile() {
        let table = semantics_table();
        let row = |name: &str| {
            table
                .lines()
                .find(|l| l.starts_with(&format!("| `{name}` |")))
                .unwrap_or_else(|| panic!("no row for {name}:\n{table}"))
                .to_string()
        };
        assert!(row("answerline").contains("a FAILED one (`task.failed`) never wins"));
        assert!(row("stripe").contains("(`invoice.payment_failed`) wins when it is the newest"));
        assert!(row("stripe").contains("the body's `id`"));
        assert!(row("github").contains("a `ping` event"));
        assert!(row("slack").contains("`url_verification`"));
        assert!(row("shopify").contains("`\"test\": true` in the body"));
        assert_eq!(
            table.lines().count(),
            2 + crate::profile::BUILTIN_NAMES.len() + 1
        );
    }

    #[test]
    fn plurals_keep_the_field_in_parentheses() {
        assert_eq!(Vocabulary::plural("job"), "jobs");
        assert_eq!(Vocabulary::plural("object (data.id)"), "objects (data.id)");
    }
}
