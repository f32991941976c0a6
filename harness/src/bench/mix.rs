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

use serde::{Deserialize, Serialize};

use crate::history::push_dec;
use crate::tag::FaultTag;

#[cfg(test)]
use crate::delivery::{Body, Task, TaskStatus};

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
    /// How many times this delivery was sent before (0: its first send; a
    /// bench under faults resends what failed, see [`crate::bench::load`]).
    pub resend: u32,
    /// The provider's headers beyond content type, length and signature,
    /// once the item is dressed as its profile's provider sends it; empty
    /// as generated (the answerline delivery).
    pub headers: Vec<(String, String)>,
}

impl Item {
    /// The fault tags the history records for copy `copy` (1-based).
    pub fn faults(&self, copy: u32) -> Vec<FaultTag> {
        if self.resend > 0 {
            // A provider's retry of a failed send: no fault of the harness.
            return vec![];
        }
        match self.kind {
            Kind::Fresh => vec![],
            Kind::Duplicate { .. } => vec![FaultTag::Replay],
            Kind::Concurrent => vec![FaultTag::ConcurrentCopy {
                k: copy,
                n: self.copies,
            }],
            Kind::ReorderNewer | Kind::ReorderOlder => vec![FaultTag::Reorder],
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
        }
    }

    /// The generator of shard `shard` of a sharded bench: its own seed
    /// (from the run seed and the index) and keys no other shard makes
    /// (the run's prefix, `s` and the index: `s` is not a hex digit, so
    /// they never meet an unsharded key either). One shard of one is the
    /// unsharded generator.
    pub fn for_shard(seed: u64, mix: Mix, accounts: usize, shard: crate::shard::Shard) -> Self {
        if shard.count == 1 {
            return Generator::new(seed, mix, accounts);
        }
        let mut g = Generator::new(shard.seed(seed), mix, accounts);
        g.prefix = format!("{:08x}s{}-", splitmix(seed ^ 0xB3AC) as u32, shard.index);
        g
    }

    fn hash(&self, slot: u64, purpose: u64) -> u64 {
        splitmix(splitmix(self.seed ^ purpose.wrapping_mul(0x51_7CC1_B727_220A)) ^ slot)
    }

