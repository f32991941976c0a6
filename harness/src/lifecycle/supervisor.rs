//! The supervisor: starts the receiver (and its worker and fault proxy),
//! waits for it to be ready, signals, restarts, cuts the database, and
//! writes each action to the scenario's history as an `Event::Fault`.
//!
//! Fault names are verbs, as everywhere in the history: `kill`, `pause`,
//! `resume`, `terminate`, `restart`, `cut-database`, `restore-database`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::config::{
    expand_proxy, DatabaseConfig, LifecycleConfig, LifecycleError, ProxyConfig, Ready,
    DEFAULT_READY_TIMEOUT,
};
use super::process::Process;
use super::signal::Signal;
use crate::history::{now_rfc3339, Event, EventSink, FaultEvent};
use crate::net::tcpproxy::{Mode, Proxy};
use crate::tag::FaultName;

/// Which of the receiver's processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The process that answers webhooks.
    Receiver,
    /// The separate worker.
    Worker,
}

impl Role {
    fn name(self) -> &'static str {
        match self {
            Role::Receiver => "receiver",
            Role::Worker => "worker",
        }
    }
}

/// How the database is cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// Through the fault proxy, in this mode.
    Proxy(Mode),
    /// With the stop command (the start command restores it).
    Commands,
    /// By holding an exclusive lock on the SQLite file.
    SqliteLock,
}

/// One action the supervisor took, as recorded in the history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SupervisorEvent {
    /// The fault verb.
    pub fault: FaultName,
    /// What it did.
    pub action: String,
}

/// Owns the receiver's processes for a run, or only its database control
/// (the fault proxy, the lock, the commands) when the receiver runs on its
/// own ([`Supervisor::database_only`]).
pub struct Supervisor {
    /// What the main process is called in logs and the history
    /// (`receiver`, or `sender` under `hookstorm sink`).
    main: &'static str,
    cfg: Option<LifecycleConfig>,
    db: DatabaseConfig,
    receiver: Option<Process>,
    worker: Option<Process>,
    proxy: Option<Proxy>,
    log_dir: PathBuf,
    env: BTreeMap<String, String>,
    worker_env: BTreeMap<String, String>,
    sink: Option<(std::sync::Arc<dyn EventSink>, String)>,
    lock: Option<SqliteLock>,
    actions: Vec<SupervisorEvent>,
}

impl std::fmt::Debug for Supervisor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Supervisor")
            .field("receiver", &self.receiver)
            .field("worker", &self.worker)
            .field("proxy", &self.proxy)
            .finish_non_exhaustive()
    }
}

struct SqliteLock(rusqlite::Connection);

impl std::fmt::Debug for SqliteLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SqliteLock")
    }
}

impl Supervisor {
    /// Starts the fault proxy (if any), the receiver and the worker, and
    /// waits for the receiver to be ready. Logs go to `log_dir`. `{proxy}`
    /// in the commands and their environment becomes the proxy's address.
    pub async fn start(
        cfg: LifecycleConfig,
        db: DatabaseConfig,
        log_dir: &Path,
    ) -> Result<Supervisor, LifecycleError> {
        Self::start_as("receiver", cfg, db, log_dir).await
    }

    /// Like [`Supervisor::start`], calling the main process `main` in its
    /// log file's name and the history (`sender` for a sender under test).
    pub async fn start_as(
        main: &'static str,
        cfg: LifecycleConfig,
        db: DatabaseConfig,
        log_dir: &Path,
    ) -> Result<Supervisor, LifecycleError> {
        let mut sup = Supervisor::database_only(db, log_dir).await?;
        sup.main = main;
        let proxy = sup.proxy.as_ref().map(Proxy::local_addr);
        let env = |env: &BTreeMap<String, String>| -> BTreeMap<String, String> {
            env.iter()
                .map(|(k, v)| (k.clone(), expand_proxy(v, proxy)))
                .collect()
        };
        sup.receiver = Some(
            Process::new(main, &expand_proxy(&cfg.start, proxy), env(&cfg.env))
                .in_dir(cfg.dir.clone()),
        );
        sup.worker = cfg.worker.as_ref().map(|w| {
            Process::new("worker", &expand_proxy(&w.start, proxy), env(&w.env))
                .in_dir(cfg.dir.clone())
        });
        sup.cfg = Some(cfg);
        sup.spawn(Role::Receiver).await?;
        if sup.worker.is_some() {
            sup.spawn(Role::Worker).await?;
        }
        Ok(sup)
    }

