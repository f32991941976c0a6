//! The two grading steps of a check in partitions.
//!
//! [`keys`]: one partition of keys at a time, its events folded into
//! records and its state rows read next to them, every invariant graded
//! but I5 and I6, whose per-key records (and the winners rows, with what
//! their tasks are) go to the join partition of their job or resource.
//! [`joins`]: one join partition at a time, I5 and I6 graded over those
//! records. Each holds in memory only its own partition.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use rustc_hash::FxHashMap;

use crate::invariant::InvariantId;
use crate::limits::budget;

use super::codec::{JoinRecord, Reader, Record};
use super::route::Route;
use super::split::{events_file, rows_file, Writers};
use crate::check::aggregate::{Aggregator, Interner, NONE};
use crate::check::order::{self, Cand, Seq, TaskInfo};
use crate::check::partial::{Findings, Partial, Sections};
use crate::check::verdict::HistorySource;
use crate::check::verdict::{CheckError, CheckOptions};
use crate::check::view::{RowRef, Rows, SeqRow, StateView, WinRow};

/// What a check in partitions found, per scenario, before it is worded.
pub(crate) struct Spilled {
    /// Per scenario (I5 and I6 included unless this is one share of N).
    pub findings: BTreeMap<String, Findings>,
    /// Attempt and provider lines read (of every share).
    pub events: u64,
    /// The histories and the line numbers they got.
    pub sources: Vec<HistorySource>,
    /// What the reader had to work around.
    pub warnings: Vec<String>,
    /// The folder of the records for I5 and I6 a share hands on, kept
    /// until it is exported.
    pub joins: Option<tempfile::TempDir>,
}

/// One part of a history as the split left it: where its files are, the
/// lines before it, and its scenarios' indexes in the whole check.
pub(super) struct PartRead {
    pub file: usize,
    pub part: usize,
    pub base: u64,
    /// The part's scenario index → the check's.
    pub scenarios: Vec<u16>,
}

fn spill_error(e: std::io::Error) -> CheckError {
    CheckError::Spill { source: e }
}

fn open(path: &Path) -> Result<Option<Reader>, CheckError> {
    match Reader::open(path) {
        Ok(r) => Ok(Some(r)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(spill_error(e)),
    }
}

fn damaged(what: &str) -> CheckError {
    spill_error(std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!("a spilled {what} file holds a record of another kind"),
    ))
}

/// What the key step needs besides the partition's files.
pub(super) struct KeyStep<'a> {
    pub dir: &'a Path,
    pub parts: &'a [PartRead],
    /// Each scenario's state sections, or why it has none.
    pub states: &'a [Result<Sections, String>],
    pub answer_limit: Duration,
    pub opts: &'a CheckOptions,
    pub ids: &'a [InvariantId],
    /// Where the records of I5 and I6 go, and by which route.
    pub joins: &'a mut Writers,
    pub join_route: Route,
}

/// Grades key partition `p`: what each of its scenarios found.
pub(super) fn keys(step: &mut KeyStep<'_>, p: u32) -> Result<BTreeMap<u16, Findings>, CheckError> {
    let mut folds: BTreeMap<u16, Aggregator> = BTreeMap::new();
    for part in step.parts {
        let Some(mut r) = open(&events_file(step.dir, part.file, part.part, p))? else {
            continue;
        };
        while let Some((s, record)) = r.next().map_err(spill_error)? {
            let g = part
                .scenarios
                .get(usize::from(s))
                .copied()
                .ok_or_else(|| damaged("events"))?;
            let agg = folds
                .entry(g)
                .or_insert_with(|| Aggregator::new(step.answer_limit));
            match record {
                Record::Attempt(line, view) => agg.key_attempt(part.base + line, &view),
                Record::Provider(line, view) => agg.provider(part.base + line, &view),
                Record::Delivery(h) => {
                    agg.deliveries.insert(h);
                }
                Record::Row(..) | Record::Join(_) => return Err(damaged("events")),
            }
        }
    }
    let mut held = Held::default();
    if let Some(mut r) = open(&rows_file(step.dir, p))? {
        while let Some((g, record)) = r.next().map_err(spill_error)? {
            let Record::Row(at, row) = record else {
                return Err(damaged("rows"));
            };
            let agg = folds
                .entry(g)
                .or_insert_with(|| Aggregator::new(step.answer_limit));
            if let Some(rows) = held.room(g, agg.deliveries.len()) {
                rows.push(&mut agg.strings, row, at);
            }
        }
    }
    let mut out = BTreeMap::new();
    for (g, agg) in folds {
        let state = step
            .states
            .get(usize::from(g))
            .ok_or_else(|| damaged("events"))?;
        let state = match held.over.get(&g) {
            Some(reason) => Err(reason),
            None => state.as_ref(),
        };
        let f = match state {
            Err(reason) => agg.findings(Err(reason), step.opts, step.ids),
            Ok(sections) => {
                let mut r = held.rows.remove(&g).unwrap_or_default();
                r.declare(*sections);
                let view = StateView::new(&agg, r);
                let f = agg.findings(Ok(&view), step.opts, step.ids);
                hand_on(step, g, &agg, &view).map_err(spill_error)?;
                f
            }
        };
        out.insert(g, f);
    }
    Ok(out)
}

