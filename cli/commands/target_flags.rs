//! Target flags of `hookstorm run`: the same fields as `hookstorm.toml`, for
//! people who would rather not write a file. Flags override the file
//! (defaults < file < environment < command line).

use std::path::{Path, PathBuf};

use hookstorm::error::{read_toml, ConfigError};
use hookstorm::profile::signature::Secret;
use hookstorm::run::preflight::Words;
use hookstorm::state::probe::{ProbeConfig, SqlProbeConfig};
use hookstorm::target::{SelectionFile, Target, TargetFile};

/// Flags that describe a target.
#[derive(Debug, Clone, Default, clap::Args)]
#[command(next_help_heading = "Target (default: the built-in reference receiver)")]
pub struct TargetFlags {
    /// Target file (hookstorm.toml). Without it and without --url the
    /// built-in reference receiver is started and tested.
    #[arg(long)]
    pub target: Option<PathBuf>,
    /// Receiver URL; `{account}` is replaced by each delivery's account.
    #[arg(long)]
    pub url: Option<String>,
    /// Sender profile: a built-in name or a .toml file.
    #[arg(long)]
    pub profile: Option<String>,
    /// ACCOUNT=SECRET[,SECRET…] (or just SECRET for account acct_a); repeatable.
    /// Prefer --secret-env: command lines are visible to other users.
    #[arg(long = "secret", value_name = "ACCOUNT=SECRETS")]
    pub secrets: Vec<String>,
    /// ACCOUNT=VAR (or just VAR for acct_a): the account's secrets come from
    /// environment variable VAR, comma separated; repeatable.
    #[arg(long = "secret-env", value_name = "ACCOUNT=VAR")]
    pub secret_envs: Vec<String>,
    /// State probe: URL of a GET returning the state JSON.
    #[arg(long)]
    pub state_http: Option<String>,
    /// Environment variable holding the state URL's bearer token.
    #[arg(long)]
    pub state_token_env: Option<String>,
    /// State probe: the receiver's database URL (postgres://… or sqlite://…), default queries.
    #[arg(long)]
    pub state_sql: Option<String>,
    /// State probe: a command that prints the state JSON.
    #[arg(long)]
    pub state_command: Option<String>,
    /// Send to a non-https URL that is not loopback.
    #[arg(long)]
    pub allow_insecure: bool,
}

impl TargetFlags {
    /// Whether any flag names a target (otherwise the built-in receiver is used).
    pub fn given(&self) -> bool {
        self.target.is_some() || self.url.is_some()
    }

    /// The command-line words that reproduce this target (no secrets: only
    /// the file, URL and the names of environment variables).
    pub fn reproduce(&self) -> String {
        let mut out = String::new();
        if let Some(t) = &self.target {
            out.push_str(&format!(" --target {}", t.display()));
        }
        if let Some(u) = &self.url {
            out.push_str(&format!(" --url '{}'", hookstorm::target::redact_url(u)));
        }
        if let Some(p) = &self.profile {
            out.push_str(&format!(" --profile {p}"));
        }
        if !self.secrets.is_empty() {
            out.push_str(" --secret …");
        }
        for e in &self.secret_envs {
            out.push_str(&format!(" --secret-env {e}"));
        }
        for (flag, v) in [
            ("--state-http", &self.state_http),
            ("--state-token-env", &self.state_token_env),
            ("--state-command", &self.state_command),
        ] {
            if let Some(v) = v {
                out.push_str(&format!(" {flag} '{v}'"));
            }
        }
        if let Some(v) = &self.state_sql {
            out.push_str(&format!(
                " --state-sql '{}'",
                hookstorm::target::redact_url(v)
            ));
        }
        out
    }

