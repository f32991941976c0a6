//! The CI gate: configuration mistakes end a run within seconds with exit 3
//! and what to fix, a target that cannot run some scenarios skips them and
//! says so (exit 0 unless `--require-all`), and usage mistakes are usage
//! errors. Every test runs the real `hookstorm` binary.
//!
//! The broken targets are foreign receivers standing for the usual
//! deployment mistakes: a receiver configured with another secret than the
//! one given to hookstorm, an admin state endpoint behind a token the user
//! got wrong, one that crashes (500), serves an HTML error page, answers
//! `{}` or hangs, a SQL probe pointed at the wrong database, a state command
//! that is not installed, and a receiver behind a rewrite rule that
//! redirects every request (a moved route, a trailing-slash rule).

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use hookstorm::check::{InvariantId, Verdict};

use crate::common::scenario_dir_arg as scenario_dir;

use super::{
    run_hookstorm, secret_for, verify_answerline, ForeignRun, Reply, Request, Server, SECRET_A,
    SECRET_B,
};

/// Every configuration mistake must be reported within this.
const VERDICT_WITHIN: Duration = Duration::from_secs(5);

struct Ran {
    code: i32,
    text: String,
    took: Duration,
}

/// How many receiver scenarios ship (the files not tagged `sender`).
fn shipped() -> usize {
    hookstorm::scenario::Scenario::load_dir(std::path::Path::new(&scenario_dir()))
        .expect("scenarios folder")
        .len()
}

/// How many scenario files ship, receiver and sender ones.
fn shipped_files() -> usize {
    std::fs::read_dir(scenario_dir())
        .expect("scenarios folder")
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "toml"))
        .count()
}

