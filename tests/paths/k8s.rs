//! The Kubernetes manifests: valid against the Kubernetes schemas; the
//! target file in the ConfigMap accepted by the real target parser; the
//! documented wait returning on failure as on completion; and the Indexed
//! Job run as Kubernetes would run it, by simulation.
//!
//! The simulation takes everything from the manifests: one process per
//! index with `JOB_COMPLETION_INDEX`, each in the image's root
//! ([`super::image`]) as the pod's `securityContext` user, with the
//! ConfigMap's files at the container's mount paths, the reports volume
//! owned by `fsGroup` as the kubelet leaves it, the Secret's values and the
//! start ConfigMap in the environment, and the container's `args` from the
//! manifest (only the load's size scaled down: rate, duration, warmup,
//! connections, threads). Every shard, the receiver and the merge sit in a
//! network namespace of their own on one bridge, the Service names resolve
//! to the receiver's address, so every request crosses a network. The
//! Job's failure policy is the manifest's: with `backoffLimitPerIndex` a
//! failed index is not retried and the others run on; with a plain
//! `backoffLimit` a failure past it fails the Job and its running pods are
//! terminated, as the Job controller does.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_yaml::Value;

use super::image::{Image, Stage};
use super::netns::Namespaces;
use super::{available, have, is_root, read, repo};
use crate::common::TestResult;

/// The documents of a manifest file.
fn docs(rel: &str) -> Vec<Value> {
    use serde::Deserialize;
    serde_yaml::Deserializer::from_str(&read(rel))
        .map(|d| Value::deserialize(d).unwrap_or_else(|e| panic!("{rel}: {e}")))
        .filter(|v| !v.is_null())
        .collect()
}

fn kind<'a>(all: &'a [Value], kind: &str) -> &'a Value {
    all.iter()
        .find(|d| d["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind}"))
}

fn strings(v: &Value) -> BTreeMap<String, String> {
    v.as_mapping()
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.as_str()?.to_string(), v.as_str()?.to_string())))
        .collect()
}

#[test]
fn the_kubernetes_manifests_validate_against_the_kubernetes_schemas() {
    if !available(
        "kubernetes-validate",
        have("kubernetes-validate"),
        "python3 -m pip install kubernetes-validate",
    ) {
        return;
    }
    let files: Vec<PathBuf> = ["target.yaml", "shards.yaml", "check.yaml", "merge.yaml"]
        .iter()
        .map(|f| repo().join("deploy/k8s").join(f))
        .collect();
    // The newest schemas it carries, and 1.29, the first release with
    // backoffLimitPerIndex on by default.
    for version in [None, Some("1.29.0")] {
        let mut c = Command::new("kubernetes-validate");
        c.arg("--strict");
        if let Some(v) = version {
            c.args(["-k", v]);
        }
        let o = c.args(&files).output().expect("kubernetes-validate runs");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(o.status.success(), "{version:?}: {text}");
        // target.yaml's three resources and one Job per other file.
        assert_eq!(text.matches("passed").count(), 6, "{text}");
    }
    // The validator does refuse what Kubernetes refuses.
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.yaml");
    std::fs::write(
        &bad,
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: x}\nspec:\n  maxFailedIndexes: eight\n  \
         template: {spec: {restartPolicy: Never, containers: [{name: a, image: b}]}}\n",
    )
    .unwrap();
    let o = Command::new("kubernetes-validate")
        .arg("--strict")
        .arg(&bad)
        .output()
        .unwrap();
    assert!(!o.status.success());
}

