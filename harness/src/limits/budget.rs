//! The byte budget of every read from outside the harness.
//!
//! Everything hookstorm reads from a peer or a file it did not write is
//! either streamed (the state, large by nature: one row at a time, each row
//! capped) or read up to a cap and reported past it ("the receiver's answer
//! exceeded 64 KiB; the rest was discarded"). The numbers live here and
//! only here, each with the table row of `docs/budgets.md` it stands for;
//! a test renders [`TABLE`] and compares it with that file, so the docs
//! and the code cannot drift apart. A hostile receiver, state endpoint,
//! hook or file therefore costs at most these bytes, not its own size.

use std::io::Read;
use std::path::Path;

use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;

/// A receiver's answer to a delivery, read by the sender and passed on by
/// the fault front: the rest is discarded, never held.
pub const RECEIVER_ANSWER: usize = 64 * 1024;

/// An answer of a state, reset, setup or reconcile URL that is not the
/// state itself (an error status, a hook's JSON).
pub const HOOK_ANSWER: usize = 64 * 1024;

/// A hook or action command's standard output (its JSON answer).
pub const COMMAND_OUTPUT: usize = 1024 * 1024;

/// The end of a failing command's standard error kept for its message.
pub const COMMAND_STDERR: usize = 64 * 1024;

/// A request a sender under test makes to the sink (`hookstorm sink`):
/// its head and body together.
pub const SINK_REQUEST: usize = 1024 * 1024;

/// A sender's outbox listing (`hookstorm sink`), from its URL or command.
pub const OUTBOX_LISTING: usize = 1024 * 1024;

/// One row of the state (one JSON Lines line, or one row of the
/// document form); the state as a whole is streamed row by row.
pub const STATE_ROW: usize = 1024 * 1024;

/// The rows of one state a run holds whole (its `State`: for the checker,
/// the late rows and the settle wait), counted as held (each row's size
/// and its strings'), for a run of up to [`STATE_HELD`] /
/// [`STATE_HELD_PER_DELIVERY`] = 65,536 planned deliveries; a larger run
/// may hold [`STATE_HELD_PER_DELIVERY`] a delivery ([`state_held`]). A
/// run holds at most two at once (the last read and the next, while it
/// waits for the state to settle).
pub const STATE_HELD: usize = 64 * 1024 * 1024;

/// What a planned delivery's rows may take in a state held whole: an
/// inbox and a results row take about 400 bytes held; this leaves room
/// for the other sections. Part of [`DELIVERY_COST`].
pub const STATE_HELD_PER_DELIVERY: usize = 1024;

/// What the checker keeps of one state row in a check in partitions (its
/// ids, its place, its share of the state's indexes), measured: a check
/// of 44.7 million inbox rows of one key peaked at 1.42 GB, about 32
/// bytes a row. With [`state_held`] it caps the rows one partition grades.
pub const CHECKED_ROW: usize = 32;

/// The held budget of a state read by a run that planned `deliveries`.
pub fn state_held(deliveries: usize) -> usize {
    STATE_HELD.max(deliveries.saturating_mul(STATE_HELD_PER_DELIVERY))
}

/// A check's STATE given as one JSON object of scenario names to states,
/// read and parsed whole (one state file, or a folder of
/// `<scenario>.json` files, is streamed row by row instead).
pub const STATE_MAP: usize = 32 * 1024 * 1024;

/// A configuration file the harness reads whole: a target, scenario or
/// profile TOML, a `ca_cert` PEM file.
pub const CONFIG_FILE: usize = 4 * 1024 * 1024;

/// One line of a history file (the longest the harness writes quotes a
/// receiver's answer, under [`RECEIVER_ANSWER`]).
pub const HISTORY_LINE: usize = 16 * 1024 * 1024;

/// What one partition of a check found (`partition.json`): its findings
/// per scenario, at most a thousand dead letters and a few evidence items
/// each.
pub const PARTITION_REPORT: usize = 64 * 1024 * 1024;

/// A report folder's `report.json` or `SHA256SUMS`, read whole by
/// `hookstorm verify` (the histories it grades again are streamed).
pub const REPORT_FILE: usize = 64 * 1024 * 1024;

/// A report folder's signature (`report.dsse.json`, read by `verify`,
/// `merge` and `check`) or a key file: a statement names a few lines a
/// scenario.
pub const SIGNING: usize = 4 * 1024 * 1024;

/// What `run` holds per planned delivery (its plan entry, body, sender
/// state, history fold and checker rows), measured with `VmHWM` on a
/// 100,000-delivery baseline: 766 MB, about 7.6 KiB each.
pub const DELIVERY_COST: usize = 8 * 1024;

