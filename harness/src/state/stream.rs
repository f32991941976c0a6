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
//! hands each row to a [`StateSink`] and forgets it. [`State`] is one sink
//! (small runs keep their `State`); [`JsonWriter`] writes the document to a
//! file as the rows pass; the checker's sink keeps interned ids only.
//!
//! Every sink sees the same sequence, whatever the form: `section(s)`, the
//! rows of `s`, the next `section`, …, `finish()`. The readers enforce the
//! contract on the way: only the five sections, each once, its rows
//! together, `inbox` present.

use std::io::{BufRead, Read, Write};

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};

use super::{Effect, InboxRow, ResourceRow, ResultRow, State, Winner};

/// The media type of the JSON Lines form.
pub const JSON_LINES: &str = "application/x-ndjson";

/// A section of the state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Section {
    /// `inbox`, the only required one.
    Inbox,
    /// `results`.
    Results,
    /// `winners`.
    Winners,
    /// `effects`.
    Effects,
    /// `resources`.
    Resources,
}

impl Section {
    /// Every section, in the document's order.
    pub const ALL: [Section; 5] = [
        Section::Inbox,
        Section::Results,
        Section::Winners,
        Section::Effects,
        Section::Resources,
    ];

    /// Its name in the JSON.
    pub fn name(self) -> &'static str {
        match self {
            Section::Inbox => "inbox",
            Section::Results => "results",
            Section::Winners => "winners",
            Section::Effects => "effects",
            Section::Resources => "resources",
        }
    }

    fn parse(name: &str) -> Option<Section> {
        Section::ALL.into_iter().find(|s| s.name() == name)
    }

    fn bit(self) -> u8 {
        1 << self as u8
    }
}

/// One row of any section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Row {
    /// An `inbox` row.
    Inbox(InboxRow),
    /// A `results` row.
    Results(ResultRow),
    /// A `winners` row.
    Winners(Winner),
    /// An `effects` row.
    Effects(Effect),
    /// A `resources` row.
    Resources(ResourceRow),
}

impl Row {
    /// The section it belongs to.
    pub fn section(&self) -> Section {
        match self {
            Row::Inbox(_) => Section::Inbox,
            Row::Results(_) => Section::Results,
            Row::Winners(_) => Section::Winners,
            Row::Effects(_) => Section::Effects,
            Row::Resources(_) => Section::Resources,
        }
    }
}

/// Consumes a state one row at a time.
pub trait StateSink {
    /// Section `s` is reported; its rows follow (none for an empty list).
    fn section(&mut self, s: Section) -> Result<(), String>;
    /// One row of the section last begun.
    fn row(&mut self, row: Row) -> Result<(), String>;
    /// The state is complete.
    fn finish(&mut self) -> Result<(), String> {
        Ok(())
    }
}

impl<T: StateSink + ?Sized> StateSink for &mut T {
    fn section(&mut self, s: Section) -> Result<(), String> {
        (**self).section(s)
    }
    fn row(&mut self, row: Row) -> Result<(), String> {
        (**self).row(row)
    }
    fn finish(&mut self) -> Result<(), String> {
        (**self).finish()
    }
}

/// Collects the rows: the whole [`State`], for runs small enough to hold it.
impl StateSink for State {
    fn section(&mut self, s: Section) -> Result<(), String> {
        match s {
            Section::Inbox => {}
            Section::Results => {
                let _ = self.results.get_or_insert_with(Vec::new);
            }
            Section::Winners => {
                let _ = self.winners.get_or_insert_with(Vec::new);
            }
            Section::Effects => {
                let _ = self.effects.get_or_insert_with(Vec::new);
            }
            Section::Resources => {
                let _ = self.resources.get_or_insert_with(Vec::new);
            }
        }
        Ok(())
    }

    fn row(&mut self, row: Row) -> Result<(), String> {
        match row {
            Row::Inbox(r) => self.inbox.push(r),
            Row::Results(r) => self.results.get_or_insert_with(Vec::new).push(r),
            Row::Winners(r) => self.winners.get_or_insert_with(Vec::new).push(r),
            Row::Effects(r) => self.effects.get_or_insert_with(Vec::new).push(r),
            Row::Resources(r) => self.resources.get_or_insert_with(Vec::new).push(r),
        }
        Ok(())
    }
}

