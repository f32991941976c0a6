//! The workload generator: a scenario plus a seed becomes a [`Plan`].
//!
//! The plan is every delivery the sender will make, with its body, id,
//! account, intent and the fault directives attached to it. It is a pure
//! function of `(scenario, seed)`: no clock, no I/O. Only what must be fresh
//! at send time (the signature's wall-clock timestamp, the oversized
//! padding that depends on the receiver's limit) is left to the sender.
//! Random streams are derived per purpose and per delivery index, so adding
//! a fault or changing the concurrency never shifts another delivery's
//! ids or jitter.

use chrono::{DateTime, Duration as ChronoDuration, SecondsFormat, Utc};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::json;

use crate::delivery::{Body, Task, TaskStatus};
use crate::history::Intent;
use crate::scenario::{Forgery, Scenario, Signing};

/// The fixed epoch createdAt values are spread from, so that a plan never
/// depends on the day it is made.
pub const EPOCH: &str = "2026-11-29T00:00:00Z";

/// The createdAt of a poison event: shaped like a date, but not one.
pub const POISON_CREATED_AT: &str = "2026-02-30T25:61:00Z";

/// Everything one scenario sends for one seed.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The scenario's name.
    pub scenario: String,
    /// The seed.
    pub seed: u64,
    /// Deliveries in dispatch order (within each wave).
    pub deliveries: Vec<PlannedDelivery>,
    /// What the faults did to the stream as a whole.
    pub notes: Vec<FaultNote>,
}

/// A fault action on the stream as a whole, written as an `Event::Fault`.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultNote {
    /// The fault's name.
    pub fault: String,
    /// What it did.
    pub action: String,
    /// Details.
    pub detail: Option<String>,
}

/// What is sent after a delivery's first round.
#[derive(Debug, Clone, PartialEq)]
pub enum Redelivery {
    /// The acknowledged request re-sent byte for byte (same signature).
    Replay,
    /// The acknowledged request re-sent with a fresh delivery-id header.
    FreshId(String),
    /// A dashboard redelivery: same id, signed afresh, full schedule.
    Redeliver,
    /// The request replayed with a timestamp past the tolerance.
    ExpiredReplay,
}

/// One delivery to make.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedDelivery {
    /// Stable index: seeds this delivery's own random stream.
    pub index: usize,
    /// Delivery id (`Webhook-Id`), stable across retries.
    pub id: String,
    /// The account (the URL's `{account}`).
    pub account: String,
    /// The body.
    pub body: Body,
    /// The body's exact bytes.
    pub bytes: Vec<u8>,
    /// What the harness means it to be.
    pub intent: Intent,
    /// More about the intent (the forgery's name, the rotation's signing).
    pub detail: Option<String>,
    /// How the request is forged, if it is.
    pub forgery: Option<Forgery>,
    /// Which secrets sign it.
    pub signing: Signing,
    /// A poison event.
    pub poison: bool,
    /// Waves are sent one after another: wave n+1 starts when every
    /// delivery of wave n is acknowledged or dead.
    pub wave: u32,
    /// First attempts that count as failed without being sent (hold-back).
    pub hold_attempts: u32,
    /// 2xx answers to discard before accepting one (ack loss).
    pub drop_acks: u32,
    /// Copies of the first attempt released at once (1 = no duplicate).
    pub copies: u32,
    /// What follows the first round.
    pub redeliveries: Vec<Redelivery>,
    /// One attempt only (test and must-reject deliveries).
    pub single_attempt: bool,
}

impl PlannedDelivery {
    /// A delivery with no fault applied yet: signed with the current
    /// secrets, one copy, first wave.
    #[allow(clippy::too_many_arguments)]
    pub fn plain(
        index: usize,
        id: String,
        account: &str,
        body: Body,
        bytes: Vec<u8>,
        intent: Intent,
        poison: bool,
        single_attempt: bool,
    ) -> PlannedDelivery {
        PlannedDelivery {
            index,
            id,
            account: account.to_string(),
            poison,
            body,
            bytes,
            intent,
            detail: None,
            forgery: None,
            signing: Signing::Current,
            wave: 0,
            hold_attempts: 0,
            drop_acks: 0,
            copies: 1,
            redeliveries: Vec::new(),
            single_attempt,
        }
    }

