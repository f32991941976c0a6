//! The attempt record, defined once: [`attempt_fields!`] lists every field
//! of an attempt line with its documentation, its serde attributes and its
//! kind, in the order the writers put them. Each form of an attempt is
//! generated from that list: the owned [`super::Attempt`] that serde writes
//! and reads, the scanner's borrowed line ([`super::scan::RawLine`], its
//! field table and its reader of each value), the checker's view
//! (`check::aggregate::AttemptView`) and the two ways into it (from an
//! `Attempt`, from a scanned line). A new field is one line here plus its
//! use; a test writes an attempt with every field set and reads it back
//! through each form.
//!
//! The kinds say what a field is to each form:
//!
//! | kind | in `Attempt` | scanned | the checker sees |
//! |---|---|---|---|
//! | `text` | `String` | `Option<Cow<str>>` | `&str` (missing: an error) |
//! | `stamp` | `String` | `Option<Cow<str>>` | `Option<&str>` (not needed) |
//! | `opt_text` | `Option<String>` | `Option<Cow<str>>` | `Option<&str>` |
//! | `req T` | `T` | `Option<T>` | `T` (missing: an error) |
//! | `dflt T` | `T` | `T` (absent: default) | `T` |
//! | `opt T` | `Option<T>` | `Option<T>` | `Option<T>` |
//! | `tags` | `Vec<FaultTag>` | `Vec<Cow<str>>` | `TagFacts` |
//!
//! The checker's forms are generated in `check::aggregate` from the same
//! list (this module is a leaf of the history and knows nothing of the
//! checker). The spill record of a partitioned check keeps, on purpose,
//! only what the key's record folds, in a hand-tuned binary form; its
//! writer takes the checker's view apart field by field with no `..`, so
//! a new field does not compile until the spill has decided whether it
//! keeps it.

/// Calls `$then!` with the attempt's fields, `/// doc`, at most one
/// `#[serde(…)]`, then `name: kind [T],`, in the order the writers put
/// them (the scanner's fast path expects that order). `type` (the line's tag) and `sink` (a sink's nested record,
/// which the checker never reads) are not listed; the forms add them.
macro_rules! attempt_fields {
    ($then:ident) => {
        $then! {
            /// The scenario it belongs to.
            scenario: text,
            /// The delivery id (`Webhook-Id`), stable across retries and redeliveries.
            delivery: text,
            /// The deduplication key (task id).
            key: text,
            /// The job key, when the task has an idempotency key.
            #[serde(default)]
            job: opt_text,
            /// The account the delivery was sent for.
            account: text,
            /// 1-based attempt number within its round.
            attempt: req u32,
            /// 0 for the automatic delivery, 1.. for manual redeliveries.
            #[serde(default, deserialize_with = "crate::history::record::or_default")]
            round: dflt u32,
            /// Faults applied to this attempt.
            #[serde(default, deserialize_with = "crate::history::record::or_default")]
            faults: tags,
            /// When it was sent (RFC 3339, wall clock).
            sent_at: stamp,
            /// The answer's status, if one came.
            #[serde(default)]
            status: opt u16,
            /// Time to the answer's head, in milliseconds.
            #[serde(default)]
            latency_ms: opt f64,
            /// Transport error text (timeout, reset, refused).
            #[serde(default)]
            error: opt_text,
            /// The outcome.
            outcome: req Outcome,
            /// What the delivery was meant to be.
            intent: req Intent,
            /// More about the intent (the forgery kind, …).
            #[serde(default)]
            detail: opt_text,
            /// The task's final status.
            #[serde(default)]
            task_status: opt TaskStatus,
            /// The task's createdAt.
            #[serde(default)]
            created_at: opt_text,
            /// Sequenced workload: the resource.
            #[serde(default)]
            resource: opt_text,
            /// Sequenced workload: the sequence number.
            #[serde(default)]
            sequence: opt u64,
            /// The delivery is a poison event.
            #[serde(default, deserialize_with = "crate::history::record::or_default")]
            poison: dflt bool,
            /// This was the last attempt and it failed: the delivery is dead.
            #[serde(default, deserialize_with = "crate::history::record::or_default")]
            dead: dflt bool,
        }
    };
}
pub(crate) use attempt_fields;

