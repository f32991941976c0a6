//! `kind = "front"`: the spec of the fault front (an HTTP proxy before the
//! receiver), and its bounds.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::share::check_share;
use crate::text::units::HumanDuration;

/// `kind = "front"`: the fault front answers, delays or stalls attempts
/// before they reach the receiver; everything else is forwarded verbatim.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FrontSpec {
    /// Share of deliveries affected (0..=1), chosen by body from the seed.
    #[serde(default = "super::share::one")]
    pub share: f64,
    /// The first k attempts of an affected delivery are answered `status`
    /// (or stalled, with `stall_body`) instead of forwarded.
    #[serde(default)]
    pub fail_first: u32,
    /// The status answered to those attempts: a 5xx or 429.
    #[serde(default = "default_front_status")]
    pub status: u16,
    /// Answer every affected attempt with this redirect (301, 302, 307, 308).
    #[serde(default)]
    pub redirect: Option<u16>,
    /// Hold every forwarded request this long (real time) first.
    #[serde(default)]
    pub delay: Option<HumanDuration>,
    /// The first `fail_first` attempts dribble part of the body to the
    /// receiver, stall, and are then cut on both sides.
    #[serde(default)]
    pub stall_body: bool,
    /// Bytes forwarded before the stall.
    #[serde(default = "default_stall_bytes")]
    pub stall_after_bytes: usize,
    /// How long the stall lasts before the cut (real time).
    #[serde(default = "default_stall_for")]
    pub stall_for: HumanDuration,
}

fn default_front_status() -> u16 {
    503
}

fn default_stall_bytes() -> usize {
    40
}

fn default_stall_for() -> HumanDuration {
    HumanDuration(Duration::from_secs(1))
}

impl FrontSpec {
    /// Checks the spec's bounds; the error is the message the scenario file reports.
    pub fn validate(&self) -> Result<(), String> {
        check_share("front", self.share)?;
        if !(self.status == 429 || (500..=599).contains(&self.status)) {
            return Err(format!(
                "front status = {}: expected 429 or a 5xx",
                self.status
            ));
        }
        if let Some(r) = self.redirect {
            if ![301, 302, 307, 308].contains(&r) {
                return Err(format!(
                    "front redirect = {r}: expected 301, 302, 307 or 308"
                ));
            }
        }
        if self.fail_first > 100 {
            return Err("front fail_first: expected 0 to 100".into());
        }
        if self.stall_body && self.fail_first == 0 {
            return Err(
                "front stall_body stalls the first fail_first attempts (hint: set fail_first = 1)"
                    .into(),
            );
        }
        Ok(())
    }
}