/// The state rows one partition of keys holds per scenario, within the
/// budget of a state graded whole: [`budget::state_held`] of the
/// partition's deliveries, at [`budget::CHECKED_ROW`] a row. A scenario
/// whose rows pass it is graded without its state (unknown, the budget
/// named), its rows dropped: a state of millions of rows of one key
/// costs the check the budget, not its size.
#[derive(Default)]
struct Held {
    rows: BTreeMap<u16, Rows>,
    count: BTreeMap<u16, usize>,
    over: BTreeMap<u16, String>,
}

impl Held {
    /// Where scenario `g`'s next row goes (`deliveries` of its keys are
    /// in this partition), or `None` once its rows are past the budget.
    fn room(&mut self, g: u16, deliveries: usize) -> Option<&mut Rows> {
        if self.over.contains_key(&g) {
            return None;
        }
        let n = self.count.entry(g).or_default();
        *n += 1;
        let cap = budget::state_held(deliveries) / budget::CHECKED_ROW;
        if *n > cap {
            self.rows.remove(&g);
            self.over.insert(
                g,
                format!(
                    "the state holds more than {cap} rows for the keys of {deliveries} deliveries: \
                     past the budget of a state graded whole ({} at {} bytes a row as the \
                     checker keeps it, see docs/budgets.md), its rows were not kept",
                    budget::show(budget::state_held(deliveries)),
                    budget::CHECKED_ROW
                ),
            );
            return None;
        }
        Some(self.rows.entry(g).or_default())
    }
}

/// Writes the records I5 and I6 read of a partition's keys, and its
/// winners rows with what their tasks are, to their join partitions.
fn hand_on(
    step: &mut KeyStep<'_>,
    g: u16,
    agg: &Aggregator,
    view: &StateView,
) -> std::io::Result<()> {
    let (i5, i6) = order::wanted(step.ids, view.rows.sections());
    if !(i5 || i6) {
        return Ok(());
    }
    let (cands, seqs) = order::records(agg, view);
    let name = |id: u32| agg.strings.name(id);
    let route = step.join_route;
    let to = |n: &str| route.name(n).unwrap_or(0);
    if i5 {
        for &cand in &cands {
            let r = JoinRecord::Cand {
                account: name(cand.account),
                job: name(cand.job),
                key: name(cand.key),
                cand,
            };
            step.joins.to(to(name(cand.job)))?.join(g, &r)?;
        }
        let winners = view.rows.winners.as_deref().unwrap_or(&[]);
        let mut accounts: Option<Vec<u32>> = None;
        for w in winners {
            let info = |a: u32| agg.lookup(a, w.task).map(|k| (name(a), TaskInfo::of(k)));
            let infos: Vec<(&str, TaskInfo)> = if w.account != NONE {
                info(w.account).into_iter().collect()
            } else {
                // A row without an account stands for the task in every
                // account that has it.
                let all = accounts.get_or_insert_with(|| {
                    let mut a: Vec<u32> = agg.keys.iter().map(|k| k.account).collect();
                    a.sort_unstable();
                    a.dedup();
                    a
                });
                all.iter().filter_map(|&a| info(a)).collect()
            };
            let r = JoinRecord::Win {
                at: w.at,
                account: (w.account != NONE).then(|| name(w.account)),
                job: name(w.job),
                task: name(w.task),
                infos,
            };
            step.joins.to(to(name(w.job)))?.join(g, &r)?;
        }
    }
    if i6 {
        for &seq in &seqs {
            let r = JoinRecord::Seq {
                account: name(seq.account),
                resource: name(seq.resource),
                seq,
            };
            step.joins.to(to(name(seq.resource)))?.join(g, &r)?;
        }
    }
    Ok(())
}

/// One scenario's records in a join partition, with ids of its own.
#[derive(Default)]
struct JoinSet {
    strings: Interner,
    cands: Vec<Cand>,
    winners: Vec<WinRow>,
    /// (account, task) → what the task is.
    tasks: FxHashMap<(u32, u32), TaskInfo>,
    seqs: Vec<Seq>,
    resources: Vec<SeqRow>,
}

