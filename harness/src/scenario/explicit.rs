//! The explicit form of a scenario: `[[delivery]]` tables that spell out a
//! [`crate::plan::Plan`] delivery by delivery, instead of a `[workload]` generated from
//! the seed.
//!
//! A generative scenario plus a seed is a complete description of what is
//! sent, but it cannot be cut down: dropping one delivery shifts nothing
//! only if the plan itself is the data. `hookstorm shrink` writes its
//! minimal plan in this form, and `hookstorm run --scenario` replays it as
//! it is. Each table carries every directive of a [`PlannedDelivery`]
//! (copies, redeliveries, dropped acks, hold-back, wave, forgery, signing),
//! the body as its exact JSON bytes, and the delivery's index, which seeds
//! its retry jitter. The file's top-level `seed` fixes the plan's seed, so
//! jitter and run-time fault choices do not follow `--seed`.
//!
//! Plan-time faults (`duplicate`, `reorder`, `drop-ack`, `tamper`) are
//! already written into the deliveries, so an explicit scenario may not
//! list them; the run-time faults (front, redeliver, reconcile, kill,
//! kill-worker, cut-database) stay `[[fault]]` tables and act as usual.

use serde::{Deserialize, Serialize};

use crate::delivery::Body;
use crate::fault_spec::{FaultSpec, Forgery, Signing};
use crate::history::Intent;
use crate::plan::{PlannedDelivery, Redelivery};

/// Most copies of one first attempt an explicit delivery may ask for.
pub const MAX_COPIES: u32 = 100;
/// Most acks discarded (or first attempts held back) per explicit delivery.
pub const MAX_DIRECTIVE: u32 = 100;

/// A plan seed as the file writes it: a TOML integer, or a string of
/// digits for seeds above TOML's largest integer (2^63 - 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlanSeed(pub u64);

impl Serialize for PlanSeed {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match i64::try_from(self.0) {
            Ok(n) => s.serialize_i64(n),
            Err(_) => s.serialize_str(&self.0.to_string()),
        }
    }
}

impl<'de> Deserialize<'de> for PlanSeed {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Int(i64),
            Text(String),
        }
        let bad = || {
            serde::de::Error::custom("expected a seed from 0 to 18446744073709551615, as an integer or a string of digits")
        };
        match Raw::deserialize(d)? {
            Raw::Int(n) => u64::try_from(n).map(PlanSeed).map_err(|_| bad()),
            Raw::Text(t) => t.trim().parse().map(PlanSeed).map_err(|_| bad()),
        }
    }
}

/// The deliveries of an explicit scenario and the plan's fixed seed.
#[derive(Debug, Clone, PartialEq)]
pub struct Explicit {
    /// The plan's seed (retry jitter, derived secrets, run-time fault choices).
    pub seed: u64,
    /// The deliveries, in dispatch order.
    pub deliveries: Vec<PlannedDelivery>,
}

/// One `[[delivery]]` table, as the file writes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeliveryEntry {
    /// Stable index: seeds the delivery's own random stream (default: its position).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<usize>,
    /// Delivery id (`Webhook-Id`).
    pub id: String,
    /// The account (the URL's `{account}`).
    pub account: String,
    /// The body's exact JSON text.
    pub body: String,
    /// What the harness means it to be (default `genuine`).
    #[serde(default = "genuine", skip_serializing_if = "is_genuine")]
    pub intent: Intent,
    /// More about the intent (the forgery's name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// How the request is forged, if it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forgery: Option<Forgery>,
    /// Which secrets sign it (default `current`).
    #[serde(default = "current", skip_serializing_if = "is_current")]
    pub signing: Signing,
    /// A poison event.
    #[serde(default, skip_serializing_if = "is_false")]
    pub poison: bool,
    /// The wave it is sent in (0 first).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub wave: u32,
    /// First attempts counted as failed without being sent.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub hold_attempts: u32,
    /// 2xx answers discarded before one is accepted.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub drop_acks: u32,
    /// Copies of the first attempt released at once (default 1).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub copies: u32,
    /// What follows the first round: `replay`, `fresh-id:<id>`,
    /// `redeliver`, `expired-replay`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redeliveries: Vec<String>,
    /// One attempt only (default: true for every intent but `genuine`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub single_attempt: Option<bool>,
}

