//! A TCP fault proxy: sits between a receiver and its database (the
//! receiver's connection string points at the proxy) and, on command,
//! refuses new connections, resets existing ones, black-holes traffic or
//! adds latency.
//!
//! It knows nothing of the database's protocol, so it works for any
//! database reached over TCP. The harness drives it through [`Proxy`];
//! people who want it in their own tests run `hookstorm proxy` and use the
//! small HTTP API of [`control`]. Modes:
//!
//! - `pass`: bytes flow both ways.
//! - `refuse`: new connections are accepted and reset at once; existing
//!   ones keep working.
//! - `reset`: every existing connection is aborted with a TCP reset, and so
//!   is every new one.
//! - `blackhole`: bytes are read and discarded, nothing is forwarded or
//!   answered: the receiver's own timeouts are what end its wait. A
//!   connection black-holed once is reset when the mode changes, since its
//!   stream is no longer in a state either end can use.
//! - `latency`: every chunk is held for the given time before it is forwarded.
//!
//! Started with [`Proxy::watching_commits`], it also reads the Postgres
//! server's side of every connection ([`pgwire`]) and, while armed, holds
//! the first committed save (a transaction that inserted rows) from its
//! client and hands the harness a
//! [`HeldCommit`]: the harness kills the client, then lets the bytes go.
//! That is a crash timed on the database's own word, between a save and
//! whatever the client meant to do next.
//!
//! It is written here rather than taken from a separate proxy service
//! (Toxiproxy and the like): it runs inside the harness and its tests with
//! nothing to install or start, and each mode needs per-connection control
//! (a reset through a zero linger, chunks held back) that a plain forwarding
//! crate does not offer. It is a few hundred lines of tokio I/O.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;

pub mod control;
pub mod pgwire;

/// The longest a held commit waits for the harness before its bytes go on.
pub const HOLD_MAX: Duration = Duration::from_secs(5);

/// A committed save held from the client that made it: its bytes go on
/// when this is dropped (or after [`HOLD_MAX`]).
#[derive(Debug)]
pub struct HeldCommit {
    _release: oneshot::Sender<()>,
}

struct CommitHook {
    armed: AtomicBool,
    held: mpsc::UnboundedSender<HeldCommit>,
}

/// What the proxy does with traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Mode {
    /// Forward both ways.
    Pass,
    /// Reset new connections; keep existing ones.
    Refuse,
    /// Reset existing and new connections.
    Reset,
    /// Swallow traffic, forward nothing.
    Blackhole,
    /// Forward every chunk after a delay.
    Latency {
        /// The delay per chunk, in milliseconds.
        latency_ms: u64,
    },
}

impl Mode {
    /// The mode's name (`pass`, `refuse`, …).
    pub fn name(&self) -> &'static str {
        match self {
            Mode::Pass => "pass",
            Mode::Refuse => "refuse",
            Mode::Reset => "reset",
            Mode::Blackhole => "blackhole",
            Mode::Latency { .. } => "latency",
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Mode::Latency { latency_ms } => write!(f, "latency {latency_ms}ms"),
            m => f.write_str(m.name()),
        }
    }
}

/// Counters of what the proxy did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ProxyStats {
    /// Connections accepted.
    pub accepted: u64,
    /// Connections forwarded to the upstream.
    pub forwarded: u64,
    /// Connections ended with a reset by the proxy.
    pub reset: u64,
    /// Upstream connects that failed.
    pub upstream_failures: u64,
}

#[derive(Default)]
struct Counters {
    accepted: AtomicU64,
    forwarded: AtomicU64,
    reset: AtomicU64,
    upstream_failures: AtomicU64,
}

struct Shared {
    upstream: String,
    mode: watch::Sender<Mode>,
    counters: Counters,
    commits: Option<CommitHook>,
}

/// A running proxy; dropping it stops accepting (open connections end when
/// their peers close or the mode resets them).
pub struct Proxy {
    shared: Arc<Shared>,
    addr: SocketAddr,
    accept: JoinHandle<()>,
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proxy")
            .field("listen", &self.addr)
            .field("upstream", &self.shared.upstream)
            .field("mode", &self.mode())
            .finish()
    }
}