/// The memory one scenario's plan may take; with [`DELIVERY_COST`] it
/// sets the delivery cap (`scenario::MAX_DELIVERIES`).
pub const PLAN_MEMORY: usize = 2 * 1024 * 1024 * 1024;

/// A value quoted in an error message, in characters; longer ones are cut
/// with how long they were.
pub const QUOTED_VALUE: usize = 200;

/// One row of the budget table: what is read, the cap, what happens past it.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// What is read.
    pub what: &'static str,
    /// The most bytes held at once.
    pub bytes: usize,
    /// What happens past the cap.
    pub past: &'static str,
}

/// Every budget, in the order of `docs/budgets.md`.
pub const TABLE: &[Budget] = &[
    Budget {
        what: "a receiver's answer (sender, fault front)",
        bytes: RECEIVER_ANSWER,
        past: "the rest is discarded and the front records that it was",
    },
    Budget {
        what: "a state URL's error answer, a hook URL's answer",
        bytes: HOOK_ANSWER,
        past: "the rest is discarded; a hook answer over it is an error",
    },
    Budget {
        what: "a hook or state command's standard output (action answer)",
        bytes: COMMAND_OUTPUT,
        past: "the command is killed with its process group; an error",
    },
    Budget {
        what: "a sender's request to the sink (head and body)",
        bytes: SINK_REQUEST,
        past: "the sink answers 413 and records it as foreign traffic, not charged to the sender",
    },
    Budget {
        what: "a sender's outbox listing (URL answer or command output)",
        bytes: OUTBOX_LISTING,
        past: "the listing is an error: S8 is unknown",
    },
    Budget {
        what: "a command's standard error",
        bytes: COMMAND_STDERR,
        past: "only the last bytes are kept for the message",
    },
    Budget {
        what: "one state row (a JSON Lines line, a document row)",
        bytes: STATE_ROW,
        past: "the state is invalid (verdict unknown), the read stops",
    },
    Budget {
        what: "the rows of a state graded whole: a run's (at most two at once), a check's per partition (32 bytes a row); 1 KiB a delivery past 65536",
        bytes: STATE_HELD,
        past: "the state is not graded (verdict unknown), naming the budget; a run's read stops at the row",
    },
    Budget {
        what: "a check's STATE as one JSON map of scenario names to states",
        bytes: STATE_MAP,
        past: "the check refuses the file, naming it (a state file or a folder of them is streamed)",
    },
    Budget {
        what: "a configuration file (target, scenario, profile, ca_cert)",
        bytes: CONFIG_FILE,
        past: "a configuration error naming the file",
    },
    Budget {
        what: "one history line",
        bytes: HISTORY_LINE,
        past: "the history is invalid at that line (verdict unknown)",
    },
    Budget {
        what: "one partition of a check (`partition.json`, read by `merge`)",
        bytes: PARTITION_REPORT,
        past: "the merge refuses the folder, naming the file",
    },
    Budget {
        what: "a report folder's report.json or SHA256SUMS (verify)",
        bytes: REPORT_FILE,
        past: "the folder is not verified: a mismatch naming the file",
    },
    Budget {
        what: "a report folder's signature `report.dsse.json`, a key file (verify, merge, check)",
        bytes: SIGNING,
        past:
            "the signature does not hold: a mismatch naming the file; a key file is a usage error",
    },
    Budget {
        what: "one scenario's plan (8 KiB per planned delivery)",
        bytes: PLAN_MEMORY,
        past: "the scenario is refused with the cap and why: at most 262144 deliveries",
    },
];

/// A size for people: `64 KiB`, `1 MiB`, `300 bytes`.
pub fn show(bytes: usize) -> String {
    if bytes >= 1 << 30 && bytes & ((1 << 30) - 1) == 0 {
        format!("{} GiB", bytes >> 30)
    } else if bytes >= 1 << 20 && bytes & ((1 << 20) - 1) == 0 {
        format!("{} MiB", bytes >> 20)
    } else if bytes >= 1 << 10 && bytes & ((1 << 10) - 1) == 0 {
        format!("{} KiB", bytes >> 10)
    } else {
        format!("{bytes} bytes")
    }
}

/// The table as `docs/budgets.md` carries it (between its markers).
pub fn render_table() -> String {
    let mut out = String::from("| What is read | Budget | Past it |\n|---|---|---|\n");
    for b in TABLE {
        out.push_str(&format!(
            "| {} | {} | {} |\n",
            b.what,
            show(b.bytes),
            b.past
        ));
    }
    out
}

/// `text` cut to [`QUOTED_VALUE`] characters, saying how long it was.
pub fn quote(text: &str) -> String {
    let mut chars = text.char_indices();
    match chars.nth(QUOTED_VALUE) {
        None => text.to_string(),
        Some((cut, _)) => format!("{}… ({} bytes in all)", &text[..cut], text.len()),
    }
}

