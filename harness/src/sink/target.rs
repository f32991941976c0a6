//! A sender under test, as `hookstorm sink --target FILE` describes it
//! (`docs/sink.md`): the profile it documents, the secrets it signs with
//! per account, its three hooks (emit events, list its outbox, and
//! optionally reset it between scenarios) and, optionally, how the harness
//! starts it (`[lifecycle]`, which the crash scenarios need).
//!
//! Nothing here prints a secret: [`SenderTarget::describe`] is what
//! reports show.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

use crate::error::{read_toml, ConfigError};
use crate::lifecycle::LifecycleConfig;
use crate::profile::signature::Secret;
use crate::profile::Profile;
use crate::state::probe::{Hook, DEFAULT_TIMEOUT};
use crate::target::{resolve_accounts, AccountFile, Accounts};
use crate::text::units::HumanDuration;

/// `[hooks]` of a sender target file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HooksFile {
    /// Where events go: a URL (POSTed `{"events": [...]}`) or a command
    /// (the same JSON on its standard input).
    pub emit: String,
    /// The outbox listing: a URL (GET) or a command (its output).
    pub outbox: String,
    /// Empties the outbox before each scenario: a URL (POSTed `{}`) or a command.
    #[serde(default)]
    pub reset: Option<String>,
    /// A bearer token for URL hooks.
    #[serde(default)]
    pub token: Option<String>,
    /// An environment variable holding it.
    #[serde(default)]
    pub token_env: Option<String>,
    /// How long one hook may take.
    #[serde(default)]
    pub timeout: Option<HumanDuration>,
}

/// A sender target file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SenderFile {
    /// The profile the sender documents: a built-in name or a .toml path
    /// (relative to this file).
    #[serde(default)]
    pub profile: Option<String>,
    /// Where the sink listens (default `127.0.0.1:0`, a free port).
    #[serde(default)]
    pub listen: Option<String>,
    /// The secrets the sender signs with, per account.
    pub accounts: BTreeMap<String, AccountFile>,
    /// Emit, outbox and reset.
    pub hooks: HooksFile,
    /// How the harness starts (and crashes) the sender.
    #[serde(default)]
    pub lifecycle: Option<LifecycleConfig>,
    /// The sender's Postgres, reached through the harness's proxy.
    #[serde(default)]
    pub database: Option<SenderDatabaseFile>,
}

/// `[database]` of a sender target: the sender's Postgres connection goes
/// through a proxy of the harness, which reads the server's answers so a
/// crash can land the moment a write is committed.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SenderDatabaseFile {
    /// Where the proxy listens (the sender connects there) and the real server.
    pub proxy: crate::lifecycle::ProxyConfig,
}

/// A resolved sender target.
#[derive(Debug, Clone)]
pub struct SenderTarget {
    /// The profile it is judged by.
    pub profile: Profile,
    /// Where the sink listens.
    pub listen: String,
    /// Per account, the secrets its signatures may be made with.
    pub secrets: BTreeMap<String, Vec<Secret>>,
    /// Asks it to emit events.
    pub emit: Hook,
    /// Lists its outbox.
    pub outbox: Hook,
    /// Empties its outbox, if it can.
    pub reset: Option<Hook>,
    /// How the harness starts it.
    pub lifecycle: Option<LifecycleConfig>,
    /// The proxy before its Postgres, if it has one (`[database] proxy`).
    pub database_proxy: Option<crate::lifecycle::ProxyConfig>,
    /// What reports call it.
    pub name: String,
}

impl SenderTarget {
    /// Loads a sender target file; secrets may come from the environment.
    pub fn from_file(path: &Path) -> Result<SenderTarget, ConfigError> {
        let file: SenderFile = read_toml(path)?;
        Self::resolve(file, path)
    }

    /// Resolves a parsed file (relative paths against its folder).
    pub fn resolve(file: SenderFile, path: &Path) -> Result<SenderTarget, ConfigError> {
        let bad = |m: String| ConfigError::invalid(path, m);
        let profile = match &file.profile {
            None => Profile::default_profile(),
            Some(p) => {
                let local = path.parent().map(|d| d.join(p));
                let pick = match &local {
                    Some(l) if Profile::builtin(p).is_none() && l.exists() => {
                        l.display().to_string()
                    }
                    _ => p.clone(),
                };
                Profile::resolve(&pick).map_err(|e| bad(e.to_string()))?
            }
        };
        let Accounts { secrets, .. } = resolve_accounts(file.accounts, path)?;
        let h = &file.hooks;
        let token = match (&h.token, &h.token_env) {
            (Some(t), _) => Some(Secret::new(t.clone())),
            (None, Some(var)) => {
                Some(Secret::new(std::env::var(var).map_err(|_| {
                    bad(format!("hooks: environment variable {var} is not set"))
                })?))
            }
            (None, None) => None,
        };
        let timeout = h.timeout.map(|t| t.0).unwrap_or(DEFAULT_TIMEOUT);
        // Its commands run in its folder, as its relative paths are read from there.
        let dir = crate::target::folder_of(path);
        let hook = |name: &str, text: &str| {
            Hook::parse(text, token.clone(), timeout)
                .map(|h| h.in_dir(dir.clone()))
                .map_err(|e| bad(format!("hooks.{name}: {e}")))
        };
        let emit = hook("emit", &h.emit)?;
        Ok(SenderTarget {
            name: format!("sender (emit: {})", emit.describe()),
            emit,
            outbox: hook("outbox", &h.outbox)?,
            reset: h.reset.as_deref().map(|r| hook("reset", r)).transpose()?,
            profile,
            listen: file.listen.unwrap_or_else(|| "127.0.0.1:0".into()),
            secrets,
            lifecycle: file.lifecycle.map(|mut l| {
                l.dir = dir.clone();
                l
            }),
            database_proxy: file.database.map(|d| d.proxy),
        })
    }

    /// What reports show of it: its emit hook, never a secret.
    pub fn describe(&self) -> String {
        self.name.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sender_target_reads_its_hooks_accounts_and_profile() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sender.toml");
        std::fs::write(
            &p,
            "profile = \"generic-hex\"\n[accounts.acct_a]\nsecrets = [\"s3cret\"]\n[hooks]\nemit = \"http://127.0.0.1:9/emit\"\noutbox = \"cat outbox.json\"\n",
        )
        .unwrap();
        let t = SenderTarget::from_file(&p).unwrap();
        assert_eq!(t.profile.name, "generic-hex");
        assert!(t.reset.is_none());
        assert!(t.outbox.describe().contains("cat outbox.json"));
        assert!(!t.describe().contains("s3cret"));
        std::fs::write(
            &p,
            "[accounts.acct_a]\nsecrets = [\"x\"]\n[hooks]\nemit = \"\"\noutbox = \"x\"\n",
        )
        .unwrap();
        let e = SenderTarget::from_file(&p).unwrap_err().to_string();
        assert!(e.contains("hooks.emit"), "{e}");
        std::fs::write(&p, "[accounts.acct_a]\nsecrets = [\"x\"]\n").unwrap();
        let e = SenderTarget::from_file(&p).unwrap_err().to_string();
        assert!(e.contains("hooks"), "{e}");
    }
}
