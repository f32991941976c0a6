//! The packages a user installs without Rust, executed: the wheel
//! (`deploy/dist/wheel.py`) pip-installs with no index into a fresh venv,
//! and the npm launcher and its platform package (`deploy/dist/npm.py`,
//! both made with `npm pack`) install offline from their tarballs into a
//! fresh project with an empty npm cache and no reachable registry. Each is
//! built from the test's binary (a stripped copy, as a release ships), and
//! the installed command runs as a user runs it: from a folder of their
//! own, with no `--scenario-dir`, finding the catalog installed beside it.
//!
//! Python 3 with `venv` and pip, Node and npm: without them a test is
//! skipped, unless `HOOKSTORM_REQUIRE_PATHS=1`.

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

use super::{available, have, repo};
use crate::common::{output_text, TestResult};

/// A copy of the test's binary, stripped as a release's is (`strip`
/// takes about 0.1 s; what the packages compress is then a quarter the size).
fn shipped_binary(dir: &Path) -> PathBuf {
    let built = env!("CARGO_BIN_EXE_hookstorm");
    let out = dir.join("hookstorm");
    let stripped = have("strip")
        && Command::new("strip")
            .arg("-o")
            .arg(&out)
            .arg(built)
            .status()
            .is_ok_and(|s| s.success());
    if !stripped {
        std::fs::copy(built, &out).expect("the binary copies");
    }
    out
}

