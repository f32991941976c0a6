//! `kind = "kill"`, `"kill-worker"` and `"cut-database"`: the specs of
//! the process and database faults the nemesis carries out, and their
//! bounds.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::text::units::HumanDuration;

/// The signal of a `kill` fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KillSignal {
    /// SIGKILL, then restart.
    Kill,
    /// SIGTERM (graceful), then restart.
    Term,
    /// SIGSTOP for `pause`, then SIGCONT.
    Stop,
}

/// What a receiver kill waits for before its signal: something the
/// harness sees on the wire, not the clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KillTrigger {
    /// The moment the harness reads a 2xx: a receiver that answers before
    /// its write is durable has answered and not yet written.
    Answer,
    /// While a request is in flight, a seeded fraction of a typical answer
    /// time after it was sent: between a commit and its answer.
    InFlight,
}

impl KillTrigger {
    /// The trigger's name, as scenario files and the history write it.
    pub fn name(self) -> &'static str {
        match self {
            KillTrigger::Answer => "answer",
            KillTrigger::InFlight => "in-flight",
        }
    }
}

/// `kind = "kill"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KillSpec {
    /// The signal.
    #[serde(default = "default_signal")]
    pub signal: KillSignal,
    /// How many times, at seeded random moments within `over`.
    #[serde(default = "default_kills")]
    pub count: u32,
    /// The steady stream's length: first attempts are spread over it.
    #[serde(default = "default_over")]
    pub over: HumanDuration,
    /// SIGSTOP only: how long the process stays paused.
    #[serde(default = "default_pause")]
    pub pause: HumanDuration,
    /// A crash point the receiver fires itself (`crash-after-commit=1/8`),
    /// used instead of timed kills when the target's lifecycle says
    /// `failpoints = true`.
    #[serde(default)]
    pub failpoint: Option<String>,
    /// What each kill waits for, taken in turn (`["answer", "in-flight"]`
    /// alternates); `["in-flight"]` when not given.
    #[serde(default = "default_on")]
    pub on: Vec<KillTrigger>,
}

/// `kind = "kill-worker"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KillWorkerSpec {
    /// How many SIGKILLs, at seeded random moments within `over`.
    #[serde(default = "default_kills")]
    pub count: u32,
    /// The steady stream's length.
    #[serde(default = "default_over")]
    pub over: HumanDuration,
    /// A worker crash point (`crash-in-worker=3`) used instead of timed
    /// kills when the target's lifecycle says `failpoints = true`.
    #[serde(default)]
    pub failpoint: Option<String>,
}

/// How a database is cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CutVia {
    /// The fault proxy if configured, else the stop/start commands, else a SQLite lock.
    Auto,
    /// The fault proxy.
    Proxy,
    /// The stop and start commands.
    Commands,
    /// An exclusive lock on the SQLite file.
    SqliteLock,
}

/// What the fault proxy does during the cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CutMode {
    /// Reset new connections.
    Refuse,
    /// Reset existing and new connections.
    Reset,
    /// Swallow traffic: the receiver's own timeouts must end its waits.
    Blackhole,
    /// Delay every chunk by `latency`.
    Latency,
}

/// `kind = "cut-database"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CutDatabaseSpec {
    /// How.
    #[serde(default = "default_via")]
    pub via: CutVia,
    /// Proxy mode.
    #[serde(default = "default_cut_mode")]
    pub mode: CutMode,
    /// Proxy latency mode: the delay per chunk.
    #[serde(default = "default_latency")]
    pub latency: HumanDuration,
    /// When the cut starts, after sending starts.
    #[serde(default = "default_at")]
    pub at: HumanDuration,
    /// The least time the database stays cut (real time, never scaled);
    /// `min` is the same key.
    #[serde(default = "default_outage", alias = "min")]
    pub duration: HumanDuration,
    /// The cut holds until this many attempts sent during it have been
    /// answered (any status) while the database was down, so that a
    /// receiver whose connection pool waits longer than `duration` still has
    /// to answer during the outage.
    #[serde(default = "default_seen")]
    pub seen: u32,
    /// The cut also holds until this many of those answers were to a
    /// delivery the receiver had answered before (a retry, a copy, a
    /// redelivery), so that a receiver meets a delivery again while its
    /// database is down; 0 (the default) asks for none.
    #[serde(default)]
    pub seen_repeats: u32,
    /// The longest the cut holds, seen or not (real time, never scaled).
    #[serde(default = "default_max_outage")]
    pub max: HumanDuration,
    /// The steady stream's length.
    #[serde(default = "default_over")]
    pub over: HumanDuration,
}

