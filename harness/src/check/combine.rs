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

use super::aggregate::{flag, name_hash, Aggregator, KeyAgg, NONE, NO_TIME};
use super::MAX_DEAD_LETTERS;

impl Aggregator {
    /// Folds in `later`, the fold of the lines that follow the ones this
    /// fold has read; `later`'s line `n` is line `base + n` here.
    pub(crate) fn absorb(&mut self, later: Aggregator, base: u64) {
        let shift = |line: u64| if line == 0 { 0 } else { line + base };
        let ids: Vec<u32> = (0..later.strings.len() as u32)
            .map(|id| self.strings.intern(later.strings.name(id)))
            .collect();
        let id = |x: u32| if x == NONE { NONE } else { ids[x as usize] };

        let mut slots = Vec::with_capacity(later.keys.len());
        for k in later.keys {
            let (account, key) = (id(k.account), id(k.key));
            let Some(i) = self.slot_of(account, key).map(|i| i as u32) else {
                let mut lines = k.lines;
                for l in &mut lines[..k.nlines as usize] {
                    *l += base;
                }
                let h = name_hash(account, self.strings.name(key));
                let new = KeyAgg {
                    account,
                    key,
                    job: id(k.job),
                    resource: id(k.resource),
                    first_line: k.first_line + base,
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
            for &l in &k.lines[..k.nlines as usize] {
                agg.add_line(l + base);
            }
            if agg.status_line == 0 {
                agg.status_line = shift(k.status_line);
            }
            if k.missed_line != 0 {
                agg.missed_line = k.missed_line + base;
                agg.missed_status = k.missed_status;
            }
            agg.genuine_attempts += k.genuine_attempts;
        }

        self.deliveries.extend(later.deliveries);
        let (c, l) = (&mut self.counts, &later.counts);
        c.attempts += l.attempts;
        c.ok += l.ok;
        c.fail += l.fail;
        c.info += l.info;
        c.dead += l.dead;
        for (dead, i) in later.dead {
            if self.dead.len() >= MAX_DEAD_LETTERS {
                break;
            }
            self.dead.push((dead, slots[i as usize]));
        }
        self.status_fail.total += later.status_fail.total;
        for mut e in later.status_fail.items {
            if self.status_fail.items.len() >= super::MAX_EVIDENCE {
                break;
            }
            for l in &mut e.lines {
                *l += base;
            }
            self.status_fail.items.push(e);
        }
        self.sequenced |= later.sequenced;
    }
}
