//! The real `hookstorm` binary when things go wrong around it: a signal in
//! the middle of `run` or `bench`, an open-loop rate the machine cannot
//! reach, an empty or cut history, a reader that closed its end of the
//! pipe, and a terminal that asked for no colour.
//!
//! Every test drives the built binary as a user would (real processes,
//! real signals, real pipes and a real pseudo-terminal), bounded in time,
//! and prints what it measured (`cargo test --test e2e robust:: -- --nocapture`).

use std::io::{BufRead, BufReader, Read};
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{
    output_text as text, run_binary as hookstorm, scenario_dir_arg as scenario_dir,
};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_hookstorm")
}

/// Starts hookstorm with stderr piped line by line into a channel.
fn spawn_watched(
    args: &[&str],
    cwd: &Path,
    envs: &[(&str, &Path)],
) -> (Child, mpsc::Receiver<String>) {
    let mut cmd = Command::new(bin());
    cmd.args(args)
        .current_dir(cwd)
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("hookstorm starts");
    let err = child.stderr.take().expect("piped");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (child, rx)
}

/// Waits for a stderr line matching `pred`; returns every line seen.
fn wait_for_line(
    rx: &mpsc::Receiver<String>,
    within: Duration,
    pred: impl Fn(&str) -> bool,
) -> (bool, Vec<String>) {
    let end = Instant::now() + within;
    let mut seen = Vec::new();
    while let Some(left) = end.checked_duration_since(Instant::now()) {
        match rx.recv_timeout(left) {
            Ok(l) => {
                let hit = pred(&l);
                seen.push(l);
                if hit {
                    return (true, seen);
                }
            }
            Err(_) => break,
        }
    }
    (false, seen)
}

fn sigint(child: &Child) {
    // SAFETY: kill only sends a signal to the process we started.
    let r = unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    assert_eq!(r, 0, "kill: {}", std::io::Error::last_os_error());
}

