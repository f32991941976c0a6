//! I9 acknowledged: every genuine delivery gets a 2xx before its retry
//! schedule runs out.
//!
//! I1 only asks that what was acknowledged is stored; a receiver that
//! acknowledges nothing (503 to every POST, garbage instead of HTTP, a
//! connection closed mid-header) loses nothing it acknowledged and would
//! pass it. I9 closes that gap from the history alone: a genuine delivery
//! that died without a single 2xx is a failure, unless a fault the harness
//! injected on purpose explains every attempt that was not acknowledged:
//! the harness answered it itself (its front refusing or redirecting, an
//! attempt held back), which is how a scenario that expects deliveries to
//! die (redirects, a long outage that reconciliation repairs) says so, or
//! it ran while the harness had the receiver's database cut. A delivery still retrying when the
//! history ends (an interrupted run, a bench without retries) is not
//! judged: its schedule has not run out.

use super::aggregate::{flag, Aggregator};
use super::found::Found;
use super::partial::Partial;
use super::store::{evidence, key_rank, result};
use super::verdict::{InvariantResult, Verdict};
use crate::invariant::InvariantId;
use crate::text::words::{agree, count};

/// I9 from the history. Counts: genuine deliveries, those excused.
pub(crate) fn acknowledged(agg: &Aggregator) -> Partial {
    let mut ev = Found::default();
    let (mut genuine, mut excused) = (0u64, 0u64);
    for k in &agg.keys {
        if !k.has(flag::GENUINE) {
            continue;
        }
        genuine += 1;
        if k.has(flag::ACKED) || !k.has(flag::DIED) {
            continue;
        }
        if !k.has(flag::RECEIVER_MISSED) {
            excused += 1;
            continue;
        }
        let last = match k.missed_status {
            0 => "got no answer (a transport error, a malformed answer or a connection closed before the status line)".to_string(),
            s => format!("was answered {s}"),
        };
        let what = format!(
            "never acknowledged with a 2xx: {} until the schedule ran out; the last the receiver saw {last}",
            count(k.genuine_attempts as usize, "attempt")
        );
        ev.push(key_rank(k), || {
            evidence(agg, k, what, vec![k.missed_line.into()])
        });
    }
    Partial {
        n: [genuine, excused, 0],
        found: ev,
        ..Partial::default()
    }
}

/// I9 in words.
pub(crate) fn acknowledged_result(p: &Partial) -> InvariantResult {
    let [genuine, excused, _] = p.n;
    let total = p.found.total;
    let excuse = if excused > 0 {
        format!(
            " ({} more died by design: the harness's own faults explain every attempt that was not acknowledged)",
            excused
        )
    } else {
        String::new()
    };
    result(
        InvariantId::I9,
        p,
        Verdict::Fail,
        format!(
            "every genuine delivery that reached the receiver was acknowledged with a 2xx ({}){excuse}",
            count(genuine - excused, "delivery")
        ),
        format!(
            "{total} of {} {} never acknowledged before {} schedule ran out{excuse}",
            count(genuine, "genuine delivery"),
            agree(total, "was"),
            if total == 1 { "its" } else { "their" }
        ),
    )
}
