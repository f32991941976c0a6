//! The receiver state the checker reads, as `docs/state.md` defines it.
//!
//! Every probe (HTTP, SQL, command) produces this one shape; the reference
//! receiver serves it from its admin API. Every section but `inbox` is
//! optional: an absent section makes the checks that need it `unknown`,
//! never `pass`.
//!
//! A big state is never held whole on its way in: [`stream`] reads either
//! wire form (one document, or JSON Lines) row by row into a sink.
//! [`outbox`] is the sender side's counterpart: a sender's own listing of
//! the events it owes.

pub mod late;
pub mod outbox;
pub mod probe;

pub mod stream;

use serde::{Deserialize, Serialize};

/// One inbox row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InboxRow {
    /// The deduplication key (the task id).
    pub key: String,
    /// The account it was received for; absent when the receiver has one.
    #[serde(default)]
    pub account: Option<String>,
    /// Whether the worker processed it.
    #[serde(default)]
    pub processed: bool,
    /// The processing error, for rows marked failed. A row with an error
    /// is settled whether or not `processed` is set.
    #[serde(default)]
    pub error: Option<String>,
}

impl InboxRow {
    /// Whether the worker is done with the row: processed, or marked failed
    /// (`error` set). A receiver that records the error on a poison row and
    /// leaves `processed_at` empty has settled it.
    pub fn settled(&self) -> bool {
        self.processed || self.error.is_some()
    }
}

/// One results row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResultRow {
    /// The task id.
    pub task_id: String,
    /// The job key (idempotency key without `-rN`).
    #[serde(default)]
    pub job_key: Option<String>,
    /// COMPLETED or FAILED, as the receiver stores it (for people: the
    /// checker takes who may win from the history, per the profile).
    pub status: String,
    /// The task's createdAt.
    #[serde(default)]
    pub created_at: Option<String>,
    /// The account, when the receiver scopes results by account.
    #[serde(default)]
    pub account: Option<String>,
}

/// The winner the receiver reports for a job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Winner {
    /// The job key.
    pub job_key: String,
    /// The winning task id.
    pub task_id: String,
    /// The account, when scoped.
    #[serde(default)]
    pub account: Option<String>,
}

/// How many times the business effect of a key really ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Effect {
    /// The key (task id).
    pub key: String,
    /// Times the effect ran.
    pub count: u64,
    /// The account, when scoped.
    #[serde(default)]
    pub account: Option<String>,
}

/// The stored sequence of a resource.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceRow {
    /// The resource id.
    pub resource: String,
    /// The sequence currently applied.
    pub sequence: u64,
    /// The account, when scoped.
    #[serde(default)]
    pub account: Option<String>,
}

/// A receiver's state, as every probe returns it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct State {
    /// The inbox: one row per stored delivery.
    pub inbox: Vec<InboxRow>,
    /// The results table, if reported.
    #[serde(default)]
    pub results: Option<Vec<ResultRow>>,
    /// The winner per job, if reported.
    #[serde(default)]
    pub winners: Option<Vec<Winner>>,
    /// Effect counters, if reported.
    #[serde(default)]
    pub effects: Option<Vec<Effect>>,
    /// Sequenced resources, if reported.
    #[serde(default)]
    pub resources: Option<Vec<ResourceRow>>,
}

impl State {
    /// Whether every inbox row is settled (processed or marked failed).
    pub fn drained(&self) -> bool {
        self.inbox.iter().all(InboxRow::settled)
    }

    /// Whether the inbox holds `key` for `account` (a row without an
    /// account stands for any account).
    pub fn holds(&self, account: &str, key: &str) -> bool {
        self.inbox
            .iter()
            .any(|r| r.key == key && r.account.as_deref().is_none_or(|a| a == account))
    }

    /// How many of these (account, key) pairs the inbox lacks (a row
    /// without an account stands for any account).
    pub fn missing<'a>(&self, keys: impl IntoIterator<Item = (&'a str, &'a str)>) -> usize {
        let have: std::collections::HashSet<(Option<&str>, &str)> = self
            .inbox
            .iter()
            .map(|r| (r.account.as_deref(), r.key.as_str()))
            .collect();
        keys.into_iter()
            .filter(|(a, k)| !have.contains(&(Some(*a), *k)) && !have.contains(&(None, *k)))
            .count()
    }

    /// Keeps only the rows of every section whose (account, key) `keep`
    /// accepts: inbox rows and effects by their key, results and winners by
    /// their task id.
    pub fn retain_keys(&mut self, keep: impl Fn(Option<&str>, &str) -> bool) {
        self.inbox.retain(|r| keep(r.account.as_deref(), &r.key));
        if let Some(rows) = self.results.as_mut() {
            rows.retain(|r| keep(r.account.as_deref(), &r.task_id));
        }
        if let Some(rows) = self.winners.as_mut() {
            rows.retain(|r| keep(r.account.as_deref(), &r.task_id));
        }
        if let Some(rows) = self.effects.as_mut() {
            rows.retain(|r| keep(r.account.as_deref(), &r.key));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_invariants_md_example_parses() {
        let text = r#"{
          "inbox":   [{"key": "tsk_1", "account": "acct_a", "processed": true, "error": null}],
          "results": [{"task_id": "tsk_1", "job_key": "job-42", "status": "COMPLETED",
                       "created_at": "2026-11-29T10:00:00Z"}],
          "winners": [{"job_key": "job-42", "task_id": "tsk_1"}],
          "effects": [{"key": "tsk_1", "count": 1}],
          "resources": [{"resource": "order-7", "sequence": 12}]
        }"#;
        let s: State = serde_json::from_str(text).unwrap();
        assert!(s.drained());
        assert_eq!(s.winners.unwrap()[0].task_id, "tsk_1");
    }

    #[test]
    fn a_row_marked_failed_is_settled_without_processed() {
        let s: State = serde_json::from_str(
            r#"{"inbox": [{"key": "a", "processed": false, "error": "bad createdAt"},
                          {"key": "b", "processed": true}]}"#,
        )
        .unwrap();
        assert!(s.inbox.iter().all(InboxRow::settled));
        assert!(s.drained());
        let s: State =
            serde_json::from_str(r#"{"inbox": [{"key": "a", "processed": false}]}"#).unwrap();
        assert!(!s.drained());
    }

    #[test]
    fn a_row_without_an_account_holds_the_key_for_every_account() {
        let s: State =
            serde_json::from_str(r#"{"inbox": [{"key": "a"}, {"key": "b", "account": "acct_a"}]}"#)
                .unwrap();
        assert!(s.holds("acct_b", "a"));
        assert!(s.holds("acct_a", "b") && !s.holds("acct_b", "b"));
        assert_eq!(
            s.missing([("acct_a", "a"), ("acct_b", "b"), ("acct_a", "c")]),
            2
        );
    }

    #[test]
    fn only_inbox_is_required() {
        let s: State = serde_json::from_str(r#"{"inbox": []}"#).unwrap();
        assert!(s.results.is_none() && s.effects.is_none());
        assert!(serde_json::from_str::<State>("{}").is_err());
    }
}
