//! The state answer as a streamed HTTP body: rows come from the store's
//! state stream ([`crate::store::feed`]) and leave encoded (the JSON
//! document, or JSON Lines) in chunks of at least [`CHUNK`] bytes (up to
//! one batch of rows more), so the receiver serves a million-row state in
//! the memory of a few batches.
//!
//! A read that fails midway, or stops without its end, ends the body with
//! an error: the connection is cut before the last chunk, so a client sees
//! a broken answer, never a short state.

use std::pin::Pin;
use std::task::{ready, Context, Poll};

use bytes::Bytes;
use hookstorm::state::stream::{JsonWriter, LinesWriter, Section, StateSink};
use hyper::body::{Body, Frame};
use tokio::sync::mpsc;

use crate::error::StoreError;
use crate::store::Feed;

/// Bytes gathered before a chunk is sent (checked after each batch).
pub const CHUNK: usize = 64 * 1024;

/// The encodings the admin API serves.
enum Encoder {
    Json(JsonWriter<Vec<u8>>),
    Lines(LinesWriter<Vec<u8>>),
}

impl Encoder {
    fn sink(&mut self) -> &mut dyn StateSink {
        match self {
            Encoder::Json(w) => w,
            Encoder::Lines(w) => w,
        }
    }

    fn buf(&mut self) -> &mut Vec<u8> {
        match self {
            Encoder::Json(w) => w.get_mut(),
            Encoder::Lines(w) => w.get_mut(),
        }
    }
}

/// The body of a `GET /state` answer.
pub struct StateBody {
    rx: mpsc::Receiver<Result<Feed, StoreError>>,
    encoder: Encoder,
    done: bool,
}

impl StateBody {
    /// Encodes what `rx` brings, as JSON Lines when `lines`; `first` is
    /// the stream's first item, already taken (the caller waits for it to
    /// know that the read began).
    pub fn new(
        first: Feed,
        rx: mpsc::Receiver<Result<Feed, StoreError>>,
        lines: bool,
    ) -> std::io::Result<StateBody> {
        let buf = Vec::with_capacity(CHUNK);
        let encoder = if lines {
            // The receiver always reports every section, empty ones too.
            Encoder::Lines(LinesWriter::new(buf, &Section::ALL)?)
        } else {
            Encoder::Json(JsonWriter::new(buf))
        };
        let mut body = StateBody {
            rx,
            encoder,
            done: false,
        };
        body.encode(first).map_err(std::io::Error::other)?;
        Ok(body)
    }

    /// Encodes one item; [`Feed::End`] closes the document.
    fn encode(&mut self, feed: Feed) -> Result<(), hookstorm::state::stream::SinkError> {
        let sink = self.encoder.sink();
        match feed {
            Feed::Section(s) => sink.section(s),
            Feed::Rows(rows) => rows.into_iter().try_for_each(|r| sink.row(r)),
            Feed::End => {
                self.done = true;
                sink.finish()
            }
        }
    }

    /// Ends the body with an error: nothing more is sent, so the client
    /// sees the answer cut, not ended.
    fn fail(&mut self, why: String) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        self.done = true;
        self.encoder.buf().clear();
        Poll::Ready(Some(Err(std::io::Error::other(why))))
    }

    fn take(&mut self) -> Frame<Bytes> {
        let buf = self.encoder.buf();
        let chunk = std::mem::replace(buf, Vec::with_capacity(CHUNK));
        Frame::data(Bytes::from(chunk))
    }
}

