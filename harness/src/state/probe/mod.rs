//! State probes: how the harness reads a receiver's state after a run, and
//! how it resets, sets up and reconciles the receiver around a scenario.
//!
//! One of three sources, as `docs/state.md` describes: an HTTP endpoint
//! serving the state JSON ([`http`]), the receiver's own SQL database
//! ([`sql`]), or any command that prints the JSON ([`command`]). Each returns
//! the same [`State`]. The companion actions (`reset`, `setup`,
//! `reconcile`) are an `http(s)://` URL (POSTed to) or a shell command, so
//! they work with any source; SQL probes may also list statements.
//!
//! Every source streams: rows go one at a time into a sink
//! ([`crate::state::stream`]), so [`Probe::read_state`] (the whole
//! [`State`], for runs, within its budget) and [`Probe::wait_drained_to`] (a bench's state
//! straight to a file, in bounded memory) share one reader.
//!
//! Probes hold tokens and database passwords, so [`Probe::describe`] (the
//! only text of a probe that reaches reports) redacts them.

mod action;
pub mod command;
mod error;
mod hook;
pub mod http;
mod redact;
pub mod sql;

use std::fmt;
use std::time::{Duration, Instant};

use serde::Deserialize;

use crate::profile::signature::Secret;
use crate::state::stream::{Held, JsonWriter, Settling, StateSink};
use crate::state::State;
use crate::text::units::HumanDuration;

use action::Action;
pub use error::ProbeError;
pub use hook::Hook;
pub use redact::{redact_text, redact_url};
pub use sql::SqlProbeConfig;

/// How long one probe call may take unless configured.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// How often [`Probe::wait_drained`] and [`Probe::wait_settled`] read the state.
pub const DRAIN_POLL: Duration = Duration::from_millis(100);
/// How long the state must stay the same, once every expected key is there
/// and settled, before it is read for good: rows a receiver writes a moment
/// after its acknowledgement (a queue, then a consumer) still land.
pub const SETTLE_QUIET: Duration = Duration::from_millis(200);
/// The default settle window: a state with keys still missing that has not
/// changed for this long is read as it is (the missing keys are lost).
pub const DEFAULT_SETTLE: Duration = Duration::from_secs(2);

/// Why [`Probe::wait_settled`] read the state when it did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settled {
    /// Every expected key was present and every row settled.
    Complete,
    /// Every row was settled and the state stopped changing for the settle
    /// window, with expected keys still missing.
    Stable,
    /// The deadline passed first.
    Deadline,
}

/// The `[state]` section of a target file.
#[derive(Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProbeConfig {
    /// URL that serves the state JSON (GET).
    pub http: Option<String>,
    /// Reset action: URL (POST) or shell command.
    pub reset: Option<String>,
    /// Setup action: URL (POST `{"state", "params"}`) or shell command.
    pub setup: Option<String>,
    /// Reconcile action: URL (POST) or shell command.
    pub reconcile: Option<String>,
    /// Bearer token for the HTTP URLs.
    pub token: Option<String>,
    /// Name of an environment variable holding the bearer token.
    pub token_env: Option<String>,
    /// Read the state from the receiver's database.
    pub sql: Option<SqlProbeConfig>,
    /// A shell command that prints the state JSON.
    pub command: Option<String>,
    /// Time limit of one probe call.
    pub timeout: Option<HumanDuration>,
    /// Where its commands run: the folder of the target file (set when
    /// the file is read; hookstorm's working directory without one).
    #[serde(skip)]
    pub dir: Option<std::path::PathBuf>,
}

impl fmt::Debug for ProbeConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let url = |u: &Option<String>| u.as_deref().map(redact_url);
        f.debug_struct("ProbeConfig")
            .field("http", &url(&self.http))
            .field("reset", &self.reset.as_deref().map(redact_text))
            .field("setup", &self.setup.as_deref().map(redact_text))
            .field("reconcile", &self.reconcile.as_deref().map(redact_text))
            .field("token", &self.token.as_ref().map(|_| "***"))
            .field("token_env", &self.token_env)
            .field("sql", &self.sql)
            .field("command", &self.command.as_deref().map(redact_text))
            .field("timeout", &self.timeout)
            .finish()
    }
}

