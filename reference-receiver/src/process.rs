//! What the worker makes of one inbox row, as a pure function.
//!
//! Both stores apply the same `Processed` record, so the parsing rules (and
//! the poison-event failure: a `createdAt` that is not RFC 3339) live in one
//! place and are unit-tested without a database.

use chrono::{DateTime, SecondsFormat, Utc};
use hookstorm::delivery::{job_key, Body};

/// The results of processing one delivery.
#[derive(Debug, Clone, PartialEq)]
pub struct Processed {
    /// The task id.
    pub task_id: String,
    /// The job key (idempotency key without `-rN`), if the task has a key.
    pub job_key: Option<String>,
    /// COMPLETED or FAILED.
    pub status: String,
    /// The creation time, parsed.
    pub created_at: DateTime<Utc>,
    /// The `response` object as JSON text.
    pub response: Option<String>,
    /// Sequenced workload: (resource, sequence).
    pub resource: Option<(String, u64)>,
}

/// Parses a delivery body into what the results table stores.
/// `keep_retry_suffix` is the `keeps-retry-suffix` defect.
pub fn process_body(body: &str, keep_retry_suffix: bool) -> Result<Processed, String> {
    let b: Body = serde_json::from_str(body).map_err(|e| format!("body is not a delivery: {e}"))?;
    if !b.task.status.is_final() {
        return Err(format!(
            "task status {} is not final",
            b.task.status.as_str()
        ));
    }
    let created_at = parse_time(&b.task.created_at)?;
    let job_key = b.task.idempotency_key.as_deref().map(|k| {
        if keep_retry_suffix {
            k.to_string()
        } else {
            job_key(k).to_string()
        }
    });
    let resource = match (b.resource, b.sequence) {
        (Some(r), Some(s)) => Some((r, s)),
        _ => None,
    };
    Ok(Processed {
        task_id: b.task.id,
        job_key,
        status: b.task.status.as_str().to_string(),
        created_at,
        response: b.response.map(|v| v.to_string()),
        resource,
    })
}

/// Parses an RFC 3339 time; the message is what a poison row is marked with.
pub fn parse_time(text: &str) -> Result<DateTime<Utc>, String> {
    DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| format!("createdAt {text:?} is not an RFC 3339 time: {e}"))
}

/// Fixed-width UTC text (microseconds) whose text order is time order: how SQLite stores times.
pub fn sortable_time(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

/// The RFC 3339 text the state reports (`2026-11-29T10:00:00Z`).
pub fn display_time(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::AutoSi, true)
}

/// Re-renders a stored time for the state; leaves unparsable text as it is.
pub fn display_stored(text: &str) -> String {
    parse_time(text)
        .map(display_time)
        .unwrap_or_else(|_| text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(created: &str, key: &str) -> String {
        format!(
            r#"{{"task":{{"id":"tsk_1","idempotencyKey":"{key}","status":"COMPLETED","createdAt":"{created}"}},"credits":1,"response":{{"result":1}},"resource":"r","sequence":3}}"#
        )
    }

    #[test]
    fn a_good_row_yields_job_key_and_resource() {
        let p = process_body(&body("2026-11-29T10:00:00Z", "job-1-r2"), false).unwrap();
        assert_eq!(p.job_key.as_deref(), Some("job-1"));
        assert_eq!(p.resource, Some(("r".into(), 3)));
        assert_eq!(display_time(p.created_at), "2026-11-29T10:00:00Z");
        let kept = process_body(&body("2026-11-29T10:00:00Z", "job-1-r2"), true).unwrap();
        assert_eq!(kept.job_key.as_deref(), Some("job-1-r2"));
    }

    #[test]
    fn a_poison_created_at_is_an_error_naming_the_field() {
        let e = process_body(&body("2026-02-30T25:61:00Z", "j"), false).unwrap_err();
        assert!(e.contains("createdAt"), "{e}");
    }

    #[test]
    fn sortable_time_orders_like_time() {
        let a = sortable_time(parse_time("2026-11-29T10:00:00Z").unwrap());
        let b = sortable_time(parse_time("2026-11-29T10:00:00.5Z").unwrap());
        let c = sortable_time(parse_time("2026-11-29T11:00:00+01:00").unwrap());
        assert!(a < b && c < b && c == a);
    }
}
