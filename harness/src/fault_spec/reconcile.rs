//! `kind = "reconcile"`: the spec of the reconciliation step against the
//! harness's provider API, and its bounds.

use serde::{Deserialize, Serialize};

use super::share::check_share;

/// `kind = "reconcile"`: after sending, tell the receiver which tasks were
/// submitted and trigger its reconciliation against the provider API.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReconcileSpec {
    /// Extra submitted tasks that never finish (QUEUED or PROCESSING).
    #[serde(default)]
    pub pending: usize,
    /// Extra submitted tasks the provider no longer keeps (404).
    #[serde(default)]
    pub expired: usize,
    /// Share of task lookups answered 429 once before being served.
    #[serde(default)]
    pub throttle_share: f64,
}

impl ReconcileSpec {
    /// Checks the spec's bounds; the error is the message the scenario file reports.
    pub fn validate(&self) -> Result<(), String> {
        check_share("reconcile throttle", self.throttle_share)?;
        if self.pending + self.expired > 10_000 {
            return Err("reconcile pending + expired: expected at most 10000".into());
        }
        Ok(())
    }
}
