//! A GitHub Actions runner, as far as hookstorm's action and example
//! workflow use one: inputs and their defaults, `${{ … }}` expressions
//! (`inputs`, `steps.*.outputs`, `github`, `runner`, `secrets`, `env`),
//! `if:` conditions, each step's `run:` script written to a file and run
//! with `bash --noprofile --norc -eo pipefail` as the runner does, with
//! `GITHUB_OUTPUT`, `GITHUB_ENV`, `GITHUB_PATH` and `GITHUB_STEP_SUMMARY`
//! files read back after the step, and a workspace. The `uses:` steps it
//! meets are done the way the actions document: `actions/cache` restores
//! and, at the job's end, saves a folder by key; `actions/upload-artifact`
//! collects the path; `actions/checkout` is the prepared workspace; and
//! `*/hookstorm@*` is this repository's `action.yml`.
//!
//! An expression or action it does not know fails the test: the file a
//! user copies may not use anything this runner does not execute.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_yaml::Value;

/// One job's runner: its folders, environment and what its steps left.
pub struct Runner {
    /// `GITHUB_WORKSPACE`, the steps' working folder.
    pub workspace: PathBuf,
    /// `RUNNER_TEMP`, `RUNNER_TOOL_CACHE` and the files of each step.
    pub home: PathBuf,
    /// Where `actions/cache` keeps its entries (shared between jobs).
    pub cache_store: PathBuf,
    /// Uploaded artifacts, by name.
    pub artifacts: PathBuf,
    /// `secrets.*`.
    pub secrets: BTreeMap<String, String>,
    /// The job's environment, grown by `GITHUB_ENV`.
    pub env: BTreeMap<String, String>,
    /// Folders `GITHUB_PATH` added, newest first.
    pub path: Vec<String>,
    /// Inputs a test forces onto every use of the hookstorm action (the
    /// release download pointed at a local artifact).
    pub action_overrides: BTreeMap<String, String>,
    /// Runs every step inside this network namespace (`ip netns exec`).
    pub netns: Option<String>,
    /// The job summary, every step's appended.
    pub summary: String,
    /// Each step's log, in order.
    pub log: String,
    pending_saves: Vec<(PathBuf, PathBuf)>,
    seq: u32,
}

/// What one action use (or one job) ended with.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Whether every step that ran succeeded.
    pub success: bool,
    /// The action's `outputs`, resolved.
    pub outputs: BTreeMap<String, String>,
    /// Each step's id (or name) and how it ended: success, failure, skipped.
    pub steps: Vec<(String, String)>,
    /// Each step's outputs by id.
    pub step_outputs: BTreeMap<String, BTreeMap<String, String>>,
}

impl Outcome {
    /// How the step `id` ended.
    pub fn step(&self, id: &str) -> Option<&str> {
        self.steps
            .iter()
            .find(|(s, _)| s == id)
            .map(|(_, o)| o.as_str())
    }
}

/// What expressions see.
struct Scope<'a> {
    inputs: &'a BTreeMap<String, String>,
    steps: &'a BTreeMap<String, BTreeMap<String, String>>,
    action_path: &'a Path,
    env: &'a BTreeMap<String, String>,
    secrets: &'a BTreeMap<String, String>,
    failed: bool,
}

impl Scope<'_> {
    fn lookup(&self, expr: &str) -> String {
        let e = expr.trim();
        if let Some(lit) = e.strip_prefix('\'').and_then(|r| r.strip_suffix('\'')) {
            return lit.to_string();
        }
        let parts: Vec<&str> = e.split('.').collect();
        match parts.as_slice() {
            ["inputs", name] => self.inputs.get(*name).cloned().unwrap_or_default(),
            ["steps", id, "outputs", name] => self
                .steps
                .get(*id)
                .and_then(|o| o.get(*name))
                .cloned()
                .unwrap_or_default(),
            ["github", "action_path"] => self.action_path.display().to_string(),
            ["github", "workspace"] => self.env["GITHUB_WORKSPACE"].clone(),
            ["runner", "os"] => "Linux".into(),
            ["runner", "arch"] => "X64".into(),
            ["runner", "temp"] => self.env["RUNNER_TEMP"].clone(),
            ["secrets", name] => self
                .secrets
                .get(*name)
                .unwrap_or_else(|| panic!("secret {name} is not defined"))
                .clone(),
            ["env", name] => self.env.get(*name).cloned().unwrap_or_default(),
            _ => panic!("the runner does not know the expression {expr:?}"),
        }
    }

    /// A `${{ … }}` template.
    fn render(&self, text: &str) -> String {
        let mut out = String::new();
        let mut rest = text;
        while let Some(i) = rest.find("${{") {
            out.push_str(&rest[..i]);
            let end = rest[i..].find("}}").expect("an expression ends with }}") + i;
            out.push_str(&self.lookup(&rest[i + 3..end]));
            rest = &rest[end + 2..];
        }
        out.push_str(rest);
        out
    }

    /// An `if:` condition (default `success()`).
    fn holds(&self, cond: Option<&str>) -> bool {
        let Some(c) = cond else {
            return !self.failed;
        };
        let c = c
            .trim()
            .trim_start_matches("${{")
            .trim_end_matches("}}")
            .trim();
        match c {
            "always()" => true,
            "success()" => !self.failed,
            "failure()" => self.failed,
            _ => {
                let (l, r, eq) = if let Some((l, r)) = c.split_once("!=") {
                    (l, r, false)
                } else if let Some((l, r)) = c.split_once("==") {
                    (l, r, true)
                } else {
                    panic!("the runner does not know the condition {c:?}")
                };
                // A condition without always() runs only while nothing failed.
                !self.failed && ((self.lookup(l) == self.lookup(r)) == eq)
            }
        }
    }
}

