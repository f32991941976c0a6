//! The sinks of a drain check: [`Settling`] counts the inbox rows not yet
//! settled on their way to another sink, [`Discard`] drops every row, so
//! together they tell whether the receiver is drained in constant memory.

use super::row::{Row, Section, SinkError, StateSink};

/// Tells, while the rows pass on to another sink, whether every inbox row
/// is settled and how many there are: what a drain wait needs, without
/// keeping the rows.
pub struct Settling<S> {
    /// The sink the rows go on to.
    pub inner: S,
    /// Inbox rows seen.
    pub rows: u64,
    /// Inbox rows neither processed nor marked failed.
    pub unsettled: u64,
}

impl<S> Settling<S> {
    /// Passes rows on to `inner`.
    pub fn new(inner: S) -> Self {
        Settling {
            inner,
            rows: 0,
            unsettled: 0,
        }
    }

    /// Whether every inbox row is settled.
    pub fn drained(&self) -> bool {
        self.unsettled == 0
    }
}

impl<S: StateSink> StateSink for Settling<S> {
    fn section(&mut self, s: Section) -> Result<(), SinkError> {
        self.inner.section(s)
    }
    fn row(&mut self, row: Row) -> Result<(), SinkError> {
        if let Row::Inbox(r) = &row {
            self.rows += 1;
            self.unsettled += u64::from(!r.settled());
        }
        self.inner.row(row)
    }
    fn finish(&mut self) -> Result<(), SinkError> {
        self.inner.finish()
    }
}

/// Discards every row (with [`Settling`]: a drain check in constant memory).
#[derive(Debug, Default, Clone, Copy)]
pub struct Discard;

impl StateSink for Discard {
    fn section(&mut self, _: Section) -> Result<(), SinkError> {
        Ok(())
    }
    fn row(&mut self, _: Row) -> Result<(), SinkError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::stream::read_document;

    #[test]
    fn settling_counts_unsettled_rows_without_keeping_them() {
        let text = r#"{"inbox": [{"key": "a", "processed": true}, {"key": "b"}, {"key": "c", "error": "x"}]}"#;
        let s = read_document(text.as_bytes(), Settling::new(Discard)).unwrap();
        assert_eq!((s.rows, s.unsettled, s.drained()), (3, 1, false));
    }
}
