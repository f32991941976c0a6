//! hookstorm where people run it: the CI action's script (job summary,
//! outputs, exit code), the container image's structure, `init`,
//! shell completions, `--message-format json`, and bench thresholds that
//! fail the exit code.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common::{output_text as text, run_binary as hookstorm, scenario_dir_arg, TestResult};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Runs deploy/ci/action.sh in `dir` as Actions would; returns the exit code, the
/// job summary and the step outputs.
fn action(dir: &Path, args: &str) -> (Option<i32>, String, String, String) {
    let summary = dir.join("step-summary.md");
    let outputs = dir.join("step-outputs");
    let o = Command::new("bash")
        .arg(repo().join("deploy/ci/action.sh"))
        .env("HOOKSTORM_BIN", env!("CARGO_BIN_EXE_hookstorm"))
        .env("INPUT_ARGS", args)
        .env("INPUT_OUT", "reports")
        .env("GITHUB_STEP_SUMMARY", &summary)
        .env("GITHUB_OUTPUT", &outputs)
        .env("NO_COLOR", "1")
        .current_dir(dir)
        .output()
        .expect("bash runs");
    (
        o.status.code(),
        std::fs::read_to_string(&summary).unwrap_or_default(),
        std::fs::read_to_string(&outputs).unwrap_or_default(),
        text(&o),
    )
}

#[test]
fn the_action_script_writes_the_job_summary_and_propagates_the_exit_code() -> TestResult {
    let dir = tempfile::tempdir()?;
    let (code, summary, outputs, log) = action(
        dir.path(),
        &format!(
            "--scenario-dir {} --scenario baseline --seed 3",
            scenario_dir_arg()
        ),
    );
    assert_eq!(code, Some(0), "{log}");
    assert!(
        summary.contains("baseline") && summary.contains("report.html"),
        "{summary}"
    );
    assert!(
        outputs.contains("exit-code=0") && outputs.contains("verdict=pass"),
        "{outputs}"
    );
    assert!(dir.path().join("reports/latest/report.html").exists());

    // A broken receiver: the job fails with hookstorm's code, and the
    // summary (appended, not overwritten) says why.
    let (code, summary, outputs, log) = action(
        dir.path(),
        &format!(
            "--scenario-dir {} --defect check-then-insert --scenario concurrent-duplicates --seed 8",
            scenario_dir_arg()
        ),
    );
    assert_eq!(code, Some(1), "{log}");
    assert!(
        summary.contains("exactly-once") && summary.contains("baseline"),
        "{summary}"
    );
    assert!(
        outputs.contains("exit-code=1") && outputs.contains("verdict=fail"),
        "{outputs}"
    );

    // A usage error: no report, the summary says so, the code is kept.
    let (code, summary, _, _) = action(dir.path(), "--scenario no-such-scenario");
    assert_eq!(code, Some(254));
    assert!(
        summary.contains("No report was written (exit code 254)"),
        "{summary}"
    );
    Ok(())
}

#[test]
fn the_action_runs_the_script_uploads_the_report_and_the_example_workflow_uses_it() -> TestResult {
    let action = std::fs::read_to_string(repo().join("action.yml"))?;
    for needed in [
        "using: composite",
        "deploy/ci/action.sh",
        "actions/upload-artifact",
        "if: always()",
        "/latest/",
        "exit-code:",
    ] {
        assert!(action.contains(needed), "action.yml lacks {needed:?}");
    }
    let workflow = std::fs::read_to_string(repo().join("deploy/ci/github-actions.yml"))?;
    for needed in ["services:", "uses: ", "args:", "hookstorm.toml"] {
        assert!(
            workflow.contains(needed),
            "the example workflow lacks {needed:?}"
        );
    }
    Ok(())
}

#[test]
fn the_dockerfile_builds_both_binaries_and_runs_them_as_a_non_root_user() -> TestResult {
    let text = std::fs::read_to_string(repo().join("Dockerfile"))?;
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .collect();
    let froms: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.starts_with("FROM "))
        .collect();
    assert_eq!(froms.len(), 2, "a build and a runtime stage: {froms:?}");
    assert!(
        froms[0].ends_with(" AS build") && froms[0].contains("rust:"),
        "{froms:?}"
    );
    assert!(
        froms[1].contains("-slim"),
        "a small runtime image: {froms:?}"
    );
    let runtime = text.split(froms[1]).nth(1).unwrap();
    for bin in ["hookstorm", "hookstorm-receiver"] {
        assert!(
            runtime.contains(&format!(
                "COPY --from=build /src/target/release/{bin} /usr/local/bin/{bin}"
            )),
            "{bin} not copied"
        );
        assert!(text.contains(&format!("--bin {bin}")), "{bin} not built");
    }
    let user = lines
        .iter()
        .rev()
        .find(|l| l.starts_with("USER "))
        .expect("a USER");
    let who = user.trim_start_matches("USER ").split(':').next().unwrap();
    assert!(who != "root" && who != "0", "{user}");
    let user_at = runtime.find("USER ").unwrap();
    assert!(
        runtime.find("ENTRYPOINT").unwrap() > user_at,
        "USER before ENTRYPOINT"
    );
    assert!(
        !runtime[user_at..].contains("RUN "),
        "nothing runs as root after USER"
    );
    let ignore = std::fs::read_to_string(repo().join(".dockerignore"))?;
    assert!(ignore.lines().any(|l| l.trim() == "target/"));
    Ok(())
}