    /// What slot `slot` is.
    pub fn kind(&self, slot: u64) -> Kind {
        let pair = slot / 2;
        if unit(self.hash(pair, 1)) < self.mix.reorder {
            return if slot & 1 == 0 {
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

    /// The delivery of slot `slot`. Strings are built by hand (this runs
    /// once per request at up to 100k/s); the body is exactly the JSON that
    /// serializing the matching [`Body`] gives.
    pub fn item(&self, slot: u64) -> Item {
        let mut it = Item {
            slot,
            kind: Kind::Fresh,
            account: 0,
            id: String::new(),
            key: String::new(),
            job: String::new(),
            created_at: String::new(),
            body: Vec::new(),
            copies: 1,
            resend: 0,
            headers: Vec::new(),
        };
        self.fill(slot, &mut it);
        it
    }

    /// Makes `it` the delivery of slot `slot`, as [`Generator::item`] does,
    /// reusing its strings' capacity: a sender worker keeps one item and
    /// refills it per request, so making a delivery allocates nothing.
    pub fn fill(&self, slot: u64, it: &mut Item) {
        let kind = self.kind(slot);
        let (orig, orig_kind) = self.original(slot);
        let pair = orig / 2;
        let p = &self.prefix;
        let job = &mut it.job;
        job.clear();
        job.push_str("job-");
        job.push_str(p);
        job.push('-');
        let created = match orig_kind {
            Kind::ReorderNewer | Kind::ReorderOlder => {
                job.push('p');
                push_dec(job, pair);
                if orig_kind == Kind::ReorderNewer {
                    2 * pair + 1
                } else {
                    2 * pair
                }
            }
            _ => {
                push_dec(job, orig);
                orig
            }
        };
        it.created_at.clear();
        push_rfc3339(&mut it.created_at, EPOCH_2026 + created as i64, None);
        it.key.clear();
        it.key.push_str("tsk_");
        it.key.push_str(p);
        push_hex(&mut it.key, orig, 10);
        it.id.clear();
        it.id.push_str("whd_");
        it.id.push_str(p);
        push_hex(&mut it.id, orig, 10);
        let h = self.hash(orig, 3);
        let mut bytes = std::mem::take(&mut it.body);
        bytes.clear();
        let mut body = String::from_utf8(bytes).unwrap_or_default();
        body.reserve(200);
        body.push_str(r#"{"task":{"id":""#);
        body.push_str(&it.key);
        body.push_str(r#"","idempotencyKey":""#);
        body.push_str(&it.job);
        if orig_kind == Kind::ReorderNewer {
            body.push_str("-r1");
        }
        body.push_str(r#"","status":"COMPLETED","createdAt":""#);
        body.push_str(&it.created_at);
        body.push_str(r#""},"credits":"#);
        push_dec(&mut body, h % 9 + 1);
        body.push_str(r#","response":{"result":{"answer":"answer "#);
        push_hex(&mut body, u64::from(h as u32), 8);
        body.push_str(r#""}}}"#);
        it.body = body.into_bytes();
        it.headers.clear();
        it.slot = slot;
        it.kind = kind;
        it.account = (pair % self.accounts as u64) as usize;
        it.copies = if kind == Kind::Concurrent { 2 } else { 1 };
        it.resend = 0;
    }
}

/// 2026-01-01T00:00:00Z in unix seconds: createdAt of slot 0.
const EPOCH_2026: i64 = 1_767_225_600;

/// Appends `v` in lowercase hex, zero-padded to `width` digits.
pub fn push_hex(out: &mut String, v: u64, width: usize) {
    const D: &[u8; 16] = b"0123456789abcdef";
    let mut buf = [b'0'; 16];
    let mut n = v;
    let mut i = 16;
    while n > 0 || i == 16 {
        i -= 1;
        buf[i] = D[(n & 15) as usize];
        n >>= 4;
    }
    let start = (16 - width.min(16)).min(i);
    out.push_str(std::str::from_utf8(&buf[start..]).expect("ascii"));
}

fn push_2(out: &mut String, v: u32) {
    out.push((b'0' + (v / 10) as u8) as char);
    out.push((b'0' + (v % 10) as u8) as char);
}

/// Appends unix time `secs` (UTC) as RFC 3339, with `.mmm` when `millis`
/// is given: `2026-01-01T00:00:00Z`, `2026-01-01T00:00:00.042Z`.
pub fn push_rfc3339(out: &mut String, secs: i64, millis: Option<u32>) {
    let days = secs.div_euclid(86_400);
    let tod = secs.rem_euclid(86_400) as u32;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    push_dec(out, y.max(0) as u64);
    out.push('-');
    push_2(out, m);
    out.push('-');
    push_2(out, d);
    out.push('T');
    push_2(out, tod / 3600);
    out.push(':');
    push_2(out, tod / 60 % 60);
    out.push(':');
    push_2(out, tod % 60);
    if let Some(ms) = millis {
        out.push('.');
        out.push((b'0' + (ms / 100 % 10) as u8) as char);
        push_2(out, ms % 100);
    }
    out.push('Z');
}

/// The wall clock now: unix seconds and RFC 3339 with milliseconds.
pub fn wall_clock() -> (i64, String) {
    let mut s = String::with_capacity(24);
    let secs = wall_clock_into(&mut s);
    (secs, s)
}

/// The wall clock now: writes it as RFC 3339 with milliseconds into `out`
/// (cleared first) and returns the unix seconds.
pub fn wall_clock_into(out: &mut String) -> i64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = now.as_secs() as i64;
    out.clear();
    push_rfc3339(out, secs, Some(now.subsec_millis()));
    secs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_of_one_seed_never_share_a_key_or_an_id() {
        use crate::shard::Shard;
        let mut keys = std::collections::HashSet::new();
        let mut ids = std::collections::HashSet::new();
        for index in 0..4 {
            let g = Generator::for_shard(5, Mix::default(), 2, Shard { index, count: 4 });
            let mut mine = std::collections::HashSet::new();
            for slot in 0..2000 {
                let it = g.item(slot);
                mine.insert(it.key.clone());
                ids.insert(it.id.clone());
            }
            for k in &mine {
                assert!(keys.insert(k.clone()), "key {k} made by two shards");
            }
        }
        // Reproducible: the same shard of the same seed makes the same item.
        let s1 = Shard { index: 1, count: 4 };
        assert_eq!(
            Generator::for_shard(5, Mix::default(), 2, s1).item(77),
            Generator::for_shard(5, Mix::default(), 2, s1).item(77)
        );
        assert!(ids.len() > 4 * 1800);
    }

    #[test]
    fn a_refilled_item_is_the_item_of_its_slot() {
        // One item refilled slot after slot (every kind, bodies and jobs of
        // varying length) must equal the item made fresh for each slot.
        let g = Generator::new(11, Mix::default(), 3);
        let mut it = g.item(5_000);
        for slot in (0..3_000).rev() {
            g.fill(slot, &mut it);
            assert_eq!(it, g.item(slot), "slot {slot}");
        }
    }

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
    fn bodies_are_exactly_the_serialized_contract_body() {
        let g = Generator::new(9, Mix::default(), 2);
        for slot in 0..2_000 {
            let it = g.item(slot);
            let body: Body = serde_json::from_slice(&it.body).unwrap();
            let expect = Body {
                task: Task {
                    id: it.key.clone(),
                    idempotency_key: body.task.idempotency_key.clone(),
                    status: TaskStatus::Completed,
                    created_at: it.created_at.clone(),
                },
                ..body.clone()
            };
            assert_eq!(body, expect);
            assert_eq!(serde_json::to_vec(&body).unwrap(), it.body);
            let idem = body.task.idempotency_key.unwrap();
            assert_eq!(crate::delivery::job_key(&idem), it.job);
        }
    }

    #[test]
    fn hand_formatted_times_match_chrono() {
        use chrono::{SecondsFormat, TimeZone, Utc};
        for secs in [
            0i64,
            951_782_400,
            1_767_225_600,
            1_795_991_524,
            4_102_444_799,
        ] {
            let mut s = String::new();
            push_rfc3339(&mut s, secs, Some(42));
            let c = Utc.timestamp_opt(secs, 42_000_000).unwrap();
            assert_eq!(s, c.to_rfc3339_opts(SecondsFormat::Millis, true));
            let mut s = String::new();
            push_rfc3339(&mut s, secs, None);
            assert_eq!(s, c.to_rfc3339_opts(SecondsFormat::Secs, true));
        }
        let mut h = String::new();
        push_hex(&mut h, 0xab, 10);
        assert_eq!(h, "00000000ab");
    }

    #[test]
    fn out_of_range_shares_are_rejected() {
        let m = Mix {
            reorder: 1.5,
            ..Mix::default()
        };
        assert!(m.validate().is_err());
        let m = Mix {
            duplicates: 0.7,
            concurrent_duplicates: 0.7,
            ..Mix::default()
        };
        assert!(m.validate().is_err());
        assert!(Mix::default().validate().is_ok());
    }
}
