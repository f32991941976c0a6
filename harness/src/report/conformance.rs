//! The conformance statement every report opens with: which levels the
//! receiver met, what was skipped and why, the profile, seed and version,
//! and the digests that let a reader verify the folder later.
//!
//! A level is a claim a vendor can hand over ("exactly once under
//! duplicates and reordering"), defined by the shipped scenarios it needs
//! ([`LEVELS`], the one table: `docs/invariants.md` shows [`markdown`] and
//! a test keeps the two equal). A level is **met** when every scenario it
//! needs ran and none failed (non-strict and informational passes count,
//! unless `--strict`); **not met** when one failed; **not established**
//! when none failed but one was skipped, not run, not selected or
//! unknown. A scenario skipped because the provider has no such thing
//! (test deliveries, sequenced resources, a reconciliation API: a need no
//! target can meet, which `--require-all` does not count either) is not
//! needed, and a level none of whose scenarios is needed is **not
//! applicable** to the profile and not counted. Levels name scenarios by name: a run that
//! replaces a shipped scenario with a file of the same name claims the
//! level for that file.

use serde::Serialize;

use super::seal::FileDigest;
use super::{RunReport, ScenarioReport};
use crate::check::Verdict;
use crate::text::words::count;

/// One level of conformance.
#[derive(Debug, Clone, Copy)]
pub struct Level {
    /// Its id in `report.json`.
    pub id: &'static str,
    /// Its name in every report.
    pub name: &'static str,
    /// What meeting it establishes.
    pub claim: &'static str,
    /// The scenarios it needs.
    pub scenarios: &'static [&'static str],
}

/// Every level, in the order reports list them.
pub const LEVELS: &[Level] = &[
    Level {
        id: "basics",
        name: "delivery basics",
        claim: "every acknowledged delivery is stored once and processed, the right result wins, retries follow the provider's schedule, redirects are never followed and a poison event blocks nothing",
        scenarios: &["baseline", "raw-body", "retry-schedule", "redirect", "poison-event"],
    },
    Level {
        id: "signatures",
        name: "signatures and accounts",
        claim: "only genuine, fresh, correctly signed deliveries for the right account are stored: forged, replayed, oversized and other accounts' deliveries are refused, test deliveries store nothing, and a key rotation keeps working",
        scenarios: &[
            "bad-signature",
            "key-rotation",
            "account-isolation",
            "replay-window",
            "oversized-body",
            "test-delivery",
        ],
    },
    Level {
        id: "exactly-once",
        name: "exactly once under duplicates and reordering",
        claim: "sequential and concurrent copies, lost acknowledgements, manual redeliveries and cut uploads store each event once, and reordered or late events never overwrite a newer result",
        scenarios: &[
            "sequential-duplicates",
            "concurrent-duplicates",
            "ack-loss",
            "manual-redelivery",
            "timeout-before-commit",
            "reverse-order",
            "delayed-older",
            "sequenced-resources",
        ],
    },
    Level {
        id: "crash-safety",
        name: "crash and outage safety",
        claim: "kills under load, crashes between commit and answer, a crashing worker and a cut or silent database lose nothing acknowledged and double nothing",
        scenarios: &[
            "kill-under-load",
            "kill-between-commit-and-ack",
            "worker-crash",
            "db-outage",
            "db-blackhole",
        ],
    },
    Level {
        id: "reconciliation",
        name: "reconciliation after a long outage",
        claim: "after every delivery of a long outage died, reconciliation against the provider's API stores every final result",
        scenarios: &["long-outage-reconcile"],
    },
];

/// Every level of a sender (`hookstorm sink`), in the order reports list
/// them: the promises a sender's users rely on, each defined by the
/// sender scenarios it needs (`docs/sink.md` shows [`sender_markdown`]).
pub const SENDER_LEVELS: &[Level] = &[
    Level {
        id: "sender-delivery",
        name: "delivery",
        claim: "every event emitted is delivered or dead-lettered, byte for byte, under one identity, with a fresh valid signature on every attempt, and no final answer is retried",
        scenarios: &["sender-baseline", "sender-dead-letter", "sender-refusals"],
    },
    Level {
        id: "sender-retries",
        name: "retries by the contract",
        claim: "retries keep the documented schedule and its jitter, honour Retry-After, keep the timeout and never follow a redirect",
        scenarios: &[
            "sender-retries",
            "sender-retry-after",
            "sender-timeouts",
            "sender-redirect",
        ],
    },
    Level {
        id: "sender-ordering",
        name: "order per resource",
        claim: "per resource, events are first sent in the order they were emitted",
        scenarios: &["sender-ordering"],
    },
    Level {
        id: "sender-crash-safety",
        name: "crash safety",
        claim: "a crash after the outbox commit, with a POST in flight, or after a 2xx loses no event and changes no identity",
        scenarios: &[
            "sender-crash-before-post",
            "sender-crash-mid-post",
            "sender-crash-before-mark",
        ],
    },
];

