//! Sharded runs without a cluster: N `hookstorm bench --shard I/N`
//! processes on loopback against one reference receiver (a process of its
//! own), merged by `hookstorm merge`, give the verdict and counts of one
//! process sending the whole rate; a shard that died or is missing makes
//! the merged verdict unknown; run shards split the scenario list and
//! merge into one report; the Kubernetes and CI manifests parse and carry
//! what an Indexed Job and a matrix need.

use hookstorm_cli::builtin::child::Reservation;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use super::common::{output_text, scenario_dir_arg, TestResult};

/// A reference receiver process on SQLite, with its target file.
pub(crate) struct Receiver {
    child: Child,
    pub(crate) target: PathBuf,
    /// The ports, held for the receiver's life (it binds beside them).
    _ports: [Reservation; 2],
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Receiver {
    /// Where its admin API (the state endpoint) listens.
    pub(crate) fn admin_addr(&self) -> std::net::SocketAddr {
        self._ports[1].addr().expect("a reserved port")
    }
}

pub(crate) fn start_receiver(dir: &Path) -> Result<Receiver, Box<dyn std::error::Error>> {
    let ports = [Reservation::new()?, Reservation::new()?];
    let (web, admin) = (ports[0].addr()?.port(), ports[1].addr()?.port());
    let token = hookstorm_receiver::config::random_token();
    let secret = format!("whsec_{}", hookstorm_receiver::config::random_token());
    let db = dir.join("r.db");
    let child = Command::new(env!("CARGO_BIN_EXE_hookstorm"))
        .args(["receiver", "serve", "--db"])
        .arg(format!("sqlite://{}", db.display()))
        .args(["--listen", &format!("127.0.0.1:{web}")])
        .args(["--admin-listen", &format!("127.0.0.1:{admin}")])
        .arg("--reuse-port")
        .env("HOOKSTORM_ADMIN_TOKEN", &token)
        .env("HOOKSTORM_RECEIVER_ACCOUNTS", format!("acct_a={secret}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let target = dir.join("target.toml");
    std::fs::write(
        &target,
        format!(
            "url = \"http://127.0.0.1:{web}/webhooks/{{account}}\"\n[accounts.acct_a]\nsecrets = [\"{secret}\"]\n[state]\nhttp = \"http://127.0.0.1:{admin}/state\"\ntoken = \"{token}\"\n"
        ),
    )?;
    let r = Receiver {
        child,
        target,
        _ports: ports,
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", web)).is_err()
        || std::net::TcpStream::connect(("127.0.0.1", admin)).is_err()
    {
        if Instant::now() > deadline {
            return Err("the receiver did not listen within 20s".into());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(r)
}

const SEED: &str = "4242";
const RATE: u32 = 300;

/// `hookstorm bench` arguments for an open-loop bench of 2 s at `rate`.
pub(crate) fn bench_args<'a>(target: &'a Path, rate: &'a str, out: &'a str) -> Vec<String> {
    [
        "bench",
        "--target",
        target.to_str().unwrap(),
        "--rate",
        rate,
        "--duration",
        "2s",
        "--warmup",
        "0s",
        "--connections",
        "16",
        "--threads",
        "1",
        // Each slot one request, one delivery: the mix's copies and pairs
        // depend on the seed, and every shard has its own, so the counts of
        // one process and of four would differ by the mix alone.
        "--duplicates",
        "0",
        "--concurrent-duplicates",
        "0",
        "--reorder",
        "0",
        "--drain",
        "20s",
        "--seed",
        SEED,
        "--out",
        out,
        "--json",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

pub(crate) fn hookstorm(args: &[String], cwd: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_hookstorm"));
    c.args(args)
        .current_dir(cwd)
        .env("NO_COLOR", "1")
        .env_remove("JOB_COMPLETION_INDEX")
        .env_remove("HOOKSTORM_SHARD")
        .env_remove("HOOKSTORM_SHARD_INDEX");
    c
}

/// Starts `count` bench shards (those in `only`), all at one start time.
fn spawn_shards(target: &Path, cwd: &Path, count: u32, only: &[u32], duration: &str) -> Vec<Child> {
    let rate = RATE.to_string();
    only.iter()
        .map(|i| {
            let mut args = bench_args(target, &rate, "shards");
            let d = args.iter().position(|a| a == "--duration").unwrap();
            args[d + 1] = duration.to_string();
            args.extend([
                "--shard".into(),
                format!("{i}/{count}"),
                "--start-at".into(),
                "+2s".into(),
            ]);
            hookstorm(&args, cwd)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("hookstorm starts")
        })
        .collect()
}

/// Waits (at most 20 s) until the shard whose folder under `out` ends with
/// `name` has written a `shard.json` that says it is running.
fn wait_until_running(out: &Path, name: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    let running = |p: &Path| {
        std::fs::read(p.join(hookstorm::shard::MANIFEST))
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .is_some_and(|m| m["status"] == "running")
    };
    while Instant::now() < deadline {
        let found = std::fs::read_dir(out)
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .any(|e| e.file_name().to_string_lossy().ends_with(name) && running(&e.path()));
        if found {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("no running {name} under {} within 20 s", out.display());
}

/// Asserts a merge came out unknown, for a reason that says `why`.
fn assert_unknown(o: &Output, merged: &serde_json::Value, why: &str) {
    assert_eq!(
        o.status.code(),
        Some(hookstorm::exit::UNKNOWN),
        "{}",
        output_text(o)
    );
    assert_eq!(merged["verdict"], "unknown", "{merged}");
    let reasons = merged["unknown_because"].to_string();
    assert!(reasons.contains(why), "{reasons}");
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(
        &std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
    )
    .unwrap()
}

pub(crate) fn merge(cwd: &Path, dirs: &[PathBuf], target: &Path) -> (Output, serde_json::Value) {
    let mut args: Vec<String> = vec![
        "merge".into(),
        "--target".into(),
        target.display().to_string(),
    ];
    args.extend([
        "--out".into(),
        "merged".into(),
        "--drain".into(),
        "20s".into(),
        "--json".into(),
    ]);
    args.extend(dirs.iter().map(|d| d.display().to_string()));
    let o = hookstorm(&args, cwd).output().unwrap();
    let v = serde_json::from_slice(&o.stdout).unwrap_or(serde_json::Value::Null);
    (o, v)
}

#[test]
fn four_bench_shards_merged_agree_with_one_process_sending_the_union() -> TestResult {
    // One process at the whole rate, against its own fresh receiver.
    let one = tempfile::tempdir()?;
    let r1 = start_receiver(one.path())?;
    let o = hookstorm(
        &bench_args(&r1.target, &RATE.to_string(), "reports"),
        one.path(),
    )
    .output()?;
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let single: serde_json::Value = serde_json::from_slice(&o.stdout)?;
    drop(r1);

    // Four shards at a quarter each, against another fresh receiver.
    let four = tempfile::tempdir()?;
    let r4 = start_receiver(four.path())?;
    let shards = spawn_shards(&r4.target, four.path(), 4, &[0, 1, 2, 3], "2s");
    for s in shards {
        let o = s.wait_with_output()?;
        assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout)?;
        assert!(v["check"].is_null(), "a shard does not check alone: {v}");
    }
    let (o, merged) = merge(four.path(), &[four.path().join("shards")], &r4.target);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));

    // One verdict, from the checker over the union, and the same counts.
    assert_eq!(merged["verdict"], "pass", "{merged}");
    assert_eq!(single["check"]["verdict"], "pass", "{single}");
    // Open loop at RATE for 2 s: every slot due is sent unless the machine
    // is so loaded that the last one falls past the end; both runs must
    // send (nearly) all, and the checker must see exactly what was sent.
    let due = u64::from(RATE) * 2;
    let sent = |v: &serde_json::Value| v["requests"].as_u64().unwrap_or(0);
    let (one_sent, all_sent) = (sent(&single), sent(&merged["bench"]));
    for n in [one_sent, all_sent] {
        assert!(
            n <= due && n * 100 >= due * 97,
            "{n} of {due}: {single} {merged}"
        );
    }
    let counts = |c: &serde_json::Value, k: &str| c["counts"][k].as_u64();
    assert_eq!(
        counts(&merged["check"], "attempts"),
        Some(all_sent),
        "{merged}"
    );
    assert_eq!(
        counts(&single["check"]["check"], "attempts"),
        Some(one_sent),
        "{single}"
    );
    assert_eq!(
        counts(&merged["check"], "deliveries"),
        Some(all_sent),
        "{merged}"
    );
    assert_eq!(
        counts(&single["check"]["check"], "deliveries"),
        Some(one_sent),
        "{single}"
    );
    assert_eq!(merged["shards"].as_array().map(Vec::len), Some(4));
    let sum: u64 = merged["bench"]["throughput"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(sum, all_sent, "throughput summed per second: {merged}");

    // The merged percentiles are those of the shards' histograms merged
    // bucket by bucket (never averaged), counting every request.
    let mut union = hookstorm::bench::latency::histogram();
    for entry in std::fs::read_dir(four.path().join("shards"))? {
        let entry = entry?;
        // `latest` links to one of them.
        if entry.file_type()?.is_symlink() {
            continue;
        }
        let d = entry.path();
        let data: hookstorm::bench::latency::RecorderData =
            serde_json::from_slice(&std::fs::read(d.join("latency.hdr.json"))?)?;
        union.add(data.corrected.decode()?)?;
    }
    let p = hookstorm::bench::latency::Percentiles::of(&union);
    let lat = &merged["bench"]["latency"];
    assert_eq!(lat["count"].as_u64(), Some(all_sent), "{merged}");
    assert_eq!(lat["p99_ms"].as_f64(), Some(p.p99_ms), "{merged}");
    assert_eq!(lat["p50_ms"].as_f64(), Some(p.p50_ms), "{merged}");
    Ok(())
}

#[test]
fn a_shard_that_died_or_is_missing_makes_the_merged_verdict_unknown() -> TestResult {
    let dir = tempfile::tempdir()?;
    let r = start_receiver(dir.path())?;
    let mut shards = spawn_shards(&r.target, dir.path(), 3, &[0, 1, 2], "3s");
    // Shard 2 dies while its manifest says it is running (SIGKILL: no
    // chance to write anything more).
    wait_until_running(&dir.path().join("shards"), "shard2of3");
    let mut dying = shards.pop().unwrap();
    let killed = dying.kill();
    dying.wait()?;
    killed?;
    for s in shards {
        let o = s.wait_with_output()?;
        assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    }
    let (o, merged) = merge(dir.path(), &[dir.path().join("shards")], &r.target);
    assert_unknown(&o, &merged, "shard 2 never finished");

    // Only shards 0 and 1 given: shard 2 is missing.
    let mut finished: Vec<PathBuf> = std::fs::read_dir(dir.path().join("shards"))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let s = p.display().to_string();
            s.ends_with("shard0of3") || s.ends_with("shard1of3")
        })
        .collect();
    finished.sort();
    assert_eq!(finished.len(), 2, "{finished:?}");
    let (o, merged) = merge(dir.path(), &finished, &r.target);
    assert_unknown(&o, &merged, "shard 2 of 3 is missing");
    assert_eq!(merged["shards"][2]["status"], "missing", "{merged}");

    // A manifest edited after its shard finished is no unfinished shard:
    // the shard writes it whole, so the merge refuses the folder.
    std::fs::write(finished[1].join("shard.json"), b"{\"shard\": \"edited\"")?;
    let (o, _) = merge(dir.path(), &finished, &r.target);
    let text = output_text(&o);
    assert_eq!(o.status.code(), Some(254), "{text}");
    assert!(
        text.contains("not a shard manifest") && text.contains("changed after the shard finished"),
        "{text}"
    );
    Ok(())
}

/// A `hookstorm null-receiver` process verifying `secret`, and its port.
struct NullReceiver(Child, u16);

impl Drop for NullReceiver {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_null_receiver(secret: &str) -> Result<NullReceiver, Box<dyn std::error::Error>> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let child = Command::new(env!("CARGO_BIN_EXE_hookstorm"))
        .args(["null-receiver", "--listen", &format!("127.0.0.1:{port}")])
        .args(["--threads", "1"])
        .env("HOOKSTORM_SECRET", secret)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let r = NullReceiver(child, port);
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if Instant::now() > deadline {
            return Err("the null receiver did not listen within 20s".into());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(r)
}

#[test]
fn null_bench_shards_merge_as_one_null_bench_with_the_check_skipped() -> TestResult {
    let dir = tempfile::tempdir()?;
    let secret = "whsec_null_shards";
    let null = start_null_receiver(secret)?;
    let url = format!("http://127.0.0.1:{}/webhooks/{{account}}", null.1);
    let args = |shard: Option<String>| {
        let mut a: Vec<String> = [
            "bench",
            "--null",
            "--url",
            &url,
            "--secret-env",
            "HOOKSTORM_SECRET",
            "--rate",
            "200/s",
            "--duration",
            "1s",
            "--warmup",
            "0s",
            "--connections",
            "4",
            "--threads",
            "1",
            "--seed",
            "5",
            "--out",
            "shards",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        if let Some(s) = shard {
            a.extend(["--shard".into(), s, "--start-at".into(), "+1s".into()]);
        }
        a
    };
    // One null bench: the check is skipped, exit 0.
    let one = hookstorm(&args(None), dir.path())
        .env("HOOKSTORM_SECRET", secret)
        .arg("--json")
        .output()?;
    assert_eq!(one.status.code(), Some(0), "{}", output_text(&one));
    let one: serde_json::Value = serde_json::from_slice(&one.stdout)?;
    assert!(
        one["check"].is_null() && one["check_skipped"].is_string(),
        "{one}"
    );
    std::fs::remove_dir_all(dir.path().join("shards"))?;

    let shards: Vec<Child> = (0..2)
        .map(|i| {
            hookstorm(&args(Some(format!("{i}/2"))), dir.path())
                .env("HOOKSTORM_SECRET", secret)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("hookstorm starts")
        })
        .collect();
    for s in shards {
        let o = s.wait_with_output()?;
        assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    }
    let merge_with = |extra: &[&str]| -> std::io::Result<(Output, serde_json::Value)> {
        let mut a: Vec<String> = ["merge", "--out", "merged", "--json", "shards"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        a.extend(extra.iter().map(|s| s.to_string()));
        let o = hookstorm(&a, dir.path()).output()?;
        let v = serde_json::from_slice(&o.stdout).unwrap_or(serde_json::Value::Null);
        Ok((o, v))
    };
    // The merge follows the single bench: check skipped, pass, exit 0.
    let (o, merged) = merge_with(&[])?;
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    assert_eq!(merged["verdict"], "pass", "{merged}");
    assert!(
        merged["check_skipped"]
            .as_str()
            .is_some_and(|w| w.contains("null receiver")),
        "{merged}"
    );
    assert_eq!(merged["unknown_because"], serde_json::json!([]), "{merged}");
    assert!(
        merged["bench"]["requests"].as_u64().unwrap_or(0) > 0,
        "{merged}"
    );
    // A threshold over the merged numbers still gates: kept 0, broken 1.
    let (o, _) = merge_with(&["--threshold", "errors<1%"])?;
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let (o, merged) = merge_with(&["--threshold", "rate>1000000/s"])?;
    assert_eq!(o.status.code(), Some(1), "{}", output_text(&o));
    assert_eq!(merged["thresholds"][0]["passed"], false, "{merged}");
    Ok(())
}

#[test]
fn run_shards_split_the_scenarios_and_merge_into_one_report() -> TestResult {
    let dir = tempfile::tempdir()?;
    let names = ["baseline", "sequential-duplicates", "reverse-order"];
    let mut args: Vec<String> = vec![
        "run".into(),
        "--scenario-dir".into(),
        scenario_dir_arg(),
        "--seed".into(),
        "9".into(),
        "--out".into(),
        "shards".into(),
    ];
    for n in names {
        args.extend(["--scenario".into(), n.into()]);
    }
    let mut ran = Vec::new();
    for i in 0..2 {
        let mut a = args.clone();
        a.extend(["--shard".into(), format!("{i}/2")]);
        let o = hookstorm(&a, dir.path()).output()?;
        assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
        ran.push(o);
    }
    let shards = dir.path().join("shards");
    let o = hookstorm(
        &[
            "merge".into(),
            "--out".into(),
            "merged".into(),
            "--json".into(),
            shards.display().to_string(),
        ],
        dir.path(),
    )
    .output()?;
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let merged: serde_json::Value = serde_json::from_slice(&o.stdout)?;
    assert_eq!(merged["verdict"], "pass", "{merged}");
    // Every scenario ran exactly once, shards 0 and 1 taking turns.
    let cov = &merged["coverage"];
    assert_eq!(cov.as_object().map(|m| m.len()), Some(3), "{merged}");
    assert_eq!(cov["baseline"], 0);
    assert_eq!(cov["sequential-duplicates"], 1);
    assert_eq!(cov["reverse-order"], 0);
    // One report folder with the union.
    let report_dir = std::fs::read_dir(dir.path().join("merged"))?
        .next()
        .ok_or("no merged folder")??
        .path();
    let report = json(&report_dir.join("report.json"));
    assert_eq!(report["scenarios"].as_array().map(Vec::len), Some(3));
    assert!(report_dir.join("junit.xml").is_file());
    Ok(())
}

#[test]
fn a_shard_flag_that_gives_no_index_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let o = hookstorm(
        &[
            "bench".into(),
            "--url".into(),
            "http://127.0.0.1:9/x".into(),
            "--shard".into(),
            "4".into(),
        ],
        dir.path(),
    )
    .output()
    .unwrap();
    assert_eq!(
        o.status.code(),
        Some(hookstorm::exit::USAGE),
        "{}",
        output_text(&o)
    );
    assert!(
        output_text(&o).contains("JOB_COMPLETION_INDEX"),
        "{}",
        output_text(&o)
    );
    // The index from Kubernetes' variable is taken.
    let o = hookstorm(
        &[
            "bench".into(),
            "--shard".into(),
            "4".into(),
            "--duration".into(),
            "0s".into(),
        ],
        dir.path(),
    )
    .env("JOB_COMPLETION_INDEX", "9")
    .output()
    .unwrap();
    assert!(
        output_text(&o).contains("expected SHARD"),
        "{}",
        output_text(&o)
    );
}

/// The documents of a YAML file.
fn yaml_docs(path: &Path) -> Vec<serde_yaml::Value> {
    use serde::Deserialize;
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_yaml::Deserializer::from_str(&text)
        .map(|d| {
            serde_yaml::Value::deserialize(d).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        })
        .filter(|v| !v.is_null())
        .collect()
}

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn containers(job: &serde_yaml::Value) -> &Vec<serde_yaml::Value> {
    job["spec"]["template"]["spec"]["containers"]
        .as_sequence()
        .expect("containers")
}

#[test]
fn the_kubernetes_manifests_carry_what_an_indexed_job_needs() {
    let mut kinds = std::collections::BTreeMap::new();
    for f in std::fs::read_dir(repo("deploy/k8s")).unwrap() {
        let p = f.unwrap().path();
        if p.extension().is_some_and(|e| e == "yaml") {
            for d in yaml_docs(&p) {
                let kind = d["kind"]
                    .as_str()
                    .unwrap_or_else(|| panic!("{}: no kind", p.display()));
                kinds
                    .entry(kind.to_string())
                    .or_insert_with(Vec::new)
                    .push(d);
            }
        }
    }
    for k in ["Job", "ConfigMap", "Secret"] {
        assert!(
            kinds.contains_key(k),
            "no {k} in deploy/k8s: {:?}",
            kinds.keys()
        );
    }
    let jobs = &kinds["Job"];
    let first_arg = |j: &serde_yaml::Value| {
        containers(j)[0]["args"]
            .as_sequence()
            .and_then(|a| a.first())
            .and_then(|x| x.as_str())
            .map(str::to_string)
    };
    let shards = jobs
        .iter()
        .find(|j| {
            j["spec"]["completionMode"] == "Indexed" && first_arg(j).as_deref() == Some("bench")
        })
        .expect("an Indexed Job for the shards");
    let spec = &shards["spec"];
    let n = spec["completions"].as_u64().expect("completions");
    assert!(n >= 2);
    assert_eq!(spec["parallelism"].as_u64(), Some(n), "every shard at once");
    let c = &containers(shards)[0];
    let args: Vec<&str> = c["args"]
        .as_sequence()
        .unwrap()
        .iter()
        .filter_map(|a| a.as_str())
        .collect();
    let shard_flag = args.iter().position(|a| *a == "--shard").expect("--shard");
    // The count on the command line is the Job's completions; the index
    // comes from JOB_COMPLETION_INDEX, which Kubernetes sets.
    assert_eq!(args[shard_flag + 1], n.to_string(), "{args:?}");
    // The common start comes from the environment ($HOOKSTORM_START_AT,
    // from a ConfigMap made right before the Job), never a fixed time.
    assert!(!args.contains(&"--start-at"), "{args:?}");
    assert!(
        serde_yaml::to_string(&c["env"])
            .unwrap()
            .contains("HOOKSTORM_START_AT"),
        "{:?}",
        c["env"]
    );
    assert!(args.contains(&"--target"), "{args:?}");
    for r in ["cpu", "memory"] {
        assert!(
            !c["resources"]["requests"][r].is_null(),
            "shard {r} request"
        );
    }
    let mounts = c["volumeMounts"].as_sequence().unwrap();
    assert!(!mounts.is_empty());
    // The target file comes from the ConfigMap, secrets from the Secret.
    let vols = serde_yaml::to_string(&shards["spec"]["template"]["spec"]["volumes"]).unwrap();
    let cm = kinds["ConfigMap"][0]["metadata"]["name"].as_str().unwrap();
    assert!(vols.contains(cm), "{vols}");
    let secret = kinds["Secret"][0]["metadata"]["name"].as_str().unwrap();
    assert!(serde_yaml::to_string(shards).unwrap().contains(secret));
    // The merge step: a Job running hookstorm merge with the target.
    let merge = jobs
        .iter()
        .find(|j| {
            containers(j)[0]["args"]
                .as_sequence()
                .is_some_and(|a| a.first().and_then(|x| x.as_str()) == Some("merge"))
        })
        .expect("a merge Job");
    let margs = serde_yaml::to_string(&containers(merge)[0]["args"]).unwrap();
    assert!(
        margs.contains("--target") && margs.contains("--expect"),
        "{margs}"
    );
    // The check in partitions: an Indexed Job whose partition count is its
    // completions (the index from JOB_COMPLETION_INDEX), reading the state
    // through the target file, writing where the merge looks.
    let check = jobs
        .iter()
        .find(|j| first_arg(j).as_deref() == Some("check"))
        .expect("a check Job");
    assert_eq!(check["spec"]["completionMode"], "Indexed");
    let n = check["spec"]["completions"].as_u64().expect("completions");
    assert_eq!(check["spec"]["parallelism"].as_u64(), Some(n));
    let cargs: Vec<&str> = containers(check)[0]["args"]
        .as_sequence()
        .unwrap()
        .iter()
        .filter_map(|a| a.as_str())
        .collect();
    let at = cargs
        .iter()
        .position(|a| *a == "--partition")
        .expect("--partition");
    assert_eq!(cargs[at + 1], n.to_string(), "{cargs:?}");
    assert!(cargs.contains(&"--target"), "{cargs:?}");
    let out = cargs.iter().position(|a| *a == "--out").expect("--out");
    assert!(cargs[out + 1].starts_with("/reports"), "{cargs:?}");
}

#[test]
fn the_ci_matrix_example_shards_and_merges() {
    let wf = &yaml_docs(&repo("deploy/ci/github-actions-sharded.yml"))[0];
    let jobs = wf["jobs"].as_mapping().expect("jobs");
    let (shard_name, shard) = jobs
        .iter()
        .find(|(_, j)| !j["strategy"]["matrix"].is_null())
        .expect("a matrix job");
    assert_eq!(shard["strategy"]["fail-fast"].as_bool(), Some(false));
    let text = serde_yaml::to_string(shard).unwrap();
    assert!(text.contains("--shard"), "{text}");
    let merge = jobs
        .iter()
        .map(|(_, j)| j)
        .find(|j| {
            serde_yaml::to_string(j)
                .unwrap()
                .contains("hookstorm merge")
        })
        .expect("a merge job");
    let needs = serde_yaml::to_string(&merge["needs"]).unwrap();
    assert!(needs.contains(shard_name.as_str().unwrap()), "{needs}");
    // It runs even when a shard failed, so a failed shard is reported.
    assert!(merge["if"].as_str().unwrap_or("").contains("always()"));
}
