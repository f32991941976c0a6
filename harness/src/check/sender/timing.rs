//! The sender's timing: S1 (retries inside the retry envelope, with the
//! profile's jitter and attempt count), S3 (`Retry-After` honoured) and S7
//! (the timeout kept). Gaps are measured on the sink's monotonic clock
//! from the end of the exchange before (as the sender saw it end) to the
//! next request's first byte.

use super::rules::{
    late_ms, timeout_late_ms, EARLY, JITTER_RANGE, JITTER_SAMPLES, JITTER_SPREAD, JITTER_TOP,
    TIMEOUT_EARLY_SHARE,
};
use super::view::{show_ms, unix_end, EventView, SenderRules, SinkView};
use crate::check::found::EvidenceSet;
use crate::check::verdict::{Evidence, InvariantResult, Verdict};
use crate::invariant::InvariantId;
use crate::profile::schedule::Jitter;
use crate::scenario::answer::Answer;
use crate::state::outbox::{Outbox, OutboxStatus};

fn early_ms() -> f64 {
    EARLY.as_secs_f64() * 1000.0
}

/// ` (N not judged: …)` when the sink stalled as some attempts arrived.
fn not_judged(n: usize) -> String {
    match n {
        0 => String::new(),
        n => format!(" ({n} not judged: the sink itself stalled as the attempt before arrived)"),
    }
}

/// S1 retry-envelope.
pub fn envelope(
    view: &SinkView<'_>,
    rules: &SenderRules,
    outbox: Result<&Outbox, &str>,
) -> InvariantResult {
    let profile = &rules.profile;
    let max = profile.schedule.max_attempts;
    let mut found = EvidenceSet::default();
    let mut checked = 0usize;
    let mut samples: Vec<f64> = Vec::new();
    let mut exhausted = 0usize;
    let mut unjudged = 0usize;
    for e in &view.events {
        let atts = &e.attempts;
        for i in 1..atts.len() {
            let (prev, cur) = (&atts[i - 1], &atts[i]);
            let n = i as u32 + 1;
            if n > max {
                found.push(|| {
                    e.evidence(
                        format!("attempt {n} arrived: the profile makes {max} attempts at most"),
                        vec![cur.line],
                    )
                });
                break;
            }
            // A restart may send at once; a final answer is S2's.
            if view.restarted_between(prev, cur) || prev.is_final(profile) {
                continue;
            }
            let retry_after = prev.got.retry_after_s;
            let Some((lo, hi)) = rules.window(n, retry_after, prev.timed_out()) else {
                continue;
            };
            let gap = cur.got.at_ms - e.end_of(i - 1, rules);
            // A stall of the sink between the two delays the second's
            // arrival (the gap looks longer); one before the first delays
            // its arrival (the gap looks shorter): neither is the sender's.
            let first_late = view.read_late(prev, rules.timeout_ms());
            // Waiting for a Retry-After is S3's to judge.
            let early = retry_after.is_none() && gap < lo - early_ms();
            if early && first_late {
                unjudged += 1;
                continue;
            }
            checked += 1;
            let gap = match early {
                true => gap,
                false => gap - view.stall_ms(unix_end(prev), cur.got.arrived_unix),
            };
            if early || gap > hi + late_ms(hi) {
                let side = if early { "before" } else { "past" };
                found.push(|| {
                    e.evidence(
                        format!(
                            "attempt {n} came {} after the end of attempt {} ({}), {side} its window {}–{}",
                            show_ms(gap),
                            n - 1,
                            prev.said(),
                            show_ms(lo),
                            show_ms(hi)
                        ),
                        vec![prev.line, cur.line],
                    )
                });
            } else if retry_after.is_none()
                && rules.judges_jitter()
                && !first_late
                && hi - lo >= JITTER_RANGE.as_secs_f64() * 1000.0
            {
                samples.push((gap - lo) / (hi - lo));
            }
        }
        exhausted += usize::from(dead_letter(e, outbox, rules, &mut found));
    }
    let jitter = jitter_finding(&samples, profile.schedule.jitter);
    if let Some(what) = &jitter {
        found.push(|| Evidence {
            key: "(the schedule)".into(),
            account: None,
            what: what.clone(),
            lines: Vec::new(),
            lines_total: 0,
        });
    }
    if found.is_empty() && checked == 0 && exhausted == 0 {
        let why = match unjudged {
            0 => "not exercised: no event was retried".to_string(),
            n => format!("not decided: the sink itself stalled as the attempt before each of the {n} retries arrived"),
        };
        return InvariantResult::new(InvariantId::S1, Verdict::Unknown, why);
    }
    let spread = match samples.len() {
        0 => "no wait wide enough to show its jitter".to_string(),
        n => format!(
            "{n} wide waits spread from {:.0}% to {:.0}% of their jitter range",
            samples.iter().copied().fold(f64::MAX, f64::min) * 100.0,
            samples.iter().copied().fold(f64::MIN, f64::max) * 100.0
        ),
    };
    let outbox_note = match outbox {
        Ok(_) => format!("{exhausted} dead letter(s) after all {max} attempts"),
        Err(_) => "dead letters not judged: the outbox listing failed".into(),
    };
    found.into_result(
        InvariantId::S1,
        Verdict::Fail,
        format!(
            "{checked} retries inside their windows at 1/{} time{}; {spread}; {outbox_note}",
            rules.time_scale,
            not_judged(unjudged)
        ),
        format!(
            "the retries leave the {} schedule: {}",
            profile.name,
            jitter.unwrap_or_else(|| "waits outside their windows or a wrong attempt count".into())
        ),
    )
}

