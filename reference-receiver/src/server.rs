//! Listeners and lifecycle: [`run`] serves a bound webhook listener and a
//! bound admin listener until a shutdown future resolves; [`spawn`] binds
//! both on 127.0.0.1:0 and runs the receiver in a tokio task, for tests and
//! for the harness's default target.
//!
//! Shutdown is graceful: listeners stop accepting, in-flight requests finish
//! (bounded by `DRAIN_LIMIT`), then the worker stops between batches.

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

use crate::config::Config;
use crate::error::ReceiverError;
use crate::store::{open_store_with, Keying, Store, StoreOptions, WorkerRules};
use crate::worker::run_worker;

/// How long shutdown waits for in-flight requests.
const DRAIN_LIMIT: Duration = Duration::from_secs(10);

/// What every request handler shares.
pub struct App {
    /// The configuration.
    pub config: Config,
    /// The store.
    pub store: Arc<dyn Store>,
    /// Wakes the worker after an insert.
    pub wake: Arc<Notify>,
}

/// Resolves once `rx` holds `true` (or its sender is gone).
pub async fn stopped(rx: &mut watch::Receiver<bool>) {
    let _ = rx.wait_for(|v| *v).await;
}

type Handler<B> = fn(Arc<App>, Request<Incoming>) -> BoxFuture<'static, Response<B>>;

async fn serve<B>(
    listener: TcpListener,
    app: Arc<App>,
    handler: Handler<B>,
    mut shutdown: watch::Receiver<bool>,
) where
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let stream = match accepted {
                    Ok((s, _)) => s,
                    Err(_) => {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                let app = app.clone();
                let mut stop = shutdown.clone();
                conns.spawn(async move {
                    let svc = service_fn(move |req| {
                        let fut = handler(app.clone(), req);
                        async move { Ok::<_, Infallible>(fut.await) }
                    });
                    let conn = http1::Builder::new().serve_connection(TokioIo::new(stream), svc);
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
    let (stop_tx, stop_rx) = watch::channel(false);
    let wake = Arc::new(Notify::new());
    let app = Arc::new(App {
        config: config.clone(),
        store: store.clone(),
        wake: wake.clone(),
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
    let hooks: Handler<Full<Bytes>> = |app, req| Box::pin(crate::handler::handle(app, req));
    let admin: Handler<crate::admin::AdminBody> =
        |app, req| Box::pin(crate::admin::handle(app, req));
    let web = tokio::spawn(serve(listener, app.clone(), hooks, stop_rx.clone()));
    let adm = tokio::spawn(serve(admin_listener, app, admin, stop_rx));
    shutdown.await;
    let _ = stop_tx.send(true);
    let _ = web.await;
    let _ = adm.await;
    if let Some(w) = worker {
        let _ = w.await;
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
