//! The receivers in `examples/` (Flask, FastAPI, Express, Django), each
//! with the `hookstorm.toml` a team copies beside it, run as a user runs
//! them: the folder copied as it is, only its port changed to a free one
//! (so the four run at once), then `hookstorm run --target hookstorm.toml`
//! with the secrets and the admin token in the environment. Each must pass
//! every scenario of its list, the kill of the receiver included (and the
//! worker's, where it is a process of its own), with nothing skipped.
//!
//! The lists are the delivery basics, duplicates, ordering, a poison event
//! and the kills, to keep the four runs (in parallel) inside a minute (15
//! to 18 s here, Django's the longest: its restarts migrate first); each
//! example's README says what the whole catalog gives it (22 or 23 of 25
//! scenarios pass, the rest skipped for a need the example does not have).
//!
//! The Python examples need the packages of their `requirements.txt`, the
//! Express one the packages of its `package.json`: its own `node_modules`
//! when `npm ci` was run in `examples/express`, else the zoo's
//! (`tests/zoo/node`, which holds the same majors of express and
//! better-sqlite3). `.ci/run` installs them and sets `HOOKSTORM_REQUIRE_ZOO=1`,
//! without which a missing install skips the example with a message.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use hookstorm::check::Verdict;
use hookstorm::report::RunReport;

/// One example folder.
struct Example {
    /// Its folder under `examples/`.
    name: &'static str,
    /// The port its `hookstorm.toml` names.
    port: u16,
    /// A command that exits 0 when its packages are installed, and how to install them.
    installed: fn() -> Result<(), &'static str>,
    /// The scenarios it must pass.
    scenarios: &'static [&'static str],
}

/// What every example passes.
const COMMON: [&str; 7] = [
    "baseline",
    "sequential-duplicates",
    "concurrent-duplicates",
    "bad-signature",
    "reverse-order",
    "poison-event",
    "kill-between-commit-and-ack",
];

/// An example whose worker is a process of its own adds its kill.
const WITH_WORKER: [&str; 8] = [
    "baseline",
    "sequential-duplicates",
    "concurrent-duplicates",
    "bad-signature",
    "reverse-order",
    "poison-event",
    "kill-between-commit-and-ack",
    "worker-crash",
];