#[test]
fn init_writes_a_target_file_that_runs_against_a_receiver() -> TestResult {
    let rt = tokio::runtime::Runtime::new()?;
    let (receiver, target) = rt.block_on(hookstorm_cli::builtin::start(None, None))?;
    let dir = tempfile::tempdir()?;
    let state = target.state.http.clone().unwrap();
    let o = hookstorm(
        &[
            "init",
            "--no-input",
            "--url",
            &target.url,
            "--account",
            "acct_a",
            "--account",
            "acct_b",
            "--state-http",
            &state,
            "--token-env",
            "HS_ADMIN_TOKEN",
            "--out",
            "mine.toml",
        ],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        text(&o).contains("HOOKSTORM_SECRETS_ACCT_B"),
        "{}",
        text(&o)
    );
    let file = std::fs::read_to_string(dir.path().join("mine.toml"))?;
    assert!(
        file.lines().filter(|l| l.starts_with('#')).count() > 10,
        "{file}"
    );
    // Written once; a second init does not overwrite it.
    let again = hookstorm(&["init", "--no-input", "--out", "mine.toml"], dir.path());
    assert_eq!(again.status.code(), Some(254), "{}", text(&again));
    let run = Command::new(env!("CARGO_BIN_EXE_hookstorm"))
        .args([
            "run",
            "--target",
            "mine.toml",
            "--scenario-dir",
            &scenario_dir_arg(),
            "--scenario",
            "baseline",
            "--scenario",
            "account-isolation",
            "--seed",
            "4",
            "--out",
            "out",
        ])
        .env(
            "HOOKSTORM_SECRETS_ACCT_A",
            crate::common::secrets_csv(&target.secrets["acct_a"]),
        )
        .env(
            "HOOKSTORM_SECRETS_ACCT_B",
            crate::common::secrets_csv(&target.secrets["acct_b"]),
        )
        .env("HS_ADMIN_TOKEN", target.state.token.clone().unwrap())
        .env("NO_COLOR", "1")
        .current_dir(dir.path())
        .output()?;
    rt.block_on(receiver.shutdown());
    assert_eq!(run.status.code(), Some(0), "{}", text(&run));
    Ok(())
}

#[test]
fn completions_are_generated_for_each_shell() {
    let dir = tempfile::tempdir().unwrap();
    for (shell, marker) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef hookstorm"),
        ("fish", "complete -c hookstorm"),
    ] {
        let o = hookstorm(&["completions", shell], dir.path());
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        let script = String::from_utf8_lossy(&o.stdout);
        assert!(script.contains(marker), "{shell}: {script}");
        assert!(
            script.contains("message-format") && script.contains("threshold"),
            "{shell}"
        );
    }
    let o = hookstorm(&["completions", "tcsh"], dir.path());
    assert_eq!(o.status.code(), Some(254));
}

#[test]
fn message_format_json_streams_one_line_per_scenario_and_finding() {
    let dir = tempfile::tempdir().unwrap();
    let o = hookstorm(
        &[
            "run",
            "--message-format",
            "json",
            "--scenario-dir",
            &scenario_dir_arg(),
            "--defect",
            "check-then-insert",
            "--scenario",
            "baseline",
            "--scenario",
            "concurrent-duplicates",
            "--seed",
            "8",
            "--out",
            "out",
        ],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let lines: Vec<Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect();
    let reasons: Vec<&str> = lines
        .iter()
        .map(|l| l["reason"].as_str().unwrap())
        .collect();
    assert_eq!(reasons[0], "scenario-finished");
    assert_eq!(lines[0]["scenario"], "baseline");
    assert_eq!(lines[0]["verdict"], "pass");
    assert_eq!(reasons[1], "scenario-finished");
    assert_eq!(lines[1]["verdict"], "fail");
    let findings: Vec<&Value> = lines.iter().filter(|l| l["reason"] == "finding").collect();
    assert!(findings.iter().any(|f| f["name"] == "exactly-once"
        && f["verdict"] == "fail"
        && f["reproduce"].as_str().unwrap().contains("--seed 8")));
    let last = lines.last().unwrap();
    assert_eq!(last["reason"], "run-finished");
    assert_eq!(last["exit_code"], 1);
}

fn null_bench(dir: &Path, thresholds: &[&str]) -> std::process::Output {
    let mut args = vec![
        "bench",
        "--null",
        "--rate",
        "200/s",
        "--duration",
        "1s",
        "--warmup",
        "0s",
        "--out",
        "out",
    ];
    for t in thresholds {
        args.extend(["--threshold", t]);
    }
    hookstorm(&args, dir)
}

#[test]
fn a_broken_bench_threshold_fails_the_exit_code_and_a_kept_one_does_not() -> TestResult {
    let dir = tempfile::tempdir()?;
    let o = null_bench(dir.path(), &["rate>10/s", "errors<=1%", "max<60s"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let bench: Value = serde_json::from_str(&std::fs::read_to_string(
        dir.path().join("out/latest/bench.json"),
    )?)?;
    assert_eq!(bench["thresholds"].as_array().unwrap().len(), 3);
    assert!(bench["thresholds"]
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["passed"] == true));
    assert!(!bench["latency_curve"].as_array().unwrap().is_empty());
    assert!(dir.path().join("out/latest/report.html").exists());

    let o = null_bench(dir.path(), &["rate>1000000/s"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("threshold rate>1000000/s") && text(&o).contains("BROKEN"));
    let html = std::fs::read_to_string(dir.path().join("out/latest/report.html"))?;
    assert!(html.contains("rate>1000000/s"));

    // A threshold that does not parse is a usage error naming it.
    let o = null_bench(dir.path(), &["p99<100"]);
    assert_eq!(o.status.code(), Some(254));
    assert!(
        text(&o).contains("\"p99<100\"") && text(&o).contains("like 100ms"),
        "{}",
        text(&o)
    );
    Ok(())
}
