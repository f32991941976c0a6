//! The ordering invariants: I5 correct-winner and I6 no-stale-overwrite.
//! Both recompute, from the history, what a receiver that ignores arrival
//! order must report, and compare it with the `winners` and `resources`
//! sections.
//!
//! I5's rule, from the guide: per (account, job), among the genuine tasks
//! the receiver knows (stored, or acknowledged), the most recently created
//! COMPLETED task wins; a tie on `createdAt` goes to the larger task id
//! (string order); no COMPLETED task means no winner. Poison tasks (whose
//! `createdAt` is not a date) never take part.

use std::collections::BTreeMap;

use super::aggregate::{flag, Aggregator, KeyAgg, NONE};
use super::store::all_rows;
use super::store::key_evidence;
use super::verdict::{CheckOptions, Evidence, EvidenceSet, InvariantResult, Verdict};
use super::view::{account_matches, account_name, StateView, WinRow};
use crate::invariant::InvariantId;
use crate::words::count;

/// I5: the reported winner per job is the most recent COMPLETED task.
pub(crate) fn correct_winner(
    agg: &Aggregator,
    view: &StateView,
    opts: &CheckOptions,
) -> InvariantResult {
    let words = &opts.vocabulary;
    let object = &words.object;
    let Some(winners) = &view.rows.winners else {
        return InvariantResult::new(
            InvariantId::I5,
            Verdict::Unknown,
            "not checked: the state has no winners section",
        );
    };
    // (account, job, record) of every candidate, sorted: one run per job.
    // 12 bytes a candidate, where a tree map took about forty.
    let mut candidates: Vec<(u32, u32, u32)> = Vec::new();
    for (i, k) in agg.keys.iter().enumerate() {
        if k.job == NONE || !k.has(flag::REAL) || k.has(flag::POISON) {
            continue;
        }
        if !(k.has(flag::ACKED) || view.stored(k)) {
            continue;
        }
        candidates.push((k.account, k.job, i as u32));
    }
    candidates.sort_unstable();
    // Winner rows by job: sorted indices, found by binary search.
    let mut by_job: Vec<u32> = (0..winners.len() as u32).collect();
    by_job.sort_unstable_by_key(|&n| winners[n as usize].job);
    let of_job = |job: u32| {
        let from = by_job.partition_point(|&n| winners[n as usize].job < job);
        let to = from + by_job[from..].partition_point(|&n| winners[n as usize].job == job);
        by_job[from..to].iter().map(|&n| n as usize)
    };
    let task_lines = |task: u32, account: u32| -> Vec<u64> {
        agg.lookup(account, task)
            .map(KeyAgg::evidence_lines)
            .unwrap_or_default()
    };
    let mut ev = EvidenceSet::default();
    let mut used = vec![false; winners.len()];
    let mut jobs = 0usize;
    for run in candidates.chunk_by(|x, y| (x.0, x.1) == (y.0, y.1)) {
        jobs += 1;
        let (account, job) = (run[0].0, run[0].1);
        // The most recent COMPLETED task of the job (index into agg.keys).
        let best = run
            .iter()
            .map(|&(_, _, i)| i as usize)
            .filter_map(|i| agg.keys[i].completed_at().map(|t| (t, i)))
            .max_by(|(t1, a), (t2, b)| {
                (t1, agg.strings.name(agg.keys[*a].key))
                    .cmp(&(t2, agg.strings.name(agg.keys[*b].key)))
            })
            .map(|(_, i)| i);
        let job_name = agg.strings.name(job);
        let reported: Vec<&WinRow> = of_job(job)
            .filter(|&n| account_matches(winners[n].account, account))
            .map(|n| {
                used[n] = true;
                &winners[n]
            })
            .collect();
        let expected = best.map(|b| agg.strings.name(agg.keys[b].key));
        let names: Vec<&str> = reported.iter().map(|w| agg.strings.name(w.task)).collect();
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
                let why = agg
                    .lookup(account, reported[0].task)
                    .map(|k| {
                        if k.has(flag::FAILED) {
                            format!(" (a {} {})", words.failed, words.event)
                        } else if k.created < best.map(|b| agg.keys[b].created).unwrap_or_default()
                        {
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
        let mut lines: Vec<u64> = best
            .map(|b| task_lines(agg.keys[b].key, account))
            .unwrap_or_default();
        for w in &reported {
            lines.extend(task_lines(w.task, account));
        }
        lines.sort_unstable();
        lines.dedup();
        ev.push(|| {
            Evidence::new(
                job_name,
                Some(agg.strings.name(account).to_string()),
                what,
                lines,
            )
        });
    }
    for (w, _) in winners.iter().zip(&used).filter(|(_, u)| !**u) {
        ev.push(|| {
            Evidence::new(
                agg.strings.name(w.job),
                account_name(agg, w.account),
                format!(
                    "winner {} reported for {object} key {:?}, which no stored {} of this run has{}",
                    agg.strings.name(w.task),
                    agg.strings.name(w.job),
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
    let total = ev.total;
    ev.into_result(
        InvariantId::I5,
        Verdict::Fail,
        format!(
            "the right winner for {} ({})",
            all_rows(jobs, object),
            words.winner_rule()
        ),
        format!(
            "{} among {}",
            count(total, "wrong winner"),
            count(jobs, object)
        ),
    )
}

/// I6: the final sequence per resource is the highest stored one.
pub(crate) fn no_stale_overwrite(agg: &Aggregator, view: &StateView) -> InvariantResult {
    if !agg.sequenced {
        return InvariantResult::new(
            InvariantId::I6,
            Verdict::Pass,
            "not applicable: the history has no sequenced events",
        );
    }
    if view.rows.resources.is_none() {
        return InvariantResult::new(
            InvariantId::I6,
            Verdict::Unknown,
            "not checked: the state has no resources section",
        );
    }
    let mut highest: BTreeMap<(u32, u32), (u64, usize)> = BTreeMap::new();
    for (i, k) in agg.keys.iter().enumerate() {
        let Some(seq) = k.sequence() else { continue };
        if k.resource == NONE || !k.has(flag::GENUINE) || !view.stored(k) {
            continue;
        }
        let e = highest.entry((k.account, k.resource)).or_insert((seq, i));
        if seq > e.0 {
            *e = (seq, i);
        }
    }
    let mut ev = EvidenceSet::default();
    for (&(account, resource), &(max, i)) in &highest {
        let name = agg.strings.name(resource);
        let finals: Vec<u64> = view
            .resources_of(resource)
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
        let k = &agg.keys[i];
        ev.push(|| {
            let mut e = key_evidence(agg, k, what);
            e.key = name.to_string();
            e
        });
    }
    let total = ev.total;
    let n = highest.len();
    ev.into_result(
        InvariantId::I6,
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
