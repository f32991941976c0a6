//! Joins the folds of consecutive parts of a history into the fold of the
//! whole, as if one [`Aggregator`] had read every line in order.
//!
//! `hookstorm check` reads a large history in parts on several threads
//! (`check::chunks`); each part is folded on its own, with its own line
//! numbers starting at 1, and [`Aggregator::absorb`] then folds each part
//! into the one before it. A key's record depends on the order of its
//! attempts in only a few places, each resolved here the way the
//! sequential fold resolves it:
//!
//! - first wins: the key's first line, job, resource and sequence, valid
//!   creation time, and first status-deviation line;
//! - last wins: the last attempt the receiver missed (I9);
//! - in order, up to a bound: the key's evidence lines, the status
//!   evidence and the dead letters (the earlier part's first);
//! - a genuine 4xx the later part counted as a first delivery's answer is
//!   a duplicate's answer when the earlier part already had the key
//!   acknowledged (I7 tells the two apart).
//!
//! The tests in `check::chunks` hold the joined verdicts to the sequential
//! ones for every way of cutting a history.

use super::aggregate::{flag, line32, name_hash, Aggregator, KeyAgg, NONE, NO_TIME};
use super::verdict::MAX_DEAD_LETTERS;

/// Records of a later part given back to the allocator this many at a time.
const ABSORB_BLOCK: usize = 1 << 16;

impl Aggregator {
    /// Folds in `later`, the fold of the lines that follow the ones this
    /// fold has read; `later`'s line `n` is line `base + n` here.
    ///
    /// Each of `later`'s parts is freed as soon as it is folded in (its
    /// names, then its delivery ids, then its records a block at a time), so
    /// the join of two halves peaks near the size of the whole, not one and
    /// a half times it.
    pub(crate) fn absorb(&mut self, later: Aggregator, base: u64) {
        let Aggregator {
            strings,
            keys: mut later_keys,
            deliveries,
            counts: later_counts,
            dead: later_dead,
            died: later_died,
            status_fail: later_status,
            sequenced,
            ..
        } = later;
        let moved = |line: u32| line32(u64::from(line) + base);
        // For the optional lines, where 0 means none.
        let shift = |line: u32| if line == 0 { 0 } else { moved(line) };
        let ids: Vec<u32> = (0..strings.len() as u32)
            .map(|id| self.strings.intern(strings.name(id)))
            .collect();
        drop(strings);
        let id = |x: u32| if x == NONE { NONE } else { ids[x as usize] };
        self.deliveries.extend(deliveries);

        // Taken from the back of the reversed records, so in their order,
        // and given back to the allocator a block at a time.
        later_keys.reverse();
        let mut slots = Vec::with_capacity(later_keys.len());
        while let Some(k) = later_keys.pop() {
            if later_keys.len() % ABSORB_BLOCK == 0 {
                later_keys.shrink_to_fit();
            }
            let (account, key) = (id(k.account), id(k.key));
            let Some(i) = self.slot_of(account, key).map(|i| i as u32) else {
                let mut lines = k.lines;
                for l in &mut lines[..k.kept()] {
                    *l = moved(*l);
                }
                let h = name_hash(account, self.strings.name(key));
                let new = KeyAgg {
                    account,
                    key,
                    job: id(k.job),
                    resource: id(k.resource),
                    first_line: moved(k.first_line),
                    lines,
                    status_line: shift(k.status_line),
                    missed_line: shift(k.missed_line),
                    ..k
                };
                slots.push(self.add_key(new, h));
                continue;
            };
            slots.push(i);
            let agg = &mut self.keys[i as usize];
            let mut flags = k.flags;
            if agg.has(flag::ACKED) && flags & flag::GEN_4XX != 0 {
                flags = (flags & !flag::GEN_4XX) | flag::DUP_4XX;
            }
            agg.flags |= flags;
            if agg.job == NONE {
                agg.job = id(k.job);
            }
            if agg.resource == NONE {
                agg.resource = id(k.resource);
                agg.sequence = k.sequence;
            }
            if agg.created == NO_TIME {
                agg.created = k.created;
            }
            for &l in &k.lines[..k.kept()] {
                agg.add_line(u64::from(l) + base);
            }
            // The later part's lines past the ones it kept are counted, not listed.
            agg.seen = agg.seen.saturating_add(k.seen - k.kept() as u16);
            if agg.status_line == 0 {
                agg.status_line = shift(k.status_line);
            }
            if k.missed_line != 0 {
                agg.missed_line = moved(k.missed_line);
                agg.missed_status = k.missed_status;
            }
            agg.genuine_attempts += k.genuine_attempts;
        }

        self.counts.add(&later_counts);
        self.died
            .extend(later_died.into_iter().map(|i| slots[i as usize]));
        for (line, dead, i) in later_dead {
            if self.dead.len() >= MAX_DEAD_LETTERS {
                break;
            }
            self.dead.push((line + base, dead, slots[i as usize]));
        }
        let mut later_status = later_status;
        later_status.shift_lines(0, base);
        self.status_fail.merge(later_status);
        self.sequenced |= sequenced;
    }
}