fn default_signal() -> KillSignal {
    KillSignal::Kill
}
fn default_kills() -> u32 {
    3
}
fn default_on() -> Vec<KillTrigger> {
    vec![KillTrigger::InFlight]
}
fn default_over() -> HumanDuration {
    HumanDuration(Duration::from_secs(2))
}
fn default_pause() -> HumanDuration {
    HumanDuration(Duration::from_millis(500))
}
fn default_via() -> CutVia {
    CutVia::Auto
}
fn default_cut_mode() -> CutMode {
    CutMode::Reset
}
fn default_latency() -> HumanDuration {
    HumanDuration(Duration::from_millis(200))
}
fn default_at() -> HumanDuration {
    HumanDuration(Duration::from_millis(300))
}
fn default_outage() -> HumanDuration {
    HumanDuration(Duration::from_secs(1))
}
fn default_seen() -> u32 {
    3
}
fn default_max_outage() -> HumanDuration {
    HumanDuration(Duration::from_secs(30))
}

impl KillSpec {
    /// Checks the spec's bounds; the error is the message the scenario file reports.
    pub fn validate(&self) -> Result<(), String> {
        if self.on.is_empty() {
            return Err("kill on: expected at least one of \"answer\", \"in-flight\"".into());
        }
        if let Some(fp) = &self.failpoint {
            super::failpoint::check(fp).map_err(|e| format!("kill {e}"))?;
        }
        check_count_over("kill", self.count, self.over)
    }

    /// The trigger of kill number `i` (from 0): the list taken in turn.
    pub fn trigger(&self, i: usize) -> KillTrigger {
        self.on
            .get(i % self.on.len().max(1))
            .copied()
            .unwrap_or(KillTrigger::InFlight)
    }
}

impl KillWorkerSpec {
    /// Checks the spec's bounds; the error is the message the scenario file reports.
    pub fn validate(&self) -> Result<(), String> {
        if let Some(fp) = &self.failpoint {
            super::failpoint::check(fp).map_err(|e| format!("kill-worker {e}"))?;
        }
        check_count_over("kill-worker", self.count, self.over)
    }

    /// The same kills as a [`KillSpec`]: SIGKILL, no pause.
    pub fn as_kill(&self) -> KillSpec {
        KillSpec {
            signal: KillSignal::Kill,
            count: self.count,
            over: self.over,
            pause: Default::default(),
            failpoint: self.failpoint.clone(),
            on: default_on(),
        }
    }
}

impl CutDatabaseSpec {
    /// Checks the spec's bounds; the error is the message the scenario file reports.
    pub fn validate(&self) -> Result<(), String> {
        if self.duration.0.is_zero() || self.duration.0 > Duration::from_secs(3600) {
            return Err("cut-database duration: expected more than 0 and at most 1h".into());
        }
        if self.max.0 < self.duration.0 || self.max.0 > Duration::from_secs(3600) {
            return Err(format!(
                "cut-database max = {}: expected at least duration ({}) and at most 1h",
                self.max, self.duration
            ));
        }
        if self.seen == 0 || self.seen > 1000 {
            return Err("cut-database seen: expected 1 to 1000".into());
        }
        if self.seen_repeats > self.seen {
            return Err(format!(
                "cut-database seen_repeats = {}: expected at most seen ({})",
                self.seen_repeats, self.seen
            ));
        }
        Ok(())
    }
}

/// The bounds a timed kill shares: at most 1000 kills within at most 1h.
fn check_count_over(fault: &str, count: u32, over: HumanDuration) -> Result<(), String> {
    if count > 1000 {
        return Err(format!("{fault} count: expected at most 1000"));
    }
    if over.0 > Duration::from_secs(3600) {
        return Err(format!("{fault} over: expected at most 1h"));
    }
    Ok(())
}
