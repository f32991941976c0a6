//! `bench --fault`: the catalog's process and database faults under load.
//!
//! The nemesis that places a scenario's kills and database cuts on the
//! traffic ([`crate::fault::nemesis`]) works the same on a bench's stream:
//! the bench's workers report every exchange to its traffic gauge, keep
//! still while it holds the stream (a killed receiver restarting), and
//! send again what the faults made fail ([`load::UnderFaults`]). The kills
//! land during the measured time: the nemesis starts once the warmup is
//! over, and spreads them by the acknowledgements it expects in the time
//! left (the warmup's rate, or the count asked). The check after the bench
//! then says whether the receiver was fast *and* still exactly once; a
//! fault that met nothing turns its passes unknown, as in a run.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use super::load::{self, LineSink, ResendCounts, UnderFaults};
use crate::fault::nemesis::{self, Actions, KillTally, Stream};
use crate::fault_spec::FaultSpec;
use crate::lifecycle::Supervisor;
use crate::state::probe::Probe;

/// Faults to carry out under a bench's load, and the processes they act on.
pub struct BenchFaults<'a> {
    /// The supervisor of the receiver (and its worker, its database proxy).
    pub sup: &'a mut Supervisor,
    /// The catalog scenarios the faults come from, for the report.
    pub from: Vec<String>,
    /// The process and database faults, in order.
    pub specs: Vec<FaultSpec>,
}

/// The least a bench's stream is taken to carry, for placing kills.
const LEAST_DELIVERIES: usize = 20;

/// How long the nemesis watches the traffic before it places its first
/// fault when the bench has no warmup.
const FIRST_LOOK: Duration = Duration::from_millis(500);

/// What the faults did under load, in `bench.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FaultsResult {
    /// The catalog scenarios the faults came from.
    pub from: Vec<String>,
    /// Receiver kills asked for (signals).
    pub kills: u32,
    /// Receiver kills that interrupted work.
    pub kills_exercised: u32,
    /// Worker kills asked for.
    pub worker_kills: u32,
    /// Worker kills that met a worker holding work.
    pub worker_kills_exercised: u32,
    /// Database cuts.
    pub cuts: u32,
    /// Processes restarted.
    pub restarts: u32,
    /// What the resends of failed deliveries did.
    pub resends: ResendCounts,
    /// Why the faults tested less than asked, when they did: the check's
    /// passes are then unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_exercised: Option<String>,
    /// Errors of the supervisor while it carried the faults out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
}

impl FaultsResult {
    /// One console line.
    pub fn line(&self) -> String {
        let mut parts = Vec::new();
        if self.kills > 0 {
            parts.push(format!(
                "{} of {} receiver kills interrupted work",
                self.kills_exercised, self.kills
            ));
        }
        if self.worker_kills > 0 {
            parts.push(format!(
                "{} of {} worker kills met work",
                self.worker_kills_exercised, self.worker_kills
            ));
        }
        if self.cuts > 0 {
            parts.push(crate::text::words::count(
                u64::from(self.cuts),
                "database cut",
            ));
        }
        parts.push(format!(
            "{} resent ({} left when the bench ended, {} ran out)",
            self.resends.resent, self.resends.left, self.resends.exhausted
        ));
        format!("faults ({}): {}", self.from.join(", "), parts.join(" · "))
    }
}

/// Why `specs` cannot be carried out under a bench: a fault that is not a
/// process or database fault (duplicates and reordering are the bench's
/// own mix: `--duplicates`, `--reorder`).
pub fn refuse(from: &str, specs: &[FaultSpec]) -> Option<String> {
    if specs.iter().any(FaultSpec::is_process_fault) {
        return None;
    }
    Some(format!(
        "--fault {from}: the scenario has no process or database fault (kill, kill-worker, cut-database); duplicates and reordering under load are the bench's mix (--duplicates, --concurrent-duplicates, --reorder)"
    ))
}

/// Carries `f`'s faults out on the traffic `under` reports, from the end
/// of the warmup until `done`, writing the supervisor's lines to `sink`;
/// then makes sure every process runs again.
#[allow(clippy::too_many_arguments)]
pub(super) async fn carry_out(
    f: &mut BenchFaults<'_>,
    under: &UnderFaults,
    sink: &LineSink,
    dir: &std::path::Path,
    seed: u64,
    probe: &Probe,
    expect: impl Fn(f64) -> usize,
    warmup: Duration,
    mut done: watch::Receiver<bool>,
) -> Actions {
    f.sup.attach(Arc::new(sink.clone()), load::SCENARIO, dir);
    let look = if warmup.is_zero() { FIRST_LOOK } else { warmup };
    let before = under.gauge.acks();
    tokio::select! {
        _ = tokio::time::sleep(look) => {}
        _ = done.wait_for(|d| *d) => {}
    }
    let rate = (under.gauge.acks() - before) as f64 / look.as_secs_f64();
    let stream = Stream {
        scenario: load::SCENARIO,
        seed,
        faults: &f.specs,
        deliveries: expect(rate).max(LEAST_DELIVERIES),
    };
    let mut acts = nemesis::nemesis(f.sup, stream, &under.gauge, probe, done).await;
    under.gauge.hold(false);
    if let Err(e) = f.sup.ensure_up().await {
        acts.errors.push(e.to_string());
    }
    f.sup.detach();
    acts
}

/// What the faults did, for the report.
pub(super) fn result(f: &BenchFaults<'_>, acts: &Actions, under: &UnderFaults) -> FaultsResult {
    FaultsResult {
        from: f.from.clone(),
        kills: acts.kills_wanted,
        kills_exercised: acts.kills_exercised,
        worker_kills: acts.worker_kills_wanted,
        worker_kills_exercised: acts.worker_kills_exercised,
        cuts: acts.cuts,
        restarts: acts.restarts,
        resends: under.counts(),
        // The kills are judged by what the nemesis saw; the history's
        // tally of a bench is not folded (it can hold millions of lines).
        not_exercised: nemesis::not_exercised(&f.specs, acts, Some(&KillTally::default())),
        errors: acts.errors.clone(),
    }
}
