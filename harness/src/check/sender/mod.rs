//! The sender invariants S1–S9: what `hookstorm sink` proves or disproves
//! about a webhook *sender*, from the sink's history (every request the
//! sender made, what the sink answered, what it was asked to emit) and the
//! sender's own outbox listing (`docs/invariants.md`, "Sender invariants").
//!
//! The files, leaves first: `rules` (the table, its docs and the
//! tolerances), `view` (the history by event, and the profile's rules at
//! the run's time scale), then the invariants: `timing` (S1, S3, S7),
//! `identity` (S5, S6) and `outcome` (S2, S4, S8, S9).
//!
//! As on the receiver side, a check that cannot decide says `unknown`:
//! an invariant whose scripted answers never came into play (no retry, no
//! redirect, no held request) is "not exercised", and S8 without an outbox
//! listing is not checked.

mod fidelity;
mod identity;
mod outcome;
mod rules;
mod timing;
mod view;

use crate::check::verdict::{Counts, DeadLetter, InvariantResult, ScenarioCheck, Verdict};
use crate::history::Event;
use crate::invariant::InvariantId;
use crate::state::outbox::{Outbox, OutboxStatus};

pub use fidelity::body_change;
pub use rules::{
    compressed_timeout, late_ms, markdown, rule, Rule, EARLY, FOREIGN_RECORDED, HANG_LIMIT, RULES,
    SINK_READING, SINK_READ_DEADLINE, SINK_STALL, SLOW_AT, TIMEOUT_FLOOR,
};
pub use view::{exchange_end, EventView, SenderRules, SinkView};

/// Grades scenario `scenario` of a sink's history (`events`, with their
/// 1-based lines) against the sender's outbox listing (or why it could
/// not be read).
pub fn judge(
    events: &[(u64, Event)],
    scenario: &str,
    outbox: Result<&Outbox, &str>,
    rules: &SenderRules,
) -> ScenarioCheck {
    let mine: Vec<(u64, Event)> = events
        .iter()
        .filter(|(_, e)| e.scenario() == Some(scenario))
        .cloned()
        .collect();
    let view = SinkView::of(&mine);
    let mut ids = rules.invariants.clone();
    ids.sort();
    ids.dedup();
    let results: Vec<InvariantResult> = ids
        .iter()
        .map(|&id| match id {
            InvariantId::S1 => timing::envelope(&view, rules, outbox),
            InvariantId::S2 => outcome::final_answers(&view, rules),
            InvariantId::S3 => timing::retry_after(&view, rules),
            InvariantId::S4 => outcome::no_redirects(&view),
            InvariantId::S5 => identity::identity(&view, rules),
            InvariantId::S6 => identity::signature(&view, rules),
            InvariantId::S7 => timing::timeout(&view, rules),
            InvariantId::S8 => outcome::none_dropped(&view, outbox),
            InvariantId::S9 => outcome::resource_order(&view),
            receiver => InvariantResult::new(
                receiver,
                Verdict::Unknown,
                "not checked: a receiver's invariant, judged by hookstorm run",
            ),
        })
        .collect();
    let mut check = ScenarioCheck {
        scenario: scenario.to_string(),
        results,
        counts: counts(&view, outbox),
        dead_letters: dead_letters(&view, outbox),
        observations: foreign_traffic(&view).into_iter().collect(),
    };
    let emitted = view.emitted().count();
    if view.attempts == 0 && emitted == 0 {
        check.nothing_sent();
    } else if view.attempts == 0 {
        // The sender took events and sent none of them: S8 says what was
        // dropped; the rest had nothing to judge.
        let why = format!(
            "not decided: the sender sent none of the {emitted} event(s) it took, so there is no request to judge (S8 judges the loss)"
        );
        for r in &mut check.results {
            if r.id != InvariantId::S8 {
                r.verdict = Verdict::Unknown;
                r.summary = why.clone();
                r.evidence.clear();
                r.evidence_total = 0;
            }
        }
    }
    check
}

