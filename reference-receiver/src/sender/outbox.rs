//! The reference sender's outbox on SQLite: the outbox pattern's table, one
//! row per event, written in the same transaction as the business write
//! (here, the emit call), and the worker's reads and updates of it.
//!
//! Statuses are `pending`, `delivered` and `dead`; `next_at` is when the
//! row is due (unix milliseconds); `signed_at` keeps the first attempt's
//! timestamp (only the `reuses-timestamp` variant reads it back). Every
//! statement is short, so one connection behind a mutex serves the API
//! and the worker.

use std::path::Path;
use std::sync::Mutex;

use rusqlite::{params, Connection, OptionalExtension};

/// One event to store (what an emit call carries).
#[derive(Debug, Clone, serde::Deserialize)]
pub struct NewEvent {
    /// The account.
    pub account: String,
    /// Where to deliver it.
    pub url: String,
    /// Its identity.
    pub key: String,
    /// Its type (the event header's value).
    #[serde(default, rename = "type")]
    pub event_type: Option<String>,
    /// The body, exactly as it must be sent.
    pub body: String,
    /// The delivery id to use, when the caller sets it.
    #[serde(default)]
    pub delivery_id: Option<String>,
    /// Headers to send as they are.
    #[serde(default)]
    pub headers: std::collections::BTreeMap<String, String>,
    /// The resource it updates.
    #[serde(default)]
    pub resource: Option<String>,
}

/// A row the worker delivers.
#[derive(Debug, Clone)]
pub struct Row {
    /// Insertion order.
    pub seq: i64,
    /// The account.
    pub account: String,
    /// The identity.
    pub key: String,
    /// Where to.
    pub url: String,
    /// The exact body.
    pub body: Vec<u8>,
    /// The event type.
    pub event_type: Option<String>,
    /// Headers to send as they are (JSON object text).
    pub headers: String,
    /// The delivery id.
    pub delivery_id: String,
    /// The resource.
    pub resource: Option<String>,
    /// Attempts made so far.
    pub attempts: u32,
    /// The first attempt's signature timestamp, once made.
    pub signed_at: Option<i64>,
}

/// A row as the outbox listing shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Listed {
    /// The identity.
    pub key: String,
    /// The account.
    pub account: String,
    /// `pending`, `delivered` or `dead`.
    pub status: String,
    /// Attempts made.
    pub attempts: u32,
}

/// The outbox.
pub struct Outbox {
    conn: Mutex<Connection>,
}

impl std::fmt::Debug for Outbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Outbox")
    }
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS webhook_outbox (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    account TEXT NOT NULL,
    key TEXT NOT NULL,
    url TEXT NOT NULL,
    body BLOB NOT NULL,
    event_type TEXT,
    headers TEXT NOT NULL DEFAULT '{}',
    delivery_id TEXT NOT NULL,
    resource TEXT,
    status TEXT NOT NULL DEFAULT 'pending',
    attempts INTEGER NOT NULL DEFAULT 0,
    next_at INTEGER NOT NULL,
    signed_at INTEGER,
    last_error TEXT,
    UNIQUE (account, key)
);
CREATE INDEX IF NOT EXISTS webhook_outbox_due ON webhook_outbox (status, next_at);
";

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

