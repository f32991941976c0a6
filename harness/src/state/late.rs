//! Rows that land after their scenario's state was read.
//!
//! A receiver that acknowledges first and writes its inbox row a moment
//! later (a durable queue, then a consumer) can write a row after the
//! harness has read the state of the scenario that sent it. Such a row must
//! never be charged to the *next* scenario as a phantom: it belongs to the
//! scenario that sent its key. [`Owners`] remembers which scenario sent each
//! key; a row of an earlier scenario's key found in a later scenario's state
//! is taken out of that state and kept as a late row of its owner, whose
//! verdict is then checked again with it (`run` does that at the end).
//!
//! A late row is not always a new row. The harness resets the receiver
//! before every scenario, which also empties the receiver's memory of what
//! it stored: a redelivery it still had queued then writes a key again that
//! the owner's own read already held once. Such a row re-stores what the
//! reset removed; a correct receiver does exactly that. So an owner is
//! charged, per key, only the most rows that any *one* read held: two rows
//! of a key prove a duplicate only when they were there at the same time.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::history::Event;
use crate::state::{InboxRow, State};

/// Which scenario of the run sent each key, and the late rows found so far.
#[derive(Debug, Default)]
pub struct Owners {
    /// (account, key) -> scenario index.
    by_account: HashMap<(String, String), usize>,
    /// key -> scenario index (rows that carry no account).
    by_key: HashMap<String, usize>,
    /// Per owner: how many rows of each (account, key) it has been judged
    /// with, which is the most rows of that key any one read held.
    judged: HashMap<usize, HashMap<(Option<String>, String), usize>>,
    late: BTreeMap<usize, Vec<InboxRow>>,
    /// Per owner: rows a later scenario's read held again after the reset
    /// removed them (not charged).
    restored: BTreeMap<usize, usize>,
    /// Keys no scenario sent (the preflight's): (account, key) and key alone.
    aside: HashSet<(String, String)>,
    aside_keys: HashSet<String>,
}

