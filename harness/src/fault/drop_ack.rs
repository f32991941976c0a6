//! `drop_ack`: the receiver's 2xx is discarded as if lost on the way back.
//!
//! The receiver did commit, but the sender cannot know, so it retries on the
//! schedule: the retry must be a no-op. The sender records each discarded
//! ack as an `info` attempt tagged [`crate::tag::FaultTag::DropAck`].

use rand::Rng;

use crate::fault_spec::DropAckSpec;
use crate::history::Intent;
use crate::plan::Plan;
use crate::tag::FaultName;

/// Marks a share of genuine deliveries to lose their first `times` acks.
pub fn apply<R: Rng + ?Sized>(plan: &mut Plan, spec: &DropAckSpec, rng: &mut R) {
    let mut n = 0;
    for d in plan.deliveries.iter_mut() {
        if d.intent == Intent::Genuine && rng.gen_bool(spec.share) {
            d.drop_acks = spec.times;
            n += 1;
        }
    }
    plan.note(
        FaultName::DropAck,
        format!(
            "discard the first {} of {}",
            crate::text::words::count(spec.times, "ack"),
            crate::text::words::count(n, "delivery")
        ),
        None,
    );
}
