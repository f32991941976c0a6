//! The state as the checker holds it: every row a few interned ids (the
//! aggregator's [`Interner`]), never its strings, plus the indexes the
//! invariants look rows up by.
//!
//! A million-row state parsed into `String`s is more than half a gigabyte;
//! as ids it is about forty bytes a row. The rows arrive through a
//! [`StateSink`] ([`Compact`]), so a state streamed from a file or a probe
//! is never whole in memory; a [`State`] a run already holds is replayed
//! through the same sink, so both paths are graded by the same code.
//!
//! Strings the history never sent (a phantom key, an unknown account) are
//! interned too: they cost a table entry only when the receiver reports
//! them. "Known to the history" is [`Aggregator::lookup`], never the table.

use rustc_hash::FxHashMap;

use super::aggregate::{Aggregator, Interner, KeyAgg, NONE};
use super::partial::Sections;
use crate::state::stream::{Row, Section, SinkError, StateSink};
use crate::state::State;

/// An inbox row.
#[derive(Debug, Clone, Copy)]
pub(crate) struct InRow {
    /// Account id, or [`NONE`] when the row has none.
    pub account: u32,
    pub key: u32,
    pub processed: bool,
    /// `error` is set: the worker marked the row failed.
    pub failed: bool,
    /// Its place in its section of the whole state (0 for the first row).
    pub at: u32,
}

impl InRow {
    /// Processed or marked failed.
    pub fn settled(&self) -> bool {
        self.processed || self.failed
    }
}

/// A results row: only what I2 reads.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ResRow {
    pub account: u32,
    pub task: u32,
    /// Its place in its section of the whole state (0 for the first row).
    pub at: u32,
}

/// A winners row.
#[derive(Debug, Clone, Copy)]
pub(crate) struct WinRow {
    pub account: u32,
    pub job: u32,
    pub task: u32,
    /// Its place in its section of the whole state (0 for the first row).
    pub at: u32,
}

/// An effects row.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EffRow {
    pub account: u32,
    pub key: u32,
    pub count: u64,
    /// Its place in its section of the whole state (0 for the first row).
    pub at: u32,
}

/// A resources row.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SeqRow {
    pub account: u32,
    pub resource: u32,
    pub sequence: u64,
}

/// Every section as ids; `None`: the section was not reported.
#[derive(Debug, Default)]
pub(crate) struct Rows {
    pub inbox: Vec<InRow>,
    pub results: Option<Vec<ResRow>>,
    pub winners: Option<Vec<WinRow>>,
    pub effects: Option<Vec<EffRow>>,
    pub resources: Option<Vec<SeqRow>>,
}

/// Builds [`Rows`] from a stream of state rows, interning as it goes.
pub(crate) struct Compact<'a> {
    strings: &'a mut Interner,
    pub rows: Rows,
    /// Rows seen so far per section, the next row's place ([`Section`] order).
    seen: [u32; 5],
}

impl<'a> Compact<'a> {
    pub fn new(strings: &'a mut Interner) -> Self {
        Compact {
            strings,
            rows: Rows::default(),
            seen: [0; 5],
        }
    }

    /// The rows of a whole state.
    pub fn of(strings: &'a mut Interner, state: &State) -> Rows {
        let mut c = Compact::new(strings);
        state
            .replay(&mut c)
            .expect("interning never fails and a State is well formed");
        c.rows
    }
}

impl StateSink for Compact<'_> {
    fn section(&mut self, s: Section) -> Result<(), SinkError> {
        let r = &mut self.rows;
        match s {
            Section::Inbox => {}
            Section::Results => r.results = Some(Vec::new()),
            Section::Winners => r.winners = Some(Vec::new()),
            Section::Effects => r.effects = Some(Vec::new()),
            Section::Resources => r.resources = Some(Vec::new()),
        }
        Ok(())
    }

    fn row(&mut self, row: Row) -> Result<(), SinkError> {
        let seen = &mut self.seen[row.section() as usize];
        let at = *seen;
        *seen = seen.saturating_add(1);
        self.rows.push(self.strings, RowRef::of(&row), at);
        Ok(())
    }
}

impl Rows {
    /// Which optional sections were reported.
    pub fn sections(&self) -> Sections {
        Sections {
            results: self.results.is_some(),
            winners: self.winners.is_some(),
            effects: self.effects.is_some(),
            resources: self.resources.is_some(),
        }
    }

    /// Marks `s`'s sections reported, rows or not (a partition of a state
    /// that has none of a reported section's rows).
    pub fn declare(&mut self, s: Sections) {
        if s.results {
            self.results.get_or_insert_with(Vec::new);
        }
        if s.winners {
            self.winners.get_or_insert_with(Vec::new);
        }
        if s.effects {
            self.effects.get_or_insert_with(Vec::new);
        }
        if s.resources {
            self.resources.get_or_insert_with(Vec::new);
        }
    }

