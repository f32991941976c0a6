//! Bounded evidence that knows its place: each item carries the rank it
//! takes in the whole check's order, so findings gathered apart (parts of
//! a history read on two threads, partitions of a history checked one at
//! a time, partitions checked by different processes) join into exactly
//! the list one pass over everything would have made.
//!
//! A rank is `(list, position)`: which of an invariant's lists the item
//! belongs to (I2 reports duplicated inbox keys before duplicated results
//! rows) and its position there, a history line or a row's index in its
//! state section. [`Found`] keeps the [`MAX_EVIDENCE`] items of lowest
//! rank and counts all of them; [`Found::merge`] joins two.

use serde::{Deserialize, Serialize};

use super::verdict::{Evidence, InvariantResult, Verdict, MAX_EVIDENCE};
use crate::invariant::InvariantId;

/// Where an item stands in its invariant's order: (list, position).
pub type Rank = (u8, u64);

/// One item and its rank.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ranked {
    /// Its place in the whole check's order.
    pub rank: Rank,
    /// The item.
    pub evidence: Evidence,
}

/// The lowest-ranked [`MAX_EVIDENCE`] items, sorted, and how many there were.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Found {
    /// Sorted by rank, at most [`MAX_EVIDENCE`].
    pub items: Vec<Ranked>,
    /// Every item counted.
    pub total: usize,
}

impl Found {
    /// Counts one item and keeps it while it ranks among the first;
    /// `make` runs only then.
    pub fn push(&mut self, rank: Rank, make: impl FnOnce() -> Evidence) {
        self.total += 1;
        let full = self.items.len() >= MAX_EVIDENCE;
        if full && self.items.last().is_some_and(|last| last.rank <= rank) {
            return;
        }
        let at = self.items.partition_point(|r| r.rank <= rank);
        self.items.insert(
            at,
            Ranked {
                rank,
                evidence: make(),
            },
        );
        self.items.truncate(MAX_EVIDENCE);
    }

    /// Whether nothing was found.
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// Joins `other`, found apart from these.
    pub fn merge(&mut self, other: Found) {
        self.total += other.total;
        for r in other.items {
            if self.items.len() >= MAX_EVIDENCE
                && self.items.last().is_some_and(|last| last.rank <= r.rank)
            {
                continue;
            }
            let at = self.items.partition_point(|x| x.rank <= r.rank);
            self.items.insert(at, r);
            self.items.truncate(MAX_EVIDENCE);
        }
    }

    /// Moves history positions on by `lines` (the items of a later part of
    /// a history, numbered from its own first line): `list`'s ranks and
    /// every item's evidence lines.
    pub fn shift_lines(&mut self, list: u8, lines: u64) {
        for r in &mut self.items {
            if r.rank.0 == list {
                r.rank.1 += lines;
            }
            for l in &mut r.evidence.lines {
                *l += lines;
            }
        }
    }

    /// The items, in order, without their ranks.
    pub fn evidence(&self) -> Vec<Evidence> {
        self.items.iter().map(|r| r.evidence.clone()).collect()
    }

    /// The result these findings make: `bad` with the evidence when
    /// anything was found, a pass otherwise.
    pub fn into_result(
        &self,
        id: InvariantId,
        bad: Verdict,
        pass_summary: String,
        fail_summary: String,
    ) -> InvariantResult {
        if self.total == 0 {
            InvariantResult::new(id, Verdict::Pass, pass_summary)
        } else {
            InvariantResult {
                id,
                verdict: bad,
                summary: fail_summary,
                evidence: self.evidence(),
                evidence_total: self.total,
            }
        }
    }
}

/// Evidence kept in the order it is found: for a check that reads its
/// input once, in its own order (a sender's, `check::sender`), each item
/// ranks by when it came.
#[derive(Debug, Default)]
pub(crate) struct EvidenceSet {
    found: Found,
}

impl EvidenceSet {
    /// Counts one item and keeps it while there is room; `make` runs only then.
    pub fn push(&mut self, make: impl FnOnce() -> Evidence) {
        let next = self.found.total as u64;
        self.found.push((0, next), make);
    }

    /// Whether nothing was found.
    pub fn is_empty(&self) -> bool {
        self.found.is_empty()
    }

    /// Turns the set into a result: `bad` with the evidence when anything
    /// was found, a pass otherwise.
    pub fn into_result(
        self,
        id: InvariantId,
        bad: Verdict,
        pass_summary: String,
        fail_summary: String,
    ) -> InvariantResult {
        self.found.into_result(id, bad, pass_summary, fail_summary)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(n: u64) -> Evidence {
        Evidence::new(format!("k{n}"), None, String::new(), vec![n])
    }

    #[test]
    fn found_apart_in_any_split_joins_into_the_first_items_of_the_whole() {
        // 40 items in a shuffled order, split into every number of groups.
        let ranks: Vec<Rank> = (0..40u64)
            .map(|n| ((n % 3) as u8, (n * 7919) % 101))
            .collect();
        let mut whole = Found::default();
        for &r in &ranks {
            whole.push(r, || ev(r.1));
        }
        let mut expected = ranks.clone();
        expected.sort();
        let got: Vec<Rank> = whole.items.iter().map(|r| r.rank).collect();
        assert_eq!(got, expected[..MAX_EVIDENCE]);
        assert_eq!(whole.total, 40);
        for groups in 1..8 {
            let mut parts = vec![Found::default(); groups];
            for (i, &r) in ranks.iter().enumerate() {
                parts[i % groups].push(r, || ev(r.1));
            }
            let mut joined = Found::default();
            for p in parts {
                joined.merge(p);
            }
            assert_eq!(joined, whole, "{groups} groups");
        }
    }

    #[test]
    fn an_item_that_cannot_be_kept_is_counted_and_never_made() {
        let mut f = Found::default();
        for n in 0..MAX_EVIDENCE as u64 {
            f.push((0, n), || ev(n));
        }
        f.push((0, 99), || panic!("made an item past the bound"));
        f.push((1, 0), || panic!("made an item of a later list"));
        assert_eq!(f.total, MAX_EVIDENCE + 2);
        f.push((0, 0), || ev(0));
        assert_eq!(f.items.len(), MAX_EVIDENCE);
        assert_eq!(f.items[1].rank, (0, 0));
    }
}
