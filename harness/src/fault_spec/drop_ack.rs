//! `kind = "drop-ack"`: the spec of discarding 2xx answers so the sender
//! retries, and its bounds.

use serde::{Deserialize, Serialize};

use super::share::check_share;

/// `kind = "drop-ack"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DropAckSpec {
    /// Share of genuine deliveries whose acks are discarded (0..=1).
    #[serde(default = "super::share::one")]
    pub share: f64,
    /// How many 2xx answers of each are discarded before one is accepted.
    #[serde(default = "one_u32")]
    pub times: u32,
}

fn one_u32() -> u32 {
    1
}

impl DropAckSpec {
    /// Checks the spec's bounds; the error is the message the scenario file reports.
    pub fn validate(&self) -> Result<(), String> {
        check_share("drop-ack", self.share)?;
        if self.times == 0 || self.times > 20 {
            return Err("drop-ack times: expected 1 to 20".into());
        }
        Ok(())
    }
}
