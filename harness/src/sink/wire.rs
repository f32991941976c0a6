//! HTTP/1.1 on the sink's sockets, by hand: the sink must do what a
//! server library hides on purpose — reset a connection after reading a
//! request, hold one without an answer and see the moment the client
//! gives up, and note when a request's first byte arrived. One request
//! per connection: every answer closes it (`Connection: close`), which
//! every HTTP client handles.

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The most headers a request may carry.
const MAX_HEADERS: usize = 96;

/// One request as it arrived.
#[derive(Debug)]
pub(crate) struct Request {
    /// The method.
    pub method: String,
    /// The path (and query).
    pub path: String,
    /// The headers, as sent.
    pub headers: Vec<(String, String)>,
    /// The body, de-chunked.
    pub body: Vec<u8>,
    /// When its first byte arrived.
    pub first_byte: Instant,
    /// The wall clock then (unix seconds).
    pub first_byte_unix: f64,
}

/// Why no request could be read.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// The connection closed before a whole request.
    Closed,
    /// Over the budget: (when the first byte came, its wall clock).
    TooLarge(Instant, f64),
    /// Not HTTP/1.1 as a client writes it.
    Malformed(String),
}

fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or_default()
}

/// Reads one request, its body up to `cap` bytes with the head.
pub(crate) async fn read_request(stream: &mut TcpStream, cap: usize) -> Result<Request, ReadError> {
    let mut buf: Vec<u8> = Vec::with_capacity(4096);
    let mut first: Option<(Instant, f64)> = None;
    let head_end = loop {
        if let Some(i) = find(&buf, b"\r\n\r\n") {
            break i + 4;
        }
        more(stream, &mut buf).await?;
        first.get_or_insert_with(|| (Instant::now(), unix_now()));
        if buf.len() > cap {
            let (t, u) = first.expect("set above");
            return Err(ReadError::TooLarge(t, u));
        }
    };
    let (first_byte, first_byte_unix) = first.expect("a head has bytes");
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(&buf[..head_end]) {
        Ok(httparse::Status::Complete(_)) => {}
        Ok(httparse::Status::Partial) => return Err(ReadError::Malformed("a cut head".into())),
        Err(e) => return Err(ReadError::Malformed(e.to_string())),
    }
    let method = req.method.unwrap_or_default().to_string();
    let path = req.path.unwrap_or_default().to_string();
    let headers: Vec<(String, String)> = req
        .headers
        .iter()
        .map(|h| {
            (
                h.name.to_string(),
                String::from_utf8_lossy(h.value).into_owned(),
            )
        })
        .collect();
    let header = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim().to_string())
    };
    let mut rest = buf.split_off(head_end);
    let chunked =
        header("transfer-encoding").is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    let body = if chunked {
        loop {
            match dechunk(&rest) {
                Chunks::Done(body) => break body,
                Chunks::Bad(why) => return Err(ReadError::Malformed(why)),
                Chunks::More => {}
            }
            more(stream, &mut rest).await?;
            if head_end + rest.len() > cap {
                return Err(ReadError::TooLarge(first_byte, first_byte_unix));
            }
        }
    } else {
        let len: usize = match header("content-length") {
            None => 0,
            Some(v) => v
                .parse()
                .map_err(|_| ReadError::Malformed(format!("Content-Length {v:?}")))?,
        };
        if head_end + len > cap {
            return Err(ReadError::TooLarge(first_byte, first_byte_unix));
        }
        while rest.len() < len {
            more(stream, &mut rest).await?;
        }
        rest.truncate(len);
        rest
    };
    Ok(Request {
        method,
        path,
        headers,
        body,
        first_byte,
        first_byte_unix,
    })
}

