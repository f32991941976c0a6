//! The reports of a small fixed run: report.json validated against the
//! checked-in schema, snapshots of summary.md and the console table, JUnit
//! structure, exit codes, and no secret in any of them.

use std::path::Path;

use serde_json::Value;

use hookstorm::check::{
    CheckOptions, Counts, DeadLetter, Evidence, InvariantId, InvariantResult, ScenarioCheck,
    Verdict,
};
use hookstorm::grading::outcome::AttemptOutcome;
use hookstorm::report::console::console_table;
use hookstorm::report::{write_reports, RunReport, ScenarioReport};
use hookstorm::state::probe::{Probe, ProbeConfig, SqlProbeConfig};

fn pass(id: InvariantId) -> InvariantResult {
    InvariantResult::new(id, Verdict::Pass, format!("{} holds", id.name()))
}

fn scenario(name: &str, results: Vec<InvariantResult>) -> ScenarioReport {
    ScenarioReport {
        name: name.into(),
        description: format!("{name} scenario"),
        when_it_fails: "the inbox insert is not keyed by task id".into(),
        check: ScenarioCheck {
            scenario: name.into(),
            results,
            counts: Counts {
                deliveries: 2,
                attempts: 3,
                ok: 2,
                fail: 0,
                info: 1,
                dead: 0,
                outcomes: [(AttemptOutcome::Accepted, 2), (AttemptOutcome::NoAnswer, 1)]
                    .into_iter()
                    .collect(),
            },
            dead_letters: vec![],
            observations: Vec::new(),
        },
        reproduce: format!("hookstorm run --target target.toml --scenario {name} --seed 7"),
        duration_s: 1.25,
        history: format!("{name}/history.jsonl"),
        state: Some(format!("{name}/state.json")),
        notes: vec![],
        skipped: None,
        graded_with: None,
        gap_slack_ms: Some(50.0),
    }
}

fn fixture() -> RunReport {
    let mut fail = InvariantResult::new(
        InvariantId::I1,
        Verdict::Fail,
        "1 of 2 acknowledged keys are missing from the inbox",
    );
    fail.evidence = vec![Evidence {
        lines_total: 7,
        ..Evidence::new(
            "tsk_2",
            Some("acct_a".into()),
            "acknowledged with a 2xx but not in the inbox",
            vec![3, 4, 5, 6],
        )
    }];
    fail.evidence_total = 1;
    let mut ack_loss = scenario("ack-loss", vec![fail, pass(InvariantId::I2)]);
    ack_loss.check.counts.dead = 1;
    ack_loss.check.dead_letters = vec![DeadLetter {
        delivery: "whd_9".into(),
        key: "tsk_9".into(),
        account: "acct_a".into(),
        attempts: 10,
        last_status: Some(503),
        last_error: None,
        recovered: false,
        by_design: false,
    }];
    let unknown = InvariantResult::new(
        InvariantId::I5,
        Verdict::Unknown,
        "not checked: the state has no winners section",
    );
    RunReport {
        run_id: "20261129-100000-7".into(),
        seed: 7,
        profile: "answerline".into(),
        time_scale: 100.0,
        target: "http://127.0.0.1:8080/webhooks/{account}".into(),
        started_at: "2026-11-29T10:00:00.000Z".into(),
        duration_s: 2.5,
        strict: false,
        require_all: false,
        hookstorm_version: "0.1.0".into(),
        scenarios: vec![
            scenario(
                "baseline",
                vec![pass(InvariantId::I1), pass(InvariantId::I2), unknown],
            ),
            ack_loss,
        ],
        machine: None,
        interrupted: false,
        seal: None,
    }
}

/// The checked-in schema of report.json, compiled once.
fn validator() -> &'static jsonschema::Validator {
    static VALIDATOR: std::sync::OnceLock<jsonschema::Validator> = std::sync::OnceLock::new();
    VALIDATOR.get_or_init(|| {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../reports/schema/report.schema.json");
        let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        jsonschema::draft202012::new(&schema).expect("the schema is a valid 2020-12 JSON Schema")
    })
}