    /// Database control alone, for a receiver the harness does not start:
    /// runs the fault proxy (if any) for the whole run, and cuts and
    /// restores the database; it has no process to signal or restart.
    pub async fn database_only(
        db: DatabaseConfig,
        log_dir: &Path,
    ) -> Result<Supervisor, LifecycleError> {
        let proxy = match &db.proxy {
            Some(p) => Some(
                start_proxy(p)
                    .await
                    .map_err(|source| LifecycleError::Proxy {
                        listen: p.listen.clone(),
                        source,
                    })?,
            ),
            None => None,
        };
        Ok(Supervisor {
            main: "receiver",
            cfg: None,
            db,
            receiver: None,
            worker: None,
            proxy,
            log_dir: log_dir.to_path_buf(),
            env: BTreeMap::new(),
            worker_env: BTreeMap::new(),
            sink: None,
            lock: None,
            actions: Vec::new(),
        })
    }

    /// Sends later actions to `sink` under `scenario`, and later logs to `log_dir`.
    pub fn attach(&mut self, sink: std::sync::Arc<dyn EventSink>, scenario: &str, log_dir: &Path) {
        self.sink = Some((sink, scenario.to_string()));
        self.log_dir = log_dir.to_path_buf();
        self.actions.clear();
    }

    /// Stops recording to the scenario's history.
    pub fn detach(&mut self) {
        self.sink = None;
    }

    /// Sends the logs of later (re)starts to `log_dir`.
    pub fn log_to(&mut self, log_dir: &Path) {
        self.log_dir = log_dir.to_path_buf();
    }

    /// Where a process writes its log now, and how long that file is: the
    /// mark from which a scenario's own part of it can be copied out.
    pub fn log_position(&self, role: Role) -> Option<(PathBuf, u64)> {
        let p = match role {
            Role::Receiver => self.receiver.as_ref()?,
            Role::Worker => self.worker.as_ref()?,
        };
        let len = std::fs::metadata(p.log()).map(|m| m.len()).unwrap_or(0);
        Some((p.log().to_path_buf(), len))
    }

    /// The actions taken since the last [`attach`](Self::attach).
    pub fn actions(&self) -> &[SupervisorEvent] {
        &self.actions
    }

    /// Whether a separate worker is supervised.
    pub fn has_worker(&self) -> bool {
        self.worker.is_some()
    }

    /// Whether the receiver honours `HOOKSTORM_FAILPOINTS`.
    pub fn supports_failpoints(&self) -> bool {
        self.cfg.as_ref().is_some_and(|c| c.failpoints)
    }

    /// The database configuration.
    pub fn database(&self) -> &DatabaseConfig {
        &self.db
    }

    /// The fault proxy, if one runs.
    pub fn proxy(&self) -> Option<&Proxy> {
        self.proxy.as_ref()
    }

    /// The pid of a process, when it runs.
    pub fn pid(&self, role: Role) -> Option<u32> {
        match role {
            Role::Receiver => self.receiver.as_ref().and_then(Process::pid),
            Role::Worker => self.worker.as_ref().and_then(Process::pid),
        }
    }

    /// Whether a process has exited (reaping it).
    pub fn exited(&mut self, role: Role) -> bool {
        self.process(role).is_some_and(|p| p.exited().is_some())
    }

    /// Whether a process runs (one that exited, or never came up after a
    /// failed start, does not).
    pub fn running(&mut self, role: Role) -> bool {
        self.process(role).is_some_and(Process::running)
    }

    /// Sets extra environment for the next starts of a process (failpoints).
    pub fn set_env(&mut self, role: Role, env: BTreeMap<String, String>) {
        match role {
            Role::Receiver => self.env = env,
            Role::Worker => self.worker_env = env,
        }
    }

    /// Writes one action to the history (when attached) and remembers it.
    pub fn record(&mut self, fault: FaultName, action: String, detail: Option<String>) {
        if let Some((sink, scenario)) = &self.sink {
            sink.event(Event::Fault(FaultEvent {
                scenario: scenario.clone(),
                at: now_rfc3339(),
                fault: fault.clone(),
                action: action.clone(),
                detail,
            }));
        }
        self.actions.push(SupervisorEvent { fault, action });
    }

