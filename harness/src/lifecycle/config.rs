//! What the target file says about the receiver's processes and its
//! database (`[lifecycle]`, `[database]`), the sockets handed to them, the
//! error of every lifecycle action, and the expansion of `{hookstorm}` and
//! `{proxy}` in their commands. A leaf of the lifecycle module.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use serde::Deserialize;

use crate::text::units::HumanDuration;

/// How long a process may take to become ready when the file says nothing.
pub const DEFAULT_READY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);

/// `[lifecycle]`: how the harness starts and watches the receiver.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LifecycleConfig {
    /// The command that starts the receiver (run with `sh -c`).
    pub start: String,
    /// Where its commands run: the folder of the target file (set when
    /// the file is read; hookstorm's working directory without one).
    #[serde(skip)]
    pub dir: Option<PathBuf>,
    /// Extra environment for it.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// How to know it is ready.
    pub ready: Ready,
    /// How long it may take to become ready.
    #[serde(default)]
    pub ready_timeout: Option<HumanDuration>,
    /// The receiver honours `HOOKSTORM_FAILPOINTS` (the reference receiver
    /// does): deterministic crash points are used where a scenario has them.
    #[serde(default)]
    pub failpoints: bool,
    /// A separate worker process, if the receiver has one.
    #[serde(default)]
    pub worker: Option<WorkerConfig>,
}

/// Listening sockets a child inherits (see [`inherit_sockets`]).
/// Cheap to clone; equal when they listen on the same addresses.
#[derive(Debug, Clone, Default)]
pub struct Sockets(Vec<Arc<std::net::TcpListener>>);

impl Sockets {
    /// The sockets, in descriptor order (the first becomes descriptor 3).
    pub fn new(listeners: Vec<std::net::TcpListener>) -> Sockets {
        Sockets(listeners.into_iter().map(Arc::new).collect())
    }

    /// How many there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The listeners, in descriptor order.
    pub fn listeners(&self) -> &[Arc<std::net::TcpListener>] {
        &self.0
    }

    /// Where they listen, in descriptor order.
    pub fn addrs(&self) -> Vec<Option<SocketAddr>> {
        self.0.iter().map(|l| l.local_addr().ok()).collect()
    }
}

impl PartialEq for Sockets {
    fn eq(&self, other: &Sockets) -> bool {
        self.addrs() == other.addrs()
    }
}

/// `[lifecycle.worker]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkerConfig {
    /// The command that starts the worker.
    pub start: String,
    /// Extra environment for it.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// How to know it is ready to take work, waited for after every
    /// (re)start; without it, [`Ready::State`]: the state shows a row it
    /// processed since it started, or no row waiting.
    #[serde(default)]
    pub ready: Option<Ready>,
    /// How long it may take to become ready.
    #[serde(default)]
    pub ready_timeout: Option<HumanDuration>,
    /// A command that exits 0 while the worker holds work (claimed or
    /// unfinished tasks); without it the state tells (rows waiting after
    /// the worker has processed one since it started).
    #[serde(default)]
    pub busy: Option<String>,
}

impl WorkerConfig {
    /// The worker's readiness check: the one the file gives, else the state.
    pub fn ready(&self) -> Ready {
        self.ready.clone().unwrap_or(Ready::State {
            state: StateReady::Processed,
        })
    }
}

/// How to know a process is ready.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged, deny_unknown_fields)]
pub enum Ready {
    /// `{ http = "http://127.0.0.1:8081/healthz" }`: a GET answers 2xx.
    Http {
        /// The health URL.
        http: String,
    },
    /// `{ tcp = "127.0.0.1:8080" }`: a TCP connect succeeds.
    Tcp {
        /// The address.
        tcp: String,
    },
    /// `{ command = "celery -A app inspect ping" }`: the command (run with
    /// `sh -c`, in hookstorm's working directory) exits 0.
    Command {
        /// The command.
        command: String,
    },
    /// `{ log = "ready." }`: a line the process wrote to its log since this
    /// start contains the text.
    Log {
        /// The text.
        log: String,
    },
    /// `{ state = "processed" }`: the receiver's state shows a row processed
    /// since this start, or no row waiting (a worker; read through the
    /// target's state source).
    State {
        /// What the state must show.
        state: StateReady,
    },
}

/// What the state must show for [`Ready::State`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StateReady {
    /// A row processed since the start, or no row waiting.
    Processed,
}

impl std::fmt::Display for Ready {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ready::Http { http } => write!(f, "GET {http} answers 2xx"),
            Ready::Tcp { tcp } => write!(f, "{tcp} accepts connections"),
            Ready::Command { command } => write!(f, "`{command}` exits 0"),
            Ready::Log { log } => write!(f, "its log shows {log:?}"),
            Ready::State { .. } => {
                f.write_str("the state shows a row processed since the start, or none waiting")
            }
        }
    }
}