impl Owners {
    /// Records the keys scenario `index` sent (attempts and provider tasks).
    /// A fold that claims, for scenario `index`, every key its history names.
    pub fn claimer(&mut self, index: usize) -> Claim<'_> {
        Claim {
            owners: self,
            index,
        }
    }

    /// Claims, for scenario `index`, every key `events` name.
    pub fn claim<'a>(&mut self, index: usize, events: impl IntoIterator<Item = &'a Event>) {
        for e in events {
            let (account, key) = match e {
                Event::Attempt(a) => (&a.account, &a.key),
                Event::Provider(p) => (&p.account, &p.key),
                _ => continue,
            };
            self.by_account
                .entry((account.clone(), key.clone()))
                .or_insert(index);
            self.by_key.entry(key.clone()).or_insert(index);
        }
    }

    /// Sets keys aside that belong to no scenario (the preflight's own
    /// deliveries): their rows, and what they caused (results, winners,
    /// effects), are taken out of every scenario's state, even when a
    /// receiver that processes later writes them after the preflight's reset.
    pub fn set_aside<'a>(&mut self, keys: impl IntoIterator<Item = (&'a str, &'a str)>) {
        for (account, key) in keys {
            self.aside.insert((account.to_string(), key.to_string()));
            self.aside_keys.insert(key.to_string());
        }
    }

    fn is_aside(&self, account: Option<&str>, key: &str) -> bool {
        match account {
            Some(a) => self.aside.contains(&(a.to_string(), key.to_string())),
            None => self.aside_keys.contains(key),
        }
    }

    fn owner(&self, row: &InboxRow) -> Option<usize> {
        self.owner_of(row.account.as_deref(), &row.key)
    }

    fn owner_of(&self, account: Option<&str>, key: &str) -> Option<usize> {
        match account {
            Some(a) => self
                .by_account
                .get(&(a.to_string(), key.to_string()))
                .copied(),
            None => self.by_key.get(key).copied(),
        }
    }

    /// Whether a row of `key` belongs to a scenario before `current`.
    fn earlier(&self, current: usize, account: Option<&str>, key: &str) -> bool {
        self.owner_of(account, key).is_some_and(|o| o < current)
    }

    /// Takes the rows of earlier scenarios' keys out of scenario `current`'s
    /// state (inbox rows, and the results, winners and effects of those
    /// keys) and charges the inbox rows to their owners (see [`Owners`]);
    /// then remembers what `current`'s own read saw. Returns how many rows
    /// were taken.
    pub fn take_late(&mut self, current: usize, state: &mut State) -> usize {
        let mut taken = Vec::new();
        let mut keep = Vec::with_capacity(state.inbox.len());
        for row in std::mem::take(&mut state.inbox) {
            if self.is_aside(row.account.as_deref(), &row.key) {
                continue;
            }
            match self.owner(&row) {
                Some(owner) if owner < current => taken.push((owner, row)),
                _ => keep.push(row),
            }
        }
        state.inbox = keep;
        // What those rows caused (results, winners, effects) is not this
        // scenario's either.
        state.retain_keys(|account, key| {
            !self.earlier(current, account, key) && !self.is_aside(account, key)
        });
        let n = taken.len();
        // This read came after the reset that began `current`: rows within
        // what an owner was judged with re-store what that reset removed.
        self.charge(taken.iter().map(|(o, r)| (*o, r)), Since::Reset);
        let seen = self.judged.entry(current).or_default();
        for r in &state.inbox {
            *seen.entry((r.account.clone(), r.key.clone())).or_default() += 1;
        }
        n
    }

    /// After the last scenario: rows of any scenario's keys beyond what that
    /// scenario was judged with are late rows of it.
    pub fn take_final(&mut self, state: &State) {
        let rows: Vec<(usize, &InboxRow)> = state
            .inbox
            .iter()
            .filter_map(|row| Some((self.owner(row)?, row)))
            .collect();
        // No reset since the last scenario's read: rows within what an
        // owner was judged with may simply still be there.
        self.charge(rows, Since::NoReset);
    }

    /// Charges the rows of one read to their owners: a key's rows beyond
    /// the most that an earlier read held are late rows; the others are
    /// the same rows again (counted as restored when a reset came between).
    fn charge<'a>(&mut self, rows: impl IntoIterator<Item = (usize, &'a InboxRow)>, since: Since) {
        // A key has one owner, so the key alone counts its rows in this read.
        let mut in_read: HashMap<(Option<&str>, &str), usize> = HashMap::new();
        for (owner, row) in rows {
            let n = in_read
                .entry((row.account.as_deref(), &row.key))
                .or_default();
            *n += 1;
            let most = self
                .judged
                .entry(owner)
                .or_default()
                .entry((row.account.clone(), row.key.clone()))
                .or_default();
            if *n > *most {
                *most = *n;
                self.late.entry(owner).or_default().push(row.clone());
            } else if since == Since::Reset {
                *self.restored.entry(owner).or_default() += 1;
            }
        }
    }

    /// The late rows found, per owner scenario index.
    pub fn late(&self) -> &BTreeMap<usize, Vec<InboxRow>> {
        &self.late
    }

    /// Per owner scenario index: rows that a later read held again after
    /// the harness's reset had removed them, so not charged as new rows.
    pub fn restored(&self) -> &BTreeMap<usize, usize> {
        &self.restored
    }
}

/// What came between an owner's own read and a later read of its keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Since {
    /// The reset that began a later scenario: the inbox was emptied.
    Reset,
    /// Nothing: the rows an owner was judged with may still be there.
    NoReset,
}

/// [`Owners::claim`] as a history fold.
pub struct Claim<'a> {
    owners: &'a mut Owners,
    index: usize,
}