/// Grades I5 and I6 over one join partition (the files at `paths`): the
/// partial of each per scenario.
pub(super) fn joins(
    paths: &[std::path::PathBuf],
    opts: &CheckOptions,
    ids: &[InvariantId],
) -> Result<BTreeMap<u16, Vec<(InvariantId, Partial)>>, CheckError> {
    let mut sets: BTreeMap<u16, JoinSet> = BTreeMap::new();
    for path in paths {
        let Some(mut r) = open(path)? else {
            continue;
        };
        while let Some((g, record)) = r.next().map_err(spill_error)? {
            let set = sets.entry(g).or_default();
            let s = &mut set.strings;
            let account = |s: &mut Interner, a: Option<&str>| a.map_or(NONE, |a| s.intern(a));
            match record {
                Record::Row(
                    _,
                    RowRef::Resources {
                        account: a,
                        resource,
                        sequence,
                    },
                ) => {
                    let row = SeqRow {
                        account: account(s, a),
                        resource: s.intern(resource),
                        sequence,
                    };
                    set.resources.push(row);
                }
                Record::Join(JoinRecord::Cand {
                    account: a,
                    job,
                    key,
                    cand,
                }) => set.cands.push(Cand {
                    account: s.intern(a),
                    job: s.intern(job),
                    key: s.intern(key),
                    ..cand
                }),
                Record::Join(JoinRecord::Win {
                    at,
                    account: a,
                    job,
                    task,
                    infos,
                }) => {
                    let row = WinRow {
                        account: account(s, a),
                        job: s.intern(job),
                        task: s.intern(task),
                        at,
                    };
                    for (a, info) in infos {
                        let a = s.intern(a);
                        set.tasks.insert((a, row.task), info);
                    }
                    set.winners.push(row);
                }
                Record::Join(JoinRecord::Seq {
                    account: a,
                    resource,
                    seq,
                }) => set.seqs.push(Seq {
                    account: s.intern(a),
                    resource: s.intern(resource),
                    ..seq
                }),
                _ => return Err(damaged("join")),
            }
        }
    }
    let mut out = BTreeMap::new();
    for (g, mut set) in sets {
        let mut partials = Vec::new();
        if ids.contains(&InvariantId::I5) {
            // Winners rows in their section's order, as the state had them.
            set.winners.sort_unstable_by_key(|w| w.at);
            let tasks = &set.tasks;
            let lookup = |a: u32, t: u32| tasks.get(&(a, t)).copied();
            let cands = std::mem::take(&mut set.cands);
            partials.push((
                InvariantId::I5,
                order::correct_winner(cands, &set.winners, &set.strings, lookup, opts),
            ));
        }
        if ids.contains(&InvariantId::I6) {
            set.resources
                .sort_unstable_by_key(|r| (r.resource, r.account));
            let seqs = std::mem::take(&mut set.seqs);
            partials.push((
                InvariantId::I6,
                order::no_stale_overwrite(seqs, &set.resources, &set.strings),
            ));
        }
        out.insert(g, partials);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use crate::check::{check_partitioned, CheckOptions, Partitioning, Verdict};
    use crate::limits::budget;

    /// A state of more rows of one key than a check holds for a one-key
    /// history (its budget's floor at 32 bytes a row) is graded without
    /// them, naming the budget: unknown, never a buffer of every row.
    #[test]
    fn rows_past_the_held_budget_leave_a_partition_ungraded_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let history = dir.path().join("history.jsonl");
        std::fs::write(
            &history,
            concat!(
                r#"{"type":"attempt","scenario":"s","delivery":"whd_1","key":"tsk_1","account":"acct_a","attempt":1,"sent_at":"2026-11-30T18:09:59.739Z","status":204,"outcome":"ok","intent":"genuine"}"#,
                "\n"
            ),
        )
        .unwrap();
        let state = dir.path().join("state.json");
        let rows = budget::STATE_HELD / budget::CHECKED_ROW + 10;
        let mut w = std::io::BufWriter::new(std::fs::File::create(&state).unwrap());
        w.write_all(br#"{"inbox":[{"key":"tsk_1","processed":true}"#)
            .unwrap();
        for _ in 0..rows {
            w.write_all(br#",{"key":"tsk_1"}"#).unwrap();
        }
        w.write_all(b"]}").unwrap();
        drop(w);
        let how = Partitioning {
            partitions: Some(2),
            ..Partitioning::default()
        };
        let m =
            check_partitioned(&[history], &state, None, &CheckOptions::default(), &how).unwrap();
        let results = &m.check.checks[0].results;
        assert!(
            results.iter().all(|r| r.verdict != Verdict::Fail),
            "{results:#?}"
        );
        let named = results.iter().any(|r| {
            r.verdict == Verdict::Unknown
                && r.summary
                    .contains("past the budget of a state graded whole")
        });
        assert!(named, "{results:#?}");
    }
}
