//! I8 poison-isolation: a delivery the worker cannot process must be marked
//! failed (`error` set; `processed` may stay false: the row is settled
//! either way), must not block any other row, and must still be answered 2xx
//! (the handler only stores; processing errors are not the sender's
//! business).

use super::aggregate::{flag, Aggregator};
use super::store::{aggs_for_row, evidence};
use super::verdict::{Evidence, EvidenceSet, InvariantResult, Verdict};
use super::view::{account_name, StateView};
use crate::invariant::InvariantId;

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
            aggs.iter()
                .flat_map(|k| k.evidence_lines())
                .collect::<Vec<_>>()
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
        ev.push(|| Evidence {
            key: agg.strings.name(row.key).to_string(),
            account: account_name(agg, row.account),
            what: what.to_string(),
            lines: lines(),
        });
    }
    let total = ev.total;
    ev.into_result(
        InvariantId::I8,
        Verdict::Fail,
        format!("{poison} poison deliveries marked failed, answered 2xx, blocking nothing"),
        format!("{total} poison-isolation violations ({blocked} rows blocked)"),
    )
}
