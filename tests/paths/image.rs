//! The container image without a container runtime: its root filesystem
//! built as the Dockerfile's runtime stage says, and its entrypoint run in
//! it with `chroot --userspec`.
//!
//! OCI runtimes cannot start here (they may not set rlimits or cgroups),
//! but a chroot can. The stage is read from the Dockerfile itself, so the
//! two cannot drift: `FROM debian:<suite>-slim` is a `debootstrap
//! --variant=minbase` of that suite with the packages its `apt-get
//! install` names, every `RUN` runs in the tree as root, `COPY --from=build
//! /src/…` copies the same files from this checkout (the build stage's
//! `target/release/…` from the cargo build given), and `ENV`, `USER`,
//! `WORKDIR` and `ENTRYPOINT`/`CMD` become the environment, the user, the
//! working folder and the command of each run. The built tree (before the
//! `COPY`s) is cached outside the checkout, keyed by a hash of the stage's
//! `FROM` and `RUN` lines, so only the first run pays for debootstrap.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::repo;

/// The Dockerfile's runtime stage, as the tests use it.
#[derive(Debug, Clone)]
pub struct Stage {
    /// The base image (`debian:bookworm-slim`).
    pub from: String,
    /// Its `RUN` commands, in order (continuations joined).
    pub runs: Vec<String>,
    /// `COPY --from=build SRC DST`.
    pub copies: Vec<(String, String)>,
    /// `ENV K=V`.
    pub env: Vec<(String, String)>,
    /// `USER uid[:gid]`.
    pub user: (u32, u32),
    /// `WORKDIR`.
    pub workdir: String,
    /// `ENTRYPOINT [...]`.
    pub entrypoint: Vec<String>,
    /// `CMD [...]`.
    pub cmd: Vec<String>,
}

/// The instructions of a Dockerfile: comments dropped, continuations joined.
fn instructions(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with('#') || (t.is_empty() && cur.is_empty()) {
            continue;
        }
        if let Some(head) = t.strip_suffix('\\') {
            cur.push_str(head);
            cur.push(' ');
        } else {
            cur.push_str(t);
            if !cur.trim().is_empty() {
                out.push(cur.trim().to_string());
            }
            cur.clear();
        }
    }
    out
}

impl Stage {
    /// The last stage of the repository's Dockerfile.
    pub fn runtime() -> Stage {
        let text = super::read("Dockerfile");
        let all = instructions(&text);
        let last_from = all
            .iter()
            .rposition(|i| i.starts_with("FROM "))
            .expect("a FROM");
        let mut stage = Stage {
            from: String::new(),
            runs: Vec::new(),
            copies: Vec::new(),
            env: Vec::new(),
            user: (0, 0),
            workdir: "/".into(),
            entrypoint: Vec::new(),
            cmd: Vec::new(),
        };
        let json = |rest: &str| -> Vec<String> {
            serde_json::from_str(rest).unwrap_or_else(|e| panic!("exec form expected: {rest}: {e}"))
        };
        for i in &all[last_from..] {
            let (op, rest) = i.split_once(' ').unwrap_or((i, ""));
            let rest = rest.trim();
            match op {
                "FROM" => stage.from = rest.split_whitespace().next().unwrap().to_string(),
                "RUN" => stage.runs.push(rest.to_string()),
                "COPY" => {
                    let w: Vec<&str> = rest.split_whitespace().collect();
                    assert_eq!(w.len(), 3, "COPY --from=build SRC DST: {i}");
                    assert_eq!(w[0], "--from=build", "{i}");
                    stage.copies.push((w[1].to_string(), w[2].to_string()));
                }
                "ENV" => {
                    let (k, v) = rest.split_once('=').expect("ENV K=V");
                    stage.env.push((k.to_string(), v.to_string()));
                }
                "USER" => {
                    let (u, g) = rest.split_once(':').unwrap_or((rest, rest));
                    stage.user = (
                        u.parse().expect("USER by number"),
                        g.parse().expect("a numeric group"),
                    );
                }
                "WORKDIR" => stage.workdir = rest.to_string(),
                "ENTRYPOINT" => stage.entrypoint = json(rest),
                "CMD" => stage.cmd = json(rest),
                other => panic!("the image test does not know the instruction {other}: {i}"),
            }
        }
        stage
    }

    /// The Debian suite of the base image (`debian:bookworm-slim`: bookworm).
    pub fn suite(&self) -> String {
        let tag = self
            .from
            .strip_prefix("debian:")
            .unwrap_or_else(|| panic!("a Debian base image: {}", self.from));
        tag.trim_end_matches("-slim").to_string()
    }