fn schema_errors(v: &Value) -> Vec<String> {
    validator()
        .iter_errors(v)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

#[test]
fn report_json_matches_the_checked_in_schema() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let files = write_reports(dir.path(), &fixture())?.files;
    assert_eq!(files.len(), 5);
    let v: Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("report.json"))?)?;
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    assert_eq!(v["verdict"], "fail");
    assert_eq!(v["exit_code"], 1);
    assert_eq!(v["scenarios"][0]["check"]["results"][0]["name"], "no-loss");
    // A drifted report (a new field, a missing one) no longer validates.
    let mut drifted = v.clone();
    drifted["scenarios"][0]["surprise"] = Value::Bool(true);
    drifted.as_object_mut().unwrap().remove("seed");
    let errors = schema_errors(&drifted);
    assert!(errors.iter().any(|e| e.contains("surprise")), "{errors:?}");
    assert!(errors.iter().any(|e| e.contains("seed")), "{errors:?}");
    // And the report reads back into the same type.
    let back: RunReport = serde_json::from_value(v.clone()).or_else(|_| {
        let mut plain = v.clone();
        let o = plain.as_object_mut().unwrap();
        for k in ["format_version", "verdict", "exit_code", "coverage"] {
            o.remove(k);
        }
        serde_json::from_value(plain)
    })?;
    assert_eq!(back.scenarios.len(), 2);
    Ok(())
}

#[test]
fn an_interrupted_report_is_marked_everywhere_and_old_reports_still_validate(
) -> Result<(), Box<dyn std::error::Error>> {
    let mut report = fixture();
    report.interrupted = true;
    report.scenarios.truncate(1);
    let dir = tempfile::tempdir()?;
    write_reports(dir.path(), &report)?;
    let v: Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("report.json"))?)?;
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    assert_eq!(v["interrupted"], true);
    assert_eq!(v["exit_code"], 130);
    let summary = std::fs::read_to_string(dir.path().join("summary.md"))?;
    assert!(
        summary
            .lines()
            .next()
            .unwrap_or("")
            .contains("(interrupted)"),
        "{summary}"
    );
    assert!(summary.contains("**Interrupted**"), "{summary}");
    let junit = std::fs::read_to_string(dir.path().join("junit.xml"))?;
    assert!(
        junit.contains("name=\"interrupted\" value=\"true\""),
        "{junit}"
    );
    let table = console_table(&report, false);
    assert!(
        table.contains("interrupted: only the 1 scenario above finished"),
        "{table}"
    );
    assert!(table.contains("(exit 130)"), "{table}");
    // A report written before the field existed validates and reads as not interrupted.
    let mut old = v.clone();
    old.as_object_mut().unwrap().remove("interrupted");
    old["exit_code"] = Value::from(1);
    assert_eq!(schema_errors(&old), Vec::<String>::new());
    for k in ["format_version", "verdict", "exit_code"] {
        old.as_object_mut().unwrap().remove(k);
    }
    let back: RunReport = serde_json::from_value(old)?;
    assert!(!back.interrupted);
    Ok(())
}

#[test]
fn a_report_from_a_real_check_matches_the_schema() {
    use hookstorm::history::{Attempt, Event, Outcome};
    use hookstorm::state::{InboxRow, State};
    let a = Attempt {
        sent_at: "2026-11-29T10:00:00Z".into(),
        status: Some(503),
        outcome: Outcome::Info,
        dead: true,
        ..Attempt::acknowledged("s", "acct_a", "t1")
    };
    let state = State {
        inbox: vec![InboxRow {
            key: "zz".into(),
            account: None,
            processed: false,
            error: None,
        }],
        ..State::default()
    };
    let check = hookstorm::check::check(
        vec![(1, Event::Attempt(a))],
        "s",
        Ok(&state),
        &CheckOptions::default(),
    );
    let mut report = fixture();
    report.scenarios[0].check = check;
    let v = hookstorm::report::json::to_value(&report);
    assert_eq!(schema_errors(&v), Vec::<String>::new());
}

