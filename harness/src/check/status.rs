//! I7 status-conformance: the answers themselves. Every 3xx, every 2xx to a
//! delivery that had to be rejected and every answer slower than the limit
//! fails outright (decided while streaming); a 4xx to a duplicate, a test
//! delivery or a genuine first attempt is a non-strict deviation when the
//! state stayed intact, and a failure when it did not.
//!
//! Attempts that carry a harness fault are excused from the time limit (the
//! fault made them slow), and a 3xx from the harness's own redirecting front
//! (fault `redirect`) is the fault, not the receiver.

use super::aggregate::{flag, Aggregator};
use super::found::Found;
use super::partial::Partial;
use super::store::{evidence, key_rank, result};
use super::verdict::{CheckOptions, InvariantResult, Verdict, MAX_EVIDENCE};
use super::view::StateView;
use crate::invariant::InvariantId;
use crate::text::words::count;

/// The verdict from the history alone, when the state could not be read:
/// the answers' own findings (`status`).
pub(crate) fn history_only(status: &Found) -> InvariantResult {
    let total = status.total;
    InvariantResult {
        id: InvariantId::I7,
        verdict: Verdict::Fail,
        summary: format!(
            "{} broke the contract (state probe failed; decided from the history alone)",
            count(total, "answer")
        ),
        evidence: status.evidence(),
        evidence_total: total,
    }
}

/// I7's findings about keys against the state: failures rank after the
/// answers' own findings (list 1), deviations apart.
pub(crate) fn conformance(agg: &Aggregator, view: &StateView) -> Partial {
    let mut fails = Found::default();
    let mut lenient = Found::default();
    for k in &agg.keys {
        if !k.has(flag::DUP_4XX | flag::TEST_4XX | flag::GEN_4XX) {
            continue;
        }
        let stored = view.stored(k);
        let lines = vec![u64::from(k.status_line)];
        let (fail_rank, lenient_rank) = ((1, key_rank(k).1), key_rank(k));
        if k.has(flag::DUP_4XX) {
            if stored {
                lenient.push(lenient_rank, || evidence(agg, k, "duplicate answered 4xx; stored once, so the state is intact (answer 2xx: a 4xx asks for more retries)".into(), lines.clone()));
            } else {
                fails.push(fail_rank, || {
                    evidence(
                        agg,
                        k,
                        "duplicate answered 4xx and the key is not stored".into(),
                        lines.clone(),
                    )
                });
            }
        }
        if k.has(flag::TEST_4XX) && !k.has(flag::REAL) {
            if stored {
                fails.push(fail_rank, || {
                    evidence(
                        agg,
                        k,
                        "test delivery answered 4xx and stored".into(),
                        lines.clone(),
                    )
                });
            } else {
                lenient.push(lenient_rank, || evidence(agg, k, "test delivery answered 4xx; nothing stored (a verified test delivery should get a 2xx)".into(), lines.clone()));
            }
        }
        if k.has(flag::GEN_4XX) {
            if stored {
                lenient.push(lenient_rank, || {
                    evidence(
                        agg,
                        k,
                        "genuine delivery answered 4xx; a retry stored it".into(),
                        lines.clone(),
                    )
                });
            } else {
                fails.push(fail_rank, || {
                    evidence(
                        agg,
                        k,
                        "genuine delivery answered 4xx and never stored".into(),
                        lines.clone(),
                    )
                });
            }
        }
    }
    Partial {
        found: fails,
        lenient,
        ..Partial::default()
    }
}

/// I7 in words: `status` are the answers' own findings, `attempts` the
/// history's attempts.
pub(crate) fn conformance_result(
    p: &Partial,
    status: &Found,
    attempts: usize,
    opts: &CheckOptions,
) -> InvariantResult {
    let mut fails = status.clone();
    fails.merge(p.found.clone());
    if !fails.is_empty() {
        let (f, l) = (fails.total, p.lenient.total);
        let total = f + l;
        let mut items = fails.evidence();
        items.extend(
            p.lenient
                .evidence()
                .into_iter()
                .take(MAX_EVIDENCE.saturating_sub(items.len())),
        );
        return InvariantResult {
            id: InvariantId::I7,
            verdict: Verdict::Fail,
            summary: format!(
                "{} broke the contract, {}, in {}",
                count(f, "answer"),
                count(l, "non-strict deviation"),
                count(attempts, "attempt")
            ),
            evidence: items,
            evidence_total: total,
        };
    }
    let n = p.lenient.total;
    let (verdict, note) = if opts.strict {
        (Verdict::Fail, "failing under --strict")
    } else {
        (
            Verdict::NonStrict,
            "state intact; fails only under --strict",
        )
    };
    let deviations = Partial {
        found: p.lenient.clone(),
        ..Partial::default()
    };
    result(
        InvariantId::I7,
        &deviations,
        verdict,
        match attempts {
            1 => "the 1 answer conforms".to_string(),
            a => format!("all {a} answers conform"),
        },
        format!("{} ({note})", count(n, "non-strict status deviation")),
    )
}
