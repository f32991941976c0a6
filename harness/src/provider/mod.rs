//! The provider API the harness serves while a scenario runs, as
//! `docs/contract.md` ("Provider API") describes it, so a receiver's
//! reconciliation job can be tested against a provider that behaves badly
//! on purpose: throttling (429), forgetting tasks (404), tasks going back
//! from PROCESSING to QUEUED.
//!
//! - `GET /v1/async/task/{id}`: the task once final (the body a delivery
//!   carries), `{task, credits}` without `response` while QUEUED or
//!   PROCESSING, 404 for an unknown or no-longer-kept task, 429 for a share
//!   of first lookups.
//! - `GET /v1/async/status`: `{"queuedTasks": n, "processingTasks": n}`.
//! - `DELETE /v1/async/queue`: removes the tasks still QUEUED.
//!
//! Every call needs `Authorization: Bearer <key>`; others get 401. The
//! listener is bound at once ([`Provider::bind`]) so its URL can be given
//! to a receiver before anything runs; [`Provider::serve`] starts answering.

pub mod book;

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use hyper::body::Incoming;
use hyper::{Method, Request, Response};
use sha2::{Digest, Sha256};

use crate::delivery::Body;
use crate::net::httpd::{self, AnyBody, Hangup, Server};
use crate::profile::signature::Secret;

pub use book::{BookTask, TaskBook};

/// A provider API, bound and maybe serving. Cheap to clone.
#[derive(Clone)]
pub struct Provider {
    inner: Arc<Inner>,
}

struct Inner {
    key: Secret,
    addr: SocketAddr,
    listener: Mutex<Option<std::net::TcpListener>>,
    server: Mutex<Option<Server>>,
    state: Mutex<Loaded>,
}

#[derive(Default)]
struct Loaded {
    book: TaskBook,
    loaded_at: Option<Instant>,
    throttled: HashSet<String>,
    removed: HashSet<String>,
}

impl std::fmt::Debug for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Provider")
            .field("url", &self.url())
            .field("key", &self.inner.key)
            .finish()
    }
}

/// What a lookup, status or queue call saw, for tests and the console.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct QueueStatus {
    /// Tasks QUEUED now.
    #[serde(rename = "queuedTasks")]
    pub queued: usize,
    /// Tasks PROCESSING now.
    #[serde(rename = "processingTasks")]
    pub processing: usize,
}

impl Provider {
    /// Binds `addr` (e.g. `127.0.0.1:0`) at once; answers nothing until
    /// [`Provider::serve`].
    pub fn bind(addr: &str, key: Secret) -> std::io::Result<Provider> {
        let listener = std::net::TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        Ok(Provider {
            inner: Arc::new(Inner {
                key,
                addr,
                listener: Mutex::new(Some(listener)),
                server: Mutex::new(None),
                state: Mutex::new(Loaded::default()),
            }),
        })
    }

    /// The base URL (`http://ADDR`).
    pub fn url(&self) -> String {
        format!("http://{}", self.inner.addr)
    }

    /// The API key receivers must send.
    pub fn key(&self) -> &Secret {
        &self.inner.key
    }

    /// Starts answering (inside a tokio runtime); later calls do nothing.
    pub fn serve(&self) -> std::io::Result<()> {
        let Some(std_listener) = self
            .inner
            .listener
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        else {
            return Ok(());
        };
        let listener = tokio::net::TcpListener::from_std(std_listener)?;
        let me = self.clone();
        let handler: httpd::Handler = Arc::new(move |req| {
            let me = me.clone();
            Box::pin(async move { Ok::<_, Hangup>(me.handle(req)) })
        });
        *self.inner.server.lock().unwrap_or_else(|p| p.into_inner()) =
            Some(Server::spawn(listener, handler)?);
        Ok(())
    }

    /// Replaces the task book; stage offsets count from now.
    pub fn load(&self, book: TaskBook) {
        let mut st = self.inner.state.lock().unwrap_or_else(|p| p.into_inner());
        *st = Loaded {
            book,
            loaded_at: Some(Instant::now()),
            ..Default::default()
        };
    }

    /// Stops answering.
    pub async fn stop(&self) {
        let server = self
            .inner
            .server
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(s) = server {
            s.stop().await;
        }
    }