/// Runs `hookstorm ARGS` in `dir` with extra environment variables.
fn hookstorm(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Ran {
    let start = Instant::now();
    let out: Output = Command::new(env!("CARGO_BIN_EXE_hookstorm"))
        .args(args)
        .current_dir(dir)
        .envs(env.iter().copied())
        .env("NO_COLOR", "1")
        .output()
        .expect("hookstorm runs");
    Ran {
        code: out.status.code().unwrap_or(-1),
        text: format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
        took: start.elapsed(),
    }
}

/// `hookstorm run --target t.toml --scenario baseline` with `toml` as the
/// target file; the secrets in FOREIGN_SECRET_A/B and `env`.
fn run_target(toml: &str, env: &[(&str, &str)]) -> Ran {
    let dir = tempfile::tempdir().expect("tempdir");
    let toml = toml.replace("{dir}", &dir.path().display().to_string());
    std::fs::write(dir.path().join("t.toml"), toml).expect("write the target");
    let mut all = vec![
        ("FOREIGN_SECRET_A", SECRET_A),
        ("FOREIGN_SECRET_B", SECRET_B),
    ];
    all.extend_from_slice(env);
    let sd = scenario_dir();
    hookstorm(
        dir.path(),
        &[
            "run",
            "--scenario-dir",
            &sd,
            "--target",
            "t.toml",
            "--scenario",
            "baseline",
            "--out",
            "out",
        ],
        &all,
    )
}

/// `hookstorm run` of `scenarios` (in order) against the built-in receiver
/// with `defect`, plus `extra` flags, in a fresh folder.
fn run_defect(defect: &str, scenarios: &[&str], extra: &[&str]) -> Ran {
    let dir = tempfile::tempdir().expect("tempdir");
    let sd = scenario_dir();
    let mut args = vec!["run", "--scenario-dir", &sd, "--defect", defect];
    for s in scenarios {
        args.extend(["--scenario", s]);
    }
    args.extend_from_slice(extra);
    args.extend(["--out", "out"]);
    hookstorm(dir.path(), &args, &[])
}

/// A receiver that verifies the answerline signature per account and
/// stores nothing, with a working state endpoint unless `state` answers.
fn receiver(state: impl Fn(&Request) -> Option<Reply> + Send + Sync + 'static) -> Server {
    Server::start(6, move |req: &Request| {
        if let Some(r) = state(req) {
            return r;
        }
        match (req.method.as_str(), req.path.as_str()) {
            ("GET", "/admin/state") => Reply::json(&serde_json::json!({"inbox": []})),
            ("POST", "/admin/reset") => Reply::status(204),
            ("POST", p) if p.starts_with("/webhooks/") => match secret_for(req.last_segment()) {
                Some(secret) if verify_answerline(secret, req) => Reply::status(204),
                _ => Reply::status(401),
            },
            _ => Reply::status(404),
        }
    })
}

fn target_toml(server: &Server, accounts: &str, state: &str) -> String {
    format!(
        "url = \"{}/webhooks/{{account}}\"\n{accounts}\n{state}\n",
        server.base()
    )
}

fn http_state(server: &Server) -> String {
    format!("[state]\nhttp = \"{}/admin/state\"\n", server.base())
}

/// `hookstorm run --target` with the foreign secrets, timed.
fn run_foreign(toml: &str, args: &[&str]) -> (ForeignRun, Duration) {
    let sd = scenario_dir();
    let mut all = vec!["--scenario-dir", &sd];
    all.extend_from_slice(args);
    let start = Instant::now();
    let r = run_hookstorm(toml, &all);
    (r, start.elapsed())
}

/// Like [`assert_unusable_fast`] for a [`ForeignRun`]: exit 3, fast, the
/// hint in the output, and no report written.
fn assert_foreign_unusable_fast(toml: &str, needle: &str) {
    let (r, took) = run_foreign(toml, &["--scenario", "baseline"]);
    assert_eq!(r.code, 3, "expected exit 3: {}", r.explain());
    assert!(took < VERDICT_WITHIN, "took {took:?}: {}", r.explain());
    assert!(
        r.output.contains(needle),
        "expected {needle:?} in:\n{}",
        r.output
    );
    assert!(
        !r.reports().join("report.json").exists(),
        "a preflight failure runs no scenario"
    );
}

fn assert_unusable_fast(r: &Ran, needle: &str) {
    assert_eq!(r.code, 3, "expected exit 3: {}", r.text);
    assert!(
        r.took < VERDICT_WITHIN,
        "took {:?} (limit {VERDICT_WITHIN:?}): {}",
        r.took,
        r.text
    );
    assert!(
        r.text.contains(needle),
        "expected {needle:?} in:\n{}",
        r.text
    );
}

#[test]
fn a_wrong_secret_ends_the_run_in_seconds_naming_its_environment_variable() {
    let server = receiver(|_| None);
    // acct_a is given acct_b's secret: the receiver answers 401.
    let accounts = "[accounts.acct_a]\nsecrets_env = \"MY_SECRETS\"\n";
    let r = run_target(
        &target_toml(&server, accounts, &http_state(&server)),
        &[("MY_SECRETS", SECRET_B)],
    );
    assert_unusable_fast(
        &r,
        "the receiver answered 401 to a correctly signed test delivery for acct_a: does it verify with the secret in MY_SECRETS?",
    );
    assert!(!r.text.contains(SECRET_B), "a secret leaked: {}", r.text);
}

#[test]
fn a_state_endpoint_behind_a_wrong_token_ends_the_run_in_seconds() {
    let server = receiver(|req| {
        (req.path == "/admin/state" && req.header("authorization") != Some("Bearer right-token"))
            .then(|| Reply::status(401))
    });
    let state = format!("{}token_env = \"ADMIN_TOKEN\"\n", http_state(&server));
    let r = run_target(
        &target_toml(&server, super::ACCOUNTS, &state),
        &[("ADMIN_TOKEN", "wrong-token")],
    );
    assert_unusable_fast(
        &r,
        "is the token in ADMIN_TOKEN the receiver's admin token?",
    );
    assert!(!r.text.contains("wrong-token"), "{}", r.text);
}

#[test]
fn a_state_endpoint_answering_500_ends_the_run_in_seconds() {
    let server = receiver(|req| {
        (req.path == "/admin/state").then(|| Reply::Status(500, "database is locked".into()))
    });
    assert_foreign_unusable_fast(
        &target_toml(&server, super::ACCOUNTS, &http_state(&server)),
        "the state source answered 500 instead of the state JSON",
    );
}

#[test]
fn a_state_endpoint_answering_html_ends_the_run_in_seconds() {
    let server = receiver(|req| {
        (req.path == "/admin/state")
            .then(|| Reply::Status(200, "<html><body>Login</body></html>".into()))
    });
    assert_foreign_unusable_fast(
        &target_toml(&server, super::ACCOUNTS, &http_state(&server)),
        "not with the state JSON",
    );
}

#[test]
fn a_state_endpoint_answering_an_empty_object_ends_the_run_in_seconds() {
    let server =
        receiver(|req| (req.path == "/admin/state").then(|| Reply::Status(200, "{}".into())));
    let r = run_target(
        &target_toml(&server, super::ACCOUNTS, &http_state(&server)),
        &[],
    );
    assert_unusable_fast(&r, "not with the state JSON");
    assert!(r.text.contains("inbox"), "{}", r.text);
}

#[test]
fn a_hanging_state_endpoint_ends_the_run_in_seconds() {
    let server =
        receiver(|req| (req.path == "/admin/state").then(|| Reply::Hang(Duration::from_secs(6))));
    assert_foreign_unusable_fast(
        &target_toml(&server, super::ACCOUNTS, &http_state(&server)),
        "the state source did not answer within 3s",
    );
}

#[test]
fn a_sql_probe_on_the_wrong_database_ends_the_run_in_seconds() {
    let server = receiver(|_| None);
    // A database without the receiver's tables (an empty SQLite file).
    let state = "[state.sql]\nurl = \"sqlite://{dir}/not-the-receivers.db\"\n";
    let r = run_target(&target_toml(&server, super::ACCOUNTS, state), &[]);
    assert_unusable_fast(
        &r,
        "is [state.sql] url in t.toml the receiver's own database",
    );
    assert!(r.text.contains("webhook_inbox"), "{}", r.text);
}

#[test]
fn a_missing_state_command_ends_the_run_in_seconds() {
    let server = receiver(|_| None);
    let state = "[state]\ncommand = \"hookstorm-no-such-state-dump --json\"\n";
    let r = run_target(&target_toml(&server, super::ACCOUNTS, state), &[]);
    assert_unusable_fast(&r, "the state command failed");
    assert!(
        r.text.contains("hookstorm-no-such-state-dump"),
        "{}",
        r.text
    );
}

#[test]
fn a_receiver_that_redirects_everything_is_told_which_url_to_register() {
    let server = receiver(|req| {
        (req.method == "POST" && req.path.starts_with("/webhooks/")).then(|| {
            Reply::Raw(
                b"HTTP/1.1 308 Permanent Redirect\r\nLocation: /hooks/answers\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    .to_vec(),
            )
        })
    });
    assert_foreign_unusable_fast(
        &target_toml(&server, super::ACCOUNTS, &http_state(&server)),
        // run_hookstorm gives the target file by its absolute path: the hint names it so.
        "every delivery was answered 308 to /hooks/answers: register that URL (url in /",
    );
}

#[test]
fn doctor_passes_on_the_built_in_receiver() {
    let dir = tempfile::tempdir().unwrap();
    let sd = scenario_dir();
    let r = hookstorm(dir.path(), &["doctor", "--scenario-dir", &sd], &[]);
    assert_eq!(r.code, 0, "{}", r.text);
    // It started the built-in receiver, and left nothing behind.
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "doctor wrote {left:?}");
    let all = format!(
        "target usable; with it {0} of {0} scenarios would run",
        shipped()
    );
    for line in [
        "ok    state source",
        "ok    reset hook works",
        "ok    signed test delivery for acct_a",
        "ok    signed delivery for acct_b",
        "ok    the delivery for acct_b showed up in the state",
        "ok    the preflight's rows were reset away",
        all.as_str(),
    ] {
        assert!(r.text.contains(line), "expected {line:?} in:\n{}", r.text);
    }
}