/// A field's type in [`super::Attempt`], from its kind.
macro_rules! owned_type {
    (text) => { String };
    (stamp) => { String };
    (opt_text) => { Option<String> };
    (req $t:ty) => { $t };
    (dflt $t:ty) => { $t };
    (opt $t:ty) => { Option<$t> };
    (tags) => { Vec<$crate::tag::FaultTag> };
}
pub(crate) use owned_type;

/// A value that may be absent or `null` (a `dflt` or `tags` field, which
/// `docs/history.md` calls optional): its type's default then.
pub(crate) fn or_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de> + Default,
{
    Ok(<Option<T> as serde::Deserialize>::deserialize(d)?.unwrap_or_default())
}

/// Whether a field of this kind may be `null` (every kind but the
/// required strings; a `req` field's `null` is its type's error).
macro_rules! nullable {
    (text) => {
        false
    };
    (stamp) => {
        false
    };
    (req $t:ty) => {
        false
    };
    ($($kind:tt)*) => {
        true
    };
}
pub(crate) use nullable;

/// The format's rules that a field's type does not carry: an answer's
/// `status` is an HTTP status (100 to 599), `sent_at` is an RFC 3339
/// time. Both readers of a history (serde's and the checker's scanner)
/// hold every attempt line to them; the error names the field.
pub(crate) fn refused(status: Option<u16>, sent_at: Option<&str>) -> Option<String> {
    if let Some(s) = status.filter(|s| !(100..=599).contains(s)) {
        return Some(format!(
            "field `status`: {s} is not an HTTP status (expected 100 to 599, or null when no answer came)"
        ));
    }
    if let Some(t) = sent_at.filter(|t| !rfc3339(t)) {
        return Some(format!(
            "field `sent_at`: {:?} is not an RFC 3339 time (expected like 2026-11-30T18:09:59.739Z)",
            crate::limits::budget::quote(t)
        ));
    }
    None
}

/// Whether `t` is an RFC 3339 time. The writers' own shape
/// (`2026-11-30T18:09:59.739Z`, a day up to the 28th) is told by its
/// bytes, a few nanoseconds on the checker's path of a million lines;
/// anything else is chrono's to judge.
fn rfc3339(t: &str) -> bool {
    let b = t.as_bytes();
    let digits = [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18, 20, 21, 22];
    let shaped = b.len() == 24
        && digits.iter().all(|&i| b[i].is_ascii_digit())
        && [
            (4, b'-'),
            (7, b'-'),
            (10, b'T'),
            (13, b':'),
            (16, b':'),
            (19, b'.'),
            (23, b'Z'),
        ]
        .iter()
        .all(|&(i, c)| b[i] == c);
    if shaped {
        let n = |i: usize| u32::from(b[i] - b'0') * 10 + u32::from(b[i + 1] - b'0');
        if (1..=12).contains(&n(5))
            && (1..=28).contains(&n(8))
            && n(11) < 24
            && n(14) < 60
            && n(17) < 60
        {
            return true;
        }
    }
    chrono::DateTime::parse_from_rfc3339(t).is_ok()
}

#[cfg(test)]
mod tests {
    use crate::check::{check_files, CheckOptions};
    use crate::history::scan::{self, RawLine};
    use crate::history::Event;

    const GOOD: &str = r#"{"type":"attempt","scenario":"s","delivery":"whd_1","key":"tsk_1","account":"acct_a","attempt":1,"round":0,"faults":[],"sent_at":"2026-11-30T18:09:59.739Z","status":204,"outcome":"ok","intent":"genuine"}"#;

    /// `GOOD` with `field` set to the JSON `value`.
    fn with(field: &str, value: &str) -> String {
        let mut v: serde_json::Value = serde_json::from_str(GOOD).unwrap();
        v[field] = serde_json::from_str(value).unwrap();
        v.to_string()
    }