#[test]
fn summary_markdown_snapshot() {
    insta::assert_snapshot!(hookstorm::report::summary::render(&fixture()));
}

#[test]
fn console_table_snapshot() {
    insta::assert_snapshot!(console_table(&fixture(), false));
    let colored = console_table(&fixture(), true);
    assert!(colored.contains("\x1b[31mFAIL"));
}

/// The JUnit report of `report`, parsed back: it must be valid JUnit XML.
fn junit(report: &RunReport) -> (String, quick_junit::Report) {
    let x = hookstorm::report::junit::render(report);
    let parsed = quick_junit::Report::deserialize_from_str(&x)
        .unwrap_or_else(|e| panic!("junit.xml does not parse back: {e}\n{x}"));
    (x, parsed)
}

#[test]
fn junit_has_one_suite_per_scenario_and_one_case_per_invariant() {
    let (x, j) = junit(&fixture());
    insta::assert_snapshot!(x);
    assert_eq!((j.tests, j.failures, j.errors, j.skipped), (5, 1, 0, 1));
    let suites: Vec<_> = j.test_suites.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(suites, ["baseline", "ack-loss"]);
    let cases: Vec<_> = j.test_suites[1]
        .test_cases
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(cases, ["I1 no-loss", "I2 exactly-once"]);
    assert!(x.contains("<failure message=\"1 of 2 acknowledged keys are missing from the inbox\" type=\"fail\">tsk_2 (acct_a)"));
    assert!(x.contains("<skipped message=\"not checked: the state has no winners section\"/>"));
    // Real durations: each case its share of its scenario's wall time.
    assert!(!x.contains("time=\"0.000\""), "{x}");
    let case_total: f64 = j.test_suites[1]
        .test_cases
        .iter()
        .map(|c| c.time.unwrap().as_secs_f64())
        .sum();
    assert!((case_total - 1.25).abs() < 0.01, "{case_total}");
}

#[test]
fn exit_codes_follow_the_worst_verdict_and_strictness() {
    let mut r = fixture();
    assert_eq!(r.exit_code(), 1);
    r.scenarios.remove(1);
    assert_eq!(r.verdict(), Verdict::Unknown);
    assert_eq!(r.exit_code(), 2);
    r.scenarios[0].check.results.remove(2);
    r.scenarios[0].check.results[0].verdict = Verdict::NonStrict;
    assert_eq!(r.exit_code(), 0);
    r.strict = true;
    assert_eq!(r.exit_code(), 1);
    r.scenarios[0].check.results[0].verdict = Verdict::Pass;
    assert_eq!(r.exit_code(), 0);
}

