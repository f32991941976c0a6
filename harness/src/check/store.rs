//! The storage invariants: I1 no-loss, I2 exactly-once, I3 processed-once,
//! I4 no-phantom. They compare what the history says was acknowledged (or
//! never meant to be stored) with the inbox, results and effects sections.
//!
//! Each is a pair: the finding over a share of the keys (a [`Partial`]:
//! counters and ranked evidence) and its wording once every share is in.
//! Keys rank by their first history line, rows by their place in their
//! section.

use rustc_hash::FxHashSet;

use super::aggregate::{flag, Aggregator, KeyAgg, NONE};
use super::found::Found;
use super::partial::{Partial, Sections};
use super::verdict::{CheckOptions, Evidence, InvariantResult, Verdict};
use super::view::{account_matches, account_name, StateView};
use crate::invariant::InvariantId;
use crate::profile::vocabulary::Vocabulary;
use crate::text::words::{agree, count};

/// `all 3 inbox rows`, `the 1 inbox row`, `no inbox row`.
pub(crate) fn all_rows(n: u64, noun: &str) -> String {
    match n {
        0 => format!("no {noun}"),
        1 => format!("the 1 {noun}"),
        n => format!("all {n} {}", crate::text::words::plural(noun)),
    }
}

/// The history's records that an inbox row stands for (several when the row
/// carries no account and the key was sent in several accounts).
pub(crate) fn aggs_for_row<'a>(
    agg: &'a Aggregator,
    view: &StateView,
    row: usize,
) -> Vec<&'a KeyAgg> {
    let r = &view.rows.inbox[row];
    if r.account == NONE {
        view.by_key
            .get(&r.key)
            .into_iter()
            .flatten()
            .map(|&i| &agg.keys[i as usize])
            .collect()
    } else {
        agg.lookup(r.account, r.key).into_iter().collect()
    }
}

/// The relevant lines of the keys of one row (at most twice a key's
/// share), and how many there were in all.
pub(crate) fn lines_of(aggs: &[&KeyAgg]) -> (Vec<u64>, usize) {
    let mut lines: Vec<u64> = aggs.iter().flat_map(|k| k.evidence_lines()).collect();
    lines.sort_unstable();
    lines.dedup();
    let total = aggs
        .iter()
        .map(|k| k.lines_seen())
        .sum::<usize>()
        .max(lines.len());
    lines.truncate(super::aggregate::KEY_LINES * 2);
    (lines, total)
}

/// Evidence about a row's key citing `lines` (what [`lines_of`] gave).
pub(crate) fn row_evidence(
    agg: &Aggregator,
    key: u32,
    account: u32,
    what: String,
    (lines, total): (Vec<u64>, usize),
) -> Evidence {
    Evidence {
        lines_total: total,
        ..Evidence::new(
            agg.strings.name(key),
            account_name(agg, account),
            what,
            lines,
        )
    }
}

pub(crate) fn evidence(agg: &Aggregator, k: &KeyAgg, what: String, lines: Vec<u64>) -> Evidence {
    Evidence::new(
        agg.strings.name(k.key),
        (k.account != NONE).then(|| agg.strings.name(k.account).to_string()),
        what,
        lines,
    )
}

/// Evidence about key `k` citing its relevant lines, with how many it had.
pub(crate) fn key_evidence(agg: &Aggregator, k: &KeyAgg, what: String) -> Evidence {
    Evidence {
        lines_total: k.lines_seen(),
        ..evidence(agg, k, what, k.evidence_lines())
    }
}

/// I1: every acknowledged genuine key (and, after reconciliation, every final
/// provider task) is in the inbox. Counts: keys that must be stored, of
/// them acknowledged.
pub(crate) fn no_loss(agg: &Aggregator, view: &StateView, opts: &CheckOptions) -> Partial {
    let mut ev = Found::default();
    let (mut must, mut acked_n) = (0u64, 0u64);
    for k in &agg.keys {
        if !k.must_store(opts.reconciled) {
            continue;
        }
        must += 1;
        acked_n += u64::from(k.acknowledged());
        if view.stored(k) {
            continue;
        }
        let what = if k.has(flag::OK) {
            "acknowledged with a 2xx but not in the inbox".to_string()
        } else if k.has(flag::DROP_ACK) {
            "answered 2xx (ack discarded by the harness) but not in the inbox".to_string()
        } else if k.has(flag::GENUINE) {
            format!("never acknowledged, and still not in the inbox after reconciliation: a final {} the provider knows", opts.vocabulary.event)
        } else {
            format!("never delivered, and not in the inbox after reconciliation: a final {} the provider knows", opts.vocabulary.event)
        };
        ev.push(key_rank(k), || key_evidence(agg, k, what));
    }
    Partial {
        n: [must, acked_n, 0],
        found: ev,
        ..Partial::default()
    }
}