    /// The packages the stage's `apt-get install` lines name.
    pub fn packages(&self) -> Vec<String> {
        let mut out = Vec::new();
        for r in &self.runs {
            for part in r.split("&&") {
                let w: Vec<&str> = part.split_whitespace().collect();
                if let Some(at) = w.iter().position(|x| *x == "install") {
                    if w[..at].contains(&"apt-get") {
                        out.extend(
                            w[at + 1..]
                                .iter()
                                .filter(|x| !x.starts_with('-'))
                                .map(|x| x.to_string()),
                        );
                    }
                }
            }
        }
        out
    }

    /// The cache key: what the base tree is made of.
    fn key(&self) -> String {
        let text = format!("{}\n{}\n{}", self.from, self.runs.join("\n"), mirror());
        let mut child = Command::new("sha256sum")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("sha256sum runs");
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
        let o = child.wait_with_output().unwrap();
        String::from_utf8_lossy(&o.stdout)[..16].to_string()
    }
}

/// The Debian mirror: `HOOKSTORM_DEBIAN_MIRROR`, else the first Debian
/// URI in the machine's apt sources, else deb.debian.org.
pub fn mirror() -> String {
    if let Ok(m) = std::env::var("HOOKSTORM_DEBIAN_MIRROR") {
        return m;
    }
    let mut files = vec![PathBuf::from("/etc/apt/sources.list")];
    if let Ok(d) = std::fs::read_dir("/etc/apt/sources.list.d") {
        let mut more: Vec<PathBuf> = d.filter_map(|e| e.ok().map(|e| e.path())).collect();
        more.sort();
        files.extend(more);
    }
    for f in files {
        for line in std::fs::read_to_string(f).unwrap_or_default().lines() {
            let l = line.trim();
            if l.starts_with('#') {
                continue;
            }
            let uri = l.strip_prefix("URIs:").map(str::trim).or_else(|| {
                l.strip_prefix("deb ")
                    .and_then(|r| r.split_whitespace().find(|w| w.starts_with("http")))
            });
            if let Some(u) = uri.and_then(|u| u.split_whitespace().next()) {
                if u.trim_end_matches('/').ends_with("/debian") {
                    return u.to_string();
                }
            }
        }
    }
    "http://deb.debian.org/debian".into()
}

/// Where built trees are kept across runs (and clones).
fn cache_root() -> PathBuf {
    std::env::var_os("HOOKSTORM_IMAGE_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/cache/hookstorm-image-root"))
}

fn sh(cmd: &mut Command) -> Result<Output, String> {
    let o = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    if o.status.success() {
        Ok(o)
    } else {
        Err(format!(
            "{cmd:?}: {}\n{}{}",
            o.status,
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ))
    }
}

