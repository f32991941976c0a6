//! The plan: every delivery one scenario sends for one seed, and the
//! faults attached to them.
//!
//! [`crate::workload`] makes it from a scenario, the plan-time faults in
//! [`crate::fault`] rewrite it, and from then on it is all the later stages
//! see: the sender delivers it, the provider book and the run-time faults
//! (front, redelivery desk, reconciliation, kills and database cuts) read
//! their specs from it. It is made once per scenario run, so the sender and
//! the provider book can never disagree about what was planned. The random
//! streams every stage draws from are derived here, per purpose and index.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::delivery::{random_id, Body};
use crate::fault_spec::{
    self, FaultSpec, Forgery, FrontSpec, ReconcileSpec, RedeliverSpec, Signing,
};
use crate::history::Intent;
use crate::tag::{FaultName, FaultTag};

/// Everything one scenario sends for one seed.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The scenario's name.
    pub scenario: String,
    /// The seed.
    pub seed: u64,
    /// The accounts deliveries are sent for (the URL's `{account}`).
    pub accounts: Vec<String>,
    /// The scenario's faults, for those that act while sending (the front,
    /// redelivery rules, reconciliation, process and database faults).
    pub faults: Vec<FaultSpec>,
    /// Deliveries in dispatch order (within each wave).
    pub deliveries: Vec<PlannedDelivery>,
    /// What the faults did to the stream as a whole.
    pub notes: Vec<FaultNote>,
}

/// A fault action on the stream as a whole, written as an `Event::Fault`.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultNote {
    /// The fault's name.
    pub fault: FaultName,
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
    /// The body carries [`crate::profile::envelope::RAW_NOTE`] (the `raw-body`
    /// scenario): every profile's envelope writes it in, as those bytes.
    pub raw_note: bool,
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
            raw_note: false,
        }
    }

    /// Makes the body carry [`crate::profile::envelope::RAW_NOTE`]; the planned
    /// (answerline) bytes are written again with it.
    pub fn with_raw_note(&mut self) -> &mut PlannedDelivery {
        use crate::profile::envelope::{render, BodyShape};
        self.raw_note = true;
        self.bytes = render(BodyShape::Answerline, &self.body, true);
        self
    }

    /// The job key, if the task has an idempotency key.
    pub fn job(&self) -> Option<String> {
        self.body
            .task
            .idempotency_key
            .as_deref()
            .map(|k| crate::delivery::job_key(k).to_string())
    }

    /// The fault tags that apply to this delivery's attempts as a whole.
    pub fn faults(&self) -> Vec<FaultTag> {
        let mut f = Vec::new();
        if let Some(x) = self.forgery {
            f.push(FaultTag::Tamper(x.as_str().to_string()));
        }
        if self.signing != Signing::Current {
            f.push(FaultTag::Rotation(signing_name(self.signing).to_string()));
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
    pub fn note(&mut self, fault: FaultName, action: impl Into<String>, detail: Option<String>) {
        self.notes.push(FaultNote {
            fault,
            action: action.into(),
            detail,
        });
    }

    /// The scenario's fault front, if it asks for one.
    pub fn front(&self) -> Option<&FrontSpec> {
        fault_spec::front(&self.faults)
    }

    /// The scenario's redelivery rules, if it sets any.
    pub fn redeliver(&self) -> Option<&RedeliverSpec> {
        fault_spec::redeliver(&self.faults)
    }

    /// The scenario's reconciliation step, if it has one.
    pub fn reconcile(&self) -> Option<&ReconcileSpec> {
        fault_spec::reconcile(&self.faults)
    }

    /// The spread of the steady stream the scenario's process faults want,
    /// if they want one.
    pub fn spread(&self) -> Option<std::time::Duration> {
        self.faults.iter().filter_map(FaultSpec::spread).max()
    }

    /// The random stream for one purpose of this plan's scenario and seed.
    pub fn rng(&self, purpose: &str, index: u64) -> ChaCha8Rng {
        rng_for(self.seed, &self.scenario, purpose, index)
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
