//! The target: which receiver to test, how to sign for it, and how to read
//! its state. Comes from a `hookstorm.toml` file or from flags.
//!
//! Secrets may be written in the file, but the expected way is an
//! environment variable (`secrets_env`), so they stay out of files that get
//! committed. Nothing here ever prints a secret: [`Target::describe`] is what
//! reports show.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::error::{read_toml, ConfigError};
use crate::lifecycle::{DatabaseConfig, LifecycleConfig};
use crate::profile::signature::Secret;
use crate::profile::Profile;
use crate::provider::Provider;
use crate::state::probe::{Probe, ProbeConfig, ProbeError};

/// The secrets of one account.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccountFile {
    /// The secrets, current first; several during a rotation.
    #[serde(default)]
    pub secrets: Vec<Secret>,
    /// An environment variable holding the secrets, comma separated.
    #[serde(default)]
    pub secrets_env: Option<String>,
    /// A secret the receiver no longer accepts (for the key-rotation scenario).
    #[serde(default)]
    pub retired: Option<Secret>,
    /// An environment variable holding the retired secret, so that it is
    /// never written in the target file.
    #[serde(default)]
    pub retired_env: Option<String>,
}

/// The `hookstorm.toml` file (or the same built from command-line flags).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetFile {
    /// The receiver URL; `{account}` is replaced per delivery.
    pub url: String,
    /// Sender profile: built-in name or a .toml path.
    #[serde(default)]
    pub profile: Option<String>,
    /// Send to non-https URLs (on for loopback).
    #[serde(default)]
    pub allow_insecure: Option<bool>,
    /// The receiver's body limit in bytes (oversized bodies go past it).
    #[serde(default)]
    pub max_body: Option<usize>,
    /// A PEM file of CA certificates to trust for https, beyond the web roots.
    #[serde(default)]
    pub ca_cert: Option<std::path::PathBuf>,
    /// Accounts and their secrets.
    pub accounts: BTreeMap<String, AccountFile>,
    /// How to read the receiver's state.
    pub state: ProbeConfig,
    /// How to start, watch and restart the receiver (process scenarios).
    #[serde(default)]
    pub lifecycle: Option<LifecycleConfig>,
    /// How to cut the receiver's database (db-outage).
    #[serde(default)]
    pub database: Option<DatabaseConfig>,
    /// The provider API the harness serves for reconciliation scenarios.
    #[serde(default)]
    pub provider: Option<ProviderFile>,
    /// Which scenarios this target runs, and whether every one must.
    #[serde(default)]
    pub scenarios: SelectionFile,
}

/// `[scenarios]`: the target's own selection, merged with the command
/// line's (`--scenario` replaces `only`, `--tag` replaces `tags`; skips
/// add up; `require_all` holds if either says so).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SelectionFile {
    /// Run only these scenarios.
    #[serde(default)]
    pub only: Vec<String>,
    /// Leave these scenarios out.
    #[serde(default)]
    pub skip: Vec<String>,
    /// Run only scenarios with one of these tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Leave out scenarios with any of these tags.
    #[serde(default)]
    pub skip_tags: Vec<String>,
    /// A scenario skipped for an unmet need fails the run.
    #[serde(default)]
    pub require_all: bool,
}

/// `[provider]`: where the harness serves its provider API, and its key.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderFile {
    /// The address to listen on (`127.0.0.1:7070`); the receiver's
    /// reconciliation job must be configured with `http://` plus this.
    pub listen: String,
    /// An environment variable holding the API key the receiver sends.
    #[serde(default)]
    pub key_env: Option<String>,
}

