//! The storage invariants: I1 no-loss, I2 exactly-once, I3 processed-once,
//! I4 no-phantom. They compare what the history says was acknowledged (or
//! never meant to be stored) with the inbox, results and effects sections.

use rustc_hash::{FxHashMap, FxHashSet};

use super::aggregate::{flag, Aggregator, KeyAgg, StateView, NONE};
use super::{CheckOptions, Evidence, EvidenceSet, InvariantId, InvariantResult, Verdict};
use crate::vocabulary::Vocabulary;

/// The history's records that an inbox row stands for: none, its own, or
/// (for a row without account) the key's in every account.
pub(crate) enum RowAggs<'a> {
    One([&'a KeyAgg; 1]),
    Many(Vec<&'a KeyAgg>),
}

impl<'a> std::ops::Deref for RowAggs<'a> {
    type Target = [&'a KeyAgg];
    fn deref(&self) -> &Self::Target {
        match self {
            RowAggs::One(one) => one,
            RowAggs::Many(many) => many,
        }
    }
}

/// The history's records that an inbox row stands for (several when the row
/// carries no account and the key was sent in several accounts).
pub(crate) fn aggs_for_row<'a>(agg: &'a Aggregator, view: &StateView, row: usize) -> RowAggs<'a> {
    let (key, slot) = view.row_ids(row);
    if key == NONE {
        return RowAggs::Many(Vec::new());
    }
    match &view.state.inbox[row].account {
        Some(_) if slot == NONE => RowAggs::Many(Vec::new()),
        Some(_) => RowAggs::One([&agg.keys[slot as usize]]),
        None => RowAggs::Many(
            view.by_key
                .get(&key)
                .into_iter()
                .flatten()
                .map(|&i| &agg.keys[i as usize])
                .collect(),
        ),
    }
}

fn lines_of(aggs: &[&KeyAgg]) -> Vec<u64> {
    let mut lines: Vec<u64> = aggs.iter().flat_map(|k| k.evidence_lines()).collect();
    lines.sort_unstable();
    lines.dedup();
    lines.truncate(super::aggregate::KEY_LINES * 2);
    lines
}

pub(crate) fn evidence(agg: &Aggregator, k: &KeyAgg, what: String, lines: Vec<u64>) -> Evidence {
    Evidence {
        key: agg.strings.name(k.key).to_string(),
        account: (k.account != NONE).then(|| agg.strings.name(k.account).to_string()),
        what,
        lines,
    }
}

/// I1: every acknowledged genuine key (and, after reconciliation, every final
/// provider task) is in the inbox.
pub(crate) fn no_loss(agg: &Aggregator, view: &StateView, opts: &CheckOptions) -> InvariantResult {
    let mut ev = EvidenceSet::default();
    let (mut must, mut acked_n) = (0usize, 0usize);
    for k in &agg.keys {
        if !k.must_store(opts.reconciled) {
            continue;
        }
        must += 1;
        acked_n += usize::from(k.acknowledged());
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
        ev.push(|| evidence(agg, k, what, k.evidence_lines()));
    }
    let total = ev.total;
    let what = if opts.reconciled {
        format!("keys that must be stored ({acked_n} acknowledged, the rest final provider {} reconciliation must fetch)", Vocabulary::plural(&opts.vocabulary.event))
    } else {
        "acknowledged keys".to_string()
    };
    ev.into_result(
        InvariantId::I1,
        Verdict::Fail,
        format!("all {must} {what} are in the inbox"),
        format!("{total} of {must} {what} are missing from the inbox"),
    )
}

/// I2: no key twice in the inbox (per account); at most one results row per task.
pub(crate) fn exactly_once(
    agg: &Aggregator,
    view: &StateView,
    opts: &CheckOptions,
) -> InvariantResult {
    let words = &opts.vocabulary;
    let mut ev = EvidenceSet::default();
    // Rows of keys the history sent are grouped by id already; only the
    // others are grouped by their strings here.
    let rows = &view.state.inbox;
    let mut seen: FxHashMap<(Option<&str>, &str), (usize, u32)> = FxHashMap::default();
    for &n in view.unindexed() {
        let row = &rows[n as usize];
        seen.entry((row.account.as_deref(), row.key.as_str()))
            .or_insert((0, n))
            .0 += 1;
    }
    let mut dups: Vec<(u32, usize)> = seen
        .values()
        .filter(|(count, _)| *count > 1)
        .map(|&(count, first)| (first, count))
        .chain(view.repeated())
        .collect();
    dups.sort_unstable();
    for (first, count) in dups {
        let row = &rows[first as usize];
        ev.push(|| Evidence {
            key: row.key.clone(),
            account: row.account.clone(),
            what: format!("{count} inbox rows for one key"),
            lines: lines_of(&aggs_for_row(agg, view, first as usize)),
        });
    }
    let inbox_dups = ev.total;
    let mut checked = "inbox".to_string();
    if let Some(results) = &view.state.results {
        checked.push_str(" and results");
        let mut seen: FxHashMap<(Option<&str>, &str), u32> = FxHashMap::default();
        let mut order = Vec::new();
        for r in results {
            let c = seen
                .entry((r.account.as_deref(), r.task_id.as_str()))
                .or_insert(0);
            *c += 1;
            if *c == 2 {
                order.push((r.account.as_deref(), r.task_id.as_str()));
            }
        }
        for (account, task) in order {
            let count = seen[&(account, task)];
            ev.push(|| Evidence {
                key: task.to_string(),
                account: account.map(str::to_string),
                what: format!("{count} results rows for one {}", words.event),
                lines: Vec::new(),
            });
        }
    }
    let results_dups = ev.total - inbox_dups;
    ev.into_result(
        InvariantId::I2,
        Verdict::Fail,
        format!("no key twice in {checked}"),
        format!("{inbox_dups} keys stored more than once in the inbox, {results_dups} {} with several results rows", Vocabulary::plural(&words.event)),
    )
}

/// I3: every inbox row processed; each stored genuine key's effect ran once.
pub(crate) fn processed_once(
    agg: &Aggregator,
    view: &StateView,
    opts: &CheckOptions,
) -> InvariantResult {
    let mut ev = EvidenceSet::default();
    let rows = &view.state.inbox;
    let mut unprocessed = 0usize;
    let mut bad_effects = 0usize;
    let effects_by_key: Option<FxHashMap<&str, Vec<&crate::state::Effect>>> =
        view.state.effects.as_ref().map(|effects| {
            let mut m: FxHashMap<&str, Vec<_>> = FxHashMap::default();
            for e in effects {
                m.entry(e.key.as_str()).or_default().push(e);
            }
            m
        });
    // A key stored twice is I2's finding; its effect count is judged once.
    let mut effect_judged: FxHashSet<(Option<&str>, &str)> = Default::default();
    for (n, row) in rows.iter().enumerate() {
        let aggs = aggs_for_row(agg, view, n);
        let lines = || lines_of(&aggs);
        let row_ev = |what: String| Evidence {
            key: row.key.clone(),
            account: row.account.clone(),
            what,
            lines: lines(),
        };
        if !row.settled() {
            unprocessed += 1;
            let why = if opts.drained {
                "not processed (nor marked failed)"
            } else {
                "not processed (nor marked failed) when the drain deadline passed"
            };
            ev.push(|| row_ev(why.to_string()));
            continue;
        }
        let Some(m) = &effects_by_key else { continue };
        if !aggs.iter().any(|k| k.has(flag::REAL)) {
            continue; // a phantom row: I4's business
        }
        if !effect_judged.insert((row.account.as_deref(), row.key.as_str())) {
            continue;
        }
        let count: u64 = m
            .get(row.key.as_str())
            .into_iter()
            .flatten()
            .filter(|e| e.account.is_none() || row.account.is_none() || e.account == row.account)
            .map(|e| e.count)
            .sum();
        let poison = aggs.iter().any(|k| k.has(flag::POISON));
        let expected = if poison { 0 } else { 1 };
        if count != expected {
            bad_effects += 1;
            let what = match (poison, count) {
                (true, c) => format!("poison row's effect ran {c} times (expected 0)"),
                (false, 0) => "processed, but its effect never ran".to_string(),
                (false, c) => format!("effect ran {c} times"),
            };
            ev.push(|| row_ev(what));
        }
    }
    if let Some(effects) = &view.state.effects {
        let mut inbox: FxHashMap<&str, Vec<Option<&str>>> = FxHashMap::default();
        for r in rows {
            inbox
                .entry(r.key.as_str())
                .or_default()
                .push(r.account.as_deref());
        }
        for e in effects.iter().filter(|e| e.count > 0) {
            let stored = inbox.get(e.key.as_str()).is_some_and(|accounts| {
                accounts
                    .iter()
                    .any(|a| e.account.is_none() || a.is_none() || e.account.as_deref() == *a)
            });
            if !stored {
                bad_effects += 1;
                ev.push(|| Evidence {
                    key: e.key.clone(),
                    account: e.account.clone(),
                    what: format!("effect ran {} times for a key not in the inbox", e.count),
                    lines: Vec::new(),
                });
            }
        }
    }
    let effects_note = if view.state.effects.is_some() {
        ", each effect ran once"
    } else {
        " (effects not reported)"
    };
    ev.into_result(
        InvariantId::I3,
        Verdict::Fail,
        format!(
            "all {} inbox rows settled (processed or marked failed){effects_note}",
            rows.len()
        ),
        format!("{unprocessed} rows not settled, {bad_effects} wrong effect counts"),
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
pub(crate) fn no_phantom(agg: &Aggregator, view: &StateView) -> InvariantResult {
    let mut ev = EvidenceSet::default();
    for (n, row) in view.state.inbox.iter().enumerate() {
        let aggs = aggs_for_row(agg, view, n);
        if aggs.is_empty() {
            ev.push(|| Evidence {
                key: row.key.clone(),
                account: row.account.clone(),
                what: "stored, but this run never sent it (left over from an earlier run, or invented)"
                    .to_string(),
                lines: Vec::new(),
            });
        } else if !aggs.iter().any(|k| k.has(flag::REAL)) {
            let kinds: Vec<String> = aggs.iter().map(|k| intents(k)).collect();
            ev.push(|| Evidence {
                key: row.key.clone(),
                account: row.account.clone(),
                what: format!("stored a {} delivery", kinds.join("/")),
                lines: lines_of(&aggs),
            });
        }
    }
    let total = ev.total;
    ev.into_result(
        InvariantId::I4,
        Verdict::Fail,
        format!(
            "all {} inbox rows come from genuine deliveries",
            view.state.inbox.len()
        ),
        format!("{total} inbox rows should not exist"),
    )
}