fn genuine() -> Intent {
    Intent::Genuine
}
fn is_genuine(i: &Intent) -> bool {
    *i == Intent::Genuine
}
fn current() -> Signing {
    Signing::Current
}
fn is_current(s: &Signing) -> bool {
    *s == Signing::Current
}
fn is_false(b: &bool) -> bool {
    !*b
}
fn is_zero(n: &u32) -> bool {
    *n == 0
}
fn one() -> u32 {
    1
}
fn is_one(n: &u32) -> bool {
    *n == 1
}

/// A redelivery as the file writes it.
pub fn redelivery_text(r: &Redelivery) -> String {
    match r {
        Redelivery::Replay => "replay".into(),
        Redelivery::FreshId(id) => format!("fresh-id:{id}"),
        Redelivery::Redeliver => "redeliver".into(),
        Redelivery::ExpiredReplay => "expired-replay".into(),
    }
}

/// Parses a redelivery as the file writes it.
pub fn parse_redelivery(s: &str) -> Result<Redelivery, String> {
    match s {
        "replay" => Ok(Redelivery::Replay),
        "redeliver" => Ok(Redelivery::Redeliver),
        "expired-replay" => Ok(Redelivery::ExpiredReplay),
        _ => match s.strip_prefix("fresh-id:") {
            Some(id) if !id.trim().is_empty() => Ok(Redelivery::FreshId(id.to_string())),
            _ => Err(format!(
                "redelivery {s:?}: expected replay, fresh-id:<id>, redeliver or expired-replay"
            )),
        },
    }
}

impl DeliveryEntry {
    /// The table of one planned delivery.
    pub fn of(d: &PlannedDelivery) -> DeliveryEntry {
        DeliveryEntry {
            index: Some(d.index),
            id: d.id.clone(),
            account: d.account.clone(),
            body: String::from_utf8_lossy(&d.bytes).into_owned(),
            intent: d.intent,
            detail: d.detail.clone(),
            forgery: d.forgery,
            signing: d.signing,
            poison: d.poison,
            wave: d.wave,
            hold_attempts: d.hold_attempts,
            drop_acks: d.drop_acks,
            copies: d.copies,
            redeliveries: d.redeliveries.iter().map(redelivery_text).collect(),
            single_attempt: Some(d.single_attempt),
        }
    }

    /// The planned delivery this table describes (`position` is its place
    /// in the file, the index when none is given); the message says what
    /// is wrong.
    pub fn to_planned(
        &self,
        position: usize,
        accounts: &[String],
    ) -> Result<PlannedDelivery, String> {
        if self.id.trim().is_empty() {
            return Err("id is empty".into());
        }
        if !accounts.contains(&self.account) {
            return Err(format!(
                "account {:?} is not in accounts (hint: add it to accounts = [...])",
                self.account
            ));
        }
        let body: Body = serde_json::from_str(&self.body)
            .map_err(|e| format!("body: expected a delivery body as JSON text: {e}"))?;
        if !(1..=MAX_COPIES).contains(&self.copies) {
            return Err(format!(
                "copies = {}: expected 1 to {MAX_COPIES}",
                self.copies
            ));
        }
        for (name, n) in [
            ("drop_acks", self.drop_acks),
            ("hold_attempts", self.hold_attempts),
        ] {
            if n > MAX_DIRECTIVE {
                return Err(format!("{name} = {n}: expected 0 to {MAX_DIRECTIVE}"));
            }
        }
        let redeliveries = self
            .redeliveries
            .iter()
            .map(|r| parse_redelivery(r))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(PlannedDelivery {
            index: self.index.unwrap_or(position),
            id: self.id.clone(),
            account: self.account.clone(),
            body,
            bytes: self.body.as_bytes().to_vec(),
            intent: self.intent,
            detail: self.detail.clone(),
            forgery: self.forgery,
            signing: self.signing,
            poison: self.poison,
            wave: self.wave,
            hold_attempts: self.hold_attempts,
            drop_acks: self.drop_acks,
            copies: self.copies,
            redeliveries,
            single_attempt: self
                .single_attempt
                .unwrap_or(self.intent != Intent::Genuine),
            // The body's bytes are the file's: a raw note is in them already.
            raw_note: false,
        })
    }
}

/// Whether a fault is carried out while sending (allowed beside `[[delivery]]`).
pub fn is_run_time(f: &FaultSpec) -> bool {
    !matches!(
        f,
        FaultSpec::Duplicate(_)
            | FaultSpec::Reorder(_)
            | FaultSpec::DropAck(_)
            | FaultSpec::Tamper(_)
    )
}

