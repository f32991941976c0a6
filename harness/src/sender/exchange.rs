//! One HTTP exchange and how its answer is graded.
//!
//! An exchange is a POST with a per-attempt timeout (the receiver's answer
//! budget, never scaled) that never follows redirects. Its result is data:
//! a status and latency, or an error text and whether the connection failed
//! before any byte was sent. [`classify`] turns that into the history's
//! outcome as `docs/history.md` defines it.

use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;

use crate::history::{Intent, Outcome};
use crate::profile::Profile;
use crate::tls::TrustedRoots;

/// The HTTP client the sender uses (http and https).
pub type HttpClient = Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>;

/// The most of an answer's body the sender reads (the rest is dropped).
pub const ANSWER_LIMIT: usize = 64 * 1024;

/// What came back from one exchange.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// The status, if an answer head arrived.
    pub status: Option<u16>,
    /// Milliseconds to the answer head (or to the error).
    pub latency_ms: f64,
    /// Transport error text.
    pub error: Option<String>,
    /// The connection could not be made: nothing was sent.
    pub connect_failed: bool,
    /// The `Location` header of a 3xx answer.
    pub location: Option<String>,
    /// The answer's body, up to [`ANSWER_LIMIT`] (empty when none was read).
    pub body: Bytes,
}

/// Builds a client: keep-alive pool, or a fresh connection per request when
/// `pooled` is false (for copies that must not share a connection).
pub fn client(profile: &Profile, pooled: bool, roots: &TrustedRoots) -> HttpClient {
    let mut conn = HttpConnector::new();
    conn.set_nodelay(true);
    conn.set_connect_timeout(Some(profile.connect_timeout.unwrap_or(profile.timeout)));
    let mut b = Client::builder(hyper_util::rt::TokioExecutor::new());
    b.pool_idle_timeout(Duration::from_secs(30));
    if !pooled {
        b.pool_max_idle_per_host(0);
    }
    b.build(crate::tls::connector(conn, roots))
}

/// Sends one POST and waits for its answer, up to `timeout`.
pub async fn exchange(
    client: &HttpClient,
    uri: &http::Uri,
    headers: &[(String, String)],
    body: Bytes,
    timeout: Duration,
) -> Answer {
    let start = Instant::now();
    let ms = |s: Instant| s.elapsed().as_secs_f64() * 1000.0;
    let mut req = http::Request::post(uri.clone());
    for (k, v) in headers {
        req = req.header(k.as_str(), v.as_str());
    }
    let req = match req.body(Full::new(body)) {
        Ok(r) => r,
        Err(e) => {
            return Answer {
                status: None,
                latency_ms: 0.0,
                error: Some(format!("cannot build the request: {e}")),
                connect_failed: true,
                location: None,
                body: Bytes::new(),
            }
        }
    };
    let fut = async {
        let resp = client.request(req).await?;
        let latency = ms(start);
        let status = resp.status().as_u16();
        let location = resp
            .status()
            .is_redirection()
            .then(|| resp.headers().get(http::header::LOCATION))
            .flatten()
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        // Read (a bounded amount of) the answer so the connection can be
        // reused; keep it (a Slack url_verification must echo its challenge).
        let body = Limited::new(resp.into_body(), ANSWER_LIMIT)
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        Ok::<_, hyper_util::client::legacy::Error>((status, latency, location, body))
    };
    match tokio::time::timeout(timeout, fut).await {
        Ok(Ok((status, latency, location, body))) => Answer {
            status: Some(status),
            latency_ms: latency,
            error: None,
            connect_failed: false,
            location,
            body,
        },
        Ok(Err(e)) => Answer {
            status: None,
            latency_ms: ms(start),
            error: Some(error_text(&e)),
            connect_failed: e.is_connect(),
            location: None,
            body: Bytes::new(),
        },
        Err(_) => Answer {
            status: None,
            latency_ms: ms(start),
            error: Some(crate::history::TransportFailure::timeout_text(timeout)),
            connect_failed: false,
            location: None,
            body: Bytes::new(),
        },
    }
}

fn error_text(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// How the sender reads one answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grade {
    /// The history outcome.
    pub outcome: Outcome,
    /// The profile counts it as delivered.
    pub delivered: bool,
    /// The profile stops retrying after it (e.g. 410).
    pub give_up: bool,
}

/// Grades an answer per `docs/history.md`: 2xx is `ok`; refused before any
/// byte is `fail`; a 4xx on a delivery the harness knew to be bad is
/// `fail`; everything else (timeouts, resets, 5xx, 3xx, 4xx on a genuine
/// delivery) is `info`.
pub fn classify(profile: &Profile, intent: Intent, answer: &Answer) -> Grade {
    match answer.status {
        Some(s) if profile.is_success(s) => Grade {
            outcome: Outcome::Ok,
            delivered: true,
            give_up: false,
        },
        Some(s) => Grade {
            outcome: if (400..500).contains(&s) && intent.must_reject() {
                Outcome::Fail
            } else {
                Outcome::Info
            },
            delivered: false,
            give_up: profile.give_up_on.contains(&s),
        },
        None => Grade {
            outcome: if answer.connect_failed {
                Outcome::Fail
            } else {
                Outcome::Info
            },
            delivered: false,
            give_up: false,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: Option<u16>, connect_failed: bool) -> Answer {
        Answer {
            status,
            latency_ms: 1.0,
            error: None,
            connect_failed,
            location: None,
            body: Bytes::new(),
        }
    }

    #[test]
    fn outcomes_follow_the_invariants_table() {
        let p = Profile::default_profile();
        let g = |i, a: Answer| classify(&p, i, &a).outcome;
        assert_eq!(g(Intent::Genuine, answer(Some(204), false)), Outcome::Ok);
        assert_eq!(g(Intent::Genuine, answer(None, true)), Outcome::Fail);
        assert_eq!(g(Intent::Genuine, answer(None, false)), Outcome::Info);
        assert_eq!(g(Intent::Genuine, answer(Some(400), false)), Outcome::Info);
        assert_eq!(g(Intent::Forged, answer(Some(401), false)), Outcome::Fail);
        assert_eq!(g(Intent::Forged, answer(Some(500), false)), Outcome::Info);
        assert_eq!(g(Intent::Genuine, answer(Some(308), false)), Outcome::Info);
        assert_eq!(
            g(Intent::Oversized, answer(Some(413), false)),
            Outcome::Fail
        );
    }

    #[test]
    fn give_up_statuses_stop_retries() {
        let p = Profile::builtin("standard-webhooks").unwrap();
        assert!(classify(&p, Intent::Genuine, &answer(Some(410), false)).give_up);
        assert!(!classify(&p, Intent::Genuine, &answer(Some(500), false)).give_up);
    }
}
