//! The words a report uses for a profile's event identity, the object an
//! update is about and the field that orders two updates.
//!
//! The checker works on the history's `key` (the event identity) and `job`
//! (the object) whatever the profile, but a Stripe integrator thinks in
//! events, objects and `created`, not in answerline tasks, jobs and
//! `createdAt`. Findings and summaries take their nouns from here, so the
//! answerline text stays exactly as it was and every other profile reads in
//! its provider's terms.

use serde::Serialize;

use crate::profile::{BodyShape, Identity, Profile, Semantics};

/// The nouns of one profile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
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
        match noun.split_once(' ') {
            Some((head, rest)) => format!("{head}s {rest}"),
            None => format!("{noun}s"),
        }
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
    fn plurals_keep_the_field_in_parentheses() {
        assert_eq!(Vocabulary::plural("job"), "jobs");
        assert_eq!(Vocabulary::plural("object (data.id)"), "objects (data.id)");
    }
}
