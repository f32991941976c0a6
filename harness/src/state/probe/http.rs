//! The HTTP probe: GET a URL that serves the state JSON; POST to the reset,
//! setup and reconcile URLs. Plain HTTP/1.1 over hyper; the URLs are the
//! receiver's admin endpoints, normally on a private address.
//!
//! The state GET asks for JSON Lines first (`Accept: application/x-ndjson`)
//! and reads whichever form the `Content-Type` names, so a receiver that
//! serves only the document needs nothing new. The answer is never
//! collected: its chunks go to a parser on a blocking thread that hands
//! rows to the caller's sink ([`crate::state::stream`]), so a million-row
//! state costs the harness a few buffers, not the whole text.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;

use crate::limits::budget;
use crate::net::tls::TrustedRoots;
use hyper_util::rt::TokioExecutor;

use super::error::ProbeError;
use super::redact::redact_url;
use crate::state::stream::{self, Format, StateSink, JSON_LINES};

/// Where the state is served.
#[derive(Clone)]
pub(crate) struct HttpSource {
    pub url: String,
}

/// Checks that the probe can call this URL.
pub(crate) fn check_url(url: &str) -> Result<(), ProbeError> {
    if !url.starts_with("http://") && !url.starts_with("https://") {
        return Err(ProbeError::Config(format!(
            "{}: expected an http:// or https:// URL",
            redact_url(url)
        )));
    }
    url.parse::<hyper::Uri>()
        .map(|_| ())
        .map_err(|e| ProbeError::Config(format!("{}: not a URL: {e}", redact_url(url))))
}

async fn send(
    method: hyper::Method,
    url: &str,
    token: Option<&str>,
    body: Option<serde_json::Value>,
    accept: Option<&str>,
    roots: &TrustedRoots,
) -> Result<hyper::Response<hyper::body::Incoming>, ProbeError> {
    check_url(url)?;
    let shown = redact_url(url);
    let client = Client::builder(TokioExecutor::new())
        .build::<_, Full<Bytes>>(crate::net::tls::connector(HttpConnector::new(), roots));
    let mut req = Request::builder().method(method.clone()).uri(url);
    if let Some(t) = token {
        req = req.header(hyper::header::AUTHORIZATION, format!("Bearer {t}"));
    }
    if let Some(a) = accept {
        req = req.header(hyper::header::ACCEPT, a);
    }
    let payload = match body {
        Some(b) => {
            req = req.header(hyper::header::CONTENT_TYPE, "application/json");
            Bytes::from(b.to_string())
        }
        None => Bytes::new(),
    };
    let req = req
        .body(Full::new(payload))
        .map_err(|e| ProbeError::Config(format!("{shown}: {e}")))?;
    client
        .request(req)
        .await
        .map_err(|e| ProbeError::Io(format!("{method} {shown}: {e}")))
}

/// The answer up to [`budget::HOOK_ANSWER`], or the status error with its
/// start; a 2xx answer over the budget is an error, an error answer's
/// excess is never read.
async fn collect(
    method: &hyper::Method,
    url: &str,
    resp: hyper::Response<hyper::body::Incoming>,
    cap: usize,
) -> Result<(u16, Bytes), ProbeError> {
    let shown = redact_url(url);
    let status = resp.status().as_u16();
    let capped = budget::read_body(resp.into_body(), cap).await;
    if !(200..300).contains(&status) {
        let bytes = capped.map(|c| c.bytes).unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes);
        let tail: String = text.chars().take(200).collect();
        return Err(ProbeError::Status {
            status,
            message: format!("{method} {shown} answered {status}: {tail}"),
        });
    }
    let capped =
        capped.map_err(|e| ProbeError::Io(format!("{method} {shown}: reading the answer: {e}")))?;
    if capped.over {
        return Err(ProbeError::Invalid(format!(
            "{method} {shown}: the answer exceeded {}; the rest was discarded (hint: a hook answers with a small JSON object or nothing)",
            budget::show(cap)
        )));
    }
    Ok((status, capped.bytes))
}

async fn call(
    method: hyper::Method,
    url: &str,
    token: Option<&str>,
    body: Option<serde_json::Value>,
    roots: &TrustedRoots,
) -> Result<(u16, Bytes), ProbeError> {
    let resp = send(method.clone(), url, token, body, None, roots).await?;
    collect(&method, url, resp, budget::HOOK_ANSWER).await
}