impl Proxy {
    /// Binds `listen` and forwards to `upstream` (`host:port`), starting in `pass`.
    pub async fn start(listen: &str, upstream: &str) -> std::io::Result<Proxy> {
        let listener = TcpListener::bind(listen).await?;
        Ok(Self::with_listener(listener, upstream))
    }

    /// Forwards connections from an already bound listener.
    pub fn with_listener(listener: TcpListener, upstream: &str) -> Proxy {
        Self::build(listener, upstream, None)
    }

    /// Binds `listen` and forwards to the Postgres server at `upstream`,
    /// reading its answers for committed saves (transactions that inserted
    /// rows): while [`Proxy::arm_commit`] is on, the first one is held and
    /// handed over on the returned channel.
    pub async fn watching_commits(
        listen: &str,
        upstream: &str,
    ) -> std::io::Result<(Proxy, mpsc::UnboundedReceiver<HeldCommit>)> {
        let listener = TcpListener::bind(listen).await?;
        let (tx, rx) = mpsc::unbounded_channel();
        let hook = CommitHook {
            armed: AtomicBool::new(false),
            held: tx,
        };
        Ok((Self::build(listener, upstream, Some(hook)), rx))
    }

    /// Holds the next committed save (on) or none (off); a held commit
    /// disarms it.
    pub fn arm_commit(&self, on: bool) {
        if let Some(h) = &self.shared.commits {
            h.armed.store(on, Ordering::SeqCst);
        }
    }

    fn build(listener: TcpListener, upstream: &str, commits: Option<CommitHook>) -> Proxy {
        let addr = listener
            .local_addr()
            .unwrap_or_else(|_| SocketAddr::from(([127, 0, 0, 1], 0)));
        let (tx, _) = watch::channel(Mode::Pass);
        let shared = Arc::new(Shared {
            upstream: upstream.to_string(),
            mode: tx,
            counters: Counters::default(),
            commits,
        });
        let s = shared.clone();
        let accept = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                };
                s.counters.accepted.fetch_add(1, Ordering::Relaxed);
                let _ = stream.set_nodelay(true);
                tokio::spawn(handle(s.clone(), stream));
            }
        });
        Proxy {
            shared,
            addr,
            accept,
        }
    }

    /// Where the proxy listens.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Where it forwards to.
    pub fn upstream(&self) -> &str {
        &self.shared.upstream
    }

    /// The current mode.
    pub fn mode(&self) -> Mode {
        *self.shared.mode.borrow()
    }

    /// Switches the mode; existing connections react at once.
    pub fn set_mode(&self, mode: Mode) {
        self.shared.mode.send_replace(mode);
    }

    /// What the proxy has done so far.
    pub fn stats(&self) -> ProxyStats {
        let c = &self.shared.counters;
        ProxyStats {
            accepted: c.accepted.load(Ordering::Relaxed),
            forwarded: c.forwarded.load(Ordering::Relaxed),
            reset: c.reset.load(Ordering::Relaxed),
            upstream_failures: c.upstream_failures.load(Ordering::Relaxed),
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accept.abort();
        // Wake every connection so none outlives the proxy in a black hole.
        self.shared.mode.send_replace(Mode::Reset);
    }
}

fn abort(shared: &Shared, streams: &[&TcpStream]) {
    for s in streams {
        let _ = s.set_zero_linger();
    }
    shared.counters.reset.fetch_add(1, Ordering::Relaxed);
}

async fn handle(shared: Arc<Shared>, client: TcpStream) {
    let mut rx = shared.mode.subscribe();
    let mode = *rx.borrow_and_update();
    match mode {
        Mode::Refuse | Mode::Reset => return abort(&shared, &[&client]),
        Mode::Blackhole => {
            return blackhole(&shared, client, None, rx).await;
        }
        Mode::Pass | Mode::Latency { .. } => {}
    }
    let upstream = match TcpStream::connect(shared.upstream.as_str()).await {
        Ok(u) => u,
        Err(_) => {
            shared
                .counters
                .upstream_failures
                .fetch_add(1, Ordering::Relaxed);
            return abort(&shared, &[&client]);
        }
    };
    let _ = upstream.set_nodelay(true);
    shared.counters.forwarded.fetch_add(1, Ordering::Relaxed);
    pump(shared, client, upstream, rx).await;
}

