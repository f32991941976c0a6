//! Coverage: what a scenario needs from a target beyond a URL, a secret and
//! a state source, why a scenario did not run, and the one line every
//! report prints about what ran ("18 of 23 scenarios ran; 5 skipped: need
//! \[lifecycle\] (4), a second account (1)").
//!
//! A scenario whose needs the target does not meet is *skipped*, which is
//! not *unknown*: nothing was tried, so nothing is undecided. Skips leave
//! the exit code alone unless the run requires every scenario
//! (`--require-all`). Scenarios left out because the run stopped early
//! (`--fail-fast`, `--max-fail`, `--timeout`) are *not run*, counted apart.

use serde::{Deserialize, Serialize};

use crate::check::InvariantId;
use crate::scenario::{FaultSpec, Scenario};
use crate::state::probe::Probe;
use crate::target::Target;

/// Something a scenario needs that not every target has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Need {
    /// More accounts than the target defines.
    Accounts,
    /// `[lifecycle]`: the harness starts, kills and restarts the receiver.
    Lifecycle,
    /// `[lifecycle.worker]`: a separate worker process.
    Worker,
    /// `[database]`: a way to cut the receiver's database.
    Database,
    /// `[provider]`: the provider API the receiver reconciles against.
    Provider,
    /// `setup` and `reconcile` hooks in `[state]`.
    Hooks,
    /// A provider that has what the scenario is about (test deliveries,
    /// sequenced resources, a reconciliation API) where the profile's
    /// provider has none. No target can meet it, so `--require-all` does
    /// not count it, and a level made only of such scenarios does not
    /// apply to the profile.
    Profile,
    /// A state that reports sequenced resources.
    Resources,
}

impl Need {
    /// Every need, in the order reports list them.
    pub const ALL: [Need; 8] = [
        Need::Accounts,
        Need::Lifecycle,
        Need::Worker,
        Need::Database,
        Need::Provider,
        Need::Hooks,
        Need::Profile,
        Need::Resources,
    ];

    /// How reports name it.
    pub fn label(self) -> &'static str {
        match self {
            Need::Accounts => "a second account",
            Need::Lifecycle => "[lifecycle]",
            Need::Worker => "[lifecycle.worker]",
            Need::Database => "[database]",
            Need::Provider => "[provider]",
            Need::Hooks => "setup and reconcile hooks",
            Need::Profile => "what the profile's provider does not have (not applicable)",
            Need::Resources => "resources in the state",
        }
    }
}

/// Why a scenario did not run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skip {
    /// What the target lacks; `None` when the run stopped before the
    /// scenario (`--fail-fast`, `--max-fail`, `--timeout`).
    pub need: Option<Need>,
    /// The short name of the cause, as the coverage line groups it.
    pub label: String,
    /// The full reason, with how to meet the need.
    pub reason: String,
    /// The invariants the scenario would have checked.
    pub invariants: Vec<InvariantId>,
}

impl Skip {
    /// A skip for an unmet need.
    pub fn need(scenario: &Scenario, need: Need, reason: String) -> Skip {
        let label = match need {
            Need::Accounts if scenario.accounts.len() != 2 => {
                format!("{} accounts", scenario.accounts.len())
            }
            other => other.label().to_string(),
        };
        Skip {
            need: Some(need),
            label,
            reason,
            invariants: invariants(scenario),
        }
    }

    /// Whether `--require-all` turns this skip into a failure: every unmet
    /// need a target could meet does; a delivery the provider does not have
    /// ([`Need::Profile`]) does not.
    pub fn fails_require_all(&self) -> bool {
        matches!(self.need, Some(n) if n != Need::Profile)
    }

    /// A scenario the run did not reach because it stopped (`label`: the
    /// flag that stopped it).
    pub fn stopped(scenario: &Scenario, label: &str, reason: &str) -> Skip {
        Skip {
            need: None,
            label: label.to_string(),
            reason: reason.to_string(),
            invariants: invariants(scenario),
        }
    }
}

/// The invariants a scenario checks (every one when it names none).
pub fn invariants(scenario: &Scenario) -> Vec<InvariantId> {
    let ids: Vec<InvariantId> = scenario.check.iter().copied().collect();
    if ids.is_empty() {
        InvariantId::ALL.to_vec()
    } else {
        ids
    }
}

