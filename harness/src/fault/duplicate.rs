//! `duplicate`: the same delivery more than once.
//!
//! Concurrent copies are released at one instant on separate connections,
//! each written but for its last byte before any is completed (a provider's
//! retry racing its own first attempt, or two workers picking the same
//! job): they catch check-then-insert races. Sequential copies come
//! after the first ack: exact replays of the signed request, replays with a
//! fresh `Webhook-Id` (which catch receivers deduplicating on that unsigned
//! header instead of the task id), and dashboard redeliveries. Whether a
//! fresh-id replay is the same event is the profile's call: under
//! answerline, Stripe, Shopify and Slack it is (the identity is in the body
//! or an event header); where the delivery id *is* the identity (Standard
//! Webhooks, GitHub, generic-hex) it is a new message, recorded under its
//! own key.

use rand::Rng;

use crate::delivery::random_id;
use crate::fault_spec::{DuplicateMode, DuplicateSpec};
use crate::history::Intent;
use crate::plan::{Plan, Redelivery};
use crate::tag::FaultName;

/// Adds copies or redeliveries to a share of the genuine deliveries.
pub fn apply<R: Rng + ?Sized>(plan: &mut Plan, spec: &DuplicateSpec, rng: &mut R) {
    let mut n = 0;
    for d in plan.deliveries.iter_mut() {
        if d.intent != Intent::Genuine || !rng.gen_bool(spec.share) {
            continue;
        }
        n += 1;
        match spec.mode {
            DuplicateMode::Concurrent => {
                d.copies = rng.gen_range(spec.copies[0]..=spec.copies[1]);
            }
            DuplicateMode::Sequential => {
                for _ in 0..spec.replay {
                    d.redeliveries.push(Redelivery::Replay);
                }
                for _ in 0..spec.fresh_id {
                    d.redeliveries
                        .push(Redelivery::FreshId(random_id("whd_", rng)));
                }
                for _ in 0..spec.redeliver {
                    d.redeliveries.push(Redelivery::Redeliver);
                }
            }
        }
    }
    let action = match spec.mode {
        DuplicateMode::Concurrent => format!(
            "send {} as {}-{} concurrent copies",
            crate::text::words::count(n, "delivery"),
            spec.copies[0],
            spec.copies[1]
        ),
        DuplicateMode::Sequential => format!(
            "re-send {} after their ack: {}, {}, {} each",
            crate::text::words::count(n, "delivery"),
            crate::text::words::count(spec.replay, "replay"),
            crate::text::words::count(spec.fresh_id, "fresh-id replay"),
            crate::text::words::count(spec.redeliver, "redelivery")
        ),
    };
    plan.note(FaultName::Duplicate, action, None);
}
