//! The reference receiver as a supervised child process: the target that
//! `hookstorm run` tests when no target is given, and that the process
//! scenarios (kill, worker crash, database outage) need.
//!
//! [`prepare`] picks free loopback ports, fresh random secrets (passed in
//! the environment, never on the command line) and an admin token, and
//! returns a [`Target`] whose `[lifecycle]` starts `COMMAND serve …` with a
//! separate `COMMAND worker …`, with crash points enabled. Nothing is
//! started here: the harness's supervisor starts, kills and restarts it.
//!
//! Database control comes with it: on SQLite the outage is an exclusive
//! lock on the file; on Postgres the receiver's connection string points at
//! a fault proxy in front of the server (unless `proxy` is off).

use std::collections::BTreeMap;
use std::net::TcpListener;

use hookstorm::lifecycle::{
    shell_quote, DatabaseConfig, LifecycleConfig, ProxyConfig, Ready, WorkerConfig,
};
use hookstorm::probe::ProbeConfig;
use hookstorm::profile::Profile;
use hookstorm::provider::Provider;
use hookstorm::signature::Secret;
use hookstorm::target::{Target, DEFAULT_MAX_BODY};
use hookstorm::units::HumanDuration;

use crate::config::random_token;
use crate::{Defect, ReceiverError};

/// How to run the reference receiver as a child.
#[derive(Debug, Clone)]
pub struct ChildOptions {
    /// The command that runs the receiver CLI, e.g. `{hookstorm} receiver`
    /// or the path of `hookstorm-receiver`.
    pub command: String,
    /// A deliberate bug to switch on (server and worker).
    pub defect: Option<Defect>,
    /// The store URL; SQLite in a temporary folder when `None`.
    pub db: Option<String>,
    /// Put a fault proxy between the receiver and a Postgres database.
    pub proxy: bool,
}

impl ChildOptions {
    /// The reference receiver through the running `hookstorm` binary, on SQLite.
    pub fn new(command: impl Into<String>) -> Self {
        ChildOptions {
            command: command.into(),
            defect: None,
            db: None,
            proxy: true,
        }
    }
}

/// A prepared child-process target; keep it alive for the run (it owns
/// the temporary folder of the SQLite database).
#[derive(Debug)]
pub struct ChildTarget {
    /// The target, with `lifecycle` and `database` set.
    pub target: Target,
    /// The store URL the receiver uses (through the proxy when there is one).
    pub db: String,
    _dir: Option<tempfile::TempDir>,
}

/// A free port on 127.0.0.1 for a process started later (bound and
/// released). Taken below the kernel's ephemeral range (32768 and up), from
/// a window this process owns by its pid, walked with a counter: a port
/// handed out here cannot be grabbed by another test's `bind(":0")` before
/// the child binds it, and two calls never return the same port.
pub fn free_port() -> std::io::Result<u16> {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    const FIRST: u32 = 20_000;
    const SPAN: u32 = 12_000;
    let base = std::process::id().wrapping_mul(211) % SPAN;
    for _ in 0..256 {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = (FIRST + (base + n * 7) % SPAN) as u16;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return Ok(port);
        }
    }
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// `host:port` of a `postgres://` URL, and the URL with it replaced.
fn split_pg(url: &str, replace_with: &str) -> Option<(String, String)> {
    let rest = url.split_once("://")?.1;
    let start = url.len() - rest.len() + rest.find('@').map(|i| i + 1).unwrap_or(0);
    let end = url[start..]
        .find(['/', '?'])
        .map(|i| start + i)
        .unwrap_or(url.len());
    let hostport = &url[start..end];
    if hostport.is_empty() {
        return None;
    }
    let upstream = if hostport.contains(':') {
        hostport.to_string()
    } else {
        format!("{hostport}:5432")
    };
    let rewritten = format!("{}{}{}", &url[..start], replace_with, &url[end..]);
    Some((upstream, rewritten))
}

