//! The fault front: an HTTP proxy the harness puts before the receiver URL
//! when a scenario asks (`kind = "front"`).
//!
//! The sender talks to it like to any URL. For the deliveries a scenario
//! picks, it answers the first k attempts itself with a 5xx or 429,
//! redirects (301/302/307/308), holds a request before forwarding, or
//! dribbles part of the body to the receiver, stalls, and cuts both sides.
//! Everything else is forwarded verbatim: the raw body bytes and the
//! headers, so signatures still verify. A delivery is recognised by its body
//! bytes, which every retry and redelivery repeats.
//!
//! Each action becomes an `Event::Fault` line, and a [`FaultTag`] in
//! [`FrontTags`] that the sender adds to the affected attempt's `faults`, so
//! the checker knows which answers were the front's and not the receiver's.
//! The sender marks every request with a ticket ([`REQUEST_HEADER`], one per
//! attempt and per concurrent copy) that the front strips before forwarding
//! and files its actions under, so each action is credited to the very
//! request it happened to, even when concurrent copies share one body.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::{Request, Response};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use sha2::{Digest, Sha256};

use crate::fault_spec::FrontSpec;
use crate::history::{now_rfc3339, Event, FaultEvent, HistorySink};
use crate::limits::budget;
use crate::net::httpd::{self, AnyBody, Hangup, Server};
use crate::tag::{FaultName, FaultTag};

/// The front could not start.
#[derive(Debug, thiserror::Error)]
pub enum FrontError {
    /// The target URL is not one the front can stand before.
    #[error("fault front: target url {0:?} is not http://HOST:PORT/…")]
    BadUrl(String),
    /// Binding the listener failed.
    #[error("fault front: {0}")]
    Io(#[from] std::io::Error),
}

/// The request header that carries the sender's ticket for one request;
/// the front reads and strips it, the receiver never sees it.
pub const REQUEST_HEADER: &str = "hookstorm-request";

/// Per request ticket, the actions the front took and the sender has not
/// yet claimed for its attempt.
#[derive(Debug, Clone, Default)]
pub struct FrontTags(Arc<Mutex<HashMap<u64, Vec<FaultTag>>>>);

impl FrontTags {
    fn push(&self, ticket: Option<u64>, tag: FaultTag) {
        let Some(ticket) = ticket else { return };
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(ticket)
            .or_default()
            .push(tag);
    }

    /// Every action on the request sent under `ticket`, in order.
    pub fn take(&self, ticket: u64) -> Vec<FaultTag> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&ticket)
            .unwrap_or_default()
    }
}

/// What the front did during one scenario.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FrontCounts {
    /// Requests passed on to the receiver.
    pub forwarded: usize,
    /// Requests answered with the configured 5xx/429.
    pub failed: usize,
    /// Requests answered with a redirect.
    pub redirected: usize,
    /// Requests held before forwarding.
    pub delayed: usize,
    /// Uploads stalled and cut.
    pub stalled: usize,
    /// Requests the receiver could not be reached for (answered 502).
    pub unreachable: usize,
    /// Receiver answers longer than [`budget::RECEIVER_ANSWER`], passed
    /// on cut to it.
    pub cut_answers: usize,
}

/// What the front needs to start.
#[derive(Clone)]
pub struct FrontConfig {
    /// The scenario (for history lines).
    pub scenario: String,
    /// The scenario's front.
    pub spec: FrontSpec,
    /// Picks the affected share of deliveries.
    pub seed: u64,
    /// The receiver's URL (may contain `{account}`).
    pub target_url: String,
    /// Where its actions are recorded.
    pub sink: Option<HistorySink>,
}

struct Shared {
    cfg: FrontConfig,
    upstream: http::uri::Authority,
    client: Client<HttpConnector, AnyBody>,
    seen: Mutex<HashMap<[u8; 8], u32>>,
    counts: Mutex<FrontCounts>,
    tags: FrontTags,
}

/// A running fault front.
#[derive(Debug)]
pub struct Front {
    server: Server,
    shared: Arc<SharedDebug>,
    tags: FrontTags,
}

/// `Shared` with a Debug that shows nothing secret.
struct SharedDebug(Shared);

impl std::fmt::Debug for SharedDebug {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Front")
            .field("upstream", &self.0.upstream)
            .finish()
    }
}

/// The first 8 bytes of SHA-256(seed, body): identifies a delivery's body.
fn body_key(seed: u64, body: &[u8]) -> [u8; 8] {
    let mut h = Sha256::new();
    h.update(seed.to_le_bytes());
    h.update(body);
    let d = h.finalize();
    let mut k = [0u8; 8];
    k.copy_from_slice(&d[..8]);
    k
}