#[test]
fn the_indexed_job_lets_every_shard_finish_runs_as_the_image_user_and_starts_ahead() {
    let shards = docs("deploy/k8s/shards.yaml");
    let job = kind(&shards, "Job");
    let spec = &job["spec"];
    let n = spec["completions"].as_u64().unwrap();
    assert_eq!(spec["completionMode"], "Indexed");
    // One failed shard must not fail the Job at once and kill the others.
    assert_eq!(spec["backoffLimitPerIndex"].as_u64(), Some(0), "{spec:?}");
    assert_eq!(spec["maxFailedIndexes"].as_u64(), Some(n), "{spec:?}");
    assert!(
        spec["backoffLimit"].is_null(),
        "backoffLimit fails the whole Job"
    );
    let stage = Stage::runtime();
    for file in [
        "deploy/k8s/shards.yaml",
        "deploy/k8s/check.yaml",
        "deploy/k8s/merge.yaml",
    ] {
        let d = docs(file);
        let sc = &kind(&d, "Job")["spec"]["template"]["spec"]["securityContext"];
        assert_eq!(
            sc["runAsUser"].as_u64(),
            Some(u64::from(stage.user.0)),
            "{file}"
        );
        assert_eq!(
            sc["fsGroup"].as_u64(),
            Some(u64::from(stage.user.1)),
            "{file}"
        );
    }
    // No start time fixed in the file (one in the past means nobody resets).
    let text = read("deploy/k8s/shards.yaml");
    let args =
        serde_yaml::to_string(&job["spec"]["template"]["spec"]["containers"][0]["args"]).unwrap();
    assert!(!args.contains("--start-at"), "{args}");
    assert!(text.contains("HOOKSTORM_START_AT"), "{text}");
    let readme = read("deploy/k8s/README.md");
    assert!(readme.contains("kubectl create configmap hookstorm-start"));
    assert!(readme.contains("/reports/merged/<time>-merge-bench-<seed>/merge.json"));
}

#[test]
fn the_configmaps_target_file_passes_the_target_parser() -> TestResult {
    let target = docs("deploy/k8s/target.yaml");
    let toml_text = strings(&kind(&target, "ConfigMap")["data"])["hookstorm.toml"].clone();
    let secret = strings(&kind(&target, "Secret")["stringData"]);
    let mut file: hookstorm::target::TargetFile = toml::from_str(&toml_text)?;
    // The Secret's values where the file names their variables (the pods
    // get them with envFrom).
    for (name, acct) in file.accounts.iter_mut() {
        let var = acct
            .secrets_env
            .take()
            .unwrap_or_else(|| panic!("{name}: secrets_env"));
        let value = secret
            .get(&var)
            .unwrap_or_else(|| panic!("the Secret has no {var}"));
        acct.secrets = vec![hookstorm::profile::signature::Secret::new(value)];
    }
    let var = file.state.token_env.take().expect("token_env");
    file.state.token = Some(secret[&var].clone());
    let t = hookstorm::target::Target::resolve(file, Path::new("hookstorm.toml"))?;
    hookstorm::state::probe::Probe::from_config(&t.state)?;
    assert_eq!(t.accounts().len(), 2);
    Ok(())
}

/// A stand-in for `kubectl` that answers `wait --for=condition=X` for a Job
/// that ends `ending` after a second and never reaches the other condition.
fn fake_kubectl(dir: &Path, ending: &str) -> PathBuf {
    let path = dir.join(format!("kubectl-{ending}"));
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\ncase \"$*\" in\n  *condition={ending}*) sleep 1; exit 0 ;;\n  *) exec sleep 3600 ;;\nesac\n"
        ),
    )
    .unwrap();
    Command::new("chmod").arg("+x").arg(&path).status().unwrap();
    path
}

#[test]
fn the_documented_wait_returns_when_the_job_fails_as_when_it_completes() {
    let readme = read("deploy/k8s/README.md");
    assert!(readme.contains("./wait.sh hookstorm-shards"), "{readme}");
    let dir = tempfile::tempdir().unwrap();
    for (ending, code) in [("failed", 1), ("complete", 0)] {
        let started = Instant::now();
        let o = Command::new("bash")
            .arg(repo().join("deploy/k8s/wait.sh"))
            .args(["hookstorm-shards", "1h"])
            .env("KUBECTL", fake_kubectl(dir.path(), ending))
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(code), "{ending}: {o:?}");
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "{ending}: waited {:?}",
            started.elapsed()
        );
    }
}

