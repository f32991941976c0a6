//! The body of a delivery, as `docs/contract.md` defines it, and the job-key rule.
//!
//! The sender builds these bodies, the reference receiver and the SQL probe
//! read them, and the checker reasons about their fields; keeping the shape
//! in one module keeps all of them in agreement. A leaf: it imports none of
//! the stages, so the profiles, the history and the provider can name a
//! body or a task status without reaching into the plan.

use rand::Rng;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A task's final status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum TaskStatus {
    /// Finished with a result.
    Completed,
    /// Finished with an error.
    Failed,
    /// Waiting to start (never delivered; only seen through the provider API).
    Queued,
    /// Running (never delivered; only seen through the provider API).
    Processing,
}

impl TaskStatus {
    /// Only COMPLETED and FAILED are final.
    pub fn is_final(self) -> bool {
        matches!(self, TaskStatus::Completed | TaskStatus::Failed)
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Completed => "COMPLETED",
            TaskStatus::Failed => "FAILED",
            TaskStatus::Queued => "QUEUED",
            TaskStatus::Processing => "PROCESSING",
        }
    }
}

/// The `task` object of a delivery.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// The unit of work: the deduplication key.
    pub id: String,
    /// The caller's job identity, maybe with a `-rN` resubmission suffix.
    pub idempotency_key: Option<String>,
    /// Final status.
    pub status: TaskStatus,
    /// When the task was created (RFC 3339).
    pub created_at: String,
}

/// A delivery body: `{task, credits, response}`, plus the optional `test`
/// flag and the sequenced-resource fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Body {
    /// The task.
    pub task: Task,
    /// Credits charged.
    #[serde(default)]
    pub credits: u32,
    /// `{"result": …}` for COMPLETED, `{"error": …}` for FAILED; absent while not final.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<Value>,
    /// A dashboard test delivery.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub test: bool,
    /// Sequenced workload: the resource this event updates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    /// Sequenced workload: the resource's sequence number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequence: Option<u64>,
}

/// The job key of an idempotency key: the key with a trailing `-r<digits>`
/// removed (`job-42-r2` → `job-42`; `job-r` and `job-42-rx` stay as they are).
pub fn job_key(idempotency_key: &str) -> &str {
    if let Some(pos) = idempotency_key.rfind("-r") {
        let digits = &idempotency_key[pos + 2..];
        if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
            return &idempotency_key[..pos];
        }
    }
    idempotency_key
}

/// The fixed epoch createdAt values are spread from, so that a plan never
/// depends on the day it is made.
pub const EPOCH: &str = "2026-11-29T00:00:00Z";

/// The createdAt of a poison event: shaped like a date, but not one.
pub const POISON_CREATED_AT: &str = "2026-02-30T25:61:00Z";

/// `prefix` followed by 16 random hex digits.
pub fn random_id<R: Rng + ?Sized>(prefix: &str, rng: &mut R) -> String {
    format!("{prefix}{:016x}", rng.gen::<u64>())
}

/// Makes a task body.
pub fn task_body<R: Rng + ?Sized>(
    rng: &mut R,
    key: Option<String>,
    status: TaskStatus,
    created_at: String,
) -> Body {
    let id = random_id("tsk_", rng);
    let credits = rng.gen_range(1..=9);
    let response = match status {
        TaskStatus::Failed => {
            serde_json::json!({"error": {"code": "MODEL_ERROR", "message": "the task failed"}})
        }
        _ => serde_json::json!({"result": {"answer": format!("answer {:08x}", rng.gen::<u32>())}}),
    };
    Body {
        task: Task {
            id,
            idempotency_key: key,
            status,
            created_at,
        },
        credits,
        response: Some(response),
        test: false,
        resource: None,
        sequence: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_key_strips_only_a_numeric_resubmission_suffix() {
        assert_eq!(job_key("job-42-r1"), "job-42");
        assert_eq!(job_key("job-42-r12"), "job-42");
        assert_eq!(job_key("job-42"), "job-42");
        assert_eq!(job_key("job-42-r"), "job-42-r");
        assert_eq!(job_key("job-42-rx"), "job-42-rx");
        assert_eq!(job_key("job-r1-r2"), "job-r1");
    }

    #[test]
    fn body_round_trips_in_contract_shape() {
        let text = r#"{"task":{"id":"tsk_1","idempotencyKey":"job-42-r1","status":"COMPLETED","createdAt":"2026-11-29T10:00:00Z"},"credits":3,"response":{"result":{"a":1}}}"#;
        let body: Body = serde_json::from_str(text).unwrap();
        assert_eq!(body.task.status, TaskStatus::Completed);
        assert!(!body.test);
        assert_eq!(serde_json::to_string(&body).unwrap(), text);
    }
}