/// Waits for the child to exit, at most `within`; kills it on timeout.
fn wait_bounded(mut child: Child, within: Duration) -> (Option<i32>, String, Duration) {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            let mut out = String::new();
            if let Some(mut o) = child.stdout.take() {
                let _ = o.read_to_string(&mut out);
            }
            return (status.code(), out, start.elapsed());
        }
        if start.elapsed() > within {
            let _ = child.kill();
            let _ = child.wait();
            panic!("hookstorm did not exit within {within:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Sends SIGINT and waits for the exit (at most `within`); prints when the
/// signal went (since `started`) and how long the exit took. Returns the
/// exit code and stdout.
fn interrupt(
    child: Child,
    started: Instant,
    within: Duration,
    what: &str,
) -> (Option<i32>, String) {
    let at = started.elapsed();
    sigint(&child);
    let (code, stdout, took) = wait_bounded(child, within);
    eprintln!(
        "{what}: SIGINT after {:.2}s, exit {code:?} {:.2}s later",
        at.as_secs_f64(),
        took.as_secs_f64()
    );
    (code, stdout)
}

/// The built-in receiver's processes are gone with its temporary folders.
fn assert_no_temporary_folders(tmp: &Path) {
    let left: Vec<_> = std::fs::read_dir(tmp)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "temporary folders left behind: {left:?}");
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn sigint_during_run_writes_the_finished_scenarios_marked_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let started = Instant::now();
    // baseline is quick; long-outage-reconcile and manual-redelivery wait for
    // whole compressed retry windows, so the signal lands in the middle.
    let (child, rx) = spawn_watched(
        &[
            "run",
            "--scenario-dir",
            &scenario_dir(),
            "--scenario",
            "baseline",
            "--scenario",
            "long-outage-reconcile",
            "--scenario",
            "manual-redelivery",
            "--seed",
            "11",
            "--out",
            "out",
        ],
        dir.path(),
        &[("TMPDIR", tmp.path())],
    );
    // The second scenario's folder appears once the first one finished and
    // was checked: that is the moment to interrupt, not a guessed delay.
    let second = || -> bool {
        std::fs::read_dir(dir.path().join("out"))
            .map(|d| {
                d.filter_map(Result::ok).any(|e| {
                    e.path()
                        .join("long-outage-reconcile/history.jsonl")
                        .exists()
                })
            })
            .unwrap_or(false)
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    while !second() {
        assert!(
            Instant::now() < deadline,
            "the second scenario never started: {:?}",
            rx.try_iter().collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let what = "run (1 of 3 scenarios finished)";
    let (code, stdout) = interrupt(child, started, Duration::from_secs(30), what);
    let rest: Vec<String> = rx.try_iter().collect();
    assert_eq!(code, Some(130), "{stdout}\n{rest:?}");
    assert!(
        rest.iter().any(|l| l.contains("interrupted")),
        "no interrupted line on stderr: {rest:?}"
    );
    assert!(
        stdout.contains("interrupted: only the 1 scenario above finished"),
        "{stdout}"
    );

    let latest = dir.path().join("out/latest");
    let report = read_json(&latest.join("report.json"));
    assert_eq!(report["interrupted"], true, "{report}");
    assert_eq!(report["exit_code"], 130);
    let names: Vec<&str> = report["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["baseline"]);
    assert_eq!(report["scenarios"][0]["verdict"], "pass", "{report}");
    let summary = std::fs::read_to_string(latest.join("summary.md")).unwrap();
    assert!(
        summary.starts_with("# hookstorm: ✅ pass (interrupted)"),
        "{summary}"
    );
    assert!(summary.contains("**Interrupted**"), "{summary}");
    let junit = std::fs::read_to_string(latest.join("junit.xml")).unwrap();
    assert!(junit.contains("<testsuite name=\"baseline\""), "{junit}");
    assert!(
        junit.contains("name=\"interrupted\" value=\"true\""),
        "{junit}"
    );
    // `latest` names the run folder itself.
    let target = std::fs::read_link(&latest).unwrap();
    assert_eq!(target.to_str(), report["run_id"].as_str());
    // The built-in receiver's processes are gone with its temporary database.
    assert_no_temporary_folders(tmp.path());
}

#[test]
fn an_unreachable_open_loop_rate_ends_with_its_duration_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let o = hookstorm(
        &[
            "bench",
            "--null",
            "--rate",
            "100000000000/s",
            "--duration",
            "2s",
            "--out",
            "out",
        ],
        dir.path(),
    );
    let took = started.elapsed();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let bench = read_json(&dir.path().join("out/latest/bench.json"));
    let history = std::fs::metadata(dir.path().join("out/latest/history.jsonl"))
        .unwrap()
        .len();
    eprintln!(
        "bench --rate 1e11/s --duration 2s: {:.2}s wall, {} requests measured, {:.1} MiB history",
        took.as_secs_f64(),
        bench["requests"],
        history as f64 / (1 << 20) as f64
    );
    assert!(took < Duration::from_secs(10), "took {took:?}");
    let why = bench["rate_unreachable"]
        .as_str()
        .unwrap_or_else(|| panic!("{bench}"));
    assert!(why.contains("100000000000/s asked"), "{why}");
    assert!(text(&o).contains("UNREACHABLE rate"), "{}", text(&o));
    assert!(bench["requests"].as_u64().unwrap() > 0, "{bench}");
}

#[test]
fn a_reachable_rate_is_not_reported_unreachable() {
    let dir = tempfile::tempdir().unwrap();
    let o = hookstorm(
        &[
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
        ],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let bench = read_json(&dir.path().join("out/latest/bench.json"));
    assert!(bench["rate_unreachable"].is_null(), "{bench}");
    assert!(!text(&o).contains("UNREACHABLE"), "{}", text(&o));
}

#[test]
fn zero_counts_and_durations_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["bench", "--null", "--duration", "0s"][..],
        &["bench", "--null", "--connections", "0"][..],
        &["bench", "--null", "--threads", "0"][..],
        &["bench", "--null", "--rate", "10..20/s", "--steps", "1"][..],
        &["bench", "--null", "--duration", "-5s"][..],
        &["bench", "--null", "--rate", "0/s"][..],
    ] {
        let started = Instant::now();
        let o = hookstorm(args, dir.path());
        assert_eq!(o.status.code(), Some(254), "{args:?}: {}", text(&o));
        assert!(started.elapsed() < Duration::from_secs(10), "{args:?}");
        assert!(!text(&o).contains("panicked"), "{args:?}: {}", text(&o));
    }
}

#[test]
fn sigint_during_bench_writes_bench_json_and_removes_the_receivers_folder() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let (child, rx) = spawn_watched(
        &[
            "bench",
            "--duration",
            "60s",
            "--warmup",
            "0s",
            "--connections",
            "4",
            "--out",
            "out",
        ],
        dir.path(),
        &[("TMPDIR", tmp.path())],
    );
    let (up, seen) = wait_for_line(&rx, Duration::from_secs(60), |l| l.starts_with("seed "));
    assert!(up, "bench did not start: {seen:?}");
    // The built-in receiver's database lives in TMPDIR while the bench runs.
    assert!(std::fs::read_dir(tmp.path()).unwrap().next().is_some());
    // Wait until attempts reach the history (written in batches), not a fixed time.
    let history = || -> Option<PathBuf> {
        std::fs::read_dir(dir.path().join("out"))
            .ok()?
            .filter_map(Result::ok)
            .map(|e| e.path().join("history.jsonl"))
            .find(|p| p.exists())
    };
    let header_only = |p: &Path| std::fs::metadata(p).map(|m| m.len() < 1024).unwrap_or(true);
    let deadline = Instant::now() + Duration::from_secs(30);
    while history().as_deref().is_none_or(header_only) {
        assert!(Instant::now() < deadline, "no attempt reached the history");
        std::thread::sleep(Duration::from_millis(50));
    }
    let (code, stdout) = interrupt(child, started, Duration::from_secs(20), "bench (60s)");
    assert_eq!(code, Some(130), "{stdout}");
    let bench = read_json(&dir.path().join("out/latest/bench.json"));
    assert_eq!(bench["interrupted"], true, "{bench}");
    assert!(bench["requests"].as_u64().unwrap() > 0, "{bench}");
    assert!(bench["duration_s"].as_f64().unwrap() < 30.0, "{bench}");
    assert!(bench["check"].is_null());
    assert!(bench["check_skipped"]
        .as_str()
        .unwrap()
        .contains("interrupted"));
    assert_no_temporary_folders(tmp.path());
}

fn write_state(dir: &Path) -> PathBuf {
    let state = dir.join("state.json");
    std::fs::write(&state, r#"{"inbox": []}"#).unwrap();
    state
}

#[test]
fn check_on_an_empty_history_is_unknown_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let history = dir.path().join("history.jsonl");
    std::fs::write(&history, "").unwrap();
    let state = write_state(dir.path());
    let o = hookstorm(
        &["check", history.to_str().unwrap(), state.to_str().unwrap()],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("unknown"), "{out}");
    assert!(out.contains("the history holds no attempt"), "{out}");
    assert!(!out.contains(" pass "), "{out}");
}

/// A real history from a real run of `baseline`, run quietly.
fn baseline_history(dir: &Path) -> (PathBuf, PathBuf) {
    let o = hookstorm(
        &[
            "run",
            "-q",
            "--scenario-dir",
            &scenario_dir(),
            "--scenario",
            "baseline",
            "--seed",
            "5",
            "--out",
            "out",
        ],
        dir,
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // -q: results on stdout, no progress on stderr.
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("[1/1] baseline"), "{err}");
    assert!(String::from_utf8_lossy(&o.stdout).contains("verdict: pass"));
    let run = dir.join("out/latest/baseline");
    (run.join("history.jsonl"), run.join("state.json"))
}

#[test]
fn a_history_cut_mid_line_is_checked_up_to_the_cut_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let (history, state) = baseline_history(dir.path());
    let full = std::fs::read_to_string(&history).unwrap();
    let lines: Vec<&str> = full.lines().collect();
    assert!(lines.len() > 3);
    let last = lines[lines.len() - 1];
    // What a crash leaves: every line but the last, then half of the last.
    let before: String = lines[..lines.len() - 1]
        .iter()
        .map(|l| format!("{l}\n"))
        .collect();
    let cut = dir.path().join("cut.jsonl");
    std::fs::write(&cut, format!("{before}{}", &last[..last.len() / 2])).unwrap();
    let whole = dir.path().join("whole.jsonl");
    std::fs::write(&whole, &before).unwrap();

    let s = state.to_str().unwrap();
    let o_cut = hookstorm(&["check", cut.to_str().unwrap(), s], dir.path());
    let o_whole = hookstorm(&["check", whole.to_str().unwrap(), s], dir.path());
    let err = String::from_utf8_lossy(&o_cut.stderr);
    let n = lines.len();
    assert!(
        err.contains(&format!("warning: {}: line {n} was cut off", cut.display())),
        "{err}"
    );
    // The same verdicts as the history without the cut line, plus the warning.
    assert_eq!(
        o_cut.status.code(),
        o_whole.status.code(),
        "{}",
        text(&o_cut)
    );
    let out_cut = String::from_utf8_lossy(&o_cut.stdout);
    let (warning, rest) = out_cut.split_once('\n').unwrap();
    assert!(
        warning.starts_with("warning: ") && warning.contains("cut off"),
        "{out_cut}"
    );
    assert_eq!(rest, String::from_utf8_lossy(&o_whole.stdout));
    assert!(rest.contains("I1"), "{rest}");

    // -v adds the counts on stderr.
    let o = hookstorm(&["check", "-v", whole.to_str().unwrap(), s], dir.path());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("attempts ("),
        "{}",
        text(&o)
    );
}

