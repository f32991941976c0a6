//! Shared helpers: start the reference receiver, run scenarios with the
//! library, and look verdicts up.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use hookstorm::check::{InvariantId, Verdict};
use hookstorm::lifecycle::shell_quote;
use hookstorm::report::RunReport;
use hookstorm::run::{RunOptions, RunOutcome};
use hookstorm::scenario::Scenario;
use hookstorm::target::Target;
use hookstorm_cli::builtin::{prepare, ChildOptions, ChildTarget};
use hookstorm_receiver::Defect;

pub type TestResult = Result<(), Box<dyn std::error::Error>>;

/// The repository's scenario folder.
pub fn scenario_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios")
}

/// The repository's scenario folder as a command-line argument.
pub fn scenario_dir_arg() -> String {
    scenario_dir().display().to_string()
}

/// Runs the built `hookstorm` binary with `args` in `cwd`, without colour.
pub fn run_binary(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hookstorm"))
        .args(args)
        .current_dir(cwd)
        .env("NO_COLOR", "1")
        .output()
        .expect("hookstorm runs")
}

/// Runs `hookstorm COMMAND ARGS…` for each case and asserts a usage error
/// (exit 254) whose words contain the case's.
pub fn assert_usage_errors(command: &str, cases: &[(&[&str], &str)]) {
    let cwd = tempfile::tempdir().expect("tempdir");
    for (args, says) in cases {
        let o = run_binary(&[&[command][..], args].concat(), cwd.path());
        let text = output_text(&o);
        assert_eq!(
            o.status.code(),
            Some(hookstorm::exit::USAGE),
            "{args:?}: {text}"
        );
        assert!(text.contains(says), "{args:?}: {text}");
    }
}

/// A finished command's stdout followed by its stderr.
pub fn output_text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Loads scenarios by name (when `names` is empty: all but the process
/// scenarios, which need the receiver as a child process; tests/chaos.rs
/// runs those).
pub fn scenarios(names: &[&str]) -> Vec<Scenario> {
    let all = Scenario::load_dir(&scenario_dir()).expect("shipped scenarios load");
    if names.is_empty() {
        return all
            .into_iter()
            .filter(|s| !hookstorm::fault::nemesis::applies(&s.faults))
            .collect();
    }
    names
        .iter()
        .map(|n| {
            all.iter()
                .find(|s| s.name == *n)
                .unwrap_or_else(|| panic!("no scenario {n}"))
                .clone()
        })
        .collect()
}

/// Options for a test run writing into `out`.
pub fn options(seed: u64, out: &Path, strict: bool) -> RunOptions {
    RunOptions {
        seed,
        time_scale: None,
        default_time_scale: 100.0,
        strict,
        out_dir: out.to_path_buf(),
        concurrency: 32,
        // A correct receiver drains in well under a second here; a broken one
        // (poison-blocks-batch) never does, and waits this out.
        drain: Duration::from_secs(6),
        settle: hookstorm::state::probe::DEFAULT_SETTLE,
        reproduce: "hookstorm run".into(),
        // The library-level tests check scenarios; tests/gate.rs checks the preflight.
        preflight: false,
        max_fail: None,
        timeout: None,
        require_all: false,
    }
}

/// Runs scenarios against the built-in receiver (with `defect`, on `db` or a
/// temp SQLite file) and returns the outcome.
pub async fn run_embedded(
    defect: Option<Defect>,
    db: Option<&str>,
    names: &[&str],
    seed: u64,
    strict: bool,
) -> (RunOutcome, tempfile::TempDir) {
    run_embedded_scaled(defect, db, names, seed, strict, None).await
}

/// Like [`run_embedded`] with every scenario's time scale overridden.
pub async fn run_embedded_scaled(
    defect: Option<Defect>,
    db: Option<&str>,
    names: &[&str],
    seed: u64,
    strict: bool,
    time_scale: Option<f64>,
) -> (RunOutcome, tempfile::TempDir) {
    let out = tempfile::tempdir().expect("tempdir");
    let (receiver, target) = hookstorm_cli::builtin::start(defect, db)
        .await
        .expect("receiver starts");
    let mut opts = options(seed, out.path(), strict);
    opts.time_scale = time_scale;
    let outcome = hookstorm::run::run(&target, &scenarios(names), &opts, &mut |_| {})
        .await
        .expect("run completes");
    receiver.shutdown().await;
    (outcome, out)
}

/// The built-in receiver as a child process of the test's `hookstorm`
/// binary (with `defect`, on `db` or SQLite, a fault proxy before Postgres
/// when `proxy`), for the process scenarios.
pub fn child(defect: Option<Defect>, db: Option<String>, proxy: bool) -> ChildTarget {
    let mut o = ChildOptions::new(format!(
        "{} receiver",
        shell_quote(env!("CARGO_BIN_EXE_hookstorm"))
    ));
    o.defect = defect;
    o.db = db;
    o.proxy = proxy;
    prepare(&o).expect("child target")
}

/// Runs `scenarios` against `target` with the library.
pub async fn run_on(
    target: &Target,
    scenarios: &[Scenario],
    seed: u64,
) -> (RunOutcome, tempfile::TempDir) {
    let out = tempfile::tempdir().expect("tempdir");
    let outcome = hookstorm::run::run(
        target,
        scenarios,
        &options(seed, out.path(), false),
        &mut |_| {},
    )
    .await
    .expect("run completes");
    (outcome, out)
}

/// The verdict of one invariant in one scenario.
pub fn verdict(report: &RunReport, scenario: &str, id: InvariantId) -> Option<Verdict> {
    report
        .scenarios
        .iter()
        .find(|s| s.name == scenario)?
        .check
        .results
        .iter()
        .find(|r| r.id == id)
        .map(|r| r.verdict)
}

/// Every (scenario, invariant, verdict) that is not a pass, for messages.
pub fn non_passing(report: &RunReport) -> Vec<String> {
    let mut out = Vec::new();
    for s in &report.scenarios {
        for r in &s.check.results {
            if r.verdict != Verdict::Pass {
                out.push(format!(
                    "{} {} {:?}: {} {:?}",
                    s.name,
                    r.id,
                    r.verdict,
                    r.summary,
                    r.evidence.first()
                ));
            }
        }
    }
    out
}

/// The status of `GET path` on `addr` (with `token` as a bearer token),
/// if an answer head came within `timeout`.
pub fn get_status(
    addr: std::net::SocketAddr,
    path: &str,
    token: Option<&str>,
    timeout: std::time::Duration,
) -> Option<u16> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(timeout)).ok()?;
    let auth = token.map_or(String::new(), |t| format!("authorization: Bearer {t}\r\n"));
    write!(
        s,
        "GET {path} HTTP/1.1\r\nhost: localhost\r\n{auth}connection: close\r\n\r\n"
    )
    .ok()?;
    let mut head = [0u8; 12];
    s.read_exact(&mut head).ok()?;
    std::str::from_utf8(&head[9..12]).ok()?.parse().ok()
}