#[derive(Clone)]
enum Source {
    Http(http::HttpSource),
    Sql(sql::SqlSource),
    Command(String),
}

/// Reads a receiver's state and drives its reset, setup and reconcile actions.
#[derive(Clone)]
pub struct Probe {
    source: Source,
    token: Option<Secret>,
    reset: Option<Action>,
    setup: Option<Action>,
    reconcile: Option<Action>,
    timeout: Duration,
    roots: crate::net::tls::TrustedRoots,
    dir: Option<std::path::PathBuf>,
    /// What a state read whole may take once held ([`Held`]).
    held: usize,
}

impl fmt::Debug for Probe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())
    }
}

/// The sibling URL `name` of a state URL: `http://h/admin/state` -> `http://h/admin/reset`.
pub fn sibling_url(url: &str, name: &str) -> String {
    let (base, query) = url
        .split_once('?')
        .map_or((url, None), |(b, q)| (b, Some(q)));
    let _ = query;
    let after_scheme = base.find("://").map_or(0, |i| i + 3);
    match base[after_scheme..].rfind('/') {
        Some(i) => format!("{}/{name}", &base[..after_scheme + i]),
        None => format!("{base}/{name}"),
    }
}

impl Probe {
    /// An HTTP probe; reset, setup and reconcile are the sibling paths
    /// `reset`, `setup`, `reconcile` of the state URL.
    pub fn http(url: &str, token: Option<String>) -> Probe {
        Probe {
            source: Source::Http(http::HttpSource {
                url: url.to_string(),
            }),
            token: token.map(Secret::new),
            reset: Some(Action::Http(sibling_url(url, "reset"))),
            setup: Some(Action::Http(sibling_url(url, "setup"))),
            reconcile: Some(Action::Http(sibling_url(url, "reconcile"))),
            timeout: DEFAULT_TIMEOUT,
            roots: Default::default(),
            dir: None,
            held: crate::limits::budget::STATE_HELD,
        }
    }

    /// Trusts these CA certificates too for https state URLs.
    pub fn with_roots(mut self, roots: crate::net::tls::TrustedRoots) -> Probe {
        self.roots = roots;
        self
    }

    /// Builds a probe from a `[state]` section, validating it.
    pub fn from_config(cfg: &ProbeConfig) -> Result<Probe, ProbeError> {
        let sources = [cfg.http.is_some(), cfg.sql.is_some(), cfg.command.is_some()];
        match sources.iter().filter(|s| **s).count() {
            1 => {}
            0 => {
                return Err(ProbeError::Config(
                    "no state source (hint: set exactly one of `http`, `sql` or `command` in [state])".into(),
                ))
            }
            _ => {
                return Err(ProbeError::Config(
                    "more than one state source (hint: set exactly one of `http`, `sql` or `command` in [state])"
                        .into(),
                ))
            }
        }
        let token = match (&cfg.token, &cfg.token_env) {
            (Some(_), Some(_)) => {
                return Err(ProbeError::Config(
                    "set either `token` or `token_env`, not both".into(),
                ))
            }
            (Some(t), None) => Some(Secret::new(t.clone())),
            (None, Some(var)) => Some(Secret::new(std::env::var(var).map_err(|_| {
                ProbeError::Config(format!(
                    "`token_env`: environment variable {var} is not set"
                ))
            })?)),
            (None, None) => None,
        };
        let timeout = cfg.timeout.map_or(DEFAULT_TIMEOUT, |t| t.0);
        let mut reset = cfg.reset.as_deref().map(Action::parse);
        let mut setup = cfg.setup.as_deref().map(Action::parse);
        let mut reconcile = cfg.reconcile.as_deref().map(Action::parse);
        let source = if let Some(url) = &cfg.http {
            http::check_url(url)?;
            // An HTTP state URL implies its siblings (`…/reset`, `…/setup`,
            // `…/reconcile`), as the reference receiver serves them.
            reset.get_or_insert_with(|| Action::Http(sibling_url(url, "reset")));
            setup.get_or_insert_with(|| Action::Http(sibling_url(url, "setup")));
            reconcile.get_or_insert_with(|| Action::Http(sibling_url(url, "reconcile")));
            Source::Http(http::HttpSource { url: url.clone() })
        } else if let Some(sql) = &cfg.sql {
            for (name, own, statements) in [
                ("reset", &mut reset, &sql.reset),
                ("setup", &mut setup, &sql.setup),
            ] {
                if let Some(list) = statements {
                    if own.is_some() {
                        return Err(ProbeError::Config(format!(
                            "`{name}` is set both in [state] and in [state.sql]; keep one"
                        )));
                    }
                    *own = Some(Action::Sql(list.clone()));
                }
            }
            Source::Sql(sql::SqlSource::new(sql)?)
        } else {
            Source::Command(cfg.command.clone().unwrap_or_default())
        };
        for a in [&reset, &setup, &reconcile].into_iter().flatten() {
            if let Action::Http(u) = a {
                http::check_url(u)?;
            }
        }
        Ok(Probe {
            source,
            token,
            reset,
            setup,
            reconcile,
            timeout,
            roots: Default::default(),
            dir: cfg.dir.clone(),
            held: crate::limits::budget::STATE_HELD,
        })
    }

