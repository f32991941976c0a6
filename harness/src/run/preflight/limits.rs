//! The preflight's limits: how long it waits for the state and for a
//! delivery to show up, how often it tries again, and the prefix that
//! keeps its task ids apart from every scenario's.

use std::time::Duration;

/// How long one state read or hook call may take here, unless `[state]`
/// sets its own `timeout`.
pub const CALL_LIMIT: Duration = Duration::from_secs(3);
/// How long an acknowledged delivery may take to show up in the state.
pub const APPEAR_LIMIT: Duration = Duration::from_secs(3);
/// Attempts at a delivery answered with a passing failure (5xx, 429, reset).
pub const TRIES: u32 = 3;
/// The pause between those attempts.
pub const TRY_PAUSE: Duration = Duration::from_millis(300);
/// The prefix of the preflight's task ids: not hex, so never a scenario's.
pub const KEY_PREFIX: &str = "tsk_preflight_";