#[test]
fn a_target_without_lifecycle_provider_or_second_account_skips_and_says_so() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (receiver, target) = rt
        .block_on(hookstorm_cli::builtin::start(None, None))
        .unwrap();
    let secret_a: Vec<&str> = target.secrets["acct_a"]
        .iter()
        .map(|s| s.expose())
        .collect();
    let secret_a = secret_a.join(",");
    let token = target.state.token.clone().unwrap();
    let state = target.state.http.clone().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let sd = scenario_dir();
    let run = |extra: &[&str]| {
        let mut args = vec![
            extra[0],
            "--scenario-dir",
            &sd,
            "--url",
            &target.url,
            "--secret-env",
            "acct_a=GATE_SECRET_A",
            "--state-http",
            &state,
            "--state-token-env",
            "GATE_TOKEN",
        ];
        if extra[0] == "run" {
            args.extend(["--seed", "4", "--out", "out"]);
        }
        for s in [
            "baseline",
            "account-isolation",
            "kill-under-load",
            "long-outage-reconcile",
        ] {
            args.extend(["--scenario", s]);
        }
        args.extend_from_slice(&extra[1..]);
        hookstorm(
            dir.path(),
            &args,
            &[
                ("GATE_SECRET_A", secret_a.as_str()),
                ("GATE_TOKEN", token.as_str()),
            ],
        )
    };
    let line =
        "1 of 4 scenarios ran; 3 skipped: need a second account (1), [lifecycle] (1), [provider] (1)";
    let r = run(&["doctor"]);
    assert_eq!(r.code, 0, "{}", r.text);
    assert!(
        r.text
            .contains("target usable; with it 1 of 4 scenarios would run; 3 skipped"),
        "{}",
        r.text
    );
    let r = run(&["run"]);
    assert_eq!(r.code, 0, "{}", r.text);
    assert!(r.text.contains(line), "{}", r.text);
    assert!(
        r.text
            .contains("skipped kill-under-load: needs lifecycle control"),
        "{}",
        r.text
    );
    let latest = dir.path().join("out/latest");
    let summary = std::fs::read_to_string(latest.join("summary.md")).unwrap();
    assert!(summary.contains(line), "{summary}");
    let junit = std::fs::read_to_string(latest.join("junit.xml")).unwrap();
    assert!(
        junit.contains("<skipped message=\"needs lifecycle control"),
        "{junit}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(latest.join("report.json")).unwrap())
            .unwrap();
    assert_eq!(json["coverage"]["line"], line);
    assert_eq!(json["exit_code"], 0);

    let r = run(&["run", "--require-all"]);
    assert_eq!(r.code, 1, "{}", r.text);
    assert!(
        r.text
            .contains(&format!("{line} (--require-all: skips fail the run)")),
        "{}",
        r.text
    );
    rt.block_on(receiver.shutdown());
}