/// Where a level stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LevelStatus {
    /// Every scenario it needs ran and none failed.
    Met,
    /// A scenario it needs failed.
    NotMet,
    /// None failed, but one did not run or was not decided.
    NotEstablished,
    /// The profile's provider has nothing its scenarios test (no
    /// sequenced resources, no reconciliation API): not counted.
    NotApplicable,
}

impl LevelStatus {
    /// How reports word it.
    pub fn word(self) -> &'static str {
        match self {
            LevelStatus::Met => "met",
            LevelStatus::NotMet => "not met",
            LevelStatus::NotEstablished => "not established",
            LevelStatus::NotApplicable => "not applicable",
        }
    }
}

/// One level as this run establishes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LevelResult {
    /// The level's id.
    pub id: &'static str,
    /// Its name.
    pub name: &'static str,
    /// Where it stands.
    pub status: LevelStatus,
    /// Why, in one line: what failed, what did not run, or what passed.
    pub why: String,
    /// Its scenarios that failed (with the failing invariants).
    pub failed: Vec<String>,
    /// Its scenarios that did not run, were not selected or are unknown.
    pub missing: Vec<String>,
}

/// A scenario that did not run, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkipLine {
    /// The scenario.
    pub scenario: String,
    /// Why it did not run.
    pub reason: String,
}

/// The statement at the top of every report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Statement {
    /// Every level, in [`LEVELS`]' order.
    pub levels: Vec<LevelResult>,
    /// The scenarios that did not run.
    pub skipped: Vec<SkipLine>,
    /// Scenarios of the run that belong to no level (custom ones).
    pub outside_levels: Vec<String>,
    /// The sender profile.
    pub profile: String,
    /// The run's seed.
    pub seed: u64,
    /// hookstorm's version.
    pub hookstorm_version: String,
    /// Non-strict deviations failed the run.
    pub strict: bool,
    /// The SHA-256 of every history and state file.
    pub files: Vec<FileDigest>,
    /// The run judged a sender (`hookstorm sink`): the levels are the
    /// sender's ([`SENDER_LEVELS`]).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub sender: bool,
}

impl Statement {
    /// How many levels were met.
    pub fn met(&self) -> usize {
        self.levels
            .iter()
            .filter(|l| l.status == LevelStatus::Met)
            .count()
    }

    /// `met 3 of 5 levels`.
    pub fn headline(&self) -> String {
        if self.sender {
            return format!(
                "met {} of {}",
                self.met(),
                count(self.levels.len(), "sender conformance level")
            );
        }
        let apply = self
            .levels
            .iter()
            .filter(|l| l.status != LevelStatus::NotApplicable)
            .count();
        if apply == self.levels.len() {
            return format!(
                "met {} of {}",
                self.met(),
                count(self.levels.len(), "conformance level")
            );
        }
        format!(
            "met {} of {} that apply to the {} profile ({} not applicable)",
            self.met(),
            count(apply, "conformance level"),
            self.profile,
            self.levels.len() - apply
        )
    }
}

/// The statement of `report`.
pub fn statement(report: &RunReport) -> Statement {
    let sender = report.command() == "sink";
    let table = if sender { SENDER_LEVELS } else { LEVELS };
    let levels = table.iter().map(|l| level(report, l)).collect();
    let skipped = report
        .scenarios
        .iter()
        .filter_map(|s| {
            s.skipped.as_ref().map(|k| SkipLine {
                scenario: s.name.clone(),
                reason: k.reason.clone(),
            })
        })
        .collect();
    let outside_levels = report
        .scenarios
        .iter()
        .filter(|s| !table.iter().any(|l| l.scenarios.contains(&s.name.as_str())))
        .map(|s| s.name.clone())
        .collect();
    Statement {
        levels,
        skipped,
        outside_levels,
        profile: report.profile.clone(),
        seed: report.seed,
        hookstorm_version: report.hookstorm_version.clone(),
        strict: report.strict,
        files: report
            .seal
            .as_ref()
            .map(|s| s.files.clone())
            .unwrap_or_default(),
        sender,
    }
}

