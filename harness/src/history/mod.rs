//! The history: every attempt the harness made, Jepsen-style, as JSON Lines.
//!
//! Each line is one [`Event`]. Attempts carry everything the checker needs
//! about their delivery (key, job, account, what the harness meant by it,
//! the task's status and creation time), so a history can be checked again
//! later, with nothing else but the receiver's state, and so the checker can
//! stream it instead of holding a million deliveries in memory.
//!
//! An attempt's fields are listed once, in `record`; the event types live
//! in `event`, the transport failures an attempt's
//! `error` records (their kinds and the one writer of their text) in
//! `failure`; `codec` reads and writes them
//! (JSON Lines, a streaming [`fold`] every consumer shares, the checker's
//! fast line scanner and the bench's hand-made attempt lines), so the
//! format lives in one place.
//!
//! Outcomes follow `docs/history.md`: `ok` (a 2xx the harness accepted),
//! `fail` (definitely did not land), `info` (indeterminate: the receiver may
//! or may not have committed it).

mod codec;
mod event;
mod failure;
mod record;
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

pub(crate) use codec::diagnose;
pub(crate) use codec::{encode_attempt, push_dec, AttemptLine};
pub use codec::{
    fold, read, read_numbered, EventSink, Fold, HistoryError, HistorySink, HistoryWriter,
};
pub use event::{
    now_rfc3339, Attempt, BodyChange, Emitted, Event, FaultEvent, Intent, Outcome, ProviderTask,
    Received, RunHeader,
};
pub use failure::{Failure, TransportFailure};
pub(crate) use record::{attempt_fields, refused};

#[cfg(test)]
mod tests {
    use super::{Event, TransportFailure};

    /// Attempt lines as histories written before the failure kinds were
    /// typed hold them: hyper's texts, the copies' and the bench's.
    #[test]
    fn old_histories_errors_are_read_as_the_kinds_they_were() {
        use TransportFailure::*;
        for (error, kind) in [
            ("timeout after 15s", Timeout),
            ("timeout after 5s before the release", Timeout),
            (
                "client error (Connect): tcp connect error: Connection refused (os error 111)",
                Connect,
            ),
            ("tcp connect error: no connection within 2s", Connect),
            ("connect: Connection refused (os error 111)", Connect),
            (
                "client error (SendRequest): connection closed before message completed",
                Other,
            ),
            ("connection closed inside the answer head", Other),
            ("no answer before the bench ended", Other),
        ] {
            let line = format!(
                r#"{{"type":"attempt","scenario":"baseline","delivery":"whd_1","key":"tsk_1","account":"acct_a","attempt":1,"sent_at":"2026-11-30T18:09:59.739Z","status":null,"error":{},"outcome":"info","intent":"genuine"}}"#,
                serde_json::to_string(error).unwrap()
            );
            let Event::Attempt(a) = serde_json::from_str::<Event>(&line).unwrap() else {
                panic!("not an attempt: {line}")
            };
            assert_eq!(a.transport_failure(), Some(kind), "{error}");
        }
    }
}
