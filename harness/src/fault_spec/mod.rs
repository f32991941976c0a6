//! Fault specs: what a scenario's `[[fault]]` tables say, one leaf module
//! per kind, each owning its struct, its defaults and its validation.
//!
//! These modules are leaves: they import nothing but serde and
//! [`crate::text::units`] (never [`crate::plan`], [`crate::sender`] or the fault
//! actors), so [`crate::plan`] and [`crate::scenario`] can hold specs while
//! the actors in [`crate::fault`] import the plan, without a module cycle.

use std::time::Duration;

use serde::{Deserialize, Serialize};

pub mod drop_ack;
pub mod duplicate;
pub mod failpoint;
pub mod front;
pub mod nemesis;
pub mod reconcile;
pub mod redeliver;
pub mod reorder;
mod share;
pub mod tamper;

pub use drop_ack::DropAckSpec;
pub use duplicate::{DuplicateMode, DuplicateSpec};
pub use front::FrontSpec;
pub use nemesis::{
    CutDatabaseSpec, CutMode, CutVia, KillSignal, KillSpec, KillTrigger, KillWorkerSpec,
};
pub use reconcile::ReconcileSpec;
pub use redeliver::RedeliverSpec;
pub use reorder::{ReorderMode, ReorderSpec};
pub use tamper::{Forgery, Signing, TamperSpec};

/// One fault applied to the delivery stream (`[[fault]]` with a `kind`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum FaultSpec {
    /// Send deliveries more than once.
    Duplicate(DuplicateSpec),
    /// Change the order deliveries are sent in.
    Reorder(ReorderSpec),
    /// Discard 2xx answers so the sender retries.
    DropAck(DropAckSpec),
    /// Add forged, test, oversized and rotated-key deliveries.
    Tamper(TamperSpec),
    /// Signal the receiver process (SIGKILL by default) under load and restart it.
    Kill(KillSpec),
    /// Cut the receiver's database for a while under load.
    CutDatabase(CutDatabaseSpec),
    /// Kill the separate worker process mid-batch and restart it.
    KillWorker(KillWorkerSpec),
    /// Put the fault front (an HTTP proxy) before the receiver.
    Front(FrontSpec),
    /// Dashboard redelivery rules: hourly limit, refused pending requests.
    Redeliver(RedeliverSpec),
    /// Reconcile against the harness's provider API after sending.
    Reconcile(ReconcileSpec),
}

impl FaultSpec {
    /// The fault's name as the history records it.
    pub fn name(&self) -> &'static str {
        match self {
            FaultSpec::Duplicate(_) => "duplicate",
            FaultSpec::Reorder(_) => "reorder",
            FaultSpec::DropAck(_) => "drop-ack",
            FaultSpec::Tamper(_) => "tamper",
            FaultSpec::Kill(_) => "kill",
            FaultSpec::CutDatabase(_) => "cut-database",
            FaultSpec::KillWorker(_) => "kill-worker",
            FaultSpec::Front(_) => "front",
            FaultSpec::Redeliver(_) => "redeliver",
            FaultSpec::Reconcile(_) => "reconcile",
        }
    }

    /// Whether the fault acts on processes or the database (lifecycle
    /// control) rather than on the delivery stream.
    pub fn is_process_fault(&self) -> bool {
        matches!(
            self,
            FaultSpec::Kill(_) | FaultSpec::CutDatabase(_) | FaultSpec::KillWorker(_)
        )
    }

    /// How long a process fault spreads the deliveries' first attempts over
    /// (a steady stream to act on).
    pub fn spread(&self) -> Option<Duration> {
        match self {
            FaultSpec::Kill(k) => Some(k.over.0),
            FaultSpec::CutDatabase(c) => Some(c.over.0),
            FaultSpec::KillWorker(k) => Some(k.over.0),
            _ => None,
        }
    }

    /// Checks the fault's own bounds; `accounts` is how many accounts the
    /// scenario sends to. The error is the message the scenario file reports.
    pub fn validate(&self, accounts: usize) -> Result<(), String> {
        match self {
            FaultSpec::Duplicate(d) => d.validate(),
            FaultSpec::Reorder(r) => r.validate(),
            FaultSpec::DropAck(d) => d.validate(),
            FaultSpec::Tamper(t) => t.validate(accounts),
            FaultSpec::Kill(k) => k.validate(),
            FaultSpec::KillWorker(k) => k.validate(),
            FaultSpec::CutDatabase(c) => c.validate(),
            FaultSpec::Front(f) => f.validate(),
            FaultSpec::Redeliver(r) => r.validate(),
            FaultSpec::Reconcile(r) => r.validate(),
        }
    }
}

/// The fault front among `faults`, if one asks for it.
pub fn front(faults: &[FaultSpec]) -> Option<&FrontSpec> {
    faults.iter().find_map(|f| match f {
        FaultSpec::Front(x) => Some(x),
        _ => None,
    })
}

/// The redelivery rules among `faults`, if any are set.
pub fn redeliver(faults: &[FaultSpec]) -> Option<&RedeliverSpec> {
    faults.iter().find_map(|f| match f {
        FaultSpec::Redeliver(x) => Some(x),
        _ => None,
    })
}

/// The reconciliation step among `faults`, if there is one.
pub fn reconcile(faults: &[FaultSpec]) -> Option<&ReconcileSpec> {
    faults.iter().find_map(|f| match f {
        FaultSpec::Reconcile(x) => Some(x),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The leaf rule of this module's header: outside their tests, the spec
    /// modules name no crate module but [`crate::text::units`].
    #[test]
    fn spec_modules_import_nothing_but_units_so_the_plan_can_hold_them_without_a_cycle() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/fault_spec");
        let mut read = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap_or_default();
            for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
                for (i, _) in line.match_indices("crate::") {
                    assert!(
                        line[i..].starts_with("crate::text::units"),
                        "{} names {}",
                        path.display(),
                        line.trim()
                    );
                }
            }
            read += 1;
        }
        assert!(read >= 9, "read {read} spec modules");
    }

    #[test]
    fn each_kind_checks_its_own_bounds() {
        let dup = DuplicateSpec {
            mode: DuplicateMode::Sequential,
            share: 1.0,
            copies: [2, 8],
            replay: 0,
            fresh_id: 0,
            redeliver: 0,
        };
        let e = FaultSpec::Duplicate(dup).validate(1).unwrap_err();
        assert!(e.starts_with("sequential duplicate sends nothing"), "{e}");
        let tamper = TamperSpec {
            forgeries: vec![Forgery::CrossAccount],
            each: 1,
            rotation: Vec::new(),
        };
        assert!(FaultSpec::Tamper(tamper.clone()).validate(1).is_err());
        assert_eq!(FaultSpec::Tamper(tamper).validate(2), Ok(()));
        let kill = KillWorkerSpec {
            count: 1001,
            over: crate::text::units::HumanDuration(Duration::from_secs(1)),
            failpoint: None,
        };
        assert_eq!(
            FaultSpec::KillWorker(kill).validate(1).unwrap_err(),
            "kill-worker count: expected at most 1000"
        );
    }
}
