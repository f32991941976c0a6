//! The paths into production, executed: the container image (its
//! filesystem built as the Dockerfile says, the entrypoint run in it with
//! `chroot` as the image's user), the GitHub Action and the example
//! workflow (each step's `run:` as a runner runs it), the Kubernetes
//! manifests (validated against the Kubernetes schemas, then run as a Job
//! would be: one process per index, each in a network namespace of its
//! own), the wheel and the npm packages (installed offline into a fresh
//! venv and a fresh Node project, then run), and the crates as `cargo
//! package` makes them. What a user copies is what runs here, so the two
//! cannot drift.
//!
//! Building an image root needs root and `debootstrap`, the Job needs root
//! and `ip netns`, the schemas need `kubernetes-validate`, the packages
//! Python's venv and pip, Node and npm: without one, the
//! test that needs it is skipped with a line on stderr, unless
//! `HOOKSTORM_REQUIRE_PATHS=1` (set by `.ci/run`), which makes it a failure.

mod action;
mod crates;
mod dist;
mod image;
mod k8s;
mod netns;
mod runner;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// The repository's root.
pub fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A repository file's text.
pub fn read(rel: &str) -> String {
    let p = repo().join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Whether a facility a test needs is there; when it is not, the test is
/// skipped (false), or fails under `HOOKSTORM_REQUIRE_PATHS=1`.
pub fn available(what: &str, there: bool, hint: &str) -> bool {
    if there {
        return true;
    }
    if std::env::var("HOOKSTORM_REQUIRE_PATHS").is_ok_and(|v| v == "1") {
        panic!("HOOKSTORM_REQUIRE_PATHS=1 but {what} is not available (hint: {hint})");
    }
    eprintln!(
        "skipped: {what} is not available ({hint}; HOOKSTORM_REQUIRE_PATHS=1 makes this a failure)"
    );
    false
}

/// Whether this process runs as root.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Whether `cmd` is on PATH (or an absolute path that exists).
pub fn have(cmd: &str) -> bool {
    std::process::Command::new("sh")
        .args(["-c", &format!("command -v {cmd} >/dev/null 2>&1")])
        .status()
        .is_ok_and(|s| s.success())
}

/// A name no other test run on this machine uses at the same time: the
/// process id and a counter, short enough for interface names.
pub fn unique(prefix: &str) -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    format!(
        "{prefix}{:x}{:x}",
        std::process::id() & 0xfffff,
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// The folder the test's `hookstorm` binary is in (target/debug).
pub fn bin_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_hookstorm"))
        .parent()
        .expect("the binary has a folder")
        .to_path_buf()
}

/// Shell-like words of `line` (quotes group, backslash-newline joins),
/// without expansion: how the tests read a command a document shows.
pub fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut any = false;
    let mut quote: Option<char> = None;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                any = true;
            }
            (None, '\\') => match chars.next() {
                Some('\n') | None => {}
                Some(n) => cur.push(n),
            },
            (None, c) if c.is_whitespace() => {
                if any || !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            (None, c) => cur.push(c),
        }
    }
    if any || !cur.is_empty() {
        out.push(cur);
    }
    out
}