    /// Adds a borrowed row whose place in its section of the whole state
    /// is `at` (a row of one partition of a state), interning into `strings`.
    pub fn push(&mut self, strings: &mut Interner, row: RowRef, at: u32) {
        let account = |s: &mut Interner, a: Option<&str>| a.map_or(NONE, |a| s.intern(a));
        let s = strings;
        match row {
            RowRef::Inbox {
                account: a,
                key,
                processed,
                failed,
            } => {
                let row = InRow {
                    account: account(s, a),
                    key: s.intern(key),
                    processed,
                    failed,
                    at,
                };
                self.inbox.push(row);
            }
            RowRef::Results { account: a, task } => {
                let row = ResRow {
                    account: account(s, a),
                    task: s.intern(task),
                    at,
                };
                self.results.get_or_insert_with(Vec::new).push(row);
            }
            RowRef::Winners {
                account: a,
                job,
                task,
            } => {
                let row = WinRow {
                    account: account(s, a),
                    job: s.intern(job),
                    task: s.intern(task),
                    at,
                };
                self.winners.get_or_insert_with(Vec::new).push(row);
            }
            RowRef::Effects {
                account: a,
                key,
                count,
            } => {
                let row = EffRow {
                    account: account(s, a),
                    key: s.intern(key),
                    count,
                    at,
                };
                self.effects.get_or_insert_with(Vec::new).push(row);
            }
            RowRef::Resources {
                account: a,
                resource,
                sequence,
            } => {
                let row = SeqRow {
                    account: account(s, a),
                    resource: s.intern(resource),
                    sequence,
                };
                self.resources.get_or_insert_with(Vec::new).push(row);
            }
        }
    }
}

/// A state row as the checker reads it, borrowed: only the fields an
/// invariant looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RowRef<'a> {
    /// An inbox row.
    Inbox {
        account: Option<&'a str>,
        key: &'a str,
        processed: bool,
        /// `error` is set.
        failed: bool,
    },
    /// A results row.
    Results {
        account: Option<&'a str>,
        task: &'a str,
    },
    /// A winners row.
    Winners {
        account: Option<&'a str>,
        job: &'a str,
        task: &'a str,
    },
    /// An effects row.
    Effects {
        account: Option<&'a str>,
        key: &'a str,
        count: u64,
    },
    /// A resources row.
    Resources {
        account: Option<&'a str>,
        resource: &'a str,
        sequence: u64,
    },
}

impl<'a> RowRef<'a> {
    /// What the checker reads of `row`.
    pub fn of(row: &'a Row) -> Self {
        match row {
            Row::Inbox(r) => RowRef::Inbox {
                account: r.account.as_deref(),
                key: &r.key,
                processed: r.processed,
                failed: r.error.is_some(),
            },
            Row::Results(r) => RowRef::Results {
                account: r.account.as_deref(),
                task: &r.task_id,
            },
            Row::Winners(r) => RowRef::Winners {
                account: r.account.as_deref(),
                job: &r.job_key,
                task: &r.task_id,
            },
            Row::Effects(r) => RowRef::Effects {
                account: r.account.as_deref(),
                key: &r.key,
                count: r.count,
            },
            Row::Resources(r) => RowRef::Resources {
                account: r.account.as_deref(),
                resource: &r.resource,
                sequence: r.sequence,
            },
        }
    }

    /// The section it belongs to.
    pub fn section(&self) -> Section {
        match self {
            RowRef::Inbox { .. } => Section::Inbox,
            RowRef::Results { .. } => Section::Results,
            RowRef::Winners { .. } => Section::Winners,
            RowRef::Effects { .. } => Section::Effects,
            RowRef::Resources { .. } => Section::Resources,
        }
    }
}

/// The rows, indexed by the aggregator's records.
pub(crate) struct StateView<'a> {
    agg: &'a Aggregator,
    pub rows: Rows,
    /// The first inbox row of each record (by index into `agg.keys`), or [`NONE`].
    first: Vec<u32>,
    /// The next inbox row of the same record (or of the same key, for
    /// rows without an account), or [`NONE`].
    next: Vec<u32>,
    /// key id -> first inbox row without an account.
    anonymous: FxHashMap<u32, u32>,
    /// key id -> records of every account, built only when some row has no account.
    pub by_key: FxHashMap<u32, Vec<u32>>,
}

/// (key, account) of every inbox row, sorted: "is this key stored" by key
/// alone, which only the effects check asks ([`StateView::by_key_alone`]).
pub(crate) struct InboxByKey(Vec<(u32, u32)>);

impl InboxByKey {
    /// The accounts of the inbox rows holding `key` ([`NONE`]: a row without one).
    pub fn accounts(&self, key: u32) -> impl Iterator<Item = u32> + '_ {
        let from = self.0.partition_point(|&(k, _)| k < key);
        self.0[from..]
            .iter()
            .take_while(move |&&(k, _)| k == key)
            .map(|&(_, a)| a)
    }
}

