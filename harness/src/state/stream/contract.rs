//! The contract both readers hold a sink to: only the five sections, each
//! once, its rows together, `inbox` present at the end; and no one row
//! longer than the budget allows, so a stream that never ends a row is
//! refused instead of held.

use std::io::Read;

use super::row::{Row, Section, SinkError, StateSink};

/// Holds a sink to the contract: known sections, each once, rows together,
/// `inbox` present at the end.
pub(super) struct Contract<S> {
    pub(super) sink: S,
    pub(super) seen: u8,
    current: Option<Section>,
    /// Bytes read since the last row, when a [`Metered`] reader counts them.
    pub(super) since_row: Option<std::rc::Rc<std::cell::Cell<usize>>>,
}

/// Counts the bytes the document parser takes since the last row and
/// fails past [`crate::limits::budget::STATE_ROW`]: the document is streamed, and
/// no one row of it (a 2 GB string, an endless number) is held whole.
pub(super) struct Metered<R> {
    pub(super) inner: R,
    pub(super) since_row: std::rc::Rc<std::cell::Cell<usize>>,
}

impl<R: Read> Read for Metered<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let total = self.since_row.get() + n;
        if total > crate::limits::budget::STATE_ROW {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                row_too_long(),
            ));
        }
        self.since_row.set(total);
        Ok(n)
    }
}

pub(super) fn row_too_long() -> String {
    format!(
        "a state row longer than {} (the state is streamed row by row, and no row is that large)",
        crate::limits::budget::show(crate::limits::budget::STATE_ROW)
    )
}

impl<S: StateSink> Contract<S> {
    pub(super) fn new(sink: S) -> Self {
        Contract {
            sink,
            seen: 0,
            current: None,
            since_row: None,
        }
    }

    pub(super) fn begin(&mut self, s: Section) -> Result<(), SinkError> {
        if self.seen & s.bit() != 0 {
            return Err(SinkError::Refused(format!(
                "section `{}` appears twice (its rows must come together)",
                s.name()
            )));
        }
        self.seen |= s.bit();
        self.current = Some(s);
        self.sink.section(s)
    }

    pub(super) fn row(&mut self, row: Row) -> Result<(), SinkError> {
        let s = row.section();
        if self.current != Some(s) {
            self.begin(s)?;
        }
        self.sink.row(row)
    }

    pub(super) fn finish(mut self) -> Result<S, SinkError> {
        if self.seen & Section::Inbox.bit() == 0 {
            return Err(SinkError::Refused("missing field `inbox`".into()));
        }
        self.sink.finish()?;
        Ok(self.sink)
    }
}

#[cfg(test)]
mod tests {
    use crate::state::stream::{read_document, read_lines};
    use crate::state::State;

    #[test]
    fn contract_breaches_are_errors_in_both_forms() {
        let bad_doc = [
            (r#"{}"#, "missing field `inbox`"),
            (r#"{"inbox": [], "inbx": []}"#, "unknown field `inbx`"),
            (r#"{"inbox": [], "inbox": []}"#, "appears twice"),
            (r#"{"inbox": null}"#, "invalid type"),
            (
                r#"{"inbox": [{"processed": true}]}"#,
                "inbox[0].key: missing",
            ),
            (r#"{"inbox": []} trailing"#, "trailing"),
        ];
        for (text, want) in bad_doc {
            let e = read_document(text.as_bytes(), State::default())
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{text}: {e}");
        }
        let bad_lines = [
            ("", "no `sections` line"),
            (r#"{"inbox": {"key": "a"}}"#, "first line must name"),
            (
                "{\"sections\": [\"results\"]}\n",
                "missing field `inbox`",
            ),
            (
                "{\"sections\": [\"inbox\"]}\n{\"results\": {\"task_id\": \"a\", \"status\": \"COMPLETED\"}}\n",
                "does not name `results`",
            ),
            (
                "{\"sections\": [\"inbox\", \"effects\"]}\n{\"inbox\": {\"key\": \"a\"}}\n{\"effects\": {\"key\": \"a\", \"count\": 1}}\n{\"inbox\": {\"key\": \"b\"}}\n",
                "line 4: section `inbox` appears twice",
            ),
            ("{\"sections\": [\"inbox\"]}\n{\"inbx\": {}}\n", "line 2"),
        ];
        for (text, want) in bad_lines {
            let e = read_lines(text.as_bytes(), State::default())
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{text:?}: {e}");
        }
    }

    /// A writer whose disk is full.
    struct Full;

    impl std::io::Write for Full {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::new(
                std::io::ErrorKind::StorageFull,
                "no space left on device",
            ))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_row_the_harness_cannot_keep_is_its_own_failure_in_both_forms_not_the_states() {
        use crate::state::stream::{JsonWriter, ReadError};
        let doc = r#"{"inbox": [{"key": "a", "processed": true}]}"#;
        let Err(e) = read_document(doc.as_bytes(), JsonWriter::new(Full)) else {
            panic!("a full disk kept the state");
        };
        assert!(
            matches!(&e, ReadError::Keep(why) if why.contains("no space left")),
            "{e:?}"
        );
        let lines =
            "{\"sections\": [\"inbox\"]}\n{\"inbox\": {\"key\": \"a\", \"processed\": true}}\n";
        let Err(e) = read_lines(lines.as_bytes(), JsonWriter::new(Full)) else {
            panic!("a full disk kept the state");
        };
        assert!(matches!(&e, ReadError::Keep(_)), "{e:?}");
        // A state the contract refuses stays the state's fault.
        let Err(e) = read_document(
            r#"{"inbox": [], "inbox": []}"#.as_bytes(),
            JsonWriter::new(Vec::new()),
        ) else {
            panic!("a section twice was read");
        };
        assert!(!matches!(e, ReadError::Keep(_)), "{e:?}");
    }
}
