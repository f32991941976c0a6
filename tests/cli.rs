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
fn list_profiles_and_schedule_cover_every_built_in_provider() {
    let dir = tempfile::tempdir().unwrap();
    let o = hookstorm(&["list", "--profiles", "--json"], dir.path());
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let names: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, hookstorm::profile::BUILTIN_NAMES);
    for name in hookstorm::profile::BUILTIN_NAMES {
        let o = hookstorm(&["schedule", "--profile", name, "--json"], dir.path());
        assert_eq!(o.status.code(), Some(0), "{name}: {}", text(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let p = hookstorm::profile::Profile::builtin(name).unwrap();
        assert_eq!(
            v["attempts"].as_array().map(Vec::len),
            Some(p.schedule.max_attempts as usize),
            "{name}"
        );
    }
    // A key-pair profile hands out its public key; an HMAC one has none.
    let key = hookstorm(
        &[
            "sign",
            "--profile",
            "discord",
            "--secret",
            "s",
            "--public-key",
        ],
        dir.path(),
    );
    assert_eq!(key.status.code(), Some(0), "{}", text(&key));
    assert_eq!(String::from_utf8_lossy(&key.stdout).trim().len(), 64);
    let none = hookstorm(
        &[
            "sign",
            "--profile",
            "twilio",
            "--secret",
            "s",
            "--public-key",
        ],
        dir.path(),
    );
    assert_ne!(none.status.code(), Some(0));
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

/// The `hookstorm` binary with `args` in `cwd`, without colour, and
/// without `$HOOKSTORM_SCENARIO_DIR`, so the catalog is found as a user's
/// shell finds it.
fn hookstorm_plain(args: &[&str], cwd: &std::path::Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_hookstorm"))
        .args(args)
        .current_dir(cwd)
        .env("NO_COLOR", "1")
        .env_remove("HOOKSTORM_SCENARIO_DIR")
        .output()
        .expect("hookstorm runs")
}

/// Each kind of flag value that is wrong by itself, before anything is
/// started or sent: exit 254 (usage), the flag named, the secret never.
#[test]
fn a_malformed_flag_value_is_a_usage_error_that_names_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let sd = scenario_dir();
    let url = "http://127.0.0.1:9/webhooks/{account}";
    let state = "http://127.0.0.1:9/state";
    let cases: [(&[&str], &str); 8] = [
        (
            &["--url", "example.com/webhooks", "--state-http", state],
            "--url \"example.com/webhooks\" is not a URL",
        ),
        (
            &["--url", "ftp://127.0.0.1/in", "--state-http", state],
            "expected http:// or https://",
        ),
        (
            &["--url", "http://example.com/in", "--state-http", state],
            "(hint: --allow-insecure to test anyway)",
        ),
        (
            &["--url", url, "--state-http", "127.0.0.1:9/state"],
            "--state-http 127.0.0.1:9/state: expected an http:// or https:// URL",
        ),
        (
            &["--url", url, "--state-sql", "mysql://db/app"],
            "--state-sql mysql://db/app: expected postgres://… or sqlite:///path",
        ),
        (
            &["--url", url, "--state-http", state, "--profile", "strpe"],
            "--profile strpe: no such profile (hint: did you mean stripe?)",
        ),
        (
            &["--url", url, "--state-http", state, "--secret", "acct_b="],
            "--secret acct_b=: no secret",
        ),
        (
            &[
                "--url",
                url,
                "--state-http",
                state,
                "--secret-env",
                "acct_b=",
            ],
            "--secret-env acct_b=: expected ACCOUNT=VAR or VAR",
        ),
    ];
    // bench takes its own --url, checked the same way.
    let o = hookstorm(
        &[
            "bench",
            "--url",
            "example.com/webhooks",
            "--secret-env",
            "HOME",
        ],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(254), "{}", text(&o));
    assert!(
        text(&o).contains("--url \"example.com/webhooks\" is not a URL"),
        "{}",
        text(&o)
    );
    for (flags, says) in cases {
        let mut args = vec!["run", "--scenario-dir", &sd, "--scenario", "baseline"];
        args.extend(["--secret", "s3cr3t-value-one"]);
        args.extend_from_slice(flags);
        let o = hookstorm(&args, dir.path());
        let t = text(&o);
        assert_eq!(o.status.code(), Some(254), "{flags:?}: {t}");
        assert!(t.contains(says), "{flags:?}: expected {says:?} in {t}");
        assert!(!t.contains("s3cr3t-value-one"), "{t}");
    }
}

#[test]
fn a_near_miss_name_is_answered_with_the_name_it_meant() {
    let dir = tempfile::tempdir().unwrap();
    let sd = scenario_dir();
    let cases: [(&[&str], &str); 4] = [
        (
            &["run", "--scenario-dir", &sd, "--scenario", "basline"],
            "error: no scenario \"basline\" (hint: did you mean baseline?)",
        ),
        (
            &["run", "--scenario-dir", &sd, "--skip", "redirct"],
            "error: --skip: no scenario \"redirct\" (hint: did you mean redirect?)",
        ),
        (
            &["run", "--scenario-dir", &sd, "--profile", "strpe"],
            "error: --profile strpe: no such profile (hint: did you mean stripe?)",
        ),
        (
            &[
                "shrink",
                "--scenario",
                "baseline",
                "--seed",
                "1",
                "--invariant",
                "exactly-onse",
            ],
            "(hint: did you mean exactly-once?)",
        ),
    ];
    for (args, says) in cases {
        let o = hookstorm(args, dir.path());
        let t = text(&o);
        assert_eq!(o.status.code(), Some(254), "{args:?}: {t}");
        assert!(t.contains(says), "{args:?}: expected {says:?} in {t}");
    }
}

/// The long flags a `--help` lists.
fn flags_in_help(help: &str) -> std::collections::BTreeSet<String> {
    help.lines()
        .filter_map(|l| {
            l.trim_start()
                .split("--")
                .nth(1)
                .filter(|_| l.trim_start().starts_with('-'))
        })
        .map(|rest| {
            rest.chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect()
        })
        .collect()
}

#[test]
fn doctor_help_lists_only_the_flags_doctor_uses_and_every_defect() {
    let dir = tempfile::tempdir().unwrap();
    let o = hookstorm(&["doctor", "--help"], dir.path());
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let help = String::from_utf8_lossy(&o.stdout).into_owned();
    let want: std::collections::BTreeSet<String> = [
        // global
        "color",
        "quiet",
        "verbose",
        "help",
        // the target
        "target",
        "url",
        "profile",
        "secret",
        "secret-env",
        "state-http",
        "state-token-env",
        "state-sql",
        "state-command",
        "allow-insecure",
        // which scenarios it would run or skip
        "scenario",
        "skip",
        "tag",
        "skip-tag",
        "require-all",
        "scenario-dir",
        // the built-in receiver it starts without a target
        "defect",
        "receiver-db",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    assert_eq!(flags_in_help(&help), want, "{help}");
    // The defects come from the receiver's one table, with what each does wrong.
    for d in hookstorm_receiver::Defect::ALL {
        assert!(
            help.contains(&format!("- {}:", d.name())) && help.contains(d.description()),
            "{d} missing from:\n{help}"
        );
    }
    let o = hookstorm(&["run", "-h"], dir.path());
    let short = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        hookstorm_receiver::Defect::ALL
            .iter()
            .all(|d| short.contains(d.name())),
        "{short}"
    );
}

#[test]
fn a_wrong_state_shape_is_named_once_by_its_path_and_doctor_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let sd = scenario_dir();
    let target = [
        "--scenario-dir",
        &sd,
        "--url",
        "http://127.0.0.1:9/webhooks/{account}",
        "--secret",
        "s3cr3t-value-one",
        "--state-command",
        r#"printf '{"inbox":[{"key":"a","processed":true},{"key":7}]}'"#,
    ];
    let doctor = hookstorm(&[&["doctor"][..], &target].concat(), dir.path());
    let run = hookstorm(
        &[
            &["run", "--scenario", "baseline", "--out", "out"][..],
            &target,
        ]
        .concat(),
        dir.path(),
    );
    for (what, o) in [("doctor", &doctor), ("run", &run)] {
        let t = text(o);
        assert_eq!(o.status.code(), Some(3), "{what}: {t}");
        assert_eq!(
            t.matches("the state's shape is wrong at inbox[1].key: invalid type: integer `7`, expected a string").count(),
            1,
            "{what}: said once, by its path: {t}"
        );
        assert!(
            !t.contains("column") && !t.contains("the receiver's state endpoint?"),
            "{what}: no column, no blame on the source: {t}"
        );
    }
    let left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        left,
        ["out"],
        "doctor wrote nothing, run its reports folder"
    );
}

