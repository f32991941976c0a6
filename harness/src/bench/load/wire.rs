//! One HTTP/1.1 client connection, written for the bench's workers.
//!
//! hyper's client connection hands each request to its dispatcher through
//! a channel, answers through a oneshot and builds a header map both ways;
//! at the bench's rates that machinery was the largest share of the
//! sender's own CPU once signing was keyed once. A bench worker sends one
//! request at a time on a connection it owns, so it needs none of it: the
//! request arrives encoded in one buffer (one `write`), the answer head is
//! parsed with `httparse` from a read buffer the connection keeps, and the
//! body is read and dropped, framed as RFC 9112 says: none (1xx, 204, 304),
//! chunked, `Content-Length`, or until the peer closes. A connection the
//! peer closed while idle is noticed before reuse, without a syscall unless
//! the reactor saw it readable. `hookstorm run` keeps hyper: it needs TLS,
//! redirects, answer bodies and pools.

use std::net::SocketAddr;
use std::task::{Context, Poll, Waker};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Initial read buffer; it grows (doubling) only for a longer answer head.
const READ_BUF: usize = 8 * 1024;

/// Largest answer head (or chunk-size line) read.
pub(crate) const MAX_HEAD: usize = 64 * 1024;

/// Most answer header lines parsed.
const MAX_HEADERS: usize = 100;

/// How the answer's body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    /// No body (1xx, 204, 304).
    Empty,
    /// Exactly this many bytes.
    Length(u64),
    /// Chunked transfer coding.
    Chunked,
    /// Until the peer closes the connection.
    UntilClose,
}

/// The head of an answer: its status, and how to read past its body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Head {
    /// The status code.
    pub status: u16,
    framing: Framing,
    keep_alive: bool,
}

/// A client connection: the socket and its read buffer.
pub(crate) struct Wire {
    stream: TcpStream,
    buf: Vec<u8>,
    /// Unread bytes are `buf[start..end]`.
    start: usize,
    end: usize,
}

fn io_text(e: std::io::Error) -> String {
    e.to_string()
}

fn trim(b: &[u8]) -> &[u8] {
    let s = b
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(b.len());
    let e = b
        .iter()
        .rposition(|c| !c.is_ascii_whitespace())
        .map_or(s, |i| i + 1);
    &b[s..e.max(s)]
}

/// Reads what the head says about the body and the connection.
fn head_of(resp: &httparse::Response<'_, '_>) -> Result<Head, String> {
    let status = resp.code.unwrap_or(0);
    let http10 = resp.version == Some(0);
    let mut length: Option<u64> = None;
    let mut coded = false;
    let mut chunked = false;
    let mut close = http10;
    for h in resp.headers.iter() {
        if h.name.eq_ignore_ascii_case("content-length") {
            let v = std::str::from_utf8(trim(h.value))
                .ok()
                .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|v| v.parse::<u64>().ok())
                .ok_or_else(|| "invalid content-length in the answer".to_string())?;
            if length.is_some_and(|l| l != v) {
                return Err("conflicting content-length in the answer".into());
            }
            length = Some(v);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            coded = true;
            // Chunked frames the body only as the last coding.
            chunked = h
                .value
                .split(|b| *b == b',')
                .next_back()
                .is_some_and(|c| trim(c).eq_ignore_ascii_case(b"chunked"));
        } else if h.name.eq_ignore_ascii_case("connection") {
            for token in h.value.split(|b| *b == b',') {
                let token = trim(token);
                if token.eq_ignore_ascii_case(b"close") {
                    close = true;
                } else if http10 && token.eq_ignore_ascii_case(b"keep-alive") {
                    close = false;
                }
            }
        }
    }
    let framing = if (100..200).contains(&status) || status == 204 || status == 304 {
        Framing::Empty
    } else if coded {
        if chunked {
            Framing::Chunked
        } else {
            Framing::UntilClose
        }
    } else {
        match length {
            Some(n) => Framing::Length(n),
            None => Framing::UntilClose,
        }
    };
    Ok(Head {
        status,
        framing,
        keep_alive: !close && framing != Framing::UntilClose && status != 101,
    })
}