/// A resolved target, ready to send to.
#[derive(Debug, Clone)]
pub struct Target {
    /// The receiver URL; may contain `{account}`.
    pub url: String,
    /// The sender profile.
    pub profile: Profile,
    /// Secrets per account, current first.
    pub secrets: BTreeMap<String, Vec<Secret>>,
    /// Retired secrets per account (rejected by the receiver).
    pub retired: BTreeMap<String, Secret>,
    /// The environment variable each account's secrets came from
    /// (`secrets_env`), for scripts that must name it, never the value.
    pub secret_vars: BTreeMap<String, String>,
    /// The receiver's body limit.
    pub max_body: usize,
    /// The probe configuration.
    pub state: ProbeConfig,
    /// Extra trusted CA certificates for https.
    pub roots: crate::net::tls::TrustedRoots,
    /// Lifecycle control, when the harness owns the receiver's processes.
    pub lifecycle: Option<LifecycleConfig>,
    /// Database control (empty when none).
    pub database: DatabaseConfig,
    /// The provider API (bound, served during the run), if configured.
    pub provider: Option<Provider>,
}

/// The environment variable an account's secrets are read from when
/// nothing names one: `HOOKSTORM_SECRETS_<ACCOUNT>`, the account upper-cased
/// and every other character `_` (`hookstorm init` writes it, a shrink's
/// replay script reads it).
pub fn default_secrets_var(account: &str) -> String {
    let name: String = account
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    format!("HOOKSTORM_SECRETS_{name}")
}

/// The folder a file named by `path` is in, absolute (where its commands
/// run and its relative paths are read from); `None` when it cannot be
/// found.
pub fn folder_of(path: &Path) -> Option<std::path::PathBuf> {
    std::fs::canonicalize(path)
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
}

/// The default body limit assumed for a receiver (1 MiB).
pub const DEFAULT_MAX_BODY: usize = 1 << 20;

impl Target {
    /// The probe of the target's state, the one way every command builds
    /// it: the `[state]` section, with the target's trusted CA roots for an
    /// https state URL.
    pub fn probe(&self) -> Result<Probe, ProbeError> {
        Ok(Probe::from_config(&self.state)?.with_roots(self.roots.clone()))
    }

    /// Loads and resolves a target file (secrets from the environment).
    /// Its commands (`[lifecycle]`, `[database]`, `[state]`) run in its
    /// folder, as its relative paths are read from there.
    pub fn from_file(path: &Path) -> Result<Target, ConfigError> {
        let file: TargetFile = read_toml(path)?;
        let mut t = Self::resolve(file, path)?;
        t.run_commands_in(folder_of(path));
        Ok(t)
    }

    /// Runs every command of the target in `dir`, and reads its relative
    /// `[database] sqlite` path from there.
    pub fn run_commands_in(&mut self, dir: Option<std::path::PathBuf>) {
        self.state.dir = dir.clone();
        if let (Some(d), Some(f)) = (&dir, &self.database.sqlite) {
            if f.is_relative() {
                self.database.sqlite = Some(d.join(f));
            }
        }
        self.database.dir = dir.clone();
        if let Some(l) = &mut self.lifecycle {
            l.dir = dir;
        }
    }