/// The base tree of `stage` (debootstrap and its `RUN`s), built once.
pub fn base(stage: &Stage) -> Result<PathBuf, String> {
    // The tests that need a tree wait for one build instead of each
    // running debootstrap.
    static BUILDING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = BUILDING.lock().unwrap_or_else(|e| e.into_inner());
    let dir = cache_root().join(format!("{}-{}", stage.suite(), stage.key()));
    if dir.join(".complete").is_file() {
        return Ok(dir);
    }
    std::fs::create_dir_all(cache_root()).map_err(|e| e.to_string())?;
    let tmp = cache_root().join(format!(".build-{}", super::unique("")));
    let started = std::time::Instant::now();
    let include = stage.packages().join(",");
    sh(Command::new("debootstrap")
        .args(["--variant=minbase", &format!("--include={include}")])
        .arg(stage.suite())
        .arg(&tmp)
        .arg(mirror()))?;
    // The RUN lines as the image build runs them: as root, in the tree,
    // with the host's resolver (apt-get update reaches the same mirror).
    std::fs::copy("/etc/resolv.conf", tmp.join("etc/resolv.conf")).map_err(|e| e.to_string())?;
    for run in &stage.runs {
        sh(Command::new("chroot")
            .arg(&tmp)
            .args(["/bin/sh", "-c", run])
            .env_clear()
            .env(
                "PATH",
                "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            )
            .env("DEBIAN_FRONTEND", "noninteractive"))?;
    }
    // What the slim image does not ship either: the downloaded packages.
    let _ = sh(Command::new("chroot").arg(&tmp).args(["apt-get", "clean"]));
    std::fs::write(tmp.join(".complete"), format!("{}\n", stage.from))
        .map_err(|e| e.to_string())?;
    if std::fs::rename(&tmp, &dir).is_err() {
        // Another run finished first: keep its tree.
        let _ = std::fs::remove_dir_all(&tmp);
    }
    eprintln!(
        "image base built in {:.1}s: {}",
        started.elapsed().as_secs_f64(),
        dir.display()
    );
    Ok(dir)
}

/// One container's root: a copy of the base with the stage's `COPY`s, and
/// what is mounted in it (unmounted on drop, before anything is removed).
pub struct Image {
    /// The root filesystem.
    pub root: PathBuf,
    /// The stage it was made from.
    pub stage: Stage,
    mounts: Vec<PathBuf>,
    _dir: Option<tempfile::TempDir>,
}

/// The folder the build stage's `target/release` stands for: the release
/// build when there is one (`.ci/run` makes it), else the test's binaries.
pub fn release_dir() -> PathBuf {
    let release = repo().join("target/release");
    if release.join("hookstorm").is_file() {
        release
    } else {
        super::bin_dir()
    }
}

impl Image {
    /// A fresh root from the cached base, with the stage's files copied in.
    pub fn new(stage: &Stage) -> Result<Image, String> {
        let base = base(stage)?;
        let dir = tempfile::Builder::new()
            .prefix("hookstorm-image-")
            .tempdir_in(std::env::temp_dir())
            .map_err(|e| e.to_string())?;
        let root = dir.path().join("root");
        sh(Command::new("cp").arg("-a").arg(&base).arg(&root))?;
        let release = release_dir();
        for (src, dst) in &stage.copies {
            let rel = src.strip_prefix("/src/").expect("COPY from /src/");
            let from = match rel.strip_prefix("target/release/") {
                Some(bin) => release.join(bin),
                None => repo().join(rel),
            };
            let to = root.join(dst.trim_start_matches('/'));
            std::fs::create_dir_all(to.parent().unwrap()).map_err(|e| e.to_string())?;
            if !from.exists() {
                return Err(format!(
                    "{} is missing (hint: cargo build --release --bin hookstorm -p hookstorm-receiver)",
                    from.display()
                ));
            }
            sh(Command::new("cp").arg("-a").arg(&from).arg(&to))?;
        }
        // What Docker provides in every container: /proc, the host's
        // resolver and hosts file (as with --network host).
        let mut image = Image {
            root,
            stage: stage.clone(),
            mounts: Vec::new(),
            _dir: Some(dir),
        };
        for f in ["etc/resolv.conf", "etc/hosts"] {
            let _ = std::fs::copy(Path::new("/").join(f), image.root.join(f));
        }
        image.mount(&["-t", "proc", "proc"], "proc")?;
        Ok(image)
    }

    fn mount(&mut self, how: &[&str], at: &str) -> Result<(), String> {
        let target = self.root.join(at.trim_start_matches('/'));
        std::fs::create_dir_all(&target).map_err(|e| e.to_string())?;
        sh(Command::new("mount").args(how).arg(&target))?;
        self.mounts.push(target);
        Ok(())
    }

    /// Bind-mounts the host folder `from` at `at` in the image (`-v`).
    pub fn bind(&mut self, from: &Path, at: &str) -> Result<(), String> {
        let from = from.display().to_string();
        self.mount(&["--bind", &from], at)
    }

    /// The command that runs `args` after the entrypoint in the image, as
    /// `uid:gid` (with supplementary `groups`), in `workdir` (default the
    /// stage's), with the stage's `ENV` and `env` on top.
    pub fn command(
        &self,
        user: (u32, u32),
        groups: &[u32],
        workdir: Option<&str>,
        env: &BTreeMap<String, String>,
        args: &[String],
    ) -> Command {
        let mut c = Command::new("chroot");
        c.arg(format!("--userspec={}:{}", user.0, user.1));
        if !groups.is_empty() {
            let g: Vec<String> = groups.iter().map(u32::to_string).collect();
            c.arg(format!("--groups={}", g.join(",")));
        }
        c.arg(&self.root)
            .arg("/usr/bin/env")
            .arg("-i")
            .arg(format!(
                "--chdir={}",
                workdir.unwrap_or(&self.stage.workdir)
            ))
            .arg("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
            .arg("HOME=/home/hookstorm")
            // Not PID 1 here: tini reaps as a subreaper instead.
            .arg("TINI_SUBREAPER=1");
        for (k, v) in &self.stage.env {
            c.arg(format!("{k}={v}"));
        }
        for (k, v) in env {
            c.arg(format!("{k}={v}"));
        }
        c.args(&self.stage.entrypoint);
        if args.is_empty() {
            c.args(&self.stage.cmd);
        } else {
            c.args(args);
        }
        c
    }
}

impl Drop for Image {
    fn drop(&mut self) {
        let mut all_gone = true;
        for m in self.mounts.iter().rev() {
            let ok = Command::new("umount")
                .arg(m)
                .status()
                .is_ok_and(|s| s.success())
                || Command::new("umount")
                    .arg("-l")
                    .arg(m)
                    .status()
                    .is_ok_and(|s| s.success());
            all_gone &= ok;
        }
        // Never remove a tree something is still mounted in (a bind
        // mount's source would go with it): leave it instead.
        let mounted = std::fs::read_to_string("/proc/mounts")
            .unwrap_or_default()
            .lines()
            .any(|l| {
                l.split_whitespace()
                    .nth(1)
                    .is_some_and(|p| p.starts_with(&*self.root.to_string_lossy()))
            });
        if !all_gone || mounted {
            eprintln!("leaving {} (still mounted)", self.root.display());
            if let Some(d) = self._dir.take() {
                let _ = d.keep();
            }
        }
    }
}

/// The first `docker run` example in `file` (in `#` comments or a code
/// block, continuations joined) whose text holds `holding`, as words.
fn documented(file: &str, holding: &str) -> Vec<String> {
    let text = super::read(file);
    let lines: Vec<&str> = text
        .lines()
        .map(|l| l.trim_start_matches('#').trim())
        .collect();
    for (i, l) in lines.iter().enumerate() {
        if !l.starts_with("docker run") {
            continue;
        }
        let mut joined = String::new();
        for m in &lines[i..] {
            joined.push_str(m.trim_end_matches('\\'));
            joined.push(' ');
            if !m.ends_with('\\') {
                break;
            }
        }
        if joined.contains(holding) {
            return super::words(&joined);
        }
    }
    panic!("{file} shows no docker run with {holding}");
}

/// The `docker run … --target …` example at the top of the Dockerfile,
/// as words.
fn documented_run() -> Vec<String> {
    documented("Dockerfile", "--target")
}

/// Runs docs/docker.md's `--entrypoint hookstorm-receiver` example in
/// the image (on free ports instead of 8080 and 8081) and reads its state
/// with the token it names.
fn the_documented_receiver_serves_in_the_image(image: &Image, stage: &Stage) -> Result<(), String> {
    let words = documented("docs/docker.md", "--entrypoint hookstorm-receiver");
    let image_at = words
        .iter()
        .position(|w| w == "hookstorm")
        .expect("the image's name");
    let at = |flag: &str| {
        words
            .iter()
            .position(|w| w == flag)
            .map(|i| words[i + 1].clone())
            .unwrap_or_else(|| panic!("the example gives {flag}: {words:?}"))
    };
    let token = at("--admin-token");
    let free = || {
        std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .map_err(|e| e.to_string())
    };
    let (web, admin) = (free()?, free()?);
    let args: Vec<String> = words[image_at + 1..]
        .iter()
        .map(|w| {
            w.replace(":8080", &format!(":{web}"))
                .replace(":8081", &format!(":{admin}"))
        })
        .collect();
    let mut child = Command::new("chroot")
        .arg(format!("--userspec={}:{}", stage.user.0, stage.user.1))
        .arg(&image.root)
        .arg(format!("/usr/local/bin/{}", at("--entrypoint")))
        .args(&args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut state = None;
    while std::time::Instant::now() < deadline && state.is_none() {
        if let Ok(Some(status)) = child.try_wait() {
            let out = child.wait_with_output().map_err(|e| e.to_string())?;
            return Err(format!(
                "the documented receiver exited ({status}): {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        state = crate::common::get_status(
            ([127, 0, 0, 1], admin).into(),
            "/state",
            Some(&token),
            std::time::Duration::from_secs(5),
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
    match state {
        Some(200) => Ok(()),
        other => Err(format!(
            "the documented receiver's state with its token answered {other:?}, not 200"
        )),
    }
}

#[test]
fn the_image_runs_its_entrypoint_as_the_users_uid_into_a_host_owned_folder(
) -> crate::common::TestResult {
    use super::{available, have, is_root};
    if !available(
        "root and debootstrap",
        is_root() && have("debootstrap") && have("chroot"),
        "apt-get install debootstrap; run as root",
    ) {
        return Ok(());
    }
    let started = std::time::Instant::now();
    let stage = Stage::runtime();
    assert_ne!(stage.user.0, 0, "the image runs as a user");
    assert!(
        stage.packages().iter().any(|p| p == "curl"),
        "replay.sh needs curl"
    );
    let mut image = Image::new(&stage)?;
    let built = started.elapsed();

    // The receiver on the host; the image shares the host's network.
    let rt = tokio::runtime::Runtime::new()?;
    let (receiver, target) = rt.block_on(hookstorm_cli::builtin::start(None, None))?;
    let mut env = BTreeMap::new();
    for acct in ["acct_a", "acct_b"] {
        env.insert(
            hookstorm::target::default_secrets_var(acct),
            crate::common::secrets_csv(&target.secrets[acct]),
        );
    }
    env.insert(
        "HOOKSTORM_ADMIN_TOKEN".into(),
        target.state.token.clone().unwrap(),
    );

    // The user's folder, owned by someone who is not the image's user.
    let host = tempfile::tempdir()?;
    let owner = (20002u32, 20002u32);
    std::fs::write(
        host.path().join("hookstorm.toml"),
        format!(
            "url = \"{}\"\n[accounts.acct_a]\nsecrets_env = \"HOOKSTORM_SECRETS_ACCT_A\"\n[accounts.acct_b]\nsecrets_env = \"HOOKSTORM_SECRETS_ACCT_B\"\n[state]\nhttp = \"{}\"\ntoken_env = \"HOOKSTORM_ADMIN_TOKEN\"\n",
            target.url,
            target.state.http.clone().unwrap()
        ),
    )?;
    sh(Command::new("chown")
        .arg("-R")
        .arg(format!("{}:{}", owner.0, owner.1))
        .arg(host.path()))?;
    sh(Command::new("chmod").arg("0755").arg(host.path()))?;

    // The documented command: its -v, -w, -e, --user and the arguments
    // after the image's name.
    let words = documented_run();
    let at = |flag: &str| {
        words
            .iter()
            .position(|w| w == flag)
            .map(|i| words[i + 1].clone())
    };
    let volume = at("-v").expect("a -v");
    let mount = volume
        .rsplit_once(':')
        .expect("HOST:CONTAINER")
        .1
        .to_string();
    let workdir = at("-w").unwrap_or_else(|| stage.workdir.clone());
    assert_eq!(workdir, mount, "the folder mounted is the one worked in");
    let user =
        at("--user").expect("the example runs as the caller (--user), so the reports are theirs");
    assert!(user.contains("id -u"), "{user}");
    let passed: Vec<String> = words
        .iter()
        .enumerate()
        .filter(|(i, _)| *i > 0 && words[i - 1] == "-e")
        .map(|(_, w)| w.clone())
        .collect();
    for var in env.keys() {
        assert!(passed.contains(var), "the example passes {var}: {passed:?}");
    }
    let image_at = words
        .iter()
        .position(|w| w == "hookstorm")
        .expect("the image's name");
    let mut args: Vec<String> = words[image_at + 1..].to_vec();
    args.extend(
        [
            "--scenario",
            "baseline",
            "--scenario",
            "account-isolation",
            "--seed",
            "4",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    image.bind(host.path(), &mount)?;

    // As the image's own user, a host-owned folder cannot take the reports.
    let o = image
        .command(stage.user, &[], Some(&workdir), &env, &args)
        .output()?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert_ne!(o.status.code(), Some(0), "{text}");
    assert!(text.to_lowercase().contains("permission denied"), "{text}");

    // With --user "$(id -u):$(id -g)" of the folder's owner: it runs, the
    // scenarios come from the image's HOOKSTORM_SCENARIO_DIR, and the
    // reports are the owner's.
    let run_started = std::time::Instant::now();
    let o = image
        .command(owner, &[], Some(&workdir), &env, &args)
        .output()?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(o.status.code(), Some(0), "{text}");
    let report = host.path().join("reports/latest/report.html");
    assert!(report.is_file(), "{text}");
    use std::os::unix::fs::MetadataExt;
    assert_eq!(std::fs::metadata(&report)?.uid(), owner.0);
    let run_time = run_started.elapsed();

    // CMD: the help; curl for replay.sh; the standalone receiver.
    let o = image
        .command(stage.user, &[], None, &BTreeMap::new(), &[])
        .output()?;
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("Usage"),
        "{o:?}"
    );
    for tool in [["curl", "--version"], ["hookstorm-receiver", "--help"]] {
        let mut c = Command::new("chroot");
        c.arg(format!("--userspec={}:{}", stage.user.0, stage.user.1))
            .arg(&image.root)
            .args(tool);
        let o = c.output()?;
        assert!(o.status.success(), "{tool:?}: {o:?}");
    }
    // docs/docker.md's standalone receiver, as it is written there.
    the_documented_receiver_serves_in_the_image(&image, &stage)?;
    rt.block_on(receiver.shutdown());
    eprintln!(
        "image: root ready in {:.1}s, run in it {:.1}s",
        built.as_secs_f64(),
        run_time.as_secs_f64()
    );
    Ok(())
}
