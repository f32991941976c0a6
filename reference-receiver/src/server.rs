//! Listeners and lifecycle: [`run`] serves a bound webhook listener and a
//! bound admin listener until a shutdown future resolves; [`spawn`] binds
//! both on 127.0.0.1:0 and runs the receiver in a tokio task, for tests and
//! for the harness's default target.
//!
//! Shutdown is graceful: listeners stop accepting, in-flight requests finish
//! (bounded by `DRAIN_LIMIT`), then the worker stops between batches.
//!
//! The receiver is as hardened as the ones it stands in for: a client
//! that sends nothing, or half a head, is dropped after
//! [`crate::app::HEADER_TIMEOUT`]; a body that stalls gets 408 after
//! [`crate::app::BODY_TIMEOUT`] (in the handler); each listener serves at
//! most its connection limit at once ([`crate::app::MAX_WEBHOOK_CONNECTIONS`],
//! [`crate::app::MAX_ADMIN_CONNECTIONS`]), one client (a peer address) at
//! most three quarters of it ([`crate::app::per_client`]), and answers 503
//! and closes past either, so slow, idle or greedy clients cannot hold the
//! port down for the others;
//! and the admin listener is never the webhook address.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::future::BoxFuture;
use http::{Request, Response};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::{oneshot, watch, Notify};
use tokio::task::{JoinHandle, JoinSet};

use crate::app::{stopped, App, HEADER_TIMEOUT, MAX_ADMIN_CONNECTIONS, MAX_WEBHOOK_CONNECTIONS};
use crate::config::Config;
use crate::error::ReceiverError;
use crate::store::{open_store_with, Keying, Store, StoreOptions, WorkerRules};
use crate::worker::run_worker;

/// How long shutdown waits for in-flight requests.
const DRAIN_LIMIT: Duration = Duration::from_secs(10);

/// What a connection past the limit gets before it is closed.
const BUSY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nretry-after: 1\r\ncontent-type: text/plain\r\ncontent-length: 21\r\nconnection: close\r\n\r\ntoo many connections\n";

type Handler<B> = fn(Arc<App>, Request<Incoming>) -> BoxFuture<'static, Response<B>>;

async fn serve<B>(
    listener: TcpListener,
    app: Arc<App>,
    handler: Handler<B>,
    limit: usize,
    mut shutdown: watch::Receiver<bool>,
) where
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let mut conns = JoinSet::new();
    let slots = Arc::new(tokio::sync::Semaphore::new(limit));
    let clients = Clients::new(crate::app::per_client(limit));
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (mut stream, peer) = match accepted {
                    Ok(s) => s,
                    Err(_) => {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        continue;
                    }
                };
                let slot = clients.take(peer.ip()).and_then(|mine| {
                    slots.clone().try_acquire_owned().ok().map(|s| (mine, s))
                });
                let Some(slot) = slot else {
                    // Full: say so and close, off the accept loop.
                    tokio::spawn(async move {
                        use tokio::io::AsyncWriteExt;
                        let _ = tokio::time::timeout(Duration::from_secs(1), stream.write_all(BUSY)).await;
                        let _ = stream.shutdown().await;
                    });
                    continue;
                };
                let _ = stream.set_nodelay(true);
                let app = app.clone();
                let mut stop = shutdown.clone();
                conns.spawn(async move {
                    let _slot = slot;
                    // A connection that never sends a byte holds nothing for long.
                    if !matches!(tokio::time::timeout(HEADER_TIMEOUT, stream.readable()).await, Ok(Ok(()))) {
                        return;
                    }
                    let svc = service_fn(move |req| {
                        let fut = handler(app.clone(), req);
                        async move { Ok::<_, Infallible>(fut.await) }
                    });
                    let conn = http1::Builder::new()
                        .timer(hyper_util::rt::TokioTimer::new())
                        .header_read_timeout(HEADER_TIMEOUT)
                        .serve_connection(TokioIo::new(stream), svc);
                    tokio::pin!(conn);
                    tokio::select! {
                        _ = conn.as_mut() => {}
                        _ = stopped(&mut stop) => {
                            conn.as_mut().graceful_shutdown();
                            let _ = conn.await;
                        }
                    }
                });
            }
            _ = stopped(&mut shutdown) => break,
        }
        while conns.try_join_next().is_some() {}
    }
    drop(listener);
    let _ = tokio::time::timeout(DRAIN_LIMIT, async {
        while conns.join_next().await.is_some() {}
    })
    .await;
}

/// How many connections each client (peer address) holds on a listener.
#[derive(Clone)]
struct Clients {
    held: Arc<std::sync::Mutex<std::collections::HashMap<std::net::IpAddr, usize>>>,
    cap: usize,
}

/// One client's hold on a connection; given back when dropped.
struct ClientSlot {
    clients: Clients,
    ip: std::net::IpAddr,
}

impl Clients {
    fn new(cap: usize) -> Clients {
        Clients {
            held: Arc::default(),
            cap,
        }
    }

    /// A slot for `ip`, unless it holds its share already.
    fn take(&self, ip: std::net::IpAddr) -> Option<ClientSlot> {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        let n = held.entry(ip).or_default();
        if *n >= self.cap {
            return None;
        }
        *n += 1;
        Some(ClientSlot {
            clients: self.clone(),
            ip,
        })
    }
}

impl Drop for ClientSlot {
    fn drop(&mut self) {
        let mut held = self.clients.held.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = held.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                held.remove(&self.ip);
            }
        }
    }
}

