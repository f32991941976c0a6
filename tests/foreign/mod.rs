//! Foreign receivers: small standalone servers written the way other teams
//! write them (a blocking thread pool, a connection pool that waits, a
//! durable queue in front of the inbox, a reconciler that gives up on the
//! first 429), none of them the reference receiver. Each stands for a class
//! of real receivers; the tests run the `hookstorm` binary against them
//! exactly as a user would (a target file, `hookstorm run --target`) and
//! assert the verdict: the broken ones are caught by the invariant that
//! names their bug, the correct twins pass on several seeds.

mod acks;
mod gate;
mod github;
mod guide;
mod interop;
mod outage;
mod provider;
mod providers;
mod python;
mod races;
mod redirecting;
mod reserialise;
mod server;
mod shopify;
mod slack;
mod slow;
mod standard;
mod stripe;
mod vendor;

use std::path::{Path, PathBuf};
use std::process::Command;

use hookstorm::check::{InvariantId, Verdict};
use hookstorm::report::RunReport;

pub use server::{http_get, verify_answerline, Reply, Request, Server};

/// The secret every foreign receiver verifies with (acct_a).
pub const SECRET_A: &str = "foreign-secret-a-0123456789";
/// The secret of the second account (acct_b).
pub const SECRET_B: &str = "foreign-secret-b-9876543210";

/// A finished `hookstorm run` against a foreign receiver.
pub struct ForeignRun {
    /// The exit code.
    pub code: i32,
    /// report.json, when the run wrote one.
    pub report: Option<RunReport>,
    /// stdout and stderr, for failure messages.
    pub output: String,
    /// The temp folder holding the target file and the reports.
    pub dir: tempfile::TempDir,
}

impl ForeignRun {
    /// The verdict of one invariant in one scenario.
    pub fn verdict(&self, scenario: &str, id: InvariantId) -> Option<Verdict> {
        crate::common::verdict(self.report.as_ref()?, scenario, id)
    }

    /// A scenario's notes, one per line (empty when it did not run).
    pub fn notes(&self, scenario: &str) -> String {
        self.report
            .iter()
            .flat_map(|r| &r.scenarios)
            .find(|s| s.name == scenario)
            .map(|s| s.said().join("\n"))
            .unwrap_or_default()
    }

    /// The scenario's overall verdict.
    pub fn scenario_verdict(&self, scenario: &str) -> Option<Verdict> {
        let r = self.report.as_ref()?;
        Some(
            r.scenarios
                .iter()
                .find(|s| s.name == scenario)?
                .check
                .verdict(),
        )
    }

    /// Everything that did not pass, plus the console output, for messages.
    pub fn explain(&self) -> String {
        let mut s = self
            .report
            .as_ref()
            .map(|r| crate::common::non_passing(r).join("\n"))
            .unwrap_or_default();
        s.push_str("\n--- output ---\n");
        s.push_str(&self.output);
        s
    }

    /// The reports folder of this run (`<dir>/reports/latest`).
    pub fn reports(&self) -> PathBuf {
        self.dir.path().join("reports").join("latest")
    }
}

/// Writes `target_toml` (the body of a target file; `{dir}` is replaced by
/// the temp folder) and runs `hookstorm run --target` with `args`, the two
/// secrets in the environment as `FOREIGN_SECRET_A` / `FOREIGN_SECRET_B`.
pub fn run_hookstorm(target_toml: &str, args: &[&str]) -> ForeignRun {
    run_hookstorm_with(target_toml, args, &[])
}

/// Like [`run_hookstorm`] with more environment variables.
pub fn run_hookstorm_with(target_toml: &str, args: &[&str], env: &[(&str, &str)]) -> ForeignRun {
    run_hookstorm_holding(target_toml, args, env, &Default::default())
}

/// Like [`run_hookstorm_with`], handing hookstorm `sockets` as descriptors
/// 3, 4, …, which the receiver it starts inherits in turn (the target's
/// start command says `fd:3`): the ports are held, never released and
/// guessed free, for the whole run.
pub fn run_hookstorm_holding(
    target_toml: &str,
    args: &[&str],
    env: &[(&str, &str)],
    sockets: &hookstorm::lifecycle::Sockets,
) -> ForeignRun {
    let (dir, mut cmd) = hookstorm_run(target_toml, args, env);
    hookstorm::lifecycle::inherit_sockets(&mut cmd, sockets).expect("hand over the sockets");
    let out = cmd.output().expect("run hookstorm");
    let report = read_report(&dir.path().join("reports").join("latest"));
    ForeignRun {
        code: out.status.code().unwrap_or(-1),
        report,
        output: format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
        dir,
    }
}

/// Like [`run_hookstorm_with`], calling `on_line` with each line hookstorm
/// writes to stderr as it writes it (to learn an address it bound).
pub fn run_hookstorm_watching(
    target_toml: &str,
    args: &[&str],
    env: &[(&str, &str)],
    mut on_line: impl FnMut(&str) + Send,
) -> ForeignRun {
    use std::io::{BufRead, Read};
    let (dir, mut cmd) = hookstorm_run(target_toml, args, env);
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run hookstorm");
    let mut stdout = child.stdout.take().expect("stdout");
    let stderr = child.stderr.take().expect("stderr");
    let mut out = String::new();
    let mut err = String::new();
    std::thread::scope(|s| {
        s.spawn(|| {
            for line in std::io::BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                on_line(&line);
                err.push_str(&line);
                err.push('\n');
            }
        });
        let _ = stdout.read_to_string(&mut out);
    });
    let status = child.wait().expect("wait for hookstorm");
    let report = read_report(&dir.path().join("reports").join("latest"));
    ForeignRun {
        code: status.code().unwrap_or(-1),
        report,
        output: format!("{out}{err}"),
        dir,
    }
}

/// `hookstorm run` against `target_toml` (written into a fresh folder, its
/// `{dir}` replaced by that folder's path), reporting into that folder, with
/// both foreign secrets and `env` set.
fn hookstorm_run(
    target_toml: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> (tempfile::TempDir, Command) {
    let dir = tempfile::tempdir().expect("tempdir");
    let target = dir.path().join("target.toml");
    std::fs::write(
        &target,
        target_toml.replace("{dir}", &dir.path().display().to_string()),
    )
    .expect("write the target file");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hookstorm"));
    cmd.arg("run")
        .arg("--target")
        .arg(&target)
        .arg("--out")
        .arg(dir.path().join("reports"))
        .args(args)
        .env("FOREIGN_SECRET_A", SECRET_A)
        .env("FOREIGN_SECRET_B", SECRET_B)
        .env("NO_COLOR", "1")
        .envs(env.iter().copied());
    (dir, cmd)
}

fn read_report(dir: &Path) -> Option<RunReport> {
    let text = std::fs::read_to_string(dir.join("report.json")).ok()?;
    serde_json::from_str(&text).ok()
}

/// The `[accounts]` part of a target file with both foreign secrets.
pub const ACCOUNTS: &str = r#"
[accounts.acct_a]
secrets_env = "FOREIGN_SECRET_A"

[accounts.acct_b]
secrets_env = "FOREIGN_SECRET_B"
"#;

/// The secret a foreign receiver checks for the account in the URL.
pub fn secret_for(account: &str) -> Option<&'static [u8]> {
    match account {
        "acct_a" => Some(SECRET_A.as_bytes()),
        "acct_b" => Some(SECRET_B.as_bytes()),
        _ => None,
    }
}