impl crate::history::Fold for Claim<'_> {
    fn push(&mut self, _line: u64, event: &Event) {
        self.owners.claim(self.index, std::iter::once(event));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Attempt;

    fn attempt(scenario: &str, key: &str) -> Event {
        Event::Attempt(Attempt::acknowledged(scenario, "acct_a", key))
    }

    fn row(key: &str) -> InboxRow {
        InboxRow {
            key: key.into(),
            account: Some("acct_a".into()),
            processed: true,
            error: None,
        }
    }

    #[test]
    fn the_preflights_rows_and_their_winners_belong_to_no_scenario() {
        let mut o = Owners::default();
        o.set_aside([("acct_a", "tsk_preflight_1")]);
        o.claim(0, &[attempt("first", "tsk_1")]);
        let mut first = State {
            inbox: vec![row("tsk_1"), row("tsk_preflight_1")],
            winners: Some(vec![crate::state::Winner {
                job_key: "hookstorm-preflight-1".into(),
                task_id: "tsk_preflight_1".into(),
                account: Some("acct_a".into()),
            }]),
            ..State::default()
        };
        assert_eq!(o.take_late(0, &mut first), 0);
        assert_eq!(first.inbox, vec![row("tsk_1")]);
        assert_eq!(first.winners, Some(vec![]));
        o.take_final(&State {
            inbox: vec![row("tsk_preflight_1")],
            ..State::default()
        });
        assert!(o.late.is_empty());
    }

    #[test]
    fn a_row_of_an_earlier_scenario_is_late_for_it_not_a_phantom_of_the_next() {
        let mut o = Owners::default();
        o.claim(0, &[attempt("first", "tsk_1")]);
        let mut first = State {
            inbox: vec![],
            ..State::default()
        };
        assert_eq!(o.take_late(0, &mut first), 0);
        o.claim(1, &[attempt("second", "tsk_2")]);
        let mut second = State {
            inbox: vec![row("tsk_2"), row("tsk_1")],
            ..State::default()
        };
        assert_eq!(o.take_late(1, &mut second), 1);
        assert_eq!(second.inbox, vec![row("tsk_2")]);
        assert_eq!(o.late()[&0], vec![row("tsk_1")]);
    }

    #[test]
    fn the_final_read_does_not_count_a_late_row_twice() {
        let mut o = Owners::default();
        o.claim(0, &[attempt("first", "tsk_1")]);
        o.take_late(0, &mut State::default());
        o.claim(1, &[attempt("second", "tsk_2")]);
        let mut second = State {
            inbox: vec![row("tsk_1"), row("tsk_2")],
            ..State::default()
        };
        o.take_late(1, &mut second);
        // No reset: the final read still holds both rows, already judged.
        o.take_final(&State {
            inbox: vec![row("tsk_1"), row("tsk_2")],
            ..State::default()
        });
        assert_eq!(o.late()[&0], vec![row("tsk_1")]);
        assert!(!o.late().contains_key(&1));
    }

    #[test]
    fn the_final_read_finds_what_the_last_scenario_did_not_see() {
        let mut o = Owners::default();
        o.claim(0, &[attempt("only", "tsk_1"), attempt("only", "tsk_2")]);
        let mut s = State {
            inbox: vec![row("tsk_1")],
            ..State::default()
        };
        o.take_late(0, &mut s);
        let end = State {
            inbox: vec![row("tsk_1"), row("tsk_2"), row("tsk_1")],
            ..State::default()
        };
        o.take_final(&end);
        assert_eq!(o.late()[&0], vec![row("tsk_2"), row("tsk_1")]);
    }

    /// A state whose inbox holds these keys' rows, in order.
    fn inbox(keys: &[&str]) -> State {
        State {
            inbox: keys.iter().map(|k| row(k)).collect(),
            ..State::default()
        }
    }

    #[test]
    fn a_key_written_again_after_the_reset_is_restored_not_a_second_row() {
        let mut o = Owners::default();
        o.claim(0, &[attempt("first", "tsk_1")]);
        o.take_late(0, &mut inbox(&["tsk_1"]));
        // The reset emptied the inbox; a queued redelivery wrote tsk_1 again.
        o.claim(1, &[attempt("second", "tsk_2")]);
        let mut second = inbox(&["tsk_2", "tsk_1"]);
        assert_eq!(o.take_late(1, &mut second), 1);
        assert_eq!(second.inbox, vec![row("tsk_2")]);
        assert!(!o.late().contains_key(&0), "{:?}", o.late());
        assert_eq!(o.restored()[&0], 1);
        // Still there at the end: neither late nor restored again.
        o.take_final(&inbox(&["tsk_2", "tsk_1"]));
        assert!(o.late().is_empty());
        assert_eq!(o.restored()[&0], 1);
    }

    #[test]
    fn two_rows_of_a_key_in_one_later_read_are_charged_as_a_duplicate() {
        let mut o = Owners::default();
        o.claim(0, &[attempt("first", "tsk_1")]);
        o.take_late(0, &mut inbox(&["tsk_1"]));
        let mut second = inbox(&["tsk_1", "tsk_1"]);
        assert_eq!(o.take_late(1, &mut second), 2);
        assert_eq!(o.late()[&0], vec![row("tsk_1")]);
        assert_eq!(o.restored()[&0], 1);
    }

    #[test]
    fn a_late_key_seen_again_after_the_next_reset_is_charged_once() {
        let mut o = Owners::default();
        o.claim(0, &[attempt("first", "tsk_1")]);
        o.take_late(0, &mut State::default());
        for later in [1, 2] {
            o.take_late(later, &mut inbox(&["tsk_1"]));
        }
        assert_eq!(o.late()[&0], vec![row("tsk_1")]);
        assert_eq!(o.restored()[&0], 1);
    }
}
