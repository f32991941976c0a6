//! One HTTP exchange and how its answer is graded.
//!
//! An exchange is a POST with a per-attempt timeout (the receiver's answer
//! budget, never scaled) that never follows redirects. Its result is data:
//! a status and latency, or a [`Failure`] whose kind is read off hyper's
//! typed error (a connect error, an OS timeout) or the timer, never off
//! its text; whether anything was sent follows from that kind. An answer
//! counts once its body ends within the attempt's time and
//! [`ANSWER_LIMIT`]; one whose body stalls or never ends is a failure
//! naming its head ([`unfinished`]). [`classify`] turns the answer into
//! the history's outcome as `docs/history.md` defines it.

use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;

use crate::history::{Failure, Intent, Outcome, TransportFailure};
use crate::net::tls::TrustedRoots;
use crate::profile::Profile;

/// The HTTP client the sender uses (http and https).
pub type HttpClient = Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>;

/// The most of an answer's body the sender reads: an answer whose body
/// goes past it does not count ([`unfinished`]).
pub const ANSWER_LIMIT: usize = crate::limits::budget::RECEIVER_ANSWER;

/// How an answer whose head came failed to end within its budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unfinished {
    /// The attempt's time ran out inside the body.
    Time(Duration),
    /// The body went past [`ANSWER_LIMIT`].
    TooLong,
}

/// An answer is its status once it is over: its head, then its body to
/// the end (its length, its last chunk or the close), within the
/// attempt's time and [`ANSWER_LIMIT`]. One whose body is still coming
/// when either runs out did not end within the budget, whether it stalls
/// or never ends: the attempt is a transport failure (`info`, retried),
/// its text naming the head that came (`docs/history.md`).
pub fn unfinished(status: u16, head_ms: f64, why: Unfinished) -> Failure {
    let head = format!("its head, {status}, came after {head_ms:.0} ms");
    match why {
        Unfinished::Time(limit) => Failure::new(
            TransportFailure::Timeout,
            format!(
                "{} inside the answer's body ({head}; an answer counts once its body ends)",
                crate::text::units::format_duration(limit)
            ),
        ),
        Unfinished::TooLong => Failure::other(format!(
            "the answer's body went past {} ({head}); the rest was not read and the answer does not count",
            crate::limits::budget::show(ANSWER_LIMIT)
        )),
    }
}

/// What came back from one exchange.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// The status, if an answer head arrived.
    pub status: Option<u16>,
    /// Milliseconds to the answer head (or to the error).
    pub latency_ms: f64,
    /// The transport failure, when no answer came.
    pub failure: Option<Failure>,
    /// The `Location` header of a 3xx answer.
    pub location: Option<String>,
    /// The answer's body, up to [`ANSWER_LIMIT`] (empty when none was read).
    pub body: Bytes,
}

impl Answer {
    /// An answer that is only `failure`, `latency_ms` after the start.
    pub fn failed(failure: Failure, latency_ms: f64) -> Answer {
        Answer {
            status: None,
            latency_ms,
            failure: Some(failure),
            location: None,
            body: Bytes::new(),
        }
    }

    /// Nothing reached the receiver: the connection could not be made or
    /// the request could not be built (see [`TransportFailure::nothing_sent`]).
    pub fn nothing_sent(&self) -> bool {
        self.failure.as_ref().is_some_and(Failure::nothing_sent)
    }