/// S1's look at an event dead-lettered in the outbox: evidence in `found`
/// when it died before its attempts ran out with no final answer; true
/// when it died after all of them.
fn dead_letter(
    e: &EventView<'_>,
    outbox: Result<&Outbox, &str>,
    rules: &SenderRules,
    found: &mut EvidenceSet,
) -> bool {
    let profile = &rules.profile;
    let max = profile.schedule.max_attempts;
    let atts = &e.attempts;
    // Dead-lettered before its attempts ran out, with no final answer.
    if let (Ok(o), Some(_)) = (outbox, e.emitted) {
        let dead = o
            .row(e.account, e.key)
            .is_some_and(|r| r.status == OutboxStatus::Dead);
        if dead && e.first_final(profile).is_none() {
            let m = atts.len() as u32;
            if m < max {
                found.push(|| {
                    e.evidence(format!(
                            "dead-lettered after {m} attempt(s) (the last answered {}); the profile makes {max}",
                            atts.last().map(|s| s.said()).unwrap_or_else(|| "nothing".into())
                        ),
                        e.lines(3),
                    )
                });
            } else {
                return true;
            }
        }
    }
    false
}

/// Whether the waits with a wide range show the profile's jitter; the
/// finding when they do not.
fn jitter_finding(samples: &[f64], jitter: Jitter) -> Option<String> {
    if jitter == Jitter::None || samples.len() < JITTER_SAMPLES {
        return None;
    }
    let lo = samples.iter().copied().fold(f64::MAX, f64::min);
    let hi = samples.iter().copied().fold(f64::MIN, f64::max);
    if lo > JITTER_TOP {
        return Some(format!(
            "no jitter: all {} waits wider than {} lie in the top {:.0}% of their range (the lowest at {:.0}%)",
            samples.len(),
            crate::text::units::format_duration(JITTER_RANGE),
            (1.0 - JITTER_TOP) * 100.0,
            lo * 100.0
        ));
    }
    if hi - lo < JITTER_SPREAD {
        return Some(format!(
            "no jitter: all {} waits wider than {} lie at one point of their range ({:.0}%–{:.0}%)",
            samples.len(),
            crate::text::units::format_duration(JITTER_RANGE),
            lo * 100.0,
            hi * 100.0
        ));
    }
    None
}