    fn name_of(&self, role: Role) -> &'static str {
        match role {
            Role::Receiver => self.main,
            Role::Worker => role.name(),
        }
    }

    fn process(&mut self, role: Role) -> Option<&mut Process> {
        match role {
            Role::Receiver => self.receiver.as_mut(),
            Role::Worker => self.worker.as_mut(),
        }
    }

    async fn spawn(&mut self, role: Role) -> Result<u32, LifecycleError> {
        let dir = self.log_dir.clone();
        let env = match role {
            Role::Receiver => self.env.clone(),
            Role::Worker => self.worker_env.clone(),
        };
        let Some(cfg) = &self.cfg else {
            return Ok(0);
        };
        let (ready, timeout) = match role {
            Role::Receiver => (cfg.ready.clone(), cfg.ready_timeout),
            Role::Worker => match &cfg.worker {
                Some(w) => (w.ready(), w.ready_timeout),
                None => return Ok(0),
            },
        };
        let timeout = timeout.map(|d| d.0).unwrap_or(DEFAULT_READY_TIMEOUT);
        let Some(p) = self.process(role) else {
            return Ok(0);
        };
        let pid = p.spawn(&dir, &env).await?;
        wait_ready(p, &ready, timeout).await?;
        Ok(pid)
    }

    /// How a process's readiness is known (the worker's default is the
    /// state, which the nemesis reads: the supervisor cannot).
    pub fn ready_of(&self, role: Role) -> Option<Ready> {
        let cfg = self.cfg.as_ref()?;
        match role {
            Role::Receiver => Some(cfg.ready.clone()),
            Role::Worker => cfg.worker.as_ref().map(|w| w.ready()),
        }
    }

    /// How long the worker may take to become ready, if the target says.
    pub fn worker_ready_timeout(&self) -> Option<Duration> {
        Some(self.cfg.as_ref()?.worker.as_ref()?.ready_timeout?.0)
    }

    /// The worker's `busy` command, if the target gives one.
    pub fn busy_command(&self) -> Option<&str> {
        self.cfg.as_ref()?.worker.as_ref()?.busy.as_deref()
    }

    /// Whether the worker's `busy` command says it holds work now (false
    /// when it fails, times out or there is none).
    pub async fn worker_busy(&mut self) -> bool {
        let dir = self.cfg.as_ref().and_then(|c| c.dir.clone());
        match self.busy_command().map(str::to_string) {
            Some(cmd) => command_ok(&cmd, dir.as_deref()).await,
            None => false,
        }
    }

    /// Sends `signal` to a process and records it.
    pub fn signal(&mut self, role: Role, signal: Signal) -> Result<(), LifecycleError> {
        self.signal_noting(role, signal, None)
    }

    /// Like [`signal`](Self::signal), with `detail` (what triggered it and
    /// what was in flight) on the history's line.
    pub fn signal_noting(
        &mut self,
        role: Role,
        signal: Signal,
        detail: Option<String>,
    ) -> Result<(), LifecycleError> {
        let Some(p) = self.process(role) else {
            return Ok(());
        };
        let pid = p.pid();
        p.signal(signal)?;
        let fault = match signal {
            Signal::Kill => FaultName::Kill,
            Signal::Stop => FaultName::Pause,
            Signal::Cont => FaultName::Resume,
            Signal::Term => FaultName::Terminate,
        };
        self.record(
            fault,
            format!(
                "{} {} (pid {})",
                signal.name(),
                self.name_of(role),
                pid.unwrap_or(0)
            ),
            detail,
        );
        Ok(())
    }

    /// SIGKILLs a process, reaps it and records the kill.
    pub async fn kill(&mut self, role: Role) -> Result<(), LifecycleError> {
        self.kill_noting(role, None).await
    }

    /// Like [`kill`](Self::kill), with `detail` on the history's line.
    pub async fn kill_noting(
        &mut self,
        role: Role,
        detail: Option<String>,
    ) -> Result<(), LifecycleError> {
        self.signal_noting(role, Signal::Kill, detail)?;
        if let Some(p) = self.process(role) {
            p.kill().await;
        }
        Ok(())
    }

    /// Starts a process again, waits until it is ready (its `ready`; a
    /// worker ready by the state is waited for by whoever reads the state)
    /// and records it.
    pub async fn restart(&mut self, role: Role, why: &str) -> Result<(), LifecycleError> {
        let started = Instant::now();
        let pid = self.spawn(role).await?;
        let took = started.elapsed().as_millis();
        let detail = match self.ready_of(role) {
            Some(Ready::State { .. }) => {
                format!("{why}; started in {took} ms, ready once the state shows it settling a row")
            }
            Some(r) => format!("{why}; ready after {took} ms ({r})"),
            None => format!("{why}; ready after {took} ms"),
        };
        self.record(
            FaultName::Restart,
            format!("start {} (pid {pid})", self.name_of(role)),
            Some(detail),
        );
        Ok(())
    }

    /// Whether a process exited by itself since it was started; restarts it
    /// if so. Returns the exit status seen.
    pub async fn revive(&mut self, role: Role) -> Result<Option<String>, LifecycleError> {
        let Some(p) = self.process(role) else {
            return Ok(None);
        };
        let status = p.exited();
        if let Some(s) = &status {
            self.restart(role, &format!("it exited ({s})")).await?;
        }
        Ok(status)
    }

    /// Makes sure every supervised process runs (after a scenario).
    pub async fn ensure_up(&mut self) -> Result<(), LifecycleError> {
        for role in [Role::Receiver, Role::Worker] {
            let Some(p) = self.process(role) else {
                continue;
            };
            if !p.running() {
                self.restart(role, "it was not running").await?;
            }
        }
        Ok(())
    }

    /// Cuts the database and records it.
    pub async fn cut_database(&mut self, cut: Cut) -> Result<(), LifecycleError> {
        let action = match cut {
            Cut::Proxy(mode) => {
                let Some(p) = &self.proxy else {
                    return Err(LifecycleError::Command {
                        command: "proxy".into(),
                        reason: "no [database] proxy configured".into(),
                    });
                };
                p.set_mode(mode);
                format!("proxy {} -> {mode}", p.local_addr())
            }
            Cut::Commands => {
                let cmd = self.db.stop.clone().unwrap_or_default();
                run_command(&cmd, self.db.dir.as_deref()).await?;
                "stop command".to_string()
            }
            Cut::SqliteLock => {
                let path = self.db.sqlite.clone().unwrap_or_default();
                self.lock = Some(lock_sqlite(&path)?);
                format!("exclusive lock on {}", path.display())
            }
        };
        self.record(FaultName::CutDatabase, action, None);
        Ok(())
    }

    /// Brings the database back after [`cut_database`](Self::cut_database).
    pub async fn restore_database(&mut self, cut: Cut) -> Result<(), LifecycleError> {
        self.restore_database_noting(cut, None).await
    }

    /// Like [`restore_database`](Self::restore_database), with `detail`
    /// (what the cut saw) on the history's `restore-database` line.
    pub async fn restore_database_noting(
        &mut self,
        cut: Cut,
        detail: Option<String>,
    ) -> Result<(), LifecycleError> {
        let action = match cut {
            Cut::Proxy(_) => {
                if let Some(p) = &self.proxy {
                    p.set_mode(Mode::Pass);
                }
                "proxy -> pass".to_string()
            }
            Cut::Commands => {
                let cmd = self.db.start.clone().unwrap_or_default();
                run_command(&cmd, self.db.dir.as_deref()).await?;
                "start command".to_string()
            }
            Cut::SqliteLock => {
                if let Some(SqliteLock(conn)) = self.lock.take() {
                    let _ = conn.execute_batch("ROLLBACK");
                }
                "lock released".to_string()
            }
        };
        self.record(FaultName::RestoreDatabase, action, detail);
        Ok(())
    }

    /// Ends a run's processes: at once when the user stopped the run
    /// (every group is killed as the supervisor drops), else as
    /// [`Supervisor::shutdown`] does.
    pub async fn end(self, interrupted: bool) {
        if interrupted {
            drop(self);
        } else {
            self.shutdown().await;
        }
    }

    /// Stops everything: SIGTERM, then SIGKILL after a grace period.
    pub async fn shutdown(mut self) {
        if let Some(SqliteLock(conn)) = self.lock.take() {
            let _ = conn.execute_batch("ROLLBACK");
        }
        if let Some(w) = self.worker.as_mut() {
            w.terminate(Duration::from_secs(2)).await;
        }
        if let Some(r) = self.receiver.as_mut() {
            r.terminate(Duration::from_secs(3)).await;
        }
    }
}