#[test]
fn fail_fast_stops_at_the_first_failing_scenario_and_lists_the_rest_as_not_run() {
    let r = run_defect(
        "check-then-insert",
        &["concurrent-duplicates", "baseline"],
        &["--seed", "8", "--fail-fast"],
    );
    assert_eq!(r.code, 1, "{}", r.text);
    assert!(
        r.text.contains(
            "1 of 2 scenarios ran; 1 not run: --fail-fast stopped the run after concurrent-duplicates failed"
        ),
        "{}",
        r.text
    );
    assert!(!r.text.contains("[2/2] baseline"), "{}", r.text);
}

#[test]
fn the_overall_timeout_cuts_a_stuck_scenario_short_as_unknown() {
    // A poison event blocks this receiver's batch forever: the drain would wait 30 s.
    let r = run_defect(
        "poison-blocks-batch",
        &["poison-event", "baseline"],
        &["--timeout", "4s"],
    );
    assert_eq!(r.code, 2, "{}", r.text);
    assert!(r.took < Duration::from_secs(15), "took {:?}", r.took);
    assert!(
        r.text
            .contains("1 of 2 scenarios ran; 1 not run: the run's --timeout of 4s ran out"),
        "{}",
        r.text
    );
}

#[test]
fn usage_mistakes_are_usage_errors() {
    let server = receiver(|_| None);
    let dir = tempfile::tempdir().unwrap();
    let url = format!("{}/webhooks/all", server.base());
    let state = format!("{}/admin/state", server.base());
    let sd = scenario_dir();
    let env = [
        ("FOREIGN_SECRET_A", SECRET_A),
        ("FOREIGN_SECRET_B", SECRET_B),
    ];
    let r = hookstorm(
        dir.path(),
        &[
            "run",
            "--scenario-dir",
            &sd,
            "--url",
            &url,
            "--secret-env",
            "acct_a=FOREIGN_SECRET_A",
            "--secret-env",
            "acct_b=FOREIGN_SECRET_B",
            "--state-http",
            &state,
        ],
        &env,
    );
    assert_eq!(r.code, 254, "{}", r.text);
    assert!(
        r.text.contains("has no {account} but 2 accounts"),
        "{}",
        r.text
    );

    std::fs::write(
        dir.path().join("t.toml"),
        target_toml(&server, super::ACCOUNTS, &http_state(&server)),
    )
    .unwrap();
    let r = hookstorm(
        dir.path(),
        &["run", "--target", "t.toml", "--defect", "check-then-insert"],
        &env,
    );
    assert_eq!(r.code, 254, "{}", r.text);
    assert!(
        r.text
            .contains("--defect configures the built-in reference receiver"),
        "{}",
        r.text
    );

    let r = hookstorm(
        dir.path(),
        &["run", "--scenario-dir", &sd, "--tag", "no-such-tag"],
        &[],
    );
    assert_eq!(r.code, 254, "{}", r.text);
    assert!(
        r.text.contains("no scenario has tag \"no-such-tag\""),
        "{}",
        r.text
    );
}

