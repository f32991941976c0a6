//! The reference receiver as a supervised child process: the target that
//! `hookstorm run` tests when no target is given, and that the process
//! scenarios (kill, worker crash, database outage) need.
//!
//! [`prepare`] reserves the receiver's two ports (webhooks and admin API):
//! a socket bound on 127.0.0.1 port 0 with `SO_REUSEPORT` that never
//! listens, held as long as the [`ChildTarget`] lives. It draws fresh
//! random secrets (passed in the environment, never on the command line)
//! and an admin token, and returns a [`Target`] whose `[lifecycle]` starts
//! `COMMAND serve --listen 127.0.0.1:PORT --reuse-port …` with a separate
//! `COMMAND worker …`, with crash points enabled. Nothing is started here:
//! the harness's supervisor starts, kills and restarts it. Every start
//! binds the reserved ports beside the reservation, so no port is ever
//! released and hoped free again; and since the reservation never
//! listens, a connection while the receiver is down is refused, as it
//! would be with nothing holding the port.
//!
//! Database control comes with it: on SQLite the outage is an exclusive
//! lock on the file; on Postgres the receiver's connection string points at
//! a fault proxy in front of the server (unless `proxy` is off). The proxy
//! listens on port 0 and the supervisor writes its address where the
//! command says `{proxy}`.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use hookstorm::lifecycle::{
    shell_quote, DatabaseConfig, LifecycleConfig, ProxyConfig, Ready, WorkerConfig,
};
use hookstorm::profile::signature::Secret;
use hookstorm::profile::Profile;
use hookstorm::provider::Provider;
use hookstorm::target::Target;
use hookstorm::text::units::HumanDuration;
use hookstorm_receiver::config::random_token;
use hookstorm_receiver::Defect;

use super::accounts::BuiltinError;

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
    /// Run the worker as its own process (the process scenarios kill it);
    /// otherwise the receiver runs it inside, as one process.
    pub separate_worker: bool,
}

impl ChildOptions {
    /// The reference receiver through the running `hookstorm` binary, on SQLite.
    pub fn new(command: impl Into<String>) -> Self {
        ChildOptions {
            command: command.into(),
            defect: None,
            db: None,
            proxy: true,
            separate_worker: true,
        }
    }
}

/// A prepared child-process target; keep it alive for the run (it owns
/// the temporary folder of the SQLite database and the ports' reservations).
#[derive(Debug)]
pub struct ChildTarget {
    /// The target, with `lifecycle` and `database` set.
    pub target: Target,
    _dir: Option<tempfile::TempDir>,
    _ports: [Reservation; 2],
}

/// A port on 127.0.0.1 held by a bound socket that never listens: nobody
/// else can bind it, a process of this user can beside it with
/// `SO_REUSEPORT`, and while none does, connections are refused.
#[derive(Debug)]
pub struct Reservation(tokio::net::TcpSocket);

impl Reservation {
    /// Reserves a port the kernel picks.
    #[cfg(all(unix, not(any(target_os = "solaris", target_os = "illumos"))))]
    pub fn new() -> std::io::Result<Reservation> {
        let socket = tokio::net::TcpSocket::new_v4()?;
        socket.set_reuseport(true)?;
        socket.bind(SocketAddr::from(([127, 0, 0, 1], 0)))?;
        Ok(Reservation(socket))
    }

