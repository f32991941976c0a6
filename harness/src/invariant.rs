//! The invariant ids I1–I9: names, short codes and parsing. A leaf, so
//! that a scenario can name what it checks and a fault tag what it
//! excuses without importing the checker.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// One of the invariants I1–I9.
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
}

impl InvariantId {
    /// Every invariant, in order.
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
#[error("expected INVARIANT like I1 or no-loss (I1..I9), got {given:?}{hint}", given = .0, hint = near(.0))]
pub struct InvariantParseError(pub String);

/// ` (hint: did you mean …?)` when the name is near an id or a name.
fn near(given: &str) -> String {
    let known = InvariantId::ALL
        .iter()
        .flat_map(|id| [id.code(), id.name()]);
    crate::suggest::closest(given, known)
        .map(|n| format!(" (hint: did you mean {n}?)"))
        .unwrap_or_default()
}

impl FromStr for InvariantId {
    type Err = InvariantParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        InvariantId::ALL
            .into_iter()
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
