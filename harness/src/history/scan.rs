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
use crate::delivery::TaskStatus;

/// One history line, flat and borrowed: the union of the attempt and provider
/// fields the checker reads. Parsing this instead of the tagged [`Event`]
/// avoids serde's buffering of internally tagged enums and one allocation per
/// string, which makes checking a large history several times faster.
#[derive(Deserialize, Default)]
pub(crate) struct RawLine<'a> {
    #[serde(rename = "type", borrow)]
    pub kind: Cow<'a, str>,
    #[serde(default, borrow)]
    pub scenario: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub delivery: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub key: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub job: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub account: Option<Cow<'a, str>>,
    #[serde(default)]
    pub attempt: Option<u32>,
    #[serde(default, borrow)]
    pub faults: Vec<Cow<'a, str>>,
    #[serde(default)]
    pub status: Option<u16>,
    #[serde(default)]
    pub latency_ms: Option<f64>,
    #[serde(default, borrow)]
    pub error: Option<Cow<'a, str>>,
    #[serde(default)]
    pub outcome: Option<Outcome>,
    #[serde(default)]
    pub intent: Option<Intent>,
    #[serde(default, borrow)]
    pub detail: Option<Cow<'a, str>>,
    #[serde(default)]
    pub task_status: Option<TaskStatus>,
    #[serde(default, borrow)]
    pub created_at: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub resource: Option<Cow<'a, str>>,
    #[serde(default)]
    pub sequence: Option<u64>,
    #[serde(default)]
    pub poison: bool,
    #[serde(default)]
    pub dead: bool,
}

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

/// Every field either writer puts on an attempt or provider line, in the
/// order `Event`'s serde writes them (the bench's writer keeps that order
/// and leaves some out); a name not here is skipped as [`OTHER`].
const FIELDS: [&str; 22] = [
    "type",
    "scenario",
    "delivery",
    "key",
    "job",
    "account",
    "attempt",
    "round",
    "faults",
    "sent_at",
    "status",
    "latency_ms",
    "error",
    "outcome",
    "intent",
    "detail",
    "task_status",
    "created_at",
    "resource",
    "sequence",
    "poison",
    "dead",
];
/// Each field's index in [`FIELDS`] (`ROUND` and `SENT_AT` are written,
/// not read, so never a duplicate).
mod field {
    pub const TYPE: usize = 0;
    pub const SCENARIO: usize = 1;
    pub const DELIVERY: usize = 2;
    pub const KEY: usize = 3;
    pub const JOB: usize = 4;
    pub const ACCOUNT: usize = 5;
    pub const ATTEMPT: usize = 6;
    pub const ROUND: usize = 7;
    pub const FAULTS: usize = 8;
    pub const SENT_AT: usize = 9;
    pub const STATUS: usize = 10;
    pub const LATENCY_MS: usize = 11;
    pub const ERROR: usize = 12;
    pub const OUTCOME: usize = 13;
    pub const INTENT: usize = 14;
    pub const DETAIL: usize = 15;
    pub const TASK_STATUS: usize = 16;
    pub const CREATED_AT: usize = 17;
    pub const RESOURCE: usize = 18;
    pub const SEQUENCE: usize = 19;
    pub const POISON: usize = 20;
    pub const DEAD: usize = 21;
}
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

/// A field the checker does not read (`sent_at`, `round`, a newer one …).
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

fn boolean(v: Value<'_>) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(b),
        _ => None,
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
            if f < FIELDS.len() && f != field::ROUND && f != field::SENT_AT {
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

/// Puts value `v` of field number `f` into `raw` (the line's type into
/// `kind`); `None` when the value has the wrong shape for its field.
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
        field::SCENARIO => {
            raw.scenario = opt_str(v)?;
        }
        field::DELIVERY => {
            raw.delivery = opt_str(v)?;
        }
        field::KEY => {
            raw.key = opt_str(v)?;
        }
        field::JOB => {
            raw.job = opt_str(v)?;
        }
        field::ACCOUNT => {
            raw.account = opt_str(v)?;
        }
        field::ATTEMPT => {
            raw.attempt = opt_num(v)?;
        }
        field::FAULTS => {
            let Value::Strs(list) = v else { return None };
            raw.faults = list;
        }
        field::STATUS => {
            raw.status = opt_num(v)?;
        }
        field::LATENCY_MS => {
            raw.latency_ms = opt_f64(v)?;
        }
        field::ERROR => {
            raw.error = opt_str(v)?;
        }
        field::OUTCOME => {
            raw.outcome = enum_field(v, outcome)?;
        }
        field::INTENT => {
            raw.intent = enum_field(v, intent)?;
        }
        field::DETAIL => {
            raw.detail = opt_str(v)?;
        }
        field::TASK_STATUS => {
            raw.task_status = enum_field(v, task_status)?;
        }
        field::CREATED_AT => {
            raw.created_at = opt_str(v)?;
        }
        field::RESOURCE => {
            raw.resource = opt_str(v)?;
        }
        field::SEQUENCE => {
            raw.sequence = opt_num(v)?;
        }
        field::POISON => {
            raw.poison = boolean(v)?;
        }
        field::DEAD => {
            raw.dead = boolean(v)?;
        }
        // Fields the checker does not read (sent_at, round, …).
        _ => {}
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{Attempt, Event, ProviderTask};

    fn same(a: &RawLine<'_>, b: &RawLine<'_>) -> bool {
        format!("{:?}", Debuggable(a)) == format!("{:?}", Debuggable(b))
    }

    struct Debuggable<'x, 'a>(&'x RawLine<'a>);

    impl std::fmt::Debug for Debuggable<'_, '_> {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            let r = self.0;
            write!(
                f,
                "{:?}",
                (
                    &r.kind,
                    &r.scenario,
                    &r.delivery,
                    &r.key,
                    &r.job,
                    &r.account,
                    r.attempt,
                    &r.faults,
                    r.status,
                    r.latency_ms,
                    &r.error,
                    r.outcome,
                )
            )?;
            write!(
                f,
                "{:?}",
                (
                    r.intent,
                    &r.detail,
                    r.task_status,
                    &r.created_at,
                    &r.resource,
                    r.sequence,
                    r.poison,
                    r.dead
                )
            )
        }
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
                let line = serde_json::to_string(&Event::Attempt(a)).unwrap();
                let fast = parse(&line);
                prop_assert!(fast.is_some(), "the fast path must take {}", line);
                let slow: RawLine = serde_json::from_str(&line).unwrap();
                prop_assert!(same(&fast.unwrap(), &slow), "{}", line);
                // Another writer's order (serde_json's maps sort their keys)
                // takes the fast path too, only without its guesses.
                let sorted = serde_json::to_string(&serde_json::to_value(Event::Attempt(
                    Attempt { status, latency_ms: lat, ..Attempt::new("s", "whd_1", &key, "acct_a") },
                )).unwrap()).unwrap();
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