/// What a capped read kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capped {
    /// At most the cap's bytes.
    pub bytes: Bytes,
    /// More followed and was not read.
    pub over: bool,
}

/// Reads an HTTP body up to `cap` bytes; past it, stops reading (the rest
/// is dropped with the body) and says so.
pub async fn read_body<B>(mut body: B, cap: usize) -> Result<Capped, B::Error>
where
    B: hyper::body::Body<Data = Bytes> + Unpin,
{
    let mut buf = BytesMut::new();
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame?.into_data() else {
            continue; // trailers
        };
        let room = cap - buf.len();
        if data.len() > room {
            buf.extend_from_slice(&data[..room]);
            return Ok(Capped {
                bytes: buf.freeze(),
                over: true,
            });
        }
        buf.extend_from_slice(&data);
    }
    Ok(Capped {
        bytes: buf.freeze(),
        over: false,
    })
}

/// Why a file could not be read within its budget.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// Opening or reading failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// Not a regular file (a device or a pipe never ends or never answers).
    #[error("not a regular file (hint: name a file, not a device or a pipe)")]
    NotAFile,
    /// Longer than the budget.
    #[error("longer than {} (hint: a configuration file this large is not one)", show(*.0))]
    TooLarge(usize),
}

impl From<FileError> for std::io::Error {
    fn from(e: FileError) -> std::io::Error {
        match e {
            FileError::Io(e) => e,
            other => std::io::Error::new(std::io::ErrorKind::InvalidInput, other.to_string()),
        }
    }
}

/// Reads a regular file of at most `cap` bytes.
pub fn read_file(path: &Path, cap: usize) -> Result<Vec<u8>, FileError> {
    let file = std::fs::File::open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(FileError::NotAFile);
    }
    // Refused by its size, unread; the read below still stops at the cap
    // (a file may grow while it is read).
    if meta.len() > cap as u64 {
        return Err(FileError::TooLarge(cap));
    }
    let mut out = Vec::new();
    file.take(cap as u64 + 1).read_to_end(&mut out)?;
    if out.len() > cap {
        return Err(FileError::TooLarge(cap));
    }
    Ok(out)
}

/// Like [`read_file`], as UTF-8 text.
pub fn read_text(path: &Path, cap: usize) -> Result<String, FileError> {
    String::from_utf8(read_file(path, cap)?).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let line = e.as_bytes()[..at].iter().filter(|&&b| b == b'\n').count() + 1;
        FileError::Io(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("line {line}: not UTF-8 (byte {at})"),
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_docs_table_is_the_code_table() {
        let doc = include_str!("../../../docs/budgets.md");
        let start =
            doc.find("<!-- budgets -->").expect("start marker") + "<!-- budgets -->\n".len();
        let end = doc.find("<!-- /budgets -->").expect("end marker");
        assert_eq!(
            &doc[start..end],
            render_table(),
            "docs/budgets.md must carry budget::render_table() between its markers"
        );
    }

    #[test]
    fn the_plan_row_says_the_cap_the_code_enforces() {
        assert_eq!(DELIVERY_COST, 8 * 1024);
        assert_eq!(crate::scenario::MAX_DELIVERIES, 262_144);
    }

    #[tokio::test]
    async fn a_body_past_its_cap_is_cut_and_flagged() {
        let body = http_body_util::Full::new(Bytes::from(vec![b'x'; 100]));
        let c = read_body(body, 64).await.unwrap();
        assert_eq!((c.bytes.len(), c.over), (64, true));
        let body = http_body_util::Full::new(Bytes::from(vec![b'x'; 64]));
        let c = read_body(body, 64).await.unwrap();
        assert_eq!((c.bytes.len(), c.over), (64, false));
    }

    #[test]
    fn a_device_is_not_read_as_a_file() {
        let e = read_file(Path::new("/dev/zero"), 10).unwrap_err();
        assert!(matches!(e, FileError::NotAFile), "{e}");
        let e = read_file(Path::new("/dev/urandom"), 10).unwrap_err();
        assert!(matches!(e, FileError::NotAFile), "{e}");
    }

    #[test]
    fn a_file_over_its_budget_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("big");
        std::fs::write(&p, vec![b'a'; 11]).unwrap();
        assert!(matches!(read_file(&p, 10), Err(FileError::TooLarge(10))));
        assert_eq!(read_file(&p, 11).unwrap().len(), 11);
    }

    #[test]
    fn quoted_values_are_cut_with_their_length() {
        let long = "é".repeat(1000);
        let q = quote(&long);
        assert!(q.ends_with("(2000 bytes in all)"), "{q}");
        assert_eq!(quote("short"), "short");
    }
}
