//! HTTP/1.1 answers read off any byte stream: the final head, and the body
//! framed as RFC 9112 says.
//!
//! Two senders write their requests by hand and so read their answers by
//! hand: the concurrent copies (`sender::copies`, one request per
//! connection, plain or TLS, the body kept up to a limit) and the bench's
//! connections (`bench::load::wire`, a connection reused for request after
//! request, the body dropped). Both read through one [`Reader`], so they
//! agree on what an answer is: the head parsed with `httparse` from a read
//! buffer the reader keeps between answers (8 KiB, growing only for a
//! longer head up to [`MAX_HEAD`], which is an error past that), interim
//! 1xx heads skipped (101 is final), and the body framed as none (1xx, 204,
//! 304), chunked (extensions and trailers read past), `Content-Length`, or
//! until the peer closes. A connection closed before the head is complete,
//! or a head that is not HTTP/1.x, is a [`WireError`]; the callers record
//! it as a transport failure with no status, never an acknowledgement.
//!
//! [`Reader::skip_body`] drops the body and says whether the connection can
//! carry another request; [`Reader::read_body`] keeps the body up to a
//! limit and stops reading there (the body is cut, the connection is not
//! reused). Both run the same framing code. The bench's path allocates
//! nothing per answer: the buffer is reused and a head's `Location` is
//! copied out only for a 3xx. The module is a leaf, generic over the
//! stream, so the sender and the bench share it without naming each other.

use tokio::io::{AsyncRead, AsyncReadExt};

/// Initial read buffer; it grows (doubling) only for a longer answer head.
const READ_BUF: usize = 8 * 1024;

/// Largest answer head (or chunk-size line) read.
const MAX_HEAD: usize = 64 * 1024;

/// Most answer header lines parsed.
const MAX_HEADERS: usize = 100;

/// How an answer's body is delimited.
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

/// The head of a final answer: its status, its `Location`, and how to read
/// past its body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Head {
    /// The status code.
    pub status: u16,
    /// The `Location` header of a 3xx answer.
    pub location: Option<String>,
    framing: Framing,
    keep_alive: bool,
}

/// Why an answer could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WireError {
    /// The peer closed before any byte of the head.
    #[error("connection closed before the status line")]
    ClosedBeforeHead,
    /// The peer closed inside the head.
    #[error("connection closed inside the answer head")]
    ClosedInHead,
    /// The peer closed inside the body.
    #[error("connection closed inside the answer body")]
    ClosedInBody,
    /// The bytes are not an HTTP/1.x answer.
    #[error("malformed answer: {0}")]
    Malformed(String),
    /// A head or chunk-size line longer than [`MAX_HEAD`].
    #[error("malformed answer: a head or chunk line longer than {} KiB", MAX_HEAD / 1024)]
    TooLong,
    /// Reading failed.
    #[error("reading the answer: {0}")]
    Io(#[from] std::io::Error),
}

fn malformed(what: &str) -> WireError {
    WireError::Malformed(what.to_string())
}

/// Where the body goes: dropped, or kept up to a limit.
struct Sink<'a> {
    into: Option<&'a mut Vec<u8>>,
    room: usize,
}

impl Sink<'_> {
    /// Takes `bytes`; false when the limit cut them (the body is cut).
    fn take(&mut self, bytes: &[u8]) -> bool {
        match &mut self.into {
            None => true,
            Some(v) => {
                let k = bytes.len().min(self.room);
                v.extend_from_slice(&bytes[..k]);
                self.room -= k;
                k == bytes.len()
            }
        }
    }
}

/// Reads answers off a stream: the bytes read and not yet consumed, kept
/// from one answer to the next on the same connection.
pub(crate) struct Reader {
    buf: Vec<u8>,
    /// Unread bytes are `buf[start..end]`.
    start: usize,
    end: usize,
}

impl Reader {
    /// An empty reader.
    pub(crate) fn new() -> Reader {
        Reader {
            buf: vec![0; READ_BUF],
            start: 0,
            end: 0,
        }
    }

