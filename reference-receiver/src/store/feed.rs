//! The state stream between a store and whoever serves or collects it.
//!
//! A store reads one snapshot and sends it in order: each section as it
//! begins (empty ones too), then that section's rows in batches of
//! [`FEED_BATCH`], into a channel that holds at most [`FEED_DEPTH`] items,
//! so a reader never runs ahead of its client by more than a few batches.
//! Whoever runs the read sends [`Feed::End`] once the store returned
//! success, or the store's error: a channel that closes without either was
//! cut short (a panicked or cancelled read), and must not pass for a
//! complete state.

use hookstorm::state::stream::{Row, Section, StateSink};
use tokio::sync::mpsc;

use crate::error::StoreError;

/// Rows per [`Feed::Rows`] batch.
pub const FEED_BATCH: usize = 1024;
/// Items the channel holds before the store waits.
pub const FEED_DEPTH: usize = 8;

/// Part of a state read, in order: a section begins, then its rows.
#[derive(Debug)]
pub enum Feed {
    /// The section whose rows follow (sent for empty sections too).
    Section(Section),
    /// Rows of the section last begun.
    Rows(Vec<Row>),
    /// The read finished and its snapshot is whole.
    End,
}

/// Where a store sends the state it streams.
pub type FeedSender = mpsc::Sender<Result<Feed, StoreError>>;

/// Groups the rows of a state read into [`Feed`] batches.
#[derive(Debug, Default)]
pub struct Batcher {
    rows: Vec<Row>,
}

impl Batcher {
    /// What to send for section `s` to begin: the rows so far, then it.
    pub fn begin(&mut self, s: Section) -> impl Iterator<Item = Feed> {
        self.end().into_iter().chain([Feed::Section(s)])
    }

    /// Adds a row; returns a full batch to send.
    pub fn push(&mut self, row: Row) -> Option<Feed> {
        self.rows.push(row);
        (self.rows.len() >= FEED_BATCH)
            .then(|| self.end())
            .flatten()
    }

    /// The rows not sent yet.
    pub fn end(&mut self) -> Option<Feed> {
        (!self.rows.is_empty()).then(|| Feed::Rows(std::mem::take(&mut self.rows)))
    }
}

/// Feeds a state stream into `sink` until the stream closes (a collector
/// running beside the read, which reports the read's own outcome).
pub async fn drain_feed(
    mut rx: mpsc::Receiver<Result<Feed, StoreError>>,
    sink: &mut impl StateSink,
) -> Result<(), StoreError> {
    let bad =
        |e: hookstorm::state::stream::SinkError| StoreError::Database(format!("state stream: {e}"));
    while let Some(item) = rx.recv().await {
        match item? {
            Feed::Section(s) => sink.section(s).map_err(bad)?,
            Feed::Rows(rows) => {
                for r in rows {
                    sink.row(r).map_err(bad)?;
                }
            }
            Feed::End => break,
        }
    }
    sink.finish().map_err(bad)
}