#[test]
fn list_shows_tags_needs_and_invariants() {
    let dir = tempfile::tempdir().unwrap();
    let sd = scenario_dir();
    let r = hookstorm(dir.path(), &["list", "--scenario-dir", &sd, "--json"], &[]);
    assert_eq!(r.code, 0, "{}", r.text);
    let v: serde_json::Value = serde_json::from_str(&r.text).unwrap();
    let all = v.as_array().unwrap();
    assert_eq!(all.len(), shipped_files());
    let kill = all.iter().find(|s| s["name"] == "kill-under-load").unwrap();
    assert!(kill["tags"].as_array().unwrap().contains(&"process".into()));
    assert_eq!(kill["needs"][0]["label"], "[lifecycle]");
    assert!(all
        .iter()
        .all(|s| !s["tags"].as_array().unwrap().is_empty()));
    let r = hookstorm(
        dir.path(),
        &["list", "--scenario-dir", &sd, "--tag", "process"],
        &[],
    );
    assert!(
        r.text.contains("worker-crash") && !r.text.contains("baseline"),
        "{}",
        r.text
    );
}

#[test]
fn a_receiver_that_drops_every_connection_ends_the_run_in_seconds() {
    // A port that accepts and closes (a proxy with no upstream, TLS expected).
    let server = receiver(|req| req.path.starts_with("/webhooks/").then_some(Reply::Close));
    assert_foreign_unusable_fast(
        &target_toml(&server, super::ACCOUNTS, &http_state(&server)),
        "3 tries of a correctly signed test delivery for acct_a got no answer",
    );
}

