//! What the nemesis did, counted as it acts: signals, crashes at crash
//! points, restarts, database cuts and what each cut saw. A leaf of the
//! nemesis: its placing code fills it, and what reads a scenario's
//! findings (`tally`) and the notes word it.

use std::time::Duration;

use crate::fault::gauge::WindowCount;
use crate::fault_spec::CutDatabaseSpec;
use crate::lifecycle::Role;

/// What the nemesis did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Actions {
    /// Signals sent by the harness (kill, terminate, pause).
    pub signals: u32,
    /// Crashes at crash points (the process exited by itself).
    pub crashes: u32,
    /// Of those, crashes of the receiver (the process that answers).
    pub receiver_crashes: u32,
    /// Restarts.
    pub restarts: u32,
    /// Database cuts.
    pub cuts: u32,
    /// What each database cut saw, in order.
    pub cut_seen: Vec<CutSeen>,
    /// Things that went wrong while acting (the scenario is then unknown-prone).
    pub errors: Vec<String>,
    /// Events acknowledged before a restart and redelivered after the kills
    /// ([`super::redeliveries`]).
    pub redelivered: usize,
    /// Kills that interrupted no work and were placed again
    /// ([`super::MISSED_KILL_RETRIES`]).
    pub missed: u32,
    /// Kills of the receiver the scenario asks for (signals, not crash points).
    pub kills_wanted: u32,
    /// Of the receiver's kills, those that interrupted work: a request in
    /// flight cut off, an answer just read, a request held by a pause.
    pub kills_exercised: u32,
    /// Kills of the worker the scenario asks for (signals, not crash points).
    pub worker_kills_wanted: u32,
    /// Of the worker's kills, those that met it holding work.
    pub worker_kills_exercised: u32,
    /// Restarts of the worker after which it did not become ready.
    pub worker_unready: u32,
    /// Of the signals, those sent to the worker.
    pub worker_signals: u32,
}

/// What one database cut saw while it held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CutSeen {
    /// Attempts sent during the cut and answered before it ended.
    pub answered: WindowCount,
    /// How long it held.
    pub held: Duration,
    /// It ended because `seen` answers came (not at `max`, nor because the
    /// stream ended).
    pub reached: bool,
}

impl Actions {
    /// Kills injected: signals that ended a process, plus crash points fired.
    pub fn kills(&self) -> u32 {
        self.signals + self.crashes
    }

    /// Adds what another pass of the nemesis did.
    pub fn merge(&mut self, other: Actions) {
        self.signals += other.signals;
        self.crashes += other.crashes;
        self.receiver_crashes += other.receiver_crashes;
        self.restarts += other.restarts;
        self.cuts += other.cuts;
        self.cut_seen.extend(other.cut_seen);
        self.errors.extend(other.errors);
        self.redelivered += other.redelivered;
        self.missed += other.missed;
        self.kills_wanted += other.kills_wanted;
        self.kills_exercised += other.kills_exercised;
        self.worker_kills_wanted += other.worker_kills_wanted;
        self.worker_kills_exercised += other.worker_kills_exercised;
        self.worker_unready += other.worker_unready;
        self.worker_signals += other.worker_signals;
    }

    /// Counts a signal sent to `role`.
    pub fn signalled(&mut self, role: Role) {
        self.signals += 1;
        if role == Role::Worker {
            self.worker_signals += 1;
        }
    }

    /// How many of the receiver kills asked for interrupted work, in the
    /// words of the notes and the "not exercised" reason.
    pub fn receiver_kills_met(&self) -> String {
        format!(
            "{} of {} interrupted work",
            self.kills_exercised,
            crate::text::words::count(u64::from(self.kills_wanted), "kill of the receiver")
        )
    }

    /// How many of the worker kills asked for met it holding work, likewise.
    pub fn worker_kills_met(&self) -> String {
        format!(
            "{} of {} met it ready and holding work",
            self.worker_kills_exercised,
            crate::text::words::count(u64::from(self.worker_kills_wanted), "kill of the worker")
        )
    }

    /// Crashes of the worker at its crash points.
    pub fn worker_crashes(&self) -> u32 {
        self.crashes.saturating_sub(self.receiver_crashes)
    }
}

impl CutSeen {
    /// The history's detail on `restore-database`: what the cut saw and
    /// why it ended.
    pub(super) fn detail(&self, c: &CutDatabaseSpec) -> String {
        let why = if self.reached {
            "until seen"
        } else if self.held >= c.max.0 {
            "until max"
        } else {
            "until the stream ended"
        };
        let (repeats, until_repeats) = if c.seen_repeats > 0 {
            (
                format!(", {} to a delivery answered before", self.answered.repeats),
                format!(", {} of them again", c.seen_repeats),
            )
        } else {
            (String::new(), String::new())
        };
        format!(
            "{} answered while the database was cut ({} acknowledged{repeats}); held {} {why} (at least {}, at most {}, until {} answered{until_repeats})",
            crate::text::words::count(self.answered.answered, "attempt"),
            self.answered.acks,
            crate::text::units::format_duration(self.held),
            c.duration,
            c.max,
            c.seen
        )
    }
}