    /// The failure's text, as the history records it.
    pub fn error(&self) -> Option<&str> {
        self.failure.as_ref().map(Failure::text)
    }
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
    b.build(crate::net::tls::connector(conn, roots))
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
            return Answer::failed(Failure::new(TransportFailure::Request, e.to_string()), 0.0)
        }
    };
    // The head's status and latency, once it came: a timer that fires
    // inside the body names it.
    let head = std::sync::OnceLock::new();
    let fut = async {
        let resp = client.request(req).await?;
        let latency = ms(start);
        let status = resp.status().as_u16();
        let _ = head.set((status, latency));
        let location = resp
            .status()
            .is_redirection()
            .then(|| resp.headers().get(http::header::LOCATION))
            .flatten()
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        // Read the answer to its end, within the budget, and keep it (a
        // Slack url_verification must echo its challenge). A body that
        // breaks off ends the exchange: it is then empty.
        let body = match Limited::new(resp.into_body(), ANSWER_LIMIT).collect().await {
            Ok(b) => Ok(b.to_bytes()),
            Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(Unfinished::TooLong),
            Err(_) => Ok(Bytes::new()),
        };
        Ok::<_, hyper_util::client::legacy::Error>((status, latency, location, body))
    };
    match tokio::time::timeout(timeout, fut).await {
        // What hyper reads as a status but HTTP does not (600 to 999) is
        // no answer, as the copies' reader has it.
        Ok(Ok((status, _, _, _))) if !(100..600).contains(&status) => Answer::failed(
            Failure::other(format!("malformed answer: status {status}")),
            ms(start),
        ),
        Ok(Ok((status, latency, location, Ok(body)))) => Answer {
            status: Some(status),
            latency_ms: latency,
            failure: None,
            location,
            body,
        },
        Ok(Ok((status, latency, _, Err(why)))) => {
            Answer::failed(unfinished(status, latency, why), ms(start))
        }
        Ok(Err(e)) => Answer::failed(failure_of(&e, start.elapsed()), ms(start)),
        Err(_) => match head.get().copied() {
            Some((status, latency)) => Answer::failed(
                unfinished(status, latency, Unfinished::Time(timeout)),
                ms(start),
            ),
            None => Answer::failed(Failure::timeout(timeout), ms(start)),
        },
    }
}

/// The kind of a client error, from its type: a connect error (TCP, TLS)
/// sent nothing; an OS timeout on the open connection is a timeout (after
/// `elapsed`); anything else broke an exchange that may have landed.
fn failure_of(e: &hyper_util::client::legacy::Error, elapsed: Duration) -> Failure {
    use std::error::Error;
    if e.is_connect() {
        // hyper's own "client error (Connect)" says only the kind.
        let detail = e.source().map_or_else(|| e.to_string(), chain);
        return Failure::new(TransportFailure::Connect, detail);
    }
    let mut source = e.source();
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            if io.kind() == std::io::ErrorKind::TimedOut {
                let after = crate::text::units::format_duration(elapsed);
                return Failure::new(TransportFailure::Timeout, format!("{after} ({})", chain(e)));
            }
        }
        source = s.source();
    }
    Failure::other(chain(e))
}

