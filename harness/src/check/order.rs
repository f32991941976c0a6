//! The ordering invariants: I5 correct-winner and I6 no-stale-overwrite.
//! Both recompute, from the history, what a receiver that ignores arrival
//! order must report, and compare it with the `winners` and `resources`
//! sections.
//!
//! I5's rule (docs/invariants.md): per (account, job), among the genuine tasks
//! the receiver knows (stored, or acknowledged), the most recently created
//! COMPLETED task wins; a tie on `createdAt` goes to the larger task id
//! (string order); no COMPLETED task means no winner. Poison tasks (whose
//! `createdAt` is not a date) never take part.
//!
//! Unlike the other invariants, these two group keys by what they are
//! about (a job, a resource), not by the key: they read per-key records
//! ([`Cand`], [`Seq`]) that the fold makes once it knows what is stored,
//! so a check in partitions can send each record to the partition of its
//! job or resource (`check::spill`). A job's finding ranks by the first
//! history line of its candidates, a resource's by that of its stored
//! keys, an unclaimed winners row by its place in its section.

use super::aggregate::{flag, Aggregator, Interner, KeyAgg, KEY_LINES, NONE, NO_TIME};
use super::found::Found;
use super::partial::{Partial, Sections};
use super::store::all_rows;
use super::store::result;
use super::verdict::{CheckOptions, Evidence, InvariantResult, Verdict};
use super::view::{account_matches, SeqRow, StateView, WinRow};
use crate::invariant::InvariantId;
use crate::text::words::count;

/// A key's evidence lines ([`KeyAgg::evidence_lines`]) in a fixed space.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct EvLines {
    /// The lines; the first `n` count.
    pub lines: [u32; KEY_LINES],
    /// How many.
    pub n: u8,
    /// How many relevant lines the key had in all ([`KeyAgg::lines_seen`]).
    pub seen: u16,
}

impl EvLines {
    /// The evidence lines of `k`.
    pub fn of(k: &KeyAgg) -> Self {
        let seen = u16::try_from(k.lines_seen()).unwrap_or(u16::MAX);
        if k.seen == 0 {
            let mut lines = [0; KEY_LINES];
            lines[0] = k.first_line;
            EvLines { lines, n: 1, seen }
        } else {
            EvLines {
                lines: k.lines,
                n: k.kept() as u8,
                seen,
            }
        }
    }

    /// How many relevant lines there were in all.
    pub fn total(self) -> usize {
        usize::from(self.seen).max(usize::from(self.n))
    }

    /// The lines as evidence lists them.
    pub fn to_vec(self) -> Vec<u64> {
        self.lines[..usize::from(self.n)]
            .iter()
            .map(|&l| u64::from(l))
            .collect()
    }
}

/// A task that takes part in its job's race (I5): genuine or known to the
/// provider, not poison, and acknowledged or stored.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cand {
    pub account: u32,
    pub job: u32,
    pub key: u32,
    /// Its creation time ([`NO_TIME`] when unknown).
    pub created: i64,
    /// COMPLETED, with a creation time.
    pub completed: bool,
    pub first_line: u32,
    pub lines: EvLines,
}

/// What a task reported as a winner is in the history, for the finding's
/// words and lines.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TaskInfo {
    /// The task FAILED.
    pub failed: bool,
    /// Its creation time ([`NO_TIME`] when unknown).
    pub created: i64,
    pub lines: EvLines,
}

impl TaskInfo {
    /// The record's facts.
    pub fn of(k: &KeyAgg) -> Self {
        TaskInfo {
            failed: k.has(flag::FAILED),
            created: k.created,
            lines: EvLines::of(k),
        }
    }
}

/// A stored genuine key of a sequenced resource (I6).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Seq {
    pub account: u32,
    pub resource: u32,
    pub sequence: u64,
    pub first_line: u32,
    pub lines: EvLines,
}

/// The records of a fold that I5 and I6 read, now that `view` says what is stored.
pub(crate) fn records(agg: &Aggregator, view: &StateView) -> (Vec<Cand>, Vec<Seq>) {
    let (mut cands, mut seqs) = (Vec::new(), Vec::new());
    for k in &agg.keys {
        let known = || k.has(flag::ACKED) || view.stored(k);
        if k.job != NONE && k.has(flag::REAL) && !k.has(flag::POISON) && known() {
            cands.push(Cand {
                account: k.account,
                job: k.job,
                key: k.key,
                created: k.created,
                completed: k.has(flag::COMPLETED) && k.created != NO_TIME,
                first_line: k.first_line,
                lines: EvLines::of(k),
            });
        }
        if let Some(sequence) = k.sequence() {
            if k.has(flag::GENUINE) && view.stored(k) {
                seqs.push(Seq {
                    account: k.account,
                    resource: k.resource,
                    sequence,
                    first_line: k.first_line,
                    lines: EvLines::of(k),
                });
            }
        }
    }
    (cands, seqs)
}