    /// Resolves a parsed target file.
    pub fn resolve(file: TargetFile, path: &Path) -> Result<Target, ConfigError> {
        let profile = Profile::resolve(
            file.profile
                .as_deref()
                .unwrap_or(crate::profile::DEFAULT_PROFILE),
        )
        .map_err(|e| ConfigError::invalid(path, e.to_string()))?;
        check_url(&file.url, file.allow_insecure).map_err(|m| ConfigError::invalid(path, m))?;
        if let Some(db) = &file.database {
            // One command alone would stop a database nothing starts again,
            // or start one nothing stopped.
            match (&db.stop, &db.start) {
                (Some(_), None) => {
                    return Err(ConfigError::invalid(
                        path,
                        "[database] stop without start: the harness restores what it cuts (hint: add start = \"…\")",
                    ))
                }
                (None, Some(_)) => {
                    return Err(ConfigError::invalid(
                        path,
                        "[database] start without stop (hint: add stop = \"…\", or use proxy or sqlite)",
                    ))
                }
                _ => {}
            }
        }
        let Accounts {
            secrets,
            retired,
            vars: secret_vars,
        } = resolve_accounts(file.accounts, path)?;
        let roots = match &file.ca_cert {
            Some(p) => {
                let p = path
                    .parent()
                    .map(|d| d.join(p))
                    .unwrap_or_else(|| p.clone());
                crate::net::tls::TrustedRoots::load_pem(&p)
                    .map_err(|e| ConfigError::invalid(path, e.to_string()))?
            }
            None => Default::default(),
        };
        let provider = match &file.provider {
            None => None,
            Some(p) => {
                let key = match &p.key_env {
                    Some(var) => Secret::new(std::env::var(var).map_err(|_| {
                        ConfigError::invalid(
                            path,
                            format!("provider: environment variable {var} is not set"),
                        )
                    })?),
                    None => {
                        return Err(ConfigError::invalid(
                            path,
                            "provider: no key (hint: key_env = \"HOOKSTORM_PROVIDER_KEY\")",
                        ))
                    }
                };
                Some(Provider::bind(&p.listen, key).map_err(|e| {
                    ConfigError::invalid(
                        path,
                        format!("provider: cannot listen on {}: {e}", p.listen),
                    )
                })?)
            }
        };
        let lifecycle = with_provider_url(
            checked_failpoints(file.lifecycle, path)?,
            provider.as_ref().map(Provider::url),
            path,
        )?;
        Ok(Target {
            roots,
            provider,
            url: file.url,
            profile,
            secrets,
            retired,
            secret_vars,
            max_body: match file.max_body {
                Some(0) => {
                    return Err(ConfigError::invalid(
                        path,
                        "max_body = 0: no delivery fits (hint: the receiver's body limit in bytes, or leave it out)",
                    ))
                }
                Some(n) => n,
                None => DEFAULT_MAX_BODY,
            },
            state: file.state,
            lifecycle,
            database: file.database.unwrap_or_default(),
        })
    }

    /// The account names, sorted.
    pub fn accounts(&self) -> Vec<String> {
        self.secrets.keys().cloned().collect()
    }

    /// A description for reports: the URL without userinfo or query; never a
    /// secret.
    pub fn describe(&self) -> String {
        redact_url(&self.url)
    }
}

/// `[lifecycle]` with `{provider}` in its commands and environment
/// replaced by the provider API's base URL (`http://HOST:PORT`), so that a
/// receiver's reconciliation job is told where hookstorm serves the API,
/// port 0 included. `{provider}` in a target without `[provider]` is refused.
fn with_provider_url(
    lifecycle: Option<LifecycleConfig>,
    url: Option<String>,
    path: &Path,
) -> Result<Option<LifecycleConfig>, ConfigError> {
    const WORD: &str = "{provider}";
    let Some(mut l) = lifecycle else {
        return Ok(None);
    };
    if l.replace_word(WORD, url.as_deref()) && url.is_none() {
        return Err(ConfigError::invalid(
            path,
            "[lifecycle] says {provider}, but the target has no [provider] (hint: add [provider] with listen and key_env)",
        ));
    }
    Ok(Some(l))
}

/// The `[lifecycle]` table, refused when an `env` of it sets
/// `HOOKSTORM_FAILPOINTS` to crash points a receiver does not know: found
/// only when the receiver refuses to start, it would read as a target
/// that cannot be reached.
fn checked_failpoints(
    life: Option<LifecycleConfig>,
    path: &Path,
) -> Result<Option<LifecycleConfig>, ConfigError> {
    let Some(l) = &life else { return Ok(life) };
    let envs = [
        ("lifecycle", Some(&l.env)),
        ("lifecycle.worker", l.worker.as_ref().map(|w| &w.env)),
    ];
    for (table, env) in envs {
        if let Some(spec) = env.and_then(|e| e.get("HOOKSTORM_FAILPOINTS")) {
            crate::fault_spec::failpoint::check(spec).map_err(|e| {
                ConfigError::invalid(path, format!("[{table}] env.HOOKSTORM_FAILPOINTS: {e}"))
            })?;
        }
    }
    Ok(life)
}

/// An account file's secrets, resolved (from the file or the environment).
#[derive(Debug, Clone, Default)]
pub struct Accounts {
    /// Per account, its secrets, current first.
    pub secrets: BTreeMap<String, Vec<Secret>>,
    /// Per account, a secret it no longer accepts.
    pub retired: BTreeMap<String, Secret>,
    /// Per account, the environment variable its secrets came from.
    pub vars: BTreeMap<String, String>,
}

