//! What a shrink leaves behind, in its output folder:
//!
//! - `<scenario>.min.toml`: the minimal plan as an explicit scenario
//!   ([`crate::scenario::explicit`]), which `hookstorm run --scenario` replays as it
//!   is; its leading comments say what fails and how often;
//! - `history.jsonl` and `state.json`: the minimal plan's last failing run;
//! - `shrink.json`: the summary (failure, rate, sizes, steps, check) for
//!   tools;
//! - `account.md`: the minimal failing run told in a few lines
//!   ([`super::account`]);
//! - `replay.sh` and `bodies/`: the same requests as a curl script, signed
//!   at run time from the accounts' environment variables
//!   ([`super::replay`]).
//!
//! Nothing written here holds a secret: the plan carries none, the history
//! records what was sent, never the keys that signed it, and the script
//! names variables, never their values.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{Ended, Report, ShrinkError, Trial};
use crate::history::Event;
use crate::profile::vocabulary::Vocabulary;
use crate::target::Target;

/// Where the outputs of one shrink are.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Files {
    /// The minimal scenario file.
    pub scenario: PathBuf,
    /// The minimal failing run's history.
    pub history: Option<PathBuf>,
    /// The minimal failing run's state.
    pub state: Option<PathBuf>,
    /// `shrink.json`.
    pub summary: PathBuf,
    /// `account.md`.
    pub account: PathBuf,
    /// `replay.sh`, unless it could not be made.
    pub replay: Option<PathBuf>,
    /// Why no replay script was written.
    pub replay_skipped: Option<String>,
}

/// The variable the replay script reads `account`'s secrets from: the
/// target file's `secrets_env`, else
/// [`crate::target::default_secrets_var`].
pub fn secret_var(target: &Target, account: &str) -> String {
    match target.secret_vars.get(account) {
        Some(v) => v.clone(),
        None => crate::target::default_secrets_var(account),
    }
}

/// The file name of the minimal scenario of `name`.
pub fn scenario_file_name(name: &str) -> String {
    format!("{name}.min.toml")
}

/// Why the search stopped, in words.
pub fn ended_words(e: Ended) -> &'static str {
    match e {
        Ended::Minimal => "no single reduction of it still fails",
        Ended::Runs => "the run count ran out (--max-runs)",
        Ended::Time => "the time budget ran out (--budget)",
    }
}

/// `n deliveries`, `1 delivery`.
pub fn deliveries(n: usize) -> String {
    match n {
        1 => "1 delivery".into(),
        n => format!("{n} deliveries"),
    }
}

/// The one-line headline: what fails, how small, how often.
pub fn headline(r: &Report) -> String {
    format!(
        "{}: {} {} with {} (from {}, which {}), {}",
        r.scenario.name,
        r.failure.invariant,
        r.failure.verdict,
        deliveries(r.minimal.deliveries.len()),
        r.original.deliveries.len(),
        r.original_rate,
        r.rate
    )
}

