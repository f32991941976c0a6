//! A sender scenario made concrete for one seed: every event the harness
//! asks the sender to emit (its account, identity, exact body bytes,
//! resource and sequence) and the script of answers the sink plays to its
//! attempts. A pure function of the scenario, the seed and the profile, so
//! a seed repeats a sink run and `--shrink` can cut the list down.
//!
//! The bodies are the profile's own envelope ([`crate::profile::envelope`])
//! and every one carries [`crate::profile::envelope::RAW_NOTE`]: JSON that
//! no re-serialisation writes back byte for byte, so a sender that signs
//! anything but the bytes it stored is caught.

use rand::seq::SliceRandom;
use rand::Rng;

use crate::delivery::{task_body, TaskStatus, EPOCH};
use crate::plan::rng_for;
use crate::profile::envelope::{self, delivery_id, extra_headers};
use crate::profile::{Identity, Profile};
use crate::scenario::answer::Answer;
use crate::scenario::sender::SenderScenario;

/// One event to emit.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedEvent {
    /// 0-based position in the plan (emit order).
    pub index: usize,
    /// The account (its endpoint).
    pub account: String,
    /// The event's identity under the profile.
    pub key: String,
    /// The job (idempotency key) in its body.
    pub job: Option<String>,
    /// The resource it updates, when sequenced.
    pub resource: Option<String>,
    /// Its sequence number for that resource.
    pub sequence: Option<u64>,
    /// The body, exactly as the sender must send it.
    pub body: Vec<u8>,
    /// The event type (the event header's value, where the profile has one).
    pub event_type: String,
    /// The delivery id the sender must use, when the profile identifies
    /// events by it; otherwise the sender makes its own.
    pub delivery_id: Option<String>,
    /// Headers to send as they are (the profile's own identity headers).
    pub headers: Vec<(String, String)>,
    /// The task's createdAt.
    pub created_at: String,
    /// The sink's answers to its attempts.
    pub script: Vec<Answer>,
    /// Which emit call carries it (0-based).
    pub wave: u32,
}

/// Every event of one sender scenario run.
#[derive(Debug, Clone, PartialEq)]
pub struct SinkPlan {
    /// The seed it was made with.
    pub seed: u64,
    /// The events, in emit order.
    pub events: Vec<PlannedEvent>,
    /// Emit calls.
    pub waves: u32,
}

/// What one event is before it gets a body.
struct Shape {
    account: String,
    resource: Option<String>,
    script: Vec<Answer>,
}

/// Plans `s` for `seed` under `profile` (an explicit scenario's own seed wins).
pub fn plan(s: &SenderScenario, seed: u64, profile: &Profile) -> SinkPlan {
    let seed = s.seed.unwrap_or(seed);
    let shapes = match &s.listed {
        Some(list) => list
            .iter()
            .map(|e| Shape {
                account: e.account.clone(),
                resource: e.resource.clone(),
                script: e.script.clone(),
            })
            .collect(),
        None => generate(s, seed),
    };
    let mut rng = rng_for(seed, &s.name, "sink-bodies", 0);
    let mut next_seq: std::collections::HashMap<String, u64> = std::collections::HashMap::new();
    let n = shapes.len();
    let waves = s.waves.min(n.max(1) as u32).max(1);
    let events = shapes
        .into_iter()
        .enumerate()
        .map(|(index, shape)| {
            let job = format!("job-{:04}", index + 1);
            let created_at = created_at(index);
            let mut body = task_body(
                &mut rng,
                Some(job.clone()),
                TaskStatus::Completed,
                created_at.clone(),
            );
            let sequence = shape.resource.as_ref().map(|r| {
                let step = rng.gen_range(1..=3);
                let seq = next_seq.entry(r.clone()).or_insert(0);
                *seq += step;
                *seq
            });
            body.resource = shape.resource.clone();
            body.sequence = sequence;
            let bytes = match &profile.body_template {
                Some(t) => envelope::fill_template(t, profile.body, &body),
                None => envelope::render(profile.body, &body, true),
            };
            let planned_id = format!("whd_{:016x}", rng.gen::<u64>());
            let headers = extra_headers(profile.body, &body, 1);
            let delivery = delivery_id(profile.body, &planned_id);
            let id_header = profile.delivery_id_header();
            let mut all_headers = headers.clone();
            if let Some(h) = id_header {
                all_headers.push((h.to_string(), delivery.clone()));
            }
            let key = profile
                .semantics
                .identity_of(id_header, all_headers.as_slice(), &bytes)
                .unwrap_or_else(|| body.task.id.clone());
            let by_delivery_id = profile.semantics.identity == Identity::DeliveryId;
            PlannedEvent {
                index,
                account: shape.account,
                key,
                job: Some(job),
                resource: shape.resource,
                sequence,
                event_type: envelope::event_type(profile.body, &body).to_string(),
                body: bytes,
                delivery_id: by_delivery_id.then_some(delivery),
                headers,
                created_at,
                script: shape.script,
                wave: (index * waves as usize / n.max(1)) as u32,
            }
        })
        .collect();
    SinkPlan {
        seed,
        events,
        waves,
    }
}

