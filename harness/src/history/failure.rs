//! Transport failures: the kind of failure an attempt's `error` text
//! records, and the one writer and the one reader of that text.
//!
//! The kind is decided where the failure happens (the sender's exchange
//! from hyper's typed error, the concurrent copies and the bench's
//! connections from the step that failed) and travels as a [`Failure`].
//! The history keeps only its text (`docs/history.md`), so the checker
//! gets the kind back with [`TransportFailure::of`]. Writer and reader use
//! one table of prefixes, so every failure's text reads back as its kind
//! (a unit test goes round every kind). Texts written before the kinds
//! were typed (hyper's `client error (Connect): tcp connect error: …`,
//! anything that says `timed out`) carry none of the prefixes but
//! `timeout after` and `cannot build the request:`; they are still read
//! by the words they hold, as they always were.

use std::fmt;
use std::time::Duration;

use crate::text::units::format_duration;

/// The kind of transport failure an attempt's `error` records: the
/// history keeps the text, this is what the checker asks of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransportFailure {
    /// No answer within the time limit.
    Timeout,
    /// No connection could be made (TCP or TLS): nothing was sent.
    Connect,
    /// The request could not be built: nothing was sent.
    Request,
    /// Anything else (reset, closed, not HTTP): the request may have landed.
    Other,
}

/// Each kind's text prefix: what the writer puts before the detail and
/// the reader recognises. `Other`'s is written only when the bare detail
/// would read as another kind.
const PREFIXES: [(TransportFailure, &str); 4] = [
    (TransportFailure::Timeout, "timeout after "),
    (TransportFailure::Connect, "connect error: "),
    (TransportFailure::Request, "cannot build the request: "),
    (TransportFailure::Other, "transport error: "),
];

impl TransportFailure {
    /// The kind of an attempt's error text.
    pub fn of(error: &str) -> TransportFailure {
        PREFIXES
            .iter()
            .find(|(_, prefix)| error.starts_with(prefix))
            .map_or_else(|| legacy(error), |(kind, _)| *kind)
    }

    /// Whether nothing reached the receiver (no connection, no request).
    pub fn nothing_sent(self) -> bool {
        matches!(self, TransportFailure::Connect | TransportFailure::Request)
    }

    fn prefix(self) -> &'static str {
        PREFIXES
            .iter()
            .find(|(kind, _)| *kind == self)
            .map(|(_, prefix)| *prefix)
            .expect("every kind has a prefix")
    }
}

/// The kind of a text without a prefix, by the words the sender and hyper
/// wrote before the kinds were typed (hyper's `client error (Connect):
/// tcp connect error: …`, the copies' `tcp connect error: …`, an OS error
/// that `timed out` or says `connection refused`), exactly as they were
/// read then; anything else is `Other`.
fn legacy(error: &str) -> TransportFailure {
    let e = error.to_ascii_lowercase();
    if e.contains("timeout") || e.contains("timed out") {
        TransportFailure::Timeout
    } else if e.contains("(connect)")
        || e.contains("connect error")
        || e.contains("connection refused")
    {
        // A "connection closed …" after the request went out is not one.
        TransportFailure::Connect
    } else {
        TransportFailure::Other
    }
}

/// A transport failure: its kind, decided where it happened, and its text
/// as the history records it (written here, once).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    kind: TransportFailure,
    text: String,
    /// Where the detail starts in `text` (after the kind's prefix).
    detail: usize,
}

impl Failure {
    /// A failure of `kind`; `detail` says what happened (for a timeout,
    /// the limit and what it was waiting for: `15s`, `5s before the release`).
    pub fn new(kind: TransportFailure, detail: impl Into<String>) -> Failure {
        let detail = detail.into();
        let bare = kind == TransportFailure::Other && TransportFailure::of(&detail) == kind;
        if bare {
            return Failure {
                kind,
                text: detail,
                detail: 0,
            };
        }
        let prefix = kind.prefix();
        Failure {
            kind,
            text: format!("{prefix}{detail}"),
            detail: prefix.len(),
        }
    }