#[derive(Serialize)]
struct Summary<'a> {
    scenario: &'a str,
    seed: u64,
    plan_seed: u64,
    invariant: &'a str,
    invariant_name: &'a str,
    verdict: String,
    failed: u32,
    original_failed: u32,
    original_runs: u32,
    confirm_runs: u32,
    deliveries_before: usize,
    deliveries_after: usize,
    accounts_after: usize,
    faults_after: Vec<&'a str>,
    search_runs: usize,
    ended: &'a str,
    elapsed_s: f64,
    steps: &'a [String],
    scenario_file: String,
    history: Option<String>,
    state: Option<String>,
    account: String,
    replay: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    replay_skipped: Option<String>,
    check: &'a crate::check::ScenarioCheck,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ShrinkError + '_ {
    move |e| ShrinkError::Io {
        path: path.to_path_buf(),
        source: e,
    }
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Writes the outputs of `report` into `dir`, the history and state
/// copied from `trial` (the minimal plan's last failing run); `target`
/// gives the replay script its profile, body limit and variable names.
pub fn write(
    report: &Report,
    trial: &Trial,
    dir: &Path,
    target: &Target,
) -> Result<Files, ShrinkError> {
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let scenario = dir.join(scenario_file_name(&report.scenario.name));
    let header = scenario_header(report, &scenario);
    let text = crate::scenario::write::to_toml(
        &report.scenario,
        &report.scenario.name,
        &report.minimal,
        &header,
    );
    std::fs::write(&scenario, text).map_err(io(&scenario))?;
    let copy = |from: &Option<PathBuf>, name: &str| -> Result<Option<PathBuf>, ShrinkError> {
        match from {
            Some(f) if f.exists() => {
                let to = dir.join(name);
                std::fs::copy(f, &to).map_err(io(&to))?;
                Ok(Some(to))
            }
            _ => Ok(None),
        }
    };
    let history = copy(&trial.history, "history.jsonl")?;
    let state = copy(&trial.state, "state.json")?;
    let account = write_account(report, history.as_deref(), target, dir)?;
    let (replay, replay_skipped) = write_replay(report, target, dir);
    let summary = dir.join("shrink.json");
    let s = Summary {
        scenario: &report.scenario.name,
        seed: report.seed,
        plan_seed: report.minimal.seed,
        invariant: report.failure.invariant.code(),
        invariant_name: report.failure.invariant.name(),
        verdict: report.failure.verdict.to_string(),
        failed: report.rate.failed,
        confirm_runs: report.rate.runs,
        original_failed: report.original_rate.failed,
        original_runs: report.original_rate.runs,
        deliveries_before: report.original.deliveries.len(),
        deliveries_after: report.minimal.deliveries.len(),
        accounts_after: report.minimal.accounts.len(),
        faults_after: report.minimal.faults.iter().map(|f| f.name()).collect(),
        search_runs: report.runs,
        ended: match report.ended {
            Ended::Minimal => "minimal",
            Ended::Runs => "max-runs",
            Ended::Time => "budget",
        },
        elapsed_s: report.elapsed.as_secs_f64(),
        steps: &report.steps,
        scenario_file: file_name(&scenario),
        history: history.as_deref().map(file_name),
        state: state.as_deref().map(file_name),
        account: file_name(&account),
        replay: replay.as_deref().map(file_name),
        replay_skipped: replay_skipped.clone(),
        check: &report.check,
    };
    let json = serde_json::to_vec_pretty(&s).expect("the summary serializes");
    std::fs::write(&summary, json).map_err(io(&summary))?;
    Ok(Files {
        scenario,
        history,
        state,
        summary,
        account,
        replay,
        replay_skipped,
    })
}

/// The comment lines at the top of the minimal scenario's file: what
/// failed, how far the search cut it, and how to replay it.
fn scenario_header(report: &Report, scenario: &Path) -> Vec<String> {
    vec![
        format!(
            "Minimal counterexample of scenario {} (run seed {}).",
            report.scenario.name, report.seed
        ),
        format!(
            "{} {}: the minimal plan {} after the search (the original {}).",
            report.failure.invariant, report.failure.verdict, report.rate, report.original_rate
        ),
        format!(
            "Cut from {} deliveries to {} in {} runs; stopped because {}.",
            report.original.deliveries.len(),
            report.minimal.deliveries.len(),
            report.runs,
            ended_words(report.ended)
        ),
        format!(
            "Replay it as it is: hookstorm run --scenario {} (with the same target flags).",
            file_name(scenario)
        ),
    ]
}

/// Writes `account.md`: the minimal plan's story told from its history.
fn write_account(
    report: &Report,
    history: Option<&Path>,
    target: &Target,
    dir: &Path,
) -> Result<PathBuf, ShrinkError> {
    let account = dir.join("account.md");
    let events: Vec<Event> = match history {
        Some(h) => crate::history::read(h)
            .map(|it| it.filter_map(Result::ok).collect())
            .unwrap_or_default(),
        None => Vec::new(),
    };
    let story = super::account::account(
        &report.minimal,
        &events,
        &report.check,
        &Vocabulary::of(&target.profile),
    );
    let text = format!(
        "# {}\n\n```text\n{}\n```\n",
        headline(report),
        story.trim_end()
    );
    std::fs::write(&account, text).map_err(io(&account))?;
    Ok(account)
}

/// Writes the replay script, or says why there is none.
fn write_replay(report: &Report, target: &Target, dir: &Path) -> (Option<PathBuf>, Option<String>) {
    let vars: Vec<(String, String)> = report
        .minimal
        .accounts
        .iter()
        .map(|a| (a.clone(), secret_var(target, a)))
        .collect();
    match super::replay::replay_script(
        &report.minimal,
        &target.url,
        &target.profile,
        &vars,
        target.max_body,
    ) {
        Ok(script) => match script.write_to(dir) {
            Ok(path) => (Some(path), None),
            Err(e) => (None, Some(e.to_string())),
        },
        Err(e) => (None, Some(e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{Counts, InvariantId, InvariantResult, ScenarioCheck, Verdict};
    use crate::scenario::Scenario;
    use crate::shrink::{search, FailureRate};
    use std::time::Duration;

    fn report(dir: &Path) -> (Report, Trial) {
        let path = dir.join("o.toml");
        std::fs::write(
            &path,
            "name = \"o\"\ndescription = \"d\"\nexpect = \"e\"\nwhen_it_fails = \"w\"\ncheck = [\"I1\", \"I2\"]\n[workload]\njobs = 6\n[[fault]]\nkind = \"duplicate\"\nmode = \"concurrent\"\n[[fault]]\nkind = \"front\"\nfail_first = 1\n",
        )
        .unwrap();
        let scenario = Scenario::from_file(&path).unwrap();
        let original = crate::shrink::original_plan(&scenario, 3);
        let minimal = crate::shrink::reduce::keep_deliveries(&original, |i| i == 4);
        let check = ScenarioCheck {
            scenario: "o".into(),
            results: vec![
                InvariantResult::new(InvariantId::I1, Verdict::Pass, "all stored"),
                InvariantResult::new(InvariantId::I2, Verdict::Fail, "stored twice"),
            ],
            counts: Counts::default(),
            dead_letters: Vec::new(),
            observations: Vec::new(),
        };
        let history = dir.join("run-history.jsonl");
        std::fs::write(&history, "{}\n").unwrap();
        let trial = Trial {
            check: check.clone(),
            history: Some(history),
            state: Some(dir.join("no-state.json")),
        };
        let r = Report {
            scenario,
            seed: 3,
            failure: search::Target {
                invariant: InvariantId::I2,
                verdict: Verdict::Fail,
            },
            original_failures: vec![(InvariantId::I2, Verdict::Fail)],
            original,
            minimal,
            check,
            original_rate: FailureRate { failed: 2, runs: 3 },
            rate: FailureRate {
                failed: 7,
                runs: 10,
            },
            runs: 12,
            steps: vec!["remove deliveries 1-3".into(), "remove delivery 1".into()],
            ended: Ended::Minimal,
            elapsed: Duration::from_millis(1500),
            target: "http://127.0.0.1:1/webhooks/{account}".into(),
            url: "http://127.0.0.1:1/webhooks/{account}".into(),
            profile: "answerline".into(),
            files: Files::default(),
        };
        (r, trial)
    }

    fn target(dir: &Path) -> Target {
        // A literal secret, so the test can show it is never written out.
        let text = "url = \"http://127.0.0.1:1/webhooks/{account}\"\n[accounts.acct_a]\nsecrets = [\"whsec_literal_never_written\"]\n[state]\nhttp = \"http://127.0.0.1:2/state\"\n";
        let path = dir.join("t.toml");
        let file = crate::error::parse_toml(&path, text).unwrap();
        Target::resolve(file, &path).unwrap()
    }

    #[test]
    fn the_outputs_replay_the_minimal_plan_and_the_summary_meets_its_schema() {
        let dir = tempfile::tempdir().unwrap();
        let (r, trial) = report(dir.path());
        let out = dir.path().join("out");
        let target = target(dir.path());
        let files = write(&r, &trial, &out, &target).unwrap();
        assert_eq!(files.scenario, out.join("o.min.toml"));
        assert_eq!(files.history, Some(out.join("history.jsonl")));
        assert_eq!(
            files.state, None,
            "a state file that does not exist is not copied"
        );

        let text = std::fs::read_to_string(&files.scenario).unwrap();
        assert!(text.starts_with("# Minimal counterexample of scenario o (run seed 3).\n"));
        assert!(text.contains("# I2 exactly-once fail: the minimal plan fails 7 of 10 runs"));
        assert!(text.contains("Cut from 6 deliveries to 1 in 12 runs"));
        let back = Scenario::from_file(&files.scenario).unwrap();
        assert_eq!(crate::workload::plan(&back, 99), r.minimal);
        assert_eq!(
            back.faults.len(),
            1,
            "the front stays, the duplicate is in the copies"
        );

        let json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&files.summary).unwrap()).unwrap();
        let schema: serde_json::Value =
            serde_json::from_str(include_str!("../../../reports/schema/shrink.schema.json"))
                .unwrap();
        let v = jsonschema::draft202012::new(&schema).expect("a valid 2020-12 schema");
        let errors: Vec<String> = v.iter_errors(&json).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{errors:?}\n{json:#}");
        assert_eq!(json["failed"], 7);
        assert_eq!(json["deliveries_after"], 1);
        assert_eq!(json["faults_after"], serde_json::json!(["front"]));
        assert_eq!(json["history"], "history.jsonl");
        assert_eq!(json["account"], "account.md");
        assert_eq!(json["replay"], "replay.sh");
        let account = std::fs::read_to_string(&files.account).unwrap();
        assert!(account.starts_with("# o: I2 exactly-once fail with 1 delivery"));
        let script = std::fs::read_to_string(files.replay.as_ref().unwrap()).unwrap();
        assert!(
            script.contains("HOOKSTORM_SECRETS_ACCT_A"),
            "an account without secrets_env gets a variable named after it"
        );
        for entry in walk(&out) {
            let bytes = std::fs::read(&entry).unwrap();
            assert!(
                !String::from_utf8_lossy(&bytes).contains("whsec_literal_never_written"),
                "{} holds the secret",
                entry.display()
            );
        }
        // The schema has teeth: a summary without its rate does not pass.
        let mut bad = json.clone();
        bad.as_object_mut().unwrap().remove("failed");
        assert!(!v.is_valid(&bad));
    }

    fn walk(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
        out
    }

    #[test]
    fn the_variable_named_is_the_target_files_secrets_env_else_one_per_account() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = target(dir.path());
        assert_eq!(secret_var(&t, "acct-b.x"), "HOOKSTORM_SECRETS_ACCT_B_X");
        t.secret_vars.insert("acct_a".into(), "MY_SECRETS".into());
        assert_eq!(secret_var(&t, "acct_a"), "MY_SECRETS");
    }

    #[test]
    fn the_headline_says_what_fails_how_small_and_how_often() {
        let dir = tempfile::tempdir().unwrap();
        let (r, _) = report(dir.path());
        assert_eq!(
            headline(&r),
            "o: I2 exactly-once fail with 1 delivery (from 6, which fails 2 of 3 runs), fails 7 of 10 runs"
        );
        assert_eq!(deliveries(2), "2 deliveries");
    }
}
