//! `reconcile`: the outage a receiver must recover from by asking the
//! provider. The harness loads the scenario's tasks into its provider API
//! ([`crate::provider`], all finished, the final ones recorded in the
//! history as ground truth), then tells the receiver which tasks were
//! submitted and triggers its reconciliation the way a scheduler would.

use std::time::Duration;

use crate::history::{now_rfc3339, Event, FaultEvent, HistorySink};
use crate::plan::Plan;
use crate::provider::book::{self, TaskBook};
use crate::state::probe::Probe;
use crate::tag::FaultName;
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

/// What the reconciliation after an outage did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reconciliation {
    /// Telling the receiver which tasks were submitted failed: not run.
    SetupFailed {
        /// What the setup hook answered.
        error: String,
    },
    /// The first call of the reconcile hook failed.
    Failed {
        /// What it answered.
        error: String,
    },
    /// The hook was called until it had nothing more to do.
    Done {
        /// Final tasks at the provider.
        finals: usize,
        /// Calls of the reconcile hook.
        calls: u32,
        /// Every final task was stored at the end.
        stored_all: bool,
        /// The hook's last answer (JSON).
        last: String,
    },
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
pub(crate) async fn reconcile(
    probe: &Probe,
    book: &TaskBook,
    sink: &HistorySink,
) -> Reconciliation {
    let record = |action: String, detail: Option<String>| {
        let _ = sink.write(Event::Fault(FaultEvent {
            scenario: book.scenario.clone(),
            at: now_rfc3339(),
            fault: FaultName::Reconcile,
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
            return Reconciliation::SetupFailed {
                error: e.to_string(),
            };
        }
        record(
            format!(
                "told the receiver {} of {account} {} submitted",
                crate::text::words::count(n, "task"),
                crate::text::words::agree(n, "was")
            ),
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
                    return Reconciliation::Failed {
                        error: e.to_string(),
                    };
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
    Reconciliation::Done {
        finals: finals.len(),
        calls,
        stored_all,
        last: last.to_string(),
    }
}