/// What the sink saw of strangers, when it saw any: how many requests
/// and where the first are, said so that nobody takes them for the
/// sender's.
fn foreign_traffic(view: &SinkView<'_>) -> Option<String> {
    if view.foreign.is_empty() {
        return None;
    }
    let lines: Vec<String> = view.foreign.iter().take(3).map(u64::to_string).collect();
    let capped = if view.foreign.len() >= FOREIGN_RECORDED {
        " (the sink records no more than that per scenario)"
    } else {
        ""
    };
    Some(format!(
        "foreign traffic: {} request(s){capped} the sink could tie to no emitted event and that no account's secret signed (unreadable, another path, an identity never emitted): a stranger's, not charged to the sender (history line(s) {})",
        view.foreign.len(),
        lines.join(", ")
    ))
}

fn counts(view: &SinkView<'_>, outbox: Result<&Outbox, &str>) -> Counts {
    let mut c = Counts {
        deliveries: view.emitted().count(),
        ..Counts::default()
    };
    for e in &view.events {
        for s in e.attempts.iter().chain(&e.followed) {
            c.attempts += 1;
            match s.attempt.outcome {
                crate::history::Outcome::Ok => c.ok += 1,
                crate::history::Outcome::Fail => c.fail += 1,
                crate::history::Outcome::Info => c.info += 1,
            }
        }
    }
    c.dead = dead_letters(view, outbox).len();
    c
}

/// The events the outbox lists as dead, with what they last got.
fn dead_letters(view: &SinkView<'_>, outbox: Result<&Outbox, &str>) -> Vec<DeadLetter> {
    let Ok(o) = outbox else { return Vec::new() };
    view.emitted()
        .filter(|e| {
            o.row(e.account, e.key)
                .is_some_and(|r| r.status == OutboxStatus::Dead)
        })
        .map(|e| {
            let last = e.attempts.last();
            DeadLetter {
                delivery: last
                    .and_then(|s| s.got.delivery_id.clone())
                    .unwrap_or_else(|| e.key.to_string()),
                key: e.key.to_string(),
                account: e.account.to_string(),
                attempts: e.attempts.len() as u32,
                last_status: last.and_then(|s| s.attempt.status),
                last_error: last.and_then(|s| s.attempt.error.clone()),
                recovered: false,
                // A sender's dead letter is its own decision, judged by S1/S8.
                by_design: false,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Emitted;

    fn rules() -> SenderRules {
        SenderRules {
            invariants: InvariantId::SENDER.to_vec(),
            profile: crate::sink::reference_profile(),
            time_scale: 1000.0,
            timeout: std::time::Duration::from_millis(250),
        }
    }

    #[test]
    fn a_sender_that_sent_none_of_the_events_it_took_fails_s8_and_nothing_else_is_decided() {
        let emit = Event::Emit(Emitted {
            scenario: "s".into(),
            at: "2026-12-01T00:00:00.000Z".into(),
            account: "acct_a".into(),
            key: "tsk_1".into(),
            job: None,
            resource: None,
            sequence: None,
            script: vec!["200".into()],
        });
        let outbox =
            Outbox::parse(br#"[{"key":"tsk_1","account":"acct_a","status":"pending"}]"#).unwrap();
        let check = judge(&[(1, emit)], "s", Ok(&outbox), &rules());
        for r in &check.results {
            if r.id == InvariantId::S8 {
                assert_eq!(r.verdict, Verdict::Fail, "{r:?}");
            } else {
                assert_eq!(r.verdict, Verdict::Unknown, "{r:?}");
                assert!(r.summary.contains("sent none of the 1 event(s)"), "{r:?}");
            }
        }
        // Nothing emitted and nothing sent: an empty history, all unknown.
        let empty = judge(&[], "s", Ok(&outbox), &rules());
        assert!(empty
            .results
            .iter()
            .all(|r| r.verdict == Verdict::Unknown && r.summary == crate::check::EMPTY_HISTORY));
    }
}
