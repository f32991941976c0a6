//! One HTTP/1.1 client connection, written for the bench's workers.
//!
//! hyper's client connection hands each request to its dispatcher through
//! a channel, answers through a oneshot and builds a header map both ways;
//! at the bench's rates that machinery was the largest share of the
//! sender's own CPU once signing was keyed once. A bench worker sends one
//! request at a time on a connection it owns, so it needs none of it: the
//! request arrives encoded in one buffer (one `write`), and the answer is
//! read by the reader the concurrent copies share (`crate::net::httpwire`): the
//! head parsed with `httparse` from a read buffer the connection keeps,
//! the body read and dropped, framed as RFC 9112 says, with nothing
//! allocated per answer. A connection the peer closed while idle is
//! noticed before reuse, without a syscall unless the reactor saw it
//! readable. Failures are typed here, where they happen: a connect error,
//! or the exchange broke. `hookstorm run` keeps hyper: it needs TLS,
//! redirects, answer bodies and pools.

use std::net::SocketAddr;
use std::task::{Context, Poll, Waker};

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use crate::history::{Failure, TransportFailure};
use crate::net::httpwire::{Head, Reader, WireError};

/// A client connection: the socket and its answer reader.
pub(crate) struct Wire {
    stream: TcpStream,
    reader: Reader,
}

impl Wire {
    /// Connects; a failure is a connect failure.
    pub(crate) async fn connect(addr: SocketAddr) -> Result<Wire, Failure> {
        let stream = TcpStream::connect(addr).await.map_err(|e| {
            Failure::new(TransportFailure::Connect, format!("tcp connect error: {e}"))
        })?;
        let _ = stream.set_nodelay(true);
        Ok(Wire {
            stream,
            reader: Reader::new(),
        })
    }

    /// Whether the connection cannot carry another request: the peer closed
    /// it (or sent bytes nobody asked for) while it was idle. Asks the
    /// socket only when the reactor saw it readable.
    pub(crate) fn stale(&mut self) -> bool {
        if self.reader.has_unread() {
            return true;
        }
        let mut cx = Context::from_waker(Waker::noop());
        match self.stream.poll_read_ready(&mut cx) {
            Poll::Pending => false,
            Poll::Ready(Err(_)) => true,
            Poll::Ready(Ok(())) => !matches!(
                self.stream.try_read(&mut [0u8; 64]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock
            ),
        }
    }

    /// Sends `request` (a whole encoded request) and reads up to the final
    /// answer's head (informational answers are skipped).
    pub(crate) async fn send(&mut self, request: &[u8]) -> Result<Head, Failure> {
        self.stream
            .write_all(request)
            .await
            .map_err(|e| Failure::other(e.to_string()))?;
        self.reader
            .head(&mut self.stream)
            .await
            .map_err(|e| Failure::other(e.to_string()))
    }

    /// Reads past the body of the answer `head` began; whether the
    /// connection can carry another request.
    pub(crate) async fn finish(&mut self, head: &Head) -> Result<bool, WireError> {
        self.reader.skip_body(&mut self.stream, head).await
    }

    /// Reads the body of the answer `head` began into `into`, at most
    /// `limit` bytes of it; whether the connection can carry another request.
    pub(crate) async fn finish_into(
        &mut self,
        head: &Head,
        into: &mut Vec<u8>,
        limit: usize,
    ) -> Result<bool, WireError> {
        self.reader
            .read_body(&mut self.stream, head, into, limit)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;
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
        let head = w.send(REQ).await.map_err(|f| f.to_string())?;
        let keep = w.finish(&head).await.map_err(|e| e.to_string())?;
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
    async fn a_peer_that_closes_or_refuses_is_a_typed_failure_not_an_answer() {
        let addr = peer(vec![ReadThenClose], 4096).await;
        let mut w = Wire::connect(addr).await.unwrap();
        let f = w.send(REQ).await.unwrap_err();
        assert_eq!(f.kind(), TransportFailure::Other, "{f}");
        assert_eq!(f.text(), "connection closed before the status line");
        let refused = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap()
        };
        let f = Wire::connect(refused).await.err().expect("nobody listens");
        assert_eq!(f.kind(), TransportFailure::Connect, "{f}");
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
}