/// A chunk-size line's size (`1a;ext=x` is 26), or `None` when it is not one.
fn chunk_size(line: &[u8]) -> Option<u64> {
    let hex = trim(line.split(|b| *b == b';').next().unwrap_or_default());
    if hex.is_empty() || hex.len() > 15 {
        return None;
    }
    let mut n: u64 = 0;
    for &b in hex {
        n = n * 16 + u64::from((b as char).to_digit(16)?);
    }
    Some(n)
}

impl Wire {
    /// Connects; the error text starts with `connect:`.
    pub(crate) async fn connect(addr: SocketAddr) -> Result<Wire, String> {
        let stream = TcpStream::connect(addr)
            .await
            .map_err(|e| format!("connect: {e}"))?;
        let _ = stream.set_nodelay(true);
        Ok(Wire {
            stream,
            buf: vec![0; READ_BUF],
            start: 0,
            end: 0,
        })
    }

    /// Whether the connection cannot carry another request: the peer closed
    /// it (or sent bytes nobody asked for) while it was idle. Asks the
    /// socket only when the reactor saw it readable.
    pub(crate) fn stale(&mut self) -> bool {
        if self.start != self.end {
            return true;
        }
        let mut cx = Context::from_waker(Waker::noop());
        match self.stream.poll_read_ready(&mut cx) {
            Poll::Pending => false,
            Poll::Ready(Err(_)) => true,
            Poll::Ready(Ok(())) => !matches!(
                self.stream.try_read(&mut self.buf),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock
            ),
        }
    }

    /// Sends `request` (a whole encoded request) and reads up to the final
    /// answer's head (informational answers are skipped).
    pub(crate) async fn send(&mut self, request: &[u8]) -> Result<Head, String> {
        self.stream.write_all(request).await.map_err(io_text)?;
        loop {
            let head = self.read_head().await?;
            if !(100..200).contains(&head.status) || head.status == 101 {
                return Ok(head);
            }
        }
    }

    /// Reads past the body of the answer `head` began; whether the
    /// connection can carry another request.
    pub(crate) async fn finish(&mut self, head: &Head) -> Result<bool, String> {
        match head.framing {
            Framing::Empty => {}
            Framing::Length(n) => self.skip(n).await?,
            Framing::Chunked => loop {
                let line = self.line().await?;
                let size = chunk_size(&self.buf[line.0..line.1])
                    .ok_or_else(|| "invalid chunk size in the answer body".to_string())?;
                if size == 0 {
                    // Trailer lines up to an empty one.
                    loop {
                        let (s, e) = self.line().await?;
                        if trim(&self.buf[s..e]).is_empty() {
                            break;
                        }
                    }
                    break;
                }
                self.skip(size).await?;
                let (s, e) = self.line().await?;
                if !trim(&self.buf[s..e]).is_empty() {
                    return Err("invalid chunk end in the answer body".into());
                }
            },
            Framing::UntilClose => {
                loop {
                    self.start = self.end;
                    if self.read_more().await? == 0 {
                        break;
                    }
                }
                return Ok(false);
            }
        }
        Ok(head.keep_alive)
    }

    async fn read_head(&mut self) -> Result<Head, String> {
        loop {
            if self.start < self.end {
                let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
                let mut resp = httparse::Response::new(&mut headers);
                match resp.parse(&self.buf[self.start..self.end]) {
                    Ok(httparse::Status::Complete(n)) => {
                        let head = head_of(&resp)?;
                        self.start += n;
                        return Ok(head);
                    }
                    Ok(httparse::Status::Partial) => {}
                    Err(e) => return Err(format!("invalid answer head: {e}")),
                }
            }
            if self.read_more().await? == 0 {
                return Err("connection closed before the answer head".into());
            }
        }
    }

