//! A sender's outbox as the sender lists it: the ground truth of what it
//! owes (`hookstorm sink`, `docs/sink.md`). The sink knows what it asked
//! the sender to emit and what arrived; only the sender knows which events
//! it committed, which it counts as delivered and which it dead-lettered.
//! This is the sender side's counterpart of the receiver's state.
//!
//! The listing is JSON: an array of rows, or `{"outbox": [rows]}` (so a
//! `sqlite3 -json` query's output is one as it is). A row needs `key` and
//! `status`; the rest is optional.

use serde::{Deserialize, Serialize};

/// Where an outbox row stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OutboxStatus {
    /// Not yet delivered: waiting for its next attempt.
    Pending,
    /// Acknowledged with a 2xx.
    Delivered,
    /// Given up: its attempts ran out or its answer was final (dead letter).
    #[serde(alias = "failed", alias = "dead_letter", alias = "dead-letter")]
    Dead,
}

impl OutboxStatus {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            OutboxStatus::Pending => "pending",
            OutboxStatus::Delivered => "delivered",
            OutboxStatus::Dead => "dead",
        }
    }
}

/// One event in the sender's outbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutboxRow {
    /// The event's identity (the `key` it was emitted with).
    pub key: String,
    /// The account it is for; absent matches the key in any account.
    #[serde(default)]
    pub account: Option<String>,
    /// Where it stands.
    pub status: OutboxStatus,
    /// Attempts the sender counts for it.
    #[serde(default)]
    pub attempts: Option<u32>,
}

/// The whole listing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outbox {
    /// Every row the sender listed.
    pub outbox: Vec<OutboxRow>,
}

impl Outbox {
    /// Reads a listing: an array of rows or `{"outbox": [...]}`. The error
    /// says what was expected.
    pub fn parse(bytes: &[u8]) -> Result<Outbox, String> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form {
            Rows(Vec<OutboxRow>),
            Doc(Outbox),
        }
        match serde_json::from_slice::<Form>(bytes) {
            Ok(Form::Rows(outbox)) => Ok(Outbox { outbox }),
            Ok(Form::Doc(d)) => Ok(d),
            Err(_) => {
                // Name the first bad row when the shape is right.
                let shown = crate::limits::budget::quote(&String::from_utf8_lossy(bytes));
                let detail = serde_json::from_slice::<serde_json::Value>(bytes)
                    .map(|v| {
                        let rows = v.get("outbox").unwrap_or(&v).clone();
                        match serde_json::from_value::<Vec<OutboxRow>>(rows) {
                            Err(e) => e.to_string(),
                            Ok(_) => "not an outbox".into(),
                        }
                    })
                    .unwrap_or_else(|e| e.to_string());
                Err(format!(
                    "not an outbox listing: {detail} (hint: expected [{{\"key\": \"…\", \"account\": \"…\", \"status\": \"pending|delivered|dead\"}}] or {{\"outbox\": [...]}}, as docs/sink.md shows); got {shown}"
                ))
            }
        }
    }

    /// The row of `key` for `account`: one listed for that account, or
    /// one listed without an account.
    pub fn row(&self, account: &str, key: &str) -> Option<&OutboxRow> {
        self.outbox
            .iter()
            .filter(|r| r.key == key)
            .find(|r| r.account.as_deref().is_none_or(|a| a == account))
    }

    /// Whether every row of `keys` (account, key) is delivered or dead;
    /// a key not listed at all is not settled.
    pub fn settled<'a>(&self, mut keys: impl Iterator<Item = (&'a str, &'a str)>) -> bool {
        keys.all(|(a, k)| {
            self.row(a, k)
                .is_some_and(|r| r.status != OutboxStatus::Pending)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_forms_of_the_listing_are_read() {
        let rows = br#"[{"key":"k1","account":"acct_a","status":"delivered","attempts":2},{"key":"k2","status":"failed"}]"#;
        let o = Outbox::parse(rows).unwrap();
        assert_eq!(o.outbox.len(), 2);
        assert_eq!(o.outbox[1].status, OutboxStatus::Dead);
        let doc = br#"{"outbox":[{"key":"k1","status":"pending"}]}"#;
        let o = Outbox::parse(doc).unwrap();
        assert_eq!(o.row("acct_z", "k1").unwrap().status, OutboxStatus::Pending);
        assert!(!o.settled([("acct_a", "k1")].into_iter()));
        assert!(!o.settled([("acct_a", "k9")].into_iter()));
    }

    #[test]
    fn a_bad_listing_says_what_was_expected() {
        let e = Outbox::parse(br#"[{"key":"k1","status":"sent"}]"#).unwrap_err();
        assert!(
            e.contains("pending|delivered|dead") && e.contains("sent"),
            "{e}"
        );
        let e = Outbox::parse(b"nope").unwrap_err();
        assert!(e.contains("not an outbox listing"), "{e}");
    }

    #[test]
    fn a_row_listed_for_another_account_is_not_this_accounts() {
        let o = Outbox::parse(br#"[{"key":"k1","account":"acct_b","status":"dead"}]"#).unwrap();
        assert!(o.row("acct_a", "k1").is_none());
        assert!(o.row("acct_b", "k1").is_some());
    }
}