    /// The probe of a run that planned `deliveries`: a state read whole
    /// may take [`crate::limits::budget::state_held`] of them once held.
    pub fn holding(&self, deliveries: usize) -> Probe {
        Probe {
            held: crate::limits::budget::state_held(deliveries),
            ..self.clone()
        }
    }

    /// Sets the time limit of one probe call.
    pub fn with_timeout(mut self, timeout: Duration) -> Probe {
        self.timeout = timeout;
        self
    }

    /// Whether a reset action is configured.
    pub fn can_reset(&self) -> bool {
        self.reset.is_some()
    }

    /// Whether a setup action is configured.
    pub fn can_setup(&self) -> bool {
        self.setup.is_some()
    }

    /// Whether a reconcile action is configured.
    pub fn can_reconcile(&self) -> bool {
        self.reconcile.is_some()
    }

    async fn limit<T>(
        &self,
        what: &str,
        fut: impl std::future::Future<Output = Result<T, ProbeError>>,
    ) -> Result<T, ProbeError> {
        tokio::time::timeout(self.timeout, fut)
            .await
            .unwrap_or_else(|_| {
                Err(ProbeError::Timeout {
                    what: what.to_string(),
                    limit: self.timeout,
                })
            })
    }

    /// Reads the receiver's state once, whole, within its budget
    /// ([`crate::limits::budget::STATE_HELD`], more for a large run: see
    /// [`Probe::holding`]): a state whose rows take more once held is
    /// refused ([`ProbeError::Invalid`], naming the budget), not kept.
    pub async fn read_state(&self) -> Result<State, ProbeError> {
        self.read_state_into(Held::with_cap(self.held))
            .await
            .map(Held::into_state)
    }

