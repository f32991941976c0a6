//! Lifecycle control: the harness owns the receiver's processes (and, on
//! request, its database) so that it can produce the failures below HTTP
//! for real — a SIGKILL between commit and answer, a dead worker, a
//! database that goes away.
//!
//! The target file describes how to start the receiver (`[lifecycle]`), how
//! to know it is ready (a health URL or a TCP port), an optional separate
//! worker (`[lifecycle.worker]`), and how to cut its database
//! (`[database]`: stop/start commands, a TCP fault proxy, or a SQLite file
//! to lock). [`Supervisor`] carries that out: every process runs under
//! `sh -c` in its own process group with its output in files of the report
//! folder, and every action it takes is an `Event::Fault` line in the
//! history. Cleanup is guaranteed three ways: [`Process`]'s `Drop` kills its
//! group, [`kill_all`] kills every live group (the CLI calls it on Ctrl-C),
//! and an error path never leaves a child behind.
//!
//! Commands may say `{hookstorm}`: it becomes the path of the running
//! `hookstorm` binary, so `"{hookstorm} receiver …"` starts the reference
//! receiver as a real process. They may say `{proxy}`: it becomes the
//! address the fault proxy listens on, so `[database.proxy] listen` can be
//! port 0 and nothing has to guess a free port.
//!
//! Listening sockets can be handed down: [`inherit_sockets`] gives a child
//! bound sockets as descriptors 3, 4, … (`LISTEN_FDS` says how many), and
//! `[database.proxy] listen = "fd:3"` serves the fault proxy on one that
//! hookstorm inherited, so whoever starts hookstorm can hold that port.
//!
//! Process groups and signals are Unix; the platform calls are in one
//! module with a typed [`LifecycleError::Unsupported`] elsewhere.

mod config;
mod os;
mod process;
pub mod scratch;
pub(crate) mod shell;
mod signal;
mod supervisor;

pub use config::{
    expand, expand_proxy, shell_quote, DatabaseConfig, LifecycleConfig, LifecycleError,
    ProxyConfig, Ready, Sockets, StateReady, WorkerConfig, DEFAULT_READY_TIMEOUT,
};
pub use os::{die_with_parent, inherit_sockets, FIRST_SOCKET_FD};

pub use process::{group_members, kill_all, live_groups, processes, Process};
pub use signal::{ProcEntry, Signal};
pub use supervisor::{Cut, Role, Supervisor, SupervisorEvent};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifecycle_tables_parse_with_either_readiness_check() {
        let text = r#"
start = "./receiver --port 8080"
env = { RUST_LOG = "info" }
ready = { http = "http://127.0.0.1:8081/healthz" }
ready_timeout = "5s"
[worker]
start = "./worker"
"#;
        let l: LifecycleConfig = toml::from_str(text).unwrap();
        assert!(matches!(l.ready, Ready::Http { .. }));
        assert_eq!(l.worker.unwrap().start, "./worker");
        let l: LifecycleConfig =
            toml::from_str("start = \"x\"\nready = { tcp = \"127.0.0.1:1\" }\n").unwrap();
        assert!(matches!(l.ready, Ready::Tcp { .. }));
        assert!(
            toml::from_str::<LifecycleConfig>("start = \"x\"\nready = { udp = \"x\" }\n").is_err()
        );
    }

    #[test]
    fn hookstorm_placeholder_becomes_the_binary_path() {
        let e = expand("{hookstorm} receiver --listen 127.0.0.1:1");
        assert!(!e.contains("{hookstorm}") && e.ends_with(" receiver --listen 127.0.0.1:1"));
        assert_eq!(shell_quote("a b'c"), "'a b'\\''c'");
        assert_eq!(shell_quote("/usr/bin/x"), "/usr/bin/x");
    }
}