    /// A flag whose value is wrong by itself (a URL without a scheme, an
    /// unknown profile, `--secret acct_a=` with no secret): the usage error
    /// that names the flag. What only the target can tell (an unset
    /// variable, a mistake in the target file, nothing listening) is left
    /// to [`TargetFlags::resolve`] and the preflight, which exit 3.
    pub fn check(&self) -> Result<(), String> {
        if let Some(u) = &self.url {
            url_flag(u)?;
            let file_allows = self
                .target
                .as_ref()
                .and_then(|p| read_toml::<TargetFile>(p).ok())
                .and_then(|f| f.allow_insecure);
            let allowed = self.allow_insecure || file_allows == Some(true);
            if hookstorm::target::check_url(u, Some(allowed)).is_err() {
                return Err(format!(
                    "--url {:?} is not https and not loopback; real senders mark such deliveries dead at once (hint: --allow-insecure to test anyway)",
                    hookstorm::target::redact_url(u)
                ));
            }
        }
        if let Some(p) = &self.profile {
            hookstorm::profile::Profile::resolve(p).map_err(|e| format!("--profile {e}"))?;
        }
        for spec in &self.secrets {
            let (account, list) = split_account(spec);
            if list.split(',').all(|s| s.trim().is_empty()) {
                return Err(format!(
                    "--secret {account}=: no secret (hint: --secret ACCOUNT=SECRET[,SECRET…], or --secret-env ACCOUNT=VAR)"
                ));
            }
        }
        for spec in &self.secret_envs {
            let (account, var) = split_account(spec);
            if var.is_empty() || var.contains(['=', ',', ' ']) {
                return Err(format!(
                    "--secret-env {spec}: expected ACCOUNT=VAR or VAR, VAR an environment variable's name (hint: --secret-env {account}=MY_SECRETS)"
                ));
            }
        }
        let probes = [
            (
                "--state-http",
                &self.state_http,
                ProbeConfig {
                    http: self.state_http.clone(),
                    ..Default::default()
                },
            ),
            (
                "--state-sql",
                &self.state_sql,
                ProbeConfig {
                    sql: self.state_sql.as_ref().map(|url| SqlProbeConfig {
                        url: url.clone(),
                        ..Default::default()
                    }),
                    ..Default::default()
                },
            ),
        ];
        for (flag, given, alone) in probes {
            if given.is_some() {
                if let Err(e) = hookstorm::state::probe::Probe::from_config(&alone) {
                    let e = e.to_string();
                    let e = e.strip_prefix("state probe: ").unwrap_or(&e);
                    return Err(format!(
                        "{flag} {}",
                        e.strip_prefix("sql url ").unwrap_or(e)
                    ));
                }
            }
        }
        Ok(())
    }

    /// The target file's `[scenarios]` section (empty without a file).
    pub fn selection(&self) -> Result<SelectionFile, ConfigError> {
        match &self.target {
            Some(path) => Ok(read_toml::<TargetFile>(path)?.scenarios),
            None => Ok(SelectionFile::default()),
        }
    }

    /// The preflight's words for `target`: how each part was given on the
    /// command line or in the file, or plainly for the built-in receiver.
    pub fn words_for(&self, target: &Target) -> Words {
        if self.given() {
            self.words()
        } else {
            Words::plain(target)
        }
    }

    /// How each part of the target was given, for the preflight's hints:
    /// the flag, or the key of the target file, or the environment variable.
    pub fn words(&self) -> Words {
        let file: TargetFile = self
            .target
            .as_ref()
            .and_then(|p| read_toml(p).ok())
            .unwrap_or_default();
        let name = self
            .target
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        let mut secrets = std::collections::BTreeMap::new();
        for (account, a) in &file.accounts {
            let w = match &a.secrets_env {
                Some(var) => format!("the secret in {var}"),
                None => format!("the secret in accounts.{account}.secrets of {name}"),
            };
            secrets.insert(account.clone(), w);
        }
        for spec in &self.secrets {
            let (account, _) = split_account(spec);
            let w = format!("the secret given with --secret {account}=…");
            secrets.insert(account, w);
        }
        for spec in &self.secret_envs {
            let (account, var) = split_account(spec);
            secrets.insert(account, format!("the secret in {var}"));
        }
        let url = match &self.url {
            Some(_) => "--url".to_string(),
            None => format!("url in {name}"),
        };
        let state = if self.state_http.is_some() {
            "--state-http".to_string()
        } else if self.state_sql.is_some() {
            "--state-sql".to_string()
        } else if self.state_command.is_some() {
            "--state-command".to_string()
        } else if file.state.sql.is_some() {
            format!("[state.sql] url in {name}")
        } else if file.state.command.is_some() {
            format!("[state] command in {name}")
        } else {
            format!("[state] http in {name}")
        };
        let token = match (
            &self.state_token_env,
            &file.state.token_env,
            &file.state.token,
        ) {
            (Some(var), _, _) | (None, Some(var), _) => Some(format!("the token in {var}")),
            (None, None, Some(_)) => Some(format!("the [state] token in {name}")),
            _ => None,
        };
        Words {
            secrets,
            url,
            state,
            token,
        }
    }

