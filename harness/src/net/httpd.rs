//! A tiny HTTP/1 server loop shared by the harness's own servers (the fault
//! front and the provider API): accept on a listener, answer each request
//! with a handler, stop when asked.
//!
//! A handler may return an error to cut the connection without an answer
//! (the front does that to simulate a cut upload).

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::combinators::BoxBody;
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// A response body of any kind.
pub type AnyBody = BoxBody<Bytes, Hangup>;

/// The error a handler (or a body) returns to cut the connection.
#[derive(Debug, Clone)]
pub struct Hangup(pub String);

impl std::fmt::Display for Hangup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Hangup {}

impl From<&str> for Hangup {
    fn from(s: &str) -> Self {
        Hangup(s.to_string())
    }
}

/// A request handler.
pub type Handler = Arc<
    dyn Fn(
            Request<Incoming>,
        ) -> Pin<Box<dyn Future<Output = Result<Response<AnyBody>, Hangup>> + Send>>
        + Send
        + Sync,
>;

/// A running server; [`Server::stop`] ends it.
#[derive(Debug)]
pub struct Server {
    addr: SocketAddr,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl Server {
    /// Serves `handler` on `listener` in a tokio task.
    pub fn spawn(listener: TcpListener, handler: Handler) -> std::io::Result<Server> {
        let addr = listener.local_addr()?;
        let (stop, stopped) = watch::channel(false);
        let task = tokio::spawn(accept_loop(listener, handler, stopped));
        Ok(Server { addr, stop, task })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting and drops open connections.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}

async fn accept_loop(listener: TcpListener, handler: Handler, mut stop: watch::Receiver<bool>) {
    let mut conns = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                };
                let _ = stream.set_nodelay(true);
                let handler = handler.clone();
                conns.spawn(async move {
                    let svc = service_fn(move |req: Request<Incoming>| handler(req));
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), svc)
                        .await;
                });
            }
            _ = stop.changed() => break,
        }
        while conns.try_join_next().is_some() {}
    }
    conns.abort_all();
}

/// A complete body from bytes.
pub fn full(bytes: impl Into<Bytes>) -> AnyBody {
    use http_body_util::BodyExt;
    http_body_util::Full::new(bytes.into())
        .map_err(|e: Infallible| match e {})
        .boxed()
}

/// A plain-text answer.
pub fn text(status: u16, body: impl Into<String>) -> Response<AnyBody> {
    let mut r = Response::new(full(body.into()));
    *r.status_mut() = hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::OK);
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/plain"),
    );
    r
}

/// A JSON answer.
pub fn json(status: u16, value: &impl serde::Serialize) -> Response<AnyBody> {
    let mut r = Response::new(full(serde_json::to_vec(value).unwrap_or_default()));
    *r.status_mut() = hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::OK);
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    r
}
