//! Storage behind one object-safe trait, with SQLite and Postgres implementations.
//!
//! The tables follow the default schema of docs/state.md (`webhook_inbox`,
//! `answers`; plus `effects`, `resources`, `submitted_tasks`) so that the harness's generic
//! SQL probe can read a receiver built this way. Methods return boxed
//! futures so the store can live behind `Arc<dyn Store>`.
//!
//! The state is read as a stream ([`Store::stream_state`], [`feed`]): one
//! snapshot of the database, sent as sections and batches of rows into a
//! bounded channel, so serving a million-row state never holds it whole.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use hookstorm::state::State;
use tokio::sync::mpsc;

use crate::defect::Defect;
use crate::error::StoreError;
use crate::failpoint::Failpoints;

pub mod feed;
pub mod postgres;
pub mod sqlite;

pub use feed::{drain_feed, Batcher, Feed, FeedSender, FEED_BATCH, FEED_DEPTH};

/// A store future.
pub type StoreFuture<'a, T> = BoxFuture<'a, Result<T, StoreError>>;

/// A verified delivery to write to the inbox.
#[derive(Debug, Clone)]
pub struct NewDelivery {
    /// The account it arrived for.
    pub account: String,
    /// The task id (the dedup key).
    pub task_id: String,
    /// The `Webhook-Id` header, if present (used only by a defect's keying).
    pub webhook_id: Option<String>,
    /// The raw body.
    pub body: String,
}

/// What an insert did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inserted {
    /// A new row was written and committed.
    New,
    /// A row with this key already existed; nothing changed.
    Duplicate,
}

/// Which unique key the inbox has (only defects change it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Keying {
    /// `primary key (account, task_id)`: the right one.
    #[default]
    AccountTask,
    /// `unique (account, webhook_id)`: the `dedup-on-webhook-id` defect.
    WebhookId,
    /// No unique key: the `check-then-insert` defect.
    Unconstrained,
    /// `unique (task_id)`: the `ignores-account-scope` defect.
    TaskOnly,
}

impl Keying {
    /// The name recorded in the database (table `inbox_keying`).
    pub fn name(self) -> &'static str {
        match self {
            Keying::AccountTask => "account-task",
            Keying::WebhookId => "webhook-id",
            Keying::Unconstrained => "unconstrained",
            Keying::TaskOnly => "task-only",
        }
    }

    /// Whether opening a store whose inbox records the keying `recorded`
    /// must drop and recreate the inbox (and then record this keying).
    ///
    /// Only a defect's keying recreates, and only when the inbox does not
    /// have it yet: a restart keeps every row, so a defect's receiver killed
    /// and restarted by a process scenario loses nothing it acknowledged.
    /// The default keying never drops anything (the worker, which opens the
    /// store with it, must not undo the server's defect either).
    pub fn must_recreate(self, recorded: Option<&str>) -> bool {
        self != Keying::AccountTask && recorded != Some(self.name())
    }

    /// The keying a defect needs.
    pub fn for_defect(defect: Option<Defect>) -> Keying {
        match defect {
            Some(Defect::DedupOnWebhookId) => Keying::WebhookId,
            Some(Defect::CheckThenInsert) => Keying::Unconstrained,
            Some(Defect::IgnoresAccountScope) => Keying::TaskOnly,
            _ => Keying::AccountTask,
        }
    }
}

/// How to open a store.
#[derive(Debug, Clone, Copy)]
pub struct StoreOptions {
    /// SQLite: group-commit concurrent inserts (one transaction, one fsync, many acks).
    pub group_commit: bool,
    /// The inbox's unique key. A defect's keying recreates the inbox table
    /// once (a restart does not; see [`Keying::must_recreate`]).
    pub keying: Keying,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            group_commit: true,
            keying: Keying::AccountTask,
        }
    }
}

/// How the worker treats rows (the defects that touch processing).
#[derive(Debug, Clone)]
pub struct WorkerRules {
    /// Rows per batch.
    pub batch_size: usize,
    /// `keeps-retry-suffix`.
    pub keep_retry_suffix: bool,
    /// `poison-blocks-batch`.
    pub poison_blocks_batch: bool,
    /// `stale-sequence-overwrites`.
    pub stale_sequence_overwrites: bool,
    /// Crash points (`crash-in-worker`).
    pub failpoints: Arc<Failpoints>,
}

impl WorkerRules {
    /// The rules for a defect (or none).
    pub fn new(defect: Option<Defect>, batch_size: usize, failpoints: Arc<Failpoints>) -> Self {
        WorkerRules {
            batch_size: batch_size.max(1),
            keep_retry_suffix: defect == Some(Defect::KeepsRetrySuffix),
            poison_blocks_batch: defect == Some(Defect::PoisonBlocksBatch),
            stale_sequence_overwrites: defect == Some(Defect::StaleSequenceOverwrites),
            failpoints,
        }
    }
}