/// The reference receiver behind the Service names, in its namespace.
struct Receiver {
    child: Option<Child>,
    ns: String,
    ports: (u16, u16),
    accounts: Vec<String>,
    token: String,
    dir: PathBuf,
    runs: u32,
}

impl Receiver {
    /// Starts it again on an empty database.
    fn restart(&mut self) {
        self.stop();
        self.runs += 1;
        let db = self.dir.join(format!("r{}.db", self.runs));
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.ns])
            .arg(env!("CARGO_BIN_EXE_hookstorm"))
            .args(["receiver", "serve", "--db"])
            .arg(format!("sqlite://{}", db.display()))
            .args(["--listen", &format!("0.0.0.0:{}", self.ports.0)])
            .args(["--admin-listen", &format!("0.0.0.0:{}", self.ports.1)])
            .args(["--admin-token", &self.token]);
        for a in &self.accounts {
            c.args(["--account", a]);
        }
        self.child = Some(
            c.stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("the receiver starts"),
        );
        let deadline = Instant::now() + Duration::from_secs(20);
        while !Command::new("ip")
            .args(["netns", "exec", &self.ns, "curl", "-s", "-o", "/dev/null"])
            .arg(format!("http://127.0.0.1:{}/", self.ports.1))
            .status()
            .is_ok_and(|s| s.success())
        {
            assert!(Instant::now() < deadline, "the receiver did not listen");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.stop();
    }
}

/// How a Job ended, and each pod's exit code by index.
struct JobRun {
    condition: &'static str,
    codes: BTreeMap<u32, Option<i32>>,
}

/// The cluster: the image, the volumes, the namespaces, the receiver.
struct Cluster {
    image: Image,
    _net: Namespaces,
    pods: BTreeMap<String, String>,
    configmaps: BTreeMap<String, BTreeMap<String, String>>,
    secrets: BTreeMap<String, BTreeMap<String, String>>,
    reports: PathBuf,
}

/// The container args of a Job, with the load's size scaled to a test.
fn scaled_args(job: &Value) -> Vec<String> {
    let args: Vec<String> = job["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    let scale: BTreeMap<&str, &str> = [
        ("--rate", "400/s"),
        ("--duration", "2s"),
        ("--warmup", "0s"),
        ("--connections", "4"),
        ("--threads", "1"),
    ]
    .into_iter()
    .collect();
    let mut out = Vec::new();
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        let scaled = scale.get(a.as_str()).copied();
        out.push(a);
        if let Some(v) = scaled {
            it.next();
            out.push(v.to_string());
        }
    }
    out
}

impl Cluster {
    /// The pod environment of `job`'s container: envFrom, env, and what
    /// Kubernetes adds.
    fn env(&self, job: &Value, index: Option<u32>) -> BTreeMap<String, String> {
        let c = &job["spec"]["template"]["spec"]["containers"][0];
        let mut env = BTreeMap::new();
        for from in c["envFrom"].as_sequence().into_iter().flatten() {
            let name = from["secretRef"]["name"].as_str().expect("a secretRef");
            env.extend(self.secrets[name].clone());
        }
        for e in c["env"].as_sequence().into_iter().flatten() {
            let key = e["name"].as_str().unwrap().to_string();
            let value = if let Some(v) = e["value"].as_str() {
                v.to_string()
            } else {
                let r = &e["valueFrom"]["configMapKeyRef"];
                let (cm, k) = (r["name"].as_str().unwrap(), r["key"].as_str().unwrap());
                self.configmaps
                    .get(cm)
                    .and_then(|m| m.get(k))
                    .unwrap_or_else(|| panic!("no ConfigMap {cm} key {k}"))
                    .clone()
            };
            env.insert(key, value);
        }
        if let Some(i) = index {
            env.insert("JOB_COMPLETION_INDEX".into(), i.to_string());
        }
        env.insert("NO_COLOR".into(), "1".into());
        env
    }

