//! Fault actors: every kind of misbehaviour the harness injects, one
//! module per verb.
//!
//! Plan-time faults ([`duplicate`], [`reorder`], [`drop_ack`], [`tamper`])
//! rewrite the [`Plan`] (copies, redeliveries, forged deliveries, waves,
//! dropped acks) with their own seeded random stream, so the whole schedule
//! of misbehaviour is fixed by the seed before anything is sent; the sender
//! carries the directives out and tags each attempt with what it applied.
//! Run-time faults act while or after the sender works: [`front`] (an HTTP
//! proxy before the receiver), [`redeliver`] (the dashboard's redelivery
//! rules), [`nemesis`] (kills and database cuts under load) and
//! [`reconcile`] (the provider API's ground truth and the receiver's
//! reconciliation). Actions on the stream as a whole become `Event::Fault`
//! lines.
//!
//! What a scenario file says about each fault (its spec, defaults and
//! bounds) lives in the leaf modules under [`crate::fault_spec`].
//! The rule that keeps the module graph acyclic: the specs import nothing
//! from [`crate::plan`],
//! the sender or the actors here, so the plan and the scenario may import
//! specs while the actors import the plan.

use rand_chacha::ChaCha8Rng;

use crate::fault_spec::FaultSpec;
use crate::plan::Plan;

pub mod drop_ack;
pub mod duplicate;
pub mod front;
pub mod gauge;
pub mod nemesis;
pub mod reconcile;
pub mod redeliver;
pub mod reorder;
pub mod tamper;

/// Applies one fault to the plan.
pub fn apply(plan: &mut Plan, spec: &FaultSpec, rng: &mut ChaCha8Rng) {
    match spec {
        FaultSpec::Duplicate(d) => duplicate::apply(plan, d, rng),
        FaultSpec::Reorder(r) => reorder::apply(plan, r, rng),
        FaultSpec::DropAck(d) => drop_ack::apply(plan, d, rng),
        FaultSpec::Tamper(t) => tamper::apply(plan, t, rng),
        // Process and database faults act at run time ([`nemesis`]), not on the plan.
        FaultSpec::Kill(_) | FaultSpec::CutDatabase(_) | FaultSpec::KillWorker(_) => {}
        // Carried out while sending (the front, the dashboard, the provider API).
        FaultSpec::Front(_) | FaultSpec::Redeliver(_) | FaultSpec::Reconcile(_) => {}
    }
}
