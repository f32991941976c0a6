//! Short shell commands under bounds: the probe's hook and state
//! commands and the lifecycle's reset commands run here.
//!
//! Each runs as `sh -c CMD` in a process group of its own that dies with
//! the harness ([`super::os::die_with_parent`]); when it ends, times out or
//! is dropped, the whole group is SIGKILLed, so a `sleep` it started in
//! the background or a command that never ends is not left behind. Its
//! standard output is read up to a cap ([`crate::limits::budget::COMMAND_OUTPUT`]
//! for answers) and only the end of its standard error is kept.

use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;

use crate::limits::budget;

/// `sh -c cmd` in a process group of its own that dies with the harness,
/// run in `dir` (the folder of the file that names the command) when
/// given, else in hookstorm's working directory; no stdin, stdout and
/// stderr piped.
pub(crate) fn command_in(cmd: &str, dir: Option<&std::path::Path>) -> Command {
    let mut c = Command::new("sh");
    if let Some(dir) = dir {
        c.current_dir(dir);
    }
    c.arg("-c")
        .arg(cmd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    #[cfg(unix)]
    c.process_group(0);
    super::os::die_with_parent(c.as_std_mut());
    c
}

/// SIGKILLs a process group when dropped: every way out of a command's
/// run (done, timed out, cancelled) ends everything it started.
pub(crate) struct Group(Option<i32>);

impl Group {
    /// The group led by `child` (none when it has no pid).
    pub(crate) fn of(child: &tokio::process::Child) -> Group {
        Group(child.id().map(|p| p as i32))
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        #[cfg(unix)]
        if let Some(pgid) = self.0 {
            let _ = super::os::killpg(pgid, super::signal::Signal::Kill);
        }
    }
}

/// Why a bounded command gave no output.
#[derive(Debug)]
pub(crate) enum ShellError {
    /// It could not start, or its pipes failed.
    Io(std::io::Error),
    /// No exit within the limit (its group was killed).
    Timeout,
    /// Its standard output passed the cap (its group was killed).
    TooMuchOutput(usize),
}

/// What a finished command left.
pub(crate) struct Output {
    /// How it exited.
    pub status: ExitStatus,
    /// Its standard output (at most the cap).
    pub stdout: Vec<u8>,
    /// The last [`budget::COMMAND_STDERR`] bytes of its standard error.
    pub stderr: Vec<u8>,
}

/// Reads all of `r`, keeping only its last `keep` bytes.
pub(crate) async fn tail_of(mut r: impl AsyncRead + Unpin, keep: usize) -> Vec<u8> {
    let mut tail = Vec::new();
    let mut buf = vec![0u8; 8192];
    while let Ok(n) = r.read(&mut buf).await {
        if n == 0 {
            break;
        }
        tail.extend_from_slice(&buf[..n]);
        if tail.len() > keep {
            tail.drain(..tail.len() - keep);
        }
    }
    tail
}

/// Runs `cmd` (from [`command`]) for at most `timeout`, reading at most
/// `cap` bytes of its standard output; the group is killed on the way out.
pub(crate) async fn run(cmd: Command, timeout: Duration, cap: usize) -> Result<Output, ShellError> {
    run_with_input(cmd, None, timeout, cap).await
}

/// Like [`run`], with `input` written to the command's standard input
/// (then closed); a command that does not read it all is not waited for.
pub(crate) async fn run_with_input(
    mut cmd: Command,
    input: Option<Vec<u8>>,
    timeout: Duration,
    cap: usize,
) -> Result<Output, ShellError> {
    if input.is_some() {
        cmd.stdin(std::process::Stdio::piped());
    }
    let mut child = cmd.spawn().map_err(ShellError::Io)?;
    let _group = Group::of(&child);
    if let (Some(bytes), Some(mut stdin)) = (input, child.stdin.take()) {
        tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            let _ = stdin.write_all(&bytes).await;
        });
    }
    let mut stdout = child.stdout.take().expect("piped");
    let stderr = child.stderr.take().expect("piped");
    let work = async {
        let errs = tokio::spawn(tail_of(stderr, budget::COMMAND_STDERR));
        let mut out = Vec::new();
        let mut buf = vec![0u8; 8192];
        loop {
            let n = stdout.read(&mut buf).await.map_err(ShellError::Io)?;
            if n == 0 {
                break;
            }
            if out.len() + n > cap {
                errs.abort();
                return Err(ShellError::TooMuchOutput(cap));
            }
            out.extend_from_slice(&buf[..n]);
        }
        let status = child.wait().await.map_err(ShellError::Io)?;
        let stderr = errs.await.unwrap_or_default();
        Ok(Output {
            status,
            stdout: out,
            stderr,
        })
    };
    tokio::time::timeout(timeout, work)
        .await
        .map_err(|_| ShellError::Timeout)?
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether a process with this exact command line still runs.
    fn running(marker: &str) -> bool {
        std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
            std::fs::read(e.path().join("cmdline"))
                .map(|c| String::from_utf8_lossy(&c).contains(marker))
                .unwrap_or(false)
        })
    }

    #[tokio::test]
    async fn a_timed_out_command_is_killed_with_its_group() {
        // A distinct duration names this test's sleeps in the process list.
        let cmd = command_in("sleep 31.7 & sleep 31.7 & sleep 31.7", None);
        let r = run(cmd, Duration::from_millis(300), 1024).await;
        assert!(matches!(r, Err(ShellError::Timeout)));
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(!running("31.7"), "a sleep outlived its timed-out command");
    }

    #[tokio::test]
    async fn a_background_child_does_not_outlive_a_finished_command() {
        let cmd = command_in("sleep 32.3 >/dev/null 2>&1 & echo done", None);
        let out = run(cmd, Duration::from_secs(5), 1024).await.unwrap();
        assert_eq!(out.stdout, b"done\n");
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(!running("32.3"), "a background sleep outlived its command");
    }

    #[tokio::test]
    async fn input_reaches_the_command_on_its_standard_input() {
        let cmd = command_in("tr a-z A-Z", None);
        let out = run_with_input(cmd, Some(b"events".to_vec()), Duration::from_secs(5), 1024)
            .await
            .unwrap();
        assert_eq!(out.stdout, b"EVENTS");
    }

    #[tokio::test]
    async fn endless_output_stops_at_the_cap() {
        let cmd = command_in("cat /dev/zero", None);
        let r = run(cmd, Duration::from_secs(10), 1 << 20).await;
        assert!(matches!(r, Err(ShellError::TooMuchOutput(_))));
    }

    #[tokio::test]
    async fn only_the_end_of_stderr_is_kept() {
        let cmd = command_in("head -c 1000000 /dev/zero >&2; echo last >&2; exit 2", None);
        let out = run(cmd, Duration::from_secs(10), 1024).await.unwrap();
        assert_eq!(out.stderr.len(), budget::COMMAND_STDERR);
        assert!(out.stderr.ends_with(b"last\n"));
        assert!(!out.status.success());
    }
}