impl Body for StateBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        let this = self.get_mut();
        loop {
            if this.encoder.buf().len() >= CHUNK {
                return Poll::Ready(Some(Ok(this.take())));
            }
            if this.done {
                return Poll::Ready((!this.encoder.buf().is_empty()).then(|| Ok(this.take())));
            }
            match ready!(this.rx.poll_recv(cx)) {
                Some(Ok(feed)) => {
                    if let Err(e) = this.encode(feed) {
                        return this.fail(e.to_string());
                    }
                }
                Some(Err(e)) => return this.fail(e.to_string()),
                // No end and no error: the read stopped (panicked, was
                // cancelled) before its snapshot was whole.
                None => return this.fail("the state read stopped before its end".into()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hookstorm::state::stream::Row;
    use hookstorm::state::InboxRow;
    use http_body_util::BodyExt;

    fn rows(n: usize) -> Feed {
        Feed::Rows(
            (0..n)
                .map(|i| {
                    Row::Inbox(InboxRow {
                        key: format!("tsk_{i:06}"),
                        account: Some("acct_a".into()),
                        processed: true,
                        error: None,
                    })
                })
                .collect(),
        )
    }

    /// Serves one answer whose body is fed by `items` over a real socket
    /// and returns what the client got.
    async fn fetch(items: Vec<Result<Feed, StoreError>>, lines: bool) -> Result<Bytes, String> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let (stream, _) = listener.accept().await.unwrap();
            let (tx, rx) = mpsc::channel(crate::store::FEED_DEPTH);
            tokio::spawn(async move {
                for i in items {
                    if tx.send(i).await.is_err() {
                        break;
                    }
                }
            });
            let rx = std::sync::Mutex::new(Some(rx));
            let svc = hyper::service::service_fn(move |_req| {
                let mut rx = rx.lock().unwrap().take().expect("one request");
                async move {
                    let first = rx.recv().await.unwrap().unwrap();
                    let body = StateBody::new(first, rx, lines).unwrap();
                    Ok::<_, std::convert::Infallible>(hyper::Response::new(body))
                }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
                .await;
        });
        let client =
            hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
                .build_http::<http_body_util::Empty<Bytes>>();
        let uri: http::Uri = format!("http://{addr}/state").parse().unwrap();
        let answer = client.get(uri).await.map_err(|e| e.to_string())?;
        let body = answer.into_body().collect().await;
        server.abort();
        body.map(|b| b.to_bytes()).map_err(|e| e.to_string())
    }

    #[tokio::test]
    async fn a_state_of_several_chunks_arrives_whole_over_a_socket_in_both_forms() {
        let items = || {
            let mut v = vec![
                Ok(Feed::Section(Section::Inbox)),
                Ok(rows(3000)),
                Ok(rows(3000)),
            ];
            // Empty sections are reported too.
            v.extend(Section::ALL[1..].iter().map(|s| Ok(Feed::Section(*s))));
            v.push(Ok(Feed::End));
            v
        };
        let doc = fetch(items(), false).await.expect("a whole answer");
        assert!(doc.len() > 2 * CHUNK, "{} bytes", doc.len());
        let doc: hookstorm::state::State = serde_json::from_slice(&doc).expect("parses");
        assert_eq!(doc.inbox.len(), 6000);
        assert_eq!(doc.results, Some(vec![]));
        let lines = fetch(items(), true).await.expect("a whole answer");
        let lines =
            hookstorm::state::stream::read_lines(&lines[..], hookstorm::state::State::default())
                .expect("parses");
        assert_eq!(lines, doc);
    }

    #[tokio::test]
    async fn a_read_that_fails_midway_cuts_the_answer_instead_of_ending_it() {
        let items = vec![
            Ok(Feed::Section(Section::Inbox)),
            Ok(rows(3000)),
            Err(StoreError::Unavailable("the database went away".into())),
        ];
        let got = fetch(items, false).await;
        assert!(
            got.is_err(),
            "a failed read was served as a complete answer"
        );
    }

    #[tokio::test]
    async fn a_read_that_stops_without_its_end_cuts_the_answer() {
        // What a panicked or cancelled read leaves: the channel closes.
        let items = || vec![Ok(Feed::Section(Section::Inbox)), Ok(rows(10))];
        for lines in [false, true] {
            let got = fetch(items(), lines).await;
            assert!(got.is_err(), "lines {lines}: a cut read was served whole");
        }
    }
}
