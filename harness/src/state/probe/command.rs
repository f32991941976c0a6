//! The command probe: runs `sh -c CMD` and reads the state JSON from its
//! standard output. It suits receivers whose state is easiest to reach with
//! their own tools (`psql -At -c …`, a management command, `curl`).
//!
//! Its output may be either form of the state (the document or JSON
//! Lines); it is parsed as it is printed, never held whole.

use std::path::Path;
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::process::Command;

use super::error::ProbeError;
use super::redact::redact_text;
use crate::lifecycle::shell::{self, ShellError};
use crate::limits::budget;
use crate::state::stream::StateSink;

fn tail(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(5)..].join(" | ")
}

/// `sh -c cmd` in a group of its own that dies with the harness.
fn shell(cmd: &str, dir: Option<&Path>) -> Command {
    crate::lifecycle::shell::command_in(cmd, dir)
}

/// Runs a command with a time limit; returns its stdout (at most
/// [`budget::COMMAND_OUTPUT`]) or an error with the stderr tail. However
/// it ends, its process group is killed.
async fn run(
    cmd: &str,
    dir: Option<&Path>,
    env: &[(&str, String)],
    timeout: Duration,
) -> Result<Vec<u8>, ProbeError> {
    output(cmd, dir, env, None, timeout).await
}

/// Runs a command with `input` on its standard input and a time limit;
/// returns its stdout (at most [`budget::COMMAND_OUTPUT`]) or an error
/// with the stderr tail.
pub(crate) async fn output(
    cmd: &str,
    dir: Option<&Path>,
    env: &[(&str, String)],
    input: Option<Vec<u8>>,
    timeout: Duration,
) -> Result<Vec<u8>, ProbeError> {
    let shown = redact_text(cmd);
    let mut c = shell(cmd, dir);
    for (k, v) in env {
        c.env(k, v);
    }
    let out = shell::run_with_input(c, input, timeout, budget::COMMAND_OUTPUT)
        .await
        .map_err(|e| match e {
            ShellError::Timeout => ProbeError::Timeout {
                what: format!("command `{shown}`"),
                limit: timeout,
            },
            ShellError::TooMuchOutput(n) => ProbeError::Invalid(format!(
                "command `{shown}`: its output exceeded {}; the command was stopped (hint: an action prints a small JSON object or nothing)",
                budget::show(n)
            )),
            ShellError::Io(e) => ProbeError::Io(format!("command `{shown}`: {e}")),
        })?;
    if !out.status.success() {
        return Err(ProbeError::Io(format!(
            "command `{shown}` exited with {}: {}",
            out.status,
            tail(&out.stderr)
        )));
    }
    Ok(out.stdout)
}

/// Runs the command and streams its standard output, as the state, into `sink`.
pub(crate) async fn read_into<S: StateSink + Send + 'static>(
    cmd: &str,
    dir: Option<&Path>,
    timeout: Duration,
    sink: S,
) -> Result<S, ProbeError> {
    let shown = redact_text(cmd);
    let mut child = shell(cmd, dir)
        .spawn()
        .map_err(|e| ProbeError::Io(format!("command `{shown}`: {e}")))?;
    // However the read ends (done, timed out, the parser gave up), the
    // command's whole group goes with it.
    let _group = shell::Group::of(&child);
    let mut stdout = child.stdout.take().expect("piped");
    let stderr = child.stderr.take().expect("piped");
    let what = format!("command `{shown}` (stdout)");
    let run = super::http::parse_streamed(None, sink, what, |tx| async move {
        let errs = tokio::spawn(shell::tail_of(stderr, budget::COMMAND_STDERR));
        let mut parser_gone = false;
        loop {
            let mut buf = bytes::BytesMut::with_capacity(1 << 16);
            match stdout.read_buf(&mut buf).await {
                Ok(0) => break,
                Ok(_) => {
                    if !parser_gone && tx.send(Ok(buf.freeze())).await.is_err() {
                        parser_gone = true; // keep draining so the command can end
                    }
                }
                Err(e) => {
                    let _ = tx.send(Err(e.to_string())).await;
                    break;
                }
            }
        }
        drop(tx);
        let status = child
            .wait()
            .await
            .map_err(|e| ProbeError::Io(format!("command `{shown}`: {e}")))?;
        let stderr = errs.await.unwrap_or_default();
        if !status.success() {
            return Err(ProbeError::Io(format!(
                "command `{shown}` exited with {status}: {}",
                tail(&stderr)
            )));
        }
        Ok(())
    });
    tokio::time::timeout(timeout, run)
        .await
        .map_err(|_| ProbeError::Timeout {
            what: format!("command `{}`", redact_text(cmd)),
            limit: timeout,
        })?
}