/// A pipe whose reader is already gone: every write gets EPIPE.
fn closed_pipe() -> OwnedFd {
    let mut fds = [0; 2];
    // SAFETY: pipe fills two fresh descriptors; each is owned exactly once below.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    unsafe {
        drop(OwnedFd::from_raw_fd(fds[0]));
        OwnedFd::from_raw_fd(fds[1])
    }
}

#[test]
fn writing_into_a_closed_pipe_ends_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let (history, state) = baseline_history(dir.path());
    let scen = scenario_dir();
    let h = history.to_str().unwrap().to_string();
    let s = state.to_str().unwrap().to_string();
    let db = format!("sqlite://{}", dir.path().join("w.db").display());
    let cases: Vec<(Vec<&str>, i32)> = vec![
        (vec!["schedule"], 0),
        (vec!["schedule", "--json"], 0),
        (
            vec![
                "provider",
                "--scenario-dir",
                &scen,
                "--scenario",
                "baseline",
                "--dump",
            ],
            0,
        ),
        // check still reports its verdict through the exit code.
        (vec!["check", &h, &s], 0),
        // Code that prints with println! (the receiver subcommand) ends as a
        // process killed by SIGPIPE is reported: 141, and nothing on stderr.
        (vec!["receiver", "worker", "--db", &db], 141),
    ];
    for (args, code) in cases {
        let started = Instant::now();
        let o = Command::new(bin())
            .args(&args)
            .current_dir(dir.path())
            .stdout(Stdio::from(closed_pipe()))
            .stderr(Stdio::piped())
            .output()
            .expect("runs");
        let err = String::from_utf8_lossy(&o.stderr);
        eprintln!(
            "{args:?} into a closed pipe: exit {:?} in {:.3}s",
            o.status.code(),
            started.elapsed().as_secs_f64()
        );
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(err.is_empty(), "{args:?} said something: {err}");
        assert_eq!(o.status.code(), Some(code), "{args:?}: {err}");
    }
    // And the way people meet it: a shell pipeline into `head -1`.
    for cmd in [
        "\"$0\" schedule | head -1",
        "\"$0\" provider --scenario-dir \"$1\" --scenario baseline --dump | head -1",
    ] {
        let o = Command::new("sh")
            .args(["-c", cmd, bin(), &scen])
            .current_dir(dir.path())
            .output()
            .expect("sh runs");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!err.contains("panicked"), "{cmd}: {err}");
        assert_eq!(
            String::from_utf8_lossy(&o.stdout).lines().count(),
            1,
            "{cmd}"
        );
    }
}

