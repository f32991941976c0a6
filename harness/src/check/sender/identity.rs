//! What each attempt says it is: S5 (the same identity and body on every
//! attempt of an event) and S6 (a valid signature over the raw body, made
//! afresh for each attempt, over the body emitted: byte for byte, or the
//! same JSON where the profile promises only that).

use std::collections::HashMap;

use super::rules::FRESH_SKEW_S;
use super::view::{SenderRules, SinkView};
use crate::check::found::EvidenceSet;
use crate::check::verdict::{InvariantResult, Verdict};
use crate::invariant::InvariantId;
use crate::profile::BodyFidelity;

/// S5 stable-identity.
pub fn identity(view: &SinkView<'_>, rules: &SenderRules) -> InvariantResult {
    let id_header = rules.profile.delivery_id_header();
    let mut found = EvidenceSet::default();
    let mut retried = 0usize;
    // The first event (account, body) was seen under.
    let mut bodies: HashMap<(&str, &str), (&str, u64)> = HashMap::new();
    for e in &view.events {
        let all: Vec<_> = e.requests().collect();
        let Some(first) = all.first() else { continue };
        if e.emitted.is_none() {
            found.push(|| {
                e.evidence(
                    format!(
                        "{} request(s) carry an event identity the harness never emitted",
                        all.len()
                    ),
                    all.iter().take(3).map(|s| s.line).collect(),
                )
            });
        }
        if e.attempts.len() > 1 {
            retried += 1;
        }
        for s in &all[1..] {
            if s.got.delivery_id != first.got.delivery_id {
                found.push(|| {
                    e.evidence(
                        format!(
                            "the delivery id changed between attempts: {} then {}",
                            show_id(&first.got.delivery_id),
                            show_id(&s.got.delivery_id)
                        ),
                        vec![first.line, s.line],
                    )
                });
                break;
            }
            if s.got.body_sha256 != first.got.body_sha256 {
                found.push(|| {
                    e.evidence(
                        "the body changed between attempts (another SHA-256)".into(),
                        vec![first.line, s.line],
                    )
                });
                break;
            }
        }
        if let Some(h) = id_header {
            if first.got.delivery_id.is_none() {
                found.push(|| e.evidence(format!("no {h} header"), vec![first.line]));
            }
        }
        for s in &all {
            let k = (e.account, s.got.body_sha256.as_str());
            match bodies.get(&k) {
                Some((other, line)) if *other != e.key => {
                    let other = other.to_string();
                    let line = *line;
                    found.push(|| {
                        e.evidence(
                            format!("the same body arrived as two events: {other} and {}", e.key),
                            vec![line, s.line],
                        )
                    });
                    break;
                }
                Some(_) => {}
                None => {
                    bodies.insert(k, (e.key, s.line));
                }
            }
        }
    }
    if view.attempts == 0 {
        return InvariantResult::new(
            InvariantId::S5,
            Verdict::Unknown,
            "not exercised: nothing arrived",
        );
    }
    found.into_result(
        InvariantId::S5,
        Verdict::Fail,
        format!(
            "every attempt of each event carried one identity and one body ({retried} event(s) retried)"
        ),
        "attempts of one event arrive under different identities".into(),
    )
}

fn show_id(id: &Option<String>) -> String {
    id.as_deref()
        .map(|s| format!("{s:?}"))
        .unwrap_or_else(|| "none".into())
}

/// S6 fresh-signature.
pub fn signature(view: &SinkView<'_>, rules: &SenderRules) -> InvariantResult {
    let timestamped = rules.profile.scheme.has_timestamp();
    let json_only = rules.profile.body_fidelity == BodyFidelity::Json;
    let mut found = EvidenceSet::default();
    let (mut verified, mut judged_fresh, mut as_emitted) = (0usize, 0usize, 0usize);
    for e in &view.events {
        let all: Vec<_> = e.requests().collect();
        // Body fidelity: the bytes emitted (or, where the profile promises
        // only that, the same JSON), named by what changed; once an event.
        if e.emitted.is_some() {
            let broken = all.iter().find_map(|s| {
                let c = s.got.body_change?;
                (!(json_only && c.json_equivalent())).then_some((s, c))
            });
            match broken {
                Some((s, c)) => found.push(|| {
                    e.evidence(
                        format!(
                            "attempt {}: the body is not the one emitted{}: {} changed",
                            s.attempt.attempt,
                            if json_only {
                                " (not even the same JSON)"
                            } else {
                                " byte for byte"
                            },
                            c.words()
                        ),
                        vec![s.line],
                    )
                }),
                None => as_emitted += 1,
            }
        }
        for s in &all {
            match &s.got.signature_error {
                None => verified += 1,
                Some(why) => found.push(|| {
                    e.evidence(
                        format!(
                            "attempt {}: the signature does not verify: {why}",
                            s.attempt.attempt
                        ),
                        vec![s.line],
                    )
                }),
            }
        }
        if !timestamped {
            continue;
        }
        let Some(first) = e.attempts.first() else {
            continue;
        };
        let Some(t0) = first.got.signed_at else {
            continue;
        };
        for s in &e.attempts[1..] {
            let Some(t) = s.got.signed_at else { continue };
            // A stall of the sink between them lengthens the time between
            // their arrivals, not the sender's.
            let since = s.got.arrived_unix
                - first.got.arrived_unix
                - view.stall_ms(first.got.arrived_unix, s.got.arrived_unix) / 1000.0;
            let dt = (t - t0) as f64;
            let judged = since >= 1.0 + FRESH_SKEW_S;
            judged_fresh += usize::from(judged);
            let what = if dt < 0.0 {
                format!("its signed timestamp {t} is older than the first attempt's {t0}")
            } else if judged && dt < since - 1.0 - FRESH_SKEW_S {
                format!("it arrived {since:.2} s after the first but is signed {dt:.0} s after it (t={t}): an earlier attempt's timestamp, not its own")
            } else {
                continue;
            };
            let n = s.attempt.attempt;
            found.push(|| e.evidence(format!("attempt {n}: {what}"), vec![first.line, s.line]));
            break;
        }
    }
    if view.attempts == 0 {
        return InvariantResult::new(
            InvariantId::S6,
            Verdict::Unknown,
            "not exercised: nothing arrived",
        );
    }
    let fresh = if !timestamped {
        "the scheme signs no timestamp".to_string()
    } else if judged_fresh == 0 {
        "no retry came more than a second after its first attempt, so a reused timestamp could not show".to_string()
    } else {
        format!("{judged_fresh} retries more than a second after their first attempt were signed at their own time")
    };
    let kept = if json_only {
        "the same JSON as emitted"
    } else {
        "the bytes emitted"
    };
    found.into_result(
        InvariantId::S6,
        Verdict::Fail,
        format!("{verified} signatures verified over the raw body; {fresh}; {as_emitted} events' bodies were {kept}"),
        "signatures that do not verify, are not made afresh per attempt, or bodies other than the ones emitted".into(),
    )
}