impl State {
    /// Hands every section and row to `sink`, in the document's order.
    pub fn replay(&self, sink: &mut impl StateSink) -> Result<(), String> {
        sink.section(Section::Inbox)?;
        for r in &self.inbox {
            sink.row(Row::Inbox(r.clone()))?;
        }
        macro_rules! section {
            ($field:ident, $s:expr, $v:ident) => {
                if let Some(rows) = &self.$field {
                    sink.section($s)?;
                    for r in rows {
                        sink.row(Row::$v(r.clone()))?;
                    }
                }
            };
        }
        section!(results, Section::Results, Results);
        section!(winners, Section::Winners, Winners);
        section!(effects, Section::Effects, Effects);
        section!(resources, Section::Resources, Resources);
        sink.finish()
    }
}

/// Holds a sink to the contract: known sections, each once, rows together,
/// `inbox` present at the end.
struct Contract<S> {
    sink: S,
    seen: u8,
    current: Option<Section>,
    /// Bytes read since the last row, when a [`Metered`] reader counts them.
    since_row: Option<std::rc::Rc<std::cell::Cell<usize>>>,
}

/// Counts the bytes the document parser takes since the last row and
/// fails past [`crate::budget::STATE_ROW`]: the document is streamed, and
/// no one row of it (a 2 GB string, an endless number) is held whole.
struct Metered<R> {
    inner: R,
    since_row: std::rc::Rc<std::cell::Cell<usize>>,
}

impl<R: Read> Read for Metered<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let total = self.since_row.get() + n;
        if total > crate::budget::STATE_ROW {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                row_too_long(),
            ));
        }
        self.since_row.set(total);
        Ok(n)
    }
}

fn row_too_long() -> String {
    format!(
        "a state row longer than {} (the state is streamed row by row, and no row is that large)",
        crate::budget::show(crate::budget::STATE_ROW)
    )
}

impl<S: StateSink> Contract<S> {
    fn new(sink: S) -> Self {
        Contract {
            sink,
            seen: 0,
            current: None,
            since_row: None,
        }
    }

    fn begin(&mut self, s: Section) -> Result<(), String> {
        if self.seen & s.bit() != 0 {
            return Err(format!(
                "section `{}` appears twice (its rows must come together)",
                s.name()
            ));
        }
        self.seen |= s.bit();
        self.current = Some(s);
        self.sink.section(s)
    }

    fn row(&mut self, row: Row) -> Result<(), String> {
        let s = row.section();
        if self.current != Some(s) {
            self.begin(s)?;
        }
        self.sink.row(row)
    }

    fn finish(mut self) -> Result<S, String> {
        if self.seen & Section::Inbox.bit() == 0 {
            return Err("missing field `inbox`".into());
        }
        self.sink.finish()?;
        Ok(self.sink)
    }
}

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
pub fn read<S: StateSink, R: Read>(format: Format, r: R, sink: S) -> Result<S, String> {
    match format {
        Format::Document => read_document(r, sink),
        Format::Lines => read_lines(std::io::BufReader::with_capacity(1 << 16, r), sink),
    }
}

/// Reads a state in whichever form it is (JSON Lines when its first key is
/// `sections`), so files and command output may use either.
pub fn read_any<S: StateSink, R: Read>(mut r: R, sink: S) -> Result<S, String> {
    let mut head = Vec::new();
    let mut buf = [0u8; 256];
    let format = loop {
        if let Some(f) = sniff(&head) {
            break f;
        }
        let n = r.read(&mut buf).map_err(|e| e.to_string())?;
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

/// Reads the document form, one row at a time.
pub fn read_document<S: StateSink, R: Read>(r: R, sink: S) -> Result<S, String> {
    let mut contract = Contract::new(sink);
    let since_row = std::rc::Rc::new(std::cell::Cell::new(0));
    contract.since_row = Some(since_row.clone());
    let mut de = serde_json::Deserializer::from_reader(Metered {
        inner: std::io::BufReader::with_capacity(1 << 16, r),
        since_row,
    });
    Document(&mut contract)
        .deserialize(&mut de)
        .and_then(|()| de.end())
        .map_err(|e| e.to_string())?;
    contract.finish()
}

struct Document<'a, S>(&'a mut Contract<S>);

impl<'de, S: StateSink> DeserializeSeed<'de> for Document<'_, S> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, S: StateSink> Visitor<'de> for Document<'_, S> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("the state object {\"inbox\": [...], ...}")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            let Some(section) = Section::parse(&key) else {
                return Err(de::Error::unknown_field(
                    &key,
                    &["inbox", "results", "winners", "effects", "resources"],
                ));
            };
            map.next_value_seed(Rows {
                section,
                contract: self.0,
            })?;
        }
        Ok(())
    }
}

