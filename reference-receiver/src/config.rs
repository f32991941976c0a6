//! The receiver's configuration: accounts and secrets, limits, options.
//!
//! `Config::new` gives the defaults the issue asks for (profile answerline,
//! 1 MiB body limit, random admin token, in-process worker, group commit on,
//! no defect); the builder-style `with_*` methods change one thing each.

use std::sync::Arc;
use std::time::Duration;

use hookstorm::profile::signature::Secret;
use hookstorm::profile::Profile;

use crate::defect::Defect;
use crate::failpoint::Failpoints;

/// One account this receiver serves, with its valid secrets (several during a rotation).
#[derive(Debug, Clone)]
pub struct Account {
    /// The account name, as it appears in `/webhooks/{account}`.
    pub name: String,
    /// Every secret valid now.
    pub secrets: Vec<Secret>,
}

impl Account {
    /// An account with one or more secrets.
    pub fn new(name: impl Into<String>, secrets: Vec<Secret>) -> Self {
        Account {
            name: name.into(),
            secrets,
        }
    }
}

/// The default body limit: 1 MiB.
pub const DEFAULT_MAX_BODY: usize = 1024 * 1024;

/// Everything the receiver needs besides its listeners and store.
#[derive(Debug, Clone)]
pub struct Config {
    /// The accounts served; the first is the one `POST /webhooks` uses.
    pub accounts: Vec<Account>,
    /// The provider profile whose scheme and tolerance are verified.
    pub profile: Profile,
    /// Largest accepted body in bytes.
    pub max_body: usize,
    /// The bearer token of the admin API.
    pub admin_token: String,
    /// Whether the worker runs inside this process.
    pub worker: bool,
    /// Whether SQLite inserts are group-committed.
    pub group_commit: bool,
    /// The deliberately broken variant, if any.
    pub defect: Option<Defect>,
    /// Crash points.
    pub failpoints: Arc<Failpoints>,
    /// Base URL of the provider API used by `POST /reconcile`.
    pub provider_url: Option<String>,
    /// The provider API key.
    pub provider_key: Option<Secret>,
    /// How often the worker polls when nothing wakes it.
    pub worker_poll: Duration,
    /// Rows claimed per worker batch.
    pub batch_size: usize,
}

impl Config {
    /// Defaults for these accounts.
    pub fn new(accounts: Vec<Account>) -> Self {
        Config {
            accounts,
            profile: Profile::default_profile(),
            max_body: DEFAULT_MAX_BODY,
            admin_token: random_token(),
            worker: true,
            group_commit: true,
            defect: None,
            failpoints: Failpoints::none(),
            provider_url: None,
            provider_key: None,
            worker_poll: Duration::from_millis(20),
            batch_size: 64,
        }
    }

    /// Sets the defect.
    pub fn with_defect(mut self, defect: Option<Defect>) -> Self {
        self.defect = defect;
        self
    }

    /// Sets the profile.
    pub fn with_profile(mut self, profile: Profile) -> Self {
        self.profile = profile;
        self
    }

    /// Sets the body limit.
    pub fn with_max_body(mut self, max_body: usize) -> Self {
        self.max_body = max_body;
        self
    }

    /// Turns the in-process worker on or off.
    pub fn with_worker(mut self, worker: bool) -> Self {
        self.worker = worker;
        self
    }

    /// Turns SQLite group commit on or off.
    pub fn with_group_commit(mut self, on: bool) -> Self {
        self.group_commit = on;
        self
    }

    /// Sets the admin token.
    pub fn with_admin_token(mut self, token: impl Into<String>) -> Self {
        self.admin_token = token.into();
        self
    }

    /// Sets the failpoints.
    pub fn with_failpoints(mut self, failpoints: Failpoints) -> Self {
        self.failpoints = Arc::new(failpoints);
        self
    }

    /// Sets the provider API used for reconciliation.
    pub fn with_provider(mut self, url: impl Into<String>, key: Secret) -> Self {
        self.provider_url = Some(url.into());
        self.provider_key = Some(key);
        self
    }

    /// Whether this defect is active.
    pub fn has(&self, defect: Defect) -> bool {
        self.defect == Some(defect)
    }

    /// The account by name.
    pub fn account(&self, name: &str) -> Option<&Account> {
        self.accounts.iter().find(|a| a.name == name)
    }
}

/// A random 32-hex-digit token.
pub fn random_token() -> String {
    use rand::Rng;
    let bytes: [u8; 16] = rand::thread_rng().gen();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The shortest admin token the receiver accepts.
pub const MIN_ADMIN_TOKEN: usize = 16;

/// Checks an admin token: at least [`MIN_ADMIN_TOKEN`] characters, none of
/// them whitespace or control characters (it goes in a header).
pub fn check_admin_token(token: &str) -> Result<(), String> {
    if token.chars().count() < MIN_ADMIN_TOKEN {
        return Err(format!(
            "the admin token has {} characters: at least {MIN_ADMIN_TOKEN} (hint: omit --admin-token for a random one)",
            token.chars().count()
        ));
    }
    if token.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("the admin token has whitespace or control characters".into());
    }
    Ok(())
}

/// Parses a size like `1MiB`, `512KiB`, `1000` (bytes), `2MB`.
pub fn parse_size(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: usize = num
        .parse()
        .map_err(|_| format!("bad size {s:?} (hint: like 1MiB, 512KiB or 1000)"))?;
    let mult = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kib" | "k" => 1024,
        "kb" => 1000,
        "mib" | "m" => 1024 * 1024,
        "mb" => 1_000_000,
        _ => {
            return Err(format!(
                "bad size unit in {s:?} (hint: like 1MiB, 512KiB or 1000)"
            ))
        }
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("size {s:?} is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_and_decimal_units() {
        assert_eq!(parse_size("1MiB").unwrap(), 1 << 20);
        assert_eq!(parse_size("512KiB").unwrap(), 512 * 1024);
        assert_eq!(parse_size("1000").unwrap(), 1000);
        assert!(parse_size("lots").unwrap_err().contains("hint"));
    }

    #[test]
    fn defaults_follow_the_issue() {
        let c = Config::new(vec![Account::new("acct_a", vec![Secret::new("s")])]);
        assert_eq!(c.profile.name, "answerline");
        assert_eq!(c.max_body, DEFAULT_MAX_BODY);
        assert_eq!(c.admin_token.len(), 32);
        assert!(c.worker && c.group_commit && c.defect.is_none());
    }
}