    /// Ports are reserved with `SO_REUSEPORT`, which this platform lacks.
    #[cfg(not(all(unix, not(any(target_os = "solaris", target_os = "illumos")))))]
    pub fn new() -> std::io::Result<Reservation> {
        Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "the built-in receiver as a child process needs SO_REUSEPORT (Linux, the BSDs, macOS)",
        ))
    }

    /// The reserved address.
    pub fn addr(&self) -> std::io::Result<SocketAddr> {
        self.0.local_addr()
    }
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
pub fn prepare(opts: &ChildOptions) -> Result<ChildTarget, BuiltinError> {
    let (dir, mut db_url, sqlite) = match &opts.db {
        Some(url) => (None, url.clone(), None),
        None => {
            let dir = hookstorm::lifecycle::scratch::create()?;
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
        if let Some((upstream, rewritten)) = split_pg(&db_url, "{proxy}") {
            database.proxy = Some(ProxyConfig {
                listen: "127.0.0.1:0".into(),
                upstream,
            });
            db_url = rewritten;
        }
    }
    let ports = [Reservation::new()?, Reservation::new()?];
    let (web_addr, admin_addr) = (ports[0].addr()?, ports[1].addr()?);
    let token = random_token();
    let (secrets, retired) = super::accounts::fresh_secrets();
    let accounts = super::accounts::env_value(&secrets);
    let profile = Profile::default_profile();
    let defect = opts
        .defect
        .map(|d| format!(" --defect {}", d.name()))
        .unwrap_or_default();
    let db_arg = shell_quote(&db_url);
    // The harness's provider API, bound now so the receiver's reconciler can
    // be pointed at it; its key reaches the child through the environment.
    let provider = Provider::bind("127.0.0.1:0", Secret::new(random_token()))?;
    let no_worker = if opts.separate_worker {
        " --no-worker"
    } else {
        ""
    };
    let start = format!(
        "exec {} serve --db {db_arg} --listen {web_addr} --admin-listen {admin_addr} --reuse-port --profile {}{no_worker} --provider-url {}{defect}",
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
        dir: None,
        env: env.clone(),
        ready: Ready::Http {
            http: format!("http://{admin_addr}/healthz"),
        },
        ready_timeout: Some(HumanDuration(std::time::Duration::from_secs(20))),
        failpoints: true,
        worker: opts.separate_worker.then(|| WorkerConfig {
            start: worker,
            env: BTreeMap::new(),
            ready: None,
            ready_timeout: None,
            busy: None,
        }),
    };
    let target = Target {
        lifecycle: Some(lifecycle),
        database,
        ..super::accounts::target(
            web_addr,
            &format!("http://{admin_addr}"),
            token,
            profile,
            (secrets, retired),
            provider,
        )
    };
    Ok(ChildTarget {
        target,
        _dir: dir,
        _ports: ports,
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

    #[test]
    fn the_receiver_serves_on_ports_reserved_before_it_starts() {
        let c = prepare(&ChildOptions::new("hookstorm-receiver")).unwrap();
        let life = c.target.lifecycle.as_ref().unwrap();
        let web = c._ports[0].addr().unwrap();
        assert_ne!(web.port(), 0);
        assert!(c.target.url.contains(&web.to_string()), "{}", c.target.url);
        assert!(
            life.start.contains(&format!("--listen {web} ")),
            "{}",
            life.start
        );
        assert!(life.start.contains("--reuse-port"));
        // Reserved, not released: nobody else can take the port meanwhile,
        // and until the receiver listens it refuses connections.
        assert!(std::net::TcpListener::bind(web).is_err());
        assert!(std::net::TcpStream::connect(web).is_err());
    }

    #[test]
    fn the_worker_runs_inside_the_receiver_when_not_separate() {
        let mut o = ChildOptions::new("hookstorm-receiver");
        let c = prepare(&o).unwrap();
        let life = c.target.lifecycle.as_ref().unwrap();
        assert!(life.start.contains(" --no-worker") && life.worker.is_some());
        o.separate_worker = false;
        let c = prepare(&o).unwrap();
        let life = c.target.lifecycle.as_ref().unwrap();
        assert!(!life.start.contains("--no-worker") && life.worker.is_none());
    }

    #[test]
    fn a_postgres_receiver_connects_through_the_proxy_placeholder() {
        let mut o = ChildOptions::new("hookstorm-receiver");
        o.db = Some("postgres://postgres@127.0.0.1:5555/t1".into());
        let c = prepare(&o).unwrap();
        let proxy = c.target.database.proxy.as_ref().unwrap();
        assert_eq!(proxy.listen, "127.0.0.1:0");
        assert_eq!(proxy.upstream, "127.0.0.1:5555");
        let life = c.target.lifecycle.as_ref().unwrap();
        assert!(life.start.contains("postgres@{proxy}/t1"), "{}", life.start);
    }
}