/// `[database]`: how the harness cuts the receiver's database.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatabaseConfig {
    /// A command that stops the database (e.g. `pg_ctl -D … -m immediate stop`).
    #[serde(default)]
    pub stop: Option<String>,
    /// A command that starts it again.
    #[serde(default)]
    pub start: Option<String>,
    /// A fault proxy the receiver's connection string points at.
    #[serde(default)]
    pub proxy: Option<ProxyConfig>,
    /// A SQLite file: the outage holds an exclusive lock on it.
    #[serde(default)]
    pub sqlite: Option<PathBuf>,
    /// Where its commands run: the folder of the target file (set when
    /// the file is read; hookstorm's working directory without one).
    #[serde(skip)]
    pub dir: Option<PathBuf>,
}

impl DatabaseConfig {
    /// Whether stop and start commands are both given.
    pub fn has_commands(&self) -> bool {
        self.stop.is_some() && self.start.is_some()
    }

    /// Whether it describes any way to cut the database (proxy, commands or
    /// a SQLite file).
    pub fn has_control(&self) -> bool {
        self.proxy.is_some() || self.has_commands() || self.sqlite.is_some()
    }
}

/// `[database.proxy]` (or `proxy = { … }`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProxyConfig {
    /// Where the proxy listens (the receiver connects here): an address
    /// (port 0 with `{proxy}` in the commands), or `fd:N`, a listening
    /// socket hookstorm inherited from whoever started it.
    pub listen: String,
    /// The real database.
    pub upstream: String,
}

/// Lifecycle control failed.
#[derive(Debug, thiserror::Error)]
pub enum LifecycleError {
    /// A process could not be started.
    #[error("cannot start {name} ({command:?}): {source}")]
    Spawn {
        /// Which process.
        name: String,
        /// The command (as written, `{hookstorm}` unexpanded).
        command: String,
        /// Why.
        source: std::io::Error,
    },
    /// It did not become ready in time.
    #[error("{name} was not ready within {timeout} ({ready}) (hint: see {log})")]
    NotReady {
        /// Which process.
        name: String,
        /// The readiness check.
        ready: String,
        /// How long was waited.
        timeout: String,
        /// Its log file.
        log: String,
    },
    /// It exited while the harness waited for it.
    #[error("{name} exited ({status}) before it was ready (hint: see {log})")]
    Exited {
        /// Which process.
        name: String,
        /// Its exit status.
        status: String,
        /// Its log file.
        log: String,
    },
    /// A database command failed.
    #[error("database command {command:?} failed: {reason}")]
    Command {
        /// The command.
        command: String,
        /// What happened.
        reason: String,
    },
    /// The fault proxy could not listen.
    #[error("fault proxy on {listen}: {source}")]
    Proxy {
        /// Its listen address.
        listen: String,
        /// Why.
        source: std::io::Error,
    },
    /// The SQLite file could not be locked.
    #[error("cannot lock {path}: {reason}")]
    Lock {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
    /// A signal could not be sent.
    #[error("cannot signal {name}: {source}")]
    Signal {
        /// Which process.
        name: String,
        /// Why.
        source: std::io::Error,
    },
    /// More sockets to hand to a child than descriptors 3 to 10 hold.
    #[error("{count} sockets to hand to the receiver; at most 8")]
    Sockets {
        /// How many were given.
        count: usize,
    },
    /// This platform cannot do it (process groups and signals are Unix).
    #[error("{what} is not supported on this platform (hint: run hookstorm on Linux, or describe a target without [lifecycle])")]
    Unsupported {
        /// What was asked for.
        what: &'static str,
    },
}

impl LifecycleConfig {
    /// Its commands and the values of its `env` tables (the worker's
    /// too): where `{hookstorm}`, `{proxy}` and `{provider}` may stand.
    fn expandable_mut(&mut self) -> Vec<&mut String> {
        let mut out: Vec<&mut String> = vec![&mut self.start];
        out.extend(self.env.values_mut());
        if let Some(w) = &mut self.worker {
            out.push(&mut w.start);
            out.extend(w.env.values_mut());
        }
        out
    }

    /// `word` replaced by `value` (when there is one) in every command and
    /// `env` value; whether any of them said it.
    pub(crate) fn replace_word(&mut self, word: &str, value: Option<&str>) -> bool {
        let mut said = false;
        for f in self.expandable_mut() {
            if f.contains(word) {
                said = true;
                if let Some(v) = value {
                    *f = f.replace(word, v);
                }
            }
        }
        said
    }
}

/// Replaces `{proxy}` with the fault proxy's address.
pub fn expand_proxy(command: &str, proxy: Option<SocketAddr>) -> String {
    match proxy {
        Some(addr) => command.replace("{proxy}", &addr.to_string()),
        None => command.to_string(),
    }
}

/// Replaces `{hookstorm}` with the running binary's path.
pub fn expand(command: &str) -> String {
    if !command.contains("{hookstorm}") {
        return command.to_string();
    }
    let exe = std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "hookstorm".into());
    command.replace("{hookstorm}", &shell_quote(&exe))
}

/// Quotes `s` for `sh -c` when it needs it.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+:=,@%".contains(&b))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}