#[test]
fn no_report_contains_a_token_or_password() -> Result<(), Box<dyn std::error::Error>> {
    let http = Probe::http(
        "http://127.0.0.1:9/admin/state?token=qs-tok3n",
        Some("bearer-tok3n".into()),
    );
    let sql = Probe::from_config(&ProbeConfig {
        sql: Some(SqlProbeConfig {
            url: "postgres://app:db-passw0rd@127.0.0.1:5432/app".into(),
            ..SqlProbeConfig::default()
        }),
        reconcile: Some(
            "curl -H 'Authorization: Bearer cmd-tok3n' http://u:url-passw0rd@127.0.0.1/reconcile"
                .into(),
        ),
        ..ProbeConfig::default()
    })?;
    let mut r = fixture();
    // Even a caller that forgot to redact cannot leak: the reports redact again.
    r.target = format!(
        "http://hook:target-passw0rd@127.0.0.1:8080/webhooks; {}; {}",
        http.describe(),
        sql.describe()
    );
    r.scenarios[0].reproduce =
        "HOOKSTORM_TOKEN=env-tok3n hookstorm run --token flag-tok3n --seed 7".into();
    r.scenarios[0].notes = vec![hookstorm::findings::note::Note::Said(
        "probe: postgres://app:note-passw0rd@db/app".into(),
    )];
    let dir = tempfile::tempdir()?;
    let mut texts: Vec<String> = write_reports(dir.path(), &r)?
        .files
        .iter()
        .map(std::fs::read_to_string)
        .collect::<Result<_, _>>()?;
    texts.push(console_table(&r, false));
    for t in &texts {
        for secret in [
            "qs-tok3n",
            "bearer-tok3n",
            "db-passw0rd",
            "cmd-tok3n",
            "url-passw0rd",
            "target-passw0rd",
            "env-tok3n",
            "flag-tok3n",
            "note-passw0rd",
        ] {
            assert!(!t.contains(secret), "{secret} leaked into:\n{t}");
        }
    }
    assert!(
        texts[0].contains("127.0.0.1:5432/app"),
        "the redacted target is still useful"
    );
    Ok(())
}

/// The fixture with two scenarios skipped for unmet needs.
fn with_skips() -> RunReport {
    use hookstorm::findings::coverage::{Need, Skip};
    let mut r = fixture();
    r.scenarios.remove(1);
    r.scenarios[0].check.results.remove(2);
    for (name, need, label) in [
        ("kill-under-load", Need::Lifecycle, "[lifecycle]"),
        ("account-isolation", Need::Accounts, "a second account"),
    ] {
        let mut s = scenario(name, vec![]);
        s.skipped = Some(Skip {
            need: Some(need),
            label: label.into(),
            reason: format!("needs {label} (hint: …)"),
            invariants: vec![InvariantId::I1, InvariantId::I2],
        });
        r.scenarios.push(s);
    }
    r
}

#[test]
fn skipped_scenarios_are_listed_in_every_report_and_leave_the_exit_code_alone() {
    let r = with_skips();
    assert_eq!(r.exit_code(), 0);
    // Ties are listed in the order of the needs: accounts before lifecycle.
    let line = "1 of 3 scenarios ran; 2 skipped: need a second account (1), [lifecycle] (1)";
    assert_eq!(r.coverage_line(), line);
    assert!(console_table(&r, false).contains(&format!("{line}\nverdict: pass (exit 0)")));
    assert!(console_table(&r, false).contains("skipped kill-under-load: needs [lifecycle]"));
    let md = hookstorm::report::summary::render(&r);
    assert!(md.contains(&format!("**{line}**")), "{md}");
    assert!(
        md.contains("| kill-under-load | ✅ | ✅ | skipped |")
            || md.contains("| kill-under-load | – | – | skipped |"),
        "{md}"
    );
    let (x, _) = junit(&r);
    assert_eq!(
        x.matches("<skipped message=\"needs [lifecycle]").count(),
        2,
        "{x}"
    );
    let v = hookstorm::report::json::to_value(&r);
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    assert_eq!(v["coverage"]["line"], line);
    assert_eq!(v["scenarios"][1]["verdict"], "skipped");
    assert_eq!(v["scenarios"][1]["skipped"]["need"], "lifecycle");
}

#[test]
fn require_all_turns_a_skip_into_a_failure() {
    let mut r = with_skips();
    r.require_all = true;
    assert_eq!(r.verdict(), Verdict::Fail);
    assert_eq!(r.exit_code(), 1);
    assert!(r
        .coverage_line()
        .ends_with("(--require-all: skips fail the run)"));
    let (x, j) = junit(&r);
    assert_eq!((j.tests, j.failures, j.skipped), (6, 4, 0), "{x}");
    let v = hookstorm::report::json::to_value(&r);
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    assert_eq!(v["scenarios"][1]["verdict"], "fail");
    // A run in which nothing ran decided nothing.
    r.require_all = false;
    r.scenarios.remove(0);
    assert_eq!(r.exit_code(), 2);
}

