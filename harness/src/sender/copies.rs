//! Concurrent copies of one delivery, released at their last byte.
//!
//! A check-then-insert race only shows when the copies reach the receiver's
//! handler at the same instant, each on its own connection and worker. A
//! barrier before an ordinary client call is not enough: connect, TLS and
//! the write all come after it, and a receiver with a few worker threads
//! serialises whatever arrives spread out. So the copies are sent by hand
//! over raw HTTP/1.1: every copy opens its own TCP connection (and TLS for
//! https, with the same trusted roots as the rest of the sender), writes the
//! whole request but its final byte, and only when every copy has done so
//! are the final bytes written, one right after the other. A receiver that
//! parses as it reads has all N requests waiting one byte short, on N
//! workers, and gets them complete within microseconds: the spread of the
//! release writes ([`Released::spread`]) measured over 160 groups of 2-8
//! copies on loopback was 54 µs median, 0.4 ms at p90 and 5 ms at worst (a
//! preemption on a busy 2-core machine).
//!
//! Each answer is then read as HTTP/1.1 by the reader the bench shares
//! (`crate::net::httpwire`: status line, headers, a body by `Content-Length`,
//! chunked or up to the close, interim 1xx answers skipped), its body kept
//! up to [`ANSWER_LIMIT`] bytes; one longer, or still coming at the
//! timeout, does not count, as with the pooled client
//! ([`super::exchange::unfinished`]). A connection closed before
//! the head is complete, or an answer that is not HTTP, is a transport
//! failure with no status, exactly like the pooled client's: never an
//! acknowledgement. The per-copy timeout (the profile's) counts from the
//! release, and so does the latency. Each failure is typed by the step
//! that failed: a copy whose TCP connection or TLS handshake failed is a
//! connect failure (nothing was sent); the others are still released.
//!
//! The caller decides that copy groups do not compete with other traffic
//! (the sender holds a gate that stops every other exchange while a group
//! is out, see `super`).

use bytes::Bytes;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls_pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use super::exchange::{unfinished, Answer, Unfinished, ANSWER_LIMIT};
use crate::history::{Failure, TransportFailure};
use crate::net::httpwire::Reader;
use crate::text::units::format_duration;

/// One group of copies to release.
#[derive(Clone)]
pub struct Copies<'a> {
    /// The target URL (http or https).
    pub uri: &'a http::Uri,
    /// The request headers (the sender's, signature included).
    pub headers: &'a [(String, String)],
    /// The request body.
    pub body: &'a [u8],
    /// How many copies (each on its own connection).
    pub n: usize,
    /// A header that tells the copies apart, and its value per copy (the
    /// fault front's request tickets); `None` sends identical copies.
    pub tickets: Option<(&'a str, &'a [u64])>,
    /// Per copy: the answer budget after the release, and the budget for
    /// getting ready (TLS and the write) before it.
    pub timeout: Duration,
    /// Per copy: the budget for the TCP connect.
    pub connect_timeout: Duration,
    /// The TLS client configuration, for https targets.
    pub tls: Option<Arc<rustls::ClientConfig>>,
}

/// What a release did.
#[derive(Debug, Clone)]
pub struct Released {
    /// One answer per copy, in order.
    pub answers: Vec<Answer>,
    /// The time between the first and the last copy's final byte, when at
    /// least one copy was released.
    pub spread: Option<Duration>,
    /// When the first final byte was written.
    pub first_release: Option<Instant>,
}

trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// A copy's connection with all but its final byte written.
type Conn = Box<dyn Io>;

/// Copies that are connected and written but for their final byte.
pub struct Ready {
    /// Per copy: its connection, or the answer its failure stands for.
    copies: Vec<Result<Conn, Answer>>,
    last: u8,
    timeout: Duration,
}

impl Ready {
    /// How many copies are ready to be released (the rest failed).
    pub fn ready(&self) -> usize {
        self.copies.iter().filter(|c| c.is_ok()).count()
    }

    /// Writes every ready copy's final byte, back to back, then reads every
    /// answer.
    pub async fn release(self) -> Released {
        self.release_observed(&|_, _| {}).await
    }

