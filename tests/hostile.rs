//! The harness against hostile peers, through the real binary: raw-socket
//! receivers, state endpoints and hooks that answer without end or with a
//! 2 GB body, and files that never end. Each run is measured as the child
//! it is (peak RSS as the child's own `VmHWM`, exit code, wall time) and must stay within
//! the byte budget (`docs/budgets.md`): at most [`HEADROOM`] above what a
//! benign peer costs the same run, a documented exit code, no hang. A state
//! of 2 GB of small rows, each within the row budget, is held up to the
//! held budget, so those runs are held to [`PEAK`] instead.
//!
//! Every peer is on 127.0.0.1 and every run is bounded in time; a run that
//! goes past [`DEADLINE`] is killed and fails its test. The child runs under
//! an address-space limit ([`ADDRESS_SPACE`]), so a regression dies on an
//! allocation instead of taking the machine's memory with it.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use super::common::{scenario_dir_arg, TestResult};

/// What a hostile mode may cost above the benign run of the same command.
const HEADROOM: u64 = 64 << 20;

/// Longest a hostile run may take.
const DEADLINE: Duration = Duration::from_secs(90);

/// The child's address-space limit (virtual memory: threads reserve more
/// than they touch, so this is well above any honest peak).
const ADDRESS_SPACE: u64 = 4 << 30;

/// How a peer misbehaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// A well-behaved peer: 204 to deliveries, an empty state, `{}` to hooks.
    Benign,
    /// Deliveries answered 200 with a body that never ends.
    EndlessAnswer,
    /// The state answered 500 with a 2 GB body.
    StateError,
    /// A 2 GB state document (one endless key).
    StateDocument,
    /// A 2 GB JSON Lines line.
    StateLine,
    /// A 2 GB state document of small rows, each well within the row budget.
    StateRows,
    /// 2 GB of JSON Lines rows, each well within the row budget.
    StateRowLines,
    /// The reset hook answered with a body that never ends.
    EndlessReset,
}

/// A raw-socket peer serving one mode until dropped.
struct Peer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
}

impl Drop for Peer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr); // wakes the accept loop
    }
}

const TWO_GB: u64 = 2 << 30;

impl Peer {
    fn start(mode: Mode) -> std::io::Result<Peer> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let s = s.clone();
                std::thread::spawn(move || {
                    let _ = serve(conn, mode, &s);
                });
            }
        });
        Ok(Peer { addr, stop })
    }
}