impl Outbox {
    /// Opens (or creates) the outbox in a SQLite file.
    pub fn open(path: &Path) -> rusqlite::Result<Outbox> {
        let conn = Connection::open(path)?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;")?;
        conn.execute_batch(SCHEMA)?;
        Ok(Outbox {
            conn: Mutex::new(conn),
        })
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Commits `events` in one transaction, due at once; an event already
    /// in the outbox (same account and key) is left as it is. Each gets
    /// `new_id()` as its delivery id unless the caller set one.
    pub fn insert(
        &self,
        events: &[NewEvent],
        mut new_id: impl FnMut() -> String,
    ) -> rusqlite::Result<usize> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        let mut n = 0;
        {
            let mut stmt = tx.prepare(
                "INSERT OR IGNORE INTO webhook_outbox
                 (account, key, url, body, event_type, headers, delivery_id, resource, next_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            )?;
            let now = now_ms();
            for e in events {
                let headers = serde_json::to_string(&e.headers).unwrap_or_else(|_| "{}".into());
                let id = e.delivery_id.clone().unwrap_or_else(&mut new_id);
                n += stmt.execute(params![
                    e.account,
                    e.key,
                    e.url,
                    e.body.as_bytes(),
                    e.event_type,
                    headers,
                    id,
                    e.resource,
                    now
                ])?;
            }
        }
        tx.commit()?;
        Ok(n)
    }

    /// Pending rows due by `now_ms`, in insertion order (newest first with
    /// `newest_first`).
    pub fn due(&self, now: i64, newest_first: bool) -> rusqlite::Result<Vec<Row>> {
        let conn = self.conn();
        let order = if newest_first { "DESC" } else { "ASC" };
        let mut stmt = conn.prepare(&format!(
            "SELECT seq, account, key, url, body, event_type, headers, delivery_id, resource, attempts, signed_at
             FROM webhook_outbox WHERE status = 'pending' AND next_at <= ?1 ORDER BY seq {order} LIMIT 256"
        ))?;
        let rows = stmt.query_map(params![now], |r| {
            Ok(Row {
                seq: r.get(0)?,
                account: r.get(1)?,
                key: r.get(2)?,
                url: r.get(3)?,
                body: r.get(4)?,
                event_type: r.get(5)?,
                headers: r.get(6)?,
                delivery_id: r.get(7)?,
                resource: r.get(8)?,
                attempts: r.get(9)?,
                signed_at: r.get(10)?,
            })
        })?;
        rows.collect()
    }

    /// Pending rows of `resource` with a smaller `seq` that were never
    /// attempted: a first send of `seq` must wait for them.
    pub fn unsent_before(&self, resource: &str, seq: i64) -> rusqlite::Result<bool> {
        let conn = self.conn();
        conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM webhook_outbox
             WHERE resource = ?1 AND seq < ?2 AND status = 'pending' AND attempts = 0)",
            params![resource, seq],
            |r| r.get(0),
        )
    }

    /// When the next pending row is due (unix ms), leaving out the rows
    /// in `skip` (in flight, or waiting on an older row); `None` if none.
    pub fn next_due(&self, skip: &[i64]) -> rusqlite::Result<Option<i64>> {
        let conn = self.conn();
        let list = skip
            .iter()
            .map(i64::to_string)
            .collect::<Vec<_>>()
            .join(",");
        conn.query_row(
            &format!("SELECT MIN(next_at) FROM webhook_outbox WHERE status = 'pending' AND seq NOT IN ({list})"),
            [],
            |r| r.get(0),
        )
        .optional()
        .map(Option::flatten)
    }

    /// Marks a row delivered.
    pub fn delivered(&self, seq: i64, attempts: u32) -> rusqlite::Result<()> {
        self.conn().execute(
            "UPDATE webhook_outbox SET status = 'delivered', attempts = ?2 WHERE seq = ?1",
            params![seq, attempts],
        )?;
        Ok(())
    }

    /// Marks a row dead (a dead letter).
    pub fn dead(&self, seq: i64, attempts: u32, error: &str) -> rusqlite::Result<()> {
        self.conn().execute(
            "UPDATE webhook_outbox SET status = 'dead', attempts = ?2, last_error = ?3 WHERE seq = ?1",
            params![seq, attempts, error],
        )?;
        Ok(())
    }

    /// Schedules a row's next attempt.
    pub fn retry_at(
        &self,
        seq: i64,
        attempts: u32,
        next_at: i64,
        error: &str,
    ) -> rusqlite::Result<()> {
        self.conn().execute(
            "UPDATE webhook_outbox SET attempts = ?2, next_at = ?3, last_error = ?4 WHERE seq = ?1 AND status = 'pending'",
            params![seq, attempts, next_at, error],
        )?;
        Ok(())
    }

    /// Remembers the first attempt's signature timestamp.
    pub fn set_signed_at(&self, seq: i64, t: i64) -> rusqlite::Result<()> {
        self.conn().execute(
            "UPDATE webhook_outbox SET signed_at = ?2 WHERE seq = ?1 AND signed_at IS NULL",
            params![seq, t],
        )?;
        Ok(())
    }

    /// Every row, in insertion order, as the listing shows it.
    pub fn list(&self) -> rusqlite::Result<Vec<Listed>> {
        let conn = self.conn();
        let mut stmt =
            conn.prepare("SELECT key, account, status, attempts FROM webhook_outbox ORDER BY seq")?;
        let rows = stmt.query_map([], |r| {
            Ok(Listed {
                key: r.get(0)?,
                account: r.get(1)?,
                status: r.get(2)?,
                attempts: r.get(3)?,
            })
        })?;
        rows.collect()
    }

    /// Deletes every row.
    pub fn clear(&self) -> rusqlite::Result<()> {
        self.conn().execute("DELETE FROM webhook_outbox", [])?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(key: &str, resource: Option<&str>) -> NewEvent {
        NewEvent {
            account: "acct_a".into(),
            url: "http://127.0.0.1:9/hooks/acct_a".into(),
            key: key.into(),
            event_type: Some("task.completed".into()),
            body: "{\"task\":{}}".into(),
            delivery_id: None,
            headers: Default::default(),
            resource: resource.map(str::to_string),
        }
    }

    #[test]
    fn an_emitted_event_is_due_at_once_and_stored_once() {
        let dir = tempfile::tempdir().unwrap();
        let o = Outbox::open(&dir.path().join("outbox.db")).unwrap();
        let mut n = 0;
        let mut id = || {
            n += 1;
            format!("msg_{n}")
        };
        assert_eq!(
            o.insert(&[event("k1", Some("r")), event("k2", Some("r"))], &mut id)
                .unwrap(),
            2
        );
        assert_eq!(
            o.insert(&[event("k1", None)], &mut id).unwrap(),
            0,
            "same account and key"
        );
        let due = o.due(now_ms() + 1, false).unwrap();
        assert_eq!(due.len(), 2);
        assert_eq!(due[0].delivery_id, "msg_1");
        assert!(o.unsent_before("r", due[1].seq).unwrap());
        o.retry_at(due[0].seq, 1, now_ms() + 60_000, "503").unwrap();
        assert!(!o.unsent_before("r", due[1].seq).unwrap());
        o.dead(due[1].seq, 10, "503").unwrap();
        let list = o.list().unwrap();
        assert_eq!(
            (list[0].status.as_str(), list[1].status.as_str()),
            ("pending", "dead")
        );
        assert!(o.next_due(&[]).unwrap().is_some());
        assert!(o.next_due(&[due[0].seq, due[1].seq]).unwrap().is_none());
        o.clear().unwrap();
        assert!(o.list().unwrap().is_empty());
    }
}