/// Resolves `[accounts.NAME]` tables: each needs a secret, in the file or
/// in the environment variable it names. Errors name the file.
pub fn resolve_accounts(
    accounts: BTreeMap<String, AccountFile>,
    path: &Path,
) -> Result<Accounts, ConfigError> {
    if accounts.is_empty() {
        return Err(ConfigError::invalid(
            path,
            "no [accounts.NAME] table (hint: [accounts.acct_a] secrets_env = \"HOOKSTORM_SECRET\")",
        ));
    }
    let mut secrets = BTreeMap::new();
    let mut retired = BTreeMap::new();
    let mut secret_vars = BTreeMap::new();
    for (name, acct) in accounts {
        let mut list = acct.secrets;
        if let Some(var) = &acct.secrets_env {
            let value = account_var(path, &name, var, "")?;
            list.extend(
                value
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(Secret::new),
            );
        }
        if list.is_empty() {
            return Err(ConfigError::invalid(
                path,
                format!("accounts.{name}: no secret (hint: secrets_env = \"VAR\")"),
            ));
        }
        // An empty key signs anything anyone can sign: never a secret.
        if list.iter().any(|s| s.expose().is_empty()) {
            return Err(ConfigError::invalid(
                path,
                format!(
                    "accounts.{name}: an empty secret (every secret has at least one character)"
                ),
            ));
        }
        if let Some(r) = retired_of(acct.retired, acct.retired_env.as_deref(), &name, path)? {
            retired.insert(name.clone(), r);
        }
        if let Some(var) = acct.secrets_env {
            secret_vars.insert(name.clone(), var);
        }
        secrets.insert(name, list);
    }
    Ok(Accounts {
        secrets,
        retired,
        vars: secret_vars,
    })
}

/// The value of environment variable `var` that account `name` names
/// (`what`: which key named it, for the message).
fn account_var(path: &Path, name: &str, var: &str, what: &str) -> Result<String, ConfigError> {
    std::env::var(var).map_err(|_| {
        ConfigError::invalid(
            path,
            format!("accounts.{name}: environment variable {var}{what} is not set"),
        )
    })
}

/// The account's retired secret: from `retired_env` or `retired`, never both.
fn retired_of(
    retired: Option<Secret>,
    retired_env: Option<&str>,
    name: &str,
    path: &Path,
) -> Result<Option<Secret>, ConfigError> {
    match (retired, retired_env) {
        (Some(_), Some(_)) => Err(ConfigError::invalid(
            path,
            format!("accounts.{name}: both retired and retired_env (hint: keep retired_env, so the secret stays out of the file)"),
        )),
        (Some(r), None) => Ok(Some(r)),
        (None, Some(var)) => {
            let value = account_var(path, name, var, " (retired_env)")?;
            let value = value.trim();
            if value.is_empty() {
                return Err(ConfigError::invalid(
                    path,
                    format!("accounts.{name}: environment variable {var} (retired_env) is empty"),
                ));
            }
            Ok(Some(Secret::new(value)))
        }
        (None, None) => Ok(None),
    }
}

/// Checks the URL's form; non-https is refused unless allowed or loopback.
pub fn check_url(url: &str, allow_insecure: Option<bool>) -> Result<(), String> {
    let probe = url.replace("{account}", "acct");
    let uri: http::Uri = probe
        .parse()
        .map_err(|e| format!("url {:?} is not a URL: {e}", redact_url(url)))?;
    let scheme = uri.scheme_str().unwrap_or("");
    let host = uri.host().unwrap_or("");
    if scheme != "http" && scheme != "https" {
        return Err(format!(
            "url {:?}: expected http:// or https://",
            redact_url(url)
        ));
    }
    if host.is_empty() {
        return Err(format!("url {:?} has no host", redact_url(url)));
    }
    let loopback =
        host == "localhost" || host.starts_with("127.") || host == "[::1]" || host == "::1";
    if scheme == "http" && !loopback && allow_insecure != Some(true) {
        return Err(format!(
            "url {:?} is not https; real senders mark such deliveries dead at once (hint: allow_insecure = true to test anyway)",
            redact_url(url)
        ));
    }
    Ok(())
}

