//! A report folder written from a real check: what each attempt came to,
//! dead letters by design apart from real ones, the conformance statement,
//! and the seal that `verify` checks (a changed byte is named, a state
//! rewritten and resealed is caught by grading it again).

use std::path::Path;

use hookstorm::check::{CheckOptions, Verdict};
use hookstorm::grading::outcome::AttemptOutcome;
use hookstorm::history::{Attempt, Event, Intent, Outcome};
use hookstorm::report::seal::{self, FileDigest};
use hookstorm::report::verify::{verify, Mismatch};
use hookstorm::report::{write_reports, GradedWith, RunReport, ScenarioReport};
use hookstorm::state::State;
use hookstorm::tag::FaultTag;

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// One scenario's history: an acknowledged delivery, one the harness's
/// front refused until it died, a forged one refused as it must be.
fn history() -> Vec<Event> {
    let front = |n: u32, dead: bool| Attempt {
        attempt: n,
        status: Some(503),
        outcome: Outcome::Info,
        faults: vec![FaultTag::FrontStatus(503)],
        dead,
        ..Attempt::acknowledged("s", "acct_a", "t2")
    };
    vec![
        Event::Attempt(Attempt::acknowledged("s", "acct_a", "t1")),
        Event::Attempt(front(1, false)),
        Event::Attempt(front(2, true)),
        Event::Attempt(Attempt {
            status: Some(401),
            outcome: Outcome::Fail,
            intent: Intent::Forged,
            detail: Some("bad-mac".into()),
            ..Attempt::acknowledged("s", "acct_a", "t3")
        }),
    ]
}

fn state(keys: &[&str]) -> State {
    let inbox: Vec<_> = keys
        .iter()
        .map(|k| serde_json::json!({"key": k, "account": "acct_a", "processed": true}))
        .collect();
    serde_json::from_value(serde_json::json!({ "inbox": inbox })).unwrap()
}

/// A sealed report folder in `dir` of the one scenario above.
fn sealed_folder(dir: &Path) -> Result<RunReport, Box<dyn std::error::Error>> {
    std::fs::create_dir_all(dir.join("s"))?;
    let lines: Vec<String> = history()
        .iter()
        .map(serde_json::to_string)
        .collect::<Result<_, _>>()?;
    std::fs::write(dir.join("s/history.jsonl"), lines.join("\n") + "\n")?;
    let st = state(&["t1"]);
    std::fs::write(dir.join("s/state.json"), serde_json::to_vec_pretty(&st)?)?;
    use hookstorm::invariant::InvariantId::*;
    let opts = CheckOptions {
        invariants: vec![I1, I2, I3, I4, I7, I9],
        ..CheckOptions::default()
    };
    let events = history()
        .into_iter()
        .enumerate()
        .map(|(i, e)| (i as u64 + 1, e));
    let check = hookstorm::check::check(events, "s", Ok(&st), &opts);
    let report = RunReport {
        run_id: "r".into(),
        seed: 7,
        profile: "answerline".into(),
        time_scale: 100.0,
        target: "http://127.0.0.1:9/webhooks/{account}".into(),
        started_at: "2026-11-29T10:00:00.000Z".into(),
        duration_s: 1.0,
        strict: false,
        require_all: false,
        hookstorm_version: "0.1.0".into(),
        scenarios: vec![ScenarioReport {
            name: "s".into(),
            description: String::new(),
            when_it_fails: String::new(),
            check,
            reproduce: "hookstorm run --scenario s --seed 7".into(),
            duration_s: 0.5,
            history: "s/history.jsonl".into(),
            state: Some("s/state.json".into()),
            notes: vec![],
            skipped: None,
            graded_with: Some(GradedWith::of(&opts, None)),
            gap_slack_ms: Some(50.0),
        }],
        machine: None,
        interrupted: false,
        seal: None,
    };
    Ok(write_reports(dir, &report)?.report)
}

#[test]
fn a_front_killed_delivery_is_dead_by_design_and_a_401_to_a_forgery_is_rejected_as_required(
) -> TestResult {
    let dir = tempfile::tempdir()?;
    let report = sealed_folder(dir.path())?;
    let check = &report.scenarios[0].check;
    assert_eq!(check.verdict(), Verdict::Pass, "{:?}", check.results);
    let c = &check.counts;
    assert_eq!(c.of(AttemptOutcome::Accepted), 1);
    assert_eq!(c.of(AttemptOutcome::FailedByDesign), 1);
    assert_eq!(c.of(AttemptOutcome::DeadByDesign), 1);
    assert_eq!(c.of(AttemptOutcome::RejectedAsRequired), 1);
    assert!(AttemptOutcome::all().all(|o| !o.is_wrong() || c.of(o) == 0));
    assert_eq!(check.dead_letters.len(), 1);
    assert!(check.dead_letters[0].by_design);
    // Calm where it is by design: no "Dead letters" section, a "Dead by design" one.
    let md = std::fs::read_to_string(dir.path().join("summary.md"))?;
    assert!(!md.contains("## Dead letters"), "{md}");
    assert!(md.contains("## Dead by design (1)"), "{md}");
    assert!(md.contains("| s | 1 |"), "{md}");
    let console = hookstorm::report::console::console_table(&report, false);
    assert!(
        console.contains("dead by design, as the scenarios intend: s 1"),
        "{console}"
    );
    assert!(!console.contains("recovered"), "{console}");
    Ok(())
}

