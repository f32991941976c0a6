//! A target's hook that is not a state read: a URL (POSTed to, or read
//! with GET) or a shell command (fed JSON on its standard input, read from
//! its standard output). `hookstorm sink` drives a sender under test with
//! three of them: emit, outbox and reset (`docs/sink.md`). The transport,
//! budgets, redaction and errors are the probe's own.

use std::time::Duration;

use super::action::Action;
use super::error::ProbeError;
use super::{command, http};
use crate::net::tls::TrustedRoots;
use crate::profile::signature::Secret;

/// One hook: where it is and how it is called.
#[derive(Clone)]
pub struct Hook {
    action: Action,
    token: Option<Secret>,
    timeout: Duration,
    roots: TrustedRoots,
    dir: Option<std::path::PathBuf>,
}

impl std::fmt::Debug for Hook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

impl Hook {
    /// A hook from its text: an `http://` or `https://` URL, else a shell
    /// command; `token` is sent as `Authorization: Bearer` to a URL.
    pub fn parse(text: &str, token: Option<Secret>, timeout: Duration) -> Result<Hook, ProbeError> {
        let action = Action::parse(text);
        if let Action::Http(url) = &action {
            http::check_url(url)?;
        }
        if matches!(&action, Action::Command(c) if c.is_empty()) {
            return Err(ProbeError::Config(
                "an empty hook (hint: a URL like http://127.0.0.1:9000/emit, or a command)".into(),
            ));
        }
        Ok(Hook {
            action,
            token,
            timeout,
            roots: TrustedRoots::default(),
            dir: None,
        })
    }

    /// Runs a command hook in `dir` (the folder of the file that names it).
    pub fn in_dir(mut self, dir: Option<std::path::PathBuf>) -> Hook {
        self.dir = dir;
        self
    }

    /// Trusts these CA certificates too for an https hook.
    pub fn with_roots(mut self, roots: TrustedRoots) -> Hook {
        self.roots = roots;
        self
    }

    /// What it is, for messages: the URL without secrets, or the command.
    pub fn describe(&self) -> String {
        self.action.describe()
    }

    /// Sends `body`: POSTed as JSON to a URL, or on a command's standard
    /// input. Returns the answer as JSON (or text, or null when empty).
    pub async fn post(&self, body: &serde_json::Value) -> Result<serde_json::Value, ProbeError> {
        let token = self.token.as_ref().map(Secret::expose);
        let work = async {
            match &self.action {
                Action::Http(url) => http::post(url, token, body.clone(), &self.roots).await,
                Action::Command(c) => {
                    let out = command::output(
                        c,
                        self.dir.as_deref(),
                        &[],
                        Some(body.to_string().into_bytes()),
                        self.timeout,
                    )
                    .await?;
                    if out.iter().all(u8::is_ascii_whitespace) {
                        return Ok(serde_json::Value::Null);
                    }
                    Ok(serde_json::from_slice(&out).unwrap_or_else(|_| {
                        serde_json::Value::String(String::from_utf8_lossy(&out).trim().to_string())
                    }))
                }
                Action::Sql(_) => Err(ProbeError::Config("a hook is a URL or a command".into())),
            }
        };
        self.bounded(work).await
    }

    /// Reads the hook's answer: a GET of a URL, or a command's output, up
    /// to `cap` bytes.
    pub async fn read(&self, cap: usize) -> Result<Vec<u8>, ProbeError> {
        let token = self.token.as_ref().map(Secret::expose);
        let work = async {
            match &self.action {
                Action::Http(url) => http::get(url, token, cap, &self.roots)
                    .await
                    .map(|b| b.to_vec()),
                Action::Command(c) => {
                    let out =
                        command::output(c, self.dir.as_deref(), &[], None, self.timeout).await?;
                    if out.len() > cap {
                        return Err(ProbeError::Invalid(format!(
                            "{}: its output exceeded {}",
                            self.describe(),
                            crate::limits::budget::show(cap)
                        )));
                    }
                    Ok(out)
                }
                Action::Sql(_) => Err(ProbeError::Config("a hook is a URL or a command".into())),
            }
        };
        self.bounded(work).await
    }

    async fn bounded<T>(
        &self,
        work: impl std::future::Future<Output = Result<T, ProbeError>>,
    ) -> Result<T, ProbeError> {
        tokio::time::timeout(self.timeout, work)
            .await
            .unwrap_or_else(|_| {
                Err(ProbeError::Timeout {
                    what: self.describe(),
                    limit: self.timeout,
                })
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_command_hook_reads_its_json_on_stdin_and_answers_on_stdout() {
        let h = Hook::parse("cat", None, Duration::from_secs(5)).unwrap();
        let v = h
            .post(&serde_json::json!({"events": [1, 2]}))
            .await
            .unwrap();
        assert_eq!(v, serde_json::json!({"events": [1, 2]}));
        let h = Hook::parse("echo '[]'", None, Duration::from_secs(5)).unwrap();
        assert_eq!(h.read(1024).await.unwrap(), b"[]\n");
        assert!(h.read(1).await.is_err());
    }

    #[tokio::test]
    async fn a_failing_or_slow_hook_is_an_error_that_names_it() {
        let h = Hook::parse("echo nope >&2; exit 4", None, Duration::from_secs(5)).unwrap();
        let e = h.read(1024).await.unwrap_err().to_string();
        assert!(e.contains("nope"), "{e}");
        let h = Hook::parse("sleep 5", None, Duration::from_millis(100)).unwrap();
        assert!(matches!(
            h.post(&serde_json::json!({})).await,
            Err(ProbeError::Timeout { .. })
        ));
        assert!(Hook::parse("http://[::1", None, Duration::from_secs(1)).is_err());
    }
}
