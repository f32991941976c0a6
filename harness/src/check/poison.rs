//! I8 poison-isolation: a delivery the worker cannot process must be marked
//! failed (`error` set; `processed` may stay false: the row is settled
//! either way), must not block any other row, and must still be answered 2xx
//! (the handler only stores; processing errors are not the sender's
//! business).

use super::aggregate::{flag, Aggregator};
use super::store::{aggs_for_row, evidence, row_evidence};
use super::verdict::{EvidenceSet, InvariantResult, Verdict};
use super::view::StateView;
use crate::invariant::InvariantId;
use crate::words::count;

/// I8 against the state.
pub(crate) fn isolation(agg: &Aggregator, view: &StateView) -> InvariantResult {
    let poison = agg.keys.iter().filter(|k| k.has(flag::POISON)).count();
    if poison == 0 {
        return InvariantResult::new(
            InvariantId::I8,
            Verdict::Pass,
            "not applicable: no poison deliveries",
        );
    }
    let mut ev = EvidenceSet::default();
    for k in agg.keys.iter().filter(|k| k.has(flag::POISON_NON2XX)) {
        ev.push(|| {
            evidence(
                agg,
                k,
                "poison delivery answered with a non-2xx status: processing errors must not reach the sender".into(),
                vec![k.status_line.into()],
            )
        });
    }
    let mut blocked = 0usize;
    for (n, row) in view.rows.inbox.iter().enumerate() {
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
        ev.push(|| row_evidence(agg, row.key, row.account, what.to_string(), lines()));
    }
    let total = ev.total;
    ev.into_result(
        InvariantId::I8,
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