    /// Whether bytes were read that no answer has consumed.
    pub(crate) fn has_unread(&self) -> bool {
        self.start != self.end
    }

    /// Reads up to the final answer's head (interim 1xx answers but 101
    /// are skipped); what follows it stays unread.
    pub(crate) async fn head<S: AsyncRead + Unpin>(
        &mut self,
        stream: &mut S,
    ) -> Result<Head, WireError> {
        loop {
            if self.start < self.end {
                let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
                let mut resp = httparse::Response::new(&mut headers);
                match resp.parse(&self.buf[self.start..self.end]) {
                    Ok(httparse::Status::Complete(n)) => {
                        let head = head_of(&resp)?;
                        self.start += n;
                        if (100..200).contains(&head.status) && head.status != 101 {
                            continue;
                        }
                        return Ok(head);
                    }
                    Ok(httparse::Status::Partial) => {}
                    Err(e) => {
                        let line = &self.buf[self.start..self.end.min(self.start + 60)];
                        let line = line.split(|b| *b == b'\r').next().unwrap_or_default();
                        let shown: String =
                            String::from_utf8_lossy(line).chars().take(60).collect();
                        return Err(WireError::Malformed(format!("{e} in {shown:?}")));
                    }
                }
            }
            if self.read_more(stream).await? == 0 {
                return Err(if self.start == self.end {
                    WireError::ClosedBeforeHead
                } else {
                    WireError::ClosedInHead
                });
            }
        }
    }

    /// Reads past the body of the answer `head` began, dropping it;
    /// whether the connection can carry another request.
    pub(crate) async fn skip_body<S: AsyncRead + Unpin>(
        &mut self,
        stream: &mut S,
        head: &Head,
    ) -> Result<bool, WireError> {
        let mut sink = Sink {
            into: None,
            room: 0,
        };
        self.body(stream, head, &mut sink).await
    }

    /// Reads the body of the answer `head` began into `into`, at most
    /// `limit` bytes of it: past those the body is cut, not read. Whether
    /// the connection can carry another request (never after a cut).
    pub(crate) async fn read_body<S: AsyncRead + Unpin>(
        &mut self,
        stream: &mut S,
        head: &Head,
        into: &mut Vec<u8>,
        limit: usize,
    ) -> Result<bool, WireError> {
        let mut sink = Sink {
            into: Some(into),
            room: limit,
        };
        self.body(stream, head, &mut sink).await
    }

    /// The framing both body readers share.
    async fn body<S: AsyncRead + Unpin>(
        &mut self,
        stream: &mut S,
        head: &Head,
        sink: &mut Sink<'_>,
    ) -> Result<bool, WireError> {
        match head.framing {
            Framing::Empty => {}
            Framing::Length(n) => {
                if !self.pass(stream, n, sink).await? {
                    return Ok(false);
                }
            }
            Framing::Chunked => loop {
                let (s, e) = self.line(stream).await?;
                let size =
                    chunk_size(&self.buf[s..e]).ok_or_else(|| malformed("invalid chunk size"))?;
                if size == 0 {
                    // Trailer lines up to an empty one.
                    loop {
                        let (s, e) = self.line(stream).await?;
                        if trim(&self.buf[s..e]).is_empty() {
                            break;
                        }
                    }
                    break;
                }
                if !self.pass(stream, size, sink).await? {
                    return Ok(false);
                }
                let (s, e) = self.line(stream).await?;
                if !trim(&self.buf[s..e]).is_empty() {
                    return Err(malformed("invalid chunk end"));
                }
            },
            Framing::UntilClose => loop {
                let whole = sink.take(&self.buf[self.start..self.end]);
                self.start = self.end;
                if !whole || self.read_more(stream).await? == 0 {
                    return Ok(false);
                }
            },
        }
        Ok(head.keep_alive)
    }

