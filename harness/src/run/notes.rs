//! The notes a send adds to a scenario's report: redirect findings,
//! dashboard redeliveries, dead letters, and retry gaps against the scaled
//! schedule. They read the scenario's [`Plan`], never the scenario, and
//! return typed [`Note`]s that the reporters put into words.

use crate::check::ScenarioCheck;
use crate::findings::note::Note;
use crate::grading::gaps::Gaps;
use crate::plan::Plan;

use crate::sender::SendSummary;
use crate::target::Target;

/// Notes from the send: redirect findings, redeliveries, dead letters, and
/// retry gaps against the scaled schedule where the front forced retries.
pub(crate) fn send_notes(
    plan: &Plan,
    target: &Target,
    summary: &SendSummary,
    check: &ScenarioCheck,
    time_scale: f64,
    gaps: Gaps,
) -> Vec<Note> {
    let mut notes = Vec::new();
    for r in &summary.redirects {
        notes.push(Note::Redirect {
            status: r.status,
            location: r.location.clone(),
            by_front: r.by_front,
        });
    }
    if summary.redelivered + summary.refused_pending + summary.throttled > 0 {
        notes.push(Note::Redeliveries {
            sent: summary.redelivered,
            refused: summary.refused_pending,
            throttled: summary.throttled,
        });
    }
    let dead = check.counts.dead;
    if dead > 0 {
        let listed = &check.dead_letters;
        let by_design = listed.iter().filter(|d| d.by_design).count();
        let recovered = listed
            .iter()
            .filter(|d| !d.by_design && d.recovered)
            .count();
        notes.push(Note::DeadLetters {
            dead,
            by_design,
            recovered,
        });
    }
    if let Some(f) = plan.front() {
        if f.fail_first > 0 && f.redirect.is_none() {
            let g = gaps.report(
                &target.profile.schedule,
                time_scale,
                crate::grading::gaps::slack(Some(f)),
            );
            if g.measured > 0 {
                notes.push(Note::RetryGaps {
                    within: g.within,
                    measured: g.measured,
                    time_scale,
                    min_ratio: g.min_ratio,
                });
            }
        }
    }
    notes
}
