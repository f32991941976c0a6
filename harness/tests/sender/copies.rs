//! Concurrent copies sent by hand: each on its own connection, none complete
//! at the server before the release, and an answer that is not HTTP is a
//! transport error with no status, never an acknowledgement.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hookstorm::history::{Intent, Outcome, TransportFailure};
use hookstorm::profile::Profile;
use hookstorm::sender::copies::{self, Copies};
use hookstorm::sender::exchange::classify;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// What the raw server saw on one connection.
#[derive(Debug, Clone, Default)]
struct Conn {
    received: usize,
    /// Head plus Content-Length, once the head is in.
    expected: Option<usize>,
    complete_at: Option<Instant>,
}

impl Conn {
    fn complete(&self) -> bool {
        self.expected.is_some_and(|e| self.received >= e)
    }
    fn one_byte_short(&self) -> bool {
        self.expected.is_some_and(|e| self.received + 1 == e)
    }
}

/// A raw HTTP/1.1 server on 127.0.0.1 that records every connection and,
/// once a request is complete, writes `reply` and closes.
struct Raw {
    addr: std::net::SocketAddr,
    conns: Arc<Mutex<Vec<Conn>>>,
}

impl Raw {
    async fn start(reply: &'static [u8]) -> Raw {
        Raw::start_tls(reply, None).await
    }

    /// Like [`Raw::start`], behind TLS when `tls` is given.
    async fn start_tls(reply: &'static [u8], tls: Option<tokio_rustls::TlsAcceptor>) -> Raw {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let conns: Arc<Mutex<Vec<Conn>>> = Arc::default();
        let log = conns.clone();
        tokio::spawn(async move {
            while let Ok((s, _)) = listener.accept().await {
                let log = log.clone();
                let me = {
                    let mut l = log.lock().unwrap();
                    l.push(Conn::default());
                    l.len() - 1
                };
                let tls = tls.clone();
                tokio::spawn(async move {
                    match tls {
                        Some(tls) => {
                            if let Ok(s) = tls.accept(s).await {
                                serve(s, &log, me, reply).await;
                            }
                        }
                        None => serve(s, &log, me, reply).await,
                    }
                });
            }
        });
        Raw { addr, conns }
    }

    fn conns(&self) -> Vec<Conn> {
        self.conns.lock().unwrap().clone()
    }

    fn uri(&self) -> http::Uri {
        format!("http://{}/webhooks/acct_a", self.addr)
            .parse()
            .unwrap()
    }
}

async fn serve<S>(mut s: S, log: &Mutex<Vec<Conn>>, me: usize, reply: &[u8])
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let Ok(n) = s.read(&mut chunk).await else {
            return;
        };
        if n == 0 {
            return;
        }
        buf.extend_from_slice(&chunk[..n]);
        let mut l = log.lock().unwrap();
        let c = &mut l[me];
        c.received = buf.len();
        if c.expected.is_none() {
            c.expected = expected_len(&buf);
        }
        if c.complete() {
            c.complete_at = Some(Instant::now());
            break;
        }
    }
    let _ = s.write_all(reply).await;
    let _ = s.shutdown().await;
}

fn expected_len(buf: &[u8]) -> Option<usize> {
    let end = buf.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&buf[..end]).to_lowercase();
    let len = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    Some(end + 4 + len)
}

const BODY: &[u8] = br#"{"task":{"id":"tsk_1"}}"#;

fn headers() -> Vec<(String, String)> {
    vec![
        ("Content-Type".into(), "application/json".into()),
        ("Webhook-Id".into(), "whd_1".into()),
    ]
}

fn copies<'a>(uri: &'a http::Uri, headers: &'a [(String, String)], n: usize) -> Copies<'a> {
    Copies {
        uri,
        headers,
        body: BODY,
        n,
        tickets: None,
        timeout: Duration::from_secs(5),
        connect_timeout: Duration::from_secs(2),
        tls: None,
    }
}

async fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn copies_wait_one_byte_short_on_separate_connections_until_the_release() {
    const N: usize = 6;
    let server = Raw::start(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n").await;
    let (uri, headers) = (server.uri(), headers());
    let ready = copies::prepare(&copies(&uri, &headers, N)).await;
    assert_eq!(ready.ready(), N);
    // Every copy is on its own connection with all but one byte at the
    // server, and stays so: nothing completes before the release.
    wait_for("every copy one byte short", || {
        let c = server.conns();
        c.len() == N && c.iter().all(Conn::one_byte_short)
    })
    .await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let before = server.conns();
    assert_eq!(before.len(), N, "{before:?}");
    assert!(before.iter().all(|c| !c.complete()), "{before:?}");

    let released = ready.release().await;
    assert_eq!(released.answers.len(), N);
    for a in &released.answers {
        assert_eq!(a.status, Some(204), "{a:?}");
        assert!(a.failure.is_none(), "{a:?}");
    }
    let after = server.conns();
    assert_eq!(after.len(), N, "one connection per copy: {after:?}");
    assert!(after.iter().all(Conn::complete), "{after:?}");
    let first = released.first_release.expect("released");
    assert!(after.iter().all(|c| c.complete_at.unwrap() >= first));
    let spread = released.spread.expect("released");
    eprintln!("{N} copies released within {spread:?}");
    assert!(spread < Duration::from_millis(50), "{spread:?}");
}

async fn one_answer(reply: &'static [u8]) -> hookstorm::sender::exchange::Answer {
    let server = Raw::start(reply).await;
    let (uri, headers) = (server.uri(), headers());
    let released = copies::release(&copies(&uri, &headers, 2)).await;
    assert_eq!(server.conns().len(), 2);
    released.answers[0].clone()
}

#[tokio::test]
async fn an_answer_that_is_not_http_has_no_status_and_is_not_an_ack() {
    let p = Profile::default_profile();
    for (reply, says) in [
        (&b"SSH-2.0-OpenSSH_9.6\r\n\r\n"[..], "malformed answer"),
        (
            b"HTTP/1.1 200 OK\r\nContent-Ty",
            "closed inside the answer head",
        ),
        (b"", "closed before the status line"),
        (
            b"HTTP/1.1 200 OK\r\nbroken header\r\n\r\n",
            "malformed answer",
        ),
    ] {
        let a = one_answer(reply).await;
        assert_eq!(a.status, None, "{reply:?}: {a:?}");
        let f = a.failure.as_ref().expect("a failure");
        assert_eq!(f.kind(), TransportFailure::Other, "{a:?}");
        assert!(!a.nothing_sent(), "{a:?}");
        let e = f.text();
        assert!(e.contains(says), "{reply:?}: {e}");
        let g = classify(&p, Intent::Genuine, &a);
        assert_eq!((g.outcome, g.delivered), (Outcome::Info, false));
    }
}

#[tokio::test]
async fn well_formed_answers_are_read_whatever_their_framing() {
    let a = one_answer(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n").await;
    assert_eq!(
        (a.status, a.error(), &a.body[..]),
        (Some(200), None, &b"hello"[..])
    );
    let a = one_answer(b"HTTP/1.1 202 Accepted\r\nContent-Length: 2\r\n\r\nok").await;
    assert_eq!((a.status, &a.body[..]), (Some(202), &b"ok"[..]));
    let a = one_answer(b"HTTP/1.0 503 Busy\r\n\r\nclose-delimited body").await;
    assert_eq!(
        (a.status, &a.body[..]),
        (Some(503), &b"close-delimited body"[..])
    );
    let a = one_answer(b"HTTP/1.1 308 Permanent Redirect\r\nLocation: /webhooks/acct_a/\r\nContent-Length: 0\r\n\r\n").await;
    assert_eq!(
        (a.status, a.location.as_deref()),
        (Some(308), Some("/webhooks/acct_a/"))
    );
}

#[tokio::test]
async fn a_copy_that_cannot_connect_is_a_connect_failure() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let uri: http::Uri = format!("http://127.0.0.1:{port}/webhooks/acct_a")
        .parse()
        .unwrap();
    let headers = headers();
    let released = copies::release(&copies(&uri, &headers, 3)).await;
    assert_eq!(released.answers.len(), 3);
    assert!(released.answers.iter().all(|a| a.status.is_none()
        && a.failure.as_ref().map(|f| f.kind()) == Some(TransportFailure::Connect)
        && a.error()
            .unwrap()
            .starts_with("connect error: tcp connect error: ")));
    assert!(released.spread.is_none());
}

#[tokio::test]
async fn an_answer_that_never_comes_times_out_from_the_release() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let held = Arc::new(Mutex::new(Vec::new()));
    let keep = held.clone();
    tokio::spawn(async move {
        while let Ok((s, _)) = listener.accept().await {
            keep.lock().unwrap().push(s);
        }
    });
    let uri: http::Uri = format!("http://{addr}/webhooks/acct_a").parse().unwrap();
    let headers = headers();
    let mut c = copies(&uri, &headers, 2);
    c.timeout = Duration::from_millis(300);
    let released = copies::release(&c).await;
    for a in &released.answers {
        assert_eq!(a.status, None);
        assert_eq!(a.error(), Some("timeout after 300ms"), "{a:?}");
        assert!(a.latency_ms >= 290.0, "{a:?}");
    }
}

#[tokio::test]
async fn https_copies_are_released_over_tls_with_the_trusted_roots() {
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["localhost".to_string()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    let der = rustls_pki_types::CertificateDer::from(cert.der().to_vec());
    let key_der = rustls_pki_types::PrivateKeyDer::try_from(key.serialize_der()).unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![der.clone()], key_der)
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let server = Raw::start_tls(
        b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n",
        Some(acceptor),
    )
    .await;
    let uri: http::Uri = format!("https://localhost:{}/webhooks/acct_a", server.addr.port())
        .parse()
        .unwrap();
    let headers = headers();
    let roots = hookstorm::net::tls::TrustedRoots(Arc::new(vec![der]));
    let mut c = copies(&uri, &headers, 3);
    c.tls = Some(Arc::new(hookstorm::net::tls::client_config(&roots)));
    let ready = copies::prepare(&c).await;
    assert_eq!(ready.ready(), 3);
    wait_for("every copy one byte short", || {
        let c = server.conns();
        c.len() == 3 && c.iter().all(Conn::one_byte_short)
    })
    .await;
    let released = ready.release().await;
    assert!(
        released.answers.iter().all(|a| a.status == Some(204)),
        "{:?}",
        released.answers
    );
    assert!(server.conns().iter().all(Conn::complete));

    // Without the CA the handshake fails: nothing was sent.
    c.tls = Some(Arc::new(hookstorm::net::tls::client_config(
        &Default::default(),
    )));
    let refused = copies::release(&c).await;
    assert!(
        refused.answers.iter().all(|a| a.status.is_none()
            && a.nothing_sent()
            && a.error()
                .unwrap()
                .starts_with("connect error: tls handshake: ")),
        "{:?}",
        refused.answers
    );
}