/// Secrets as a comma-separated list (how an environment variable holds a rotation).
pub fn secrets_csv(secrets: &[hookstorm::profile::signature::Secret]) -> String {
    secrets
        .iter()
        .map(|s| s.expose().to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// Every file below `dir`, at any depth.
pub fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// The signing secrets of `target`, current and retired, as text: what no
/// output file may hold.
pub fn target_secrets(target: &Target) -> Vec<String> {
    let mut secrets: Vec<String> = target
        .secrets
        .values()
        .flatten()
        .map(|s| s.expose().to_string())
        .collect();
    secrets.extend(target.retired.values().map(|s| s.expose().to_string()));
    secrets
}

/// The number before `what` in a report's words (`"7 attempts
/// interrupted"`); a `(s)` in `what` matches the count's singular or
/// plural, as the reports agree it (`"attempt(s) interrupted"`).
pub fn count_before(text: &str, what: &str) -> Option<u64> {
    let forms = [what.replace("(s)", "s"), what.replace("(s)", "")];
    let i = forms.iter().filter_map(|w| text.find(w.as_str())).min()?;
    text[..i]
        .trim_end()
        .rsplit(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

/// Copies every file below `from` (links followed) to the same place below `to`.
pub fn copy_tree(from: &Path, to: &Path) {
    for file in walk(from) {
        let dest = to.join(file.strip_prefix(from).expect("inside"));
        std::fs::create_dir_all(dest.parent().expect("a parent")).expect("a folder");
        std::fs::copy(&file, &dest).expect("a copy");
    }
}

/// Rebuilds a report folder's `SHA256SUMS` over the files it lists, as
/// anyone can with `sha256sum`.
pub fn reseal_by_hand(dir: &Path) -> TestResult {
    let sums = std::fs::read_to_string(dir.join("SHA256SUMS"))?;
    let mut out = String::new();
    for line in sums.lines().filter(|l| !l.is_empty()) {
        let (_, name) = line.split_once("  ").ok_or("a sums line")?;
        let sha = hookstorm::report::seal::sha256_file(&dir.join(name))?;
        out.push_str(&format!("{sha}  {name}\n"));
    }
    std::fs::write(dir.join("SHA256SUMS"), out)?;
    Ok(())
}
