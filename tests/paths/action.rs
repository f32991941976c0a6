//! The GitHub Action and the example workflow, executed step by step as a
//! runner does ([`super::runner`]): the binary comes from a release
//! tarball (`deploy/ci/package.sh`, served as a `file://` URL in place of the
//! GitHub release) and then from the cache, never from a build; a green
//! run, a red one and a usage error give the documented outputs; a quoted
//! multi-word argument reaches hookstorm as one word; and
//! `deploy/ci/github-actions.yml` is green on its first run against a
//! receiver shaped like a service container (ports on the runner's
//! loopback, no `[lifecycle]`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::runner::Runner;
use super::{available, bin_dir, is_root, read, repo, words};
use crate::common::{scenario_dir_arg, TestResult};

/// Packs the release tarball from the test's binaries; its `file://` URL.
fn release_artifact(dir: &Path) -> String {
    let o = Command::new("bash")
        .arg(repo().join("deploy/ci/package.sh"))
        .args(["v0.0.0-test", "x86_64-unknown-linux-gnu"])
        .arg(dir)
        .arg(bin_dir())
        .output()
        .expect("bash runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let tarball = String::from_utf8_lossy(&o.stdout).trim().to_string();
    assert!(Path::new(&tarball).is_file(), "{tarball}");
    format!("file://{tarball}")
}

fn with(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn the_action_installs_a_cached_release_binary_and_gates_green_red_and_usage() -> TestResult {
    let root = tempfile::tempdir()?;
    let cache = root.path().join("actions-cache");
    let dist = root.path().join("dist");
    let url = release_artifact(&dist);

    // The reference receiver, read through a state command of two words.
    let rt = tokio::runtime::Runtime::new()?;
    let (receiver, target) = rt.block_on(hookstorm_cli::builtin::start(None, None))?;
    let mut job = Runner::new(&root.path().join("job1"), &cache);
    std::fs::write(
        job.workspace.join("dump.py"),
        "import os, sys, urllib.request\n\
         req = urllib.request.Request(os.environ['STATE_URL'], headers={'Authorization': 'Bearer ' + os.environ['HS_TOKEN']})\n\
         sys.stdout.write(urllib.request.urlopen(req).read().decode())\n",
    )?;
    let env = with(&[
        (
            "HS_SECRET_A",
            &crate::common::secrets_csv(&target.secrets["acct_a"]),
        ),
        ("STATE_URL", target.state.http.as_deref().unwrap()),
        ("HS_TOKEN", target.state.token.as_deref().unwrap()),
    ]);
    let green_args = format!(
        "--url {} --secret-env acct_a=HS_SECRET_A --state-command 'python3 dump.py' \
         --scenario-dir {} --scenario baseline --seed 3",
        target.url,
        scenario_dir_arg()
    );
    let started = Instant::now();
    let green = job.run_action(
        repo(),
        &with(&[("args", &green_args), ("binary-url", &url)]),
        &env,
    );
    let green_time = started.elapsed();
    job.finish();
    assert!(green.success, "{:?}\n{}", green.steps, job.log);
    assert_eq!(green.outputs["installed-from"], "release", "{}", job.log);
    assert_eq!(green.outputs["exit-code"], "0", "{}", job.log);
    assert_eq!(green.outputs["verdict"], "pass", "{}", job.log);
    // The quoted command reached hookstorm as one argument.
    assert!(
        job.log.contains("--state-command python3\\ dump.py"),
        "{}",
        job.log
    );
    assert!(job.summary.contains("baseline"), "{}", job.summary);
    let artifact = job.artifacts.join("hookstorm-report");
    assert!(artifact.join("report.html").is_file(), "{}", job.log);

    // A second job: the binary comes from the cache; the release is gone.
    std::fs::remove_dir_all(&dist)?;
    let mut job2 = Runner::new(&root.path().join("job2"), &cache);
    let started = Instant::now();
    let red = job2.run_action(
        repo(),
        &with(&[
            (
                "args",
                &format!(
                    "--scenario-dir {} --defect check-then-insert --scenario concurrent-duplicates --seed 8",
                    scenario_dir_arg()
                ),
            ),
            ("binary-url", &url),
        ]),
        &BTreeMap::new(),
    );
    let red_time = started.elapsed();
    assert_eq!(red.outputs["installed-from"], "cache", "{}", job2.log);
    assert!(!red.success, "a failed invariant fails the job");
    assert_eq!(red.step("run"), Some("failure"));
    assert_eq!(
        red.step("Upload the report"),
        Some("success"),
        "{:?}",
        red.steps
    );
    assert_eq!(red.outputs["exit-code"], "1", "{}", job2.log);
    assert_eq!(red.outputs["verdict"], "fail");
    assert!(job2.summary.contains("exactly-once"), "{}", job2.summary);
    assert!(job2
        .artifacts
        .join("hookstorm-report/report.html")
        .is_file());

    // A usage error (an unclosed quote): 254, and the summary says why.
    let bad = job2.run_action(
        repo(),
        &with(&[("args", "--scenario 'baseline"), ("binary-url", &url)]),
        &BTreeMap::new(),
    );
    assert_eq!(bad.outputs["exit-code"], "254", "{}", job2.log);
    assert!(!bad.success);
    assert!(job2.log.contains("close every quote"), "{}", job2.log);
    let unknown = job2.run_action(
        repo(),
        &with(&[
            ("args", "--scenario no-such-scenario"),
            ("binary-url", &url),
        ]),
        &BTreeMap::new(),
    );
    assert_eq!(unknown.outputs["exit-code"], "254", "{}", job2.log);
    assert!(job2
        .summary
        .contains("No report was written (exit code 254)"));
    rt.block_on(receiver.shutdown());
    eprintln!(
        "action: first job (release download) {:.1}s, second job (cache) {:.1}s",
        green_time.as_secs_f64(),
        red_time.as_secs_f64()
    );
    Ok(())
}

/// A reference receiver shaped like the workflow's service container: the
/// service's `env` (its secrets and admin token) and `ports`, on the job's
/// loopback.
struct Service(Child);

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_service(
    service: &serde_yaml::Value,
    secrets: &BTreeMap<String, String>,
    netns: &str,
    db: &Path,
) -> Service {
    let render = |v: &str| -> String {
        match v
            .trim()
            .strip_prefix("${{ secrets.")
            .and_then(|r| r.strip_suffix("}}"))
        {
            Some(name) => secrets
                .get(name.trim())
                .unwrap_or_else(|| panic!("secret {name} is not defined"))
                .clone(),
            None => v.to_string(),
        }
    };
    let ports: Vec<u16> = service["ports"]
        .as_sequence()
        .expect("the service publishes its ports")
        .iter()
        .map(|p| {
            p.as_str()
                .and_then(|p| p.split(':').next())
                .and_then(|p| p.parse().ok())
                .expect("HOST:CONTAINER")
        })
        .collect();
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", netns])
        .arg(env!("CARGO_BIN_EXE_hookstorm"))
        .args(["receiver", "serve", "--db"])
        .arg(format!("sqlite://{}", db.display()))
        .args(["--listen", &format!("127.0.0.1:{}", ports[0])])
        .args(["--admin-listen", &format!("127.0.0.1:{}", ports[1])]);
    for (k, v) in service["env"].as_mapping().expect("the service's env") {
        let (k, v) = (k.as_str().unwrap(), render(v.as_str().unwrap()));
        if k == "WEBHOOK_SECRETS" {
            // One secret for the one account of a single-account receiver.
            cmd.args(["--account", &format!("acct_a={v}")]);
        } else if let Some(acct) = k.strip_prefix("WEBHOOK_SECRET_") {
            cmd.args(["--account", &format!("{}={v}", acct.to_ascii_lowercase())]);
        } else if k == "ADMIN_TOKEN" {
            cmd.args(["--admin-token", &v]);
        }
    }
    let child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the receiver starts");
    // The runner waits for the service's health check before the steps.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let up = Command::new("ip")
            .args(["netns", "exec", netns, "curl", "-s", "-o", "/dev/null"])
            .arg(format!("http://127.0.0.1:{}/", ports[1]))
            .status()
            .is_ok_and(|s| s.success());
        if up {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the service never became healthy"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    Service(child)
}

#[test]
fn the_example_workflow_is_green_on_its_first_run_against_a_service_receiver() -> TestResult {
    if !available(
        "root and ip netns (the job's own loopback for the service's fixed ports)",
        is_root() && super::have("ip"),
        "run as root",
    ) {
        return Ok(());
    }
    let text = read("deploy/ci/github-actions.yml");
    let workflow: serde_yaml::Value = serde_yaml::from_str(&text)?;
    let (job_name, job) = workflow["jobs"]
        .as_mapping()
        .and_then(|m| m.iter().next())
        .map(|(k, v)| (k.as_str().unwrap().to_string(), v.clone()))
        .expect("a job");
    let root = tempfile::tempdir()?;
    let mut ns = super::netns::Namespaces::new("hw")?;
    let net = ns.add("job")?;
    let secrets = with(&[
        ("HOOKSTORM_SECRETS_ACCT_A", "whsec_example_a"),
        ("HOOKSTORM_SECRETS_ACCT_B", "whsec_example_b"),
        ("HOOKSTORM_ADMIN_TOKEN", "example-admin-token"),
        // Absent, as GitHub gives an undefined secret: the run is unsigned.
        ("HOOKSTORM_SIGNING_KEY", ""),
    ]);
    let service = job["services"]
        .as_mapping()
        .and_then(|m| m.values().next())
        .expect("the receiver as a service container");
    let _service = start_service(service, &secrets, &net, &root.path().join("r.db"));

    let mut runner = Runner::new(&root.path().join("job"), &root.path().join("cache"));
    runner.secrets = secrets;
    runner.netns = Some(net.clone());
    runner.action_overrides = with(&[("binary-url", &release_artifact(&root.path().join("dist")))]);
    // The repository's hookstorm.toml, written by the command the workflow
    // names, as its author would have.
    let init = text
        .lines()
        .find_map(|l| l.split_once("hookstorm init").map(|(_, rest)| rest))
        .map(|rest| rest.split('`').next().unwrap_or(""))
        .expect("the workflow says how to write hookstorm.toml");
    let o = Command::new(env!("CARGO_BIN_EXE_hookstorm"))
        .arg("init")
        .args(words(init))
        .current_dir(&runner.workspace)
        .output()?;
    assert!(
        o.status.success(),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(runner.workspace.join("hookstorm.toml").is_file());

    let started = Instant::now();
    let outcome = runner.run_job(&workflow, &job_name, repo());
    runner.finish();
    assert!(
        outcome.success,
        "{:?}\n{}\n{}",
        outcome.steps, runner.log, runner.summary
    );
    let hookstorm = outcome
        .step_outputs
        .values()
        .find(|o| o.contains_key("verdict"))
        .expect("the hookstorm step's outputs");
    assert_eq!(hookstorm["exit-code"], "0", "{}", runner.log);
    assert_eq!(hookstorm["installed-from"], "release");
    assert!(runner.summary.contains("skipped"), "{}", runner.summary);
    let artifact: PathBuf = runner.artifacts.join("hookstorm-report");
    assert!(artifact.join("report.html").is_file(), "{}", runner.log);
    eprintln!(
        "example workflow: green in {:.1}s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
