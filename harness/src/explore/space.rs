//! The plan space `hookstorm explore` draws from, cut to what the target
//! can run.
//!
//! Every fault kind a scenario file can name is a dimension of the space,
//! and so are the workload's extras that not every target takes (a second
//! account, test deliveries, sequenced resources) and each way of cutting
//! the database. Whether the target takes one is decided the way `run`
//! decides whether it can run a scenario: a probe scenario that uses just
//! that dimension is put to [`crate::findings::coverage::unmet`], so a kill
//! without `[lifecycle]`, a cut without `[database]` or a reconciliation
//! without `[provider]` is left out for the same reason, in the same
//! words, as `run` skips a catalog scenario. What is left out is listed,
//! so the report says which part of the space was never drawn from.

use serde::Serialize;

use crate::fault_spec::{CutMode, FaultSpec};
use crate::findings::coverage::{self, Need, TargetFacts};
use crate::scenario::{Scenario, Sequenced, Workload};
use crate::state::probe::Probe;
use crate::target::Target;

/// Every fault kind, as scenario files name them (`kind = "…"`), in the
/// order reports list them.
pub const KINDS: [&str; 10] = [
    "duplicate",
    "reorder",
    "drop-ack",
    "tamper",
    "front",
    "redeliver",
    "reconcile",
    "kill",
    "kill-worker",
    "cut-database",
];

/// Every way the database can be cut, as `mode = "…"` names them.
pub const CUT_MODES: [CutMode; 4] = [
    CutMode::Refuse,
    CutMode::Reset,
    CutMode::Blackhole,
    CutMode::Latency,
];

/// What plans may be made of, against one target.
#[derive(Debug, Clone, PartialEq)]
pub struct Space {
    /// The fault kinds plans draw from, in [`KINDS`] order.
    pub kinds: Vec<&'static str>,
    /// The accounts plans send to: the target's first one, and a second
    /// when it has one.
    pub accounts: Vec<String>,
    /// Plans may carry dashboard test deliveries.
    pub test_deliveries: bool,
    /// Plans may carry sequenced events (checked by I6).
    pub sequenced: bool,
    /// The ways a database cut may go, when plans may cut it.
    pub cut_modes: Vec<CutMode>,
    /// What was left out, and why.
    pub left_out: Vec<LeftOut>,
}

/// A part of the space the target cannot run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LeftOut {
    /// The fault kind or workload extra (`kill`, `a second account`,
    /// `cut-database mode blackhole`).
    pub what: String,
    /// What the target lacks, as reports name it (`[lifecycle]`).
    pub need: String,
    /// The full reason, with how to meet it.
    pub reason: String,
}

impl Space {
    /// The space of `target`; `facts` are what the preflight learned of it
    /// (default when it did not run).
    pub fn of(
        target: &Target,
        facts: &TargetFacts,
    ) -> Result<Space, crate::state::probe::ProbeError> {
        let probe = target.probe()?;
        Ok(Space::decide(target, &probe, facts))
    }

    /// The space of `target` read through `probe`.
    pub fn decide(target: &Target, probe: &Probe, facts: &TargetFacts) -> Space {
        let names = target.accounts();
        let first = names.first().cloned().unwrap_or_else(|| "acct_a".into());
        let mut left_out = Vec::new();
        let unmet = |what: &str, s: Scenario, out: &mut Vec<LeftOut>| -> bool {
            match coverage::unmet(&s, target, probe, facts) {
                Some(skip) => {
                    out.push(LeftOut {
                        what: what.to_string(),
                        need: skip.label,
                        reason: skip.reason,
                    });
                    false
                }
                None => true,
            }
        };
        let one = vec![first.clone()];
        let mut accounts = one.clone();
        match names.get(1) {
            Some(second) => accounts.push(second.clone()),
            None => left_out.push(LeftOut {
                what: "a second account".into(),
                need: Need::Accounts.label().into(),
                reason: "the target defines one account: plans send to it alone, and cross-account forgeries are left out (hint: add [accounts.NAME] to the target file, or --secret-env NAME=VAR)".into(),
            }),
        }
        let workload = |w: Workload| probe_scenario("test-deliveries", &one, w, Vec::new());
        let test_deliveries = unmet(
            "test deliveries",
            workload(Workload {
                jobs: 1,
                test_deliveries: 1,
                ..Workload::default()
            }),
            &mut left_out,
        );
        let mut seq = workload(Workload {
            jobs: 0,
            sequenced: Some(Sequenced {
                resources: 1,
                events: 2,
                max_gap: 1,
            }),
            ..Workload::default()
        });
        seq.check = [crate::invariant::InvariantId::I6].into();
        let sequenced = match coverage::needs(&seq).contains(&Need::Resources) {
            true => unmet("sequenced resources", seq, &mut left_out),
            false => true,
        };
        let mut cut_modes = Vec::new();
        for mode in CUT_MODES {
            let spec = cut_spec(mode);
            let s = probe_scenario("cut-database", &one, Workload::default(), vec![spec]);
            if unmet(
                &format!("cut-database mode {}", cut_mode_name(mode)),
                s,
                &mut Vec::new(),
            ) {
                cut_modes.push(mode);
            }
        }
        let mut kinds = Vec::new();
        for kind in KINDS {
            let s = probe_scenario(kind, &one, Workload::default(), vec![probe_spec(kind)]);
            if !unmet(kind, s, &mut left_out) {
                continue;
            }
            if kind == "cut-database" {
                for mode in CUT_MODES.iter().filter(|m| !cut_modes.contains(m)) {
                    let s = probe_scenario(kind, &one, Workload::default(), vec![cut_spec(*mode)]);
                    unmet(
                        &format!("cut-database mode {}", cut_mode_name(*mode)),
                        s,
                        &mut left_out,
                    );
                }
            }
            kinds.push(kind);
        }
        Space {
            kinds,
            accounts,
            test_deliveries,
            sequenced,
            cut_modes,
            left_out,
        }
    }

