//! `junit.xml`: one test suite per scenario and one test case per invariant,
//! so CI systems that show JUnit results list every invariant of every
//! scenario. A failure carries the summary and the evidence; `unknown` is a
//! skipped test (it was not decided); non-strict is a failure only in strict
//! runs. A scenario that did not run has one skipped test per invariant it
//! would have checked, with the reason (a failure under `--require-all`).
//!
//! Times are real: a suite's time is its scenario's wall time, and its
//! cases (the invariants graded over that one run) share it equally, so
//! they add up to it.
//!
//! The XML itself (escaping, counts, layout) is `quick-junit`'s, the crate
//! cargo-nextest writes its JUnit reports with; this module only maps a
//! report onto its data model.

use std::time::Duration;

use chrono::{DateTime, FixedOffset};
use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};

use super::{evidence_label, lines_label, more_label, RunReport, ScenarioReport};
use crate::check::{InvariantResult, Verdict};

/// The report as JUnit XML.
pub fn render(report: &RunReport) -> String {
    let started = DateTime::parse_from_rfc3339(&report.started_at).ok();
    let mut junit = Report::new("hookstorm");
    junit.set_time(seconds(report.duration_s));
    if let Some(t) = started {
        junit.set_timestamp(t);
    }
    for s in &report.scenarios {
        junit.add_test_suite(suite(report, s, started));
    }
    junit
        .to_string()
        .expect("serializing a JUnit report into memory cannot fail")
}

fn seconds(s: f64) -> Duration {
    Duration::try_from_secs_f64(s).unwrap_or_default()
}

fn suite(
    report: &RunReport,
    s: &ScenarioReport,
    started: Option<DateTime<FixedOffset>>,
) -> TestSuite {
    let mut suite = TestSuite::new(&s.name);
    if let Some(t) = started {
        suite.set_timestamp(t);
    }
    // The invariants of a scenario are graded over one run: each case
    // gets an equal share of its wall time.
    let cases = s
        .skipped
        .as_ref()
        .map_or(s.check.results.len(), |k| k.invariants.len())
        .max(1);
    let share = seconds(s.duration_s) / u32::try_from(cases).unwrap_or(u32::MAX);
    let case = |id: String, status: TestCaseStatus| {
        let mut c = TestCase::new(id, status);
        c.set_classname(format!("hookstorm.{}", s.name))
            .set_time(share);
        c
    };
    if let Some(k) = &s.skipped {
        suite.set_time(seconds(s.duration_s));
        let fail = s.verdict(report.require_all).is_some();
        for id in &k.invariants {
            let status = if fail {
                let mut st = TestCaseStatus::non_success(NonSuccessKind::Failure);
                st.set_message(format!(
                    "skipped, and --require-all wants every scenario: {}",
                    k.reason
                ))
                .set_type("skipped");
                st
            } else {
                let mut st = TestCaseStatus::skipped();
                st.set_message(&k.reason);
                st
            };
            suite.add_test_case(case(id.to_string(), status));
        }
        return suite;
    }
    suite.set_time(seconds(s.duration_s));
    suite.add_properties(
        [
            ("run_id", report.run_id.clone()),
            ("seed", report.seed.to_string()),
            ("profile", report.profile.clone()),
            ("time_scale", report.time_scale.to_string()),
            ("target", report.target.clone()),
            ("reproduce", s.reproduce.clone()),
            ("history", s.history.clone()),
            ("interrupted", report.interrupted.to_string()),
        ]
        .map(|(k, v)| Property::new(k, v)),
    );
    for res in &s.check.results {
        let body = evidence(report, s, res);
        let failing =
            res.verdict == Verdict::Fail || (res.verdict == Verdict::NonStrict && report.strict);
        let mut out = None;
        let status = if failing {
            let mut st = TestCaseStatus::non_success(NonSuccessKind::Failure);
            st.set_message(&res.summary)
                .set_type(res.verdict.to_string())
                .set_description(body);
            st
        } else if res.verdict == Verdict::Unknown {
            let mut st = TestCaseStatus::skipped();
            st.set_message(&res.summary);
            st
        } else {
            if res.verdict == Verdict::NonStrict {
                out = Some(format!("non-strict: {}\n{body}", res.summary));
            } else if s.check.grade_of(res) == crate::check::Grade::Informational {
                out = Some(format!(
                    "informational: {}\n",
                    s.check.observations.join("\n")
                ));
            }
            TestCaseStatus::success()
        };
        let mut c = case(res.id.to_string(), status);
        if let Some(out) = out {
            c.set_system_out(out);
        }
        suite.add_test_case(c);
    }
    suite
}

/// The evidence lines of one result, then the seed and how to reproduce.
fn evidence(report: &RunReport, s: &ScenarioReport, res: &InvariantResult) -> String {
    let mut body = String::new();
    for e in &res.evidence {
        body.push_str(&format!(
            "{}: {} [{}]\n",
            evidence_label(e),
            e.what,
            lines_label(e)
        ));
    }
    if let Some(more) = more_label(res.evidence.len(), res.evidence_total) {
        body.push_str(&format!("{more}\n"));
    }
    body.push_str(&format!(
        "seed {}; reproduce: {}\n",
        report.seed, s.reproduce
    ));
    body
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{Counts, InvariantId, ScenarioCheck};

    #[test]
    fn xml_text_is_escaped_and_control_characters_dropped() {
        let name = "a<b & \"c\"\u{1}";
        let fail = InvariantResult::new(InvariantId::I1, Verdict::Fail, name);
        let report = RunReport {
            run_id: "r".into(),
            seed: 1,
            profile: "answerline".into(),
            time_scale: 1.0,
            target: "t".into(),
            started_at: "not a date".into(),
            duration_s: f64::NAN,
            strict: false,
            require_all: false,
            hookstorm_version: "0".into(),
            scenarios: vec![ScenarioReport {
                name: name.into(),
                description: String::new(),
                when_it_fails: String::new(),
                check: ScenarioCheck {
                    scenario: name.into(),
                    results: vec![fail],
                    counts: Counts::default(),
                    dead_letters: vec![],
                    observations: Vec::new(),
                },
                reproduce: "hookstorm run --seed 1".into(),
                duration_s: 0.5,
                history: "h".into(),
                state: None,
                notes: vec![],
                skipped: None,
                graded_with: None,
                gap_slack_ms: None,
            }],
            machine: None,
            interrupted: false,
            seal: None,
        };
        let x = render(&report);
        assert!(x.contains("name=\"a&lt;b &amp; &quot;c&quot;\""), "{x}");
        assert!(!x.contains('\u{1}'), "{x}");
        let back = Report::deserialize_from_str(&x).expect("valid JUnit XML");
        assert_eq!((back.tests, back.failures), (1, 1));
        assert_eq!(back.test_suites[0].name.as_str(), "a<b & \"c\"");
    }
}
