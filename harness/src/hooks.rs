//! Run hooks: the steps around the sender that some scenarios need (the
//! fault front before the receiver, the provider API's task book and the
//! reconciliation step) and the notes they add to a scenario's report
//! (redirect findings, redeliveries, dead letters, retry gaps).
//!
//! They read the scenario's [`Plan`], never the scenario, and return their
//! own errors; [`crate::run`] calls them and keeps its pipeline a plain
//! sequence of steps.

use std::time::Duration;

use crate::check::ScenarioCheck;
use crate::front::{Front, FrontConfig, FrontCounts, FrontError};
use crate::gaps::Gaps;
use crate::history::{now_rfc3339, Event, FaultEvent, HistorySink};
use crate::plan::Plan;
use crate::probe::Probe;
use crate::provider::book::{self, TaskBook};
use crate::sender::SendSummary;
use crate::target::Target;

/// Loads the scenario's tasks into the provider API (all finished) and
/// records the final ones in the history; `None` when it does not reconcile.
pub(crate) fn load_provider(
    plan: &Plan,
    target: &Target,
    time_scale: f64,
    sink: &HistorySink,
) -> Option<TaskBook> {
    plan.reconcile()?;
    let provider = target.provider.as_ref()?;
    let book = book::from_plan(plan, time_scale, true);
    for task in book.final_tasks() {
        let _ = sink.write(Event::Provider(task));
    }
    provider.load(book.clone());
    Some(book)
}

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
        (c.forwarded, "forwarded"),
    ] {
        if n > 0 {
            parts.push(format!("{n} {what}"));
        }
    }
    (!parts.is_empty()).then(|| format!("fault front: {}", parts.join(", ")))
}

/// Most calls of the reconcile hook in one scenario.
pub(crate) const MAX_RECONCILE_CALLS: u32 = 20;
/// The pause between two calls of the reconcile hook (a scheduler's next run).
const RECONCILE_PAUSE: Duration = Duration::from_millis(250);

/// Tells the receiver which tasks were submitted, then triggers its
/// reconciliation against the provider API the way a scheduler would:
/// again while it reports throttled lookups or stores more, until every
/// final task is stored, at most [`MAX_RECONCILE_CALLS`] times. A
/// reconciler that stops at its first 429 and resumes on its next run is
/// right, and gets that next run. Says what it did.
pub(crate) async fn reconcile(probe: &Probe, book: &TaskBook, sink: &HistorySink) -> String {
    let record = |action: String, detail: Option<String>| {
        let _ = sink.write(Event::Fault(FaultEvent {
            scenario: book.scenario.clone(),
            at: now_rfc3339(),
            fault: "reconcile".into(),
            action,
            detail,
        }));
    };
    for (account, ids) in book.submitted() {
        let n = ids.len();
        let params = serde_json::json!({ "task_ids": ids, "account": account });
        if let Err(e) = probe.setup("tasks-submitted", params).await {
            record(
                format!("setup tasks-submitted for {account} failed"),
                Some(e.to_string()),
            );
            return format!("reconciliation not run: setup tasks-submitted failed: {e}");
        }
        record(
            format!("told the receiver {n} task(s) of {account} were submitted"),
            None,
        );
    }
    let finals = book.final_tasks();
    let mut last = serde_json::Value::Null;
    let mut previous_rows = None;
    let mut calls = 0;
    let mut stored_all = false;
    while calls < MAX_RECONCILE_CALLS {
        calls += 1;
        match probe.reconcile().await {
            Ok(v) => {
                record(
                    format!("the receiver reconciled against the provider API (call {calls})"),
                    Some(v.to_string()),
                );
                last = v;
            }
            Err(e) => {
                record(
                    format!("reconcile call {calls} failed"),
                    Some(e.to_string()),
                );
                if calls == 1 {
                    return format!("reconciliation failed: {e}");
                }
                break;
            }
        }
        // Stop, as a scheduler's next run would find nothing to do, once
        // every final task is stored, or once the hook reports nothing
        // throttled and the inbox stopped growing.
        let rows = match probe.read_state().await {
            Ok(state) => {
                stored_all =
                    state.missing(finals.iter().map(|t| (t.account.as_str(), t.key.as_str()))) == 0;
                Some(state.inbox.len())
            }
            Err(_) => None,
        };
        let throttled = last.get("throttled").and_then(|t| t.as_u64()).unwrap_or(0);
        if stored_all || (throttled == 0 && rows.is_some() && rows == previous_rows) {
            break;
        }
        previous_rows = rows;
        tokio::time::sleep(RECONCILE_PAUSE).await;
    }
    format!(
        "reconciliation after the outage: {} final task(s) at the provider; the reconcile hook was called {calls} time(s), the way a scheduler would, until {}; its last answer: {last}",
        finals.len(),
        if stored_all {
            "every final task was stored"
        } else {
            "it reported nothing throttled and stored nothing more"
        }
    )
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