    /// Reads the receiver's state once, row by row into `sink` (see
    /// [`crate::state::stream`]): memory is what the sink keeps.
    pub async fn read_state_into<S: StateSink + Send + 'static>(
        &self,
        sink: S,
    ) -> Result<S, ProbeError> {
        let token = self.token.as_ref().map(Secret::expose);
        match &self.source {
            Source::Http(h) => {
                self.limit("reading the state", h.read_into(token, &self.roots, sink))
                    .await
            }
            Source::Sql(s) => self.limit("reading the state", s.read_into(sink)).await,
            Source::Command(c) => {
                command::read_into(c, self.dir.as_deref(), self.timeout, sink).await
            }
        }
    }

    /// Like [`Probe::wait_drained`], in bounded memory: every read streams
    /// the state into `path` (the document form) while counting unsettled
    /// inbox rows, and the file of the last read stays. Returns whether it
    /// drained in time and how many inbox rows the state has.
    pub async fn wait_drained_to(
        &self,
        deadline: Duration,
        path: &std::path::Path,
    ) -> Result<(bool, u64), ProbeError> {
        let (rows, drained) = poll_drained(deadline, || async move {
            let file = std::fs::File::create(path)
                .map_err(|e| ProbeError::Io(format!("{}: {e}", path.display())))?;
            let sink = Settling::new(JsonWriter::new(std::io::BufWriter::with_capacity(
                1 << 16,
                file,
            )));
            Ok(self.read_state_into(sink).await.map(|s| {
                let drained = s.drained();
                (s.rows, drained)
            }))
        })
        .await?;
        Ok((drained, rows))
    }

    async fn run_action(
        &self,
        name: &'static str,
        action: Option<&Action>,
        body: serde_json::Value,
        env: &[(&str, String)],
    ) -> Result<serde_json::Value, ProbeError> {
        let token = self.token.as_ref().map(Secret::expose);
        match action.ok_or(ProbeError::NotConfigured(name))? {
            Action::Http(url) => {
                self.limit(name, http::post(url, token, body, &self.roots))
                    .await
            }
            Action::Command(c) => {
                command::run_action(c, self.dir.as_deref(), env, self.timeout).await
            }
            Action::Sql(statements) => match &self.source {
                Source::Sql(s) => {
                    let state = env
                        .iter()
                        .find(|(k, _)| *k == "HOOKSTORM_SETUP_STATE")
                        .map(|(_, v)| v.as_str());
                    let list: Vec<String> = statements
                        .iter()
                        .map(|st| st.replace("{state}", state.unwrap_or_default()))
                        .collect();
                    self.limit(name, s.execute(list))
                        .await
                        .map(|_| serde_json::Value::Null)
                }
                _ => Err(ProbeError::Config(format!(
                    "sql {name} statements need a sql state source"
                ))),
            },
        }
    }

    /// Resets the receiver to an empty state (before each scenario).
    pub async fn reset(&self) -> Result<(), ProbeError> {
        self.run_action("reset", self.reset.as_ref(), serde_json::json!({}), &[])
            .await
            .map(|_| ())
    }

    /// Puts the receiver into a named state with parameters (e.g. a failpoint).
    /// HTTP: POSTs `{"state": …, "params": …}`; command: sets
    /// `HOOKSTORM_SETUP_STATE` and `HOOKSTORM_SETUP_PARAMS`; SQL: runs the
    /// statements with `{state}` replaced.
    pub async fn setup(&self, state: &str, params: serde_json::Value) -> Result<(), ProbeError> {
        let env = [
            ("HOOKSTORM_SETUP_STATE", state.to_string()),
            ("HOOKSTORM_SETUP_PARAMS", params.to_string()),
        ];
        let body = serde_json::json!({"state": state, "params": params});
        self.run_action("setup", self.setup.as_ref(), body, &env)
            .await
            .map(|_| ())
    }

    /// Triggers the receiver's reconciliation job; returns what it answered
    /// (JSON, or the command's output as a string; null when empty).
    pub async fn reconcile(&self) -> Result<serde_json::Value, ProbeError> {
        self.run_action(
            "reconcile",
            self.reconcile.as_ref(),
            serde_json::json!({}),
            &[],
        )
        .await
    }

    /// Reads the state until it can be judged, bounded by `deadline`:
    /// every key of `expect` (account, key) is in the inbox and every row is
    /// settled, with the state unchanged for [`SETTLE_QUIET`]; or every row
    /// is settled and the state has not changed for `settle` (keys still
    /// missing are lost, not late). An empty inbox is not "drained" while
    /// acknowledged keys are missing from it. Unsettled rows are waited for
    /// until the deadline (a worker may run on its own schedule).
    pub async fn wait_settled(
        &self,
        expect: &std::collections::HashSet<(String, String)>,
        settle: Duration,
        deadline: Duration,
    ) -> Result<(State, Settled), ProbeError> {
        let start = Instant::now();
        let mut last: Option<(State, Instant)> = None;
        let mut last_err = None;
        loop {
            match self.read_state().await {
                Ok(s) => {
                    let since = match &last {
                        Some((prev, at)) if *prev == s => *at,
                        _ => Instant::now(),
                    };
                    let quiet = since.elapsed();
                    let settled = s.drained();
                    let complete = settled
                        && s.missing(expect.iter().map(|(a, k)| (a.as_str(), k.as_str()))) == 0;
                    if complete && quiet >= SETTLE_QUIET {
                        return Ok((s, Settled::Complete));
                    }
                    if settled && quiet >= settle {
                        return Ok((s, Settled::Stable));
                    }
                    if start.elapsed() >= deadline {
                        return Ok((s, Settled::Deadline));
                    }
                    last = Some((s, since));
                }
                Err(e) if start.elapsed() >= deadline => return Err(e),
                Err(e) => last_err = Some(e),
            }
            let left = deadline.saturating_sub(start.elapsed());
            if left.is_zero() {
                if let Some((s, _)) = last {
                    return Ok((s, Settled::Deadline));
                }
                if let Some(e) = last_err {
                    return Err(e);
                }
            }
            tokio::time::sleep(DRAIN_POLL.min(left.max(Duration::from_millis(1)))).await;
        }
    }

    /// Reads the state until every inbox row is processed or `deadline`
    /// passes; returns the last state and whether it drained in time.
    pub async fn wait_drained(&self, deadline: Duration) -> Result<(State, bool), ProbeError> {
        poll_drained(deadline, || async {
            Ok(self.read_state().await.map(|s| {
                let drained = s.drained();
                (s, drained)
            }))
        })
        .await
    }

    /// What the probe reads, for reports: never a token, password or userinfo.
    pub fn describe(&self) -> String {
        let mut out = match &self.source {
            Source::Http(h) => format!("http {}", redact_url(&h.url)),
            Source::Sql(s) => format!("sql {}", s.describe()),
            Source::Command(c) => format!("command `{}`", redact_text(c)),
        };
        if self.token.is_some() {
            out.push_str(" (bearer token)");
        }
        for (name, a) in [
            ("reset", &self.reset),
            ("setup", &self.setup),
            ("reconcile", &self.reconcile),
        ] {
            if let Some(a) = a {
                out.push_str(&format!("; {name}: {}", a.describe()));
            }
        }
        out
    }
}