/// One section's list (or `null`, for an optional section not reported).
struct Rows<'a, S> {
    section: Section,
    contract: &'a mut Contract<S>,
}

impl<'de, S: StateSink> DeserializeSeed<'de> for Rows<'_, S> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de, S: StateSink> Visitor<'de> for Rows<'_, S> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "a list of {} rows", self.section.name())
    }

    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        if self.section == Section::Inbox {
            return Err(E::invalid_type(de::Unexpected::Unit, &self));
        }
        Ok(())
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.visit_none()
    }

    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        self.contract
            .begin(self.section)
            .map_err(de::Error::custom)?;
        d.deserialize_seq(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        loop {
            let row = match self.section {
                Section::Inbox => seq.next_element()?.map(Row::Inbox),
                Section::Results => seq.next_element()?.map(Row::Results),
                Section::Winners => seq.next_element()?.map(Row::Winners),
                Section::Effects => seq.next_element()?.map(Row::Effects),
                Section::Resources => seq.next_element()?.map(Row::Resources),
            };
            let Some(row) = row else { return Ok(()) };
            if let Some(since) = &self.contract.since_row {
                since.set(0);
            }
            self.contract.sink.row(row).map_err(de::Error::custom)?;
        }
    }
}

/// A line of the JSON Lines form.
#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum Line {
    Sections(Vec<Section>),
    Inbox(InboxRow),
    Results(ResultRow),
    Winners(Winner),
    Effects(Effect),
    Resources(ResourceRow),
}

impl Line {
    fn row(self) -> Result<Row, Vec<Section>> {
        Ok(match self {
            Line::Sections(list) => return Err(list),
            Line::Inbox(r) => Row::Inbox(r),
            Line::Results(r) => Row::Results(r),
            Line::Winners(r) => Row::Winners(r),
            Line::Effects(r) => Row::Effects(r),
            Line::Resources(r) => Row::Resources(r),
        })
    }
}

/// Reads the JSON Lines form: a `sections` line, then one row per line.
pub fn read_lines<S: StateSink, R: BufRead>(mut r: R, sink: S) -> Result<S, String> {
    let mut contract = Contract::new(sink);
    let mut declared: Option<u8> = None;
    let mut buf = String::new();
    let mut n = 0u64;
    loop {
        buf.clear();
        let cap = crate::budget::STATE_ROW;
        let read = (&mut r)
            .take(cap as u64 + 1)
            .read_line(&mut buf)
            .map_err(|e| format!("line {}: {e}", n + 1))?;
        if read == 0 {
            break;
        }
        n += 1;
        if read > cap && !buf.ends_with('\n') {
            return Err(format!("line {n}: {}", row_too_long()));
        }
        if buf.trim().is_empty() {
            continue;
        }
        let at = |e: String| format!("line {n}: {e}");
        let line: Line = serde_json::from_str(&buf).map_err(|e| {
            at(format!(
                "expected {{\"sections\": [...]}} or one row tagged with its section like {{\"inbox\": {{\"key\": ...}}}}: {e}"
            ))
        })?;
        match (line.row(), declared) {
            (Err(list), None) => {
                declared = Some(list.iter().fold(0, |m, s| m | s.bit()));
            }
            (Err(_), Some(_)) => return Err(at("a second `sections` line".into())),
            (Ok(_), None) => return Err(at(
                "the first line must name the sections reported: {\"sections\": [\"inbox\", ...]}"
                    .into(),
            )),
            (Ok(row), Some(d)) => {
                let s = row.section();
                if d & s.bit() == 0 {
                    return Err(at(format!(
                        "a `{}` row, but the sections line does not name `{}`",
                        s.name(),
                        s.name()
                    )));
                }
                contract.row(row).map_err(at)?;
            }
        }
    }
    let Some(declared) = declared else {
        return Err("no `sections` line (an empty answer?)".into());
    };
    // Declared sections without rows are reported empty.
    for s in Section::ALL {
        if declared & s.bit() != 0 && contract.seen & s.bit() == 0 {
            contract.begin(s)?;
        }
    }
    contract.finish()
}