/// Starts the fault proxy on its address, or on the socket this process
/// inherited when `listen` is `fd:N` (whoever started the harness holds
/// the port the receiver connects to).
async fn start_proxy(p: &ProxyConfig) -> std::io::Result<Proxy> {
    let Some(n) = p.listen.strip_prefix("fd:") else {
        return Proxy::start(&p.listen, &p.upstream).await;
    };
    let fd = n.parse().map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "expected fd:N with N a descriptor number, like fd:3",
        )
    })?;
    let listener = super::os::inherited_listener(fd)?;
    listener.set_nonblocking(true)?;
    Ok(Proxy::with_listener(
        tokio::net::TcpListener::from_std(listener)?,
        &p.upstream,
    ))
}

async fn run_command(cmd: &str, dir: Option<&Path>) -> Result<(), LifecycleError> {
    let out = super::shell::run(
        super::shell::command_in(&super::config::expand(cmd), dir),
        Duration::from_secs(60),
        crate::limits::budget::COMMAND_OUTPUT,
    )
    .await;
    let fail = |reason: String| LifecycleError::Command {
        command: cmd.to_string(),
        reason,
    };
    match out {
        Err(super::shell::ShellError::Timeout) => Err(fail("no exit within 60s".into())),
        Err(super::shell::ShellError::TooMuchOutput(n)) => Err(fail(format!(
            "more than {} of output",
            crate::limits::budget::show(n)
        ))),
        Err(super::shell::ShellError::Io(e)) => Err(fail(e.to_string())),
        Ok(o) if !o.status.success() => Err(fail(format!(
            "{}: {}",
            o.status,
            String::from_utf8_lossy(&o.stderr).trim()
        ))),
        Ok(_) => Ok(()),
    }
}