#[test]
fn a_scenarios_folder_in_the_working_directory_is_named_and_only_read_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let own = dir.path().join("scenarios");
    std::fs::create_dir(&own).unwrap();
    let baseline = std::fs::read_to_string(crate::common::scenario_dir().join("baseline.toml"))
        .unwrap()
        .replace("name = \"baseline\"", "name = \"mine\"");
    std::fs::write(own.join("mine.toml"), baseline).unwrap();

    let o = hookstorm_plain(&["list"], dir.path());
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(
        out.contains("baseline  [") && !out.contains("mine  ["),
        "the shipped catalog: {out}"
    );
    assert!(
        err.contains("note: ./scenarios (1 .toml file(s)) is not read")
            && err.contains("(hint: --scenario-dir scenarios runs the ones in ./scenarios)"),
        "{err}"
    );

    let o = hookstorm_plain(&["list", "--scenario-dir", "scenarios"], dir.path());
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(
        out.contains("mine  [") && out.contains("1 receiver scenario(s)"),
        "{out}"
    );
    assert!(!err.contains("note:"), "{err}");
}

/// A crash point the reference receiver does not know is a configuration
/// error naming the scenario file and the point, before anything starts:
/// not a receiver that refuses to boot, read as a target never reached.
#[test]
fn a_scenario_with_an_unknown_crash_point_is_refused_at_load_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let good =
        std::fs::read_to_string(crate::common::scenario_dir().join("worker-crash.toml")).unwrap();
    let bad = good.replace("crash-in-worker=1/3", "crash-in-wroker=1/3");
    assert_ne!(good, bad, "the scenario names its crash point");
    std::fs::write(dir.path().join("worker-crash.toml"), bad).unwrap();
    let o = hookstorm(
        &["run", "--scenario", "worker-crash.toml", "--out", "out"],
        dir.path(),
    );
    let t = text(&o);
    assert_eq!(o.status.code(), Some(254), "{t}");
    assert!(
        t.contains("worker-crash.toml") && t.contains("unknown crash point `crash-in-wroker`"),
        "{t}"
    );
    assert!(!t.contains("unreachable"), "{t}");
    assert!(
        !dir.path().join("out").exists(),
        "a refused scenario ran: {t}"
    );
}
