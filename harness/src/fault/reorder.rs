//! `reorder`: results arrive in an order other than the one they were made in.
//!
//! A receiver that lets the last arrival win picks the wrong result for a
//! job. Three modes: a seeded shuffle of the whole stream; per job newest
//! first with FAILED after COMPLETED (each rank its own wave, so the order
//! really holds under concurrency); and hold-back, where the older tasks of
//! a job wait until the newest is acknowledged and their first attempts
//! count as failed, as if the receiver had been down for them.

use std::collections::BTreeMap;

use rand::seq::SliceRandom;
use rand::Rng;

use crate::delivery::TaskStatus;
use crate::fault_spec::{ReorderMode, ReorderSpec};
use crate::history::Intent;
use crate::plan::Plan;
use crate::tag::FaultName;

/// Reorders the plan.
pub fn apply<R: Rng + ?Sized>(plan: &mut Plan, spec: &ReorderSpec, rng: &mut R) {
    match spec.mode {
        ReorderMode::Shuffle => {
            plan.deliveries.shuffle(rng);
            let n = plan.deliveries.len();
            plan.note(FaultName::Reorder, format!("shuffle {n} deliveries"), None);
        }
        ReorderMode::Reverse | ReorderMode::HoldBack => {
            let mut jobs: BTreeMap<(String, String), Vec<usize>> = BTreeMap::new();
            for (i, d) in plan.deliveries.iter().enumerate() {
                if d.intent == Intent::Genuine {
                    if let Some(job) = d.job() {
                        jobs.entry((d.account.clone(), job)).or_default().push(i);
                    }
                }
            }
            let mut moved = 0;
            for members in jobs.values_mut() {
                if members.len() < 2 {
                    continue;
                }
                // Newest first (createdAt is RFC 3339 in UTC, so text order is time order).
                members.sort_by(|&a, &b| {
                    let (da, db) = (&plan.deliveries[a], &plan.deliveries[b]);
                    db.body.task.created_at.cmp(&da.body.task.created_at)
                });
                if spec.mode == ReorderMode::Reverse {
                    // FAILED after COMPLETED, keeping newest-first within each.
                    members.sort_by_key(|&i| {
                        plan.deliveries[i].body.task.status == TaskStatus::Failed
                    });
                    for (rank, &i) in members.iter().enumerate() {
                        plan.deliveries[i].wave = plan.deliveries[i].wave.max(rank as u32);
                    }
                } else {
                    for &i in &members[1..] {
                        let d = &mut plan.deliveries[i];
                        d.wave = d.wave.max(1);
                        d.hold_attempts = spec.hold_attempts;
                    }
                }
                moved += members.len() - 1;
            }
            plan.deliveries.sort_by_key(|d| d.wave);
            let action = if spec.mode == ReorderMode::Reverse {
                format!(
                    "send jobs newest first, FAILED after COMPLETED ({} moved later)",
                    crate::text::words::count(moved, "delivery")
                )
            } else {
                format!(
                    "hold back {} until the newer are acknowledged; their first {} {}",
                    crate::text::words::count(moved, "older delivery"),
                    crate::text::words::count(spec.hold_attempts, "attempt"),
                    if spec.hold_attempts == 1 {
                        "fails"
                    } else {
                        "fail"
                    }
                )
            };
            plan.note(FaultName::Reorder, action, None);
        }
    }
}