    /// [`Ready::release`], handing each copy's index and answer to
    /// `on_answer` the moment that answer is in (the traffic gauge counts
    /// an answer when it came, not when the last copy's did).
    pub async fn release_observed(self, on_answer: &(dyn Fn(usize, &Answer) + Sync)) -> Released {
        let last = [self.last];
        let mut copies = Vec::with_capacity(self.copies.len());
        for r in self.copies {
            copies.push(match r {
                Ok(mut conn) => {
                    let sent = write_all(&mut conn, &last).await;
                    Ok((conn, Instant::now(), sent.err()))
                }
                Err(a) => Err(a),
            });
        }
        let released: Vec<Instant> = copies
            .iter()
            .filter_map(|r| r.as_ref().ok().map(|(_, at, _)| *at))
            .collect();
        let first_release = released.iter().min().copied();
        let spread = first_release.map(|first| *released.iter().max().unwrap_or(&first) - first);
        let timeout = self.timeout;
        let answers = futures_util::future::join_all(copies.into_iter().enumerate().map(
            |(k, r)| async move {
                let a = match r {
                    Ok((mut conn, at, write_error)) => {
                        answer(&mut conn, at, timeout, write_error).await
                    }
                    Err(a) => a,
                };
                on_answer(k, &a);
                a
            },
        ))
        .await;
        Released {
            answers,
            spread,
            first_release,
        }
    }
}

/// Sends `c.n` copies, releases them together and reads every answer.
pub async fn release(c: &Copies<'_>) -> Released {
    prepare(c).await.release().await
}

/// Opens a connection per copy and writes each request but its final byte.
pub async fn prepare(c: &Copies<'_>) -> Ready {
    let start = Instant::now();
    let mut requests = Vec::with_capacity(c.n);
    for k in 0..c.n {
        let built = match c.tickets {
            Some((name, tickets)) => {
                let mut h = c.headers.to_vec();
                let ticket = tickets.get(k).copied().unwrap_or_default();
                h.push((name.to_string(), ticket.to_string()));
                request_bytes(c.uri, &h, c.body)
            }
            None => request_bytes(c.uri, c.headers, c.body),
        };
        match built {
            Ok(b) => requests.push(b),
            Err(e) => {
                let a = failed(start, Failure::new(TransportFailure::Request, e));
                return Ready {
                    copies: (0..c.n).map(|_| Err(a.clone())).collect(),
                    last: 0,
                    timeout: c.timeout,
                };
            }
        }
    }
    // Every copy ends with the same byte: the body's last, or the head's.
    let last = requests
        .first()
        .and_then(|b| b.last().copied())
        .unwrap_or(b'\n');
    let copies =
        futures_util::future::join_all(requests.iter().map(|b| prepare_one(c, &b[..b.len() - 1])))
            .await;
    Ready {
        copies,
        last,
        timeout: c.timeout,
    }
}