    /// The next line (without its `\n`), consumed: its bounds in `buf`,
    /// valid until the next read.
    async fn line(&mut self) -> Result<(usize, usize), String> {
        loop {
            if let Some(i) = self.buf[self.start..self.end]
                .iter()
                .position(|b| *b == b'\n')
            {
                let s = self.start;
                self.start += i + 1;
                return Ok((s, s + i));
            }
            if self.read_more().await? == 0 {
                return Err("connection closed in the answer body".into());
            }
        }
    }

    /// Drops the next `n` body bytes.
    async fn skip(&mut self, mut n: u64) -> Result<(), String> {
        loop {
            let have = (self.end - self.start) as u64;
            if have >= n {
                self.start += n as usize;
                return Ok(());
            }
            n -= have;
            self.start = self.end;
            if self.read_more().await? == 0 {
                return Err("connection closed in the answer body".into());
            }
        }
    }

    /// Reads more bytes after the unread ones (moving them to the front, or
    /// growing the buffer up to [`MAX_HEAD`] when it is full of them); 0 when
    /// the peer closed.
    async fn read_more(&mut self) -> Result<usize, String> {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.end == self.buf.len() {
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            } else if self.buf.len() < MAX_HEAD {
                let grown = (self.buf.len() * 2).min(MAX_HEAD);
                self.buf.resize(grown, 0);
            } else {
                return Err(format!(
                    "answer head or chunk line longer than {} KiB",
                    MAX_HEAD / 1024
                ));
            }
        }
        let n = self
            .stream
            .read(&mut self.buf[self.end..])
            .await
            .map_err(io_text)?;
        self.end += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::TcpListener;

    /// What the scripted peer does next.
    #[derive(Clone, Copy)]
    enum Step {
        /// Read one request, then write this answer.
        Answer(&'static str),
        /// Read one request, then close.
        ReadThenClose,
        /// Close now.
        Close,
    }
    use Step::{Answer, Close, ReadThenClose};