/// I1 in words.
pub(crate) fn no_loss_result(p: &Partial, opts: &CheckOptions) -> InvariantResult {
    let [must, acked_n, _] = p.n;
    let total = p.found.total;
    let what = if opts.reconciled {
        format!(
            "{} that must be stored ({acked_n} acknowledged, the rest final provider {} reconciliation must fetch)",
            agree(must, "key"),
            Vocabulary::plural(&opts.vocabulary.event)
        )
    } else {
        agree(must, "acknowledged key")
    };
    result(
        InvariantId::I1,
        p,
        Verdict::Fail,
        match must {
            1 => format!("the 1 {what} is in the inbox"),
            _ => format!("all {must} {what} are in the inbox"),
        },
        format!(
            "{total} of {must} {what} {} missing from the inbox",
            agree(total, "is")
        ),
    )
}

/// A key's rank in an invariant's first list: its first history line.
pub(crate) fn key_rank(k: &KeyAgg) -> (u8, u64) {
    (0, u64::from(k.first_line))
}

/// A result from a partial: `bad` with the evidence when anything was
/// found, a pass otherwise.
pub(crate) fn result(
    id: InvariantId,
    p: &Partial,
    bad: Verdict,
    pass_summary: String,
    fail_summary: String,
) -> InvariantResult {
    p.found.into_result(id, bad, pass_summary, fail_summary)
}

/// The (account, id) pairs that occur more than once, with their count and
/// first row, in the order of their first row. Sorting a copy of the pairs
/// costs 12 bytes a row, not a map entry.
fn repeated(pairs: impl Iterator<Item = (u32, u32)>) -> Vec<(u32, u32, u32, usize)> {
    let mut sorted: Vec<(u32, u32, u32)> = pairs
        .enumerate()
        .map(|(n, (a, k))| (a, k, n as u32))
        .collect();
    sorted.sort_unstable();
    let mut out = Vec::new();
    for run in sorted.chunk_by(|x, y| (x.0, x.1) == (y.0, y.1)) {
        if run.len() > 1 {
            out.push((run[0].0, run[0].1, run.len() as u32, run[0].2 as usize));
        }
    }
    out.sort_unstable_by_key(|d| d.3);
    out
}

/// I2: no key twice in the inbox (per account); at most one results row
/// per task. Counts: keys stored more than once, tasks with several
/// results rows.
pub(crate) fn exactly_once(agg: &Aggregator, view: &StateView, opts: &CheckOptions) -> Partial {
    let words = &opts.vocabulary;
    let mut ev = Found::default();
    let inbox = view.rows.inbox.iter().map(|r| (r.account, r.key));
    for (account, key, n, first) in repeated(inbox) {
        ev.push((0, u64::from(view.rows.inbox[first].at)), || {
            row_evidence(
                agg,
                key,
                account,
                format!("{} for one key", count(n, "inbox row")),
                lines_of(&aggs_for_row(agg, view, first)),
            )
        });
    }
    let inbox_dups = ev.total as u64;
    if let Some(results) = &view.rows.results {
        let pairs = results.iter().map(|r| (r.account, r.task));
        for (account, task, n, first) in repeated(pairs) {
            ev.push((1, u64::from(results[first].at)), || {
                Evidence::new(
                    agg.strings.name(task),
                    account_name(agg, account),
                    format!("{} for one {}", count(n, "results row"), words.event),
                    Vec::new(),
                )
            });
        }
    }
    let results_dups = ev.total as u64 - inbox_dups;
    Partial {
        n: [inbox_dups, results_dups, 0],
        found: ev,
        ..Partial::default()
    }
}

/// I2 in words.
pub(crate) fn exactly_once_result(
    p: &Partial,
    sections: Sections,
    opts: &CheckOptions,
) -> InvariantResult {
    let [inbox_dups, results_dups, _] = p.n;
    let checked = if sections.results {
        "inbox and results"
    } else {
        "inbox"
    };
    result(
        InvariantId::I2,
        p,
        Verdict::Fail,
        format!("no key twice in {checked}"),
        format!(
            "{} stored more than once in the inbox, {} with several results rows",
            count(inbox_dups, "key"),
            count(results_dups, &opts.vocabulary.event)
        ),
    )
}