#[cfg(test)]
async fn read_state(cmd: &str, timeout: Duration) -> Result<crate::state::State, ProbeError> {
    read_into(cmd, None, timeout, crate::state::State::default()).await
}

/// Runs an action command; its stdout as JSON when it is JSON, else as text.
pub(crate) async fn run_action(
    cmd: &str,
    dir: Option<&Path>,
    env: &[(&str, String)],
    timeout: Duration,
) -> Result<serde_json::Value, ProbeError> {
    let out = run(cmd, dir, env, timeout).await?;
    if out.iter().all(u8::is_ascii_whitespace) {
        return Ok(serde_json::Value::Null);
    }
    Ok(serde_json::from_slice(&out).unwrap_or_else(|_| {
        serde_json::Value::String(String::from_utf8_lossy(&out).trim().to_string())
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn command_output_is_read_as_state() {
        let s = read_state(
            r#"echo '{"inbox":[{"key":"t1","processed":true}]}'"#,
            Duration::from_secs(5),
        )
        .await
        .unwrap();
        assert_eq!(s.inbox[0].key, "t1");
    }

    #[tokio::test]
    async fn command_output_in_json_lines_is_read_as_state() {
        let s = read_state(
            r#"printf '%s\n' '{"sections":["inbox","effects"]}' '{"inbox":{"key":"t1"}}'"#,
            Duration::from_secs(5),
        )
        .await
        .unwrap();
        assert_eq!(s.inbox[0].key, "t1");
        assert_eq!(s.effects, Some(vec![]));
    }

    #[tokio::test]
    async fn failing_command_reports_its_stderr_tail() {
        let e = read_state("echo boom >&2; exit 3", Duration::from_secs(5))
            .await
            .unwrap_err();
        let e = e.to_string();
        assert!(e.contains("boom") && e.contains('3'), "{e}");
    }

    #[tokio::test]
    async fn bad_json_names_what_was_expected() {
        let e = read_state("echo nope", Duration::from_secs(5))
            .await
            .unwrap_err()
            .to_string();
        assert!(e.contains("expected the state JSON"), "{e}");
    }

    #[tokio::test]
    async fn slow_command_times_out() {
        let e = read_state("sleep 5", Duration::from_millis(200))
            .await
            .unwrap_err();
        assert!(matches!(e, ProbeError::Timeout { .. }), "{e}");
    }

    #[tokio::test]
    async fn action_commands_see_the_setup_state() {
        let v = run_action(
            "echo $HOOKSTORM_SETUP_STATE",
            None,
            &[("HOOKSTORM_SETUP_STATE", "kill-after-commit".into())],
            Duration::from_secs(5),
        )
        .await
        .unwrap();
        assert_eq!(v, serde_json::json!("kill-after-commit"));
    }

    #[tokio::test]
    async fn a_command_runs_in_the_folder_it_is_given() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("state.json"), r#"{"inbox": []}"#).unwrap();
        let v = run_action(
            "cat state.json",
            Some(dir.path()),
            &[],
            Duration::from_secs(5),
        )
        .await
        .unwrap();
        assert_eq!(v, serde_json::json!({"inbox": []}));
        assert!(
            run_action("cat state.json", None, &[], Duration::from_secs(5))
                .await
                .is_err()
        );
    }
}