#[test]
fn a_sink_report_validates_and_its_timeline_draws_each_retrys_window(
) -> Result<(), Box<dyn std::error::Error>> {
    use hookstorm::history::{Attempt, Emitted, Event, Outcome, Received};
    let dir = tempfile::tempdir()?;
    std::fs::create_dir_all(dir.path().join("sender-retries"))?;
    let received = |at_ms: f64, answer: &str, window: Option<[f64; 2]>| Received {
        answer: answer.into(),
        at_ms,
        end_ms: at_ms + 1.0,
        followed: false,
        delivery_id: Some("whd_1".into()),
        body_sha256: "00".into(),
        signature_error: None,
        signed_at: Some(1_700_000_000),
        arrived_unix: 1_700_000_000.0,
        retry_after_s: None,
        closed_early: false,
        generation: 0,
        window_ms: window,
        foreign: false,
        resent: false,
        body_change: None,
    };
    let attempt = |n: u32, status: u16, got: Received| {
        let mut a = Attempt::new("sender-retries", "whd_1", "tsk_1", "acct_a");
        a.attempt = n;
        a.status = Some(status);
        a.outcome = if status == 200 {
            Outcome::Ok
        } else {
            Outcome::Fail
        };
        a.sink = Some(Box::new(got));
        Event::Attempt(a)
    };
    let events = vec![
        Event::Emit(Emitted {
            scenario: "sender-retries".into(),
            at: "2026-12-01T00:00:00.000Z".into(),
            account: "acct_a".into(),
            key: "tsk_1".into(),
            job: None,
            resource: None,
            sequence: None,
            script: vec!["503".into(), "200".into()],
        }),
        attempt(1, 503, received(3.0, "503", None)),
        attempt(2, 200, received(8.0, "200", Some([6.5, 9.0]))),
    ];
    let mut text = String::new();
    for e in &events {
        text.push_str(&serde_json::to_string(e)?);
        text.push('\n');
    }
    std::fs::write(dir.path().join("sender-retries/history.jsonl"), text)?;
    let numbered: Vec<(u64, Event)> = events
        .into_iter()
        .enumerate()
        .map(|(i, e)| (i as u64 + 1, e))
        .collect();
    let outbox = hookstorm::state::outbox::Outbox::parse(
        br#"[{"key":"tsk_1","account":"acct_a","status":"delivered"}]"#,
    )?;
    let rules = hookstorm::check::sender::SenderRules {
        invariants: InvariantId::SENDER.to_vec(),
        profile: hookstorm::sink::reference_profile(),
        time_scale: 1000.0,
        timeout: std::time::Duration::from_millis(250),
    };
    let check = hookstorm::check::sender::judge(&numbered, "sender-retries", Ok(&outbox), &rules);
    let mut s = scenario("sender-retries", check.results.clone());
    s.check = check;
    let report = RunReport {
        profile: "reference-sender".into(),
        time_scale: 1000.0,
        scenarios: vec![s],
        ..fixture()
    };
    write_reports(dir.path(), &report)?;
    let v: Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("report.json"))?)?;
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    assert_eq!(v["scenarios"][0]["check"]["results"][0]["id"], "S1");
    assert_eq!(
        v["scenarios"][0]["check"]["results"][0]["name"],
        "retry-envelope"
    );
    let html = std::fs::read_to_string(dir.path().join("report.html"))?;
    assert!(
        html.contains("<title>hookstorm sink "),
        "a sink run says so"
    );
    // The retry's mark carries its window, [from, to] in whole ms of the
    // sink's clock.
    assert!(html.contains("[7.0,9.0]"), "no window in the timeline");
    assert!(console_table(&report, false).starts_with("hookstorm sink "));
    Ok(())
}
