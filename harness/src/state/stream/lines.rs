//! The JSON Lines form: a first line naming the sections reported, then
//! one line per row tagged with its section. Read line by line, each line
//! bounded; written from a state or as the rows pass.

use std::io::{BufRead, Read, Write};

use serde::de::{self, DeserializeSeed, MapAccess, Visitor};

use super::contract::{row_too_long, Contract};
use super::path::{Cursor, ReadError, RowSeed};
use super::row::{Row, Section, SinkError, StateSink};
use crate::state::State;

/// A line of the JSON Lines form: the sections reported, or one row.
enum Line {
    Sections(Vec<Section>),
    Row(Row),
}

/// Reads one line: an object with one key, `sections` or a section's name.
struct LineSeed<'c> {
    cursor: &'c Cursor,
    /// Rows read so far per section, for the index of the next one.
    counts: &'c [u64; 5],
}

impl<'de> DeserializeSeed<'de> for LineSeed<'_> {
    type Value = Line;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Line, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for LineSeed<'_> {
    type Value = Line;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an object with one key")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Line, A::Error> {
        let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? else {
            return Err(de::Error::invalid_length(0, &self));
        };
        let line = if key == "sections" {
            Line::Sections(map.next_value()?)
        } else {
            let Some(section) = Section::parse(&key) else {
                return Err(de::Error::unknown_field(
                    &key,
                    &[
                        "sections",
                        "inbox",
                        "results",
                        "winners",
                        "effects",
                        "resources",
                    ],
                ));
            };
            self.cursor.section(Some(section));
            self.cursor.row(self.counts[section as usize]);
            Line::Row(map.next_value_seed(RowSeed {
                section,
                cursor: self.cursor,
            })?)
        };
        if map.next_key::<de::IgnoredAny>()?.is_some() {
            self.cursor.section(None);
            return Err(de::Error::custom("more than one key on a line"));
        }
        Ok(line)
    }
}

/// Reads the JSON Lines form: a `sections` line, then one row per line.
pub fn read_lines<S: StateSink, R: BufRead>(mut r: R, sink: S) -> Result<S, ReadError> {
    let mut contract = Contract::new(sink);
    let mut declared: Option<u8> = None;
    let mut counts = [0u64; 5];
    let mut buf = String::new();
    let mut n = 0u64;
    loop {
        buf.clear();
        let cap = crate::limits::budget::STATE_ROW;
        let read = (&mut r)
            .take(cap as u64 + 1)
            .read_line(&mut buf)
            .map_err(|e| ReadError::Other(format!("line {}: {e}", n + 1)))?;
        if read == 0 {
            break;
        }
        n += 1;
        if read > cap && !buf.ends_with('\n') {
            return Err(ReadError::Other(format!("line {n}: {}", row_too_long())));
        }
        if buf.trim().is_empty() {
            continue;
        }
        let at = |e: String| format!("line {n}: {e}");
        let cursor = Cursor::default();
        let mut de = serde_json::Deserializer::from_str(&buf);
        let line = LineSeed {
            cursor: &cursor,
            counts: &counts,
        }
        .deserialize(&mut de)
        .and_then(|l| de.end().map(|()| l))
        .map_err(|e| match cursor.error(&e, Some(n)) {
            ReadError::Other(_) => ReadError::Other(at(format!(
                "expected {{\"sections\": [...]}} or one row tagged with its section like {{\"inbox\": {{\"key\": ...}}}}: {e}"
            ))),
            shape => shape,
        })?;
        match (line, declared) {
            (Line::Sections(list), None) => {
                declared = Some(list.iter().fold(0, |m, s| m | s.bit()));
            }
            (Line::Sections(_), Some(_)) => {
                return Err(at("a second `sections` line".into()).into())
            }
            (Line::Row(_), None) => return Err(at(
                "the first line must name the sections reported: {\"sections\": [\"inbox\", ...]}"
                    .into(),
            )
            .into()),
            (Line::Row(row), Some(d)) => {
                let s = row.section();
                if d & s.bit() == 0 {
                    return Err(at(format!(
                        "a `{}` row, but the sections line does not name `{}`",
                        s.name(),
                        s.name()
                    ))
                    .into());
                }
                counts[s as usize] += 1;
                contract.row(row).map_err(|e| match e {
                    SinkError::Refused(why) => SinkError::Refused(at(why)),
                    keep => keep,
                })?;
            }
        }
    }
    let Some(declared) = declared else {
        return Err(ReadError::Other(
            "no `sections` line (an empty answer?)".into(),
        ));
    };
    // Declared sections without rows are reported empty.
    for s in Section::ALL {
        if declared & s.bit() != 0 && contract.seen & s.bit() == 0 {
            contract.begin(s)?;
        }
    }
    Ok(contract.finish()?)
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
    fn section(&mut self, _: Section) -> Result<(), SinkError> {
        Ok(())
    }
    fn row(&mut self, row: Row) -> Result<(), SinkError> {
        serde_json::to_writer(&mut self.out, &row).map_err(SinkError::keep)?;
        self.out.write_all(b"\n").map_err(SinkError::keep)
    }
    fn finish(&mut self) -> Result<(), SinkError> {
        self.out.flush().map_err(SinkError::keep)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::stream::read_any;
    use crate::state::stream::tests::DOC;

    fn lines_of(state: &State) -> String {
        let mut out = Vec::new();
        write_lines(state, &mut out).unwrap();
        String::from_utf8(out).unwrap()
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
}