/// Writes the rows it is given as the state document, as they come: the
/// form `state.json` and `hookstorm check` use, without holding the state.
pub struct JsonWriter<W: Write> {
    out: W,
    open: bool,
    first_row: bool,
    any_section: bool,
}

impl<W: Write> JsonWriter<W> {
    /// Writes to `out`.
    pub fn new(out: W) -> Self {
        JsonWriter {
            out,
            open: false,
            first_row: true,
            any_section: false,
        }
    }

    /// The writer, once finished.
    pub fn into_inner(self) -> W {
        self.out
    }

    /// The writer, while rows still come (to take what was written so far).
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.out
    }

    fn io(e: std::io::Error) -> String {
        e.to_string()
    }
}

impl<W: Write> StateSink for JsonWriter<W> {
    fn section(&mut self, s: Section) -> Result<(), String> {
        let sep = match (self.any_section, self.open) {
            (false, _) => "{",
            (true, true) => "],",
            (true, false) => ",",
        };
        write!(self.out, "{sep}\"{}\":[", s.name()).map_err(Self::io)?;
        self.any_section = true;
        self.open = true;
        self.first_row = true;
        Ok(())
    }

    fn row(&mut self, row: Row) -> Result<(), String> {
        if !self.first_row {
            self.out.write_all(b",").map_err(Self::io)?;
        }
        self.first_row = false;
        let r = match &row {
            Row::Inbox(r) => serde_json::to_writer(&mut self.out, r),
            Row::Results(r) => serde_json::to_writer(&mut self.out, r),
            Row::Winners(r) => serde_json::to_writer(&mut self.out, r),
            Row::Effects(r) => serde_json::to_writer(&mut self.out, r),
            Row::Resources(r) => serde_json::to_writer(&mut self.out, r),
        };
        r.map_err(|e| e.to_string())
    }

    fn finish(&mut self) -> Result<(), String> {
        let end: &[u8] = match (self.any_section, self.open) {
            (false, _) => b"{}",
            (true, true) => b"]}",
            (true, false) => b"}",
        };
        self.out.write_all(end).map_err(Self::io)?;
        self.out.flush().map_err(Self::io)
    }
}

/// Writes a state as JSON Lines (what a receiver serves for
/// `Accept: application/x-ndjson`).
pub fn write_lines(state: &State, out: &mut impl Write) -> std::io::Result<()> {
    let sections: Vec<Section> = Section::ALL
        .into_iter()
        .filter(|s| match s {
            Section::Inbox => true,
            Section::Results => state.results.is_some(),
            Section::Winners => state.winners.is_some(),
            Section::Effects => state.effects.is_some(),
            Section::Resources => state.resources.is_some(),
        })
        .collect();
    let mut lines = LinesWriter::new(out, &sections)?;
    state.replay(&mut lines).map_err(std::io::Error::other)
}

/// Writes the rows it is given as JSON Lines, as they come: the header line
/// names the sections up front, then one line per row.
pub struct LinesWriter<W: Write> {
    out: W,
}

impl<W: Write> LinesWriter<W> {
    /// Writes the header line naming `sections` (every section the rows
    /// will report, empty ones included) to `out`.
    pub fn new(mut out: W, sections: &[Section]) -> std::io::Result<Self> {
        serde_json::to_writer(&mut out, &serde_json::json!({ "sections": sections }))?;
        out.write_all(b"\n")?;
        Ok(LinesWriter { out })
    }

    /// The writer, while rows still come (to take what was written so far).
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.out
    }
}