    /// No answer within `limit`.
    pub fn timeout(limit: Duration) -> Failure {
        Failure::new(TransportFailure::Timeout, format_duration(limit))
    }

    /// Any other failure (reset, closed, not HTTP).
    pub fn other(detail: impl Into<String>) -> Failure {
        Failure::new(TransportFailure::Other, detail)
    }

    /// Its kind.
    pub fn kind(&self) -> TransportFailure {
        self.kind
    }

    /// Whether nothing reached the receiver (see [`TransportFailure::nothing_sent`]).
    pub fn nothing_sent(&self) -> bool {
        self.kind.nothing_sent()
    }

    /// The history's `error` text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// What happened, without the kind's prefix.
    pub fn detail(&self) -> &str {
        &self.text[self.detail..]
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KINDS: [TransportFailure; 4] = [
        TransportFailure::Timeout,
        TransportFailure::Connect,
        TransportFailure::Request,
        TransportFailure::Other,
    ];

    #[test]
    fn every_kind_reads_back_from_the_text_it_writes() {
        for kind in KINDS {
            for detail in [
                "",
                "15s",
                "Connection refused (os error 111)",
                "client error (SendRequest): Connection timed out (os error 110)",
                "connection closed before message completed",
                "timeout after 3s",
                "connect error: x",
                "cannot build the request: x",
                "transport error: x",
                "client error (Connect)",
            ] {
                let f = Failure::new(kind, detail);
                assert_eq!(TransportFailure::of(f.text()), kind, "{kind:?} {detail:?}");
                assert_eq!(f.detail(), detail, "{kind:?}");
                assert_eq!(f.to_string(), f.text());
            }
        }
    }

    #[test]
    fn each_kind_writes_its_own_words() {
        let t = |f: Failure| f.text().to_string();
        assert_eq!(
            t(Failure::timeout(Duration::from_secs(15))),
            "timeout after 15s"
        );
        assert_eq!(
            t(Failure::new(
                TransportFailure::Timeout,
                "5s before the release"
            )),
            "timeout after 5s before the release"
        );
        assert_eq!(
            t(Failure::new(
                TransportFailure::Connect,
                "tcp connect error: Connection refused (os error 111)"
            )),
            "connect error: tcp connect error: Connection refused (os error 111)"
        );
        assert_eq!(
            t(Failure::new(TransportFailure::Request, "bad header")),
            "cannot build the request: bad header"
        );
        // Other keeps its detail bare unless that would read as another kind.
        assert_eq!(
            t(Failure::other("connection closed before the status line")),
            "connection closed before the status line"
        );
        assert_eq!(
            t(Failure::other("Connection timed out (os error 110)")),
            "transport error: Connection timed out (os error 110)"
        );
    }

    #[test]
    fn texts_written_before_the_kinds_were_typed_read_as_they_did() {
        use TransportFailure::*;
        for (text, kind) in [
            ("timeout after 15s", Timeout),
            ("timeout after 5s before the release", Timeout),
            (
                "client error (SendRequest): Connection timed out (os error 110)",
                Timeout,
            ),
            (
                "client error (Connect): tcp connect error: Connection refused (os error 111)",
                Connect,
            ),
            (
                "client error (Connect): invalid peer certificate: UnknownIssuer",
                Connect,
            ),
            ("tcp connect error: no connection within 2s", Connect),
            ("connect: Connection refused (os error 111)", Connect),
            ("connection refused", Connect),
            ("tls handshake: received fatal alert", Other),
            (
                "client error (SendRequest): connection closed before message completed",
                Other,
            ),
            ("connection closed before message completed", Other),
            ("connection reset by peer", Other),
            ("malformed answer: status line \"SSH-2.0\"", Other),
            ("no answer before the bench ended", Other),
            ("held back: this attempt was not sent", Other),
        ] {
            assert_eq!(TransportFailure::of(text), kind, "{text}");
        }
    }

    #[test]
    fn only_connect_and_request_failures_sent_nothing() {
        let sent: Vec<bool> = KINDS.iter().map(|k| k.nothing_sent()).collect();
        assert_eq!(sent, [false, true, true, false]);
    }
}
