//! I8 poison-isolation: a delivery the worker cannot process must be marked
//! failed (`error` set; `processed` may stay false: the row is settled
//! either way), must not block any other row, and must still be answered 2xx
//! (the handler only stores; processing errors are not the sender's
//! business).

use super::aggregate::{flag, Aggregator};
use super::found::Found;
use super::partial::Partial;
use super::store::{aggs_for_row, evidence, key_rank, result, row_evidence};
use super::verdict::{InvariantResult, Verdict};
use super::view::StateView;
use crate::invariant::InvariantId;
use crate::text::words::count;

/// I8 against the state. Counts: poison deliveries, rows they blocked.
/// The rows are judged even when this share has no poison key: the
/// scenario may have one in another share (its wording drops them when
/// it has none at all).
pub(crate) fn isolation(agg: &Aggregator, view: &StateView) -> Partial {
    let poison = agg.keys.iter().filter(|k| k.has(flag::POISON)).count() as u64;
    let mut ev = Found::default();
    for k in agg.keys.iter().filter(|k| k.has(flag::POISON_NON2XX)) {
        ev.push(key_rank(k), || {
            evidence(
                agg,
                k,
                "poison delivery answered with a non-2xx status: processing errors must not reach the sender".into(),
                vec![k.status_line.into()],
            )
        });
    }
    let mut blocked = 0u64;
    for (n, row) in view.rows.inbox.iter().enumerate() {
        // Without a poison key here, only an unsettled row can be a
        // finding: one left unprocessed next to a poison row elsewhere.
        if poison == 0 && row.settled() {
            continue;
        }
        let aggs = aggs_for_row(agg, view, n);
        let is_poison = aggs.iter().any(|k| k.has(flag::POISON));
        let lines = || {
            let lines: Vec<u64> = aggs.iter().flat_map(|k| k.evidence_lines()).collect();
            let total = aggs.iter().map(|k| k.lines_seen()).sum::<usize>();
            (lines, total)
        };
        let what = if is_poison {
            // Marked failed is settled, whether or not `processed` is set.
            if row.failed {
                continue;
            }
            if row.processed {
                "poison row processed but not marked failed (error is null)"
            } else {
                "poison row left unprocessed: it should be marked failed"
            }
        } else {
            if row.settled() || !aggs.iter().any(|k| k.has(flag::REAL)) {
                continue;
            }
            blocked += 1;
            "genuine row left unprocessed next to a poison row"
        };
        ev.push((1, u64::from(row.at)), || {
            row_evidence(agg, row.key, row.account, what.to_string(), lines())
        });
    }
    Partial {
        n: [poison, blocked, 0],
        found: ev,
        ..Partial::default()
    }
}

/// I8 in words.
pub(crate) fn isolation_result(p: &Partial) -> InvariantResult {
    let [poison, blocked, _] = p.n;
    if poison == 0 {
        return InvariantResult::new(
            InvariantId::I8,
            Verdict::Pass,
            "not applicable: no poison deliveries",
        );
    }
    let total = p.found.total;
    result(
        InvariantId::I8,
        p,
        Verdict::Fail,
        format!(
            "{} marked failed, answered 2xx, blocking nothing",
            count(poison, "poison delivery")
        ),
        format!(
            "{} ({} blocked)",
            count(total, "poison-isolation violation"),
            count(blocked, "row")
        ),
    )
}
