//! Where in a state a value is wrong: the JSON path of the offending value
//! (`inbox[3].key`), kept as the rows stream past, so an error names the
//! field a person fixes, not a column in one long line of minified JSON.
//!
//! The readers hand every row to a [`RowSeed`], which deserializes it as
//! serde's derive does but notes in a [`Cursor`] the section, the row's
//! index in it and the field being read; when a row fails, the cursor is on
//! the value that failed. Nothing is allocated per row for it: the field
//! names are the row types' own `&'static str`s.
//!
//! [`ReadError`] tells the two ways a read fails apart: a state of the
//! right form whose value at a path is wrong (the receiver's state answer
//! needs fixing), and anything else (not JSON, not the state object, cut
//! off), where the source may be the wrong one.

use std::cell::Cell;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IntoDeserializer, MapAccess, SeqAccess};
use serde::de::{Deserialize, Visitor};

use super::row::{Row, Section, SinkError};
use crate::state::{Effect, InboxRow, ResourceRow, ResultRow, Winner};

/// Why a state could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    /// The state's form, but the value at `at` is not what the state holds there.
    #[error("{at}: {message}")]
    Shape {
        /// The JSON path of the value (`inbox[0].key`), and for JSON Lines its line.
        at: String,
        /// What is wrong with it.
        message: String,
    },
    /// Not the state at all (not JSON, not the state object), cut off, or unreadable.
    #[error("{0}")]
    Other(String),
    /// The harness could not keep what it read (its own write failed): no
    /// fault of the state's.
    #[error("{0}")]
    Keep(String),
}

impl From<String> for ReadError {
    fn from(message: String) -> Self {
        ReadError::Other(message)
    }
}

impl From<SinkError> for ReadError {
    fn from(e: SinkError) -> Self {
        match e {
            SinkError::Refused(why) => ReadError::Other(why),
            keep @ SinkError::Keep(_) => ReadError::Keep(keep.to_string()),
        }
    }
}

/// Where a reader is: the section, the row's index in it, the field.
#[derive(Debug, Default)]
pub(super) struct Cursor {
    section: Cell<Option<Section>>,
    row: Cell<Option<u64>>,
    field: Cell<Option<&'static str>>,
    /// The sink refused a row: its error is no shape error.
    sink_failed: Cell<bool>,
    /// The sink could not keep a row: the harness's failure, passed
    /// through serde as text and given back as [`ReadError::Keep`].
    kept_not: std::cell::RefCell<Option<String>>,
}

impl Cursor {
    /// Entering (or, with `None`, leaving) a section.
    pub fn section(&self, s: Option<Section>) {
        self.section.set(s);
        self.row.set(None);
        self.field.set(None);
    }

    /// Reading row `index` of the current section.
    pub fn row(&self, index: u64) {
        self.row.set(Some(index));
        self.field.set(None);
    }

    /// The sink's error on a row, to pass through serde as it is.
    pub fn sink_error<E: de::Error>(&self, e: SinkError) -> E {
        self.sink_failed.set(true);
        self.section_error(e)
    }

    /// The sink's error on beginning a section, to pass through serde as
    /// it is; one the harness could not keep is given back as such.
    pub fn section_error<E: de::Error>(&self, e: SinkError) -> E {
        if let SinkError::Keep(_) = &e {
            *self.kept_not.borrow_mut() = Some(e.to_string());
        }
        E::custom(e)
    }

    /// The path of the value being read (`inbox[3].key`), or `None` at the
    /// top of the document.
    fn path(&self) -> Option<String> {
        let mut p = self.section.get()?.name().to_string();
        if let Some(i) = self.row.get() {
            p.push_str(&format!("[{i}]"));
        }
        if let Some(f) = self.field.get() {
            p.push('.');
            p.push_str(f);
        }
        Some(p)
    }

    /// `e` as a read error: a data error inside a section is the shape's,
    /// at the cursor's path; `line` is the JSON Lines line, if any.
    pub fn error(&self, e: &serde_json::Error, line: Option<u64>) -> ReadError {
        if let Some(why) = self.kept_not.borrow_mut().take() {
            return ReadError::Keep(why);
        }
        let text = e.to_string();
        let bare = match e.line() {
            0 => text.as_str(),
            l => text
                .strip_suffix(&format!(" at line {l} column {}", e.column()))
                .unwrap_or(&text),
        };
        let path = self.path();
        match (e.classify(), path) {
            (serde_json::error::Category::Data, Some(mut at)) if !self.sink_failed.get() => {
                let mut message = bare.to_string();
                if let Some(field) = bare
                    .strip_prefix("missing field `")
                    .and_then(|r| r.strip_suffix('`'))
                {
                    at = format!("{at}.{field}");
                    message = "missing (it is required)".into();
                }
                if let Some(l) = line {
                    at.push_str(&format!(" (line {l})"));
                }
                ReadError::Shape { at, message }
            }
            (_, Some(at)) if self.sink_failed.get() => ReadError::Other(format!("{at}: {bare}")),
            (_, Some(at)) if line.is_none() => ReadError::Other(format!("at {at}: {text}")),
            _ => ReadError::Other(text),
        }
    }
}

/// Reads one row of `section`, noting in `cursor` the field being read.
pub(super) struct RowSeed<'c> {
    pub section: Section,
    pub cursor: &'c Cursor,
}