/// Turns the file's tables into deliveries; the message names the
/// delivery (1-based, as the file counts its tables) and what is wrong.
pub fn deliveries(
    entries: &[DeliveryEntry],
    accounts: &[String],
) -> Result<Vec<PlannedDelivery>, String> {
    if entries.is_empty() {
        return Err("[[delivery]] is empty".into());
    }
    let mut out: Vec<PlannedDelivery> = Vec::with_capacity(entries.len());
    for (i, e) in entries.iter().enumerate() {
        let d = e
            .to_planned(i, accounts)
            .map_err(|m| format!("delivery {} (id {}): {m}", i + 1, e.id))?;
        if out.iter().any(|o| o.index == d.index) {
            return Err(format!(
                "delivery {} (id {}): index {} is used twice (hint: every delivery needs its own index)",
                i + 1,
                e.id,
                d.index
            ));
        }
        out.push(d);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Plan;
    use crate::scenario::{FaultSpec, Scenario, Workload};

    fn generative(faults: &str, workload: &str, accounts: &str) -> (tempfile::TempDir, Scenario) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.toml");
        std::fs::write(
            &path,
            format!(
                "name = \"g\"\ndescription = \"d\"\nexpect = \"e\"\nwhen_it_fails = \"w\"\ncheck = [\"I1\", \"I2\"]\naccounts = {accounts}\n{workload}\n{faults}"
            ),
        )
        .unwrap();
        let s = Scenario::from_file(&path).unwrap();
        (dir, s)
    }

    fn round_trip(s: &Scenario, plan: &Plan) -> (Scenario, Plan) {
        let text = crate::scenario::write::to_toml(s, "g-min", plan, &["a header".into()]);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g-min.toml");
        std::fs::write(&path, &text).unwrap();
        let back = Scenario::from_file(&path).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let replayed = crate::workload::plan(&back, 999);
        (back, replayed)
    }

    #[test]
    fn every_directive_survives_plan_to_file_to_plan() {
        let (_d, s) = generative(
            "[[fault]]\nkind = \"duplicate\"\nmode = \"concurrent\"\nshare = 0.5\n\
             [[fault]]\nkind = \"duplicate\"\nmode = \"sequential\"\nreplay = 1\nfresh_id = 1\nredeliver = 1\n\
             [[fault]]\nkind = \"drop-ack\"\nshare = 0.5\ntimes = 2\n\
             [[fault]]\nkind = \"reorder\"\nmode = \"hold-back\"\nhold_attempts = 2\n\
             [[fault]]\nkind = \"tamper\"\nforgeries = [\"wrong-secret\", \"expired-replay\", \"cross-account\"]\nrotation = [\"old+new\"]\n\
             [[fault]]\nkind = \"redeliver\"\nhourly_limit = 5\n",
            "[workload]\njobs = 4\ntasks_per_job = 2\nfailed_share = 0.5\ntest_deliveries = 1\npoison = 1\n",
            "[\"acct_a\", \"acct_b\"]",
        );
        let mut plan = crate::workload::plan(&s, 42);
        plan.notes.clear();
        let (back, replayed) = round_trip(&s, &plan);
        // Only the run-time fault stays a [[fault]]; the rest is in the deliveries.
        assert_eq!(back.faults.len(), 1);
        assert!(matches!(back.faults[0], FaultSpec::Redeliver(_)));
        let mut want = plan.clone();
        want.faults.retain(is_run_time);
        assert_eq!(replayed.deliveries, want.deliveries);
        assert_eq!(
            replayed,
            Plan {
                scenario: "g-min".into(),
                ..want
            }
        );
        // The directives did occur, so the test compares something.
        let d = &plan.deliveries;
        assert!(d.iter().any(|d| d.copies > 1) && d.iter().any(|d| d.drop_acks > 0));
        assert!(d.iter().any(|d| d.forgery.is_some()) && d.iter().any(|d| d.poison));
        assert!(d.iter().any(|d| d.hold_attempts > 0) && d.iter().any(|d| d.wave > 0));
        assert!(d.iter().any(|d| d.signing != Signing::Current));
        assert!(d.iter().any(|d| d
            .redeliveries
            .iter()
            .any(|r| matches!(r, Redelivery::FreshId(_)))));
    }

    #[test]
    fn an_explicit_plan_keeps_its_seed_whatever_the_run_seed() {
        let (_d, s) = generative("", "[workload]\njobs = 2\n", "[\"acct_a\"]");
        let plan = crate::workload::plan(&s, 7);
        let (back, _) = round_trip(&s, &plan);
        assert_eq!(crate::workload::plan(&back, 1).seed, 7);
        assert_eq!(crate::workload::plan(&back, 2).deliveries, plan.deliveries);
        // Above TOML's largest integer the seed is written as a string.
        let big = crate::workload::plan(&s, u64::MAX - 1);
        let (back, replayed) = round_trip(&s, &big);
        assert_eq!(replayed.seed, u64::MAX - 1);
        assert_eq!(replayed.deliveries, big.deliveries);
        assert!(back.explicit.is_some());
        assert_eq!(
            back.workload,
            Workload {
                jobs: 0,
                ..Workload::default()
            }
        );
    }

    #[test]
    fn a_listed_sequenced_plan_still_needs_resources_in_the_state() {
        let (_d, s) = generative(
            "",
            "[workload]\njobs = 0\n[workload.sequenced]\nresources = 1\nevents = 3\n",
            "[\"acct_a\"]",
        );
        let s = Scenario {
            check: [crate::invariant::InvariantId::I6].into(),
            ..s
        };
        let plan = crate::workload::plan(&s, 4);
        let (back, _) = round_trip(&s, &plan);
        assert!(back.workload.sequenced.is_none());
        assert!(crate::findings::coverage::needs(&back)
            .contains(&crate::findings::coverage::Need::Resources));
    }

    fn explicit_file(rest: &str) -> String {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("e.toml");
        std::fs::write(
            &path,
            format!(
                "name = \"e\"\ndescription = \"d\"\nexpect = \"e\"\nwhen_it_fails = \"w\"\ncheck = [\"I2\"]\nseed = 3\n{rest}"
            ),
        )
        .unwrap();
        match Scenario::from_file(&path) {
            Ok(_) => "ok".into(),
            Err(e) => e.to_string(),
        }
    }

    const BODY: &str = r#"body = '{"task":{"id":"t1","idempotencyKey":"job-1","status":"COMPLETED","createdAt":"2026-01-01T00:00:00Z"},"credits":1}'"#;

    #[test]
    fn a_hand_written_delivery_needs_only_id_account_and_body() {
        let e = explicit_file(&format!(
            "[[delivery]]\nid = \"whd_1\"\naccount = \"acct_a\"\n{BODY}\ncopies = 2\n"
        ));
        assert_eq!(e, "ok");
    }

    #[test]
    fn explicit_files_are_checked_with_file_and_line() {
        let e = explicit_file(&format!(
            "[[delivery]]\nid = \"whd_1\"\naccount = \"acct_a\"\n{BODY}\ncopeis = 2\n"
        ));
        assert!(
            e.contains("e.toml") && e.contains("copeis") && e.contains("line 11"),
            "{e}"
        );
        let e = explicit_file(&format!(
            "[[delivery]]\nid = \"whd_1\"\naccount = \"acct_b\"\n{BODY}\n"
        ));
        assert!(
            e.contains("delivery 1 (id whd_1): account \"acct_b\""),
            "{e}"
        );
        let e = explicit_file("[[delivery]]\nid = \"whd_1\"\naccount = \"acct_a\"\nbody = '{}'\n");
        assert!(
            e.contains("delivery 1 (id whd_1): body: expected a delivery body"),
            "{e}"
        );
        let e = explicit_file(&format!(
            "[[delivery]]\nid = \"whd_1\"\naccount = \"acct_a\"\n{BODY}\nredeliveries = [\"again\"]\n"
        ));
        assert!(e.contains("redelivery \"again\": expected replay"), "{e}");
        let e = explicit_file(&format!(
            "[workload]\njobs = 1\n[[delivery]]\nid = \"whd_1\"\naccount = \"acct_a\"\n{BODY}\n"
        ));
        assert!(e.contains("[workload] and [[delivery]]"), "{e}");
        let e = explicit_file(&format!(
            "[[fault]]\nkind = \"drop-ack\"\n[[delivery]]\nid = \"whd_1\"\naccount = \"acct_a\"\n{BODY}\n"
        ));
        assert!(e.contains("drop-ack") && e.contains("run-time"), "{e}");
        let e = explicit_file(&format!(
            "[[delivery]]\nid = \"whd_1\"\naccount = \"acct_a\"\n{BODY}\ncopies = 0\n"
        ));
        assert!(e.contains("copies = 0: expected 1 to 100"), "{e}");
    }

    #[test]
    fn a_seed_without_deliveries_is_an_error() {
        let e = explicit_file("");
        assert!(e.contains("seed is only for [[delivery]]"), "{e}");
    }
}