/// What one worker batch did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BatchOutcome {
    /// Rows claimed.
    pub claimed: usize,
    /// Rows processed successfully.
    pub processed: usize,
    /// Rows marked failed.
    pub failed: usize,
    /// Whether the batch was rolled back (the `poison-blocks-batch` defect).
    pub rolled_back: bool,
}

/// How winners are chosen (only defects change it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WinnerRule {
    /// Most recently created COMPLETED task; tie: larger task id.
    #[default]
    Created,
    /// Most recently received COMPLETED task (`last-arrival-wins`).
    LastArrival,
    /// Most recently created task whatever its status (`failed-overwrites-completed`).
    AnyStatus,
}

impl WinnerRule {
    /// The rule for a defect (or none).
    pub fn for_defect(defect: Option<Defect>) -> Self {
        match defect {
            Some(Defect::LastArrivalWins) => WinnerRule::LastArrival,
            Some(Defect::FailedOverwritesCompleted) => WinnerRule::AnyStatus,
            _ => WinnerRule::Created,
        }
    }
}

/// A receiver's storage.
pub trait Store: Send + Sync + 'static {
    /// Inserts a delivery, doing nothing on a key conflict; resolves after the commit.
    fn insert(&self, d: NewDelivery) -> StoreFuture<'_, Inserted>;
    /// Whether the inbox holds this (account, task id) (for the `check-then-insert` defect).
    fn contains(&self, account: String, task_id: String) -> StoreFuture<'_, bool>;
    /// Marks a processed row unprocessed again, so the worker runs it once
    /// more; false when the row is not processed (yet). For the
    /// `requeues-duplicates` defect.
    fn requeue(&self, account: String, task_id: String) -> StoreFuture<'_, bool>;
    /// Claims, processes and marks one batch of unprocessed rows.
    fn process_batch(&self, rules: WorkerRules) -> StoreFuture<'_, BatchOutcome>;
    /// Reads one snapshot of the state, winners by `rule`, and sends it to
    /// `tx` as it reads (every section, each followed by its rows; see
    /// [`feed`]). Waits while the channel is full; stops when its receiver
    /// is gone. Returns the read's outcome; [`Feed::End`] or the error is
    /// the caller's to send.
    fn stream_state(&self, rule: WinnerRule, tx: FeedSender) -> StoreFuture<'_, ()>;
    /// Reads the whole state, winners by `rule` (a [`Store::stream_state`]
    /// collected).
    fn state(&self, rule: WinnerRule) -> StoreFuture<'_, State> {
        Box::pin(async move {
            let (tx, rx) = mpsc::channel(FEED_DEPTH);
            let mut state = State::default();
            let (read, collected) =
                tokio::join!(self.stream_state(rule, tx), drain_feed(rx, &mut state));
            // A consumer that fails drops the channel, and the read then
            // fails for that: the consumer's error is the cause.
            collected?;
            read?;
            Ok(state)
        })
    }
    /// Empties every table.
    fn reset(&self) -> StoreFuture<'_, ()>;
    /// Records tasks the user submitted; returns how many were new.
    fn submit_tasks(&self, account: String, task_ids: Vec<String>) -> StoreFuture<'_, usize>;
    /// Submitted tasks with no inbox row, as (account, task id).
    fn missing_submitted(&self) -> StoreFuture<'_, Vec<(String, String)>>;
    /// Answers when the database does.
    fn ping(&self) -> StoreFuture<'_, ()>;
}

/// Opens a store with default options, creating the schema if missing.
pub async fn open_store(url: &str) -> Result<Arc<dyn Store>, StoreError> {
    open_store_with(url, StoreOptions::default()).await
}

/// Opens a store: `sqlite:///abs/path.db`, `sqlite://relative.db`, `postgres://…`, `postgresql://…`.
pub async fn open_store_with(
    url: &str,
    options: StoreOptions,
) -> Result<Arc<dyn Store>, StoreError> {
    if let Some(path) = url.strip_prefix("sqlite://") {
        if path.is_empty() {
            return Err(StoreError::BadUrl(url.to_string()));
        }
        let path = path.to_string();
        let store = tokio::task::spawn_blocking(move || sqlite::SqliteStore::open(&path, options))
            .await
            .map_err(|e| StoreError::Database(e.to_string()))??;
        Ok(Arc::new(store))
    } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        Ok(Arc::new(postgres::PgStore::open(url, options).await?))
    } else {
        Err(StoreError::BadUrl(url.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn unknown_store_urls_are_refused_with_a_hint() {
        let e = open_store("mysql://x").await.err().unwrap();
        assert!(e.to_string().contains("hint"));
        assert!(open_store("sqlite://").await.is_err());
    }
}