/// Prepares the reference receiver as a child-process target.
pub fn prepare(opts: &ChildOptions) -> Result<ChildTarget, ReceiverError> {
    let (dir, mut db_url, sqlite) = match &opts.db {
        Some(url) => (None, url.clone(), None),
        None => {
            let dir = tempfile::tempdir()?;
            let path = dir.path().join("receiver.db");
            let url = format!("sqlite://{}", path.display());
            (Some(dir), url, Some(path))
        }
    };
    let mut database = DatabaseConfig {
        sqlite: sqlite.clone(),
        ..Default::default()
    };
    if let Some(path) = db_url.strip_prefix("sqlite://") {
        if database.sqlite.is_none() {
            database.sqlite = Some(path.into());
        }
    }
    if opts.proxy && db_url.starts_with("postgres") {
        let listen = format!("127.0.0.1:{}", free_port()?);
        if let Some((upstream, rewritten)) = split_pg(&db_url, &listen) {
            database.proxy = Some(ProxyConfig { listen, upstream });
            db_url = rewritten;
        }
    }
    let web = free_port()?;
    let admin = free_port()?;
    let token = random_token();
    let (secrets, retired) = crate::embedded::fresh_secrets();
    let accounts = secrets
        .iter()
        .map(|(name, list)| {
            let joined: Vec<&str> = list.iter().map(Secret::expose).collect();
            format!("{name}={}", joined.join(","))
        })
        .collect::<Vec<_>>()
        .join(";");
    let profile = Profile::default_profile();
    let defect = opts
        .defect
        .map(|d| format!(" --defect {}", d.name()))
        .unwrap_or_default();
    let db_arg = shell_quote(&db_url);
    // The harness's provider API, bound now so the receiver's reconciler can
    // be pointed at it; its key reaches the child through the environment.
    let provider = Provider::bind("127.0.0.1:0", Secret::new(random_token()))?;
    let start = format!(
        "exec {} serve --db {db_arg} --listen 127.0.0.1:{web} --admin-listen 127.0.0.1:{admin} --profile {} --no-worker --provider-url {}{defect}",
        opts.command,
        shell_quote(&profile.name),
        shell_quote(&provider.url())
    );
    let worker = format!("exec {} worker --db {db_arg}{defect}", opts.command);
    let env = BTreeMap::from([
        ("HOOKSTORM_RECEIVER_ACCOUNTS".to_string(), accounts),
        ("HOOKSTORM_ADMIN_TOKEN".to_string(), token.clone()),
        (
            "HOOKSTORM_PROVIDER_KEY".to_string(),
            provider.key().expose().to_string(),
        ),
    ]);
    let lifecycle = LifecycleConfig {
        start,
        env: env.clone(),
        ready: Ready::Http {
            http: format!("http://127.0.0.1:{admin}/healthz"),
        },
        ready_timeout: Some(HumanDuration(std::time::Duration::from_secs(20))),
        failpoints: true,
        worker: Some(WorkerConfig {
            start: worker,
            env: BTreeMap::new(),
        }),
    };
    let target = Target {
        url: format!("http://127.0.0.1:{web}/webhooks/{{account}}"),
        profile,
        secrets,
        retired,
        max_body: DEFAULT_MAX_BODY,
        roots: Default::default(),
        state: ProbeConfig {
            http: Some(format!("http://127.0.0.1:{admin}/state")),
            token: Some(token),
            ..Default::default()
        },
        lifecycle: Some(lifecycle),
        database,
        provider: Some(provider),
    };
    Ok(ChildTarget {
        target,
        db: db_url,
        _dir: dir,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_postgres_url_is_pointed_at_the_proxy() {
        let (up, url) = split_pg("postgres://postgres@127.0.0.1:5555/t1", "127.0.0.1:9").unwrap();
        assert_eq!(up, "127.0.0.1:5555");
        assert_eq!(url, "postgres://postgres@127.0.0.1:9/t1");
        let (up, url) = split_pg("postgres://u:p@db/x?sslmode=disable", "h:1").unwrap();
        assert_eq!(up, "db:5432");
        assert_eq!(url, "postgres://u:p@h:1/x?sslmode=disable");
    }

    #[test]
    fn secrets_travel_in_the_environment_not_the_command() {
        let c = prepare(&ChildOptions::new("hookstorm-receiver")).unwrap();
        let life = c.target.lifecycle.as_ref().unwrap();
        for list in c.target.secrets.values() {
            for s in list {
                assert!(!life.start.contains(s.expose()));
            }
        }
        assert!(life.env["HOOKSTORM_RECEIVER_ACCOUNTS"].contains("acct_b="));
        assert!(c.target.database.sqlite.is_some());
    }
}
