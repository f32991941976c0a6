//! The history: every attempt the harness made, Jepsen-style, as JSON Lines.
//!
//! Each line is one [`Event`]. Attempts carry everything the checker needs
//! about their delivery (key, job, account, what the harness meant by it,
//! the task's status and creation time), so a history can be checked again
//! later, with nothing else but the receiver's state, and so the checker can
//! stream it instead of holding a million deliveries in memory.
//!
//! The event types live in `event`; `codec` reads and writes them
//! (JSON Lines, a streaming [`fold`] every consumer shares, the checker's
//! fast line scanner and the bench's hand-made attempt lines), so the
//! format lives in one place.
//!
//! Outcomes follow `docs/history.md`: `ok` (a 2xx the harness accepted),
//! `fail` (definitely did not land), `info` (indeterminate: the receiver may
//! or may not have committed it).

mod codec;
mod event;
pub(crate) mod scan;

/// Runs the checker's fast line scanner on `line` and, when it reads the
/// line, checks that serde reads it too: the fuzz target's entry point.
#[doc(hidden)]
pub fn fuzz_scan(line: &str) {
    if scan::parse(line).is_some() {
        assert!(
            serde_json::from_str::<scan::RawLine<'_>>(line).is_ok(),
            "the fast path read a line serde refuses: {line:?}"
        );
    }
}

pub(crate) use codec::{encode_attempt, push_dec, AttemptLine};
pub use codec::{fold, read, read_numbered, Fold, HistoryError, HistorySink, HistoryWriter};
pub use event::{
    now_rfc3339, Attempt, Event, FaultEvent, Intent, Outcome, ProviderTask, RunHeader,
    TransportFailure,
};

#[cfg(test)]
mod tests {
    use super::TransportFailure;

    #[test]
    fn transport_failures_are_told_apart_by_kind() {
        let of = TransportFailure::of;
        assert_eq!(of("timeout after 15s"), TransportFailure::Timeout);
        assert_eq!(
            of("client error (Connect): tcp connect error: Connection refused (os error 111)"),
            TransportFailure::Connect
        );
        assert_eq!(
            of("connection closed before message completed"),
            TransportFailure::Other
        );
        assert_eq!(of("connection reset by peer"), TransportFailure::Other);
    }
}
