//! A fast path for the history lines hookstorm writes itself: one flat JSON
//! object of plain strings (no escapes), numbers, booleans, nulls and
//! arrays of plain strings. Scanning that shape directly is about three
//! times cheaper than serde's general parser, which dominates checking a
//! million-line history. Anything else (an escape, a nested object, a
//! repeated or mistyped field) returns `None` and the caller falls back to
//! serde, so errors and edge cases keep serde's exact behaviour.
//!
//! [`RawLine`] is the flat, borrowed shape both paths read a line into;
//! `hookstorm check` folds it into the checker without building an
//! [`crate::history::Event`].
//!
//! Kept hand-written for that measured reason: checking a million attempts
//! took 1.77 s before it and 1.24 s with it (docs/performance.md),
//! and serde stays the parser of record for anything it does not recognise.
//! It expects the fields in the order the writers put them (one compare of
//! two words per name instead of reading and matching the name), scans
//! strings eight bytes at a time, and reads numbers by JSON's grammar, so
//! it never accepts a number serde would reject. Together with reading in
//! parts (`check::chunks`) that brought the million-attempt check from
//! 1.19 s of CPU on one core to 0.76 s on two (AMD EPYC, 2026-12-01).

use std::borrow::Cow;

use serde::Deserialize;

use super::event::{Intent, Outcome};
use super::record::{attempt_fields, or_default};
use crate::delivery::TaskStatus;

