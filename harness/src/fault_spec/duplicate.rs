//! `kind = "duplicate"`: the spec of sending deliveries more than once
//! (concurrent copies or sequential replays), and its bounds.

use serde::{Deserialize, Serialize};

use super::share::check_share;

/// How duplicates are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DuplicateMode {
    /// Copies released at the same instant on separate connections.
    Concurrent,
    /// Copies sent one after another, after the first ack.
    Sequential,
}

/// `kind = "duplicate"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DuplicateSpec {
    /// Concurrent or sequential.
    pub mode: DuplicateMode,
    /// Share of genuine deliveries affected (0..=1).
    #[serde(default = "super::share::one")]
    pub share: f64,
    /// Concurrent: fewest and most copies in all (2..=8).
    #[serde(default = "default_copies")]
    pub copies: [u32; 2],
    /// Sequential: exact replays of the acknowledged request.
    #[serde(default)]
    pub replay: u32,
    /// Sequential: replays with a fresh `Webhook-Id` (same body and signature).
    #[serde(default)]
    pub fresh_id: u32,
    /// Sequential: dashboard redeliveries (same id, signed afresh, full schedule).
    #[serde(default)]
    pub redeliver: u32,
}

/// Most sequential replays, fresh-id replays or redeliveries per
/// delivery (each is a planned send: a larger count only sizes a plan).
pub const MAX_REPEATS: u32 = 100;

fn default_copies() -> [u32; 2] {
    [2, 8]
}

impl DuplicateSpec {
    /// Checks the spec's bounds; the error is the message the scenario file reports.
    pub fn validate(&self) -> Result<(), String> {
        check_share("duplicate", self.share)?;
        let [lo, hi] = self.copies;
        if lo < 2 || hi > 8 || lo > hi {
            return Err(format!(
                "duplicate copies = [{lo}, {hi}]: expected 2 <= low <= high <= 8"
            ));
        }
        for (name, n) in [
            ("replay", self.replay),
            ("fresh_id", self.fresh_id),
            ("redeliver", self.redeliver),
        ] {
            if n > MAX_REPEATS {
                return Err(format!(
                    "duplicate {name} = {n}: expected 0 to {MAX_REPEATS}"
                ));
            }
        }
        if self.mode == DuplicateMode::Sequential
            && self.replay + self.fresh_id + self.redeliver == 0
        {
            return Err(
                "sequential duplicate sends nothing (hint: set replay, fresh_id or redeliver)"
                    .into(),
            );
        }
        Ok(())
    }
}