/// Reads what has arrived onto `buf`; a closed connection is [`ReadError::Closed`].
async fn more(stream: &mut TcpStream, buf: &mut Vec<u8>) -> Result<(), ReadError> {
    let mut chunk = [0u8; 8192];
    let n = stream
        .read(&mut chunk)
        .await
        .map_err(|_| ReadError::Closed)?;
    if n == 0 {
        return Err(ReadError::Closed);
    }
    buf.extend_from_slice(&chunk[..n]);
    Ok(())
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

enum Chunks {
    Done(Vec<u8>),
    More,
    Bad(String),
}

/// A chunked body, when all of it is in `buf`.
fn dechunk(buf: &[u8]) -> Chunks {
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        let Some(eol) = find(&buf[i..], b"\r\n") else {
            return Chunks::More;
        };
        let line = String::from_utf8_lossy(&buf[i..i + eol]);
        let size = line.split(';').next().unwrap_or_default().trim();
        let Ok(size) = usize::from_str_radix(size, 16) else {
            return Chunks::Bad(format!("chunk size {size:?}"));
        };
        i += eol + 2;
        if size == 0 {
            // Trailers end with an empty line.
            return match find(&buf[i..], b"\r\n") {
                Some(_) => Chunks::Done(out),
                None => Chunks::More,
            };
        }
        if buf.len() < i + size + 2 {
            return Chunks::More;
        }
        out.extend_from_slice(&buf[i..i + size]);
        i += size + 2;
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        202 => "Accepted",
        204 => "No Content",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        413 => "Content Too Large",
        422 => "Unprocessable Content",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}

/// Writes an answer and closes; `false` when the client had gone.
pub(crate) async fn answer(
    stream: &mut TcpStream,
    status: u16,
    headers: &[(String, String)],
) -> bool {
    let body: &[u8] = if status == 204 { b"" } else { b"{}" };
    let mut head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Length: {}\r\nConnection: close\r\n",
        reason(status),
        body.len()
    );
    if status != 204 {
        head.push_str("Content-Type: application/json\r\n");
    }
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(body);
    let ok = stream.write_all(&bytes).await.is_ok() && stream.flush().await.is_ok();
    let _ = stream.shutdown().await;
    ok
}

/// Resets the connection: no answer, a RST instead of a FIN (a zero
/// linger, then the socket closed when the caller drops it).
pub(crate) fn reset(stream: &mut TcpStream) {
    let _ = stream.set_zero_linger();
}

/// Waits until the client closes the connection or `limit` passes;
/// `true` when the client closed it.
pub(crate) async fn until_closed(stream: &mut TcpStream, limit: Duration) -> bool {
    let mut buf = [0u8; 1024];
    let wait = async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    };
    tokio::time::timeout(limit, wait).await.is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunked_body_is_read_whole_or_asked_for_more() {
        let full = b"5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\n\r\n";
        match dechunk(full) {
            Chunks::Done(b) => assert_eq!(b, b"hello world"),
            _ => panic!("not done"),
        }
        assert!(matches!(dechunk(&full[..12]), Chunks::More));
        assert!(matches!(dechunk(b"zz\r\n"), Chunks::Bad(_)));
    }

    #[tokio::test]
    async fn a_request_is_read_with_its_body_and_answered() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let client = tokio::spawn(async move {
            let mut s = TcpStream::connect(addr).await.unwrap();
            s.write_all(b"POST /hooks/acct_a HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
                .await
                .unwrap();
            let mut out = Vec::new();
            s.read_to_end(&mut out).await.unwrap();
            String::from_utf8(out).unwrap()
        });
        let (mut s, _) = listener.accept().await.unwrap();
        let req = read_request(&mut s, 1 << 20).await.unwrap();
        assert_eq!(
            (req.method.as_str(), req.path.as_str()),
            ("POST", "/hooks/acct_a")
        );
        assert_eq!(req.body, b"{}");
        assert!(answer(&mut s, 503, &[("Retry-After".into(), "60".into())]).await);
        let text = client.await.unwrap();
        assert!(
            text.starts_with("HTTP/1.1 503 Service Unavailable\r\n"),
            "{text}"
        );
        assert!(text.contains("Retry-After: 60\r\n"), "{text}");
    }
}