fn lock_sqlite(path: &Path) -> Result<SqliteLock, LifecycleError> {
    let fail = |e: rusqlite::Error| LifecycleError::Lock {
        path: path.display().to_string(),
        reason: e.to_string(),
    };
    let conn = rusqlite::Connection::open(path).map_err(fail)?;
    conn.busy_timeout(Duration::from_secs(10)).map_err(fail)?;
    conn.execute_batch("BEGIN EXCLUSIVE").map_err(fail)?;
    Ok(SqliteLock(conn))
}

/// Waits until `ready` holds, failing early when the process exits.
async fn wait_ready(
    p: &mut Process,
    ready: &Ready,
    timeout: Duration,
) -> Result<(), LifecycleError> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = p.exited() {
            return Err(LifecycleError::Exited {
                name: p.name().to_string(),
                status,
                log: p.log().display().to_string(),
            });
        }
        let ok = match ready {
            Ready::Log { log } => p.logged_since_start(log),
            // The state is read by whoever waits on it (the nemesis).
            Ready::State { .. } => true,
            other => is_ready(other, p.dir()).await,
        };
        if ok {
            return Ok(());
        }
        if Instant::now() >= deadline {
            let log = p.log().display().to_string();
            p.kill().await;
            return Err(LifecycleError::NotReady {
                name: p.name().to_string(),
                ready: ready.to_string(),
                timeout: crate::text::units::format_duration(timeout),
                log,
            });
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// One readiness check.
pub(crate) async fn is_ready(ready: &Ready, dir: Option<&Path>) -> bool {
    let check = async {
        match ready {
            Ready::Tcp { tcp } => TcpStream::connect(tcp.as_str()).await.is_ok(),
            Ready::Http { http } => http_ok(http).await.unwrap_or(false),
            Ready::Command { command } => command_ok(command, dir).await,
            Ready::Log { .. } | Ready::State { .. } => false,
        }
    };
    let limit = match ready {
        Ready::Command { .. } => CHECK_COMMAND_LIMIT,
        _ => Duration::from_millis(500),
    };
    tokio::time::timeout(limit, check).await.unwrap_or(false)
}

/// How long a readiness or busy command may take.
const CHECK_COMMAND_LIMIT: Duration = Duration::from_secs(5);

/// Whether `cmd` (with `sh -c`) exits 0 within [`CHECK_COMMAND_LIMIT`].
async fn command_ok(cmd: &str, dir: Option<&Path>) -> bool {
    matches!(
        super::shell::run(
            super::shell::command_in(&super::config::expand(cmd), dir),
            CHECK_COMMAND_LIMIT,
            crate::limits::budget::COMMAND_OUTPUT,
        )
        .await,
        Ok(o) if o.status.success()
    )
}

async fn http_ok(url: &str) -> Option<bool> {
    let uri: http::Uri = url.parse().ok()?;
    let host = uri.host()?;
    let port = uri.port_u16().unwrap_or(80);
    let mut s = TcpStream::connect((host.trim_matches(|c| c == '[' || c == ']'), port))
        .await
        .ok()?;
    let path = uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
    let req = format!("GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.ok()?;
    let mut buf = [0u8; 16];
    let mut n = 0;
    while n < 12 {
        let k = s.read(&mut buf[n..]).await.ok()?;
        if k == 0 {
            break;
        }
        n += k;
    }
    let line = std::str::from_utf8(&buf[..n]).ok()?;
    Some(line.starts_with("HTTP/1.") && line.get(9..10) == Some("2"))
}