    /// Passes the next `n` body bytes to `sink`; false when its limit cut
    /// them (the rest is not read).
    async fn pass<S: AsyncRead + Unpin>(
        &mut self,
        stream: &mut S,
        mut n: u64,
        sink: &mut Sink<'_>,
    ) -> Result<bool, WireError> {
        loop {
            let have = ((self.end - self.start) as u64).min(n) as usize;
            if !sink.take(&self.buf[self.start..self.start + have]) {
                return Ok(false);
            }
            self.start += have;
            n -= have as u64;
            if n == 0 {
                return Ok(true);
            }
            if self.read_more(stream).await? == 0 {
                return Err(WireError::ClosedInBody);
            }
        }
    }

    /// The next line (without its `\n`), consumed: its bounds in `buf`,
    /// valid until the next read.
    async fn line<S: AsyncRead + Unpin>(
        &mut self,
        stream: &mut S,
    ) -> Result<(usize, usize), WireError> {
        loop {
            if let Some(i) = memchr::memchr(b'\n', &self.buf[self.start..self.end]) {
                let s = self.start;
                self.start += i + 1;
                return Ok((s, s + i));
            }
            if self.read_more(stream).await? == 0 {
                return Err(WireError::ClosedInBody);
            }
        }
    }

    /// Reads more bytes after the unread ones (moving them to the front, or
    /// growing the buffer up to [`MAX_HEAD`] when it is full of them); 0 when
    /// the peer closed.
    async fn read_more<S: AsyncRead + Unpin>(
        &mut self,
        stream: &mut S,
    ) -> Result<usize, WireError> {
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
                return Err(WireError::TooLong);
            }
        }
        let n = stream.read(&mut self.buf[self.end..]).await?;
        self.end += n;
        Ok(n)
    }
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
fn head_of(resp: &httparse::Response<'_, '_>) -> Result<Head, WireError> {
    let status = resp
        .code
        .filter(|s| (100..600).contains(s))
        .ok_or_else(|| WireError::Malformed(format!("status {:03}", resp.code.unwrap_or(0))))?;
    let http10 = resp.version == Some(0);
    let redirect = (300..400).contains(&status);
    let mut location = None;
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
                .ok_or_else(|| malformed("invalid content-length"))?;
            if length.is_some_and(|l| l != v) {
                return Err(malformed("conflicting content-length values"));
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
        } else if redirect && h.name.eq_ignore_ascii_case("location") {
            location = Some(String::from_utf8_lossy(trim(h.value)).into_owned());
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
        location,
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    /// A stream that yields `data` in pieces of `piece` bytes, then ends
    /// (or fails, when `reset`).
    struct Script {
        data: Vec<u8>,
        at: usize,
        piece: usize,
        reset: bool,
    }

    fn script(data: &[u8], piece: usize) -> Script {
        Script {
            data: data.to_vec(),
            at: 0,
            piece,
            reset: false,
        }
    }

    impl AsyncRead for Script {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &mut tokio::io::ReadBuf<'_>,
        ) -> Poll<std::io::Result<()>> {
            let n = (self.data.len() - self.at)
                .min(self.piece)
                .min(buf.remaining());
            if n == 0 && self.reset {
                return Poll::Ready(Err(std::io::ErrorKind::ConnectionReset.into()));
            }
            let at = self.at;
            buf.put_slice(&self.data[at..at + n]);
            self.at += n;
            Poll::Ready(Ok(()))
        }
    }

    /// Reads every answer of `data` (dropping bodies) up to the end.
    async fn statuses(data: &[u8], piece: usize) -> Vec<Result<(u16, bool), String>> {
        let (mut s, mut r) = (script(data, piece), Reader::new());
        let mut out = Vec::new();
        loop {
            let head = match r.head(&mut s).await {
                Ok(h) => h,
                Err(WireError::ClosedBeforeHead) => return out,
                Err(e) => {
                    out.push(Err(e.to_string()));
                    return out;
                }
            };
            match r.skip_body(&mut s, &head).await {
                Ok(keep) => out.push(Ok((head.status, keep))),
                Err(e) => {
                    out.push(Err(e.to_string()));
                    return out;
                }
            }
        }
    }

    /// The first answer of `data`: its head and its kept body (up to `limit`).
    async fn kept(data: &[u8], limit: usize) -> Result<(Head, Vec<u8>, bool), WireError> {
        let (mut s, mut r) = (script(data, 7), Reader::new());
        let head = r.head(&mut s).await?;
        let mut body = Vec::new();
        let keep = r.read_body(&mut s, &head, &mut body, limit).await?;
        Ok((head, body, keep))
    }

    fn error_of(data: &[u8]) -> String {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        match rt.block_on(kept(data, 1 << 20)) {
            Ok((h, _, _)) => panic!("{:?} read as {h:?}", String::from_utf8_lossy(data)),
            Err(e) => e.to_string(),
        }
    }

    const FRAMINGS: &str = concat!(
        "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
        "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n",
        "HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\n10\r\n0123456789abcdef\r\n0\r\nX-Trailer: t\r\n\r\n",
        "HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n",
        "HTTP/1.1 304 Not Modified\r\nContent-Length: 99\r\n\r\n",
        "HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\n\r\n",
        "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok",
        "HTTP/1.1 202 Accepted\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok",
    );

    #[tokio::test]
    async fn answers_of_every_framing_follow_each_other_in_one_buffer() {
        for piece in [1, 7, 4096] {
            let got = statuses(FRAMINGS.as_bytes(), piece).await;
            let want: Vec<Result<(u16, bool), String>> = vec![
                Ok((200, true)),
                Ok((201, true)),
                Ok((204, true)),
                Ok((304, true)),
                Ok((500, true)),
                Ok((200, true)),
                Ok((202, false)),
            ];
            assert_eq!(got, want, "piece {piece}");
        }
    }

    #[tokio::test]
    async fn an_answer_that_ends_the_connection_is_not_reused() {
        for answer in [
            "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok",
            "HTTP/1.0 200 OK\r\n\r\nuntil the peer closes",
            "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nbody",
            "HTTP/1.1 200 OK\r\n\r\nno length",
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n",
        ] {
            let got = statuses(answer.as_bytes(), 4096).await;
            assert_eq!(got.len(), 1, "{answer}: {got:?}");
            assert!(matches!(got[0], Ok((_, false))), "{answer}: {got:?}");
        }
    }

    #[tokio::test]
    async fn kept_bodies_are_the_bytes_the_framing_delimits() {
        for (answer, body) in [
            ("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloEXTRA", "hello"),
            (
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;a=b\r\nhello\r\n1\r\n!\r\n0\r\nX-T: 1\r\nX-U: 2\r\n\r\nEXTRA",
                "hello!",
            ),
            ("HTTP/1.0 200 OK\r\n\r\nuntil the close", "until the close"),
            ("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", "ok"),
            ("HTTP/1.1 204 No Content\r\n\r\nEXTRA", ""),
        ] {
            let (_, got, _) = kept(answer.as_bytes(), 1024).await.unwrap();
            assert_eq!(String::from_utf8(got).unwrap(), body, "{answer}");
        }
    }

    #[tokio::test]
    async fn a_body_over_the_limit_is_cut_and_the_connection_not_reused() {
        for answer in [
            "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n012\r\n7\r\n3456789\r\n0\r\n\r\n",
            "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n0123456789",
        ] {
            let (head, got, keep) = kept(answer.as_bytes(), 4).await.unwrap();
            assert_eq!((head.status, &got[..], keep), (200, &b"0123"[..], false), "{answer}");
        }
        // A body that fits exactly is whole, and the connection reusable.
        let (_, got, keep) = kept(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n0123", 4)
            .await
            .unwrap();
        assert_eq!((&got[..], keep), (&b"0123"[..], true));
    }

    #[tokio::test]
    async fn location_is_read_on_a_redirect_only() {
        let (h, _, _) = kept(
            b"HTTP/1.1 308 Permanent Redirect\r\nLocation:  /x \r\nContent-Length: 0\r\n\r\n",
            64,
        )
        .await
        .unwrap();
        assert_eq!((h.status, h.location.as_deref()), (308, Some("/x")));
        let (h, _, _) = kept(
            b"HTTP/1.1 201 Created\r\nLocation: /x\r\nContent-Length: 0\r\n\r\n",
            64,
        )
        .await
        .unwrap();
        assert_eq!((h.status, h.location), (201, None));
    }

    #[test]
    fn a_connection_closed_early_is_an_error_naming_where() {
        for (answer, expect) in [
            (&b""[..], "closed before the status line"),
            (
                b"HTTP/1.1 100 Continue\r\n\r\n",
                "closed before the status line",
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Ty",
                "closed inside the answer head",
            ),
        ] {
            assert!(error_of(answer).contains(expect), "{answer:?}");
        }
    }

    #[tokio::test]
    async fn a_body_that_breaks_off_is_an_error_after_the_head() {
        for answer in [
            "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-T: 1",
        ] {
            let got = statuses(answer.as_bytes(), 3).await;
            assert_eq!(
                got,
                vec![Err("connection closed inside the answer body".to_string())],
                "{answer}"
            );
        }
        let mut s = script(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", 4096);
        s.reset = true;
        let mut r = Reader::new();
        let head = r.head(&mut s).await.unwrap();
        let e = r.skip_body(&mut s, &head).await.unwrap_err();
        assert!(
            matches!(&e, WireError::Io(io) if io.kind() == std::io::ErrorKind::ConnectionReset),
            "{e}"
        );
        assert!(e.to_string().starts_with("reading the answer: "), "{e}");
    }

    #[test]
    fn anything_but_an_http_1_answer_is_malformed() {
        for (raw, says) in [
            (&b"garbage\r\n\r\n"[..], "garbage"),
            (
                b"SSH-2.0-OpenSSH_9.6\r\n\r\n",
                "invalid HTTP version in \"SSH-2.0",
            ),
            (b"HTTP/1.1 2000 OK\r\n\r\n", ""),
            (b"HTTP/2 200 OK\r\n\r\n", ""),
            (b"HTTP/1.1 20x OK\r\n\r\n", ""),
            (b"HTTP/1.1 000 Zero\r\n\r\n", "status 000"),
            (b"HTTP/1.1 600 Six\r\n\r\n", "status 600"),
            (b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", ""),
            (b"HTTP/1.1 200 OK\r\nbroken header\r\n\r\n", ""),
            (b"\xff\xfe\r\n\r\n", ""),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: lots\r\n\r\n",
                "invalid content-length",
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
                "invalid content-length",
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                "conflicting content-length",
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                "invalid chunk size",
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n0\r\n\r\n",
                "invalid chunk end",
            ),
        ] {
            let e = error_of(raw);
            assert!(e.starts_with("malformed answer: "), "{raw:?}: {e}");
            assert!(e.contains(says), "{raw:?}: {e}");
        }
    }

    #[tokio::test]
    async fn a_head_longer_than_the_limit_is_refused_and_one_within_it_read() {
        let big = format!("HTTP/1.1 200 OK\r\nX-Big: {}\r\n\r\n", "a".repeat(MAX_HEAD));
        let e = kept(big.as_bytes(), 0).await.unwrap_err();
        assert!(matches!(e, WireError::TooLong), "{e}");
        assert!(e.to_string().contains("longer than 64 KiB"), "{e}");
        let line = format!(
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;{}\r\n",
            "x".repeat(MAX_HEAD)
        );
        let got = statuses(line.as_bytes(), 4096).await;
        assert_eq!(got, vec![Err(WireError::TooLong.to_string())]);
        let fits = format!(
            "HTTP/1.1 204 No Content\r\nX-Big: {}\r\n\r\n",
            "a".repeat(MAX_HEAD - 100)
        );
        assert_eq!(statuses(fits.as_bytes(), 4096).await, vec![Ok((204, true))]);
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