/// Runs `cmd` (its environment cleared of a catalog folder) and asserts
/// it exits with `code`; its output.
fn expect(cmd: &mut Command, code: i32) -> Output {
    let o = cmd
        .env_remove("HOOKSTORM_SCENARIO_DIR")
        .env("NO_COLOR", "1")
        .output()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert_eq!(o.status.code(), Some(code), "{cmd:?}\n{}", output_text(&o));
    o
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A user's folder: holds a `./scenarios` of its own, which hookstorm does
/// not read unasked but names, with the folder it reads instead.
fn user_folder(root: &Path) -> PathBuf {
    let work = root.join("work");
    std::fs::create_dir_all(work.join("scenarios")).unwrap();
    std::fs::write(work.join("scenarios/mine.toml"), "").unwrap();
    work
}

/// The catalog folder a command said it read (the note on `./scenarios`).
fn catalog_read(o: &Output) -> String {
    let err = String::from_utf8_lossy(&o.stderr);
    err.split("the scenarios come from ")
        .nth(1)
        .and_then(|rest| rest.split(" (hint").next())
        .unwrap_or_else(|| panic!("no note naming the catalog read:\n{err}"))
        .to_string()
}

#[test]
fn a_wheel_installs_offline_into_a_fresh_venv_and_runs() -> TestResult {
    if !available(
        "python3 with venv and pip",
        Command::new("python3")
            .args(["-c", "import venv, ensurepip"])
            .status()
            .is_ok_and(|s| s.success()),
        "apt-get install python3-venv",
    ) {
        return Ok(());
    }
    let root = tempfile::tempdir()?;
    let binary = shipped_binary(root.path());

    let started = Instant::now();
    let o = expect(
        Command::new("python3")
            .arg(repo().join("deploy/dist/wheel.py"))
            .arg(root.path().join("dist"))
            .arg("--binary")
            .arg(&binary)
            .args(["--compress-level", "1"]),
        0,
    );
    let packed = started.elapsed();
    let wheel = PathBuf::from(stdout(&o).trim());
    let name = wheel.file_name().unwrap().to_string_lossy().into_owned();
    let version = env!("CARGO_PKG_VERSION");
    assert!(
        name.starts_with(&format!("hookstorm-{version}-py3-none-manylinux_2_"))
            && name.ends_with(&format!("_{}.whl", std::env::consts::ARCH)),
        "{name}"
    );
    // Every file is in RECORD with its size and hash, and RECORD lists no other.
    expect(
        Command::new("python3")
            .arg("-c")
            .arg(RECORD_CHECK)
            .arg(&wheel),
        0,
    );

    let venv = root.path().join("venv");
    let started = Instant::now();
    expect(Command::new("python3").args(["-m", "venv"]).arg(&venv), 0);
    let made = started.elapsed();
    let started = Instant::now();
    expect(
        Command::new(venv.join("bin/pip"))
            .args(["install", "--no-index", "--no-cache-dir", "-q"])
            .arg(&wheel)
            .env("PIP_DISABLE_PIP_VERSION_CHECK", "1"),
        0,
    );
    let installed = started.elapsed();

    let hookstorm = venv.join("bin/hookstorm");
    let work = user_folder(root.path());
    let o = expect(Command::new(&hookstorm).arg("--version"), 0);
    assert_eq!(stdout(&o).trim(), format!("hookstorm {version}"));
    let o = expect(Command::new(&hookstorm).arg("list").current_dir(&work), 0);
    assert!(stdout(&o).contains("baseline"), "{}", output_text(&o));
    let shipped = venv.canonicalize()?.join("share/hookstorm/scenarios");
    assert_eq!(catalog_read(&o), shipped.display().to_string());
    assert!(shipped.join("baseline.toml").is_file());
    let o = expect(
        Command::new(&hookstorm)
            .args(["run", "--scenario", "baseline", "--seed", "1"])
            .current_dir(&work),
        0,
    );
    assert_eq!(catalog_read(&o), shipped.display().to_string());
    assert!(work.join("reports/latest/report.json").is_file());
    assert!(work.join("reports/latest/report.html").is_file());
    // With no target, doctor checks the built-in reference receiver.
    let o = expect(Command::new(&hookstorm).arg("doctor").current_dir(&work), 0);
    assert!(stdout(&o).contains("target usable"), "{}", output_text(&o));
    expect(Command::new(&hookstorm).arg("--no-such-flag"), 254);

    eprintln!(
        "wheel: {} MB packed in {:.1}s; venv {:.1}s; pip install --no-index {:.1}s",
        std::fs::metadata(&wheel)?.len() / 1_000_000,
        packed.as_secs_f64(),
        made.as_secs_f64(),
        installed.as_secs_f64()
    );
    Ok(())
}

/// Checks a wheel's RECORD against its files (argv[1]).
const RECORD_CHECK: &str = r#"
import base64, csv, hashlib, io, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
names = set(z.namelist())
record = [n for n in names if n.endswith(".dist-info/RECORD")]
assert len(record) == 1, record
rows = list(csv.reader(io.StringIO(z.read(record[0]).decode())))
listed = {r[0] for r in rows}
assert listed == names, (listed ^ names)
for path, digest, size in rows:
    if path == record[0]:
        assert digest == "" and size == "", (path, digest, size)
        continue
    data = z.read(path)
    want = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    assert digest == want and int(size) == len(data), path
script = [i for i in z.infolist() if i.filename.endswith(".data/scripts/hookstorm")]
assert len(script) == 1 and (script[0].external_attr >> 16) & 0o111, "the binary is executable"
"#;

/// `npm` with an empty cache of its own and a registry nobody answers: what
/// installs came from the tarballs.
fn npm(root: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(args[0]);
    cmd.args(&args[1..])
        .env("npm_config_cache", root.join("npm-cache"))
        .env("npm_config_registry", "http://127.0.0.1:9/")
        .env("npm_config_update_notifier", "false")
        .env("npm_config_fund", "false")
        .env("npm_config_audit", "false");
    cmd
}

/// Waits at most `limit` for `child`; kills it on time out.
fn wait_for(child: &mut std::process::Child, limit: Duration) -> ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(s) = child.try_wait().expect("wait") {
            return s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The launcher's child process (the binary), once it has started.
fn only_child(pid: u32) -> i32 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let children =
            std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
        if let Some(c) = children.split_whitespace().next() {
            return c.parse().unwrap();
        }
        assert!(Instant::now() < deadline, "the launcher started no binary");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn an_npm_package_installs_offline_into_a_fresh_project_and_runs() -> TestResult {
    if !available(
        "node and npm",
        have("node") && have("npm"),
        "apt-get install nodejs npm",
    ) {
        return Ok(());
    }
    let root = tempfile::tempdir()?;
    let binary = shipped_binary(root.path());

    let started = Instant::now();
    let o = expect(
        npm(root.path(), &["python3"])
            .arg(repo().join("deploy/dist/npm.py"))
            .arg(root.path().join("dist"))
            .arg("--binary")
            .arg(&binary),
        0,
    );
    let packed = started.elapsed();
    let tarballs: Vec<PathBuf> = stdout(&o).lines().map(PathBuf::from).collect();
    let version = env!("CARGO_PKG_VERSION");
    let cpu = match std::env::consts::ARCH {
        "x86_64" => "x64",
        "aarch64" => "arm64",
        other => other,
    };
    assert_eq!(
        tarballs
            .iter()
            .map(|t| t.file_name().unwrap().to_string_lossy().into_owned())
            .collect::<Vec<_>>(),
        [
            format!("hookstorm-{version}.tgz"),
            format!("hookstorm-linux-{cpu}-{version}.tgz")
        ]
    );

    let project = root.path().join("work");
    std::fs::create_dir_all(&project)?;
    expect(
        npm(root.path(), &["npm", "init", "-y"]).current_dir(&project),
        0,
    );
    let started = Instant::now();
    expect(
        npm(
            root.path(),
            &["npm", "install", "--offline", "--no-audit", "--no-fund"],
        )
        .args(&tarballs)
        .current_dir(&project),
        0,
    );
    let installed = started.elapsed();
    let platform = project.join(format!("node_modules/@hookstorm/linux-{cpu}"));
    assert!(platform.join("scenarios/baseline.toml").is_file());
    std::fs::create_dir_all(project.join("scenarios"))?;
    std::fs::write(project.join("scenarios/mine.toml"), "")?;

    let npx = |args: &[&str]| {
        let mut c = npm(root.path(), &["npx", "--offline", "hookstorm"]);
        c.args(args).current_dir(&project);
        c
    };
    let o = expect(&mut npx(&["--version"]), 0);
    assert_eq!(stdout(&o).trim(), format!("hookstorm {version}"));
    let o = expect(
        &mut npx(&["run", "--scenario", "baseline", "--seed", "1"]),
        0,
    );
    let shipped = platform.canonicalize()?.join("scenarios");
    assert_eq!(catalog_read(&o), shipped.display().to_string());
    assert!(project.join("reports/latest/report.json").is_file());
    // Exit codes come through the launcher: a usage error, a failing run.
    let o = expect(&mut npx(&["--no-such-flag"]), 254);
    assert!(output_text(&o).contains("--no-such-flag"));
    expect(&mut npx(&["run", "--scenario", "no-such-scenario"]), 254);
    expect(
        &mut npx(&[
            "run",
            "--defect",
            "check-then-insert",
            "--scenario",
            "concurrent-duplicates",
            "--seed",
            "8",
        ]),
        1,
    );

    signals_come_through_the_launcher(root.path(), &project)?;

    // Installed without its optional dependency: the launcher says so.
    std::fs::rename(&platform, root.path().join("set-aside"))?;
    let o = expect(&mut npx(&["--version"]), 254);
    assert!(
        output_text(&o).contains(&format!("@hookstorm/linux-{cpu} is not installed")),
        "{}",
        output_text(&o)
    );

    eprintln!(
        "npm: {} MB platform tarball packed in {:.1}s; npm install --offline {:.1}s",
        std::fs::metadata(&tarballs[1])?.len() / 1_000_000,
        packed.as_secs_f64(),
        installed.as_secs_f64()
    );
    Ok(())
}

/// SIGTERM to the launcher, and SIGINT when it has no terminal (its own
/// session here), reach the binary once: the run stops in order (its
/// report written) and the launcher exits as it did, 130. A binary killed
/// by a signal: the launcher dies of the same one.
fn signals_come_through_the_launcher(root: &Path, project: &Path) -> TestResult {
    let launcher = project.join("node_modules/.bin/hookstorm");
    let latest = project.join("reports/latest/report.json");
    let log = root.join("launcher.log");
    let spawn = || {
        let err = std::fs::File::create(&log).expect("the log opens");
        let mut cmd = npm(root, &[launcher.to_str().unwrap()]);
        cmd.args(["run", "--seed", "1"])
            .current_dir(project)
            .env_remove("HOOKSTORM_SCENARIO_DIR")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(err);
        // SAFETY: setsid is async-signal-safe and touches no memory.
        unsafe {
            cmd.pre_exec(|| match libc::setsid() {
                -1 => Err(std::io::Error::last_os_error()),
                _ => Ok(()),
            })
        }
        .spawn()
        .expect("the launcher starts")
    };
    for signal in [libc::SIGTERM, libc::SIGINT] {
        let _ = std::fs::remove_file(&latest);
        let mut run = spawn();
        only_child(run.id());
        std::thread::sleep(Duration::from_millis(1000));
        // SAFETY: kill has no memory preconditions; the pid is our child's.
        unsafe { libc::kill(run.id() as i32, signal) };
        let status = wait_for(&mut run, Duration::from_secs(30));
        let err = std::fs::read_to_string(&log)?;
        assert_eq!(status.code(), Some(130), "signal {signal}: {err}");
        assert!(latest.is_file(), "an interrupted run still reports\n{err}");
    }

    let mut run = spawn();
    let binary_pid = only_child(run.id());
    // SAFETY: as above; the pid is the launcher's child.
    unsafe { libc::kill(binary_pid, libc::SIGKILL) };
    let status = wait_for(&mut run, Duration::from_secs(10));
    assert_eq!(status.signal(), Some(libc::SIGKILL), "{status:?}");

    Ok(())
}
