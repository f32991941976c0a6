//! Fault actors: small, composable transformations of the delivery stream.
//!
//! Each fault is a verb with its own module. At plan time it rewrites the
//! [`Plan`] (adds copies, redeliveries, forged deliveries, waves, dropped
//! acks) with its own seeded random stream, so the whole schedule of
//! misbehaviour is fixed by the seed before anything is sent. The sender
//! then carries the directives out and records every fault it applied in
//! the attempt's `faults` list; actions on the stream as a whole become
//! `Event::Fault` lines from [`Plan::notes`].

use rand_chacha::ChaCha8Rng;

use crate::plan::Plan;
use crate::scenario::FaultSpec;

pub mod drop_ack;
pub mod duplicate;
pub mod reorder;
pub mod tamper;

/// Applies one fault to the plan.
pub fn apply(plan: &mut Plan, spec: &FaultSpec, rng: &mut ChaCha8Rng) {
    match spec {
        FaultSpec::Duplicate(d) => duplicate::apply(plan, d, rng),
        FaultSpec::Reorder(r) => reorder::apply(plan, r, rng),
        FaultSpec::DropAck(d) => drop_ack::apply(plan, d, rng),
        FaultSpec::Tamper(t) => tamper::apply(plan, t, rng),
        // Process and database faults act at run time (`crate::chaos`), not on the plan.
        FaultSpec::Kill(_) | FaultSpec::CutDatabase(_) | FaultSpec::KillWorker(_) => {}
        // Carried out while sending (the front, the dashboard, the provider API).
        FaultSpec::Front(_) | FaultSpec::Redeliver(_) | FaultSpec::Reconcile(_) => {}
    }
}