impl<'a> StateView<'a> {
    pub fn new(agg: &'a Aggregator, mut rows: Rows) -> Self {
        let mut first = vec![NONE; agg.keys.len()];
        let mut last = vec![NONE; agg.keys.len()];
        let mut next = vec![NONE; rows.inbox.len()];
        let mut anonymous: FxHashMap<u32, u32> = FxHashMap::default();
        let mut anonymous_last: FxHashMap<u32, u32> = FxHashMap::default();
        for (n, row) in rows.inbox.iter().enumerate() {
            let n = n as u32;
            let (head, tail) = if row.account == NONE {
                (
                    anonymous.entry(row.key).or_insert(NONE),
                    anonymous_last.entry(row.key).or_insert(NONE),
                )
            } else {
                match agg.slot_of(row.account, row.key) {
                    Some(i) => (&mut first[i], &mut last[i]),
                    None => continue, // a key the history never sent
                }
            };
            if *head == NONE {
                *head = n;
            } else {
                next[*tail as usize] = n;
            }
            *tail = n;
        }
        drop(last);
        drop(anonymous_last);
        let mut by_key: FxHashMap<u32, Vec<u32>> = FxHashMap::default();
        if !anonymous.is_empty() {
            for (i, k) in agg.keys.iter().enumerate() {
                by_key.entry(k.key).or_default().push(i as u32);
            }
        }
        if let Some(e) = rows.effects.as_mut() {
            e.sort_unstable_by_key(|e| (e.key, e.account));
        }
        if let Some(r) = rows.resources.as_mut() {
            r.sort_unstable_by_key(|r| (r.resource, r.account));
        }
        StateView {
            agg,
            rows,
            first,
            next,
            anonymous,
            by_key,
        }
    }

    fn chain(&self, head: u32) -> impl Iterator<Item = u32> + '_ {
        std::iter::successors((head != NONE).then_some(head), |&n| {
            let m = self.next[n as usize];
            (m != NONE).then_some(m)
        })
    }

    /// Inbox rows that hold this record's key (its account, or rows without account).
    pub fn rows(&self, k: &KeyAgg) -> impl Iterator<Item = u32> + '_ {
        let exact = self
            .agg
            .slot_of(k.account, k.key)
            .map_or(NONE, |i| self.first[i]);
        let any = self.anonymous.get(&k.key).copied().unwrap_or(NONE);
        self.chain(exact).chain(self.chain(any))
    }

    /// Whether the record's key is in the inbox.
    pub fn stored(&self, k: &KeyAgg) -> bool {
        self.rows(k).next().is_some()
    }

    /// The inbox by key alone: a sorted copy of every row's (key, account),
    /// 8 bytes a row, made by the one check that needs it and dropped with it.
    pub fn by_key_alone(&self) -> InboxByKey {
        let mut sorted: Vec<(u32, u32)> =
            self.rows.inbox.iter().map(|r| (r.key, r.account)).collect();
        sorted.sort_unstable();
        InboxByKey(sorted)
    }

    /// The effects rows of `key` (empty when effects are not reported).
    pub fn effects_of(&self, key: u32) -> &[EffRow] {
        let Some(e) = &self.rows.effects else {
            return &[];
        };
        let from = e.partition_point(|r| r.key < key);
        let to = from + e[from..].partition_point(|r| r.key == key);
        &e[from..to]
    }
}

/// Whether a reported account matches a record's (a row without one matches any).
pub(crate) fn account_matches(reported: u32, account: u32) -> bool {
    reported == NONE || reported == account
}

/// An account id as evidence shows it.
pub(crate) fn account_name(agg: &Aggregator, account: u32) -> Option<String> {
    (account != NONE).then(|| agg.strings.name(account).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interner_gives_each_string_one_id_and_its_name_back() {
        let mut t = Interner::default();
        let names: Vec<String> = (0..50_000).map(|i| format!("tsk_{i:x}")).collect();
        let ids: Vec<u32> = names.iter().map(|n| t.intern(n)).collect();
        assert_eq!(ids, (0..50_000).collect::<Vec<u32>>());
        for (n, &id) in names.iter().zip(&ids) {
            assert_eq!(t.intern(n), id, "{n} again");
            assert_eq!(t.name(id), n);
        }
        assert_eq!(t.intern(""), 50_000);
        assert_eq!(t.name(50_000), "");
        assert_eq!(t.intern("tsk_0"), 0);
        assert_eq!(t.name(NONE), "");
    }

    #[test]
    fn rows_of_a_state_are_ids_and_unknown_strings_are_not_history_keys() {
        let mut agg = Aggregator::new(std::time::Duration::from_secs(1));
        let a = agg.strings.intern("acct_a");
        let state: State = serde_json::from_str(
            r#"{"inbox": [{"key": "t1", "account": "acct_a", "processed": true},
                          {"key": "zz", "error": "x"}],
                "effects": []}"#,
        )
        .unwrap();
        let rows = Compact::of(&mut agg.strings, &state);
        assert_eq!(rows.inbox[0].account, a);
        assert_eq!(agg.strings.name(rows.inbox[0].key), "t1");
        assert!(rows.inbox[1].account == NONE && rows.inbox[1].failed);
        assert!(rows.results.is_none() && rows.effects.as_ref().is_some_and(Vec::is_empty));
        // Interned, yet never sent: no record.
        assert!(agg.lookup(a, rows.inbox[0].key).is_none());
    }
}