/// What one scenario contributes to its level.
enum Part {
    Passed,
    Failed(String),
    Missing(String),
    /// The run did not select it.
    Unselected,
    NotNeeded,
}

fn part(report: &RunReport, s: Option<&ScenarioReport>, name: &str) -> Part {
    let Some(s) = s else {
        return Part::Unselected;
    };
    if let Some(skip) = &s.skipped {
        if skip.need.is_some() && !skip.fails_require_all() {
            return Part::NotNeeded;
        }
        return Part::Missing(format!("{name} ({})", skip.label));
    }
    let v = s.check.verdict();
    if v.is_failing(report.strict) {
        let failing: Vec<&str> = s
            .check
            .results
            .iter()
            .filter(|r| r.verdict.is_failing(report.strict))
            .map(|r| r.id.code())
            .collect();
        return Part::Failed(format!("{name} ({})", failing.join(", ")));
    }
    if v == Verdict::Unknown {
        return Part::Missing(format!("{name} (unknown)"));
    }
    Part::Passed
}

fn level(report: &RunReport, l: &Level) -> LevelResult {
    let (mut failed, mut missing, mut passed) = (Vec::new(), Vec::new(), 0usize);
    let (mut unselected, mut not_needed) = (0usize, 0usize);
    for name in l.scenarios {
        let s = report.scenarios.iter().find(|s| s.name == *name);
        match part(report, s, name) {
            Part::Passed => passed += 1,
            Part::Failed(f) => failed.push(f),
            Part::Missing(m) => missing.push(m),
            Part::Unselected => {
                unselected += 1;
                missing.push(format!("{name} (not in this run)"));
            }
            Part::NotNeeded => not_needed += 1,
        }
    }
    let (status, why) = if not_needed == l.scenarios.len() {
        (
            LevelStatus::NotApplicable,
            format!(
                "does not apply to the {} profile: its provider has nothing its {} test",
                report.profile,
                if not_needed == 1 {
                    "scenario".to_string()
                } else {
                    format!("{not_needed} scenarios")
                }
            ),
        )
    } else if !failed.is_empty() {
        (
            LevelStatus::NotMet,
            format!("failed: {}", failed.join(", ")),
        )
    } else if !missing.is_empty() || passed == 0 {
        let mut parts: Vec<String> = missing
            .iter()
            .filter(|m| !m.ends_with("(not in this run)"))
            .cloned()
            .collect();
        let what = if unselected == l.scenarios.len() {
            match l.scenarios {
                [one] => format!("its scenario {one} was not in this run"),
                all => format!("none of its {} scenarios was in this run", all.len()),
            }
        } else {
            if unselected > 0 {
                parts.push(format!(
                    "{} of {} not in this run",
                    unselected,
                    count(l.scenarios.len(), "scenario")
                ));
            }
            let named = parts.len() - usize::from(unselected > 0);
            match (named, parts.is_empty()) {
                (_, true) => "none of its scenarios ran".to_string(),
                (0, false) => parts.join("; "),
                _ => format!("not run or not decided: {}", parts.join("; ")),
            }
        };
        (LevelStatus::NotEstablished, what)
    } else {
        (
            LevelStatus::Met,
            format!("{} passed", count(passed, "scenario")),
        )
    };
    LevelResult {
        id: l.id,
        name: l.name,
        status,
        why,
        failed,
        missing,
    }
}

/// The levels as the markdown `docs/invariants.md` carries between its
/// `levels` markers.
pub fn markdown() -> String {
    table_markdown(LEVELS)
}

/// The sender's levels as the markdown `docs/sink.md` carries between its
/// `sender-levels` markers.
pub fn sender_markdown() -> String {
    table_markdown(SENDER_LEVELS)
}