#[test]
fn an_untouched_folder_verifies_and_names_its_report_digest() -> TestResult {
    let dir = tempfile::tempdir()?;
    let report = sealed_folder(dir.path())?;
    let v = verify(dir.path())?;
    assert_eq!(v.mismatches, Vec::<Mismatch>::new());
    assert_eq!(v.exit_code(), hookstorm::exit::PASS);
    assert_eq!(v.regraded, ["s"]);
    let sha = seal::sha256_file(&dir.path().join("report.json"))?;
    assert_eq!(v.report_sha256.as_deref(), Some(sha.as_str()));
    assert_eq!(
        report.seal.as_ref().and_then(|s| s.report_json.as_deref()),
        Some(sha.as_str())
    );
    // Every report but report.json names report.json's digest.
    for f in ["summary.md", "report.html"] {
        let text = std::fs::read_to_string(dir.path().join(f))?;
        assert!(text.contains(&sha), "{f} does not name {sha}");
    }
    assert!(hookstorm::report::console::console_table(&report, false).contains(&sha));
    Ok(())
}

/// Changes one byte of `file` in `dir`.
fn flip_a_byte(dir: &Path, file: &str) -> TestResult {
    let path = dir.join(file);
    let mut bytes = std::fs::read(&path)?;
    let i = bytes.len() / 2;
    bytes[i] = if bytes[i] == b'1' { b'2' } else { b'1' };
    std::fs::write(path, bytes)?;
    Ok(())
}

#[test]
fn one_byte_changed_in_a_history_or_in_report_json_is_named() -> TestResult {
    for file in ["s/history.jsonl", "report.json", "s/state.json"] {
        let dir = tempfile::tempdir()?;
        sealed_folder(dir.path())?;
        flip_a_byte(dir.path(), file)?;
        let v = verify(dir.path())?;
        assert_eq!(v.exit_code(), hookstorm::exit::FAIL, "{file}");
        let named: Vec<String> = v.mismatches.iter().map(|m| m.to_string()).collect();
        assert!(
            named
                .iter()
                .any(|m| m.starts_with(&format!("{file}: changed since the run sealed it"))),
            "{file}: {named:?}"
        );
    }
    Ok(())
}

#[test]
fn a_state_rewritten_and_resealed_is_caught_by_grading_it_again() -> TestResult {
    let dir = tempfile::tempdir()?;
    sealed_folder(dir.path())?;
    // Someone drops the stored row and fixes every digest after it.
    let path = dir.path().join("s/state.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&state(&[]))?)?;
    let sha = seal::sha256_file(&path)?;
    let report_path = dir.path().join("report.json");
    let mut report: serde_json::Value = serde_json::from_slice(&std::fs::read(&report_path)?)?;
    for f in report["conformance"]["files"].as_array_mut().unwrap() {
        if f["path"] == "s/state.json" {
            f["sha256"] = sha.clone().into();
        }
    }
    std::fs::write(&report_path, serde_json::to_string_pretty(&report)?)?;
    let sums_path = dir.path().join(seal::SUMS);
    let sums: Vec<FileDigest> = seal::read_sums(&sums_path)?
        .into_iter()
        .map(|d| FileDigest {
            sha256: seal::sha256_file(&dir.path().join(&d.path)).unwrap(),
            ..d
        })
        .collect();
    seal::write_sums(&sums_path, &sums)?;
    let v = verify(dir.path())?;
    let named: Vec<String> = v.mismatches.iter().map(|m| m.to_string()).collect();
    // The regrade names the state's change; the summary and the page,
    // which name the report.json the run wrote, no longer render from
    // the one in the folder.
    assert_eq!(
        named,
        [
            "summary.md: not the report report.json renders (edited after the run)",
            "report.html: not the report report.json renders (edited after the run)",
            "s I1 no-loss: report.json records pass, its history and state grade fail"
        ]
    );
    assert_eq!(v.exit_code(), hookstorm::exit::FAIL);
    Ok(())
}

#[test]
fn a_folder_without_seal_is_unknown_and_a_path_without_report_is_a_usage_error() -> TestResult {
    let dir = tempfile::tempdir()?;
    sealed_folder(dir.path())?;
    std::fs::remove_file(dir.path().join(seal::SUMS))?;
    let e = verify(dir.path()).unwrap_err();
    assert_eq!(e.exit_code(), hookstorm::exit::UNKNOWN, "{e}");
    let e = verify(&dir.path().join("s")).unwrap_err();
    assert_eq!(e.exit_code(), hookstorm::exit::USAGE, "{e}");
    assert!(e.to_string().contains("not a report folder"), "{e}");
    Ok(())
}