/// I3: every inbox row processed; each stored genuine key's effect ran
/// once. Counts: inbox rows, rows not settled, wrong effect counts.
pub(crate) fn processed_once(agg: &Aggregator, view: &StateView, opts: &CheckOptions) -> Partial {
    let mut ev = Found::default();
    let rows = &view.rows.inbox;
    let mut unprocessed = 0u64;
    let mut bad_effects = 0u64;
    let effects = view.rows.effects.is_some();
    // A key stored twice is I2's finding; its effect count is judged once:
    // a flag per record (a set of pairs was 19 MB at a million keys), and a
    // set of keys for the rows without an account.
    let mut judged = vec![false; agg.keys.len()];
    let mut judged_anonymous: FxHashSet<u32> = Default::default();
    for (n, row) in rows.iter().enumerate() {
        let aggs = aggs_for_row(agg, view, n);
        let lines = || lines_of(&aggs);
        let row_ev = |what: String| row_evidence(agg, row.key, row.account, what, lines());
        if !row.settled() {
            unprocessed += 1;
            let why = if opts.drained {
                "not processed (nor marked failed)"
            } else {
                "not processed (nor marked failed) when the drain deadline passed"
            };
            ev.push((0, u64::from(row.at)), || row_ev(why.to_string()));
            continue;
        }
        if !effects {
            continue;
        }
        if !aggs.iter().any(|k| k.has(flag::REAL)) {
            continue; // a phantom row: I4's business
        }
        let first_judgement = if row.account == NONE {
            judged_anonymous.insert(row.key)
        } else {
            agg.slot_of(row.account, row.key)
                .is_none_or(|i| !std::mem::replace(&mut judged[i], true))
        };
        if !first_judgement {
            continue;
        }
        let ran: u64 = view
            .effects_of(row.key)
            .iter()
            .filter(|e| account_matches(e.account, row.account) || row.account == NONE)
            .map(|e| e.count)
            .sum();
        let poison = aggs.iter().any(|k| k.has(flag::POISON));
        let expected = if poison { 0 } else { 1 };
        if ran != expected {
            bad_effects += 1;
            let what = match (poison, ran) {
                (true, c) => format!("poison row's effect ran {} (expected 0)", count(c, "time")),
                (false, 0) => "processed, but its effect never ran".to_string(),
                (false, c) => format!("effect ran {}", count(c, "time")),
            };
            ev.push((0, u64::from(row.at)), || row_ev(what));
        }
    }
    if let Some(effects) = &view.rows.effects {
        let inbox = view.by_key_alone();
        for e in effects.iter().filter(|e| e.count > 0) {
            let stored = inbox
                .accounts(e.key)
                .any(|a| account_matches(e.account, a) || a == NONE);
            if !stored {
                bad_effects += 1;
                ev.push((1, u64::from(e.at)), || {
                    Evidence::new(
                        agg.strings.name(e.key),
                        account_name(agg, e.account),
                        format!(
                            "effect ran {} for a key not in the inbox",
                            count(e.count, "time")
                        ),
                        Vec::new(),
                    )
                });
            }
        }
    }
    Partial {
        n: [rows.len() as u64, unprocessed, bad_effects],
        found: ev,
        ..Partial::default()
    }
}

/// I3 in words.
pub(crate) fn processed_once_result(p: &Partial, sections: Sections) -> InvariantResult {
    let [rows, unprocessed, bad_effects] = p.n;
    let effects_note = if sections.effects {
        ", each effect ran once"
    } else {
        " (effects not reported)"
    };
    result(
        InvariantId::I3,
        p,
        Verdict::Fail,
        format!(
            "{} settled (processed or marked failed){effects_note}",
            all_rows(rows, "inbox row")
        ),
        format!(
            "{} not settled, {}",
            count(unprocessed, "row"),
            count(bad_effects, "wrong effect count")
        ),
    )
}

fn intents(k: &KeyAgg) -> String {
    let names = [
        (flag::TEST, "test"),
        (flag::FORGED, "forged"),
        (flag::CROSS, "cross-account"),
        (flag::OVERSIZED, "oversized"),
        (flag::EXPIRED, "expired-replay"),
    ];
    names
        .iter()
        .filter(|(f, _)| k.has(*f))
        .map(|(_, n)| *n)
        .collect::<Vec<_>>()
        .join("/")
}

/// I4: nothing stored that was never meant to be: test, forged, other-account,
/// oversized and expired deliveries, and keys the history never sent.
/// Counts: inbox rows.
pub(crate) fn no_phantom(agg: &Aggregator, view: &StateView) -> Partial {
    let mut ev = Found::default();
    for (n, row) in view.rows.inbox.iter().enumerate() {
        let rank = (0, u64::from(row.at));
        let aggs = aggs_for_row(agg, view, n);
        if aggs.is_empty() {
            ev.push(rank, || {
                Evidence::new(
                    agg.strings.name(row.key),
                    account_name(agg, row.account),
                    "stored, but this run never sent it (left over from an earlier run, or invented)",
                    Vec::new(),
                )
            });
        } else if !aggs.iter().any(|k| k.has(flag::REAL)) {
            let kinds: Vec<String> = aggs.iter().map(|k| intents(k)).collect();
            ev.push(rank, || {
                row_evidence(
                    agg,
                    row.key,
                    row.account,
                    format!("stored a {} delivery", kinds.join("/")),
                    lines_of(&aggs),
                )
            });
        }
    }
    Partial {
        n: [view.rows.inbox.len() as u64, 0, 0],
        found: ev,
        ..Partial::default()
    }
}

/// I4 in words.
pub(crate) fn no_phantom_result(p: &Partial) -> InvariantResult {
    let [rows, _, _] = p.n;
    let total = p.found.total;
    result(
        InvariantId::I4,
        p,
        Verdict::Fail,
        match rows {
            1 => "the 1 inbox row comes from genuine deliveries".to_string(),
            n => format!("{} come from genuine deliveries", all_rows(n, "inbox row")),
        },
        format!("{} should not exist", count(total, "inbox row")),
    )
}