    #[test]
    fn sent_at_is_held_to_rfc_3339_by_its_bytes_and_by_chrono_alike() {
        for ok in [
            "2026-11-30T18:09:59.739Z",
            "2024-02-29T00:00:00.000Z",
            "2026-11-29T10:00:00Z",
            "2026-11-29T10:00:00+01:00",
        ] {
            assert!(super::rfc3339(ok), "{ok}");
        }
        for bad in [
            "yesterday",
            "",
            "2026-13-30T18:09:59.739Z",
            "2026-02-30T18:09:59.739Z",
            "2026-11-30T24:09:59.739Z",
            "2026-11-30 18:09:59.739",
        ] {
            assert!(!super::rfc3339(bad), "{bad}");
        }
    }

    #[test]
    fn documented_optional_fields_read_null_as_their_default_in_serde_and_the_scanner() {
        let mut v: serde_json::Value = serde_json::from_str(GOOD).unwrap();
        for field in [
            "job",
            "round",
            "faults",
            "status",
            "latency_ms",
            "error",
            "detail",
            "task_status",
            "created_at",
            "resource",
            "sequence",
            "poison",
            "dead",
        ] {
            v[field] = serde_json::Value::Null;
        }
        v["outcome"] = "info".into();
        // The writers' order, so the scanner takes its fast path.
        let line = v.to_string();
        let Ok(Event::Attempt(a)) = serde_json::from_str::<Event>(&line) else {
            panic!("serde refused {line}");
        };
        assert_eq!(
            (a.round, a.faults.len(), a.poison, a.dead),
            (0, 0, false, false)
        );
        assert_eq!(a.status, None);
        let fast = scan::parse(&line).unwrap_or_else(|| panic!("the scanner refused {line}"));
        let slow: RawLine<'_> = serde_json::from_str(&line).unwrap();
        assert_eq!(fast, slow);
        assert_eq!((fast.round, fast.poison, fast.dead), (0, false, false));
        assert!(fast.faults.is_empty());
        // And each alone, as the only null of its line.
        for field in ["round", "faults", "poison", "dead"] {
            let line = with(field, "null");
            assert!(serde_json::from_str::<Event>(&line).is_ok(), "{line}");
            assert_eq!(
                scan::parse(&line),
                Some(serde_json::from_str::<RawLine<'_>>(&line).unwrap()),
                "{line}"
            );
        }
    }

    #[test]
    fn a_mistyped_or_out_of_range_field_is_refused_naming_file_line_and_field_by_both_readers() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state.json");
        std::fs::write(&state, r#"{"inbox":[{"key":"tsk_1","processed":true}]}"#).unwrap();
        for (field, value, says) in [
            (
                "round",
                r#""x""#,
                "invalid type: string \"x\", expected u32",
            ),
            ("poison", r#""yes""#, "expected a boolean"),
            ("faults", "7", "expected a sequence"),
            ("sent_at", r#""yesterday""#, "is not an RFC 3339 time"),
            ("status", "0", "0 is not an HTTP status"),
            ("status", "600", "600 is not an HTTP status"),
        ] {
            let history = dir.path().join(format!("{field}.jsonl"));
            std::fs::write(&history, format!("{GOOD}\n{}\n", with(field, value))).unwrap();
            let want = [
                history.display().to_string(),
                "line 2".to_string(),
                format!("field `{field}`"),
                says.to_string(),
            ];
            // serde's reader (every fold of a run's history).
            let e = crate::history::read_numbered(&history)
                .unwrap()
                .find_map(Result::err)
                .unwrap_or_else(|| panic!("{field} = {value} was read"))
                .to_string();
            assert!(want.iter().all(|w| e.contains(w.as_str())), "serde: {e}");
            // The checker's reader (the scanner, serde behind it).
            let e = check_files(&history, &state, None, &CheckOptions::default())
                .err()
                .unwrap_or_else(|| panic!("{field} = {value} was checked"))
                .to_string();
            assert!(want.iter().all(|w| e.contains(w.as_str())), "check: {e}");
        }
        // The same values in range are read by both.
        let history = dir.path().join("good.jsonl");
        std::fs::write(&history, format!("{GOOD}\n{}\n", with("status", "599"))).unwrap();
        assert!(crate::history::read_numbered(&history)
            .unwrap()
            .all(|r| r.is_ok()));
        assert!(check_files(&history, &state, None, &CheckOptions::default()).is_ok());
    }
}
