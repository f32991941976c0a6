//! `kind = "redeliver"`: the spec of the dashboard's redelivery rules, and
//! its bounds.

use serde::{Deserialize, Serialize};

/// `kind = "redeliver"`: how the provider's dashboard treats redelivery requests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedeliverSpec {
    /// Redeliveries allowed per account per (scaled) hour; default: the profile's.
    #[serde(default)]
    pub hourly_limit: Option<u32>,
    /// Per delivery, redelivery requests made while it is still pending
    /// (they must be refused).
    #[serde(default)]
    pub while_pending: u32,
}

impl RedeliverSpec {
    /// Checks the spec's bounds; the error is the message the scenario file reports.
    pub fn validate(&self) -> Result<(), String> {
        if self.hourly_limit == Some(0) {
            return Err("redeliver hourly_limit: expected 1 or more".into());
        }
        if self.while_pending > 10 {
            return Err("redeliver while_pending: expected 0 to 10".into());
        }
        Ok(())
    }
}