/// Builds [`RawLine`] from the attempt's field list: each field in the
/// scanned form its kind gives it (`super::record`), plus the line's type.
macro_rules! raw_line {
    ($( $(#[doc = $doc:literal])* $(#[serde($($serde:tt)*)])? $name:ident : $kind:ident $($t:ty)? ),* $(,)?) => {
        raw_line!(@fields [] $( $name : $kind $($t)? ,)*);
    };
    (@fields [$($acc:tt)*] $name:ident : text, $($rest:tt)*) => {
        raw_line!(@fields [$($acc)* #[serde(default, borrow)] pub $name: Option<Cow<'a, str>>,] $($rest)*);
    };
    (@fields [$($acc:tt)*] $name:ident : stamp, $($rest:tt)*) => {
        raw_line!(@fields [$($acc)* #[serde(default, borrow)] pub $name: Option<Cow<'a, str>>,] $($rest)*);
    };
    (@fields [$($acc:tt)*] $name:ident : opt_text, $($rest:tt)*) => {
        raw_line!(@fields [$($acc)* #[serde(default, borrow)] pub $name: Option<Cow<'a, str>>,] $($rest)*);
    };
    (@fields [$($acc:tt)*] $name:ident : req $t:ty, $($rest:tt)*) => {
        raw_line!(@fields [$($acc)* #[serde(default)] pub $name: Option<$t>,] $($rest)*);
    };
    (@fields [$($acc:tt)*] $name:ident : dflt $t:ty, $($rest:tt)*) => {
        raw_line!(@fields [$($acc)* #[serde(default, deserialize_with = "or_default")] pub $name: $t,] $($rest)*);
    };
    (@fields [$($acc:tt)*] $name:ident : opt $t:ty, $($rest:tt)*) => {
        raw_line!(@fields [$($acc)* #[serde(default)] pub $name: Option<$t>,] $($rest)*);
    };
    (@fields [$($acc:tt)*] $name:ident : tags, $($rest:tt)*) => {
        raw_line!(@fields [$($acc)* #[serde(default, borrow, deserialize_with = "or_default")] pub $name: Vec<Cow<'a, str>>,] $($rest)*);
    };
    (@fields [$($acc:tt)*]) => {
        /// One history line, flat and borrowed: every attempt field (a
        /// provider line's are among them) and the line's type. Parsing
        /// this instead of the tagged [`crate::history::Event`] avoids
        /// serde's buffering of internally tagged enums and one allocation
        /// per string, which makes checking a large history several times
        /// faster.
        #[derive(Deserialize, Default, Debug, PartialEq)]
        pub(crate) struct RawLine<'a> {
            #[serde(rename = "type", borrow)]
            pub kind: Cow<'a, str>,
            $($acc)*
        }
    };
}
attempt_fields!(raw_line);

struct Scanner<'a> {
    s: &'a str,
    b: &'a [u8],
    i: usize,
}

enum Value<'a> {
    Str(&'a str),
    Num(&'a str),
    Bool(bool),
    Null,
    Strs(Vec<Cow<'a, str>>),
}

/// `0x01` in every byte of a word.
const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
/// `0x80` in every byte of a word.
const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);

/// The bytes of `w` that end a plain string (`"`, `\` or a control
/// character) have their high bit set in the result; bytes above the first
/// such byte may be marked falsely, the first never is.
fn string_stops(w: u64) -> u64 {
    let quote = w ^ (ONES * u64::from(b'"'));
    let backslash = w ^ (ONES * u64::from(b'\\'));
    let zero = |v: u64| v.wrapping_sub(ONES) & !v;
    (zero(quote) | zero(backslash) | w.wrapping_sub(ONES * 0x20) & !w) & HIGHS
}

impl<'a> Scanner<'a> {
    fn ws(&mut self) {
        while self.i < self.b.len() && matches!(self.b[self.i], b' ' | b'\t' | b'\r' | b'\n') {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        self.ws();
        (self.b.get(self.i) == Some(&c)).then(|| self.i += 1)
    }

    /// A string without escapes or control characters.
    fn string(&mut self) -> Option<&'a str> {
        self.eat(b'"')?;
        let start = self.i;
        let mut end = start;
        // Eight bytes at a time while they last, then byte by byte.
        while let Some(word) = self.b.get(end..end + 8) {
            let w = u64::from_le_bytes(word.try_into().expect("eight bytes"));
            let stops = string_stops(w);
            if stops != 0 {
                end += (stops.trailing_zeros() / 8) as usize;
                break;
            }
            end += 8;
        }
        while end < self.b.len() && !matches!(self.b[end], b'"' | b'\\' | 0..=0x1f) {
            end += 1;
        }
        if self.b.get(end) != Some(&b'"') {
            return None;
        }
        self.i = end + 1;
        Some(&self.s[start..end])
    }

    /// A number as JSON spells it: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
    fn number(&mut self) -> Option<&'a str> {
        let start = self.i;
        let b = self.b;
        let digits = |i: &mut usize| {
            let from = *i;
            while b.get(*i).is_some_and(u8::is_ascii_digit) {
                *i += 1;
            }
            *i > from
        };
        let mut i = start;
        if b.get(i) == Some(&b'-') {
            i += 1;
        }
        match b.get(i) {
            Some(b'0') => i += 1,
            Some(b'1'..=b'9') => {
                digits(&mut i);
            }
            _ => return None,
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            if !digits(&mut i) {
                return None;
            }
        }
        if matches!(b.get(i), Some(b'e' | b'E')) {
            i += 1;
            if matches!(b.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            if !digits(&mut i) {
                return None;
            }
        }
        self.i = i;
        Some(&self.s[start..i])
    }

    fn value(&mut self) -> Option<Value<'a>> {
        self.ws();
        match *self.b.get(self.i)? {
            b'"' => self.string().map(Value::Str),
            b't' if self.b[self.i..].starts_with(b"true") => {
                self.i += 4;
                Some(Value::Bool(true))
            }
            b'f' if self.b[self.i..].starts_with(b"false") => {
                self.i += 5;
                Some(Value::Bool(false))
            }
            b'n' if self.b[self.i..].starts_with(b"null") => {
                self.i += 4;
                Some(Value::Null)
            }
            b'[' => {
                self.i += 1;
                let mut out = Vec::new();
                if self.eat(b']').is_some() {
                    return Some(Value::Strs(out));
                }
                loop {
                    out.push(Cow::Borrowed(self.string()?));
                    if self.eat(b',').is_some() {
                        continue;
                    }
                    self.eat(b']')?;
                    return Some(Value::Strs(out));
                }
            }
            b'-' | b'0'..=b'9' => self.number().map(Value::Num),
            _ => None,
        }
    }

    /// The next field's name, with its colon: `FIELDS[guess]` when the
    /// line spells it exactly there (the writers' order), else any plain
    /// string, looked up.
    fn field(&mut self, guess: usize) -> Option<usize> {
        self.ws();
        if let (Some(lit), Some(rest)) = (LITERALS.get(guess), self.b.get(self.i..self.i + 16)) {
            if lit.matches(rest) {
                self.i += lit.len;
                return Some(guess);
            }
        }
        let name = self.string()?;
        self.eat(b':')?;
        Some(FIELDS.iter().position(|f| *f == name).unwrap_or(OTHER))
    }
}

/// Builds the scanner's field table from the attempt's field list:
/// [`FIELDS`], each field's index in it (`field::<name>`), and [`assign`],
/// which reads a value into its field of a [`RawLine`].
macro_rules! field_table {
    ($( $(#[doc = $doc:literal])* $(#[serde($($serde:tt)*)])? $name:ident : $kind:ident $($t:ty)? ),* $(,)?) => {
        /// Every field the writers put on an attempt or provider line, in
        /// the order `Event`'s serde writes them (the bench's writer keeps
        /// that order and leaves some out); a name not here is skipped as
        /// [`OTHER`].
        const FIELDS: &[&str] = &["type", $(stringify!($name)),*];

        /// Each field's place in [`FIELDS`].
        #[allow(non_camel_case_types, dead_code)]
        enum Place {
            Type,
            $($name),*
        }

        /// Each field's index in [`FIELDS`].
        #[allow(non_upper_case_globals)]
        mod field {
            pub const TYPE: usize = super::Place::Type as usize;
            $(pub const $name: usize = super::Place::$name as usize;)*
        }

        /// Puts value `v` of field number `f` into `raw` (the line's type
        /// into `kind`); `None` when the value has the wrong shape for its
        /// field, as serde would refuse it.
        #[inline]
        fn assign<'a>(
            raw: &mut RawLine<'a>,
            kind: &mut Option<&'a str>,
            f: usize,
            v: Value<'a>,
        ) -> Option<()> {
            match f {
                field::TYPE => {
                    let Value::Str(s) = v else { return None };
                    *kind = Some(s);
                }
                $(field::$name => raw.$name = scanned!(v, $kind $($t)?)?,)*
                // A field the checker does not know (a newer one).
                _ => {}
            }
            Some(())
        }
    };
}

/// A value in the scanned form of its field's kind: `None` when serde
/// would refuse it there.
macro_rules! scanned {
    ($v:expr, text) => {
        opt_str($v)
    };
    ($v:expr, stamp) => {
        opt_str($v)
    };
    ($v:expr, opt_text) => {
        opt_str($v)
    };
    ($v:expr, req $t:ty) => {
        <$t as Scalar>::scan($v)
    };
    ($v:expr, opt $t:ty) => {
        <$t as Scalar>::scan($v)
    };
    // Optional in the format: `null` is the default, as serde reads it.
    ($v:expr, dflt $t:ty) => {
        <$t as Scalar>::scan($v).map(Option::unwrap_or_default)
    };
    ($v:expr, tags) => {
        match $v {
            Value::Strs(list) => Some(list),
            Value::Null => Some(Vec::new()),
            _ => None,
        }
    };
}

attempt_fields!(field_table);

/// A field's name as the writers spell it, quotes and colon included
/// (`"key":`), as two words to compare a line's next bytes with: no
/// `memcmp` call per field.
struct Literal {
    len: usize,
    head: u64,
    head_mask: u64,
    tail: u64,
}

impl Literal {
    const fn of(name: &str) -> Literal {
        let n = name.as_bytes();
        let len = n.len() + 3;
        assert!(len <= 16, "field names fit two words");
        let mut b = [0u8; 16];
        b[0] = b'"';
        let mut i = 0;
        while i < n.len() {
            b[1 + i] = n[i];
            i += 1;
        }
        b[1 + n.len()] = b'"';
        b[2 + n.len()] = b':';
        let head = u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
        let (head_mask, tail) = if len >= 8 {
            let t = len - 8;
            let tail = u64::from_le_bytes([
                b[t],
                b[t + 1],
                b[t + 2],
                b[t + 3],
                b[t + 4],
                b[t + 5],
                b[t + 6],
                b[t + 7],
            ]);
            (u64::MAX, tail)
        } else {
            ((1u64 << (8 * len)) - 1, 0)
        };
        Literal {
            len,
            head: head & head_mask,
            head_mask,
            tail,
        }
    }

    /// Whether `rest` (16 bytes or more) starts with this literal.
    fn matches(&self, rest: &[u8]) -> bool {
        let word = |at: usize| u64::from_le_bytes(rest[at..at + 8].try_into().expect("8 bytes"));
        word(0) & self.head_mask == self.head && (self.len < 8 || word(self.len - 8) == self.tail)
    }
}

/// [`FIELDS`] as [`Literal`]s.
const LITERALS: [Literal; FIELDS.len()] = {
    let mut out = [const {
        Literal {
            len: 0,
            head: 0,
            head_mask: 0,
            tail: 0,
        }
    }; FIELDS.len()];
    let mut i = 0;
    while i < FIELDS.len() {
        out[i] = Literal::of(FIELDS[i]);
        i += 1;
    }
    out
};

/// A field not in [`FIELDS`] (a sink's nested record, a newer one …).
const OTHER: usize = usize::MAX;

fn opt_str(v: Value<'_>) -> Option<Option<Cow<'_, str>>> {
    match v {
        Value::Str(s) => Some(Some(Cow::Borrowed(s))),
        Value::Null => Some(None),
        _ => None,
    }
}

fn opt_num<T: std::str::FromStr>(v: Value<'_>) -> Option<Option<T>> {
    match v {
        Value::Num(n) => n.parse().ok().map(Some),
        Value::Null => Some(None),
        _ => None,
    }
}

/// A float as serde reads it; a number too large for `f64` is serde's error.
fn opt_f64(v: Value<'_>) -> Option<Option<f64>> {
    opt_num::<f64>(v)?.map_or(Some(None), |x| x.is_finite().then_some(Some(x)))
}

/// A one-value field's reading: `Some(None)` for `null`, `None` for a
/// value serde would refuse.
trait Scalar: Sized {
    fn scan(v: Value<'_>) -> Option<Option<Self>>;
}

macro_rules! scalar_number {
    ($($t:ty),*) => {$(
        impl Scalar for $t {
            fn scan(v: Value<'_>) -> Option<Option<Self>> {
                opt_num(v)
            }
        }
    )*};
}
scalar_number!(u16, u32, u64);

impl Scalar for f64 {
    fn scan(v: Value<'_>) -> Option<Option<Self>> {
        opt_f64(v)
    }
}

impl Scalar for bool {
    fn scan(v: Value<'_>) -> Option<Option<Self>> {
        match v {
            Value::Bool(b) => Some(Some(b)),
            Value::Null => Some(None),
            _ => None,
        }
    }
}

impl Scalar for Outcome {
    fn scan(v: Value<'_>) -> Option<Option<Self>> {
        enum_field(v, outcome)
    }
}

impl Scalar for Intent {
    fn scan(v: Value<'_>) -> Option<Option<Self>> {
        enum_field(v, intent)
    }
}

impl Scalar for TaskStatus {
    fn scan(v: Value<'_>) -> Option<Option<Self>> {
        enum_field(v, task_status)
    }
}

fn outcome(s: &str) -> Option<Outcome> {
    Some(match s {
        "ok" => Outcome::Ok,
        "fail" => Outcome::Fail,
        "info" => Outcome::Info,
        _ => return None,
    })
}

fn intent(s: &str) -> Option<Intent> {
    Some(match s {
        "genuine" => Intent::Genuine,
        "test" => Intent::Test,
        "forged" => Intent::Forged,
        "cross-account" => Intent::CrossAccount,
        "oversized" => Intent::Oversized,
        "expired-replay" => Intent::ExpiredReplay,
        _ => return None,
    })
}

fn task_status(s: &str) -> Option<TaskStatus> {
    Some(match s {
        "COMPLETED" => TaskStatus::Completed,
        "FAILED" => TaskStatus::Failed,
        "QUEUED" => TaskStatus::Queued,
        "PROCESSING" => TaskStatus::Processing,
        _ => return None,
    })
}

fn enum_field<T>(v: Value<'_>, f: fn(&str) -> Option<T>) -> Option<Option<T>> {
    match v {
        Value::Str(s) => f(s).map(Some),
        Value::Null => Some(None),
        _ => None,
    }
}

/// Parses a line of the simple shape, or `None` to let serde decide.
pub(crate) fn parse(line: &str) -> Option<RawLine<'_>> {
    let mut sc = Scanner {
        s: line,
        b: line.as_bytes(),
        i: 0,
    };
    sc.eat(b'{')?;
    let mut kind = None;
    let mut raw = RawLine::default();
    let mut seen = 0u32;
    let mut guess = 0;
    if sc.eat(b'}').is_none() {
        loop {
            let f = sc.field(guess)?;
            let v = sc.value()?;
            assign(&mut raw, &mut kind, f, v)?;
            // One bit a field: a repeated one is serde's error to give.
            const _: () = assert!(FIELDS.len() <= 32);
            if f < FIELDS.len() {
                if seen & (1 << f) != 0 {
                    return None;
                }
                seen |= 1 << f;
            }
            guess = if f == OTHER { guess } else { f + 1 };
            if sc.eat(b',').is_some() {
                continue;
            }
            sc.eat(b'}')?;
            break;
        }
    }
    sc.ws();
    if sc.i != sc.b.len() {
        return None;
    }
    raw.kind = Cow::Borrowed(kind?);
    Some(raw)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{Attempt, Event, ProviderTask};

    fn same(a: &RawLine<'_>, b: &RawLine<'_>) -> bool {
        a == b
    }

    fn attempt() -> Attempt {
        Attempt {
            job: Some("job-1".into()),
            attempt: 3,
            round: 1,
            faults: vec!["duplicate-replay".into(), "hold-back".into()],
            sent_at: "2026-11-29T10:00:01.000Z".into(),
            status: Some(503),
            latency_ms: Some(12.125),
            error: None,
            outcome: Outcome::Info,
            intent: Intent::CrossAccount,
            detail: Some("x".into()),
            task_status: Some(TaskStatus::Failed),
            created_at: Some("2026-11-29T10:00:00Z".into()),
            resource: Some("r1".into()),
            sequence: Some(7),
            poison: true,
            dead: false,
            ..Attempt::new("baseline", "whd_1", "tsk_1", "acct_a")
        }
    }

    #[test]
    fn written_events_scan_exactly_as_serde_parses_them() {
        let mut lines = vec![
            serde_json::to_string(&Event::Attempt(attempt())).unwrap(),
            serde_json::to_string(&Event::Provider(ProviderTask {
                scenario: "s".into(),
                account: "a".into(),
                key: "k".into(),
                job: None,
                task_status: TaskStatus::Completed,
                created_at: "2026-11-29T10:00:00Z".into(),
            }))
            .unwrap(),
            r#"{"type":"fault","scenario":"s","at":"t","fault":"kill","action":"a","detail":null}"#
                .into(),
            r#" { "type" : "attempt" , "faults" : [ ] , "status" : null } "#.into(),
        ];
        let mut minimal = attempt();
        minimal.job = None;
        minimal.faults.clear();
        minimal.detail = None;
        lines.push(serde_json::to_string(&Event::Attempt(minimal)).unwrap());
        for line in &lines {
            let fast = parse(line).unwrap_or_else(|| panic!("scans: {line}"));
            let slow: RawLine = serde_json::from_str(line).unwrap();
            assert!(same(&fast, &slow), "{line}");
        }
    }

    #[test]
    fn unusual_lines_fall_back_to_serde() {
        for line in [
            r#"{"type":"attempt","error":"a \"quoted\" reset"}"#,
            r#"{"type":"attempt","detail":{"nested":1}}"#,
            r#"{"type":"attempt","key":"a","key":"b"}"#,
            r#"{"type":"attempt","outcome":"maybe"}"#,
            r#"{"type":"attempt","attempt":-1}"#,
            r#"{"type":"attempt"} trailing"#,
            r#"{"scenario":"s"}"#,
            "not json",
        ] {
            assert!(parse(line).is_none(), "{line}");
        }
    }

    mod differential {
        //! The scanner is a second parser of the history format: for any
        //! attempt serde writes, it either steps aside (`None`, and serde
        //! reads the line) or reads exactly what serde reads.
        use super::*;
        use crate::tag::FaultTag;
        use proptest::prelude::*;

        /// Text with what a history can hold: plain ids, escapes, quotes,
        /// backslashes, control characters and non-ASCII.
        fn text() -> impl Strategy<Value = String> {
            prop_oneof![
                "[a-z0-9_]{0,12}",
                "[ -~]{0,16}",
                "[\\\\\"\\n\\t\\u{1}é😀a]{0,6}",
            ]
        }

        fn tag() -> impl Strategy<Value = FaultTag> {
            prop_oneof![
                Just(FaultTag::DropAck),
                Just(FaultTag::DatabaseCut),
                Just(FaultTag::FrontRedirect),
                (1u32..4, 1u32..4).prop_map(|(k, n)| FaultTag::ConcurrentCopy { k, n }),
                text().prop_map(|t| FaultTag::parse(&t)),
            ]
        }

        fn attempt() -> impl Strategy<Value = Attempt> {
            let outcome = prop_oneof![Just(Outcome::Ok), Just(Outcome::Fail), Just(Outcome::Info)];
            let intent = prop_oneof![
                Just(Intent::Genuine),
                Just(Intent::Test),
                Just(Intent::Forged),
                Just(Intent::CrossAccount),
                Just(Intent::Oversized),
                Just(Intent::ExpiredReplay),
            ];
            let status = prop_oneof![Just(TaskStatus::Completed), Just(TaskStatus::Failed)];
            (
                (text(), text(), text(), text(), proptest::option::of(text())),
                (
                    0u32..20,
                    proptest::collection::vec(tag(), 0..3),
                    proptest::option::of(100u16..600),
                ),
                (
                    proptest::option::of(0.0f64..1e6),
                    proptest::option::of(text()),
                    outcome,
                    intent,
                ),
                (
                    proptest::option::of(text()),
                    proptest::option::of(status),
                    proptest::option::of(text()),
                ),
                (
                    proptest::option::of(text()),
                    proptest::option::of(any::<u64>()),
                    any::<bool>(),
                    any::<bool>(),
                ),
            )
                .prop_map(
                    |(
                        (sc, d, k, acct, job),
                        (n, faults, st),
                        (lat, err, out, int),
                        (det, ts, created),
                        (res, seq, poison, dead),
                    )| {
                        Attempt {
                            job,
                            attempt: n,
                            faults,
                            status: st,
                            latency_ms: lat,
                            error: err,
                            outcome: out,
                            intent: int,
                            detail: det,
                            task_status: ts,
                            created_at: created,
                            resource: res,
                            sequence: seq,
                            poison,
                            dead,
                            ..Attempt::new(&sc, &d, &k, &acct)
                        }
                    },
                )
        }

        proptest! {
            #[test]
            fn the_scanner_reads_any_written_attempt_as_serde_does_or_steps_aside(a in attempt()) {
                let line = serde_json::to_string(&Event::Attempt(a)).unwrap();
                let slow: RawLine = serde_json::from_str(&line).unwrap();
                if let Some(fast) = parse(&line) {
                    prop_assert!(same(&fast, &slow), "{}", line);
                }
            }

            #[test]
            fn the_scanner_reads_plain_attempts_itself(
                key in "[a-z0-9_]{1,12}",
                status in proptest::option::of(100u16..600),
                lat in proptest::option::of(0.0f64..1e6),
            ) {
                let a = Attempt { status, latency_ms: lat, ..Attempt::new("s", "whd_1", &key, "acct_a") };
                let line = serde_json::to_string(&Event::Attempt(a.clone())).unwrap();
                let fast = parse(&line);
                prop_assert!(fast.is_some(), "the fast path must take {}", line);
                let slow: RawLine = serde_json::from_str(&line).unwrap();
                prop_assert!(same(&fast.unwrap(), &slow), "{}", line);
                // Another writer's order (serde_json's maps sort their keys)
                // takes the fast path too, only without its guesses.
                let sorted = serde_json::to_string(&serde_json::to_value(Event::Attempt(a)).unwrap()).unwrap();
                let fast = parse(&sorted);
                prop_assert!(fast.is_some(), "the fast path must take {}", sorted);
                prop_assert!(same(&fast.unwrap(), &slow), "{}", sorted);
            }
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(1024))]
            #[test]
            fn the_scanner_never_accepts_what_serde_rejects_nor_reads_it_otherwise(
                a in attempt(),
                number in proptest::sample::select(NUMBERS),
                edit in 0usize..7,
                at in any::<prop::sample::Index>(),
            ) {
                let line = serde_json::to_string(&Event::Attempt(Attempt {
                    status: None,
                    latency_ms: None,
                    ..a
                }))
                .unwrap();
                let line = match edit {
                    0 => line.replace(r#""status":null"#, &format!(r#""status":{number}"#)),
                    1 => line.replace(r#""latency_ms":null"#, &format!(r#""latency_ms":{number}"#)),
                    2 => line.replace(r#""round":0"#, &format!(r#""round":{number}"#)),
                    3 => line.replacen(r#"{"#, &format!(r#"{{"later":{number},"#), 1),
                    // Whitespace where JSON allows it, and where it does not.
                    4 => {
                        let i = at.index(line.len());
                        let i = (0..=i).rev().find(|&i| line.is_char_boundary(i)).unwrap_or(0);
                        format!("{} {}", &line[..i], &line[i..])
                    }
                    5 => line.replacen(r#"{"#, r#"{"later":{"x":[1,"y"]},"#, 1),
                    _ => line.replace(r#","#, " ,\t"),
                };
                let slow: Result<RawLine, _> = serde_json::from_str(&line);
                match (parse(&line), slow) {
                    (Some(fast), Ok(slow)) => prop_assert!(same(&fast, &slow), "{}", line),
                    (Some(_), Err(e)) => prop_assert!(false, "serde rejects ({}) what the scanner read: {}", e, line),
                    (None, _) => {}
                }
            }
        }

        /// Numbers as a history could hold them, and near misses JSON forbids.
        const NUMBERS: &[&str] = &[
            "0",
            "7",
            "204",
            "65535",
            "65536",
            "4294967296",
            "-1",
            "-0",
            "2.5",
            "0.125",
            "1e2",
            "1E+2",
            "2.5e-3",
            "1e400",
            "-1e400",
            "01",
            "00",
            "1.",
            ".5",
            "+1",
            "1-2",
            "1e",
            "1e+",
            "-",
            "0x10",
            "1.5.2",
            "NaN",
            "Infinity",
        ];
    }
}