/// GETs a URL and returns its answer, up to `cap` bytes (past it, an error).
pub(crate) async fn get(
    url: &str,
    token: Option<&str>,
    cap: usize,
    roots: &TrustedRoots,
) -> Result<Bytes, ProbeError> {
    let resp = send(hyper::Method::GET, url, token, None, None, roots).await?;
    collect(&hyper::Method::GET, url, resp, cap)
        .await
        .map(|(_, b)| b)
}

/// What the state GET asks for: JSON Lines, else the document.
fn state_accept() -> String {
    format!("{JSON_LINES}, application/json;q=0.9")
}

/// Chunks of an answer, read as `std::io::Read` on a blocking thread.
pub(crate) struct ChunkReader {
    rx: tokio::sync::mpsc::Receiver<Result<Bytes, String>>,
    chunk: Bytes,
}

impl ChunkReader {
    /// A reader and the sender its chunks come from; the reader ends when
    /// the sender is dropped.
    pub fn channel() -> (
        tokio::sync::mpsc::Sender<Result<Bytes, String>>,
        ChunkReader,
    ) {
        let (tx, rx) = tokio::sync::mpsc::channel(16);
        (
            tx,
            ChunkReader {
                rx,
                chunk: Bytes::new(),
            },
        )
    }
}

impl std::io::Read for ChunkReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.chunk.is_empty() {
            match self.rx.blocking_recv() {
                None => return Ok(0),
                Some(Ok(b)) => self.chunk = b,
                Some(Err(e)) => return Err(std::io::Error::other(e)),
            }
        }
        let n = buf.len().min(self.chunk.len());
        buf[..n].copy_from_slice(&self.chunk[..n]);
        let _ = self.chunk.split_to(n);
        Ok(n)
    }
}

/// Parses what `feed` sends into `sink` on a blocking thread while `feed`
/// runs; `what` names the source in errors.
pub(crate) async fn parse_streamed<S, F>(
    format: Option<Format>,
    sink: S,
    what: String,
    feed: impl FnOnce(tokio::sync::mpsc::Sender<Result<Bytes, String>>) -> F,
) -> Result<S, ProbeError>
where
    S: StateSink + Send + 'static,
    F: std::future::Future<Output = Result<(), ProbeError>>,
{
    let (tx, reader) = ChunkReader::channel();
    let parser = tokio::task::spawn_blocking(move || match format {
        Some(f) => stream::read(f, reader, sink),
        None => stream::read_any(reader, sink),
    });
    let fed = feed(tx).await;
    let parsed = parser
        .await
        .map_err(|e| ProbeError::Io(format!("{what}: the state parser failed: {e}")))?;
    fed?;
    parsed.map_err(|e| match e {
        stream::ReadError::Shape { at, message } => ProbeError::Shape { what, at, message },
        stream::ReadError::Keep(why) => ProbeError::Keep(why),
        stream::ReadError::Other(e) => ProbeError::Invalid(format!(
            "{what}: expected the state JSON {{\"inbox\": [...], ...}} (or its JSON Lines form) of docs/state.md: {e}"
        )),
    })
}

impl HttpSource {
    /// GETs the state and streams its rows into `sink`.
    pub async fn read_into<S: StateSink + Send + 'static>(
        &self,
        token: Option<&str>,
        roots: &TrustedRoots,
        sink: S,
    ) -> Result<S, ProbeError> {
        let get = hyper::Method::GET;
        let resp = send(
            get.clone(),
            &self.url,
            token,
            None,
            Some(&state_accept()),
            roots,
        )
        .await?;
        if !resp.status().is_success() {
            return Err(collect(&get, &self.url, resp, budget::HOOK_ANSWER)
                .await
                .unwrap_err());
        }
        let format = resp
            .headers()
            .get(hyper::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map_or(Format::Document, Format::of_content_type);
        let shown = redact_url(&self.url);
        let what = format!("GET {shown}");
        parse_streamed(Some(format), sink, what, |tx| async move {
            let mut body = resp.into_body();
            while let Some(frame) = body.frame().await {
                match frame {
                    Ok(f) => {
                        if let Ok(data) = f.into_data() {
                            if tx.send(Ok(data)).await.is_err() {
                                break; // the parser stopped: its error says why
                            }
                        }
                    }
                    Err(e) => {
                        let why = format!("reading the answer: {e}");
                        let _ = tx.send(Err(why.clone())).await;
                        return Err(ProbeError::Io(format!("GET {shown}: {why}")));
                    }
                }
            }
            Ok(())
        })
        .await
    }
}

