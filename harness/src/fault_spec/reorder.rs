//! `kind = "reorder"`: the spec of changing the order deliveries are sent
//! in, and its bounds.

use serde::{Deserialize, Serialize};

/// How deliveries are reordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReorderMode {
    /// A seeded shuffle of the whole stream.
    Shuffle,
    /// Per job newest first, FAILED after COMPLETED, in waves.
    Reverse,
    /// Older tasks of a job held back until the newer are acknowledged;
    /// their first attempts count as failed.
    HoldBack,
}

/// `kind = "reorder"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReorderSpec {
    /// The mode.
    pub mode: ReorderMode,
    /// Hold-back: how many first attempts of a held delivery count as failed.
    #[serde(default = "default_hold")]
    pub hold_attempts: u32,
}

fn default_hold() -> u32 {
    2
}

impl ReorderSpec {
    /// Checks the spec's bounds; the error is the message the scenario file reports.
    pub fn validate(&self) -> Result<(), String> {
        if self.hold_attempts > 9 {
            return Err("reorder hold_attempts: expected 0 to 9".into());
        }
        Ok(())
    }
}