    fn authorized(&self, req: &Request<Incoming>) -> bool {
        let given = req.headers().get(hyper::header::AUTHORIZATION);
        crate::profile::signature::bearer_matches(
            given.map(|v| v.as_bytes()),
            self.inner.key.expose(),
        )
    }

    fn handle(&self, req: Request<Incoming>) -> Response<AnyBody> {
        if !self.authorized(&req) {
            let mut r = httpd::json(401, &serde_json::json!({"error": "unauthorized"}));
            r.headers_mut().insert(
                hyper::header::WWW_AUTHENTICATE,
                hyper::header::HeaderValue::from_static("Bearer"),
            );
            return r;
        }
        let path = req.uri().path().to_string();
        let mut st = self.inner.state.lock().unwrap_or_else(|p| p.into_inner());
        let elapsed = st
            .loaded_at
            .map(|t| (t.elapsed().as_secs_f64() * st.book.time_scale.max(0.0) * 1000.0) as i64)
            .unwrap_or(0);
        match (req.method().clone(), path.as_str()) {
            (Method::GET, "/v1/async/status") => httpd::json(200, &status(&st, elapsed)),
            (Method::DELETE, "/v1/async/queue") => {
                let queued: Vec<String> = st
                    .book
                    .tasks
                    .iter()
                    .filter(|t| {
                        !t.expired && t.status_at(elapsed) == crate::delivery::TaskStatus::Queued
                    })
                    .filter_map(BookTask::id)
                    .filter(|id| !st.removed.contains(id))
                    .collect();
                let n = queued.len();
                st.removed.extend(queued);
                httpd::json(200, &serde_json::json!({ "deleted": n }))
            }
            (Method::GET, p) if p.starts_with("/v1/async/task/") => {
                let id = &p["/v1/async/task/".len()..];
                lookup(&mut st, id, elapsed)
            }
            _ => httpd::json(404, &serde_json::json!({"error": "not found"})),
        }
    }
}

fn status(st: &Loaded, elapsed: i64) -> QueueStatus {
    let mut s = QueueStatus::default();
    for t in &st.book.tasks {
        if t.expired || t.id().is_some_and(|id| st.removed.contains(&id)) {
            continue;
        }
        match t.status_at(elapsed) {
            crate::delivery::TaskStatus::Queued => s.queued += 1,
            crate::delivery::TaskStatus::Processing => s.processing += 1,
            _ => {}
        }
    }
    s
}

fn throttled_first(share: f64, id: &str) -> bool {
    if share <= 0.0 {
        return false;
    }
    let d = Sha256::digest(id.as_bytes());
    let mut k = [0u8; 8];
    k.copy_from_slice(&d[..8]);
    (u64::from_le_bytes(k) as f64 / u64::MAX as f64) < share
}

fn lookup(st: &mut Loaded, id: &str, elapsed: i64) -> Response<AnyBody> {
    let not_found = || httpd::json(404, &serde_json::json!({"error": "task not found"}));
    if st.removed.contains(id) {
        return not_found();
    }
    let Some(task) = st
        .book
        .tasks
        .iter()
        .find(|t| t.id().as_deref() == Some(id))
        .cloned()
    else {
        return not_found();
    };
    if task.expired {
        return not_found();
    }
    if throttled_first(st.book.throttle_share, id) && st.throttled.insert(id.to_string()) {
        let mut r = httpd::json(429, &serde_json::json!({"error": "too many requests"}));
        r.headers_mut().insert(
            hyper::header::RETRY_AFTER,
            hyper::header::HeaderValue::from_static("1"),
        );
        return r;
    }
    let now = task.status_at(elapsed);
    if now.is_final() {
        let mut r = Response::new(httpd::full(task.body.clone()));
        r.headers_mut().insert(
            hyper::header::CONTENT_TYPE,
            hyper::header::HeaderValue::from_static("application/json"),
        );
        return r;
    }
    match serde_json::from_str::<Body>(&task.body) {
        Ok(mut b) => {
            b.task.status = now;
            b.response = None;
            httpd::json(200, &b)
        }
        Err(_) => not_found(),
    }
}
