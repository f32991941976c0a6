//! Run hooks: starting the fault front around the sender, and the notes a
//! send adds to a scenario's report (what the front did, redirect
//! findings, redeliveries, dead letters, retry gaps).
//!
//! They read the scenario's [`Plan`], never the scenario, and return their
//! own errors; [`crate::run`] calls them and keeps its pipeline a plain
//! sequence of steps.

use std::time::Duration;

use crate::check::ScenarioCheck;
use crate::fault::front::{Front, FrontConfig, FrontCounts, FrontError};
use crate::history::HistorySink;
use crate::plan::Plan;
use crate::run::gaps::Gaps;

use crate::sender::SendSummary;
use crate::target::Target;

/// Starts the scenario's fault front, if it asks for one.
pub(crate) async fn start_front(
    plan: &Plan,
    target: &Target,
    sink: &HistorySink,
) -> Result<Option<Front>, FrontError> {
    let Some(spec) = plan.front() else {
        return Ok(None);
    };
    let front = Front::start(FrontConfig {
        scenario: plan.scenario.clone(),
        spec: spec.clone(),
        seed: plan.seed,
        target_url: target.url.clone(),
        sink: Some(sink.clone()),
    })
    .await?;
    Ok(Some(front))
}

/// One line on what the front did.
pub(crate) fn front_note(c: FrontCounts) -> Option<String> {
    let mut parts = Vec::new();
    for (n, what) in [
        (c.failed, "answered with an error status"),
        (c.redirected, "redirected"),
        (c.delayed, "held"),
        (c.stalled, "stalled mid-upload and cut"),
        (c.unreachable, "found the receiver unreachable"),
        (c.cut_answers, "cut an answer over the byte budget"),
        (c.forwarded, "forwarded"),
    ] {
        if n > 0 {
            parts.push(format!("{n} {what}"));
        }
    }
    (!parts.is_empty()).then(|| format!("fault front: {}", parts.join(", ")))
}

/// Notes from the send: redirect findings, redeliveries, dead letters, and
/// retry gaps against the scaled schedule where the front forced retries.
pub(crate) fn send_notes(
    plan: &Plan,
    target: &Target,
    summary: &SendSummary,
    check: &ScenarioCheck,
    time_scale: f64,
    gaps: Gaps,
) -> Vec<String> {
    let mut notes = Vec::new();
    for r in &summary.redirects {
        let location = r.location.as_deref().unwrap_or("(no Location header)");
        notes.push(if r.by_front {
            // The harness's own front invented this URL: nothing to register.
            format!(
                "redirect by design: the scenario's front answered {} (Location {location}) and the sender, like a real one, did not follow it; those deliveries were retried and died as expected, nothing to change in the receiver",
                r.status
            )
        } else {
            format!(
                "redirect: the receiver URL answered {}; redirects are never followed, so every such attempt failed. Register the final URL instead: {location}",
                r.status
            )
        });
    }
    if summary.redelivered + summary.refused_pending + summary.throttled > 0 {
        notes.push(format!(
            "dashboard redeliveries: {} sent, {} refused while pending, {} waited for the hourly limit",
            summary.redelivered, summary.refused_pending, summary.throttled
        ));
    }
    let dead = check.counts.dead;
    if dead > 0 {
        let recovered = check.dead_letters.iter().filter(|d| d.recovered).count();
        notes.push(format!(
            "dead letters: {dead} deliveries ran out of attempts ({recovered} of those listed recovered later); see the dead letter list"
        ));
    }
    if let Some(f) = plan.front() {
        if f.fail_first > 0 && f.redirect.is_none() {
            let g = gaps.report(
                &target.profile.schedule,
                time_scale,
                Duration::from_millis(50) + f.stall_for.0.mul_f64(f64::from(f.stall_body as u8)),
            );
            if g.measured > 0 {
                notes.push(format!(
                    "retry gaps: {} of {} within the schedule at time scale {time_scale} (shortest at {:.2}x its minimum)",
                    g.within, g.measured, g.min_ratio
                ));
            }
        }
    }
    notes
}
