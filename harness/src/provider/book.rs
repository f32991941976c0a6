//! The provider's task book: which tasks it knows, how each one's life goes
//! (QUEUED → PROCESSING, sometimes back to QUEUED, → COMPLETED/FAILED), and
//! which it no longer keeps. Built from a scenario's [`Plan`] (the very one the sender delivers), so
//! a seed fixes it.

use rand::Rng;
use serde::{Deserialize, Serialize};

use crate::delivery::{random_id, Body, Task, TaskStatus};
use crate::fault_spec::ReconcileSpec;
use crate::history::{Intent, ProviderTask};
use crate::plan::Plan;

/// One task the provider knows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BookTask {
    /// The account it belongs to.
    pub account: String,
    /// The body served once the task is final (the bytes a delivery carries).
    pub body: String,
    /// Its life: (milliseconds after the book was loaded, status). Negative
    /// offsets lie in the past. Before the first stage the task is QUEUED.
    pub stages: Vec<(i64, TaskStatus)>,
    /// The provider no longer keeps it (404).
    #[serde(default)]
    pub expired: bool,
}

/// Every task the provider knows, with the API's settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskBook {
    /// The scenario it was built for.
    pub scenario: String,
    /// Stage offsets are divided by this.
    pub time_scale: f64,
    /// Share of task ids whose first lookup is answered 429.
    #[serde(default)]
    pub throttle_share: f64,
    /// The tasks.
    pub tasks: Vec<BookTask>,
}

impl BookTask {
    /// The task's id (from its body).
    pub fn id(&self) -> Option<String> {
        serde_json::from_str::<Body>(&self.body)
            .ok()
            .map(|b| b.task.id)
    }

    /// Its status `elapsed_ms` (scaled) after the book was loaded.
    pub fn status_at(&self, elapsed_ms: i64) -> TaskStatus {
        self.stages
            .iter()
            .take_while(|(at, _)| *at <= elapsed_ms)
            .last()
            .map(|(_, s)| *s)
            .unwrap_or(TaskStatus::Queued)
    }
}

/// A lifecycle that ends with `last` at `end_ms` (QUEUED, PROCESSING,
/// maybe requeued and PROCESSING again, then `last`).
fn lifecycle<R: Rng + ?Sized>(
    rng: &mut R,
    end_ms: i64,
    last: TaskStatus,
) -> Vec<(i64, TaskStatus)> {
    // The contract: up to 4 h queued, up to 5 min from first start to finish.
    let run = rng.gen_range(1_000..=300_000i64);
    let start = end_ms - run;
    let mut stages = vec![
        (start - rng.gen_range(1_000..=60_000i64), TaskStatus::Queued),
        (start, TaskStatus::Processing),
    ];
    if rng.gen_bool(0.3) {
        let back = start + run / 3;
        stages.push((back, TaskStatus::Queued));
        stages.push((back + run / 6, TaskStatus::Processing));
    }
    stages.push((end_ms, last));
    stages
}

/// Builds the book of a scenario: every genuine task of its plan, finished
/// before the book is loaded (`finished = true`) or finishing over the next
/// minutes of scaled time; plus the reconcile spec's pending and expired tasks.
pub fn from_plan(plan: &Plan, time_scale: f64, finished: bool) -> TaskBook {
    let spec = plan.reconcile().cloned().unwrap_or(ReconcileSpec {
        pending: 0,
        expired: 0,
        throttle_share: 0.0,
    });
    let mut rng = plan.rng("provider", 0);
    let mut seen = std::collections::HashSet::new();
    let mut tasks = Vec::new();
    for d in &plan.deliveries {
        if d.intent != Intent::Genuine || !seen.insert((d.account.clone(), d.body.task.id.clone()))
        {
            continue;
        }
        let end = if finished {
            -rng.gen_range(1_000..=60_000i64)
        } else {
            rng.gen_range(5_000..=600_000i64)
        };
        tasks.push(BookTask {
            account: d.account.clone(),
            body: String::from_utf8_lossy(&d.bytes).into_owned(),
            stages: lifecycle(&mut rng, end, d.body.task.status),
            expired: false,
        });
    }
    let account = plan.accounts[0].clone();
    let extra = |rng: &mut rand_chacha::ChaCha8Rng, i: usize| Body {
        task: Task {
            id: random_id("tsk_", rng),
            idempotency_key: Some(format!("job-pending-{i}")),
            status: TaskStatus::Queued,
            created_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        },
        credits: 0,
        response: None,
        test: false,
        resource: None,
        sequence: None,
    };
    for i in 0..spec.pending {
        let body = extra(&mut rng, i);
        // Never final within a run: queued, started, maybe back in the queue.
        let mut stages = vec![
            (-5_000, TaskStatus::Queued),
            (-2_000, TaskStatus::Processing),
        ];
        if i % 2 == 1 {
            stages.push((-1_000, TaskStatus::Queued));
        }
        tasks.push(BookTask {
            account: account.clone(),
            body: serde_json::to_string(&body).unwrap_or_default(),
            stages,
            expired: false,
        });
    }
    for i in 0..spec.expired {
        let mut body = extra(&mut rng, spec.pending + i);
        body.task.status = TaskStatus::Completed;
        body.response = Some(serde_json::json!({"result": {}}));
        tasks.push(BookTask {
            account: account.clone(),
            body: serde_json::to_string(&body).unwrap_or_default(),
            stages: vec![(-3_600_000, TaskStatus::Completed)],
            expired: true,
        });
    }
    TaskBook {
        scenario: plan.scenario.clone(),
        time_scale,
        throttle_share: spec.throttle_share,
        tasks,
    }
}

impl TaskBook {
    /// The final tasks still kept, as history lines (reconciliation ground truth).
    pub fn final_tasks(&self) -> Vec<ProviderTask> {
        self.tasks
            .iter()
            .filter(|t| !t.expired)
            .filter_map(|t| {
                let body: Body = serde_json::from_str(&t.body).ok()?;
                let last = t.stages.last()?;
                (last.0 <= 0 && last.1.is_final()).then(|| ProviderTask {
                    scenario: self.scenario.clone(),
                    account: t.account.clone(),
                    key: body.task.id.clone(),
                    job: body
                        .task
                        .idempotency_key
                        .as_deref()
                        .map(|k| crate::delivery::job_key(k).to_string()),
                    task_status: last.1,
                    created_at: body.task.created_at,
                })
            })
            .collect()
    }

    /// Every task id per account, in book order (the `tasks-submitted` setup).
    pub fn submitted(&self) -> Vec<(String, Vec<String>)> {
        let mut out: Vec<(String, Vec<String>)> = Vec::new();
        for t in &self.tasks {
            let Some(id) = t.id() else { continue };
            match out.iter_mut().find(|(a, _)| *a == t.account) {
                Some((_, ids)) => ids.push(id),
                None => out.push((t.account.clone(), vec![id])),
            }
        }
        out
    }
}
