//! The `hookstorm` binary: exit codes, reports on disk, reproduce commands,
//! clear errors, and no secret in any output.

use std::process::Command;

use crate::common::{
    output_text as text, run_binary as hookstorm, scenario_dir_arg as scenario_dir,
};

#[test]
fn schedule_json_lists_ten_attempts_within_the_contract_window() {
    let dir = tempfile::tempdir().unwrap();
    let o = hookstorm(&["schedule", "--json", "--seed", "4"], dir.path());
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v["attempts"].as_array().unwrap();
    assert_eq!(rows.len(), 10);
    let total = rows[9]["cumulative_s"].as_f64().unwrap();
    assert!((1277.5..=2555.0).contains(&total));
}

#[test]
fn schedule_table_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let o = hookstorm(&["schedule", "--seed", "4"], dir.path());
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    insta::assert_snapshot!(String::from_utf8_lossy(&o.stdout));
}

#[test]
fn run_writes_every_report_and_exits_zero_on_the_reference_receiver() {
    let dir = tempfile::tempdir().unwrap();
    let o = hookstorm(
        &[
            "run",
            "--scenario-dir",
            &scenario_dir(),
            "--scenario",
            "baseline",
            "--seed",
            "3",
            "--out",
            "out",
        ],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let latest = dir.path().join("out/latest");
    for f in [
        "report.json",
        "junit.xml",
        "summary.md",
        "baseline/history.jsonl",
        "baseline/state.json",
    ] {
        assert!(latest.join(f).exists(), "missing {f}");
    }
    assert!(text(&o).contains("seed 3"));
}

#[test]
fn a_broken_receiver_exits_one_and_names_the_reproduce_command() {
    let dir = tempfile::tempdir().unwrap();
    let o = hookstorm(
        &[
            "run",
            "--scenario-dir",
            &scenario_dir(),
            "--defect",
            "check-then-insert",
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
    let summary = std::fs::read_to_string(dir.path().join("out/latest/summary.md")).unwrap();
    assert!(summary.contains("I2"), "{summary}");
    assert!(
        summary.contains("--defect check-then-insert --scenario concurrent-duplicates --seed 8"),
        "{summary}"
    );
}

#[test]
fn an_unreachable_target_exits_three() {
    let dir = tempfile::tempdir().unwrap();
    // A port nothing listens on: bound (so no one else can listen there)
    // and never listening, it refuses every connection while it is held.
    let held = tokio::net::TcpSocket::new_v4().unwrap();
    held.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let port = held.local_addr().unwrap().port();
    let target = format!(
        "url = \"http://127.0.0.1:{port}/webhooks/{{account}}\"\n[accounts.acct_a]\nsecrets = [\"s3cr3t-value-one\"]\n[state]\nhttp = \"http://127.0.0.1:{port}/state\"\n"
    );
    std::fs::write(dir.path().join("t.toml"), target).unwrap();
    let o = hookstorm(
        &[
            "run",
            "--scenario-dir",
            &scenario_dir(),
            "--target",
            "t.toml",
            "--scenario",
            "baseline",
            "--out",
            "out",
        ],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert!(!text(&o).contains("s3cr3t-value-one"));
}

#[test]
fn usage_errors_exit_254_with_a_hint() {
    let dir = tempfile::tempdir().unwrap();
    let o = hookstorm(
        &[
            "run",
            "--scenario-dir",
            &scenario_dir(),
            "--scenario",
            "no-such-scenario",
        ],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(254));
    assert!(text(&o).contains("hint: one of"), "{}", text(&o));
    insta::assert_snapshot!("unknown_scenario", text(&o));
    let o = hookstorm(&["run", "--defect", "not-a-defect"], dir.path());
    assert_eq!(o.status.code(), Some(254), "{}", text(&o));
    insta::assert_snapshot!("unknown_defect", text(&o));
    let o = hookstorm(&["frobnicate"], dir.path());
    assert_eq!(o.status.code(), Some(254));
}

#[test]
fn the_built_in_receiver_refuses_a_profile_it_cannot_read_and_names_the_way_out() {
    let dir = tempfile::tempdir().unwrap();
    let o = hookstorm(
        &[
            "run",
            "--scenario-dir",
            &scenario_dir(),
            "--scenario",
            "baseline",
            "--profile",
            "stripe",
        ],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(254), "{}", text(&o));
    assert!(
        text(&o).contains(
            "--profile stripe: the built-in reference receiver reads answerline deliveries only"
        ) && text(&o).contains("extends = \"answerline\""),
        "{}",
        text(&o)
    );
}

#[test]
fn a_malformed_scenario_file_is_named_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("broken.toml"),
        "name = \"broken\"\ndescription = \"x\"\nbogus_key = 1\n",
    )
    .unwrap();
    let o = hookstorm(&["run", "--scenario", "broken.toml"], dir.path());
    assert_eq!(o.status.code(), Some(254), "{}", text(&o));
    let t = text(&o);
    assert!(t.contains("broken.toml") && t.contains("line"), "{t}");
    insta::assert_snapshot!(t);
}

#[test]
fn flags_alone_test_a_running_receiver_with_secrets_from_the_environment() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (receiver, target) = rt
        .block_on(hookstorm_cli::builtin::start(None, None))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_hookstorm"))
        .args([
            "run",
            "--scenario-dir",
            &scenario_dir(),
            "--scenario",
            "baseline",
            "--scenario",
            "account-isolation",
            "--seed",
            "6",
            "--out",
            "out",
            "--url",
            &target.url,
            "--secret-env",
            "acct_a=HS_SECRETS_A",
            "--secret-env",
            "acct_b=HS_SECRETS_B",
            "--state-http",
            target.state.http.as_deref().unwrap(),
            "--state-token-env",
            "HS_ADMIN_TOKEN",
        ])
        .env(
            "HS_SECRETS_A",
            crate::common::secrets_csv(&target.secrets["acct_a"]),
        )
        .env(
            "HS_SECRETS_B",
            crate::common::secrets_csv(&target.secrets["acct_b"]),
        )
        .env("HS_ADMIN_TOKEN", target.state.token.clone().unwrap())
        .current_dir(dir.path())
        .output()
        .unwrap();
    rt.block_on(receiver.shutdown());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let summary = std::fs::read_to_string(dir.path().join("out/latest/report.json")).unwrap();
    assert!(
        summary.contains("--secret-env acct_a=HS_SECRETS_A"),
        "{summary}"
    );
    for s in target.secrets.values().flatten() {
        assert!(!summary.contains(s.expose()) && !text(&out).contains(s.expose()));
    }
}

#[test]
fn check_re_reads_stored_files_and_catches_a_lost_row() {
    let dir = tempfile::tempdir().unwrap();
    let o = hookstorm(
        &[
            "run",
            "--scenario-dir",
            &scenario_dir(),
            "--scenario",
            "baseline",
            "--seed",
            "12",
            "--out",
            "out",
        ],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let base = dir.path().join("out/latest/baseline");
    let (history, state) = (base.join("history.jsonl"), base.join("state.json"));
    let o = hookstorm(
        &["check", history.to_str().unwrap(), state.to_str().unwrap()],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("I1 no-loss"), "{}", text(&o));

    // Drop one acknowledged row from the stored state: I1 must fail.
    let mut s: serde_json::Value = serde_json::from_slice(&std::fs::read(&state).unwrap()).unwrap();
    let lost = s["inbox"].as_array_mut().unwrap().remove(0);
    let broken = dir.path().join("broken-state.json");
    std::fs::write(&broken, serde_json::to_vec(&s).unwrap()).unwrap();
    let o = hookstorm(
        &["check", history.to_str().unwrap(), broken.to_str().unwrap()],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let key = lost["key"].as_str().unwrap();
    assert!(
        text(&o).contains(key),
        "the lost key is named: {}",
        text(&o)
    );

    let o = hookstorm(
        &["check", "no-such-history.jsonl", state.to_str().unwrap()],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
}
