//! A deliberately plain HTTP/1.1 server for the foreign receivers: a fixed
//! pool of worker threads that all `accept` on one blocking listener (the
//! pre-forking shape of gunicorn's sync workers or a servlet pool), one
//! request per connection, answered with `Connection: close`. Nothing here
//! comes from the reference receiver or from hyper: that is the point.
//!
//! A handler returns a [`Reply`]: a normal answer, raw bytes (garbage),
//! a connection closed before or inside the status line, or a hang.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The largest body the foreign receivers read (1 MiB, like the reference one).
pub const MAX_BODY: usize = 1 << 20;

/// One parsed request.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// The declared body was over [`MAX_BODY`]; it was not read.
    pub too_large: bool,
}

impl Request {
    /// A header's value (name compared without case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON, if it is JSON.
    pub fn json(&self) -> Option<serde_json::Value> {
        serde_json::from_slice(&self.body).ok()
    }

    /// The last path segment (the account in `/webhooks/{account}`).
    pub fn last_segment(&self) -> &str {
        self.path
            .split('?')
            .next()
            .unwrap_or_default()
            .rsplit('/')
            .next()
            .unwrap_or_default()
    }
}

/// What a handler wants sent back.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A well-formed answer.
    Status(u16, String),
    /// These bytes as they are, then close (a non-HTTP answer).
    Raw(Vec<u8>),
    /// Close the connection without a byte.
    Close,
    /// Wait this long without answering, then close.
    #[allow(dead_code)]
    Hang(Duration),
}

impl Reply {
    /// An empty answer with this status.
    pub fn status(code: u16) -> Reply {
        Reply::Status(code, String::new())
    }

    /// A JSON answer.
    pub fn json(v: &serde_json::Value) -> Reply {
        Reply::Status(200, v.to_string())
    }
}

type Handler = dyn Fn(&Request) -> Reply + Send + Sync;

/// A running server; stopped (threads joined) on drop.
pub struct Server {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    workers: Vec<JoinHandle<()>>,
}

impl Server {
    /// Binds 127.0.0.1:0 and starts `threads` workers calling `handler`.
    pub fn start(
        threads: usize,
        handler: impl Fn(&Request) -> Reply + Send + Sync + 'static,
    ) -> Server {
        Server::start_on("127.0.0.1:0", threads, handler)
    }

    /// Like [`Server::start`] on a given address.
    pub fn start_on(
        addr: &str,
        threads: usize,
        handler: impl Fn(&Request) -> Reply + Send + Sync + 'static,
    ) -> Server {
        let listener = TcpListener::bind(addr).expect("bind the foreign receiver");
        let addr = listener.local_addr().expect("local addr");
        let listener = Arc::new(listener);
        let stop = Arc::new(AtomicBool::new(false));
        let handler: Arc<Handler> = Arc::new(handler);
        let workers = (0..threads.max(1))
            .map(|_| {
                let (listener, stop, handler) = (listener.clone(), stop.clone(), handler.clone());
                std::thread::spawn(move || {
                    while let Ok((stream, _)) = listener.accept() {
                        if stop.load(Ordering::SeqCst) {
                            break;
                        }
                        serve(stream, &*handler);
                    }
                })
            })
            .collect();
        Server {
            addr,
            stop,
            workers,
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        for _ in &self.workers {
            // Wake every worker blocked in accept.
            let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
        }
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

fn serve(stream: TcpStream, handler: &Handler) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(20)));
    let Some(req) = read_request(&stream) else {
        return;
    };
    let mut out = stream;
    match handler(&req) {
        Reply::Status(code, body) => {
            let ctype = if body.starts_with('{') || body.starts_with('[') {
                "application/json"
            } else {
                "text/plain"
            };
            let head = format!(
                "HTTP/1.1 {code} {}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                reason(code),
                body.len()
            );
            let _ = out.write_all(head.as_bytes());
            let _ = out.write_all(body.as_bytes());
        }
        Reply::Raw(bytes) => {
            let _ = out.write_all(&bytes);
        }
        Reply::Close => {}
        Reply::Hang(d) => std::thread::sleep(d),
    }
    let _ = out.flush();
    let _ = out.shutdown(std::net::Shutdown::Both);
}

fn reason(code: u16) -> &'static str {
    match code {
        200 => "OK",
        204 => "No Content",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        409 => "Conflict",
        413 => "Payload Too Large",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

fn read_request(stream: &TcpStream) -> Option<Request> {
    let mut r = BufReader::new(stream);
    let mut line = String::new();
    r.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let path = parts.next()?.to_string();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if r.read_line(&mut h).ok()? == 0 {
            return None;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (k, v) = h.split_once(':')?;
        headers.push((k.trim().to_string(), v.trim().to_string()));
    }
    let len: usize = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let too_large = len > MAX_BODY;
    let mut body = vec![0; if too_large { 0 } else { len }];
    r.read_exact(&mut body).ok()?;
    Some(Request {
        method,
        path,
        headers,
        body,
        too_large,
    })
}

/// The answerline signature check, written from the contract as another
/// team would: `Webhook-Signature: t=<unix>,v1=<hex>[,v1=…]`, HMAC-SHA256
/// over `"<t>.<body>"`, 300 s tolerance either way.
pub fn verify_answerline(secret: &[u8], req: &Request) -> bool {
    let Some(header) = req.header("webhook-signature") else {
        return false;
    };
    let mut t = None;
    let mut sigs = Vec::new();
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", v)) => t = v.parse::<i64>().ok(),
            Some(("v1", v)) => sigs.push(v.to_string()),
            _ => {}
        }
    }
    let Some(t) = t else { return false };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or_default();
    if (now - t).abs() > 300 {
        return false;
    }
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("any key length");
    mac.update(format!("{t}.").as_bytes());
    mac.update(&req.body);
    let expected = hex::encode(mac.finalize().into_bytes());
    sigs.iter().any(|s| s.eq_ignore_ascii_case(&expected))
}

/// A blocking GET with a bearer token, as a reconciliation job would make
/// it: `(status, body)`, or `None` when the exchange failed.
pub fn http_get(base: &str, path: &str, bearer: &str) -> Option<(u16, String)> {
    let host = base.trim_start_matches("http://").trim_end_matches('/');
    let mut s = TcpStream::connect(host).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {bearer}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).ok()?;
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text.split_once("\r\n\r\n")?;
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    let chunked = head.lines().any(|l| {
        l.to_ascii_lowercase()
            .starts_with("transfer-encoding: chunked")
    });
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_string()
    };
    Some((status, body))
}

fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || after.len() < n {
            break;
        }
        out.push_str(&after[..n]);
        rest = after[n..].trim_start_matches("\r\n");
    }
    out
}