/// What a scenario needs beyond a URL, a secret and a state source, in
/// [`Need::ALL`] order.
pub fn needs(scenario: &Scenario) -> Vec<Need> {
    let mut out = Vec::new();
    if scenario.accounts.len() > 1 {
        out.push(Need::Accounts);
    }
    if scenario.faults.iter().any(FaultSpec::is_process_fault) {
        out.push(Need::Lifecycle);
    }
    if scenario
        .faults
        .iter()
        .any(|f| matches!(f, FaultSpec::KillWorker(_)))
    {
        out.push(Need::Worker);
    }
    if scenario
        .faults
        .iter()
        .any(|f| matches!(f, FaultSpec::CutDatabase(_)))
    {
        out.push(Need::Database);
    }
    if scenario.reconcile().is_some() {
        out.push(Need::Provider);
        out.push(Need::Hooks);
    }
    if needs_resources(scenario) {
        out.push(Need::Resources);
    }
    out
}

fn needs_resources(scenario: &Scenario) -> bool {
    let sequenced = scenario.workload.sequenced.is_some()
        || scenario
            .explicit
            .as_ref()
            .is_some_and(|e| e.deliveries.iter().any(|d| d.body.resource.is_some()));
    sequenced && scenario.checks(InvariantId::I6)
}

/// Why a reconciling scenario cannot run against this target: it needs
/// the harness's provider API and the receiver's setup and reconcile hooks.
fn provider_unmet(scenario: &Scenario, target: &Target, probe: &Probe) -> Option<String> {
    scenario.reconcile()?;
    if target.provider.is_none() {
        return Some(format!(
            "needs the harness's provider API (hint: add [provider] listen = \"127.0.0.1:7070\" and key_env = \"VAR\" to the target file, point the receiver's reconciliation at http://127.0.0.1:7070 with that key, or --skip {})",
            scenario.name
        ));
    }
    if !probe.can_setup() || !probe.can_reconcile() {
        return Some(format!(
            "needs setup and reconcile hooks (hint: [state] setup = URL and reconcile = URL, or --skip {})",
            scenario.name
        ));
    }
    None
}

/// What the preflight learned about the target that decides skips.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TargetFacts {
    /// Whether the state reports sequenced resources (`None`: not read).
    pub state_has_resources: Option<bool>,
}

/// Why `scenario` cannot run against this target, if it cannot.
pub fn unmet(
    scenario: &Scenario,
    target: &Target,
    probe: &Probe,
    facts: &TargetFacts,
) -> Option<Skip> {
    if let Some(reason) = profile_unmet(scenario, target) {
        return Some(Skip::need(scenario, Need::Profile, reason));
    }
    let missing: Vec<&String> = scenario
        .accounts
        .iter()
        .filter(|a| !target.secrets.contains_key(*a))
        .collect();
    if !missing.is_empty() {
        let names: Vec<&str> = missing.iter().map(|s| s.as_str()).collect();
        return Some(Skip::need(
            scenario,
            Need::Accounts,
            format!(
                "needs account(s) {} that the target does not define (hint: add [accounts.NAME] to the target file, or --secret-env NAME=VAR)",
                names.join(", ")
            ),
        ));
    }
    if let Some(reason) =
        crate::fault::nemesis::missing_control(&scenario.name, &scenario.faults, target)
    {
        let worker = scenario
            .faults
            .iter()
            .any(|f| matches!(f, FaultSpec::KillWorker(_)));
        let kills = scenario
            .faults
            .iter()
            .any(|f| matches!(f, FaultSpec::Kill(_) | FaultSpec::KillWorker(_)));
        let need = match &target.lifecycle {
            // A database cut alone needs database control, not lifecycle.
            None if !kills => Need::Database,
            None => Need::Lifecycle,
            Some(l) if worker && l.worker.is_none() => Need::Worker,
            Some(_) => Need::Database,
        };
        return Some(Skip::need(scenario, need, reason));
    }
    if let Some(reason) = provider_unmet(scenario, target, probe) {
        let need = if target.provider.is_none() {
            Need::Provider
        } else {
            Need::Hooks
        };
        return Some(Skip::need(scenario, need, reason));
    }
    if needs_resources(scenario) && facts.state_has_resources == Some(false) {
        return Some(Skip::need(
            scenario,
            Need::Resources,
            "needs a state that reports sequenced resources (hint: serve \"resources\": [{\"resource\", \"sequence\"}] in the state JSON, or a resources query in [state.sql])".into(),
        ));
    }
    None
}