/// Reads a `GITHUB_OUTPUT`/`GITHUB_ENV` file: `k=v` and `k<<EOF` blocks.
fn key_values(path: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(l) = lines.next() {
        if let Some((k, delim)) = l.split_once("<<") {
            let mut v = Vec::new();
            for m in lines.by_ref() {
                if m == delim {
                    break;
                }
                v.push(m);
            }
            out.push((k.to_string(), v.join("\n")));
        } else if let Some((k, v)) = l.split_once('=') {
            out.push((k.to_string(), v.to_string()));
        }
    }
    out
}

fn s(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// A mapping's string values.
fn strings(v: &Value) -> BTreeMap<String, String> {
    v.as_mapping()
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((s(k)?, s(v)?)))
        .collect()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    let ok = Command::new("cp")
        .arg("-a")
        .arg(format!("{}/.", from.display()))
        .arg(to)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "cp -a {} {}", from.display(), to.display());
}

impl Runner {
    /// A runner whose folders live under `root`, sharing `cache_store`.
    pub fn new(root: &Path, cache_store: &Path) -> Runner {
        let workspace = root.join("workspace");
        let home = root.join("runner");
        for d in [
            &workspace,
            &home,
            &home.join("tool-cache"),
            &home.join("temp"),
        ] {
            std::fs::create_dir_all(d).unwrap();
        }
        let mut env = BTreeMap::new();
        env.insert("GITHUB_WORKSPACE".into(), workspace.display().to_string());
        env.insert("GITHUB_ACTIONS".into(), "true".into());
        env.insert("CI".into(), "true".into());
        env.insert("RUNNER_OS".into(), "Linux".into());
        env.insert("RUNNER_ARCH".into(), "X64".into());
        env.insert(
            "RUNNER_TEMP".into(),
            home.join("temp").display().to_string(),
        );
        env.insert(
            "RUNNER_TOOL_CACHE".into(),
            home.join("tool-cache").display().to_string(),
        );
        env.insert("HOME".into(), home.display().to_string());
        env.insert("NO_COLOR".into(), "1".into());
        Runner {
            workspace,
            artifacts: root.join("artifacts"),
            home,
            cache_store: cache_store.to_path_buf(),
            secrets: BTreeMap::new(),
            env,
            path: Vec::new(),
            action_overrides: BTreeMap::new(),
            netns: None,
            summary: String::new(),
            log: String::new(),
            pending_saves: Vec::new(),
            seq: 0,
        }
    }

    /// The PATH steps see: `GITHUB_PATH` additions before the machine's
    /// system folders (no cargo, no hookstorm: a fresh runner has neither
    /// unless a step puts it there).
    fn path_var(&self) -> String {
        let mut p = self.path.clone();
        p.extend(
            ["/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin"]
                .iter()
                .map(|s| s.to_string()),
        );
        p.join(":")
    }

