//! A private Postgres server for tests, started from the machine's binaries.
//!
//! `initdb` in a temporary directory, `pg_ctl start` on a 127.0.0.1 port
//! with its own socket directory and `fsync=on`; `stop_immediate` and
//! `start` simulate a database outage on the same port and data. As root
//! (initdb refuses root) the binaries run as the `postgres` user through
//! `runuser`. The server is stopped when the value is dropped.
//!
//! # The port
//!
//! Postgres cannot be told to listen on port 0 and report the port it got
//! (its `port` setting must be a real port, and clients find the server by
//! it), nor can it take over a socket this process bound. So the port is
//! chosen without binding anything: candidates come from a window below
//! the kernel's ephemeral range (32768 and up, where `bind(":0")` hands out
//! ports, so other tests' listeners do not land there), placed by this
//! process's pid and walked with a counter so that two servers of one
//! process never try the same one. If the server still cannot listen on
//! it (another process holds it: the log says "Address already in use"),
//! the first start retries on the next candidate, up to
//! [`PORT_ATTEMPTS`] times.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Why the test server could not run.
#[derive(Debug, thiserror::Error)]
pub enum PgTestError {
    /// `initdb`/`pg_ctl` were not found.
    #[error(
        "postgres binaries not found (hint: install postgresql, or put initdb and pg_ctl on PATH)"
    )]
    NotInstalled,
    /// A command failed.
    #[error("{0}")]
    Command(String),
    /// I/O failed.
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
}

/// A private Postgres server.
pub struct PgServer {
    bin: PathBuf,
    data: tempfile::TempDir,
    socket: tempfile::TempDir,
    port: u16,
    running: bool,
    as_postgres: bool,
    databases: AtomicU32,
}

fn find_bin() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            if dir.join("initdb").is_file() && dir.join("pg_ctl").is_file() {
                return Some(dir);
            }
        }
    }
    let mut candidates: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|p| p.join("initdb").is_file())
        .collect();
    candidates.sort();
    candidates.pop()
}

/// How many ports the first start tries before it gives up.
pub const PORT_ATTEMPTS: u32 = 20;

/// The next candidate port (see the module header); nothing is bound.
fn candidate_port() -> u16 {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    const FIRST: u32 = 20_000;
    const SPAN: u32 = 12_000;
    let base = std::process::id().wrapping_mul(211) % SPAN;
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    (FIRST + (base + n * 7) % SPAN) as u16
}

#[cfg(unix)]
fn running_as_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

#[cfg(not(unix))]
fn running_as_root() -> bool {
    false
}

impl PgServer {
    /// Starts a server, or returns `None` when Postgres is not installed —
    /// unless `HOOKSTORM_REQUIRE_POSTGRES=1`, which turns that into a panic.
    pub fn start_or_skip() -> Option<PgServer> {
        let required = std::env::var("HOOKSTORM_REQUIRE_POSTGRES").is_ok_and(|v| v == "1");
        match PgServer::start_new() {
            Ok(s) => Some(s),
            Err(PgTestError::NotInstalled) if !required => {
                eprintln!("skipping: postgres binaries not found");
                None
            }
            Err(e) => panic!("could not start the test postgres server: {e}"),
        }
    }