impl Front {
    /// Binds 127.0.0.1:0 and starts forwarding to `cfg.target_url`'s host.
    pub async fn start(cfg: FrontConfig) -> Result<Front, FrontError> {
        let probe = cfg.target_url.replace("{account}", "a");
        let uri: http::Uri = probe
            .parse()
            .map_err(|_| FrontError::BadUrl(cfg.target_url.clone()))?;
        let upstream = match (uri.scheme_str(), uri.authority()) {
            (Some("http"), Some(a)) => a.clone(),
            _ => return Err(FrontError::BadUrl(cfg.target_url.clone())),
        };
        let mut conn = HttpConnector::new();
        conn.set_nodelay(true);
        let client = Client::builder(hyper_util::rt::TokioExecutor::new()).build(conn);
        let tags = FrontTags::default();
        let shared = Arc::new(SharedDebug(Shared {
            cfg,
            upstream,
            client,
            seen: Mutex::new(HashMap::new()),
            counts: Mutex::new(FrontCounts::default()),
            tags: tags.clone(),
        }));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let s = shared.clone();
        let handler: httpd::Handler = Arc::new(move |req| {
            let s = s.clone();
            Box::pin(async move { handle(&s.0, req).await })
        });
        let server = Server::spawn(listener, handler)?;
        Ok(Front {
            server,
            shared,
            tags,
        })
    }

    /// The target URL with the front's address in place of the receiver's.
    pub fn url(&self) -> String {
        let cfg = &self.shared.0.cfg;
        cfg.target_url.replacen(
            self.shared.0.upstream.as_str(),
            &self.server.addr().to_string(),
            1,
        )
    }

    /// The tags the sender claims for its attempts.
    pub fn tags(&self) -> FrontTags {
        self.tags.clone()
    }

    /// What it did so far.
    pub fn counts(&self) -> FrontCounts {
        *self
            .shared
            .0
            .counts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// Stops the front and returns what it did.
    pub async fn stop(self) -> FrontCounts {
        let counts = self.counts();
        self.server.stop().await;
        counts
    }
}

impl Shared {
    fn record(&self, action: String, detail: Option<String>) {
        if let Some(sink) = &self.cfg.sink {
            let _ = sink.write(Event::Fault(FaultEvent {
                scenario: self.cfg.scenario.clone(),
                at: now_rfc3339(),
                fault: FaultName::Front,
                action,
                detail,
            }));
        }
    }

    fn count(&self, f: impl FnOnce(&mut FrontCounts)) {
        f(&mut self.counts.lock().unwrap_or_else(|p| p.into_inner()));
    }

    fn affected(&self, body: &[u8]) -> bool {
        let share = self.cfg.spec.share;
        if share >= 1.0 {
            return true;
        }
        let k = body_key(self.cfg.seed ^ 0x66_72_6f_6e_74, body);
        (u64::from_le_bytes(k) as f64 / u64::MAX as f64) < share
    }
}

async fn handle(s: &Shared, req: Request<Incoming>) -> Result<Response<AnyBody>, Hangup> {
    let (mut parts, body) = req.into_parts();
    let ticket = parts
        .headers
        .remove(REQUEST_HEADER)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    let body: Bytes = match body.collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => return Err(Hangup(e.to_string())),
    };
    let key = body_key(0, &body);
    let id = parts
        .headers
        .iter()
        .find(|(k, _)| k.as_str().ends_with("-id"))
        .and_then(|(_, v)| v.to_str().ok())
        .map(|v| format!("delivery {v}"));
    let spec = &s.cfg.spec;
    let affected = s.affected(&body);
    let n = {
        let mut seen = s.seen.lock().unwrap_or_else(|p| p.into_inner());
        let n = seen.entry(key).or_insert(0);
        *n += 1;
        *n
    };
    let path = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "/".into());
    if affected {
        if let Some(code) = spec.redirect {
            let location = format!("http://{}{}/", s.upstream, path.trim_end_matches('/'));
            s.tags.push(ticket, FaultTag::FrontRedirect);
            s.count(|c| c.redirected += 1);
            s.record(
                format!("answered {code} to attempt {n}, location {location}"),
                id,
            );
            let mut r = httpd::text(code, "moved");
            if let Ok(v) = hyper::header::HeaderValue::from_str(&location) {
                r.headers_mut().insert(hyper::header::LOCATION, v);
            }
            return Ok(r);
        }
        if n <= spec.fail_first {
            if spec.stall_body {
                s.tags.push(ticket, FaultTag::FrontStall);
                s.count(|c| c.stalled += 1);
                s.record(
                    format!(
                        "stalled attempt {n} after {} of {} body bytes for {}, then cut it",
                        spec.stall_after_bytes.min(body.len()),
                        body.len(),
                        spec.stall_for
                    ),
                    id,
                );
                stall(s, parts, &path, body).await;
                return Err("the front cut the upload".into());
            }
            s.tags.push(ticket, FaultTag::FrontStatus(spec.status));
            s.count(|c| c.failed += 1);
            s.record(format!("answered {} to attempt {n}", spec.status), id);
            let mut r = httpd::text(spec.status, "unavailable (hookstorm fault front)");
            if spec.status == 429 {
                r.headers_mut().insert(
                    hyper::header::RETRY_AFTER,
                    hyper::header::HeaderValue::from_static("1"),
                );
            }
            return Ok(r);
        }
        if let Some(d) = spec.delay {
            s.tags.push(ticket, FaultTag::FrontDelay);
            s.count(|c| c.delayed += 1);
            s.record(format!("held attempt {n} for {d}"), id);
            tokio::time::sleep(d.0).await;
        }
    }
    forward(s, parts, &path, body, ticket).await
}