    /// The target file overridden by the flags, resolved.
    pub fn resolve(&self) -> Result<Target, ConfigError> {
        let origin: PathBuf = self
            .target
            .clone()
            .unwrap_or_else(|| PathBuf::from("<command line>"));
        let mut file: TargetFile = match &self.target {
            Some(path) => read_toml(path)?,
            None => TargetFile::default(),
        };
        if let Some(u) = &self.url {
            file.url = u.clone();
        }
        if let Some(p) = &self.profile {
            file.profile = Some(p.clone());
        }
        if self.allow_insecure {
            file.allow_insecure = Some(true);
        }
        for spec in &self.secrets {
            let (account, list) = split_account(spec);
            let entry = file.accounts.entry(account).or_default();
            entry.secrets = list
                .split(',')
                .filter(|s| !s.is_empty())
                .map(Secret::new)
                .collect();
        }
        for spec in &self.secret_envs {
            let (account, var) = split_account(spec);
            file.accounts.entry(account).or_default().secrets_env = Some(var);
        }
        let probe_flags = [
            self.state_http.is_some(),
            self.state_sql.is_some(),
            self.state_command.is_some(),
        ];
        if probe_flags.iter().any(|f| *f) {
            file.state = Default::default();
            file.state.http = self.state_http.clone();
            file.state.command = self.state_command.clone();
            file.state.sql = self.state_sql.as_ref().map(|url| SqlProbeConfig {
                url: url.clone(),
                ..Default::default()
            });
        }
        if let Some(var) = &self.state_token_env {
            file.state.token = None;
            file.state.token_env = Some(var.clone());
        }
        if file.url.is_empty() {
            return Err(ConfigError::invalid(
                &origin,
                "no receiver URL (hint: --url URL or url = \"…\" in the target file)",
            ));
        }
        Target::resolve(file, Path::new(&origin))
    }
}

/// `--url URL` that is no http(s) URL with a host: the usage error for it.
pub(crate) fn url_flag(url: &str) -> Result<(), String> {
    hookstorm::target::check_url(url, Some(true)).map_err(|e| {
        format!(
            "--url {} (hint: a URL like https://host/webhooks/{{account}})",
            e.strip_prefix("url ").unwrap_or(&e)
        )
    })
}

/// `acct=value` → (acct, value); a bare value belongs to `acct_a`.
fn split_account(spec: &str) -> (String, String) {
    match spec.split_once('=') {
        Some((a, v)) if !a.is_empty() && !a.contains(',') => (a.to_string(), v.to_string()),
        _ => ("acct_a".to_string(), spec.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_alone_describe_a_target() {
        let flags = TargetFlags {
            url: Some("http://127.0.0.1:9/webhooks/{account}".into()),
            secrets: vec!["acct_a=s1,s2".into(), "acct_b=s3".into()],
            state_http: Some("http://127.0.0.1:9/state".into()),
            ..Default::default()
        };
        let t = flags.resolve().unwrap();
        assert_eq!(t.secrets["acct_a"].len(), 2);
        assert_eq!(t.accounts(), vec!["acct_a", "acct_b"]);
        assert!(!flags.reproduce().contains("s1"));
    }

    #[test]
    fn no_url_is_a_clear_error() {
        let flags = TargetFlags {
            secrets: vec!["s".into()],
            ..Default::default()
        };
        let e = flags.resolve().unwrap_err().to_string();
        assert!(e.contains("no receiver URL"), "{e}");
    }

    #[test]
    fn words_name_the_flags_a_target_was_given_with() {
        let flags = TargetFlags {
            url: Some("http://127.0.0.1:9/webhooks/{account}".into()),
            secret_envs: vec!["MY_SECRETS".into()],
            state_http: Some("http://127.0.0.1:9/state".into()),
            state_token_env: Some("ADMIN_TOKEN".into()),
            ..Default::default()
        };
        let w = flags.words();
        assert_eq!(w.secrets["acct_a"], "the secret in MY_SECRETS");
        assert_eq!(w.url, "--url");
        assert_eq!(w.state, "--state-http");
        assert_eq!(w.token.as_deref(), Some("the token in ADMIN_TOKEN"));
    }

    #[test]
    fn a_bare_secret_belongs_to_acct_a() {
        assert_eq!(split_account("abc"), ("acct_a".into(), "abc".into()));
        assert_eq!(split_account("acct_b=x=y"), ("acct_b".into(), "x=y".into()));
    }
}