/// S3 retry-after.
pub fn retry_after(view: &SinkView<'_>, rules: &SenderRules) -> InvariantResult {
    let mut found = EvidenceSet::default();
    let (mut tested, mut unjudged) = (0usize, 0usize);
    for e in &view.events {
        for i in 1..e.attempts.len() {
            let (prev, cur) = (&e.attempts[i - 1], &e.attempts[i]);
            let Some(secs) = prev.got.retry_after_s else {
                continue;
            };
            if view.restarted_between(prev, cur) || prev.got.closed_early {
                continue;
            }
            let asked = std::time::Duration::from_secs(secs);
            let base = rules.profile.schedule.base_wait(i as u32 + 1);
            let want = match (rules.profile.sender.retry_after, base) {
                // A capped wait may be jittered below the cap.
                (crate::profile::RetryAfter::Capped(_), Some(b)) => {
                    let capped = rules
                        .profile
                        .sender
                        .retry_after
                        .wait(asked, b)
                        .unwrap_or(asked);
                    rules.scaled_ms(rules.profile.schedule.jitter.range(capped).0)
                }
                _ => rules.scaled_ms(asked),
            };
            let gap = cur.got.at_ms - e.end_of(i - 1, rules);
            let early = gap < want - early_ms();
            if early && view.read_late(prev, rules.timeout_ms()) {
                unjudged += 1;
                continue;
            }
            tested += 1;
            if early {
                found.push(|| {
                    e.evidence(format!(
                            "attempt {} came {} after a Retry-After of {secs} s ({} at this time scale)",
                            i + 1,
                            show_ms(gap),
                            show_ms(want)
                        ),
                        vec![prev.line, cur.line],
                    )
                });
            }
        }
    }
    if tested == 0 {
        return InvariantResult::new(
            InvariantId::S3,
            Verdict::Unknown,
            "not exercised: no answer with Retry-After was followed by a retry",
        );
    }
    found.into_result(
        InvariantId::S3,
        Verdict::Fail,
        format!(
            "{tested} retries after a Retry-After each waited for it{}",
            not_judged(unjudged)
        ),
        "the sender retries sooner than Retry-After asks".into(),
    )
}

/// S7 timeout.
pub fn timeout(view: &SinkView<'_>, rules: &SenderRules) -> InvariantResult {
    let t = rules.timeout_ms();
    let mut found = EvidenceSet::default();
    let (mut held, mut slow) = (0usize, 0usize);
    for e in &view.events {
        for (i, s) in e.attempts.iter().enumerate() {
            // The sink sees a close late by as long as it stalled meanwhile.
            let took = s.got.end_ms - s.got.at_ms - view.stall_ms(s.got.arrived_unix, unix_end(s));
            let n = i + 1;
            match s.answer {
                Some(Answer::Hang) => {
                    held += 1;
                    let what = if !s.got.closed_early {
                        Some(format!(
                            "attempt {n} was never abandoned: held {} without an answer, the timeout is {}",
                            show_ms(took),
                            show_ms(t)
                        ))
                    } else if took > t + timeout_late_ms(t) {
                        Some(format!(
                            "attempt {n} was abandoned after {}, past the timeout of {}",
                            show_ms(took),
                            show_ms(t)
                        ))
                    } else if took < t * TIMEOUT_EARLY_SHARE {
                        Some(format!(
                            "attempt {n} was abandoned after {}, long before the timeout of {}",
                            show_ms(took),
                            show_ms(t)
                        ))
                    } else {
                        None
                    };
                    if let Some(what) = what {
                        found.push(|| e.evidence(what, vec![s.line]));
                    }
                }
                Some(Answer::Slow(_)) => {
                    slow += 1;
                    if s.got.closed_early {
                        found.push(|| {
                            e.evidence(format!(
                                    "attempt {n} was abandoned after {}, before its answer, due inside the timeout of {}",
                                    show_ms(took),
                                    show_ms(t)
                                ),
                                vec![s.line],
                            )
                        });
                    }
                }
                _ => {}
            }
        }
    }
    if held + slow == 0 {
        return InvariantResult::new(
            InvariantId::S7,
            Verdict::Unknown,
            "not exercised: no request was held or answered slowly",
        );
    }
    found.into_result(
        InvariantId::S7,
        Verdict::Fail,
        format!(
            "{held} held request(s) abandoned around the timeout of {}; {slow} slow answer(s) waited for",
            show_ms(t)
        ),
        format!("the sender does not keep its timeout of {}", show_ms(t)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_at_the_top_of_their_range_every_time_are_no_jitter() {
        let j = Jitter::ShortenUpToHalf;
        assert!(jitter_finding(&[1.0, 1.01, 1.02, 1.0, 1.03, 1.2], j)
            .unwrap()
            .contains("top 25%"));
        assert!(jitter_finding(&[0.5, 0.52, 0.51, 0.5, 0.53, 0.5], j)
            .unwrap()
            .contains("one point"));
        assert!(jitter_finding(&[0.1, 0.9, 0.4, 0.7, 0.2, 0.6], j).is_none());
        // Too few waits, or a profile without jitter: not judged.
        assert!(jitter_finding(&[1.0; 5], j).is_none());
        assert!(jitter_finding(&[1.0; 9], Jitter::None).is_none());
    }
}
