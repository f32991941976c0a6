//! The workload generator: a scenario plus a seed becomes a [`Plan`].
//!
//! It makes the fault-free deliveries (jobs, resubmissions, poison, test
//! and sequenced events) and then lets each plan-time fault in
//! [`crate::fault`] rewrite the plan. It is a pure function of
//! `(scenario, seed)`: no clock, no I/O. Only what must be fresh at send
//! time (the signature's wall-clock timestamp, the oversized padding that
//! depends on the receiver's limit) is left to the sender. Random streams
//! are derived per purpose and per delivery index ([`crate::plan::rng_for`]),
//! so adding a fault or changing the concurrency never shifts another
//! delivery's ids or jitter.
//!
//! It is a stage of its own, after [`crate::fault`], not part of
//! [`crate::plan`]: the plan's types are read by the scenario's explicit
//! form and by the faults, while making a plan needs the scenario and the
//! faults.

use chrono::{DateTime, Duration as ChronoDuration, SecondsFormat, Utc};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::delivery::{random_id, task_body, Body, TaskStatus, EPOCH, POISON_CREATED_AT};
use crate::history::Intent;
use crate::plan::{rng_for, Plan, PlannedDelivery};
use crate::scenario::Scenario;

// Collects the fault-free deliveries, numbering them in order.
struct Builder<'a> {
    rng: &'a mut ChaCha8Rng,
    next: usize,
    out: Vec<PlannedDelivery>,
}

impl<'a> Builder<'a> {
    fn new(rng: &'a mut ChaCha8Rng) -> Self {
        Builder {
            rng,
            next: 0,
            out: Vec::new(),
        }
    }

    fn push(&mut self, account: &str, body: Body, intent: Intent) -> &mut PlannedDelivery {
        let bytes = serde_json::to_vec(&body).expect("a body always serializes");
        let single = intent != Intent::Genuine;
        let poison = body.task.created_at == POISON_CREATED_AT;
        let id = random_id("whd_", self.rng);
        let d = PlannedDelivery::plain(self.next, id, account, body, bytes, intent, poison, single);
        self.next += 1;
        self.out.push(d);
        self.out.last_mut().expect("just pushed")
    }
}

fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

fn epoch() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(EPOCH)
        .expect("EPOCH is a date")
        .with_timezone(&Utc)
}

/// The plan of an explicit scenario: its deliveries as they are, its
/// run-time faults, its fixed seed.
fn explicit_plan(scenario: &Scenario, explicit: &crate::scenario::explicit::Explicit) -> Plan {
    Plan {
        scenario: scenario.name.clone(),
        seed: explicit.seed,
        accounts: scenario.accounts.clone(),
        faults: scenario.faults.clone(),
        deliveries: explicit.deliveries.clone(),
        notes: Vec::new(),
    }
}