    /// How many pairs of fault kinds plans can hold.
    pub fn pairs(&self) -> usize {
        let n = self.kinds.len();
        n * n.saturating_sub(1) / 2
    }

    /// `10 fault kinds, 45 pairs; left out: kill (need [lifecycle]), …`
    pub fn line(&self) -> String {
        let mut out = format!(
            "{} fault kind{}, {} pair{}",
            self.kinds.len(),
            if self.kinds.len() == 1 { "" } else { "s" },
            self.pairs(),
            if self.pairs() == 1 { "" } else { "s" }
        );
        if !self.left_out.is_empty() {
            let list: Vec<String> = self
                .left_out
                .iter()
                .map(|l| format!("{} (need {})", l.what, l.need))
                .collect();
            out.push_str(&format!("; left out: {}", list.join(", ")));
        }
        out
    }
}

/// How a cut mode is written in scenario files.
pub fn cut_mode_name(mode: CutMode) -> &'static str {
    match mode {
        CutMode::Refuse => "refuse",
        CutMode::Reset => "reset",
        CutMode::Blackhole => "blackhole",
        CutMode::Latency => "latency",
    }
}

/// A fault of `kind` with its file's defaults (and the first mode, where
/// a kind needs one): what the probe scenario of a kind carries.
pub fn probe_spec(kind: &str) -> FaultSpec {
    let extra = match kind {
        "duplicate" => "\nmode = \"concurrent\"",
        "reorder" => "\nmode = \"shuffle\"",
        _ => "",
    };
    toml::from_str(&format!("kind = \"{kind}\"{extra}"))
        .unwrap_or_else(|e| panic!("fault kind {kind} has defaults: {e}"))
}

fn cut_spec(mode: CutMode) -> FaultSpec {
    toml::from_str(&format!(
        "kind = \"cut-database\"\nmode = \"{}\"",
        cut_mode_name(mode)
    ))
    .expect("a cut with its defaults")
}

/// A scenario that uses only what is asked about, for
/// [`crate::findings::coverage::unmet`].
fn probe_scenario(
    name: &str,
    accounts: &[String],
    workload: Workload,
    faults: Vec<FaultSpec>,
) -> Scenario {
    Scenario {
        name: name.to_string(),
        description: String::new(),
        expect: String::new(),
        when_it_fails: String::new(),
        check: crate::invariant::InvariantId::ALL.into(),
        tags: Vec::new(),
        time_scale: None,
        drain: None,
        accounts: accounts.to_vec(),
        workload,
        faults,
        explicit: None,
        path: Default::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_a_fault_kind_of_the_scenario_files() {
        for kind in KINDS {
            assert_eq!(probe_spec(kind).name(), kind);
        }
        for mode in CUT_MODES {
            let FaultSpec::CutDatabase(c) = cut_spec(mode) else {
                panic!("{mode:?}")
            };
            assert_eq!(c.mode, mode);
        }
    }

    fn target(extra: &str) -> Target {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.toml");
        let text = format!(
            "url = \"http://127.0.0.1:1/webhooks/{{account}}\"\n[accounts.acct_a]\nsecrets = [\"whsec_a\"]\n[state]\nhttp = \"http://127.0.0.1:2/state\"\n{extra}"
        );
        let file = crate::error::parse_toml(&path, &text).unwrap();
        Target::resolve(file, &path).unwrap()
    }

    #[test]
    fn a_target_without_lifecycle_database_or_provider_leaves_their_faults_out_and_says_why() {
        let t = target("");
        let s = Space::of(&t, &TargetFacts::default()).unwrap();
        assert_eq!(
            s.kinds,
            [
                "duplicate",
                "reorder",
                "drop-ack",
                "tamper",
                "front",
                "redeliver"
            ]
        );
        assert_eq!(s.accounts, ["acct_a"]);
        let out: Vec<(&str, &str)> = s
            .left_out
            .iter()
            .map(|l| (l.what.as_str(), l.need.as_str()))
            .collect();
        for want in [
            ("a second account", "a second account"),
            ("reconcile", "[provider]"),
            ("kill", "[lifecycle]"),
            ("kill-worker", "[lifecycle]"),
            ("cut-database", "[database]"),
        ] {
            assert!(out.contains(&want), "{want:?} in {out:?}");
        }
        assert!(
            s.line().starts_with("6 fault kinds, 15 pairs; left out: "),
            "{}",
            s.line()
        );
        assert!(s.cut_modes.is_empty());
    }

    #[test]
    fn a_second_account_and_a_state_without_resources_shape_the_space() {
        let t = target("[accounts.acct_b]\nsecrets = [\"whsec_b\"]\n");
        let facts = TargetFacts {
            state_has_resources: Some(false),
        };
        let s = Space::of(&t, &facts).unwrap();
        assert_eq!(s.accounts, ["acct_a", "acct_b"]);
        assert!(!s.sequenced && s.test_deliveries);
        assert!(s
            .left_out
            .iter()
            .any(|l| l.what == "sequenced resources" && l.need == "resources in the state"));
    }
}
