//! What every form of the state carries: the sections, a row of any of
//! them, and the sink that takes them one at a time, in the one order
//! every reader keeps. [`State`] is both a sink (it collects the rows) and
//! a source (it hands its rows to another sink).

use serde::{Deserialize, Serialize};

use crate::state::{Effect, InboxRow, ResourceRow, ResultRow, State, Winner};

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

    pub(super) fn parse(name: &str) -> Option<Section> {
        Section::ALL.into_iter().find(|s| s.name() == name)
    }

    pub(super) fn bit(self) -> u8 {
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

/// Why a sink stopped taking a state: whose fault it is decides what
/// follows. A state the contract refuses is the receiver's answer to fix
/// (its invariants turn unknown, the reason named); a row the harness
/// could not keep (a full disk under a spill or `state.json`) is the
/// harness's own failure, never graded as the receiver's state.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SinkError {
    /// The state breaks its contract (a section twice, `inbox` missing).
    #[error("{0}")]
    Refused(String),
    /// The harness could not keep what it read.
    #[error("the harness could not keep the state it read: {0}")]
    Keep(String),
}

impl SinkError {
    /// A write of the harness's own that failed.
    pub fn keep(e: impl std::fmt::Display) -> SinkError {
        SinkError::Keep(e.to_string())
    }
}

impl From<String> for SinkError {
    fn from(reason: String) -> Self {
        SinkError::Refused(reason)
    }
}

/// Consumes a state one row at a time.
pub trait StateSink {
    /// Section `s` is reported; its rows follow (none for an empty list).
    fn section(&mut self, s: Section) -> Result<(), SinkError>;
    /// One row of the section last begun.
    fn row(&mut self, row: Row) -> Result<(), SinkError>;
    /// The state is complete.
    fn finish(&mut self) -> Result<(), SinkError> {
        Ok(())
    }
}

impl<T: StateSink + ?Sized> StateSink for &mut T {
    fn section(&mut self, s: Section) -> Result<(), SinkError> {
        (**self).section(s)
    }
    fn row(&mut self, row: Row) -> Result<(), SinkError> {
        (**self).row(row)
    }
    fn finish(&mut self) -> Result<(), SinkError> {
        (**self).finish()
    }
}

/// Collects the rows: the whole [`State`], for runs small enough to hold it.
impl StateSink for State {
    fn section(&mut self, s: Section) -> Result<(), SinkError> {
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

    fn row(&mut self, row: Row) -> Result<(), SinkError> {
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
    pub fn replay(&self, sink: &mut impl StateSink) -> Result<(), SinkError> {
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