/// Removes userinfo and query string from a URL for display.
pub fn redact_url(url: &str) -> String {
    let mut out = url.to_string();
    if let Some(scheme_end) = out.find("://") {
        let rest_start = scheme_end + 3;
        if let Some(at) = out[rest_start..].find('@') {
            let slash = out[rest_start..].find('/').unwrap_or(usize::MAX);
            if at < slash {
                out.replace_range(rest_start..rest_start + at + 1, "***@");
            }
        }
    }
    if let Some(q) = out.find('?') {
        out.truncate(q);
        out.push_str("?***");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_redacted_for_reports() {
        assert_eq!(
            redact_url("postgres://u:pw@h:5432/db"),
            "postgres://***@h:5432/db"
        );
        assert_eq!(redact_url("http://h/x?token=abc"), "http://h/x?***");
        assert_eq!(
            redact_url("http://127.0.0.1:8080/webhooks"),
            "http://127.0.0.1:8080/webhooks"
        );
    }

    #[test]
    fn plain_http_to_a_public_host_needs_allow_insecure() {
        assert!(check_url("http://example.com/hook", None).is_err());
        assert!(check_url("http://example.com/hook", Some(true)).is_ok());
        assert!(check_url("http://127.0.0.1:9/webhooks/{account}", None).is_ok());
        assert!(check_url("https://example.com/hook", None).is_ok());
        assert!(check_url("ftp://x/y", Some(true)).is_err());
        assert!(check_url("not a url", None).is_err());
    }

    #[test]
    fn the_shipped_example_target_parses() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../hookstorm.example.toml");
        let file: TargetFile = read_toml(&path).unwrap_or_else(|e| panic!("{e}"));
        assert!(file.url.contains("{account}"));
        assert!(!file.accounts.is_empty());
    }

    #[test]
    fn lifecycle_and_database_tables_are_read_from_the_target_file() {
        let text = "url = \"http://127.0.0.1:1/w\"\n[accounts.acct_a]\nsecrets = [\"s\"]\n[state]\nhttp = \"http://127.0.0.1:2/state\"\n[lifecycle]\nstart = \"./r\"\nready = { tcp = \"127.0.0.1:1\" }\n[lifecycle.worker]\nstart = \"./w\"\n[database]\nproxy = { listen = \"127.0.0.1:3\", upstream = \"127.0.0.1:5432\" }\n";
        let file: TargetFile = crate::error::parse_toml(Path::new("t.toml"), text).unwrap();
        let t = Target::resolve(file, Path::new("t.toml")).unwrap();
        assert_eq!(t.lifecycle.unwrap().worker.unwrap().start, "./w");
        assert_eq!(t.database.proxy.unwrap().upstream, "127.0.0.1:5432");
    }

    /// A target file's text, resolved as if read from `t.toml`.
    fn resolve_text(text: &str) -> Result<Target, ConfigError> {
        let file: TargetFile = crate::error::parse_toml(Path::new("t.toml"), text).unwrap();
        Target::resolve(file, Path::new("t.toml"))
    }

    #[test]
    fn provider_in_lifecycle_commands_and_environment_becomes_the_provider_apis_url() {
        let base = "url = \"http://127.0.0.1:1/w\"\n[accounts.acct_a]\nsecrets = [\"s\"]\n[state]\nhttp = \"http://127.0.0.1:2/state\"\n[lifecycle]\nstart = \"./r --api {provider}\"\nready = { tcp = \"127.0.0.1:1\" }\nenv = { API = \"{provider}/v1\" }\n[lifecycle.worker]\nstart = \"./w {provider}\"\n";
        let load = |extra: &str| resolve_text(&format!("{base}{extra}"));
        std::env::set_var("HOOKSTORM_TEST_PROVIDER_KEY", "k");
        let t = load(
            "[provider]\nlisten = \"127.0.0.1:0\"\nkey_env = \"HOOKSTORM_TEST_PROVIDER_KEY\"\n",
        )
        .unwrap();
        let url = t.provider.as_ref().unwrap().url();
        assert!(!url.ends_with(":0"), "{url}: the bound port");
        let l = t.lifecycle.unwrap();
        assert_eq!(l.start, format!("./r --api {url}"));
        assert_eq!(l.env["API"], format!("{url}/v1"));
        assert_eq!(l.worker.unwrap().start, format!("./w {url}"));
        let e = load("").unwrap_err().to_string();
        assert!(
            e.contains("{provider}") && e.contains("no [provider]"),
            "{e}"
        );
    }

    #[test]
    fn a_retired_secret_comes_from_the_environment_when_the_file_names_a_variable() {
        let base = "url = \"http://127.0.0.1:1/w\"\n[state]\nhttp = \"http://127.0.0.1:2/state\"\n[accounts.acct_a]\nsecrets = [\"s\"]\n";
        let load = |extra: &str| resolve_text(&format!("{base}{extra}"));
        std::env::set_var("HOOKSTORM_TEST_RETIRED_A", "whsec_2019");
        let t = load("retired_env = \"HOOKSTORM_TEST_RETIRED_A\"\n").unwrap();
        assert_eq!(t.retired["acct_a"].expose(), "whsec_2019");
        let e = load("retired_env = \"HOOKSTORM_TEST_RETIRED_UNSET\"\n").unwrap_err();
        assert!(
            e.to_string()
                .contains("HOOKSTORM_TEST_RETIRED_UNSET (retired_env) is not set"),
            "{e}"
        );
        let e = load("retired = \"x\"\nretired_env = \"HOOKSTORM_TEST_RETIRED_A\"\n").unwrap_err();
        assert!(
            e.to_string().contains("both retired and retired_env"),
            "{e}"
        );
    }

    #[tokio::test]
    async fn a_target_files_commands_and_paths_are_taken_from_its_folder() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("receiver");
        std::fs::create_dir(&folder).unwrap();
        std::fs::write(
            folder.join("state.json"),
            r#"{"inbox": [{"key": "k1", "account": "acct_a", "processed": true}]}"#,
        )
        .unwrap();
        std::fs::write(
            folder.join("t.toml"),
            "url = \"http://127.0.0.1:1/w\"\n[accounts.acct_a]\nsecrets = [\"s\"]\n[state]\ncommand = \"cat state.json\"\n[database]\nsqlite = \"r.db\"\n[lifecycle]\nstart = \"pwd > started-in.txt; exec sleep 30\"\nready = { command = \"test -f started-in.txt\" }\n",
        )
        .unwrap();
        // hookstorm's working directory is elsewhere (the crate's folder).
        let t = Target::from_file(&folder.join("t.toml")).unwrap();
        let state = t.probe().unwrap().read_state().await.unwrap();
        assert_eq!(state.inbox.len(), 1);
        let canonical = std::fs::canonicalize(&folder).unwrap();
        assert_eq!(t.database.sqlite, Some(canonical.join("r.db")));
        let log = dir.path().join("logs");
        let sup = crate::lifecycle::Supervisor::start(
            t.lifecycle.clone().unwrap(),
            t.database.clone(),
            &log,
        )
        .await
        .unwrap();
        let started = std::fs::read_to_string(folder.join("started-in.txt")).unwrap();
        assert_eq!(started.trim(), canonical.display().to_string());
        drop(sup);
    }

    #[test]
    fn an_empty_secret_a_zero_body_limit_and_a_lone_database_command_are_refused() {
        let secret = "[accounts.acct_a]\nsecrets = [\"s\"]\n";
        // (top-level keys, tables, what the error says)
        for (top, tables, says) in [
            (
                "",
                "[accounts.acct_a]\nsecrets = [\"\"]\n",
                "accounts.acct_a: an empty secret",
            ),
            (
                "",
                "[accounts.acct_a]\nsecrets = [\"s\", \"\"]\n",
                "an empty secret",
            ),
            ("max_body = 0\n", secret, "max_body = 0"),
            (
                "",
                &format!("{secret}[database]\nstop = \"pg_ctl stop\"\n"),
                "stop without start",
            ),
            (
                "",
                &format!("{secret}[database]\nstart = \"pg_ctl start\"\n"),
                "start without stop",
            ),
            (
                "",
                &format!("{secret}[lifecycle]\nstart = \"./r\"\nready = {{ tcp = \"127.0.0.1:1\" }}\nenv = {{ HOOKSTORM_FAILPOINTS = \"crash-after-comit=1/6\" }}\n"),
                "[lifecycle] env.HOOKSTORM_FAILPOINTS: failpoint \"crash-after-comit=1/6\": unknown crash point",
            ),
        ] {
            let text = format!(
                "url = \"http://127.0.0.1:1/w\"\n{top}[state]\nhttp = \"http://127.0.0.1:2/state\"\n{tables}"
            );
            let file: TargetFile = crate::error::parse_toml(Path::new("t.toml"), &text).unwrap();
            let e = Target::resolve(file, Path::new("t.toml"))
                .unwrap_err()
                .to_string();
            assert!(e.contains(says) && e.contains("t.toml"), "{text}: {e}");
        }
    }

    #[test]
    fn a_provider_section_binds_the_api_with_the_key_from_the_environment() {
        let base = "url = \"http://127.0.0.1:1/w\"\n[accounts.acct_a]\nsecrets = [\"s\"]\n[state]\nhttp = \"http://127.0.0.1:2/state\"\n[provider]\nlisten = \"127.0.0.1:0\"\n";
        std::env::set_var("HOOKSTORM_TEST_PROVIDER_KEY", "pk");
        let text = format!("{base}key_env = \"HOOKSTORM_TEST_PROVIDER_KEY\"\n");
        let file: TargetFile = crate::error::parse_toml(Path::new("t.toml"), &text).unwrap();
        let t = Target::resolve(file, Path::new("t.toml")).unwrap();
        let p = t.provider.expect("provider bound");
        assert!(p.url().starts_with("http://127.0.0.1:"));
        assert_eq!(p.key().expose(), "pk");
        let text = format!("{base}key_env = \"HOOKSTORM_TEST_UNSET_PROVIDER\"\n");
        let file: TargetFile = crate::error::parse_toml(Path::new("t.toml"), &text).unwrap();
        let e = Target::resolve(file, Path::new("t.toml"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("HOOKSTORM_TEST_UNSET_PROVIDER is not set"),
            "{e}"
        );
    }

    #[test]
    fn a_scenarios_section_selects_and_requires() {
        let text = "url = \"http://127.0.0.1:1/w\"\n[accounts.acct_a]\nsecrets = [\"s\"]\n[state]\nhttp = \"http://127.0.0.1:2/state\"\n[scenarios]\nskip = [\"kill-under-load\"]\nskip_tags = [\"process\"]\nrequire_all = true\n";
        let file: TargetFile = crate::error::parse_toml(Path::new("t.toml"), text).unwrap();
        assert_eq!(file.scenarios.skip, vec!["kill-under-load"]);
        assert!(file.scenarios.require_all && file.scenarios.only.is_empty());
        let bad = text.replace("require_all", "requre_all");
        assert!(crate::error::parse_toml::<TargetFile>(Path::new("t.toml"), &bad).is_err());
    }

    #[test]
    fn a_missing_secret_env_is_a_clear_error() {
        let text = "url = \"http://127.0.0.1:1/w\"\n[accounts.acct_a]\nsecrets_env = \"HOOKSTORM_TEST_UNSET_VAR\"\n[state]\nhttp = \"http://127.0.0.1:2/state\"\n";
        let file: TargetFile = crate::error::parse_toml(Path::new("t.toml"), text).unwrap();
        let e = Target::resolve(file, Path::new("t.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("HOOKSTORM_TEST_UNSET_VAR is not set"), "{e}");
    }
}
