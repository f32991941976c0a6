//! The bench's deliveries: generated on the fly, deterministic from the seed.
//!
//! A bench can send millions of deliveries, so nothing is planned ahead:
//! slot `n` of the run is a pure function of (seed, n). Most slots are fresh
//! deliveries; a configurable share are redeliveries of an earlier slot
//! (same id, same body), concurrent duplicates (two copies at the same
//! instant on two connections), or reordered pairs (two tasks of one job,
//! the newer sent first, so the receiver must keep the newer one as winner).
//! A duplicate regenerates its original's body from the original's slot,
//! so no history of bodies is kept in memory.

use chrono::{DateTime, Duration as ChronoDuration, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};

use crate::delivery::{Body, Task, TaskStatus};

/// Fault name of a redelivery of an earlier slot.
pub const DUPLICATE: &str = crate::fault::duplicate::REPLAY;
/// Fault name prefix of concurrent copies (`duplicate-concurrent:1/2`).
pub const CONCURRENT: &str = crate::fault::duplicate::CONCURRENT;
/// Fault name of both halves of a reordered pair.
pub const REORDER: &str = "reorder";

/// Shares of the special deliveries, each 0..=1.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Mix {
    /// Share of slots that redeliver an earlier slot.
    pub duplicates: f64,
    /// Share of slots sent as two concurrent copies.
    pub concurrent_duplicates: f64,
    /// Share of slots that belong to a reordered pair.
    pub reorder: f64,
}

impl Default for Mix {
    fn default() -> Self {
        Mix {
            duplicates: 0.05,
            concurrent_duplicates: 0.02,
            reorder: 0.05,
        }
    }
}

impl Mix {
    /// No special deliveries at all.
    pub fn none() -> Self {
        Mix {
            duplicates: 0.0,
            concurrent_duplicates: 0.0,
            reorder: 0.0,
        }
    }

    /// Each share is within 0..=1 and duplicates plus concurrent duplicates
    /// stay within 1.
    pub fn validate(&self) -> Result<(), String> {
        for (name, v) in [
            ("duplicates", self.duplicates),
            ("concurrent duplicates", self.concurrent_duplicates),
            ("reorder", self.reorder),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return Err(format!("{name} share {v}: expected a number from 0 to 1"));
            }
        }
        if self.duplicates + self.concurrent_duplicates > 1.0 {
            return Err("duplicates plus concurrent duplicates exceed 1".into());
        }
        Ok(())
    }
}

/// What a slot is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A new delivery.
    Fresh,
    /// A redelivery of the slot named (same id and body).
    Duplicate {
        /// The original slot.
        of: u64,
    },
    /// A new delivery sent as two concurrent copies.
    Concurrent,
    /// The newer task of a reordered pair, sent first.
    ReorderNewer,
    /// The older task of a reordered pair, sent second.
    ReorderOlder,
}

/// One slot, ready to sign.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    /// The slot.
    pub slot: u64,
    /// What it is.
    pub kind: Kind,
    /// Index into the account list.
    pub account: usize,
    /// Delivery id.
    pub id: String,
    /// Task id (dedup key).
    pub key: String,
    /// Job key (idempotency key without `-rN`).
    pub job: String,
    /// The task's createdAt.
    pub created_at: String,
    /// The exact body bytes.
    pub body: Vec<u8>,
    /// Copies sent at once (2 for concurrent duplicates).
    pub copies: u32,
}

impl Item {
    /// The fault names the history records for copy `copy` (1-based).
    pub fn faults(&self, copy: u32) -> Vec<String> {
        match self.kind {
            Kind::Fresh => vec![],
            Kind::Duplicate { .. } => vec![DUPLICATE.to_string()],
            Kind::Concurrent => vec![format!("{CONCURRENT}:{copy}/{}", self.copies)],
            Kind::ReorderNewer | Kind::ReorderOlder => vec![REORDER.to_string()],
        }
    }
}

/// Makes slot items for one run.
#[derive(Debug, Clone)]
pub struct Generator {
    seed: u64,
    mix: Mix,
    accounts: usize,
    prefix: String,
    epoch: DateTime<Utc>,
}

/// How far back a duplicate may reach.
const DUPLICATE_WINDOW: u64 = 64;

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

fn unit(h: u64) -> f64 {
    (h >> 11) as f64 / (1u64 << 53) as f64
}

impl Generator {
    /// A generator for `accounts` accounts (at least 1).
    pub fn new(seed: u64, mix: Mix, accounts: usize) -> Self {
        Generator {
            seed,
            mix,
            accounts: accounts.max(1),
            prefix: format!("{:08x}", splitmix(seed ^ 0xB3AC) as u32),
            epoch: DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z")
                .expect("a valid date")
                .with_timezone(&Utc),
        }
    }

    fn hash(&self, slot: u64, purpose: u64) -> u64 {
        splitmix(splitmix(self.seed ^ purpose.wrapping_mul(0x51_7CC1_B727_220A)) ^ slot)
    }