/// I5: the reported winner per job is the most recent COMPLETED task.
/// `lookup` says what a task of an account is in the history. Counts: jobs.
pub(crate) fn correct_winner(
    mut cands: Vec<Cand>,
    winners: &[WinRow],
    strings: &Interner,
    lookup: impl Fn(u32, u32) -> Option<TaskInfo>,
    opts: &CheckOptions,
) -> Partial {
    let words = &opts.vocabulary;
    let object = &words.object;
    // One run of candidates per (account, job).
    cands.sort_unstable_by_key(|c| (c.account, c.job, c.first_line));
    // Winner rows by job: sorted indices, found by binary search.
    let mut by_job: Vec<u32> = (0..winners.len() as u32).collect();
    by_job.sort_unstable_by_key(|&n| (winners[n as usize].job, winners[n as usize].at));
    let of_job = |job: u32| {
        let from = by_job.partition_point(|&n| winners[n as usize].job < job);
        let to = from + by_job[from..].partition_point(|&n| winners[n as usize].job == job);
        by_job[from..to].iter().map(|&n| n as usize)
    };
    let task_lines = |task: u32, account: u32| -> Vec<u64> {
        lookup(account, task)
            .map(|t| t.lines.to_vec())
            .unwrap_or_default()
    };
    let mut ev = Found::default();
    let mut used = vec![false; winners.len()];
    let mut jobs = 0u64;
    for run in cands.chunk_by(|x, y| (x.account, x.job) == (y.account, y.job)) {
        jobs += 1;
        let (account, job) = (run[0].account, run[0].job);
        let rank = (0, u64::from(run[0].first_line));
        // The most recent COMPLETED task of the job.
        let best = run
            .iter()
            .filter(|c| c.completed)
            .max_by(|a, b| (a.created, strings.name(a.key)).cmp(&(b.created, strings.name(b.key))));
        let job_name = strings.name(job);
        let reported: Vec<&WinRow> = of_job(job)
            .filter(|&n| account_matches(winners[n].account, account))
            .map(|n| {
                used[n] = true;
                &winners[n]
            })
            .collect();
        let expected = best.map(|b| strings.name(b.key));
        let names: Vec<&str> = reported.iter().map(|w| strings.name(w.task)).collect();
        let what = match (expected, names.as_slice()) {
            (Some(e), [r]) if *r == e => continue,
            (None, []) => continue,
            (Some(e), []) => format!("{object} {job_name}: expected winner {e}, none reported"),
            (None, rs) => format!(
                "{object} {job_name}: no {} {}, yet {} reported as winner",
                words.completed,
                words.event,
                rs.join(", ")
            ),
            (Some(e), [r]) => {
                let why = lookup(account, reported[0].task)
                    .map(|t| {
                        if t.failed {
                            format!(" (a {} {})", words.failed, words.event)
                        } else if t.created < best.map(|b| b.created).unwrap_or_default() {
                            format!(" (an older {})", words.event)
                        } else {
                            String::new()
                        }
                    })
                    .unwrap_or_else(|| format!(" (a {} this {object} never had)", words.event));
                format!("{object} {job_name}: expected winner {e}, reported {r}{why}")
            }
            (Some(e), rs) => format!(
                "{object} {job_name}: expected winner {e}, {} winners reported: {}",
                rs.len(),
                rs.join(", ")
            ),
        };
        ev.push(rank, || {
            let mut lines: Vec<u64> = best.map(|b| b.lines.to_vec()).unwrap_or_default();
            for w in &reported {
                lines.extend(task_lines(w.task, account));
            }
            lines.sort_unstable();
            lines.dedup();
            Evidence::new(
                job_name,
                Some(strings.name(account).to_string()),
                what,
                lines,
            )
        });
    }
    for (w, _) in winners.iter().zip(&used).filter(|(_, u)| !**u) {
        ev.push((1, u64::from(w.at)), || {
            Evidence::new(
                strings.name(w.job),
                (w.account != NONE).then(|| strings.name(w.account).to_string()),
                format!(
                    "winner {} reported for {object} key {:?}, which no stored {} of this run has{}",
                    strings.name(w.task),
                    strings.name(w.job),
                    words.event,
                    if words.is_answerline() {
                        " (a job key with its -rN suffix kept?)"
                    } else {
                        ""
                    }
                ),
                Vec::new(),
            )
        });
    }
    Partial {
        n: [jobs, 0, 0],
        found: ev,
        ..Partial::default()
    }
}

