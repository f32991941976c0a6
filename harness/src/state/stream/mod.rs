//! Reads the state row by row, in bounded memory, in either of its two
//! wire forms (`docs/state.md`):
//!
//! - the **document**: one JSON object `{"inbox": [...], "results": [...]}`;
//! - **JSON Lines** (`application/x-ndjson`): a first line
//!   `{"sections": ["inbox", "results"]}` naming the sections reported, then
//!   one line per row tagged with its section, `{"inbox": {"key": "t1"}}`.
//!
//! A million-row state is hundreds of megabytes of JSON and more once parsed
//! into `String`s, so nothing here holds the text or the rows: a reader
//! hands each row to a [`StateSink`] and forgets it.
//! [`State`](super::State) is one sink (small runs keep their `State`);
//! [`JsonWriter`] writes the document to a file as the rows pass; the
//! checker's sink keeps interned ids only.
//!
//! Every sink sees the same sequence, whatever the form: `section(s)`, the
//! rows of `s`, the next `section`, …, `finish()`. The readers enforce the
//! contract on the way: only the five sections, each once, its rows
//! together, `inbox` present.
//!
//! Here: the two forms told apart and read. [`row`] is what every form
//! carries (sections, rows, the sink), [`contract`] holds a sink to the
//! contract, [`document`] and [`lines`] read and write each form,
//! [`path`] names a wrong value by its JSON path (`inbox[3].key`),
//! [`drain`] has the sinks of a drain check, [`held`] holds a whole state
//! within its budget.

use std::io::Read;

mod contract;
mod document;
mod drain;
mod held;
mod lines;
mod path;
mod row;

pub use document::{read_document, JsonWriter};
pub use drain::{Discard, Settling};
pub use held::Held;
pub use lines::{read_lines, write_lines, LinesWriter};
pub use path::ReadError;
pub use row::{Row, Section, SinkError, StateSink};

/// The media type of the JSON Lines form.
pub const JSON_LINES: &str = "application/x-ndjson";

/// The two wire forms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// One JSON object.
    Document,
    /// JSON Lines, a `sections` line first.
    Lines,
}

impl Format {
    /// The form a `Content-Type` names (`application/x-ndjson` or
    /// `application/jsonl`: lines; anything else: the document).
    pub fn of_content_type(ct: &str) -> Format {
        let mime = ct.split(';').next().unwrap_or("").trim();
        if mime.eq_ignore_ascii_case(JSON_LINES)
            || mime.eq_ignore_ascii_case("application/jsonl")
            || mime.eq_ignore_ascii_case("application/x-jsonlines")
        {
            Format::Lines
        } else {
            Format::Document
        }
    }
}

/// Reads a state in `format` from `r` into `sink`; returns the sink.
pub fn read<S: StateSink, R: Read>(format: Format, r: R, sink: S) -> Result<S, ReadError> {
    match format {
        Format::Document => read_document(r, sink),
        Format::Lines => read_lines(std::io::BufReader::with_capacity(1 << 16, r), sink),
    }
}

/// Reads a state in whichever form it is (JSON Lines when its first key is
/// `sections`), so files and command output may use either.
pub fn read_any<S: StateSink, R: Read>(mut r: R, sink: S) -> Result<S, ReadError> {
    let mut head = Vec::new();
    let mut buf = [0u8; 256];
    let format = loop {
        if let Some(f) = sniff(&head) {
            break f;
        }
        let n = r
            .read(&mut buf)
            .map_err(|e| ReadError::Other(e.to_string()))?;
        if n == 0 {
            break Format::Document; // let the parser name what is wrong
        }
        head.extend_from_slice(&buf[..n]);
    };
    read(format, std::io::Cursor::new(head).chain(r), sink)
}

/// The form of a state that starts with `head`, once it can tell.
fn sniff(head: &[u8]) -> Option<Format> {
    let mut i = head.iter().position(|b| !b.is_ascii_whitespace())?;
    if head[i] != b'{' {
        return Some(Format::Document);
    }
    i += 1;
    i += head[i..].iter().position(|b| !b.is_ascii_whitespace())?;
    if head[i] != b'"' {
        return Some(Format::Document);
    }
    let rest = &head[i + 1..];
    let end = rest.iter().position(|&b| b == b'"')?;
    Some(if &rest[..end] == b"sections" {
        Format::Lines
    } else {
        Format::Document
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) const DOC: &str = r#"{
      "inbox":   [{"key": "t1", "account": "acct_a", "processed": true, "error": null},
                  {"key": "t2", "processed": false, "error": "bad createdAt"}],
      "results": [{"task_id": "t1", "job_key": "job-42", "status": "COMPLETED",
                   "created_at": "2026-11-29T10:00:00Z"}],
      "winners": [],
      "effects": null,
      "resources": [{"resource": "order-7", "sequence": 12}]
    }"#;

    #[test]
    fn the_form_is_told_by_the_first_key() {
        assert_eq!(sniff(b"  {\n \"sections\": []}"), Some(Format::Lines));
        assert_eq!(sniff(b"{\"inbox\": []}"), Some(Format::Document));
        assert_eq!(sniff(b"{ \"sect"), None);
        assert_eq!(sniff(b"nope"), Some(Format::Document));
        assert_eq!(
            Format::of_content_type("application/x-ndjson; charset=utf-8"),
            Format::Lines
        );
        assert_eq!(
            Format::of_content_type("application/json"),
            Format::Document
        );
    }
}