/// Runs hookstorm with stdout on a fresh pseudo-terminal; returns what it printed.
fn on_a_terminal(args: &[&str], cwd: &Path, no_color: Option<&str>) -> String {
    // SAFETY: plain libc calls on descriptors this function owns; the
    // slave name is copied out before the next call.
    let (master, slave) = unsafe {
        let m = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
        assert!(m >= 0, "posix_openpt: {}", std::io::Error::last_os_error());
        assert_eq!(libc::grantpt(m), 0);
        assert_eq!(libc::unlockpt(m), 0);
        let mut name = [0 as libc::c_char; 128];
        assert_eq!(libc::ptsname_r(m, name.as_mut_ptr(), name.len()), 0);
        let path = std::ffi::CStr::from_ptr(name.as_ptr()).to_owned();
        let s = libc::open(path.as_ptr(), libc::O_RDWR | libc::O_NOCTTY);
        assert!(s >= 0, "open slave: {}", std::io::Error::last_os_error());
        (std::fs::File::from_raw_fd(m), OwnedFd::from_raw_fd(s))
    };
    let mut cmd = Command::new(bin());
    cmd.args(args)
        .current_dir(cwd)
        .stdout(Stdio::from(slave))
        .stderr(Stdio::null())
        .env_remove("NO_COLOR");
    if let Some(v) = no_color {
        cmd.env("NO_COLOR", v);
    }
    let mut child = cmd.spawn().expect("runs");
    // Our copy of the slave goes with the command: once the child exits,
    // reading the master ends (EIO) after the last byte it wrote.
    drop(cmd);
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        let mut master = master;
        let mut buf = [0u8; 4096];
        loop {
            match master.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => out.extend_from_slice(&buf[..n]),
            }
        }
        out
    });
    let status = child.wait().expect("waits");
    assert!(status.code().is_some(), "{args:?}: {status}");
    String::from_utf8_lossy(&reader.join().expect("reader")).into_owned()
}