impl<'de> DeserializeSeed<'de> for RowSeed<'_> {
    type Value = Row;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Row, D::Error> {
        let d = Fields {
            inner: d,
            section: self.section,
            cursor: self.cursor,
        };
        Ok(match self.section {
            Section::Inbox => Row::Inbox(InboxRow::deserialize(d)?),
            Section::Results => Row::Results(ResultRow::deserialize(d)?),
            Section::Winners => Row::Winners(Winner::deserialize(d)?),
            Section::Effects => Row::Effects(Effect::deserialize(d)?),
            Section::Resources => Row::Resources(ResourceRow::deserialize(d)?),
        })
    }
}

/// A row's deserializer that follows the row's fields.
struct Fields<'c, D> {
    inner: D,
    section: Section,
    cursor: &'c Cursor,
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Fields<'_, D> {
    type Error = D::Error;

    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, D::Error> {
        self.inner.deserialize_any(v)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, D::Error> {
        self.inner.deserialize_struct(
            name,
            fields,
            RowVisitor {
                inner: v,
                section: self.section,
                track: Track {
                    fields,
                    cursor: self.cursor,
                },
            },
        )
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map enum identifier ignored_any
    }
}

/// A row's field names and the cursor they are noted in.
#[derive(Clone, Copy)]
struct Track<'c> {
    fields: &'static [&'static str],
    cursor: &'c Cursor,
}

struct RowVisitor<'c, V> {
    inner: V,
    section: Section,
    track: Track<'c>,
}

impl<'de, V: Visitor<'de>> Visitor<'de> for RowVisitor<'_, V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{} row object", self.section.name())
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.inner.visit_map(RowMap {
            inner: map,
            track: self.track,
        })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        self.inner.visit_seq(seq)
    }
}

struct RowMap<'c, A> {
    inner: A,
    track: Track<'c>,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for RowMap<'_, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        self.inner.next_key_seed(Key {
            inner: seed,
            track: self.track,
        })
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, A::Error> {
        let v = self.inner.next_value_seed(seed)?;
        self.track.cursor.field.set(None);
        Ok(v)
    }

    fn size_hint(&self) -> Option<usize> {
        self.inner.size_hint()
    }
}

/// A row's key: noted in the cursor when it is one of the row's fields,
/// then handed to the row's own field visitor.
struct Key<'c, K> {
    inner: K,
    track: Track<'c>,
}

impl<'de, K: DeserializeSeed<'de>> DeserializeSeed<'de> for Key<'_, K> {
    type Value = K::Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<K::Value, D::Error> {
        d.deserialize_identifier(self)
    }
}

impl<'de, K: DeserializeSeed<'de>> Visitor<'de> for Key<'_, K> {
    type Value = K::Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a field name")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<K::Value, E> {
        let Track { fields, cursor } = self.track;
        cursor.field.set(fields.iter().copied().find(|f| *f == key));
        self.inner.deserialize(key.into_deserializer())
    }
}

#[cfg(test)]
mod tests {
    use crate::state::stream::{read_document, read_lines, ReadError};
    use crate::state::State;

    fn shape(e: ReadError) -> (String, String) {
        match e {
            ReadError::Shape { at, message } => (at, message),
            ReadError::Other(m) | ReadError::Keep(m) => panic!("not a shape error: {m}"),
        }
    }

    #[test]
    fn a_wrong_value_is_named_by_its_json_path_not_a_column() {
        let doc = r#"{"inbox":[{"key":"a"},{"key":1,"processed":true}],"results":[]}"#;
        let (at, message) = shape(read_document(doc.as_bytes(), State::default()).unwrap_err());
        assert_eq!(at, "inbox[1].key");
        assert!(
            message.contains("expected a string") && !message.contains("column"),
            "{message}"
        );

        let doc = r#"{"inbox":[],"results":[{"task_id":"t","status":"COMPLETED","account":7}]}"#;
        let (at, _) = shape(read_document(doc.as_bytes(), State::default()).unwrap_err());
        assert_eq!(at, "results[0].account");

        let doc = r#"{"inbox":[{"key":"a"},{"kee":"b","processed":true}]}"#;
        let (at, message) = shape(read_document(doc.as_bytes(), State::default()).unwrap_err());
        assert_eq!(
            (at.as_str(), message.as_str()),
            ("inbox[1].key", "missing (it is required)")
        );

        let (at, _) = shape(read_document(&br#"{"inbox":[7]}"#[..], State::default()).unwrap_err());
        assert_eq!(at, "inbox[0]");
        let (at, _) = shape(read_document(&br#"{"inbox":{}}"#[..], State::default()).unwrap_err());
        assert_eq!(at, "inbox");
    }

    #[test]
    fn json_lines_name_the_path_and_the_line() {
        let text = "{\"sections\":[\"inbox\"]}\n{\"inbox\":{\"key\":\"a\"}}\n{\"inbox\":{\"key\":\"b\",\"processed\":\"yes\"}}\n";
        let (at, message) = shape(read_lines(text.as_bytes(), State::default()).unwrap_err());
        assert_eq!(at, "inbox[1].processed (line 3)");
        assert!(message.contains("expected a boolean"), "{message}");
    }

    #[test]
    fn what_is_not_the_state_at_all_is_no_shape_error() {
        for text in [
            r#"{"status":"ok"}"#,
            "<html>",
            r#"{"inbox":[{"key":"a"}"#,
            "[]",
            "{}",
        ] {
            let e = read_document(text.as_bytes(), State::default()).unwrap_err();
            assert!(matches!(e, ReadError::Other(_)), "{text}: {e:?}");
        }
    }
}