async fn pump(
    shared: Arc<Shared>,
    mut a: TcpStream,
    mut b: TcpStream,
    mut rx: watch::Receiver<Mode>,
) {
    let mut buf_a = vec![0u8; 16 * 1024];
    let mut buf_b = vec![0u8; 16 * 1024];
    let mut scan = shared.commits.as_ref().map(|_| pgwire::PgScan::default());
    loop {
        tokio::select! {
            r = a.read(&mut buf_a) => {
                let n = match r { Ok(0) | Err(_) => return, Ok(n) => n };
                if let Some(s) = scan.as_mut() { s.client(&buf_a[..n]); }
                delay(&rx).await;
                if b.write_all(&buf_a[..n]).await.is_err() { return; }
            }
            r = b.read(&mut buf_b) => {
                let n = match r { Ok(0) | Err(_) => return, Ok(n) => n };
                if scan.as_mut().is_some_and(|s| s.server(&buf_b[..n])) {
                    hold(&shared).await;
                }
                delay(&rx).await;
                if a.write_all(&buf_b[..n]).await.is_err() { return; }
            }
            changed = rx.changed() => {
                if changed.is_err() {
                    return abort(&shared, &[&a, &b]);
                }
                let mode = *rx.borrow_and_update();
                match mode {
                    Mode::Reset => return abort(&shared, &[&a, &b]),
                    Mode::Blackhole => return blackhole(&shared, a, Some(b), rx).await,
                    Mode::Pass | Mode::Refuse | Mode::Latency { .. } => {}
                }
            }
        }
    }
}

/// A committed save passes: held, while armed, until the harness lets
/// it go (it kills the client first), at most [`HOLD_MAX`].
async fn hold(shared: &Shared) {
    let Some(h) = &shared.commits else { return };
    if !h.armed.swap(false, Ordering::SeqCst) {
        return;
    }
    let (tx, rx) = oneshot::channel();
    if h.held.send(HeldCommit { _release: tx }).is_ok() {
        let _ = tokio::time::timeout(HOLD_MAX, rx).await;
    }
}

async fn delay(rx: &watch::Receiver<Mode>) {
    let mode = *rx.borrow();
    if let Mode::Latency { latency_ms } = mode {
        tokio::time::sleep(Duration::from_millis(latency_ms)).await;
    }
}