fn table_markdown(levels: &[Level]) -> String {
    let mut s = String::from("| level | establishes | scenarios |\n|---|---|---|\n");
    for l in levels {
        let names: Vec<String> = l.scenarios.iter().map(|n| format!("`{n}`")).collect();
        s.push_str(&format!(
            "| {} (`{}`) | {} | {} |\n",
            l.name,
            l.id,
            l.claim,
            names.join(", ")
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{Counts, InvariantId, InvariantResult, ScenarioCheck};
    use crate::findings::coverage::{Need, Skip};

    fn scenario(name: &str, verdict: Verdict, skip: Option<Need>) -> ScenarioReport {
        ScenarioReport {
            name: name.into(),
            description: String::new(),
            when_it_fails: String::new(),
            check: ScenarioCheck {
                scenario: name.into(),
                results: vec![InvariantResult::new(InvariantId::I2, verdict, "")],
                counts: Counts::default(),
                dead_letters: vec![],
                observations: vec![],
            },
            reproduce: String::new(),
            duration_s: 0.0,
            history: String::new(),
            state: None,
            notes: vec![],
            skipped: skip.map(|need| Skip {
                need: Some(need),
                label: need.label().into(),
                reason: format!("needs {}", need.label()),
                invariants: vec![InvariantId::I2],
            }),
            graded_with: None,
            gap_slack_ms: None,
        }
    }

    fn report(scenarios: Vec<ScenarioReport>) -> RunReport {
        RunReport {
            run_id: "r".into(),
            seed: 1,
            profile: "answerline".into(),
            time_scale: 1.0,
            target: String::new(),
            started_at: String::new(),
            duration_s: 0.0,
            strict: false,
            require_all: false,
            hookstorm_version: "0".into(),
            scenarios,
            machine: None,
            interrupted: false,
            seal: None,
        }
    }

    fn signatures(r: &RunReport) -> LevelResult {
        statement(r)
            .levels
            .into_iter()
            .find(|l| l.id == "signatures")
            .unwrap()
    }

    #[test]
    fn a_level_is_met_only_when_every_scenario_it_needs_ran_and_none_failed() {
        let names = LEVELS[1].scenarios;
        let all = |v: Verdict| {
            names
                .iter()
                .map(|n| scenario(n, v, None))
                .collect::<Vec<_>>()
        };
        let met = signatures(&report(all(Verdict::Pass)));
        assert_eq!(
            (met.status, met.why.as_str()),
            (LevelStatus::Met, "6 scenarios passed")
        );
        // Non-strict counts as met, unless the run is strict.
        let mut lenient = report(all(Verdict::NonStrict));
        assert_eq!(signatures(&lenient).status, LevelStatus::Met);
        lenient.strict = true;
        assert_eq!(signatures(&lenient).status, LevelStatus::NotMet);
        let mut one_failed = all(Verdict::Pass);
        one_failed[1] = scenario(names[1], Verdict::Fail, None);
        let not_met = signatures(&report(one_failed));
        assert_eq!(not_met.status, LevelStatus::NotMet);
        assert_eq!(not_met.why, "failed: key-rotation (I2)");
    }

    #[test]
    fn a_skip_leaves_a_level_not_established_unless_the_provider_has_no_such_delivery() {
        let names = LEVELS[1].scenarios;
        let with = |need: Need| {
            let mut v: Vec<_> = names
                .iter()
                .map(|n| scenario(n, Verdict::Pass, None))
                .collect();
            v[5] = scenario(names[5], Verdict::Pass, Some(need));
            report(v)
        };
        let skipped = signatures(&with(Need::Accounts));
        assert_eq!(skipped.status, LevelStatus::NotEstablished);
        assert_eq!(
            skipped.why,
            "not run or not decided: test-delivery (a second account)"
        );
        assert_eq!(signatures(&with(Need::Profile)).status, LevelStatus::Met);
        let partial = signatures(&report(vec![scenario(
            "bad-signature",
            Verdict::Pass,
            None,
        )]));
        assert_eq!(partial.status, LevelStatus::NotEstablished);
        assert_eq!(partial.why, "5 of 6 scenarios not in this run");
        let none = signatures(&report(vec![]));
        assert_eq!(none.why, "none of its 6 scenarios was in this run");
    }

    #[test]
    fn a_level_the_profile_has_no_use_for_is_not_applicable_and_not_counted() {
        // A Standard Webhooks receiver: no sequenced resources, no
        // reconciliation API; every other scenario passes.
        let mut all: Vec<ScenarioReport> = LEVELS
            .iter()
            .flat_map(|l| l.scenarios.iter())
            .map(|n| match *n {
                "sequenced-resources" | "long-outage-reconcile" => {
                    scenario(n, Verdict::Pass, Some(Need::Profile))
                }
                _ => scenario(n, Verdict::Pass, None),
            })
            .collect();
        let mut r = report(all.clone());
        r.profile = "standard-webhooks".into();
        let st = statement(&r);
        let status = |id: &str| st.levels.iter().find(|l| l.id == id).unwrap().status;
        assert_eq!(status("exactly-once"), LevelStatus::Met);
        assert_eq!(status("reconciliation"), LevelStatus::NotApplicable);
        assert_eq!(
            st.headline(),
            "met 4 of 4 conformance levels that apply to the standard-webhooks profile (1 not applicable)"
        );
        let why = &st
            .levels
            .iter()
            .find(|l| l.id == "reconciliation")
            .unwrap()
            .why;
        assert!(
            why.starts_with("does not apply to the standard-webhooks profile"),
            "{why}"
        );
        // The same run with the reconciliation skipped for a missing
        // [provider] is a level not established, and counted.
        let last = all.len() - 1;
        all[last] = scenario("long-outage-reconcile", Verdict::Pass, Some(Need::Provider));
        let st = statement(&report(all));
        assert_eq!(st.headline(), "met 4 of 5 conformance levels");
    }

    /// Every scenario of `shipped` is named by exactly one of `levels`.
    fn each_in_one_level(mut shipped: Vec<String>, levels: &[Level]) {
        shipped.sort();
        let mut named: Vec<String> = levels
            .iter()
            .flat_map(|l| l.scenarios.iter().map(|s| s.to_string()))
            .collect();
        named.sort();
        assert_eq!(named, shipped);
    }

    fn catalog() -> &'static std::path::Path {
        std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios"))
    }

    #[test]
    fn every_shipped_receiver_scenario_belongs_to_exactly_one_level() {
        // The sender scenarios (`hookstorm sink`) judge a sender: no
        // receiver level needs them.
        let shipped = crate::scenario::Scenario::load_dir(catalog()).unwrap();
        each_in_one_level(shipped.into_iter().map(|s| s.name).collect(), LEVELS);
    }

    #[test]
    fn every_shipped_sender_scenario_belongs_to_exactly_one_sender_level() {
        let shipped = crate::scenario::sender::SenderScenario::load_dir(catalog()).unwrap();
        each_in_one_level(shipped.into_iter().map(|s| s.name).collect(), SENDER_LEVELS);
    }

    #[test]
    fn a_sink_run_is_held_to_the_sender_levels() {
        let mut r = report(
            ["sender-baseline", "sender-dead-letter", "sender-refusals"]
                .into_iter()
                .map(|n| scenario(n, Verdict::Pass, None))
                .chain([scenario("sender-ordering", Verdict::Fail, None)])
                .collect(),
        );
        // A sink's report is one whose invariants are the sender's.
        for s in &mut r.scenarios {
            s.check.results[0].id = InvariantId::S8;
        }
        let st = statement(&r);
        assert!(st.sender);
        assert_eq!(st.headline(), "met 1 of 4 sender conformance levels");
        assert_eq!(st.levels[0].status, LevelStatus::Met);
        assert_eq!(st.levels[2].status, LevelStatus::NotMet);
        assert_eq!(st.levels[3].status, LevelStatus::NotEstablished);
    }
}

#[cfg(test)]
mod docs {
    /// `docs/invariants.md` carries [`super::markdown`] between its
    /// markers; `HOOKSTORM_UPDATE_DOCS=1` rewrites it.
    #[test]
    fn the_level_table_in_the_docs_is_the_one_in_the_code() {
        crate::docs_table::assert_section(
            concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/invariants.md"),
            "levels",
            &super::markdown(),
        );
    }

    /// `docs/sink.md` carries [`super::sender_markdown`] likewise.
    #[test]
    fn the_sender_level_table_in_the_docs_is_the_one_in_the_code() {
        crate::docs_table::assert_section(
            concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/sink.md"),
            "sender-levels",
            &super::sender_markdown(),
        );
    }
}