/// Serves webhooks on `listener` and the admin API on `admin_listener` until
/// `shutdown` resolves. The store must have been opened with the keying the
/// configured defect needs (`Keying::for_defect`); [`spawn`] does that.
pub async fn run(
    listener: TcpListener,
    admin_listener: TcpListener,
    store: Arc<dyn Store>,
    config: Config,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ReceiverError> {
    if config.accounts.is_empty() {
        return Err(ReceiverError::Config(
            "no account configured (hint: --account NAME=SECRET)".into(),
        ));
    }
    check_separate(&listener, &admin_listener)?;
    crate::config::check_admin_token(&config.admin_token).map_err(ReceiverError::Config)?;
    let (stop_tx, stop_rx) = watch::channel(false);
    let wake = Arc::new(Notify::new());
    let app = Arc::new(App {
        config: config.clone(),
        store: store.clone(),
        wake: wake.clone(),
        outage: Default::default(),
    });
    let worker = config.worker.then(|| {
        let rules = WorkerRules::new(config.defect, config.batch_size, config.failpoints.clone());
        tokio::spawn(run_worker(
            store.clone(),
            rules,
            config.worker_poll,
            wake.clone(),
            stop_rx.clone(),
        ))
    });
    // Defect requeues-outage-buffer: what was kept while the database was
    // down is written back once it answers again.
    let flusher = config.has(crate::Defect::RequeuesOutageBuffer).then(|| {
        tokio::spawn(crate::requeue::flush_outage_buffer(
            app.clone(),
            stop_rx.clone(),
        ))
    });
    let hooks: Handler<Full<Bytes>> = |app, req| Box::pin(crate::handler::handle(app, req));
    let admin: Handler<crate::admin::AdminBody> =
        |app, req| Box::pin(crate::admin::handle(app, req));
    let web = tokio::spawn(serve(
        listener,
        app.clone(),
        hooks,
        MAX_WEBHOOK_CONNECTIONS,
        stop_rx.clone(),
    ));
    let adm = tokio::spawn(serve(
        admin_listener,
        app,
        admin,
        MAX_ADMIN_CONNECTIONS,
        stop_rx,
    ));
    shutdown.await;
    let _ = stop_tx.send(true);
    let _ = web.await;
    let _ = adm.await;
    if let Some(w) = worker {
        let _ = w.await;
    }
    if let Some(f) = flusher {
        let _ = f.await;
    }
    Ok(())
}

/// The admin API must never answer on the webhook address: two sockets
/// bound to one address with `SO_REUSEPORT` share its connections, so the
/// state and reset would answer the public side in some of them.
fn check_separate(web: &TcpListener, admin: &TcpListener) -> Result<(), ReceiverError> {
    let (w, a) = (web.local_addr()?, admin.local_addr()?);
    let overlap = w.port() == a.port()
        && (w.ip() == a.ip() || w.ip().is_unspecified() || a.ip().is_unspecified());
    if overlap {
        return Err(ReceiverError::Config(format!(
            "the admin listener {a} is the webhook address {w} (hint: give --admin-listen a port of its own; the admin API must never answer on the public address)"
        )));
    }
    Ok(())
}

/// A receiver running in a tokio task (see [`spawn`]).
pub struct Spawned {
    /// Where webhooks go: `http://{webhook_addr}/webhooks/{account}`.
    pub webhook_addr: SocketAddr,
    /// Where the admin API listens.
    pub admin_addr: SocketAddr,
    /// The admin bearer token.
    pub admin_token: String,
    /// The store, for direct inspection in tests.
    pub store: Arc<dyn Store>,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<Result<(), ReceiverError>>,
}

impl Spawned {
    /// The webhook URL of an account.
    pub fn webhook_url(&self, account: &str) -> String {
        format!("http://{}/webhooks/{account}", self.webhook_addr)
    }

    /// The admin API base URL.
    pub fn admin_url(&self) -> String {
        format!("http://{}", self.admin_addr)
    }

    /// Stops accepting, finishes in-flight requests, stops the worker.
    pub async fn shutdown(mut self) -> Result<(), ReceiverError> {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        match (&mut self.task).await {
            Ok(r) => r,
            Err(e) => Err(ReceiverError::Config(format!("receiver task failed: {e}"))),
        }
    }
}

/// Opens the store at `store_url` (with the options `config` needs), binds
/// both listeners on 127.0.0.1:0 and runs the receiver in a tokio task.
pub async fn spawn(config: Config, store_url: &str) -> Result<Spawned, ReceiverError> {
    let options = StoreOptions {
        group_commit: config.group_commit,
        keying: Keying::for_defect(config.defect),
    };
    let store = open_store_with(store_url, options).await?;
    spawn_with_store(config, store).await
}

/// Like [`spawn`], with a store already open.
pub async fn spawn_with_store(
    config: Config,
    store: Arc<dyn Store>,
) -> Result<Spawned, ReceiverError> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let admin_listener = TcpListener::bind("127.0.0.1:0").await?;
    let webhook_addr = listener.local_addr()?;
    let admin_addr = admin_listener.local_addr()?;
    let admin_token = config.admin_token.clone();
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(run(
        listener,
        admin_listener,
        store.clone(),
        config,
        async move {
            let _ = stopped.await;
        },
    ));
    Ok(Spawned {
        webhook_addr,
        admin_addr,
        admin_token,
        store,
        stop: Some(stop),
        task,
    })
}