/// Reads one request (head and a `content-length` body) and answers it.
fn serve(conn: TcpStream, mode: Mode, stop: &AtomicBool) -> std::io::Result<()> {
    conn.set_read_timeout(Some(Duration::from_secs(10)))?;
    conn.set_write_timeout(Some(Duration::from_secs(5)))?;
    let mut r = BufReader::new(conn.try_clone()?);
    let mut w = conn;
    let mut line = String::new();
    r.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let (method, path) = (
        parts.next().unwrap_or("").to_string(),
        parts.next().unwrap_or("").to_string(),
    );
    let mut length = 0u64;
    loop {
        let mut h = String::new();
        if r.read_line(&mut h)? == 0 || h == "\r\n" {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                length = v.trim().parse().unwrap_or(0);
            }
        }
    }
    std::io::copy(&mut (&mut r).take(length), &mut std::io::sink())?;
    let endless = |w: &mut TcpStream, head: &str, start: &[u8], fill: u8, total: u64| {
        w.write_all(head.as_bytes())?;
        w.write_all(start)?;
        let block = vec![fill; 64 * 1024];
        let mut sent = start.len() as u64;
        while sent < total && !stop.load(Ordering::SeqCst) {
            w.write_all(&block)?;
            sent += block.len() as u64;
        }
        Ok::<_, std::io::Error>(())
    };
    let chunked = |w: &mut TcpStream, status: &str| {
        w.write_all(
            format!("HTTP/1.1 {status}\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n")
                .as_bytes(),
        )?;
        let block = vec![b'x'; 64 * 1024];
        while !stop.load(Ordering::SeqCst) {
            w.write_all(format!("{:x}\r\n", block.len()).as_bytes())?;
            w.write_all(&block)?;
            w.write_all(b"\r\n")?;
        }
        Ok::<_, std::io::Error>(())
    };
    let plain = |w: &mut TcpStream, status: &str, ct: &str, body: &str| {
        w.write_all(
            format!(
                "HTTP/1.1 {status}\r\ncontent-type: {ct}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        )
    };
    match (method.as_str(), path.as_str(), mode) {
        ("POST", p, Mode::EndlessAnswer) if p.starts_with("/webhooks/") => chunked(&mut w, "200 OK"),
        ("POST", p, _) if p.starts_with("/webhooks/") => {
            w.write_all(b"HTTP/1.1 204 No Content\r\nconnection: close\r\n\r\n")
        }
        ("GET", "/state", Mode::StateError) => endless(
            &mut w,
            &format!("HTTP/1.1 500 Internal Server Error\r\ncontent-length: {TWO_GB}\r\nconnection: close\r\n\r\n"),
            b"",
            b'e',
            TWO_GB,
        ),
        ("GET", "/state", Mode::StateDocument) => endless(
            &mut w,
            &format!("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {TWO_GB}\r\nconnection: close\r\n\r\n"),
            br#"{"inbox":[{"key":""#,
            b'a',
            TWO_GB,
        ),
        ("GET", "/state", Mode::StateLine) => endless(
            &mut w,
            &format!("HTTP/1.1 200 OK\r\ncontent-type: application/x-ndjson\r\ncontent-length: {TWO_GB}\r\nconnection: close\r\n\r\n"),
            b"{\"sections\":[\"inbox\"]}\n{\"inbox\":{\"key\":\"",
            b'a',
            TWO_GB,
        ),
        ("GET", "/state", Mode::StateRows) => rows(
            &mut w,
            stop,
            "application/json",
            br#"{"inbox":["#,
            br#"{"key":"tsk_0123456789abcdef","processed":true},"#,
        ),
        ("GET", "/state", Mode::StateRowLines) => rows(
            &mut w,
            stop,
            "application/x-ndjson",
            b"{\"sections\":[\"inbox\"]}\n",
            b"{\"inbox\":{\"key\":\"tsk_0123456789abcdef\",\"processed\":true}}\n",
        ),
        ("GET", "/state", _) => plain(&mut w, "200 OK", "application/json", r#"{"inbox":[]}"#),
        ("POST", "/reset", Mode::EndlessReset) => chunked(&mut w, "200 OK"),
        ("POST", _, _) => plain(&mut w, "200 OK", "application/json", "{}"),
        _ => plain(&mut w, "404 Not Found", "text/plain", "no"),
    }
}

/// Answers 200 with 2 GB of `row` after `start`, each row well within the
/// row budget (a state of small rows), until `stop`.
fn rows(
    w: &mut TcpStream,
    stop: &AtomicBool,
    ct: &str,
    start: &[u8],
    row: &[u8],
) -> std::io::Result<()> {
    w.write_all(
        format!("HTTP/1.1 200 OK\r\ncontent-type: {ct}\r\ncontent-length: {TWO_GB}\r\nconnection: close\r\n\r\n")
            .as_bytes(),
    )?;
    w.write_all(start)?;
    let block = row.repeat(64 * 1024 / row.len());
    let mut sent = start.len() as u64;
    while sent + (block.len() as u64) < TWO_GB && !stop.load(Ordering::SeqCst) {
        w.write_all(&block)?;
        sent += block.len() as u64;
    }
    Ok(())
}

/// What one run of the binary cost.
#[derive(Debug, Clone, Copy)]
struct Cost {
    /// Exit code (`None`: killed by a signal).
    code: Option<i32>,
    /// Peak resident memory, bytes.
    peak: u64,
    wall: Duration,
}

/// The binary under test: the one built with these tests, or
/// `HOOKSTORM_HOSTILE_BIN` (to measure another build, e.g. before a fix).
fn binary() -> PathBuf {
    std::env::var_os("HOOKSTORM_HOSTILE_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_hookstorm")))
}