/// Reads with `read` until it reports a drained state or `deadline`
/// passes, every [`DRAIN_POLL`]; returns the last read and whether it
/// drained. A failed read is tried again until the deadline (the last
/// error is returned then); an error of the outer `Result` ends at once.
async fn poll_drained<T, F, Fut>(deadline: Duration, mut read: F) -> Result<(T, bool), ProbeError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<Result<(T, bool), ProbeError>, ProbeError>>,
{
    let start = Instant::now();
    let mut last_err = None;
    loop {
        match read().await? {
            Ok((t, true)) => return Ok((t, true)),
            Ok((t, false)) if start.elapsed() >= deadline => return Ok((t, false)),
            Ok(_) => {}
            Err(e) if start.elapsed() >= deadline => return Err(e),
            Err(e) => last_err = Some(e),
        }
        let left = deadline.saturating_sub(start.elapsed());
        if left.is_zero() {
            if let Some(e) = last_err {
                return Err(e);
            }
        }
        tokio::time::sleep(DRAIN_POLL.min(left.max(Duration::from_millis(1)))).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_needs_exactly_one_source() {
        let none = Probe::from_config(&ProbeConfig::default())
            .unwrap_err()
            .to_string();
        assert!(
            none.contains("exactly one of `http`, `sql` or `command`"),
            "{none}"
        );
        let two = ProbeConfig {
            http: Some("http://127.0.0.1:1/state".into()),
            command: Some("cat s.json".into()),
            ..ProbeConfig::default()
        };
        assert!(Probe::from_config(&two)
            .unwrap_err()
            .to_string()
            .contains("more than one"));
    }

    #[test]
    fn unknown_config_fields_are_rejected() {
        let e = toml::from_str::<ProbeConfig>("http = \"http://x/state\"\nbogus = 1").unwrap_err();
        assert!(e.to_string().contains("bogus"), "{e}");
    }

    #[test]
    fn config_parses_from_toml_with_sql_and_timeout() {
        let cfg: ProbeConfig = toml::from_str(
            "timeout = \"5s\"\n[sql]\nurl = \"sqlite:///tmp/x.db\"\nwinners = \"select 1\"\n",
        )
        .unwrap();
        assert_eq!(cfg.timeout.unwrap().0, Duration::from_secs(5));
        assert_eq!(cfg.sql.unwrap().winners.as_deref(), Some("select 1"));
    }

    #[test]
    fn sibling_urls_replace_the_last_path_segment() {
        assert_eq!(
            sibling_url("http://h:1/admin/state", "reset"),
            "http://h:1/admin/reset"
        );
        assert_eq!(
            sibling_url("http://h:1/state?x=1", "setup"),
            "http://h:1/setup"
        );
        assert_eq!(sibling_url("http://h:1", "reset"), "http://h:1/reset");
    }

    #[test]
    fn urls_lose_userinfo_and_secret_query_parameters() {
        assert_eq!(
            redact_url("postgres://app:hunter2@db:5432/app?sslmode=disable&password=x"),
            "postgres://***@db:5432/app?sslmode=disable&password=***"
        );
        assert_eq!(
            redact_url("http://h/state?token=abc&n=1"),
            "http://h/state?token=***&n=1"
        );
    }

    #[test]
    fn command_lines_lose_secrets() {
        let t = redact_text("PGPASSWORD=hunter2 psql postgres://u:pw@h/db -c 'select 1' --token abc -H 'Authorization: Bearer xyz'");
        for s in ["hunter2", ":pw@", "abc", "xyz"] {
            assert!(!t.contains(s), "{s} in {t}");
        }
        assert!(t.contains("psql"));
    }

    #[test]
    fn debug_output_of_a_config_hides_secrets() {
        let cfg = ProbeConfig {
            token: Some("tok-123".into()),
            sql: Some(SqlProbeConfig {
                url: "postgres://u:pw-456@h/db".into(),
                ..SqlProbeConfig::default()
            }),
            ..ProbeConfig::default()
        };
        let d = format!("{cfg:?}");
        assert!(!d.contains("tok-123") && !d.contains("pw-456"), "{d}");
    }

    #[tokio::test]
    async fn the_drain_wait_streams_the_last_state_read_into_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        let probe = |json: &str| {
            Probe::from_config(&ProbeConfig {
                command: Some(format!("echo '{json}'")),
                ..ProbeConfig::default()
            })
            .unwrap()
        };
        let waiting =
            r#"{"inbox": [{"key": "a", "processed": true}, {"key": "b"}], "effects": []}"#;
        let (drained, rows) = probe(waiting)
            .wait_drained_to(Duration::from_millis(250), &path)
            .await
            .unwrap();
        assert_eq!((drained, rows), (false, 2));
        let back: State = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(back, serde_json::from_str::<State>(waiting).unwrap());
        let done = r#"{"sections": ["inbox"]}
{"inbox": {"key": "a", "error": "poison"}}"#;
        let (drained, rows) = probe(done)
            .wait_drained_to(Duration::from_secs(5), &path)
            .await
            .unwrap();
        assert_eq!((drained, rows), (true, 1));
        let back: State = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(back.inbox[0].error.as_deref(), Some("poison"));
    }

    #[test]
    fn describe_never_shows_the_token() {
        let p = Probe::http(
            "http://127.0.0.1:9/admin/state",
            Some("sekrit-token".into()),
        );
        let d = p.describe();
        assert!(!d.contains("sekrit"), "{d}");
        assert!(
            d.contains("bearer token") && d.contains("/admin/reset"),
            "{d}"
        );
        assert!(!format!("{p:?}").contains("sekrit"));
    }
}
