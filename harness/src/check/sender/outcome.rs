//! Where each event ended and how it got there: S2 (nothing sent again
//! after a final answer), S4 (redirects never followed), S8 (every event
//! the outbox committed ends acknowledged or dead-lettered) and S9 (per
//! resource, first sends in sequence order).

use std::collections::BTreeMap;

use super::view::{show_ms, unix_end, EventView, SenderRules, SinkView};
use crate::check::found::EvidenceSet;
use crate::check::verdict::{Evidence, InvariantResult, Verdict};
use crate::invariant::InvariantId;
use crate::scenario::answer::Answer;
use crate::state::outbox::{Outbox, OutboxStatus};

/// S2 final-answers.
pub fn final_answers(view: &SinkView<'_>, rules: &SenderRules) -> InvariantResult {
    let mut found = EvidenceSet::default();
    let (mut finals, mut after_restart) = (0usize, 0usize);
    for e in &view.events {
        let Some((i, fin)) = e.first_final(&rules.profile) else {
            continue;
        };
        // An answer the sink gave only after stalling for half the
        // timeout may have reached a sender that had given up on it.
        let delay = fin.got.end_ms - fin.got.at_ms
            + view.stall_ms(
                fin.got.arrived_unix - rules.timeout_ms() / 1000.0,
                unix_end(fin),
            );
        if delay >= rules.timeout_ms() / 2.0 {
            continue;
        }
        finals += 1;
        for (j, s) in e.attempts.iter().enumerate().skip(i + 1) {
            if view.restarted_between(fin, s) {
                after_restart += 1;
                continue;
            }
            found.push(|| {
                e.evidence(
                    format!(
                        "attempt {} was sent after attempt {} was answered {}, a final answer",
                        j + 1,
                        i + 1,
                        fin.said()
                    ),
                    vec![fin.line, s.line],
                )
            });
            break;
        }
    }
    if finals == 0 {
        return InvariantResult::new(
            InvariantId::S2,
            Verdict::Unknown,
            "not exercised: no event got a final answer",
        );
    }
    let restarts = match after_restart {
        0 => String::new(),
        n => format!(" ({n} re-send(s) after the harness restarted the sender, allowed)"),
    };
    found.into_result(
        InvariantId::S2,
        Verdict::Fail,
        format!("{finals} event(s) got a final answer and were not sent again{restarts}"),
        "the sender keeps sending after a final answer".into(),
    )
}

/// S4 no-redirects.
pub fn no_redirects(view: &SinkView<'_>) -> InvariantResult {
    let mut found = EvidenceSet::default();
    let mut redirected = 0usize;
    for e in &view.events {
        redirected += e
            .attempts
            .iter()
            .filter(|s| matches!(s.answer, Some(Answer::Redirect(_))) && !s.got.closed_early)
            .count();
        if !e.followed.is_empty() {
            let n = e.followed.len();
            found.push(|| {
                e.evidence(format!(
                        "followed a redirect: {n} request(s) went to the Location the sink named instead of the registered URL"
                    ),
                    e.followed.iter().take(3).map(|s| s.line).collect(),
                )
            });
        }
    }
    if redirected == 0 && found.is_empty() {
        return InvariantResult::new(
            InvariantId::S4,
            Verdict::Unknown,
            "not exercised: no redirect was answered",
        );
    }
    found.into_result(
        InvariantId::S4,
        Verdict::Fail,
        format!("{redirected} redirect(s) answered, none followed"),
        "the sender follows redirects".into(),
    )
}

/// S8 none-dropped.
pub fn none_dropped(view: &SinkView<'_>, outbox: Result<&Outbox, &str>) -> InvariantResult {
    let outbox = match outbox {
        Ok(o) => o,
        Err(why) => {
            return InvariantResult::new(
                InvariantId::S8,
                Verdict::Unknown,
                format!("not checked: the outbox listing failed: {why}"),
            )
        }
    };
    let mut found = EvidenceSet::default();
    let (mut delivered, mut dead) = (0usize, 0usize);
    for e in view.emitted() {
        let emit_line = e.emitted.map(|(l, _)| l).unwrap_or_default();
        let mut lines = vec![emit_line];
        lines.extend(e.lines(2));
        let sent = e.attempts.len();
        let last = e
            .attempts
            .last()
            .map(|s| s.said())
            .unwrap_or_else(|| "nothing".into());
        let what = match outbox.row(e.account, e.key).map(|r| r.status) {
            None => Some("not in the outbox: the emit was answered, but the sender lists no such event".to_string()),
            Some(OutboxStatus::Pending) => Some(format!(
                "still pending when the drain ended ({sent} attempt(s) arrived, the last answered {last})"
            )),
            Some(_) if sent == 0 => Some("marked done in the outbox, but never sent".to_string()),
            Some(OutboxStatus::Delivered) if !e.acknowledged() => Some(format!(
                "marked delivered, but no attempt got a 2xx ({sent} attempt(s), the last answered {last})"
            )),
            Some(OutboxStatus::Dead) if e.acknowledged() => {
                Some("dead-lettered, but an attempt got a 2xx".to_string())
            }
            Some(OutboxStatus::Delivered) => {
                delivered += 1;
                None
            }
            Some(OutboxStatus::Dead) => {
                dead += 1;
                None
            }
        };
        if let Some(what) = what {
            found.push(|| e.evidence(what, lines));
        }
    }
    found.into_result(
        InvariantId::S8,
        Verdict::Fail,
        format!("{delivered} event(s) delivered after a 2xx, {dead} dead-lettered; none pending, none lost"),
        "events the outbox committed are not accounted for".into(),
    )
}

/// S9 resource-order.
pub fn resource_order(view: &SinkView<'_>) -> InvariantResult {
    let mut by_resource: BTreeMap<&str, Vec<(u64, f64, &EventView<'_>)>> = BTreeMap::new();
    for e in view.emitted() {
        let Some((_, em)) = e.emitted else { continue };
        let (Some(r), Some(seq)) = (em.resource.as_deref(), em.sequence) else {
            continue;
        };
        let Some(first) = e.attempts.first() else {
            continue;
        };
        by_resource
            .entry(r)
            .or_default()
            .push((seq, first.got.at_ms, e));
    }
    if by_resource.is_empty() {
        return InvariantResult::new(
            InvariantId::S9,
            Verdict::Unknown,
            "not exercised: no sequenced event arrived",
        );
    }
    let mut found = EvidenceSet::default();
    for (resource, events) in &mut by_resource {
        events.sort_by_key(|(seq, _, _)| *seq);
        for w in events.windows(2) {
            let ((s1, t1, e1), (s2, t2, e2)) = (w[0], w[1]);
            if t2 < t1 {
                found.push(|| Evidence {
                    key: resource.to_string(),
                    account: Some(e2.account.to_string()),
                    what: format!(
                        "sequence {s2} ({}) was first sent {} before sequence {s1} ({})",
                        e2.key,
                        show_ms(t1 - t2),
                        e1.key
                    ),
                    lines: vec![e2.attempts[0].line, e1.attempts[0].line],
                    lines_total: 2,
                });
            }
        }
    }
    found.into_result(
        InvariantId::S9,
        Verdict::Fail,
        format!(
            "{} resource(s): each one's events first sent in sequence order",
            by_resource.len()
        ),
        "a resource's newer event was sent before an older one".into(),
    )
}