/// Runs the binary with `args` in `dir` and measures it with `wait4`.
fn measure(args: &[&str], dir: &Path) -> Result<Cost, Box<dyn std::error::Error>> {
    use std::os::unix::process::CommandExt;
    let log = std::fs::File::create(dir.join("hookstorm.log"))?;
    let mut cmd = Command::new(binary());
    cmd.args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env("HOSTILE_SECRET", "whsec_aG9zdGlsZS1wZWVyLXNlY3JldA==")
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    // SAFETY: setrlimit is async-signal-safe and touches no memory of ours.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: ADDRESS_SPACE,
                rlim_max: ADDRESS_SPACE,
            };
            libc::setrlimit(libc::RLIMIT_AS, &lim);
            Ok(())
        });
    }
    let start = Instant::now();
    let child = cmd.spawn()?;
    let pid = child.id() as libc::pid_t;
    // The child's own high-water mark, read while it runs: `ru_maxrss` from
    // `wait4` would also count the test process's pages the fork copied
    // before the exec (this test binary grows as other tests run in it).
    let mut peak = 0u64;
    loop {
        peak = peak.max(vm_hwm(pid).unwrap_or(0));
        let mut status = 0;
        // SAFETY: a zeroed rusage is a valid out-parameter.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: waits for our own child; the pointers are to locals.
        let rc = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if rc == pid {
            let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
            return Ok(Cost {
                code,
                peak,
                wall: start.elapsed(),
            });
        }
        if rc < 0 {
            return Err(std::io::Error::last_os_error().into());
        }
        if start.elapsed() > DEADLINE {
            // SAFETY: signals our own child.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            let log = std::fs::read_to_string(dir.join("hookstorm.log")).unwrap_or_default();
            return Err(format!("no exit within {DEADLINE:?}; its output:\n{log}").into());
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// `VmHWM` of a running process, in bytes (`None` once it has exited).
fn vm_hwm(pid: libc::pid_t) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// `hookstorm run` of `scenario` against a peer in `mode`.
fn run_against(mode: Mode, scenario: &str) -> Result<(Cost, String), Box<dyn std::error::Error>> {
    let peer = Peer::start(mode)?;
    let dir = tempfile::tempdir()?;
    let target = dir.path().join("target.toml");
    std::fs::write(
        &target,
        format!(
            "url = \"http://{a}/webhooks/{{account}}\"\n[accounts.acct_a]\nsecrets_env = \"HOSTILE_SECRET\"\n[state]\nhttp = \"http://{a}/state\"\n",
            a = peer.addr
        ),
    )?;
    let target = target.display().to_string();
    let out = dir.path().join("out").display().to_string();
    let dir_arg = scenario_dir_arg();
    let args = [
        "run",
        "--target",
        &target,
        "--no-preflight",
        "--scenario-dir",
        &dir_arg,
        "--scenario",
        scenario,
        "--out",
        &out,
        "--drain",
        "2s",
        "--settle",
        "1s",
        "--timeout",
        "60s",
        "--seed",
        "7",
    ];
    let cost = measure(&args, dir.path())?;
    let mut log = std::fs::read_to_string(dir.path().join("hookstorm.log"))?;
    // The scenario's notes (a failed reset is one) are in its summary.
    if let Ok(summary) = std::fs::read_to_string(dir.path().join("out/latest/summary.md")) {
        log.push_str(&summary);
    }
    drop(peer);
    Ok((cost, log))
}

/// The benign run of `scenario`, measured once per test binary.
fn benign(scenario: &'static str) -> Cost {
    static REDIRECT: OnceLock<Cost> = OnceLock::new();
    static BASELINE: OnceLock<Cost> = OnceLock::new();
    let cell = if scenario == "redirect" {
        &REDIRECT
    } else {
        &BASELINE
    };
    *cell.get_or_init(|| run_against(Mode::Benign, scenario).expect("benign run").0)
}

/// Runs `mode` against `scenario` and checks its cost against the benign run.
fn bounded(mode: Mode, scenario: &'static str, codes: &[i32], says: &str) -> TestResult {
    let base = benign(scenario);
    let (cost, log) = run_against(mode, scenario)?;
    eprintln!(
        "hostile {mode:?} ({scenario}): exit {:?}, peak {} MiB (benign {} MiB), {:.1}s",
        cost.code,
        cost.peak >> 20,
        base.peak >> 20,
        cost.wall.as_secs_f64()
    );
    assert!(
        cost.code.is_some_and(|c| codes.contains(&c)),
        "{mode:?}: exit {:?}, expected one of {codes:?}; output:\n{log}",
        cost.code
    );
    assert!(
        cost.peak <= base.peak + HEADROOM,
        "{mode:?}: peak RSS {} MiB, benign {} MiB + {} MiB headroom",
        cost.peak >> 20,
        base.peak >> 20,
        HEADROOM >> 20
    );
    assert!(
        log.contains(says),
        "{mode:?}: the output does not say {says:?}:\n{log}"
    );
    Ok(())
}

#[test]
fn an_endless_answer_through_the_fault_front_costs_the_budget_not_the_body() -> TestResult {
    // The redirect scenario forwards half its deliveries through the front.
    bounded(Mode::EndlessAnswer, "redirect", &[0, 1, 2], "redirect")
}

#[test]
fn a_state_error_with_a_2gb_body_is_unknown_not_a_buffer() -> TestResult {
    bounded(Mode::StateError, "baseline", &[2, 3], "answered 500")
}

#[test]
fn a_2gb_state_document_stops_at_the_row_budget() -> TestResult {
    bounded(
        Mode::StateDocument,
        "baseline",
        &[2, 3],
        "a state row longer than",
    )
}

#[test]
fn a_2gb_json_lines_line_stops_at_the_row_budget() -> TestResult {
    bounded(
        Mode::StateLine,
        "baseline",
        &[2, 3],
        "a state row longer than",
    )
}

/// The most any hostile run may cost, whatever a benign one does.
const PEAK: u64 = 256 << 20;

/// Runs `mode` against the baseline and checks its cost against [`PEAK`].
fn within_peak(mode: Mode, says: &str) -> TestResult {
    let (cost, log) = run_against(mode, "baseline")?;
    eprintln!(
        "hostile {mode:?}: exit {:?}, peak {} MiB, {:.1}s",
        cost.code,
        cost.peak >> 20,
        cost.wall.as_secs_f64()
    );
    assert!(
        cost.code.is_some_and(|c| [2, 3].contains(&c)),
        "{mode:?}: exit {:?}; output:\n{log}",
        cost.code
    );
    assert!(
        cost.peak < PEAK,
        "{mode:?}: peak RSS {} MiB, over {} MiB",
        cost.peak >> 20,
        PEAK >> 20
    );
    assert!(
        log.contains(says),
        "{mode:?}: the output does not say {says:?}:\n{log}"
    );
    Ok(())
}

#[test]
fn a_2gb_state_of_small_rows_stops_at_the_held_budget() -> TestResult {
    within_peak(Mode::StateRows, "take more than 64 MiB once held")
}

#[test]
fn a_2gb_json_lines_state_of_small_rows_stops_at_the_held_budget() -> TestResult {
    within_peak(Mode::StateRowLines, "take more than 64 MiB once held")
}

#[test]
fn an_endless_reset_answer_stops_at_the_hook_budget() -> TestResult {
    // A failed reset is a note, and the run goes on: the empty state fails it.
    bounded(Mode::EndlessReset, "baseline", &[1], "exceeded 64 KiB")
}

#[test]
fn an_endless_answer_without_a_front_costs_the_budget_not_the_body() -> TestResult {
    bounded(Mode::EndlessAnswer, "baseline", &[1, 2], "verdict")
}

/// `hookstorm check` of a history that is one endless line.
#[test]
fn a_history_without_newlines_is_refused_at_the_line_budget() -> TestResult {
    let dir = tempfile::tempdir()?;
    let state = dir.path().join("state.json");
    std::fs::write(&state, r#"{"inbox":[]}"#)?;
    let cost = measure(
        &["check", "/dev/zero", &state.display().to_string()],
        dir.path(),
    )?;
    let log = std::fs::read_to_string(dir.path().join("hookstorm.log"))?;
    eprintln!(
        "hostile check /dev/zero: exit {:?}, peak {} MiB, {:.1}s",
        cost.code,
        cost.peak >> 20,
        cost.wall.as_secs_f64()
    );
    assert_eq!(cost.code, Some(2), "{log}");
    assert!(cost.peak < HEADROOM, "peak {} MiB", cost.peak >> 20);
    assert!(
        log.contains("line 1") && log.contains("longer than"),
        "{log}"
    );
    Ok(())
}

/// `hookstorm check` of a history against a STATE of `/dev/zero` (an
/// endless device) and of a 2 GB regular file that is not a state: each
/// is refused naming the file, read at most to its budget.
#[test]
fn an_endless_or_2gb_state_for_check_is_refused_naming_the_file() -> TestResult {
    let dir = tempfile::tempdir()?;
    let history = dir.path().join("history.jsonl");
    std::fs::write(
        &history,
        concat!(
            r#"{"type":"attempt","scenario":"s","delivery":"whd_1","key":"tsk_1","account":"acct_a","attempt":1,"sent_at":"2026-11-30T18:09:59.739Z","status":204,"outcome":"ok","intent":"genuine"}"#,
            "\n"
        ),
    )?;
    let big = dir.path().join("big.json");
    // Sparse: 2 GB of zero bytes that take no disk.
    std::fs::File::create(&big)?.set_len(TWO_GB)?;
    for (state, says) in [
        (PathBuf::from("/dev/zero"), "not a regular file"),
        (big, "longer than 32 MiB"),
    ] {
        let cost = measure(
            &[
                "check",
                &history.display().to_string(),
                &state.display().to_string(),
            ],
            dir.path(),
        )?;
        let log = std::fs::read_to_string(dir.path().join("hookstorm.log"))?;
        eprintln!(
            "hostile check H {}: exit {:?}, peak {} MiB, {:.1}s",
            state.display(),
            cost.code,
            cost.peak >> 20,
            cost.wall.as_secs_f64()
        );
        assert!(
            matches!(cost.code, Some(2 | 3)),
            "{}: {log}",
            state.display()
        );
        assert!(
            cost.peak < HEADROOM,
            "{}: peak {} MiB",
            state.display(),
            cost.peak >> 20
        );
        assert!(
            log.contains(&state.display().to_string()) && log.contains(says),
            "{}: {log}",
            state.display()
        );
    }
    Ok(())
}

/// A `ca_cert` that is a device is refused at once, read not at all.
#[test]
fn a_device_as_ca_cert_is_refused_without_reading_it() -> TestResult {
    for device in ["/dev/zero", "/dev/urandom"] {
        let dir = tempfile::tempdir()?;
        let target = dir.path().join("target.toml");
        std::fs::write(
            &target,
            format!(
                "url = \"https://127.0.0.1:9/webhooks/{{account}}\"\nca_cert = \"{device}\"\n[accounts.acct_a]\nsecrets_env = \"HOSTILE_SECRET\"\n[state]\nhttp = \"http://127.0.0.1:9/state\"\n"
            ),
        )?;
        let cost = measure(
            &["doctor", "--target", &target.display().to_string()],
            dir.path(),
        )?;
        let log = std::fs::read_to_string(dir.path().join("hookstorm.log"))?;
        assert_eq!(cost.code, Some(3), "{device}: {log}");
        assert!(
            cost.peak < HEADROOM,
            "{device}: peak {} MiB",
            cost.peak >> 20
        );
        assert!(
            cost.wall < Duration::from_secs(10),
            "{device}: {:?}",
            cost.wall
        );
        assert!(log.contains("not a regular file"), "{device}: {log}");
    }
    Ok(())
}

/// The pids whose parent is `pid`, from /proc.
fn children_of(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(p) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
            continue;
        };
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        if f.get(1).and_then(|s| s.parse::<u32>().ok()) == Some(pid) && f[0] != "Z" {
            out.push(p);
        }
    }
    out
}

/// Whether process `pid` still runs (not a zombie).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            !s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(false)
}