/// `createdAt` of the `index`-th event: a minute apart from the epoch.
fn created_at(index: usize) -> String {
    let epoch = chrono::DateTime::parse_from_rfc3339(EPOCH).expect("the epoch is a date");
    (epoch + chrono::Duration::minutes(index as i64))
        .with_timezone(&chrono::Utc)
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// The events of a generative scenario: accounts in turn, resources in
/// turn (each resource's events in emit order), scripts by share.
fn generate(s: &SenderScenario, seed: u64) -> Vec<Shape> {
    let n = s.events;
    let mut rng = rng_for(seed, &s.name, "sink-scripts", 0);
    // Counts by share (largest remainder), each script at least once when
    // there are events enough, then dealt out in a seeded order.
    let total: f64 = s.answers.iter().map(|a| a.share).sum();
    let mut counts: Vec<usize> = s
        .answers
        .iter()
        .map(|a| ((a.share / total) * n as f64).floor() as usize)
        .collect();
    if n >= s.answers.len() {
        for c in &mut counts {
            *c = (*c).max(1);
        }
    }
    while counts.iter().sum::<usize>() > n {
        let i = counts
            .iter()
            .enumerate()
            .max_by_key(|(_, c)| **c)
            .map(|(i, _)| i)
            .unwrap_or(0);
        counts[i] -= 1;
    }
    let (mut k, len) = (0, counts.len());
    while counts.iter().sum::<usize>() < n {
        counts[k % len] += 1;
        k += 1;
    }
    let mut scripts: Vec<usize> = counts
        .iter()
        .enumerate()
        .flat_map(|(i, c)| std::iter::repeat_n(i, *c))
        .collect();
    scripts.shuffle(&mut rng);
    (0..n)
        .map(|i| Shape {
            account: s.accounts[i % s.accounts.len()].clone(),
            resource: (s.resources > 0).then(|| format!("order-{}", i % s.resources + 1)),
            script: s.answers[scripts[i]].script.clone(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::sender::Scripted;

    fn scenario(events: usize, resources: usize) -> SenderScenario {
        SenderScenario {
            name: "s".into(),
            description: String::new(),
            expect: String::new(),
            when_it_fails: String::new(),
            check: Default::default(),
            tags: vec!["sender".into()],
            accounts: vec!["acct_a".into(), "acct_b".into()],
            events,
            resources,
            waves: 2,
            spacing: std::time::Duration::from_millis(50),
            drain: None,
            answers: vec![
                Scripted {
                    share: 3.0,
                    script: vec![Answer::Status(200)],
                },
                Scripted {
                    share: 1.0,
                    script: vec![Answer::Hang, Answer::Status(200)],
                },
            ],
            crash: None,
            listed: None,
            seed: None,
            path: Default::default(),
        }
    }

    #[test]
    fn a_seed_repeats_the_plan_and_each_script_is_played() {
        let p = Profile::default_profile();
        let a = plan(&scenario(8, 0), 7, &p);
        assert_eq!(a, plan(&scenario(8, 0), 7, &p));
        assert_ne!(a.events[0].key, plan(&scenario(8, 0), 8, &p).events[0].key);
        let hangs = a
            .events
            .iter()
            .filter(|e| e.script[0] == Answer::Hang)
            .count();
        assert_eq!(hangs, 2, "a quarter of 8");
        assert_eq!(a.events[1].account, "acct_b");
        assert_eq!(a.events[0].wave, 0);
        assert_eq!(a.events[7].wave, 1);
    }

    #[test]
    fn the_key_is_the_identity_the_profile_reads_from_the_body() {
        let p = Profile::default_profile();
        let a = plan(&scenario(2, 0), 1, &p);
        let e = &a.events[0];
        let v: serde_json::Value = serde_json::from_slice(&e.body).unwrap();
        assert_eq!(v["task"]["id"], e.key.as_str());
        assert!(
            e.delivery_id.is_none(),
            "answerline senders make their own Webhook-Id"
        );
        let text = String::from_utf8(e.body.clone()).unwrap();
        assert!(text.contains(envelope::RAW_NOTE), "{text}");
        let gh = Profile::builtin("generic-hex").unwrap();
        let g = &plan(&scenario(2, 0), 1, &gh).events[0];
        assert_eq!(g.delivery_id.as_deref(), Some(g.key.as_str()));
        // A Svix profile told where the event is in the body hands the
        // sender no delivery id: one that mints its own is judged by it.
        let mut svix = Profile::builtin("svix").unwrap();
        let given = &plan(&scenario(2, 0), 1, &svix).events[0];
        assert!(given.delivery_id.is_some());
        svix.semantics.identity = crate::profile::Identity::Body("/data/task_id".into());
        let minted = &plan(&scenario(2, 0), 1, &svix).events[0];
        assert!(minted.delivery_id.is_none());
        let v: serde_json::Value = serde_json::from_slice(&minted.body).unwrap();
        assert_eq!(v["data"]["task_id"], minted.key.as_str());
    }

    #[test]
    fn each_resources_sequence_grows_in_emit_order() {
        let p = Profile::default_profile();
        let a = plan(&scenario(9, 3), 3, &p);
        for r in ["order-1", "order-2", "order-3"] {
            let seqs: Vec<u64> = a
                .events
                .iter()
                .filter(|e| e.resource.as_deref() == Some(r))
                .map(|e| e.sequence.unwrap())
                .collect();
            assert_eq!(seqs.len(), 3);
            assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
        }
    }
}