    /// The job key, if the task has an idempotency key.
    pub fn job(&self) -> Option<String> {
        self.body
            .task
            .idempotency_key
            .as_deref()
            .map(|k| crate::delivery::job_key(k).to_string())
    }

    /// The fault names that apply to this delivery's attempts as a whole.
    pub fn faults(&self) -> Vec<String> {
        let mut f = Vec::new();
        if let Some(x) = self.forgery {
            f.push(format!("tamper:{}", x.as_str()));
        }
        if self.signing != Signing::Current {
            f.push(format!("rotation:{}", signing_name(self.signing)));
        }
        f
    }
}

/// The name of a signing mode, as scenario files write it.
pub fn signing_name(s: Signing) -> &'static str {
    match s {
        Signing::Current => "current",
        Signing::OldAndNew => "old+new",
        Signing::NewOnly => "new-only",
    }
}

/// A stable 64-bit mix of the seed, the scenario's name and a purpose.
pub fn derive_seed(seed: u64, scenario: &str, purpose: &str, index: u64) -> u64 {
    // FNV-1a over the names, then splitmix64 over everything: stable across
    // Rust versions and platforms, unlike the std hasher.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in scenario.bytes().chain([0]).chain(purpose.bytes()) {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    let mut z = seed ^ h.rotate_left(17) ^ index.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    for _ in 0..2 {
        z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
    }
    z
}

/// The random stream for one purpose of one scenario.
pub fn rng_for(seed: u64, scenario: &str, purpose: &str, index: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(derive_seed(seed, scenario, purpose, index))
}

/// `prefix` followed by 16 random hex digits.
pub fn random_id<R: Rng + ?Sized>(prefix: &str, rng: &mut R) -> String {
    format!("{prefix}{:016x}", rng.gen::<u64>())
}

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

/// Makes a task body.
pub fn task_body<R: Rng + ?Sized>(
    rng: &mut R,
    key: Option<String>,
    status: TaskStatus,
    created_at: String,
) -> Body {
    let id = random_id("tsk_", rng);
    let credits = rng.gen_range(1..=9);
    let response = match status {
        TaskStatus::Failed => {
            json!({"error": {"code": "MODEL_ERROR", "message": "the task failed"}})
        }
        _ => json!({"result": {"answer": format!("answer {:08x}", rng.gen::<u32>())}}),
    };
    Body {
        task: Task {
            id,
            idempotency_key: key,
            status,
            created_at,
        },
        credits,
        response: Some(response),
        test: false,
        resource: None,
        sequence: None,
    }
}

/// The plan of `scenario` for `seed`: pure and deterministic.
pub fn plan(scenario: &Scenario, seed: u64) -> Plan {
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
                b.push(account, body.clone(), Intent::Genuine);
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
        deliveries,
        notes: Vec::new(),
    };
    for (i, fault) in scenario.faults.iter().enumerate() {
        let mut frng = rng_for(seed, name, fault.name(), i as u64);
        crate::fault::apply(&mut plan, scenario, fault, &mut frng);
    }
    plan
}

impl Plan {
    /// Adds a delivery at the end, giving it the next index and a fresh id.
    pub fn push_new<R: Rng + ?Sized>(
        &mut self,
        rng: &mut R,
        account: &str,
        body: Body,
        intent: Intent,
    ) -> &mut PlannedDelivery {
        let index = self
            .deliveries
            .iter()
            .map(|d| d.index + 1)
            .max()
            .unwrap_or(0);
        let bytes = serde_json::to_vec(&body).expect("a body always serializes");
        let id = random_id("whd_", rng);
        let single = intent != Intent::Genuine;
        self.deliveries.push(PlannedDelivery::plain(
            index, id, account, body, bytes, intent, false, single,
        ));
        self.deliveries.last_mut().expect("just pushed")
    }

    /// Records a stream-wide fault action.
    pub fn note(&mut self, fault: &str, action: impl Into<String>, detail: Option<String>) {
        self.notes.push(FaultNote {
            fault: fault.into(),
            action: action.into(),
            detail,
        });
    }

    /// The number of waves.
    pub fn waves(&self) -> u32 {
        self.deliveries
            .iter()
            .map(|d| d.wave + 1)
            .max()
            .unwrap_or(0)
    }
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
            check: vec!["I1".into()],
            tags: vec![],
            time_scale: None,
            drain: None,
            accounts: accounts.iter().map(|s| s.to_string()).collect(),
            workload: w,
            faults: vec![],
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
}