#[test]
fn a_sigkilled_harness_leaves_no_receiver_behind() -> TestResult {
    let dir = tempfile::tempdir()?;
    let out = dir.path().join("out").display().to_string();
    let dir_arg = scenario_dir_arg();
    let mut child = Command::new(binary())
        .args([
            "run",
            "--scenario-dir",
            &dir_arg,
            "--scenario",
            "kill-under-load",
            "--out",
            &out,
        ])
        .current_dir(dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()?;
    // Wait for the receiver (the harness's child process) to start.
    let start = Instant::now();
    let mut receivers = Vec::new();
    while receivers.is_empty() && start.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(100));
        receivers = children_of(child.id());
    }
    assert!(!receivers.is_empty(), "the receiver never started");
    child.kill()?; // SIGKILL: no cleanup code of the harness runs
    child.wait()?;
    let start = Instant::now();
    while receivers.iter().any(|&p| alive(p)) && start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let left: Vec<u32> = receivers.into_iter().filter(|&p| alive(p)).collect();
    for &p in &left {
        // SAFETY: cleans up after a failed test; signals only that pid.
        unsafe { libc::kill(p as i32, libc::SIGKILL) };
    }
    assert!(left.is_empty(), "processes outlived the harness: {left:?}");
    Ok(())
}