/// An error and its sources, `: `-separated.
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
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
            give_up: profile.gives_up_on(s),
        },
        None => Grade {
            outcome: if answer.nothing_sent() {
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

    fn answer(status: Option<u16>, nothing_sent: bool) -> Answer {
        let kind = if nothing_sent {
            TransportFailure::Connect
        } else {
            TransportFailure::Other
        };
        Answer {
            status,
            latency_ms: 1.0,
            failure: status.is_none().then(|| Failure::new(kind, "x")),
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

    /// The kinds come from hyper's error and the timer: a port nobody
    /// listens on, a peer that closes after reading, one that never answers.
    #[tokio::test]
    async fn failures_are_typed_where_the_exchange_fails() {
        let p = Profile::default_profile();
        let client = client(&p, false, &TrustedRoots::default());
        let send = |addr: std::net::SocketAddr, timeout| {
            let client = client.clone();
            async move {
                let uri: http::Uri = format!("http://{addr}/h").parse().unwrap();
                exchange(&client, &uri, &[], Bytes::from_static(b"{}"), timeout).await
            }
        };
        let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let refused = free.local_addr().unwrap();
        drop(free);
        let a = send(refused, Duration::from_secs(5)).await;
        let f = a.failure.clone().unwrap();
        assert_eq!(f.kind(), TransportFailure::Connect, "{f}");
        assert!(
            f.text().starts_with("connect error: tcp connect error: "),
            "{f}"
        );
        assert!(a.nothing_sent());

        let closing = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let (closing_addr, silent_addr) =
            (closing.local_addr().unwrap(), silent.local_addr().unwrap());
        tokio::spawn(async move {
            use tokio::io::AsyncReadExt;
            while let Ok((mut s, _)) = closing.accept().await {
                let mut b = [0u8; 1024];
                let _ = s.read(&mut b).await;
            }
        });
        tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((s, _)) = silent.accept().await {
                held.push(s);
            }
        });
        let a = send(closing_addr, Duration::from_secs(5)).await;
        let f = a.failure.clone().unwrap();
        assert_eq!(f.kind(), TransportFailure::Other, "{f}");
        assert!(!a.nothing_sent());
        let a = send(silent_addr, Duration::from_millis(100)).await;
        assert_eq!(a.error(), Some("timeout after 100ms"));
        assert_eq!(classify(&p, Intent::Genuine, &a).outcome, Outcome::Info);
    }

    /// A peer that answers every request with `head` and then `body`:
    /// `Some(bytes)` written whole, `None` an endless chunked body.
    async fn answering(head: &'static str, body: Option<&'static [u8]>) -> std::net::SocketAddr {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = l.accept().await {
                tokio::spawn(async move {
                    let mut b = [0u8; 4096];
                    let _ = s.read(&mut b).await;
                    let _ = s.write_all(head.as_bytes()).await;
                    match body {
                        Some(bytes) => {
                            let _ = s.write_all(bytes).await;
                            // Held open: a body short of its length stalls.
                            tokio::time::sleep(Duration::from_secs(30)).await;
                        }
                        None => {
                            let chunk = format!("{:x}\r\n{}\r\n", 4096, "x".repeat(4096));
                            while s.write_all(chunk.as_bytes()).await.is_ok() {}
                        }
                    }
                });
            }
        });
        addr
    }

    /// A 200 whose body stalls and a 200 whose body never ends are one
    /// outcome, through the pooled client and the concurrent copies alike:
    /// neither answer ended within its budget, so neither counts (`info`,
    /// the head named); nor does a status HTTP does not have (999, which
    /// no history could hold); a 200 whose body ends counts.
    #[tokio::test]
    async fn a_stalled_body_and_an_endless_body_are_the_same_outcome() {
        let p = Profile::default_profile();
        let client = client(&p, false, &TrustedRoots::default());
        let timeout = Duration::from_millis(500);
        let stalled = answering(
            "HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\n",
            Some(b"12345"),
        )
        .await;
        let endless = answering(
            "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n",
            None,
        )
        .await;
        let weird = answering(
            "HTTP/1.1 999 Weird\r\ncontent-length: 2\r\n\r\n",
            Some(b"ok"),
        )
        .await;
        let whole = answering(
            "HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\n",
            Some(b"1234567890"),
        )
        .await;
        for (addr, outcome, says) in [
            (
                stalled,
                Outcome::Info,
                "timeout after 500ms inside the answer's body (its head, 200",
            ),
            (
                endless,
                Outcome::Info,
                "the answer's body went past 64 KiB (its head, 200",
            ),
            (weird, Outcome::Info, "malformed answer: status 999"),
            (whole, Outcome::Ok, ""),
        ] {
            let uri: http::Uri = format!("http://{addr}/h").parse().unwrap();
            let pooled = exchange(&client, &uri, &[], Bytes::from_static(b"{}"), timeout).await;
            let copies = super::super::copies::release(&super::super::copies::Copies {
                uri: &uri,
                headers: &[],
                body: b"{}",
                n: 1,
                tickets: None,
                timeout,
                connect_timeout: timeout,
                tls: None,
            })
            .await
            .answers
            .remove(0);
            for (how, a) in [("pooled", pooled), ("copies", copies)] {
                assert_eq!(
                    classify(&p, Intent::Genuine, &a).outcome,
                    outcome,
                    "{how}: {a:?}"
                );
                assert!(a.error().unwrap_or("").starts_with(says), "{how}: {a:?}");
                assert_eq!(a.status.is_some(), outcome == Outcome::Ok, "{how}: {a:?}");
            }
        }
    }
}