/// A first receiver as many teams write it: the inbox in a map keyed by
/// (account, task id), test deliveries acknowledged and not stored, an
/// admin state endpoint that knows nothing of sequenced resources.
fn map_receiver() -> Server {
    let inbox: Arc<Mutex<HashSet<(String, String)>>> = Arc::default();
    receiver(move |req| {
        let mut rows = inbox.lock().unwrap();
        match (req.method.as_str(), req.path.as_str()) {
            ("GET", "/admin/state") => {
                let list: Vec<serde_json::Value> = rows
                    .iter()
                    .map(|(a, k)| serde_json::json!({"key": k, "account": a, "processed": true}))
                    .collect();
                Some(Reply::json(&serde_json::json!({ "inbox": list })))
            }
            ("POST", "/admin/reset") => {
                rows.clear();
                Some(Reply::status(204))
            }
            ("POST", p) if p.starts_with("/webhooks/") => {
                let account = req.last_segment();
                let verified = secret_for(account).is_some_and(|s| verify_answerline(s, req));
                let body = req.json();
                Some(match (verified, body) {
                    (false, _) => Reply::status(401),
                    (true, None) => Reply::status(400),
                    (true, Some(b)) if b["test"] == true => Reply::status(204),
                    (true, Some(b)) => {
                        let key = b["task"]["id"].as_str().unwrap_or_default().to_string();
                        rows.insert((account.to_string(), key));
                        Reply::status(204)
                    }
                })
            }
            _ => None,
        }
    })
}

#[test]
fn a_state_without_sequenced_resources_skips_that_scenario_and_runs_the_rest() {
    let server = map_receiver();
    let (r, _) = run_foreign(
        &target_toml(&server, super::ACCOUNTS, &http_state(&server)),
        &[
            "--scenario",
            "test-delivery",
            "--scenario",
            "sequenced-resources",
            "--seed",
            "3",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.explain());
    assert_eq!(r.scenario_verdict("test-delivery"), Some(Verdict::Pass));
    assert_eq!(
        r.verdict("test-delivery", InvariantId::I4),
        Some(Verdict::Pass)
    );
    assert_eq!(r.verdict("sequenced-resources", InvariantId::I6), None);
    let report = r.report.as_ref().expect("report.json");
    let skip = report.scenarios[1].skipped.as_ref().expect("skipped");
    assert_eq!(
        skip.need,
        Some(hookstorm::findings::coverage::Need::Resources)
    );
    assert!(
        r.output
            .contains("1 of 2 scenarios ran; 1 skipped: need resources in the state (1)"),
        "{}",
        r.output
    );
}

#[test]
fn the_target_file_selects_scenarios_and_can_require_every_one() {
    let server = map_receiver();
    let base = target_toml(&server, super::ACCOUNTS, &http_state(&server));
    let select = "[scenarios]\nonly = [\"test-delivery\", \"sequenced-resources\", \"kill-under-load\"]\nskip_tags = [\"process\"]\n";
    let (r, _) = run_foreign(&format!("{base}{select}"), &["--seed", "5"]);
    assert_eq!(r.code, 0, "{}", r.explain());
    assert!(
        r.output
            .contains("1 of 2 scenarios ran; 1 skipped: need resources in the state (1)"),
        "{}",
        r.output
    );
    let (r, _) = run_foreign(
        &format!("{base}{select}require_all = true\n"),
        &["--seed", "5"],
    );
    assert_eq!(r.code, 1, "{}", r.explain());
    assert!(
        r.output.contains("(--require-all: skips fail the run)"),
        "{}",
        r.output
    );
    let (r, _) = run_foreign(
        &format!("{base}[scenarios]\nskip = [\"no-such-scenario\"]\n"),
        &[],
    );
    assert_eq!(r.code, 254, "{}", r.output);
    assert!(
        r.output
            .contains("[scenarios] skip: no scenario \"no-such-scenario\""),
        "{}",
        r.output
    );
}