/// Why the target's provider has no such thing as what `scenario` sends,
/// if it has none ([`crate::grading::excuse::TestDelivery`] decides).
fn profile_unmet(scenario: &Scenario, target: &Target) -> Option<String> {
    let p = &target.profile;
    let none = !p.has_test_deliveries();
    if none && scenario.workload.test_deliveries > 0 {
        return Some(format!(
            "the {} profile's provider sends no test deliveries (its test-mode events are ordinary events, processed like any other), so there is nothing to judge (hint: --skip test-delivery, or a custom profile whose body_template marks one with {{{{test}}}})",
            p.name
        ));
    }
    if scenario.reconcile().is_some() && !p.has_reconciliation_api() {
        return Some(format!(
            "the {} profile's provider has no reconciliation API that hookstorm serves (only answerline's), so its receivers have nothing to reconcile against: does not apply",
            p.name
        ));
    }
    if needs_resources(scenario) && !p.sequences_resources() {
        return Some(format!(
            "the {} profile's provider numbers no resources (sequences per resource are answerline's), so there is no order to keep: does not apply",
            p.name
        ));
    }
    None
}

/// What ran in a run, for the coverage line.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Coverage {
    /// Scenarios selected.
    pub total: usize,
    /// Scenarios that ran (whatever their verdict).
    pub ran: usize,
    /// Scenarios skipped for an unmet need.
    pub skipped: usize,
    /// Skips grouped by need label, most first.
    pub needs: Vec<NeedCount>,
    /// Scenarios not reached because the run stopped early.
    pub not_run: usize,
    /// Why the run stopped early, if it did.
    pub stopped: Option<String>,
}

/// How many scenarios one need skipped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NeedCount {
    /// The need's label (`[lifecycle]`, `a second account`, …).
    pub label: String,
    /// Scenarios it skipped.
    pub count: usize,
}

impl Coverage {
    /// Counts the skips of a run's scenarios (`None`: the scenario ran).
    pub fn of<'a>(skips: impl IntoIterator<Item = Option<&'a Skip>>) -> Coverage {
        let mut c = Coverage::default();
        let mut order: Vec<(Option<Need>, String, usize)> = Vec::new();
        for s in skips {
            c.total += 1;
            match s {
                None => c.ran += 1,
                Some(skip) if skip.need.is_none() => {
                    c.not_run += 1;
                    c.stopped.get_or_insert_with(|| skip.reason.clone());
                }
                Some(skip) => {
                    c.skipped += 1;
                    match order.iter_mut().find(|(_, l, _)| *l == skip.label) {
                        Some(e) => e.2 += 1,
                        None => order.push((skip.need, skip.label.clone(), 1)),
                    }
                }
            }
        }
        order.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)));
        c.needs = order
            .into_iter()
            .map(|(_, label, count)| NeedCount { label, count })
            .collect();
        c
    }

    /// `18 of 23 scenarios ran; 5 skipped: need [lifecycle] (4), a second account (1)`.
    pub fn line(&self) -> String {
        let mut out = format!(
            "{} of {} scenario{} ran",
            self.ran,
            self.total,
            if self.total == 1 { "" } else { "s" }
        );
        if self.skipped > 0 {
            let groups: Vec<String> = self
                .needs
                .iter()
                .map(|n| format!("{} ({})", n.label, n.count))
                .collect();
            out.push_str(&format!(
                "; {} skipped: need {}",
                self.skipped,
                groups.join(", ")
            ));
        }
        if self.not_run > 0 {
            out.push_str(&format!(
                "; {} not run: {}",
                self.not_run,
                self.stopped.as_deref().unwrap_or("the run stopped")
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skip(need: Need, label: &str) -> Skip {
        Skip {
            need: Some(need),
            label: label.into(),
            reason: String::new(),
            invariants: vec![],
        }
    }

    #[test]
    fn the_coverage_line_groups_skips_by_need_most_first() {
        let life = skip(Need::Lifecycle, "[lifecycle]");
        let acct = skip(Need::Accounts, "a second account");
        let mut all: Vec<Option<&Skip>> = vec![None; 18];
        all.extend([
            Some(&acct),
            Some(&life),
            Some(&life),
            Some(&life),
            Some(&life),
        ]);
        let c = Coverage::of(all);
        assert_eq!(
            c.line(),
            "18 of 23 scenarios ran; 5 skipped: need [lifecycle] (4), a second account (1)"
        );
        assert_eq!(Coverage::of([None]).line(), "1 of 1 scenario ran");
    }

    #[test]
    fn scenarios_not_reached_are_counted_apart_from_skips() {
        let stop = Skip {
            need: None,
            label: "--fail-fast".into(),
            reason: "--fail-fast stopped the run after ack-loss failed".into(),
            invariants: vec![],
        };
        let c = Coverage::of([None, Some(&stop), Some(&stop)]);
        assert_eq!((c.ran, c.skipped, c.not_run), (1, 0, 2));
        assert_eq!(
            c.line(),
            "1 of 3 scenarios ran; 2 not run: --fail-fast stopped the run after ack-loss failed"
        );
    }
}