    /// The pod's process for `args`, in namespace `ns`, as the pod's user.
    fn pod(&self, job: &Value, ns: &str, index: Option<u32>, args: &[String]) -> Command {
        let sc = &job["spec"]["template"]["spec"]["securityContext"];
        let stage = &self.image.stage;
        let uid = sc["runAsUser"].as_u64().map_or(stage.user.0, |u| u as u32);
        let gid = sc["runAsGroup"].as_u64().map_or(stage.user.1, |g| g as u32);
        let groups: Vec<u32> = sc["fsGroup"]
            .as_u64()
            .map(|g| g as u32)
            .into_iter()
            .collect();
        let inner = self
            .image
            .command((uid, gid), &groups, None, &self.env(job, index), args);
        let mut c = Command::new("ip");
        c.args(["netns", "exec", ns])
            .arg(inner.get_program())
            .args(inner.get_args());
        c
    }

    /// Runs `job` as the Job controller would; `kill` SIGKILLs that index's
    /// pod once its shard says it is running (a node lost, an OOM kill).
    fn run_job(&self, job: &Value, args: &[String], kill: Option<u32>) -> JobRun {
        let spec = &job["spec"];
        let indexed = spec["completionMode"] == "Indexed";
        let n = spec["completions"].as_u64().unwrap_or(1) as u32;
        let per_index = spec["backoffLimitPerIndex"].as_u64();
        let max_failed = spec["maxFailedIndexes"].as_u64().unwrap_or(u64::MAX);
        let backoff_limit = spec["backoffLimit"].as_u64().unwrap_or(6);
        let name = job["metadata"]["name"].as_str().unwrap();
        let mut running: BTreeMap<u32, Child> = BTreeMap::new();
        for i in 0..n {
            let ns = &self.pods[&format!("{name}-{i}")];
            let child = self
                .pod(job, ns, indexed.then_some(i), args)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("the pod starts");
            running.insert(i, child);
        }
        let mut codes = BTreeMap::new();
        let mut killed = false;
        let mut terminated = false;
        let deadline = Instant::now() + Duration::from_secs(120);
        while !running.is_empty() {
            assert!(Instant::now() < deadline, "the Job did not end in 120 s");
            if let (Some(k), false) = (kill, killed) {
                if self.shard_running(k, n) {
                    // The whole pod goes, as a lost node takes it: every
                    // process in its namespace (tini and hookstorm).
                    kill_all(&self.pods[&format!("{name}-{k}")], libc::SIGKILL);
                    killed = true;
                }
            }
            let done: Vec<u32> = running
                .iter_mut()
                .filter_map(|(i, c)| c.try_wait().ok().flatten().map(|_| *i))
                .collect();
            for i in done {
                let mut c = running.remove(&i).unwrap();
                let status = c.wait().unwrap();
                let mut err = String::new();
                use std::io::Read;
                let _ = c.stderr.take().unwrap().read_to_string(&mut err);
                if !status.success() {
                    eprintln!("pod {name}-{i}: {status}: {err}");
                }
                codes.insert(i, status.code());
            }
            let failed = codes.values().filter(|c| **c != Some(0)).count() as u64;
            // The controller's policy: per index, or the Job's backoffLimit.
            let job_failed = match per_index {
                Some(_) => failed > max_failed,
                None => failed > backoff_limit,
            };
            if job_failed && !terminated {
                terminated = true;
                for c in running.values() {
                    // SAFETY: kill has no memory preconditions; the pid is
                    // a pod process this test started.
                    unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let ok = codes.values().all(|c| *c == Some(0));
        JobRun {
            condition: if ok { "Complete" } else { "Failed" },
            codes,
        }
    }

    /// Whether shard `i` of `n` has written a `shard.json` that says running.
    fn shard_running(&self, i: u32, n: u32) -> bool {
        std::fs::read_dir(&self.reports)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .ends_with(&format!("-shard{i}of{n}"))
            })
            .any(|e| {
                std::fs::read(e.path().join("shard.json"))
                    .ok()
                    .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
                    .is_some_and(|m| m["status"] == "running")
            })
    }

    /// The newest merge.json under the reports volume's `merged/`.
    fn merge_json(&self) -> serde_json::Value {
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(self.reports.join("merged"))
            .expect("the merge wrote /reports/merged")
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.join("merge.json").is_file())
            .collect();
        dirs.sort();
        let p = dirs.last().expect("a merge.json").join("merge.json");
        serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
    }