    /// Runs one `run:` script as the runner does; returns its exit code and
    /// the outputs it wrote.
    fn run_script(
        &mut self,
        name: &str,
        script: &str,
        step_env: &BTreeMap<String, String>,
    ) -> (i32, BTreeMap<String, String>) {
        self.seq += 1;
        let dir = self.home.join(format!("step-{}", self.seq));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("script.sh");
        std::fs::write(&file, script).unwrap();
        let (out, env_file, path_file, summary) = (
            dir.join("output"),
            dir.join("env"),
            dir.join("path"),
            dir.join("summary"),
        );
        for f in [&out, &env_file, &path_file, &summary] {
            std::fs::write(f, "").unwrap();
        }
        let mut cmd = match &self.netns {
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns, "bash"]);
                c
            }
            None => Command::new("bash"),
        };
        cmd.args(["--noprofile", "--norc", "-eo", "pipefail"])
            .arg(&file)
            .env_clear()
            .envs(&self.env)
            .envs(step_env)
            .env("PATH", self.path_var())
            .env("GITHUB_OUTPUT", &out)
            .env("GITHUB_ENV", &env_file)
            .env("GITHUB_PATH", &path_file)
            .env("GITHUB_STEP_SUMMARY", &summary)
            .current_dir(&self.workspace);
        let o = cmd.output().expect("bash runs");
        let code = o.status.code().unwrap_or(-1);
        self.log.push_str(&format!(
            "== step {name} (exit {code})\n{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ));
        for (k, v) in key_values(&env_file) {
            self.env.insert(k, v);
        }
        for p in std::fs::read_to_string(&path_file)
            .unwrap_or_default()
            .lines()
        {
            if !p.trim().is_empty() {
                self.path.insert(0, p.trim().to_string());
            }
        }
        self.summary
            .push_str(&std::fs::read_to_string(&summary).unwrap_or_default());
        (code, key_values(&out).into_iter().collect())
    }

    /// Does a `uses:` step that is not the hookstorm action.
    fn uses(
        &mut self,
        action: &str,
        with: &BTreeMap<String, String>,
    ) -> (bool, BTreeMap<String, String>) {
        let name = action.split('@').next().unwrap_or(action);
        let mut outputs = BTreeMap::new();
        match name {
            "actions/checkout" => (true, outputs),
            "actions/cache" => {
                let path = PathBuf::from(&with["path"]);
                let entry = self.cache_store.join(with["key"].replace('/', "_"));
                let hit = entry.is_dir();
                if hit {
                    copy_dir(&entry, &path);
                } else {
                    self.pending_saves.push((path, entry));
                }
                self.log
                    .push_str(&format!("== actions/cache {}: hit {hit}\n", with["key"]));
                outputs.insert("cache-hit".into(), hit.to_string());
                (true, outputs)
            }
            "actions/upload-artifact" => {
                let rel = with["path"].trim_end_matches('/');
                let from = self.workspace.join(rel);
                let to = self.artifacts.join(&with["name"]);
                if from.exists() {
                    std::fs::create_dir_all(&to).unwrap();
                    // Links are followed, as the action does.
                    let ok = Command::new("cp")
                        .arg("-rL")
                        .arg(format!("{}/.", from.display()))
                        .arg(&to)
                        .status()
                        .is_ok_and(|s| s.success());
                    (ok, outputs)
                } else {
                    let fail = with.get("if-no-files-found").is_some_and(|v| v == "error");
                    self.log.push_str(&format!(
                        "== upload-artifact: no files at {}\n",
                        from.display()
                    ));
                    (!fail, outputs)
                }
            }
            other => panic!("the runner does not know the action {other:?}"),
        }
    }

    /// Runs the composite action in `action_dir` with `with` as inputs and
    /// `step_env` as the calling step's `env`.
    pub fn run_action(
        &mut self,
        action_dir: &Path,
        with: &BTreeMap<String, String>,
        step_env: &BTreeMap<String, String>,
    ) -> Outcome {
        let text = std::fs::read_to_string(action_dir.join("action.yml")).unwrap();
        let action: Value = serde_yaml::from_str(&text).unwrap();
        assert_eq!(action["runs"]["using"].as_str(), Some("composite"));
        let mut inputs = BTreeMap::new();
        for (k, spec) in action["inputs"].as_mapping().into_iter().flatten() {
            let k = s(k).unwrap();
            let default = s(&spec["default"]).unwrap_or_default();
            inputs.insert(k, default);
        }
        for (k, v) in with.iter().chain(&self.action_overrides) {
            assert!(
                inputs.contains_key(k),
                "the action has no input {k:?}: {:?}",
                inputs.keys()
            );
            inputs.insert(k.clone(), v.clone());
        }
        let mut outcome = Outcome {
            success: true,
            ..Outcome::default()
        };
        let mut failed = false;
        let steps = action["runs"]["steps"].as_sequence().unwrap().clone();
        for (i, step) in steps.iter().enumerate() {
            let id = s(&step["id"])
                .or_else(|| s(&step["name"]))
                .unwrap_or_else(|| format!("step-{i}"));
            let scope = Scope {
                inputs: &inputs,
                steps: &outcome.step_outputs,
                action_path: action_dir,
                env: &self.env,
                secrets: &self.secrets,
                failed,
            };
            if !scope.holds(s(&step["if"]).as_deref()) {
                outcome.steps.push((id, "skipped".into()));
                continue;
            }
            let mut env = step_env.clone();
            for (k, v) in strings(&step["env"]) {
                env.insert(k, scope.render(&v));
            }
            let (ok, outs) = if let Some(run) = s(&step["run"]) {
                assert_eq!(
                    s(&step["shell"]).as_deref(),
                    Some("bash"),
                    "a composite step names its shell"
                );
                let script = scope.render(&run);
                let (code, outs) = self.run_script(&id, &script, &env);
                (code == 0, outs)
            } else {
                let uses = s(&step["uses"]).expect("a step runs or uses");
                let with: BTreeMap<String, String> = strings(&step["with"])
                    .into_iter()
                    .map(|(k, v)| (k, scope.render(&v)))
                    .collect();
                self.uses(&uses, &with)
            };
            failed |= !ok;
            outcome
                .steps
                .push((id.clone(), if ok { "success" } else { "failure" }.into()));
            outcome.step_outputs.insert(id, outs);
        }
        let scope = Scope {
            inputs: &inputs,
            steps: &outcome.step_outputs,
            action_path: action_dir,
            env: &self.env,
            secrets: &self.secrets,
            failed,
        };
        for (k, spec) in action["outputs"].as_mapping().into_iter().flatten() {
            let v = scope.render(&s(&spec["value"]).unwrap_or_default());
            outcome.outputs.insert(s(k).unwrap(), v);
        }
        outcome.success = !failed;
        outcome
    }

    /// Runs the steps of `job` of a workflow file; the hookstorm action is
    /// `action_dir`'s action.yml. Services are the caller's to start.
    pub fn run_job(&mut self, workflow: &Value, job: &str, action_dir: &Path) -> Outcome {
        let job = &workflow["jobs"][job];
        let mut outcome = Outcome {
            success: true,
            ..Outcome::default()
        };
        let mut failed = false;
        for (k, v) in strings(&job["env"]) {
            self.env.insert(k, v);
        }
        for (i, step) in job["steps"].as_sequence().unwrap().iter().enumerate() {
            let id = s(&step["id"])
                .or_else(|| s(&step["name"]))
                .unwrap_or_else(|| format!("step-{i}"));
            let inputs = BTreeMap::new();
            let scope = Scope {
                inputs: &inputs,
                steps: &outcome.step_outputs,
                action_path: action_dir,
                env: &self.env,
                secrets: &self.secrets,
                failed,
            };
            if !scope.holds(s(&step["if"]).as_deref()) {
                outcome.steps.push((id, "skipped".into()));
                continue;
            }
            let env: BTreeMap<String, String> = strings(&step["env"])
                .into_iter()
                .map(|(k, v)| (k, scope.render(&v)))
                .collect();
            let with: BTreeMap<String, String> = strings(&step["with"])
                .into_iter()
                .map(|(k, v)| (k, scope.render(&v)))
                .collect();
            let (ok, outs) = if let Some(run) = s(&step["run"]) {
                let script = scope.render(&run);
                let (code, outs) = self.run_script(&id, &script, &env);
                (code == 0, outs)
            } else {
                let uses = s(&step["uses"]).expect("a step runs or uses");
                let name = uses.split('@').next().unwrap_or("");
                if name.ends_with("/hookstorm") {
                    let o = self.run_action(action_dir, &with, &env);
                    (o.success, o.outputs)
                } else {
                    self.uses(&uses, &with)
                }
            };
            failed |= !ok;
            outcome
                .steps
                .push((id.clone(), if ok { "success" } else { "failure" }.into()));
            outcome.step_outputs.insert(id, outs);
        }
        outcome.success = !failed;
        outcome
    }

    /// The job's end: `actions/cache` saves what it did not restore.
    pub fn finish(&mut self) {
        for (path, entry) in std::mem::take(&mut self.pending_saves) {
            if path.is_dir() && !entry.exists() {
                copy_dir(&path, &entry);
                self.log.push_str(&format!(
                    "== actions/cache post: saved {}\n",
                    entry.display()
                ));
            }
        }
    }
}