fn upstream_request(
    s: &Shared,
    parts: &http::request::Parts,
    path: &str,
    body: AnyBody,
) -> Option<Request<AnyBody>> {
    let uri: http::Uri = format!("http://{}{}", s.upstream, path).parse().ok()?;
    let mut b = Request::builder().method(parts.method.clone()).uri(uri);
    for (k, v) in &parts.headers {
        if k == hyper::header::HOST {
            continue;
        }
        b = b.header(k, v);
    }
    b = b.header(hyper::header::HOST, s.upstream.as_str());
    b.body(body).ok()
}

async fn forward(
    s: &Shared,
    parts: http::request::Parts,
    path: &str,
    body: Bytes,
    ticket: Option<u64>,
) -> Result<Response<AnyBody>, Hangup> {
    let Some(req) = upstream_request(s, &parts, path, httpd::full(body)) else {
        return Ok(httpd::text(400, "bad request path"));
    };
    match s.client.request(req).await {
        Ok(resp) => {
            s.count(|c| c.forwarded += 1);
            let (mut parts, body) = resp.into_parts();
            // A relative redirect of the receiver's own is made absolute, so
            // the finding names the receiver's URL and not the front's.
            if parts.status.is_redirection() {
                let loc = parts.headers.get(hyper::header::LOCATION).cloned();
                if let Some(l) = loc.as_ref().and_then(|v| v.to_str().ok()) {
                    if l.starts_with('/') {
                        if let Ok(v) = format!("http://{}{l}", s.upstream).parse() {
                            parts.headers.insert(hyper::header::LOCATION, v);
                        }
                    }
                }
            }
            // At most the budget (and one byte, to tell) is held: an
            // endless answer is cut there (and said to be), the rest is
            // never read. The sender is handed the byte past the budget
            // too, so it grades the answer as it would unfronted: past
            // its budget, an answer that does not count.
            let cap = budget::RECEIVER_ANSWER + 1;
            let bytes = match budget::read_body(body, cap).await {
                Ok(c) if c.over || c.bytes.len() > budget::RECEIVER_ANSWER => {
                    s.count(|c| c.cut_answers += 1);
                    s.record(
                        format!(
                            "the receiver's answer exceeded {}; the rest was discarded",
                            budget::show(budget::RECEIVER_ANSWER)
                        ),
                        None,
                    );
                    parts.headers.remove(hyper::header::CONTENT_LENGTH);
                    parts.headers.remove(hyper::header::TRANSFER_ENCODING);
                    c.bytes
                }
                Ok(c) => c.bytes,
                Err(_) => Bytes::new(),
            };
            Ok(Response::from_parts(parts, httpd::full(bytes)))
        }
        Err(e) => {
            s.tags.push(ticket, FaultTag::FrontUpstreamUnreachable);
            s.count(|c| c.unreachable += 1);
            s.record(
                "could not reach the receiver; answered 502".into(),
                Some(e.to_string()),
            );
            Ok(httpd::text(
                502,
                "receiver unreachable behind the fault front",
            ))
        }
    }
}

/// Sends the head and the first bytes, waits, then fails the body so the
/// connection to the receiver is cut mid-upload.
async fn stall(s: &Shared, parts: http::request::Parts, path: &str, body: Bytes) {
    let spec = &s.cfg.spec;
    let first = body.slice(..spec.stall_after_bytes.min(body.len()));
    let wait: Duration = spec.stall_for.0;
    let stream = futures_util::stream::unfold(0u8, move |step| {
        let first = first.clone();
        async move {
            match step {
                0 => Some((Ok::<_, Hangup>(Frame::data(first)), 1)),
                1 => {
                    tokio::time::sleep(wait).await;
                    Some((Err("upload cut by the fault front".into()), 2))
                }
                _ => None,
            }
        }
    });
    let Some(req) = upstream_request(s, &parts, path, StreamBody::new(stream).boxed()) else {
        return;
    };
    // The receiver must not answer 2xx to half a body; whatever it does, the
    // sender only sees the cut.
    let _ = tokio::time::timeout(wait + Duration::from_secs(5), s.client.request(req)).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_claimed_by_the_request_they_happened_to() {
        let t = FrontTags::default();
        t.push(Some(1), FaultTag::FrontDelay);
        t.push(Some(2), FaultTag::FrontStatus(503));
        t.push(Some(1), FaultTag::FrontUpstreamUnreachable);
        t.push(None, FaultTag::FrontStatus(429));
        assert_eq!(t.take(3), vec![]);
        assert_eq!(t.take(2), vec![FaultTag::FrontStatus(503)]);
        assert_eq!(
            t.take(1),
            vec![FaultTag::FrontDelay, FaultTag::FrontUpstreamUnreachable]
        );
        assert_eq!(t.take(1), vec![]);
    }
}