    /// Empties the reports volume and sets a common start `secs` ahead, as
    /// the README's `kubectl create configmap hookstorm-start` does.
    fn next_run(&mut self, secs: u32) {
        for e in std::fs::read_dir(&self.reports).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() && !p.is_symlink() {
                std::fs::remove_dir_all(&p).unwrap();
            } else {
                std::fs::remove_file(&p).unwrap();
            }
        }
        let at = chrono::Utc::now() + chrono::Duration::seconds(i64::from(secs));
        self.configmaps.insert(
            "hookstorm-start".into(),
            BTreeMap::from([(
                "start-at".to_string(),
                at.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
            )]),
        );
    }
}

/// Sends `signal` to every process in the namespace `ns`.
fn kill_all(ns: &str, signal: i32) {
    let o = Command::new("ip")
        .args(["netns", "pids", ns])
        .output()
        .unwrap();
    for pid in String::from_utf8_lossy(&o.stdout).split_whitespace() {
        if let Ok(pid) = pid.parse::<i32>() {
            // SAFETY: kill has no memory preconditions; the pid is a
            // process in a namespace this test made.
            unsafe { libc::kill(pid, signal) };
        }
    }
}

/// The port of a URL (`http://host:8080/…`).
fn port(url: &str) -> u16 {
    let rest = url.split("://").nth(1).unwrap();
    let host = rest.split('/').next().unwrap();
    host.rsplit_once(':').unwrap().1.parse().unwrap()
}

fn host(url: &str) -> String {
    let rest = url.split("://").nth(1).unwrap();
    let host = rest.split('/').next().unwrap();
    host.rsplit_once(':').map_or(host, |(h, _)| h).to_string()
}