/// The plan of `scenario` for `seed`: pure and deterministic.
/// An explicit scenario (`[[delivery]]`) is its own plan, under its own
/// seed: `seed` is not used then.
pub fn plan(scenario: &Scenario, seed: u64) -> Plan {
    if let Some(e) = &scenario.explicit {
        return explicit_plan(scenario, e);
    }
    let name = scenario.name.as_str();
    let mut rng = rng_for(seed, name, "workload", 0);
    let tag = format!("{:04x}", rng.gen::<u16>());
    let w = &scenario.workload;
    let mut b = Builder::new(&mut rng);
    let start = epoch();

    for j in 0..w.jobs {
        let job = format!("job-{tag}-{}", j + 1);
        let base = start + ChronoDuration::seconds(j as i64 * 600 + b.rng.gen_range(0..300));
        for r in 0..w.tasks_per_job {
            let key = if r == 0 {
                job.clone()
            } else {
                format!("{job}-r{r}")
            };
            let created = base + ChronoDuration::seconds(r as i64 * 120 + b.rng.gen_range(1..60));
            let status = if b.rng.gen_bool(w.failed_share) {
                TaskStatus::Failed
            } else {
                TaskStatus::Completed
            };
            let body = task_body(b.rng, Some(key), status, rfc3339(created));
            for account in &scenario.accounts {
                let d = b.push(account, body.clone(), Intent::Genuine);
                if w.raw_note {
                    d.with_raw_note();
                }
            }
        }
    }
    for p in 0..w.poison {
        let key = format!("job-{tag}-p{}", p + 1);
        let body = task_body(
            b.rng,
            Some(key),
            TaskStatus::Completed,
            POISON_CREATED_AT.into(),
        );
        for account in &scenario.accounts {
            b.push(account, body.clone(), Intent::Genuine);
        }
    }
    for t in 0..w.test_deliveries {
        let created = start + ChronoDuration::seconds(t as i64 * 60);
        let mut body = task_body(
            b.rng,
            Some(format!("job-{tag}-t{}", t + 1)),
            TaskStatus::Completed,
            rfc3339(created),
        );
        body.test = true;
        for account in &scenario.accounts {
            b.push(account, body.clone(), Intent::Test).detail = Some("test".into());
        }
    }
    if let Some(s) = &w.sequenced {
        let first = b.out.len();
        for r in 0..s.resources {
            let resource = format!("res-{tag}-{}", r + 1);
            let mut seq = 0u64;
            for e in 0..s.events {
                seq += b.rng.gen_range(1..=s.max_gap);
                let created = start + ChronoDuration::seconds((r * 1000 + e) as i64 * 10);
                let mut body = task_body(b.rng, None, TaskStatus::Completed, rfc3339(created));
                body.resource = Some(resource.clone());
                body.sequence = Some(seq);
                for account in &scenario.accounts {
                    b.push(account, body.clone(), Intent::Genuine);
                }
            }
        }
        use rand::seq::SliceRandom;
        let tail = &mut b.out[first..];
        tail.shuffle(b.rng);
    }

    let deliveries = b.out;
    let mut plan = Plan {
        scenario: name.to_string(),
        seed,
        accounts: scenario.accounts.clone(),
        faults: scenario.faults.clone(),
        deliveries,
        notes: Vec::new(),
    };
    for (i, fault) in scenario.faults.iter().enumerate() {
        let mut frng = rng_for(seed, name, fault.name(), i as u64);
        crate::fault::apply(&mut plan, fault, &mut frng);
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{Sequenced, Workload};
    use std::path::PathBuf;

    fn scenario(w: Workload, accounts: &[&str]) -> Scenario {
        Scenario {
            name: "t".into(),
            description: String::new(),
            expect: String::new(),
            when_it_fails: String::new(),
            check: [crate::invariant::InvariantId::I1].into(),
            tags: vec![],
            time_scale: None,
            drain: None,
            accounts: accounts.iter().map(|s| s.to_string()).collect(),
            workload: w,
            faults: vec![],
            explicit: None,
            path: PathBuf::new(),
        }
    }

    #[test]
    fn resubmissions_have_increasing_created_at_and_suffixes() {
        let s = scenario(
            Workload {
                jobs: 3,
                tasks_per_job: 3,
                ..Default::default()
            },
            &["acct_a"],
        );
        let p = plan(&s, 9);
        assert_eq!(p.deliveries.len(), 9);
        for job in p.deliveries.chunks(3) {
            let keys: Vec<_> = job
                .iter()
                .map(|d| d.body.task.idempotency_key.clone().unwrap())
                .collect();
            assert!(keys[1].ends_with("-r1") && keys[2].ends_with("-r2"));
            assert!(job[0].body.task.created_at < job[1].body.task.created_at);
            assert!(job[1].body.task.created_at < job[2].body.task.created_at);
            assert!(job.iter().all(|d| d.job() == job[0].job()));
        }
    }

    #[test]
    fn two_accounts_get_the_same_task_ids_under_different_delivery_ids() {
        let s = scenario(
            Workload {
                jobs: 2,
                ..Default::default()
            },
            &["acct_a", "acct_b"],
        );
        let p = plan(&s, 1);
        assert_eq!(p.deliveries.len(), 4);
        assert_eq!(p.deliveries[0].body.task.id, p.deliveries[1].body.task.id);
        assert_ne!(p.deliveries[0].id, p.deliveries[1].id);
        assert_ne!(p.deliveries[0].account, p.deliveries[1].account);
    }

    #[test]
    fn sequenced_events_increase_per_resource_with_gaps_and_are_shuffled() {
        let s = scenario(
            Workload {
                jobs: 0,
                sequenced: Some(Sequenced {
                    resources: 2,
                    events: 8,
                    max_gap: 3,
                }),
                ..Default::default()
            },
            &["acct_a"],
        );
        let p = plan(&s, 5);
        assert_eq!(p.deliveries.len(), 16);
        let seqs: Vec<u64> = p
            .deliveries
            .iter()
            .filter(|d| d.body.resource.as_deref().unwrap().ends_with("-1"))
            .map(|d| d.body.sequence.unwrap())
            .collect();
        let mut sorted = seqs.clone();
        sorted.sort();
        assert_ne!(seqs, sorted, "not shuffled");
        sorted.dedup();
        assert_eq!(sorted.len(), 8);
    }

    #[test]
    fn poison_events_carry_an_impossible_date() {
        let s = scenario(
            Workload {
                jobs: 1,
                poison: 1,
                ..Default::default()
            },
            &["acct_a"],
        );
        let p = plan(&s, 5);
        let poison: Vec<_> = p.deliveries.iter().filter(|d| d.poison).collect();
        assert_eq!(poison.len(), 1);
        assert!(DateTime::parse_from_rfc3339(&poison[0].body.task.created_at).is_err());
    }

    #[test]
    fn a_raw_note_workload_writes_the_note_into_every_genuine_job_body() {
        let s = scenario(
            Workload {
                jobs: 3,
                failed_share: 0.5,
                raw_note: true,
                ..Default::default()
            },
            &["acct_a", "acct_b"],
        );
        let p = plan(&s, 4);
        assert_eq!(p.deliveries.len(), 6);
        for d in &p.deliveries {
            assert!(d.raw_note);
            let text = std::str::from_utf8(&d.bytes).unwrap();
            assert!(text.contains(crate::profile::envelope::RAW_NOTE) && text.ends_with('\n'));
            let parsed: crate::delivery::Body = serde_json::from_slice(&d.bytes).unwrap();
            assert_eq!(parsed.task, d.body.task);
        }
        let plain = plan(&scenario(Workload::default(), &["acct_a"]), 4);
        assert!(plain
            .deliveries
            .iter()
            .all(|d| !d.raw_note && d.bytes == serde_json::to_vec(&d.body).unwrap()));
    }
}