const EXAMPLES: &[Example] = &[
    Example {
        name: "flask",
        port: 8000,
        installed: || python_has("flask, gunicorn", "examples/flask/requirements.txt"),
        scenarios: &WITH_WORKER,
    },
    Example {
        name: "fastapi",
        port: 8001,
        installed: || python_has("fastapi, uvicorn", "examples/fastapi/requirements.txt"),
        scenarios: &COMMON,
    },
    Example {
        name: "express",
        port: 8002,
        installed: || {
            let node = Command::new("node")
                .arg("--version")
                .stdout(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if node && node_modules().is_some() {
                Ok(())
            } else {
                Err("node 20 and: cd examples/express && npm ci")
            }
        },
        scenarios: &COMMON,
    },
    Example {
        name: "django",
        port: 8003,
        installed: || python_has("django, gunicorn", "examples/django/requirements.txt"),
        scenarios: &WITH_WORKER,
    },
];

const SECRETS_A: &str = "whsec_example_a_current,whsec_example_a_previous";
const SECRETS_B: &str = "whsec_example_b";
const ADMIN_TOKEN: &str = "example-admin-token";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Whether python3 imports `modules`; the hint names the requirements file.
fn python_has(modules: &str, requirements: &'static str) -> Result<(), &'static str> {
    let ok = Command::new("python3")
        .args(["-c", &format!("import {modules}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        Ok(())
    } else {
        Err(requirements)
    }
}

/// The `node_modules` the Express example runs with: its own, else the zoo's.
fn node_modules() -> Option<PathBuf> {
    [
        root().join("examples/express/node_modules"),
        root().join("tests/zoo/node/node_modules"),
    ]
    .into_iter()
    .find(|m| m.join("express").is_dir() && m.join("better-sqlite3").is_dir())
}

/// Copies `from` into `to` as a user gets it: without installed packages,
/// a database or reports left by a run by hand.
fn copy_example(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create the copy");
    for e in std::fs::read_dir(from).expect("read the example").flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name == "node_modules"
            || name == "__pycache__"
            || name == "reports"
            || name.starts_with("receiver.db")
        {
            continue;
        }
        let path = e.path();
        if path.is_dir() {
            copy_example(&path, &to.join(&name));
        } else {
            std::fs::copy(&path, to.join(&name)).expect("copy a file");
        }
    }
}

/// A port nothing listens on now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// The outcome of one example's run.
struct Outcome {
    name: &'static str,
    code: i32,
    report: Option<RunReport>,
    output: String,
    took: Duration,
}

/// Runs `ex` from a copy of its folder on a free port.
fn run(ex: &Example) -> Outcome {
    let work = tempfile::tempdir().expect("tempdir");
    let dir = work.path().join(ex.name);
    copy_example(&root().join("examples").join(ex.name), &dir);
    if ex.name == "express" {
        let modules = node_modules().expect("checked before");
        std::os::unix::fs::symlink(modules, dir.join("node_modules")).expect("link node_modules");
    }
    let target = dir.join("hookstorm.toml");
    let text = std::fs::read_to_string(&target).expect("the example's hookstorm.toml");
    // The port is in the URL, the state URL, the start command and the
    // ready check: every one moves.
    let (from, port) = (ex.port.to_string(), free_port().to_string());
    assert!(
        text.matches(&from).count() >= 4,
        "examples/{}/hookstorm.toml names port {from} fewer than four times",
        ex.name
    );
    std::fs::write(&target, text.replace(&from, &port)).expect("rewrite the port");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hookstorm"));
    cmd.arg("run")
        .arg("--target")
        .arg(&target)
        .args(["--seed", "1", "--timeout", "120s"])
        .arg("--out")
        .arg(work.path().join("reports"))
        .current_dir(&dir)
        .env("HOOKSTORM_SECRETS_ACCT_A", SECRETS_A)
        .env("HOOKSTORM_SECRETS_ACCT_B", SECRETS_B)
        .env("HOOKSTORM_ADMIN_TOKEN", ADMIN_TOKEN)
        .env("NO_COLOR", "1");
    for s in ex.scenarios {
        cmd.args(["--scenario", s]);
    }
    let started = Instant::now();
    let o = cmd.output().expect("run hookstorm");
    let took = started.elapsed();
    let report = std::fs::read_to_string(work.path().join("reports/latest/report.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok());
    let mut output = crate::common::output_text(&o);
    for log in ["receiver.log", "worker.log"] {
        for f in crate::common::walk(&work.path().join("reports")) {
            if f.file_name().is_some_and(|n| n == log) {
                let text = std::fs::read_to_string(&f).unwrap_or_default();
                let tail: Vec<&str> = text.lines().rev().take(15).collect();
                output.push_str(&format!("\n--- {} (last lines) ---\n", f.display()));
                output.push_str(&tail.into_iter().rev().collect::<Vec<_>>().join("\n"));
            }
        }
    }
    Outcome {
        name: ex.name,
        code: o.status.code().unwrap_or(-1),
        report,
        output,
        took,
    }
}

/// What is wrong with an outcome: a non-zero exit, a scenario of the list
/// skipped or missing, or an invariant that did not pass.
fn wrong(ex: &Example, o: &Outcome) -> Vec<String> {
    let mut out = Vec::new();
    if o.code != 0 {
        out.push(format!("exit {}", o.code));
    }
    let Some(report) = &o.report else {
        out.push("no report.json".into());
        return out;
    };
    for name in ex.scenarios {
        match report.scenarios.iter().find(|s| s.name == *name) {
            None => out.push(format!("{name}: not in the report")),
            Some(s) if s.skipped.is_some() => out.push(format!("{name}: skipped")),
            Some(s) => {
                for r in &s.check.results {
                    if r.verdict != Verdict::Pass {
                        out.push(format!(
                            "{name} {}: {:?}: {} {:?}",
                            r.id,
                            r.verdict,
                            r.summary,
                            r.evidence.first()
                        ));
                    }
                }
            }
        }
    }
    out
}

#[test]
fn every_example_receiver_passes_its_scenarios_as_a_user_runs_it() {
    let require = std::env::var_os("HOOKSTORM_REQUIRE_ZOO").is_some();
    let mut runnable = Vec::new();
    for ex in EXAMPLES {
        match (ex.installed)() {
            Ok(()) => runnable.push(ex),
            Err(hint) => {
                assert!(
                    !require,
                    "examples/{}: HOOKSTORM_REQUIRE_ZOO is set but its packages are not installed ({hint})",
                    ex.name
                );
                eprintln!(
                    "examples/{}: skipped: its packages are not installed ({hint})",
                    ex.name
                );
            }
        }
    }
    let started = Instant::now();
    let outcomes: Vec<Outcome> = std::thread::scope(|s| {
        let handles: Vec<_> = runnable.iter().map(|ex| s.spawn(move || run(ex))).collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("example run"))
            .collect()
    });
    let mut failures = Vec::new();
    for (ex, o) in runnable.iter().zip(&outcomes) {
        let found = wrong(ex, o);
        eprintln!(
            "examples/{:<8} {} scenarios in {:.1}s: {}",
            o.name,
            ex.scenarios.len(),
            o.took.as_secs_f64(),
            if found.is_empty() {
                "all passed".to_string()
            } else {
                found.join("; ")
            }
        );
        if !found.is_empty() {
            failures.push(format!(
                "examples/{}:\n  {}\n{}",
                o.name,
                found.join("\n  "),
                o.output
            ));
        }
    }
    eprintln!(
        "examples: {} run at once in {:.1}s",
        outcomes.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Each example's folder holds what its README says a team copies, its
/// target file names its own port (distinct, so all four run side by side
/// by hand too) and reads the secrets and the token from the environment.
#[test]
fn every_example_folder_has_its_receiver_target_file_and_readme() {
    let mut ports = std::collections::BTreeSet::new();
    for ex in EXAMPLES {
        let dir = root().join("examples").join(ex.name);
        for f in ["hookstorm.toml", "README.md"] {
            assert!(dir.join(f).is_file(), "examples/{}/{f} is missing", ex.name);
        }
        let deps = if ex.name == "express" {
            "package.json"
        } else {
            "requirements.txt"
        };
        assert!(
            dir.join(deps).is_file(),
            "examples/{}/{deps} is missing",
            ex.name
        );
        let target = std::fs::read_to_string(dir.join("hookstorm.toml")).unwrap();
        for needed in [
            "secrets_env = \"HOOKSTORM_SECRETS_ACCT_A\"",
            "secrets_env = \"HOOKSTORM_SECRETS_ACCT_B\"",
            "token_env = \"HOOKSTORM_ADMIN_TOKEN\"",
            "[lifecycle]",
        ] {
            assert!(
                target.contains(needed),
                "examples/{}/hookstorm.toml: no {needed}",
                ex.name
            );
        }
        assert!(ports.insert(ex.port), "port {} used twice", ex.port);
        let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
        assert!(
            readme.contains("hookstorm run --target hookstorm.toml"),
            "examples/{}/README.md does not say how to run it",
            ex.name
        );
    }
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    assert!(
        readme.contains("(examples/)") || readme.contains("(examples/README.md)"),
        "README.md does not link the examples"
    );
}
