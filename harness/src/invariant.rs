//! The invariant ids: I1–I9 for a receiver, S1–S9 for a sender (what
//! `hookstorm sink` judges), with their names, short codes and parsing. A
//! leaf, so that a scenario can name what it checks and a fault tag what
//! it excuses without importing the checker.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// One of the receiver invariants I1–I9 or the sender invariants S1–S9.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum InvariantId {
    /// no-loss
    I1,
    /// exactly-once
    I2,
    /// processed-once
    I3,
    /// no-phantom
    I4,
    /// correct-winner
    I5,
    /// no-stale-overwrite
    I6,
    /// status-conformance
    I7,
    /// poison-isolation
    I8,
    /// acknowledged
    I9,
    /// retry-envelope (a sender's)
    S1,
    /// final-answers (a sender's)
    S2,
    /// retry-after (a sender's)
    S3,
    /// no-redirects (a sender's)
    S4,
    /// stable-identity (a sender's)
    S5,
    /// fresh-signature (a sender's)
    S6,
    /// timeout (a sender's)
    S7,
    /// none-dropped (a sender's)
    S8,
    /// resource-order (a sender's)
    S9,
}

impl InvariantId {
    /// Every receiver invariant, in order.
    pub const ALL: [InvariantId; 9] = [
        InvariantId::I1,
        InvariantId::I2,
        InvariantId::I3,
        InvariantId::I4,
        InvariantId::I5,
        InvariantId::I6,
        InvariantId::I7,
        InvariantId::I8,
        InvariantId::I9,
    ];

    /// Every sender invariant, in order (`hookstorm sink`).
    pub const SENDER: [InvariantId; 9] = [
        InvariantId::S1,
        InvariantId::S2,
        InvariantId::S3,
        InvariantId::S4,
        InvariantId::S5,
        InvariantId::S6,
        InvariantId::S7,
        InvariantId::S8,
        InvariantId::S9,
    ];

    /// Whether it is one of a sender's invariants (S1–S9).
    pub fn is_sender(self) -> bool {
        Self::SENDER.contains(&self)
    }

    /// The invariant's name (`no-loss`, …).
    pub fn name(self) -> &'static str {
        match self {
            InvariantId::I1 => "no-loss",
            InvariantId::I2 => "exactly-once",
            InvariantId::I3 => "processed-once",
            InvariantId::I4 => "no-phantom",
            InvariantId::I5 => "correct-winner",
            InvariantId::I6 => "no-stale-overwrite",
            InvariantId::I7 => "status-conformance",
            InvariantId::I8 => "poison-isolation",
            InvariantId::I9 => "acknowledged",
            InvariantId::S1 => "retry-envelope",
            InvariantId::S2 => "final-answers",
            InvariantId::S3 => "retry-after",
            InvariantId::S4 => "no-redirects",
            InvariantId::S5 => "stable-identity",
            InvariantId::S6 => "fresh-signature",
            InvariantId::S7 => "timeout",
            InvariantId::S8 => "none-dropped",
            InvariantId::S9 => "resource-order",
        }
    }

    /// The short id (`I1`, …).
    pub fn code(self) -> &'static str {
        match self {
            InvariantId::I1 => "I1",
            InvariantId::I2 => "I2",
            InvariantId::I3 => "I3",
            InvariantId::I4 => "I4",
            InvariantId::I5 => "I5",
            InvariantId::I6 => "I6",
            InvariantId::I7 => "I7",
            InvariantId::I8 => "I8",
            InvariantId::I9 => "I9",
            InvariantId::S1 => "S1",
            InvariantId::S2 => "S2",
            InvariantId::S3 => "S3",
            InvariantId::S4 => "S4",
            InvariantId::S5 => "S5",
            InvariantId::S6 => "S6",
            InvariantId::S7 => "S7",
            InvariantId::S8 => "S8",
            InvariantId::S9 => "S9",
        }
    }
}

impl fmt::Display for InvariantId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.code(), self.name())
    }
}

/// An invariant name could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("expected INVARIANT like I1 or no-loss (I1..I9, S1..S9 for a sender), got {given:?}{hint}", given = .0, hint = near(.0))]
pub struct InvariantParseError(pub String);

/// ` (hint: did you mean …?)` when the name is near an id or a name.
fn near(given: &str) -> String {
    let known = InvariantId::ALL
        .iter()
        .chain(&InvariantId::SENDER)
        .flat_map(|id| [id.code(), id.name()]);
    crate::text::suggest::closest(given, known)
        .map(|n| format!(" (hint: did you mean {n}?)"))
        .unwrap_or_default()
}

impl FromStr for InvariantId {
    type Err = InvariantParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        InvariantId::ALL
            .into_iter()
            .chain(InvariantId::SENDER)
            .find(|id| {
                t.eq_ignore_ascii_case(id.code())
                    || t.eq_ignore_ascii_case(id.name())
                    || t.eq_ignore_ascii_case(&id.to_string())
            })
            .ok_or_else(|| InvariantParseError(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mistyped_invariant_is_answered_with_the_nearest_id_or_name() {
        let e = "exactly-onse"
            .parse::<InvariantId>()
            .unwrap_err()
            .to_string();
        assert!(e.ends_with("(hint: did you mean exactly-once?)"), "{e}");
        let e = "I22".parse::<InvariantId>().unwrap_err().to_string();
        assert!(e.ends_with("(hint: did you mean I2?)"), "{e}");
        let e = "frobnicate".parse::<InvariantId>().unwrap_err().to_string();
        assert!(!e.contains("did you mean"), "{e}");
    }
}