impl<W: Write> StateSink for LinesWriter<W> {
    fn section(&mut self, _: Section) -> Result<(), String> {
        Ok(())
    }
    fn row(&mut self, row: Row) -> Result<(), String> {
        serde_json::to_writer(&mut self.out, &row).map_err(|e| e.to_string())?;
        self.out.write_all(b"\n").map_err(|e| e.to_string())
    }
    fn finish(&mut self) -> Result<(), String> {
        self.out.flush().map_err(|e| e.to_string())
    }
}

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
    fn section(&mut self, s: Section) -> Result<(), String> {
        self.inner.section(s)
    }
    fn row(&mut self, row: Row) -> Result<(), String> {
        if let Row::Inbox(r) = &row {
            self.rows += 1;
            self.unsettled += u64::from(!r.settled());
        }
        self.inner.row(row)
    }
    fn finish(&mut self) -> Result<(), String> {
        self.inner.finish()
    }
}

/// Discards every row (with [`Settling`]: a drain check in constant memory).
#[derive(Debug, Default, Clone, Copy)]
pub struct Discard;

impl StateSink for Discard {
    fn section(&mut self, _: Section) -> Result<(), String> {
        Ok(())
    }
    fn row(&mut self, _: Row) -> Result<(), String> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = r#"{
      "inbox":   [{"key": "t1", "account": "acct_a", "processed": true, "error": null},
                  {"key": "t2", "processed": false, "error": "bad createdAt"}],
      "results": [{"task_id": "t1", "job_key": "job-42", "status": "COMPLETED",
                   "created_at": "2026-11-29T10:00:00Z"}],
      "winners": [],
      "effects": null,
      "resources": [{"resource": "order-7", "sequence": 12}]
    }"#;

    fn lines_of(state: &State) -> String {
        let mut out = Vec::new();
        write_lines(state, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn the_document_streams_into_the_same_state_serde_reads() {
        let whole: State = serde_json::from_str(DOC).unwrap();
        let streamed = read_document(DOC.as_bytes(), State::default()).unwrap();
        assert_eq!(streamed, whole);
        assert_eq!(streamed.winners, Some(vec![]));
        assert_eq!(streamed.effects, None);
    }

    #[test]
    fn json_lines_carry_the_same_state_and_keep_empty_sections() {
        let whole: State = serde_json::from_str(DOC).unwrap();
        let text = lines_of(&whole);
        assert!(
            text.starts_with(r#"{"sections":["inbox","results","winners","resources"]}"#),
            "{text}"
        );
        assert_eq!(text.lines().count(), 1 + 2 + 1 + 1);
        let back = read_lines(text.as_bytes(), State::default()).unwrap();
        assert_eq!(back, whole);
        assert_eq!(read_any(text.as_bytes(), State::default()).unwrap(), whole);
        assert_eq!(read_any(DOC.as_bytes(), State::default()).unwrap(), whole);
    }

    #[test]
    fn the_writer_writes_the_document_the_reader_reads() {
        let whole: State = serde_json::from_str(DOC).unwrap();
        let mut w = JsonWriter::new(Vec::new());
        whole.replay(&mut w).unwrap();
        let text = String::from_utf8(w.into_inner()).unwrap();
        assert_eq!(serde_json::from_str::<State>(&text).unwrap(), whole);
        let mut w = JsonWriter::new(Vec::new());
        State::default().replay(&mut w).unwrap();
        assert_eq!(w.into_inner(), br#"{"inbox":[]}"#);
    }

    #[test]
    fn contract_breaches_are_errors_in_both_forms() {
        let bad_doc = [
            (r#"{}"#, "missing field `inbox`"),
            (r#"{"inbox": [], "inbx": []}"#, "unknown field `inbx`"),
            (r#"{"inbox": [], "inbox": []}"#, "appears twice"),
            (r#"{"inbox": null}"#, "invalid type"),
            (r#"{"inbox": [{"processed": true}]}"#, "missing field `key`"),
            (r#"{"inbox": []} trailing"#, "trailing"),
        ];
        for (text, want) in bad_doc {
            let e = read_document(text.as_bytes(), State::default()).unwrap_err();
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
            let e = read_lines(text.as_bytes(), State::default()).unwrap_err();
            assert!(e.contains(want), "{text:?}: {e}");
        }
    }

    #[test]
    fn settling_counts_unsettled_rows_without_keeping_them() {
        let text = r#"{"inbox": [{"key": "a", "processed": true}, {"key": "b"}, {"key": "c", "error": "x"}]}"#;
        let s = read_document(text.as_bytes(), Settling::new(Discard)).unwrap();
        assert_eq!((s.rows, s.unsettled, s.drained()), (3, 1, false));
    }

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