/// I5 in words.
pub(crate) fn correct_winner_result(
    p: &Partial,
    sections: Sections,
    opts: &CheckOptions,
) -> InvariantResult {
    if !sections.winners {
        return InvariantResult::new(
            InvariantId::I5,
            Verdict::Unknown,
            "not checked: the state has no winners section",
        );
    }
    let words = &opts.vocabulary;
    let [jobs, _, _] = p.n;
    let total = p.found.total;
    result(
        InvariantId::I5,
        p,
        Verdict::Fail,
        format!(
            "the right winner for {} ({})",
            all_rows(jobs, &words.object),
            words.winner_rule()
        ),
        format!(
            "{} among {}",
            count(total, "wrong winner"),
            count(jobs, &words.object)
        ),
    )
}

/// I6: the final sequence per resource is the highest stored one.
/// `resources` are the section's rows sorted by resource. Counts: resources.
pub(crate) fn no_stale_overwrite(
    mut seqs: Vec<Seq>,
    resources: &[SeqRow],
    strings: &Interner,
) -> Partial {
    seqs.sort_unstable_by_key(|s| (s.account, s.resource, s.first_line));
    let of_resource = |resource: u32| {
        let from = resources.partition_point(|x| x.resource < resource);
        let to = from + resources[from..].partition_point(|x| x.resource == resource);
        &resources[from..to]
    };
    let mut ev = Found::default();
    let mut n = 0u64;
    for run in seqs.chunk_by(|x, y| (x.account, x.resource) == (y.account, y.resource)) {
        n += 1;
        let (account, resource) = (run[0].account, run[0].resource);
        // The highest sequence; of equals, the key seen first.
        let top = run.iter().fold(
            &run[0],
            |top, s| if s.sequence > top.sequence { s } else { top },
        );
        let max = top.sequence;
        let name = strings.name(resource);
        let finals: Vec<u64> = of_resource(resource)
            .iter()
            .filter(|r| account_matches(r.account, account))
            .map(|r| r.sequence)
            .collect();
        let what = match finals.as_slice() {
            [s] if *s == max => continue,
            [] => {
                format!("resource {name}: highest stored sequence is {max}, resource not reported")
            }
            [s] if *s < max => format!(
                "resource {name}: final sequence {s}, but {max} was stored (stale overwrite)"
            ),
            [s] => format!("resource {name}: final sequence {s}, higher than any stored ({max})"),
            many => format!("resource {name}: {} rows reported", many.len()),
        };
        ev.push((0, u64::from(run[0].first_line)), || Evidence {
            lines_total: top.lines.total(),
            ..Evidence::new(
                name,
                (account != NONE).then(|| strings.name(account).to_string()),
                what,
                top.lines.to_vec(),
            )
        });
    }
    Partial {
        n: [n, 0, 0],
        found: ev,
        ..Partial::default()
    }
}

/// I6 in words.
pub(crate) fn no_stale_overwrite_result(
    p: &Partial,
    sequenced: bool,
    sections: Sections,
) -> InvariantResult {
    if !sequenced {
        return InvariantResult::new(
            InvariantId::I6,
            Verdict::Pass,
            "not applicable: the history has no sequenced events",
        );
    }
    if !sections.resources {
        return InvariantResult::new(
            InvariantId::I6,
            Verdict::Unknown,
            "not checked: the state has no resources section",
        );
    }
    let [n, _, _] = p.n;
    let total = p.found.total;
    result(
        InvariantId::I6,
        p,
        Verdict::Fail,
        match n {
            1 => "the 1 resource holds its highest stored sequence".to_string(),
            n => format!("all {n} resources hold their highest stored sequence"),
        },
        format!(
            "{total} of {} {} not hold {} highest stored sequence",
            count(n, "resource"),
            if total == 1 { "does" } else { "do" },
            if total == 1 { "its" } else { "their" }
        ),
    )
}

/// Whether I5 and I6 need their records: asked for, and the state has
/// the section each compares with (without it, it is unknown whatever
/// the records say).
pub(crate) fn wanted(ids: &[InvariantId], sections: Sections) -> (bool, bool) {
    (
        ids.contains(&InvariantId::I5) && sections.winners,
        ids.contains(&InvariantId::I6) && sections.resources,
    )
}

/// I5 and I6 over a whole fold and its state, as one share.
pub(crate) fn grade_in_place(
    agg: &Aggregator,
    view: &StateView,
    opts: &CheckOptions,
    ids: &[InvariantId],
) -> Vec<(InvariantId, Partial)> {
    let mut out = Vec::new();
    let (i5, i6) = wanted(ids, view.rows.sections());
    if !(i5 || i6) {
        return out;
    }
    let (cands, seqs) = records(agg, view);
    if i5 {
        let winners = view.rows.winners.as_deref().unwrap_or(&[]);
        let lookup = |account, task| agg.lookup(account, task).map(TaskInfo::of);
        out.push((
            InvariantId::I5,
            correct_winner(cands, winners, &agg.strings, lookup, opts),
        ));
    }
    if i6 {
        let resources = view.rows.resources.as_deref().unwrap_or(&[]);
        out.push((
            InvariantId::I6,
            no_stale_overwrite(seqs, resources, &agg.strings),
        ));
    }
    out
}