#[test]
fn no_color_and_color_never_print_no_escape_codes_even_on_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let (history, state) = baseline_history(dir.path());
    let (h, s) = (history.to_str().unwrap(), state.to_str().unwrap());
    let esc = |t: &str| t.contains('\u{1b}');
    // On a terminal, colour is on by default: the test can see escapes.
    let plain = on_a_terminal(&["check", h, s], dir.path(), None);
    assert!(plain.contains("I1"), "{plain:?}");
    assert!(esc(&plain), "no colour on a terminal: {plain:?}");
    let no_color = on_a_terminal(&["check", h, s], dir.path(), Some("1"));
    assert!(no_color.contains("I1") && !esc(&no_color), "{no_color:?}");
    let never = on_a_terminal(&["--color", "never", "check", h, s], dir.path(), None);
    assert!(never.contains("I1") && !esc(&never), "{never:?}");
    // Into a pipe: none by default, colour only when asked for.
    let o = hookstorm(&["check", h, s], dir.path());
    assert!(!esc(&text(&o)));
    let o = Command::new(bin())
        .args(["check", "--color", "always", h, s])
        .env_remove("NO_COLOR")
        .output()
        .unwrap();
    assert!(esc(&String::from_utf8_lossy(&o.stdout)));
    // And a whole run with NO_COLOR on a terminal: no escape anywhere.
    let run = on_a_terminal(
        &[
            "run",
            "--scenario-dir",
            &scenario_dir(),
            "--scenario",
            "baseline",
            "--seed",
            "6",
            "--out",
            "out2",
        ],
        dir.path(),
        Some("1"),
    );
    assert!(run.contains("verdict: pass") && !esc(&run), "{run:?}");
}