/// POSTs a JSON body to an action URL; returns its JSON answer (or text, or null).
pub(crate) async fn post(
    url: &str,
    token: Option<&str>,
    body: serde_json::Value,
    roots: &TrustedRoots,
) -> Result<serde_json::Value, ProbeError> {
    let (_, bytes) = call(hyper::Method::POST, url, token, Some(body), roots).await?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(serde_json::Value::Null);
    }
    Ok(serde_json::from_slice(&bytes).unwrap_or_else(|_| {
        serde_json::Value::String(String::from_utf8_lossy(&bytes).into_owned())
    }))
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use http_body_util::BodyExt;
    use hyper::body::Frame;

    use super::*;
    use crate::net::httpd::{self, AnyBody, Hangup, Server};
    use crate::state::State;

    const DOC: &str =
        r#"{"inbox": [{"key": "t1", "processed": true}, {"key": "t2"}], "effects": []}"#;

    /// Serves `chunks` (then a hangup when `cut`) with `content_type`, and
    /// records the Accept header of each request.
    async fn serve(
        content_type: &'static str,
        chunks: Vec<&'static str>,
        cut: bool,
    ) -> (Server, Arc<Mutex<Vec<String>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let handler: httpd::Handler = Arc::new(move |req| {
            let accept = req
                .headers()
                .get(hyper::header::ACCEPT)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_string();
            log.lock().unwrap().push(accept);
            let mut frames: Vec<Result<Frame<Bytes>, Hangup>> = chunks
                .iter()
                .map(|c| Ok(Frame::data(Bytes::from_static(c.as_bytes()))))
                .collect();
            if cut {
                frames.push(Err(Hangup("cut".into())));
            }
            Box::pin(async move {
                let body: AnyBody =
                    http_body_util::StreamBody::new(futures_util::stream::iter(frames)).boxed();
                let mut r = hyper::Response::new(body);
                r.headers_mut().insert(
                    hyper::header::CONTENT_TYPE,
                    hyper::header::HeaderValue::from_static(content_type),
                );
                Ok(r)
            })
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        (Server::spawn(listener, handler).unwrap(), seen)
    }

    async fn read(server: &Server) -> Result<State, ProbeError> {
        let src = HttpSource {
            url: format!("http://{}/state", server.addr()),
        };
        src.read_into(None, &TrustedRoots::default(), State::default())
            .await
    }

    #[tokio::test]
    async fn the_state_get_asks_for_json_lines_and_reads_a_document_answer() {
        // In pieces that split rows and keys: the parser reads across chunks.
        let (server, seen) = serve(
            "application/json",
            vec![&DOC[..20], &DOC[20..51], &DOC[51..]],
            false,
        )
        .await;
        let s = read(&server).await.unwrap();
        assert_eq!(s, serde_json::from_str::<State>(DOC).unwrap());
        assert!(seen.lock().unwrap()[0].starts_with(JSON_LINES));
        server.stop().await;
    }

    #[tokio::test]
    async fn a_json_lines_answer_is_read_row_by_row() {
        let lines = "{\"sections\":[\"inbox\",\"effects\"]}\n{\"inbox\":{\"key\":\"t1\",\"processed\":true}}\n{\"inbox\":{\"key\":\"t2\"}}\n";
        let (server, _) = serve(JSON_LINES, vec![&lines[..40], &lines[40..]], false).await;
        let s = read(&server).await.unwrap();
        assert_eq!(s, serde_json::from_str::<State>(DOC).unwrap());
        server.stop().await;
    }

    #[tokio::test]
    async fn a_state_answer_cut_off_is_an_error_not_a_shorter_state() {
        // Cut right after a whole line: as JSON Lines it would parse.
        let lines = "{\"sections\":[\"inbox\"]}\n{\"inbox\":{\"key\":\"t1\",\"processed\":true}}\n";
        let (server, _) = serve(JSON_LINES, vec![lines], true).await;
        let e = read(&server).await.unwrap_err();
        assert!(matches!(e, ProbeError::Io(_)), "{e}");
        server.stop().await;
    }

    #[tokio::test]
    async fn a_bad_state_names_what_was_expected() {
        let (server, _) = serve(
            "application/json",
            vec![r#"{"inbox": [], "inbx": []}"#],
            false,
        )
        .await;
        let e = read(&server).await.unwrap_err().to_string();
        assert!(
            e.contains("unknown field `inbx`") && e.contains("docs/state.md"),
            "{e}"
        );
        server.stop().await;
    }
}