    /// What slot `slot` is.
    pub fn kind(&self, slot: u64) -> Kind {
        let pair = slot / 2;
        if unit(self.hash(pair, 1)) < self.mix.reorder {
            return if slot % 2 == 0 {
                Kind::ReorderNewer
            } else {
                Kind::ReorderOlder
            };
        }
        let h = self.hash(slot, 2);
        let u = unit(h);
        if slot >= DUPLICATE_WINDOW && u < self.mix.duplicates {
            return Kind::Duplicate {
                of: slot - 1 - (h % (DUPLICATE_WINDOW - 1)),
            };
        }
        if u < self.mix.duplicates + self.mix.concurrent_duplicates {
            return Kind::Concurrent;
        }
        Kind::Fresh
    }

    /// The slot whose delivery `slot` sends (itself unless a duplicate).
    pub fn original(&self, mut slot: u64) -> (u64, Kind) {
        loop {
            match self.kind(slot) {
                Kind::Duplicate { of } => slot = of,
                k => return (slot, k),
            }
        }
    }

    /// The delivery of slot `slot`.
    pub fn item(&self, slot: u64) -> Item {
        let kind = self.kind(slot);
        let (orig, orig_kind) = self.original(slot);
        let pair = orig / 2;
        let p = &self.prefix;
        let (job, idem, created) = match orig_kind {
            Kind::ReorderNewer => (
                format!("job-{p}-p{pair}"),
                format!("job-{p}-p{pair}-r1"),
                2 * pair + 1,
            ),
            Kind::ReorderOlder => (format!("job-{p}-p{pair}"), format!("job-{p}-p{pair}"), 2 * pair),
            _ => {
                let j = format!("job-{p}-{orig}");
                (j.clone(), j, orig)
            }
        };
        let created_at = (self.epoch + ChronoDuration::seconds(created as i64))
            .to_rfc3339_opts(SecondsFormat::Secs, true);
        let key = format!("tsk_{p}{orig:010x}");
        let h = self.hash(orig, 3);
        let body = Body {
            task: Task {
                id: key.clone(),
                idempotency_key: Some(idem),
                status: TaskStatus::Completed,
                created_at: created_at.clone(),
            },
            credits: (h % 9) as u32 + 1,
            response: Some(
                serde_json::json!({"result": {"answer": format!("answer {:08x}", h as u32)}}),
            ),
            test: false,
            resource: None,
            sequence: None,
        };
        Item {
            slot,
            kind,
            account: (pair % self.accounts as u64) as usize,
            id: format!("whd_{p}{orig:010x}"),
            key,
            job,
            created_at,
            body: serde_json::to_vec(&body).expect("a body always serializes"),
            copies: if kind == Kind::Concurrent { 2 } else { 1 },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_are_deterministic_from_the_seed() {
        let a = Generator::new(7, Mix::default(), 2);
        let b = Generator::new(7, Mix::default(), 2);
        let c = Generator::new(8, Mix::default(), 2);
        for s in [0, 1, 100, 5000] {
            assert_eq!(a.item(s), b.item(s));
            assert_ne!(a.item(s).key, c.item(s).key);
        }
    }

    #[test]
    fn shares_match_the_mix() {
        let g = Generator::new(1, Mix::default(), 2);
        let n = 100_000u64;
        let (mut dup, mut conc, mut re) = (0, 0, 0);
        for s in 0..n {
            match g.kind(s) {
                Kind::Duplicate { of } => {
                    assert!(of < s && s - of <= DUPLICATE_WINDOW);
                    dup += 1
                }
                Kind::Concurrent => conc += 1,
                Kind::ReorderNewer | Kind::ReorderOlder => re += 1,
                Kind::Fresh => {}
            }
        }
        let share = |k: i32| k as f64 / n as f64;
        assert!((share(re) - 0.05).abs() < 0.01, "reorder {}", share(re));
        assert!((share(dup) - 0.0475).abs() < 0.01, "dup {}", share(dup));
        assert!((share(conc) - 0.019).abs() < 0.01, "conc {}", share(conc));
    }

    #[test]
    fn a_duplicate_resends_its_original_and_a_pair_shares_a_job() {
        let g = Generator::new(3, Mix::default(), 2);
        let dup = (64..10_000)
            .find(|s| matches!(g.kind(*s), Kind::Duplicate { .. }))
            .unwrap();
        let (orig, _) = g.original(dup);
        let (a, b) = (g.item(dup), g.item(orig));
        assert_eq!((a.id, a.key, a.body), (b.id, b.key, b.body));
        let newer = (0..10_000)
            .find(|s| g.kind(*s) == Kind::ReorderNewer)
            .unwrap();
        let (n, o) = (g.item(newer), g.item(newer + 1));
        assert_eq!(n.job, o.job);
        assert_ne!(n.key, o.key);
        assert!(n.created_at > o.created_at);
    }

    #[test]
    fn out_of_range_shares_are_rejected() {
        let mut m = Mix::default();
        m.reorder = 1.5;
        assert!(m.validate().is_err());
        m = Mix::default();
        m.duplicates = 0.7;
        m.concurrent_duplicates = 0.7;
        assert!(m.validate().is_err());
        assert!(Mix::default().validate().is_ok());
    }
}