    /// initdb + start on a free port.
    pub fn start_new() -> Result<PgServer, PgTestError> {
        let bin = find_bin().ok_or(PgTestError::NotInstalled)?;
        let as_postgres = running_as_root();
        let data = tempfile::Builder::new().prefix("hookstorm-pg-").tempdir()?;
        let socket = tempfile::Builder::new()
            .prefix("hookstorm-pgsock-")
            .tempdir()?;
        if as_postgres {
            for dir in [data.path(), socket.path()] {
                let status = Command::new("chown").arg("postgres:").arg(dir).status()?;
                if !status.success() {
                    return Err(PgTestError::Command(format!(
                        "chown {} to postgres failed",
                        dir.display()
                    )));
                }
            }
        }
        let mut server = PgServer {
            bin,
            data,
            socket,
            port: candidate_port(),
            running: false,
            as_postgres,
            databases: AtomicU32::new(0),
        };
        let datadir = server.data.path().join("db");
        server.run(
            "initdb",
            &[
                "-D",
                &datadir.to_string_lossy(),
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-sync",
            ],
        )?;
        let mut attempt = 1;
        loop {
            match server.start() {
                Ok(()) => return Ok(server),
                Err(_) if attempt < PORT_ATTEMPTS && server.port_was_taken() => {
                    attempt += 1;
                    server.port = candidate_port();
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Whether the last start failed because the port is someone else's.
    fn port_was_taken(&self) -> bool {
        std::fs::read_to_string(self.data.path().join("server.log"))
            .is_ok_and(|log| log.contains("Address already in use"))
            && std::fs::remove_file(self.data.path().join("server.log")).is_ok()
    }

    fn command(&self, tool: &str) -> Command {
        let exe = self.bin.join(tool);
        if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(exe);
            c
        } else {
            Command::new(exe)
        }
    }

    fn run(&self, tool: &str, args: &[&str]) -> Result<(), PgTestError> {
        let out = self
            .command(tool)
            .args(args)
            .stdin(Stdio::null())
            .output()?;
        if !out.status.success() {
            return Err(PgTestError::Command(format!(
                "{tool} failed: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )));
        }
        Ok(())
    }

    fn datadir(&self) -> PathBuf {
        self.data.path().join("db")
    }

    /// Starts the server (same port, same data) and waits until it accepts.
    pub fn start(&mut self) -> Result<(), PgTestError> {
        let opts = format!(
            "-p {} -c listen_addresses=127.0.0.1 -k {} -c fsync=on -c shared_buffers=16MB -c max_connections=60",
            self.port,
            self.socket.path().display()
        );
        let log = self.data.path().join("server.log");
        self.run(
            "pg_ctl",
            &[
                "-D",
                &self.datadir().to_string_lossy(),
                "-l",
                &log.to_string_lossy(),
                "-o",
                &opts,
                "-w",
                "-t",
                "30",
                "start",
            ],
        )?;
        self.running = true;
        let deadline = Instant::now() + Duration::from_secs(15);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            if Instant::now() > deadline {
                return Err(PgTestError::Command(
                    "postgres did not start accepting".into(),
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(())
    }

    /// Stops the server at once (`pg_ctl -m immediate stop`): a crash, as far as clients can tell.
    pub fn stop_immediate(&mut self) -> Result<(), PgTestError> {
        self.running = false;
        self.run(
            "pg_ctl",
            &[
                "-D",
                &self.datadir().to_string_lossy(),
                "-m",
                "immediate",
                "-w",
                "stop",
            ],
        )
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The URL of the `postgres` database.
    pub fn url(&self) -> String {
        self.database_url("postgres")
    }

    /// The URL of a database on this server.
    pub fn database_url(&self, db: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{db}", self.port)
    }

    /// Creates a fresh, uniquely named database and returns its URL.
    pub async fn fresh_database(&self) -> Result<String, PgTestError> {
        let n = self.databases.fetch_add(1, Ordering::SeqCst);
        let name = format!("t{}_{n}", std::process::id());
        let (client, conn) = tokio_postgres::connect(&self.url(), tokio_postgres::NoTls)
            .await
            .map_err(|e| PgTestError::Command(e.to_string()))?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        client
            .batch_execute(&format!("create database {name}"))
            .await
            .map_err(|e| PgTestError::Command(e.to_string()))?;
        Ok(self.database_url(&name))
    }

    /// Shell commands that stop (`-m immediate`) and start this server, for
    /// a target's `[database] stop` / `start` (process scenarios).
    pub fn ctl_commands(&self) -> (String, String) {
        use hookstorm::lifecycle::shell_quote as q;
        let exe = self.bin.join("pg_ctl");
        let prefix = if self.as_postgres {
            format!("runuser -u postgres -- {}", q(&exe.to_string_lossy()))
        } else {
            q(&exe.to_string_lossy())
        };
        let data = q(&self.datadir().to_string_lossy());
        let opts = format!(
            "-p {} -c listen_addresses=127.0.0.1 -k {} -c fsync=on -c shared_buffers=16MB -c max_connections=60",
            self.port,
            self.socket.path().display()
        );
        let log = self.data.path().join("server.log");
        (
            format!("{prefix} -D {data} -m immediate -w stop"),
            format!(
                "{prefix} -D {data} -l {} -o {} -w -t 30 start",
                q(&log.to_string_lossy()),
                q(&opts)
            ),
        )
    }

    /// The data directory.
    pub fn data_dir(&self) -> &Path {
        self.data.path()
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        if self.running {
            let _ = self.stop_immediate();
        }
    }
}