    /// A peer that accepts one connection and follows `script`, writing
    /// answers in pieces of `piece` bytes.
    async fn peer(script: Vec<Step>, piece: usize) -> SocketAddr {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut s, _) = l.accept().await.unwrap();
            let mut got = Vec::new();
            for step in script {
                if matches!(step, Close) {
                    return;
                }
                // Read one whole request: head, then content-length bytes.
                loop {
                    let mut h = [httparse::EMPTY_HEADER; 32];
                    let mut r = httparse::Request::new(&mut h);
                    if let Ok(httparse::Status::Complete(n)) = r.parse(&got) {
                        let len: usize = r
                            .headers
                            .iter()
                            .find(|h| h.name.eq_ignore_ascii_case("content-length"))
                            .map(|h| std::str::from_utf8(h.value).unwrap().parse().unwrap())
                            .unwrap_or(0);
                        if got.len() >= n + len {
                            got.drain(..n + len);
                            break;
                        }
                    }
                    let mut b = [0u8; 4096];
                    let k = s.read(&mut b).await.unwrap();
                    if k == 0 {
                        return;
                    }
                    got.extend_from_slice(&b[..k]);
                }
                let Answer(answer) = step else { return };
                for part in answer.as_bytes().chunks(piece) {
                    s.write_all(part).await.unwrap();
                    s.flush().await.unwrap();
                    tokio::task::yield_now().await;
                }
            }
            // Keep the connection open until the client is done.
            let mut b = [0u8; 64];
            let _ = s.read(&mut b).await;
        });
        addr
    }

    const REQ: &[u8] = b"POST /h HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\n{}";

    async fn exchange(w: &mut Wire) -> Result<(u16, bool), String> {
        let head = w.send(REQ).await?;
        let keep = w.finish(&head).await?;
        Ok((head.status, keep))
    }

    #[tokio::test]
    async fn answers_of_every_framing_follow_each_other_on_one_connection() {
        for piece in [1, 7, 4096] {
            let addr = peer(
                vec![
                    Answer("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"),
                    Answer("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\n10\r\n0123456789abcdef\r\n0\r\nX-Trailer: t\r\n\r\n"),
                    Answer("HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n"),
                    Answer("HTTP/1.1 304 Not Modified\r\nContent-Length: 99\r\n\r\n"),
                    Answer("HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\n\r\n"),
                ],
                piece,
            )
            .await;
            let mut w = Wire::connect(addr).await.unwrap();
            for status in [200, 201, 204, 304, 500] {
                assert!(!w.stale(), "piece {piece}: stale before {status}");
                assert_eq!(exchange(&mut w).await, Ok((status, true)), "piece {piece}");
            }
        }
    }

    #[tokio::test]
    async fn an_answer_that_ends_the_connection_is_not_reused() {
        for answer in [
            "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok",
            "HTTP/1.0 200 OK\r\n\r\nuntil the peer closes",
            "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nbody",
        ] {
            let addr = peer(vec![Answer(answer), Close], 4096).await;
            let mut w = Wire::connect(addr).await.unwrap();
            assert_eq!(exchange(&mut w).await, Ok((200, false)), "{answer}");
        }
        let addr = peer(
            vec![Answer(
                "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n",
            )],
            4096,
        )
        .await;
        let mut w = Wire::connect(addr).await.unwrap();
        assert_eq!(exchange(&mut w).await, Ok((200, true)));
    }

    #[tokio::test]
    async fn a_peer_that_closes_or_garbles_is_an_error_naming_it() {
        let addr = peer(vec![ReadThenClose], 4096).await;
        let mut w = Wire::connect(addr).await.unwrap();
        let e = exchange(&mut w).await.unwrap_err();
        assert!(e.contains("closed"), "{e}");
        for (answer, expect) in [
            ("NOT HTTP\r\n\r\n", "invalid answer head"),
            (
                "HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
                "content-length",
            ),
            (
                "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                "conflicting",
            ),
            (
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                "chunk size",
            ),
            (
                "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
                "closed",
            ),
        ] {
            let addr = peer(vec![Answer(answer), Close], 4096).await;
            let mut w = Wire::connect(addr).await.unwrap();
            let e = exchange(&mut w).await.unwrap_err();
            assert!(e.contains(expect), "{answer:?}: {e}");
        }
    }

    #[tokio::test]
    async fn a_connection_the_peer_closed_while_idle_is_stale() {
        let addr = peer(
            vec![Answer("HTTP/1.1 204 No Content\r\n\r\n"), ReadThenClose],
            4096,
        )
        .await;
        let mut w = Wire::connect(addr).await.unwrap();
        assert_eq!(exchange(&mut w).await, Ok((204, true)));
        assert!(!w.stale());
        // The peer closes once it has read another request: the close,
        // once the reactor sees it, makes the connection stale.
        w.stream.write_all(REQ).await.unwrap();
        w.stream.readable().await.unwrap();
        assert!(w.stale());
    }

    #[tokio::test]
    async fn an_answer_head_longer_than_the_limit_is_refused() {
        let big: &'static str = Box::leak(
            format!("HTTP/1.1 200 OK\r\nX-Big: {}\r\n\r\n", "a".repeat(MAX_HEAD)).into_boxed_str(),
        );
        let addr = peer(vec![Answer(big), Close], 4096).await;
        let mut w = Wire::connect(addr).await.unwrap();
        let e = exchange(&mut w).await.unwrap_err();
        assert!(e.contains("longer than"), "{e}");
    }

    #[test]
    fn chunk_sizes_read_as_hex_with_extensions() {
        assert_eq!(chunk_size(b"1a"), Some(26));
        assert_eq!(chunk_size(b"1A;name=v\r"), Some(26));
        assert_eq!(chunk_size(b"0"), Some(0));
        assert_eq!(chunk_size(b""), None);
        assert_eq!(chunk_size(b"g"), None);
        assert_eq!(chunk_size(b"ffffffffffffffff"), None);
    }
}
