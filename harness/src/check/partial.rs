//! What a check found, before it is worded: per invariant a few counters
//! and ranked evidence ([`Partial`]), per scenario the run's counts, the
//! answers' own findings and the dead letters ([`Findings`]).
//!
//! Every invariant is graded in two steps: a share of the keys gives a
//! [`Partial`], and the partials of every share, merged, are worded into
//! the [`InvariantResult`] a reader sees. A check of everything at once is
//! one share; a check in partitions (`check::spill`), or by several
//! processes (`hookstorm check --partition I/N`), has many. The counters
//! add up, the evidence keeps its rank ([`Found`]), so the words, the
//! evidence and its order are the same however the keys were shared out.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::found::Found;
use super::verdict::{Counts, DeadLetter, MAX_DEAD_LETTERS};
use crate::invariant::InvariantId;

/// What one invariant found in a share of the keys.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Partial {
    /// The invariant's counters (each invariant's module says what they count).
    pub n: [u64; 3],
    /// Its findings, ranked.
    pub found: Found,
    /// I7's non-strict deviations.
    #[serde(default, skip_serializing_if = "Found::is_empty")]
    pub lenient: Found,
    /// The checker failed in this share (a panic's message): the
    /// invariant is unknown, whatever the other shares found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
}

impl Partial {
    /// A share the checker failed in.
    pub fn failed(message: String) -> Self {
        Partial {
            failed: Some(message),
            ..Partial::default()
        }
    }

    /// Why the checker failed, in some share.
    pub fn failure(&self) -> Option<&str> {
        self.failed.as_deref()
    }

    /// Adds `other`, found in another share.
    pub fn merge(&mut self, other: Partial) {
        for (a, b) in self.n.iter_mut().zip(other.n) {
            *a += b;
        }
        self.found.merge(other.found);
        self.lenient.merge(other.lenient);
        if self.failed.is_none() {
            self.failed = other.failed;
        }
    }
}

/// Which optional sections the state reported (`inbox` always is).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sections {
    /// `results`.
    pub results: bool,
    /// `winners`.
    pub winners: bool,
    /// `effects`.
    pub effects: bool,
    /// `resources`.
    pub resources: bool,
}

/// What a check found for one scenario in one share of its keys.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Findings {
    /// Attempts and distinct deliveries of the share.
    pub counts: Counts,
    /// I7's findings about single answers, ranked by history line.
    pub status: Found,
    /// The first dead letters, with their history lines.
    pub dead: Vec<(u64, DeadLetter)>,
    /// Some attempt named a resource and its sequence.
    pub sequenced: bool,
    /// The state's sections, or why it could not be read.
    pub state: Result<Sections, String>,
    /// Each invariant's partial.
    pub partials: BTreeMap<InvariantId, Partial>,
}

impl Findings {
    /// Nothing found yet, against a state that reported `state`.
    pub fn new(state: Result<Sections, String>) -> Self {
        Findings {
            counts: Counts::default(),
            status: Found::default(),
            dead: Vec::new(),
            sequenced: false,
            state,
            partials: BTreeMap::new(),
        }
    }

    /// Adds `other`, found in another share of the same scenario's keys.
    pub fn merge(&mut self, other: Findings) {
        self.counts.add(&other.counts);
        self.status.merge(other.status);
        self.dead.extend(other.dead);
        self.dead.sort_by_key(|(line, _)| *line);
        self.dead.truncate(MAX_DEAD_LETTERS);
        self.sequenced |= other.sequenced;
        if self.state.is_ok() && other.state.is_err() {
            self.state = other.state;
        }
        for (id, p) in other.partials {
            self.partials.entry(id).or_default().merge(p);
        }
    }
}
