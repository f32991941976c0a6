//! The document form, one JSON object: read with serde's streaming
//! visitors, one row at a time (the parser's bytes metered between rows),
//! and written as the rows pass, without holding the state.

use std::io::{Read, Write};

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};

use super::contract::{Contract, Metered};
use super::path::{Cursor, ReadError, RowSeed};
use super::row::{Row, Section, SinkError, StateSink};

/// Reads the document form, one row at a time.
pub fn read_document<S: StateSink, R: Read>(r: R, sink: S) -> Result<S, ReadError> {
    let mut contract = Contract::new(sink);
    let since_row = std::rc::Rc::new(std::cell::Cell::new(0));
    contract.since_row = Some(since_row.clone());
    // The parser takes one byte at a time: the buffer is outside the
    // meter, which counts the bytes a block at a time (a row is refused
    // within a block of its budget).
    let mut de = serde_json::Deserializer::from_reader(std::io::BufReader::with_capacity(
        1 << 16,
        Metered {
            inner: r,
            since_row,
        },
    ));
    let cursor = Cursor::default();
    Document {
        contract: &mut contract,
        cursor: &cursor,
    }
    .deserialize(&mut de)
    .and_then(|()| de.end())
    .map_err(|e| cursor.error(&e, None))?;
    Ok(contract.finish()?)
}

struct Document<'a, S> {
    contract: &'a mut Contract<S>,
    cursor: &'a Cursor,
}

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
            self.cursor.section(Some(section));
            map.next_value_seed(Rows {
                section,
                contract: self.contract,
                cursor: self.cursor,
            })?;
            self.cursor.section(None);
        }
        Ok(())
    }
}

/// One section's list (or `null`, for an optional section not reported).
struct Rows<'a, S> {
    section: Section,
    contract: &'a mut Contract<S>,
    cursor: &'a Cursor,
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
        let cursor = self.cursor;
        self.contract
            .begin(self.section)
            .map_err(|e| cursor.section_error(e))?;
        d.deserialize_seq(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        for index in 0.. {
            self.cursor.row(index);
            let Some(row) = seq.next_element_seed(RowSeed {
                section: self.section,
                cursor: self.cursor,
            })?
            else {
                break;
            };
            if let Some(since) = &self.contract.since_row {
                since.set(0);
            }
            let cursor = self.cursor;
            self.contract
                .sink
                .row(row)
                .map_err(|e| cursor.sink_error(e))?;
        }
        Ok(())
    }
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

    fn io(e: std::io::Error) -> SinkError {
        SinkError::keep(e)
    }
}

impl<W: Write> StateSink for JsonWriter<W> {
    fn section(&mut self, s: Section) -> Result<(), SinkError> {
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

    fn row(&mut self, row: Row) -> Result<(), SinkError> {
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
        r.map_err(SinkError::keep)
    }

    fn finish(&mut self) -> Result<(), SinkError> {
        let end: &[u8] = match (self.any_section, self.open) {
            (false, _) => b"{}",
            (true, true) => b"]}",
            (true, false) => b"}",
        };
        self.out.write_all(end).map_err(Self::io)?;
        self.out.flush().map_err(Self::io)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::stream::tests::DOC;
    use crate::state::State;

    #[test]
    fn the_document_streams_into_the_same_state_serde_reads() {
        let whole: State = serde_json::from_str(DOC).unwrap();
        let streamed = read_document(DOC.as_bytes(), State::default()).unwrap();
        assert_eq!(streamed, whole);
        assert_eq!(streamed.winners, Some(vec![]));
        assert_eq!(streamed.effects, None);
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
}