/// Reads and discards from both ends until the mode changes, then resets both.
async fn blackhole(
    shared: &Shared,
    mut a: TcpStream,
    mut b: Option<TcpStream>,
    mut rx: watch::Receiver<Mode>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    let mut buf_b = vec![0u8; 16 * 1024];
    let mut a_open = true;
    let mut b_open = b.is_some();
    loop {
        tokio::select! {
            r = a.read(&mut buf), if a_open => {
                if matches!(r, Ok(0) | Err(_)) { a_open = false; }
            }
            r = async { match b.as_mut() { Some(s) => s.read(&mut buf_b).await, None => std::future::pending().await } }, if b_open => {
                if matches!(r, Ok(0) | Err(_)) { b_open = false; }
            }
            changed = rx.changed() => {
                let gone = changed.is_err();
                if gone || *rx.borrow_and_update() != Mode::Blackhole {
                    let mut ends = vec![&a];
                    if let Some(s) = b.as_ref() { ends.push(s); }
                    return abort(shared, &ends);
                }
            }
        }
        if !a_open && !b_open {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn echo_server() -> SocketAddr {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = l.accept().await {
                tokio::spawn(async move {
                    let mut buf = [0u8; 1024];
                    while let Ok(n) = s.read(&mut buf).await {
                        if n == 0 || s.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                });
            }
        });
        addr
    }

    async fn roundtrip(s: &mut TcpStream) -> std::io::Result<Vec<u8>> {
        s.write_all(b"ping").await?;
        let mut buf = [0u8; 4];
        tokio::time::timeout(Duration::from_millis(500), s.read_exact(&mut buf))
            .await
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "timeout"))??;
        Ok(buf.to_vec())
    }

    #[tokio::test]
    async fn pass_forwards_both_ways_and_reset_aborts_open_connections() {
        let up = echo_server().await;
        let p = Proxy::start("127.0.0.1:0", &up.to_string()).await.unwrap();
        let mut c = TcpStream::connect(p.local_addr()).await.unwrap();
        assert_eq!(roundtrip(&mut c).await.unwrap(), b"ping");
        p.set_mode(Mode::Reset);
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(roundtrip(&mut c).await.is_err());
        assert!(p.stats().reset >= 1);
    }

    #[tokio::test]
    async fn refuse_resets_new_connections_but_keeps_open_ones() {
        let up = echo_server().await;
        let p = Proxy::start("127.0.0.1:0", &up.to_string()).await.unwrap();
        let mut old = TcpStream::connect(p.local_addr()).await.unwrap();
        assert!(roundtrip(&mut old).await.is_ok());
        p.set_mode(Mode::Refuse);
        let mut new = TcpStream::connect(p.local_addr()).await.unwrap();
        assert!(roundtrip(&mut new).await.is_err());
        assert_eq!(roundtrip(&mut old).await.unwrap(), b"ping");
        p.set_mode(Mode::Pass);
        let mut again = TcpStream::connect(p.local_addr()).await.unwrap();
        assert!(roundtrip(&mut again).await.is_ok());
    }

    #[tokio::test]
    async fn blackhole_answers_nothing_and_latency_delays() {
        let up = echo_server().await;
        let p = Proxy::start("127.0.0.1:0", &up.to_string()).await.unwrap();
        p.set_mode(Mode::Blackhole);
        let mut c = TcpStream::connect(p.local_addr()).await.unwrap();
        let e = roundtrip(&mut c).await.unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::TimedOut);
        p.set_mode(Mode::Latency { latency_ms: 120 });
        let mut d = TcpStream::connect(p.local_addr()).await.unwrap();
        let t = std::time::Instant::now();
        assert!(roundtrip(&mut d).await.is_ok());
        assert!(
            t.elapsed() >= Duration::from_millis(200),
            "{:?}",
            t.elapsed()
        );
    }

    /// A Postgres server in a few bytes: it answers every read with one
    /// committed insert.
    async fn inserting_server() -> SocketAddr {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = l.accept().await {
                tokio::spawn(async move {
                    let mut buf = [0u8; 1024];
                    let mut answer = vec![b'C'];
                    answer.extend_from_slice(&15u32.to_be_bytes());
                    answer.extend_from_slice(b"INSERT 0 1\0");
                    answer.extend_from_slice(&[b'Z', 0, 0, 0, 5, b'I']);
                    while let Ok(n) = s.read(&mut buf).await {
                        if n == 0 || s.write_all(&answer).await.is_err() {
                            break;
                        }
                    }
                });
            }
        });
        addr
    }

    #[tokio::test]
    async fn an_armed_proxy_holds_the_first_commit_until_the_harness_lets_it_go() {
        let up = inserting_server().await;
        let (p, mut held) = Proxy::watching_commits("127.0.0.1:0", &up.to_string())
            .await
            .unwrap();
        let mut c = TcpStream::connect(p.local_addr()).await.unwrap();
        let mut start = 9u32.to_be_bytes().to_vec();
        start.extend_from_slice(&196_608u32.to_be_bytes());
        start.push(0);
        let mut answer = [0u8; 21];
        c.write_all(&start).await.unwrap();
        c.read_exact(&mut answer).await.unwrap();
        assert!(held.try_recv().is_err(), "not armed: nothing held");
        p.arm_commit(true);
        c.write_all(b"x").await.unwrap();
        let h = tokio::time::timeout(Duration::from_secs(2), held.recv())
            .await
            .expect("a commit held")
            .unwrap();
        let early =
            tokio::time::timeout(Duration::from_millis(100), c.read_exact(&mut answer)).await;
        assert!(
            early.is_err(),
            "the client must not hear of its commit while held"
        );
        drop(h);
        tokio::time::timeout(Duration::from_secs(2), c.read_exact(&mut answer))
            .await
            .expect("released")
            .unwrap();
        // One commit per arming.
        c.write_all(b"y").await.unwrap();
        c.read_exact(&mut answer).await.unwrap();
        assert!(held.try_recv().is_err());
    }

    #[test]
    fn modes_read_as_json() {
        let m: Mode = serde_json::from_str(r#"{"mode":"latency","latency_ms":5}"#).unwrap();
        assert_eq!(m, Mode::Latency { latency_ms: 5 });
        let m: Mode = serde_json::from_str(r#"{"mode":"blackhole"}"#).unwrap();
        assert_eq!(m.to_string(), "blackhole");
    }
}