/// The request as HTTP/1.1 bytes, one request per connection.
fn request_bytes(
    uri: &http::Uri,
    headers: &[(String, String)],
    body: &[u8],
) -> Result<Vec<u8>, String> {
    let authority = uri.authority().ok_or("the URL has no host")?.as_str();
    let host = authority.rsplit('@').next().unwrap_or(authority);
    let path = uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
    let mut out = format!("POST {path} HTTP/1.1\r\nHost: {host}\r\n").into_bytes();
    for (k, v) in headers {
        http::header::HeaderName::from_bytes(k.as_bytes()).map_err(|e| format!("{k:?}: {e}"))?;
        http::header::HeaderValue::from_str(v).map_err(|e| format!("{k}: {e}"))?;
        out.extend_from_slice(format!("{k}: {v}\r\n").as_bytes());
    }
    out.extend_from_slice(
        format!(
            "Content-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        )
        .as_bytes(),
    );
    out.extend_from_slice(body);
    Ok(out)
}

fn failed(since: Instant, failure: Failure) -> Answer {
    Answer::failed(failure, ms(since, Instant::now()))
}

fn ms(from: Instant, to: Instant) -> f64 {
    to.saturating_duration_since(from).as_secs_f64() * 1000.0
}

async fn write_all(conn: &mut Conn, bytes: &[u8]) -> Result<(), String> {
    conn.write_all(bytes).await.map_err(|e| e.to_string())?;
    conn.flush().await.map_err(|e| e.to_string())
}

/// Connects one copy and writes `prefix`; an error is the copy's answer.
async fn prepare_one(c: &Copies<'_>, prefix: &[u8]) -> Result<Conn, Answer> {
    let start = Instant::now();
    let host = c
        .uri
        .host()
        .unwrap_or_default()
        .trim_start_matches('[')
        .trim_end_matches(']');
    let https = c.uri.scheme_str() == Some("https");
    let port = c.uri.port_u16().unwrap_or(if https { 443 } else { 80 });
    let connect = |detail: String| Failure::new(TransportFailure::Connect, detail);
    let tcp = match tokio::time::timeout(c.connect_timeout, TcpStream::connect((host, port))).await
    {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return Err(failed(start, connect(format!("tcp connect error: {e}")))),
        Err(_) => {
            return Err(failed(
                start,
                connect(format!(
                    "tcp connect error: no connection within {}",
                    format_duration(c.connect_timeout)
                )),
            ))
        }
    };
    let _ = tcp.set_nodelay(true);
    let ready = async {
        let mut conn: Conn = match (&c.tls, https) {
            (Some(tls), true) => {
                let name = ServerName::try_from(host.to_string())
                    .map_err(|e| connect(format!("tls: bad server name {host:?}: {e}")))?;
                let s = tokio_rustls::TlsConnector::from(tls.clone())
                    .connect(name, tcp)
                    .await
                    .map_err(|e| connect(format!("tls handshake: {e}")))?;
                Box::new(s)
            }
            (None, true) => return Err(connect("https target without a TLS configuration".into())),
            _ => Box::new(tcp),
        };
        write_all(&mut conn, prefix)
            .await
            .map_err(|e| Failure::other(format!("sending the request: {e}")))?;
        Ok(conn)
    };
    match tokio::time::timeout(c.timeout, ready).await {
        Ok(Ok(conn)) => Ok(conn),
        Ok(Err(f)) => Err(failed(start, f)),
        Err(_) => Err(failed(
            start,
            Failure::new(
                TransportFailure::Timeout,
                format!("{} before the release", format_duration(c.timeout)),
            ),
        )),
    }
}

/// Reads one copy's answer; `write_error` is the release's own failure,
/// reported when no answer came.
async fn answer(
    conn: &mut Conn,
    released: Instant,
    timeout: Duration,
    write_error: Option<String>,
) -> Answer {
    // The head's status and when it came: a timer that fires inside the
    // body names it.
    let seen = std::sync::OnceLock::new();
    let read = async {
        let mut reader = Reader::new();
        let head = reader.head(conn).await?;
        let at = Instant::now();
        let _ = seen.set((head.status, at));
        // A body that breaks off ends the exchange; like the pooled
        // client's, it is then empty. One past the budget does not count.
        let mut body = Vec::new();
        if reader
            .read_body(conn, &head, &mut body, ANSWER_LIMIT + 1)
            .await
            .is_err()
        {
            body.clear();
        }
        Ok::<_, crate::net::httpwire::WireError>((head, at, body))
    };
    match tokio::time::timeout(timeout, read).await {
        Ok(Ok((head, at, body))) if body.len() > ANSWER_LIMIT => failed(
            released,
            unfinished(head.status, ms(released, at), Unfinished::TooLong),
        ),
        Ok(Ok((head, at, body))) => Answer {
            status: Some(head.status),
            latency_ms: ms(released, at),
            failure: None,
            location: head.location,
            body: Bytes::from(body),
        },
        Ok(Err(e)) => {
            let e = match write_error {
                Some(w) => format!("sending the last byte: {w}; {e}"),
                None => e.to_string(),
            };
            failed(released, Failure::other(e))
        }
        Err(_) => match seen.get() {
            Some(&(status, at)) => failed(
                released,
                unfinished(status, ms(released, at), Unfinished::Time(timeout)),
            ),
            None => failed(released, Failure::timeout(timeout)),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_is_http_1_1_with_its_length_and_host() {
        let uri: http::Uri = "http://user@127.0.0.1:8080/webhooks/a?x=1".parse().unwrap();
        let b = request_bytes(&uri, &[("X-A".into(), "1".into())], b"{}").unwrap();
        let text = String::from_utf8(b).unwrap();
        assert!(
            text.starts_with("POST /webhooks/a?x=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nX-A: 1\r\n")
        );
        assert!(text.ends_with("Content-Length: 2\r\nConnection: close\r\n\r\n{}"));
        assert!(request_bytes(&uri, &[("X-A".into(), "a\r\nb".into())], b"").is_err());
    }
}