#[test]
fn the_indexed_job_run_as_kubernetes_would_names_a_failed_shard_and_judges_the_rest() -> TestResult
{
    if !available(
        "root, debootstrap and ip netns",
        is_root() && have("debootstrap") && have("ip") && have("chroot"),
        "apt-get install debootstrap iproute2; run as root",
    ) {
        return Ok(());
    }
    let started = Instant::now();
    let target = docs("deploy/k8s/target.yaml");
    let shards_job = kind(&docs("deploy/k8s/shards.yaml"), "Job").clone();
    let merge_job = kind(&docs("deploy/k8s/merge.yaml"), "Job").clone();
    let check_job = kind(&docs("deploy/k8s/check.yaml"), "Job").clone();
    let cm = kind(&target, "ConfigMap");
    let secret = kind(&target, "Secret");
    let cm_name = cm["metadata"]["name"].as_str().unwrap().to_string();
    let secret_name = secret["metadata"]["name"].as_str().unwrap().to_string();
    let secret_values = strings(&secret["stringData"]);
    let toml_text = strings(&cm["data"])["hookstorm.toml"].clone();
    let file: hookstorm::target::TargetFile = toml::from_str(&toml_text)?;

    let image = Image::new(&Stage::runtime())?;
    // The volumes at the container's mount paths: the ConfigMap's files
    // read-only, the reports volume as the kubelet leaves it for fsGroup.
    let pod_spec = &shards_job["spec"]["template"]["spec"];
    let volumes: BTreeMap<String, Value> = pod_spec["volumes"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|v| (v["name"].as_str().unwrap().to_string(), v.clone()))
        .collect();
    let mut reports = PathBuf::new();
    for m in pod_spec["containers"][0]["volumeMounts"]
        .as_sequence()
        .unwrap()
    {
        let at = m["mountPath"].as_str().unwrap();
        let vol = &volumes[m["name"].as_str().unwrap()];
        let dir = image.root.join(at.trim_start_matches('/'));
        std::fs::create_dir_all(&dir)?;
        if let Some(name) = vol["configMap"]["name"].as_str() {
            assert_eq!(name, cm_name);
            for (k, v) in strings(&cm["data"]) {
                std::fs::write(dir.join(&k), v)?;
            }
        } else {
            assert!(!vol["persistentVolumeClaim"].is_null());
            let group = pod_spec["securityContext"]["fsGroup"].as_u64();
            let o = Command::new("chown")
                .arg(format!("0:{}", group.unwrap_or(0)))
                .arg(&dir)
                .status()?;
            assert!(o.success());
            let mode = if group.is_some() { "2775" } else { "0755" };
            Command::new("chmod").arg(mode).arg(&dir).status()?;
            reports = dir;
        }
    }
    assert!(reports.is_dir(), "a reports volume");

    // The network: the receiver, each pod and the merge on one bridge; the
    // Service names resolve to the receiver (cluster DNS).
    let mut net = Namespaces::new("k")?;
    let (rns, raddr) = net.add_member("rcv")?;
    let mut hosts = String::from("127.0.0.1 localhost\n");
    for url in [Some(&file.url), file.state.http.as_ref()]
        .into_iter()
        .flatten()
    {
        hosts.push_str(&format!("{raddr} {}\n", host(url)));
    }
    std::fs::write(image.root.join("etc/hosts"), hosts)?;
    let n = shards_job["spec"]["completions"].as_u64().unwrap() as u32;
    let mut pods = BTreeMap::new();
    for i in 0..n {
        pods.insert(
            format!("hookstorm-shards-{i}"),
            net.add_member(&format!("s{i}"))?.0,
        );
    }
    let checks = check_job["spec"]["completions"].as_u64().unwrap() as u32;
    for i in 0..checks {
        pods.insert(
            format!("hookstorm-check-{i}"),
            net.add_member(&format!("c{i}"))?.0,
        );
    }
    pods.insert("hookstorm-merge-0".into(), net.add_member("mrg")?.0);
    pods.insert("single-0".into(), net.add_member("one")?.0);

    let tmp = tempfile::tempdir()?;
    let mut receiver = Receiver {
        child: None,
        ns: rns,
        ports: (
            port(&file.url),
            port(file.state.http.as_deref().expect("[state] http")),
        ),
        accounts: file
            .accounts
            .iter()
            .map(|(name, a)| {
                let var = a.secrets_env.as_deref().unwrap();
                format!("{name}={}", secret_values[var])
            })
            .collect(),
        token: secret_values[file.state.token_env.as_deref().unwrap()].clone(),
        dir: tmp.path().to_path_buf(),
        runs: 0,
    };
    let mut cluster = Cluster {
        image,
        _net: net,
        pods,
        configmaps: BTreeMap::from([(cm_name.clone(), strings(&cm["data"]))]),
        secrets: BTreeMap::from([(secret_name, secret_values.clone())]),
        reports,
    };

    // `hookstorm doctor` on the file the pods read, from a pod, accepts it.
    receiver.restart();
    let doctor = cluster
        .pod(
            &merge_job,
            &cluster.pods["hookstorm-merge-0"],
            None,
            &[
                "doctor".into(),
                "--target".into(),
                "/etc/hookstorm/hookstorm.toml".into(),
            ],
        )
        .output()?;
    assert_eq!(
        doctor.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&doctor.stdout),
        String::from_utf8_lossy(&doctor.stderr)
    );

    let shard_args = scaled_args(&shards_job);
    let merge_args: Vec<String> = merge_job["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();

    // A healthy run: every shard completes, the merge passes.
    receiver.restart();
    cluster.next_run(4);
    let run = cluster.run_job(&shards_job, &shard_args, None);
    assert_eq!(run.condition, "Complete", "{:?}", run.codes);
    let merge = cluster.run_job(&merge_job, &merge_args, None);
    let healthy = cluster.merge_json();
    assert_eq!(merge.codes[&0], Some(0), "{healthy}");
    assert_eq!(healthy["verdict"], "pass", "{healthy}");
    assert_eq!(healthy["shards"].as_array().map(Vec::len), Some(n as usize));
    let sent = healthy["bench"]["requests"].as_u64().unwrap_or(0);
    assert!(sent >= 700, "{healthy}");

    // The check in partitions, one pod each, then the merge joins them:
    // the same verdict and findings as the merge's own check.
    let check_args: Vec<String> = check_job["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    let checked = cluster.run_job(&check_job, &check_args, None);
    assert_eq!(checked.condition, "Complete", "{:?}", checked.codes);
    for i in 0..checks {
        let part = cluster
            .reports
            .join(format!("checked/check-part{i}of{checks}/partition.json"));
        assert!(part.is_file(), "{} was not written", part.display());
    }
    let merge = cluster.run_job(&merge_job, &merge_args, None);
    let joined = cluster.merge_json();
    assert_eq!(merge.codes[&0], Some(0), "{joined}");
    assert_eq!(joined["verdict"], healthy["verdict"], "{joined}");
    assert_eq!(
        joined["check"]["results"], healthy["check"]["results"],
        "{joined}"
    );
    assert_eq!(
        joined["check"]["counts"], healthy["check"]["counts"],
        "{joined}"
    );

    // The same seed on one machine: the same verdict.
    receiver.restart();
    let mut single: Vec<String> = Vec::new();
    let mut it = shard_args.iter();
    while let Some(a) = it.next() {
        if a == "--shard" {
            it.next();
            continue;
        }
        if a == "--out" {
            it.next();
            single.extend(["--out".into(), "/reports/single".into()]);
            continue;
        }
        single.push(a.clone());
    }
    single.push("--json".into());
    let one = cluster
        .pod(&shards_job, &cluster.pods["single-0"], None, &single)
        .output()?;
    let one_json: serde_json::Value = serde_json::from_slice(&one.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&one.stderr)));
    assert_eq!(
        one_json["check"]["verdict"].as_str(),
        healthy["verdict"].as_str(),
        "one machine: {one_json}"
    );

    // One shard lost midway (SIGKILL): the others run to their end, the
    // Job ends Failed, the merge names the shard and still checks the rest.
    receiver.restart();
    cluster.next_run(4);
    let lost = 3;
    let run = cluster.run_job(&shards_job, &shard_args, Some(lost));
    assert_eq!(run.condition, "Failed");
    for (i, code) in &run.codes {
        if *i == lost {
            assert_ne!(*code, Some(0));
        } else {
            assert_eq!(
                *code,
                Some(0),
                "shard {i} was not let finish: {:?}",
                run.codes
            );
        }
    }
    let merge = cluster.run_job(&merge_job, &merge_args, None);
    let m = cluster.merge_json();
    assert_eq!(merge.codes[&0], Some(hookstorm::exit::UNKNOWN), "{m}");
    assert_eq!(m["verdict"], "unknown", "{m}");
    let because = m["unknown_because"].to_string();
    assert!(because.contains(&format!("shard {lost}")), "{because}");
    for (i, s) in m["shards"].as_array().unwrap().iter().enumerate() {
        let want = if i as u32 == lost {
            "running"
        } else {
            "finished"
        };
        assert_eq!(s["status"], want, "{m}");
    }
    assert!(
        m["check"]["results"]
            .as_array()
            .is_some_and(|r| !r.is_empty()),
        "the rest is judged: {m}"
    );
    drop(cluster);
    eprintln!(
        "kubernetes simulation: {:.1}s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
