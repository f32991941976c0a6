//! Folds a history, one event at a time, into one compact record per
//! (account, key), then hands the records and the state to each invariant.
//!
//! Strings (accounts, keys, jobs, resources) are interned once and referred
//! to by `u32`; a key's record is a few flags, its job, creation time,
//! sequence and at most [`KEY_LINES`] history line numbers, 72 bytes in
//! all. That keeps a million-attempt history of 200,000 keys within 35 MiB
//! peak RSS for the whole check, state included, and a 1.2M-key history
//! with its million-row state within 272 MiB (measured 2026-12-01).

use std::collections::HashSet;
use std::hash::{Hash, Hasher};
use std::time::Duration;

use rustc_hash::FxHashSet;

use crate::delivery::{job_key, TaskStatus};
use crate::history::scan::RawLine;
use crate::history::{
    attempt_fields, Attempt, Event, Intent, Outcome, ProviderTask, TransportFailure,
};
use crate::tag::FaultTag;

use super::found::Found;
pub(crate) use super::intern::Interner;
use super::verdict::{Counts, DeadLetter, Evidence, MAX_DEAD_LETTERS};
use crate::grading::outcome::{self, AttemptOutcome, Facts, Judged};

pub(crate) use super::intern::NONE;
/// History lines kept per key for evidence.
pub(crate) const KEY_LINES: usize = 4;
/// A check of at least this many keys grades its invariants on two threads.
pub(crate) const GRADE_ON_TWO_THREADS: usize = 10_000;
/// Creation time that is missing or not a valid date.
pub(crate) const NO_TIME: i64 = i64::MIN;

/// Per-key flags.
pub(crate) mod flag {
    pub const GENUINE: u32 = 1;
    pub const TEST: u32 = 1 << 1;
    pub const FORGED: u32 = 1 << 2;
    pub const CROSS: u32 = 1 << 3;
    pub const OVERSIZED: u32 = 1 << 4;
    pub const EXPIRED: u32 = 1 << 5;
    /// A genuine attempt came back `ok`.
    pub const OK: u32 = 1 << 6;
    /// A genuine attempt got a 2xx whose ack the harness discarded.
    pub const DROP_ACK: u32 = 1 << 7;
    pub const POISON: u32 = 1 << 8;
    pub const COMPLETED: u32 = 1 << 9;
    pub const FAILED: u32 = 1 << 10;
    /// The provider reported this task (reconciliation ground truth).
    pub const PROVIDER: u32 = 1 << 11;
    /// The provider's task is final.
    pub const PROVIDER_FINAL: u32 = 1 << 12;
    /// A genuine duplicate was answered with a 4xx.
    pub const DUP_4XX: u32 = 1 << 13;
    /// A test delivery was answered with a 4xx.
    pub const TEST_4XX: u32 = 1 << 14;
    /// A genuine first delivery was answered with a 4xx.
    pub const GEN_4XX: u32 = 1 << 15;
    /// A poison delivery was answered with a non-2xx status.
    pub const POISON_NON2XX: u32 = 1 << 16;
    /// A genuine attempt reached the receiver and was not acknowledged
    /// (not an answer the harness gave itself by design).
    pub const RECEIVER_MISSED: u32 = 1 << 17;
    /// The genuine delivery ran out of attempts (a round ended dead).
    pub const DIED: u32 = 1 << 18;

    pub const ACKED: u32 = OK | DROP_ACK;
    pub const REAL: u32 = GENUINE | PROVIDER;
}

/// What the checker reads of an attempt's fault tags, decided once per
/// attempt from the excuse table ([`crate::grading::excuse`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct TagFacts {
    /// The harness's own front answered with a redirect.
    pub front_redirect: bool,
    /// A fault excuses the attempt's slowness (I7).
    pub excuses_slowness: bool,
    /// The harness discarded the 2xx.
    pub drop_ack: bool,
    /// A fault explains that the attempt was not acknowledged (I9).
    pub explains_missing_ack: bool,
    /// The attempt is a duplicate of a delivery (a copy, replay or redelivery).
    pub duplicate: bool,
    /// The harness's own front gave the status (`front:<status>`): a 4xx
    /// that is no answer of the receiver's (I7).
    pub front_status: bool,
    /// A fault excuses a poison event's non-2xx (I8): the front gave it,
    /// or the harness had the database cut.
    pub excuses_poison_error: bool,
}

impl TagFacts {
    /// The facts of these tags.
    pub fn of(tags: &[FaultTag]) -> TagFacts {
        let mut f = TagFacts::default();
        for t in tags {
            f.add(t);
        }
        f
    }

    /// The facts of tags as the history writes them.
    pub fn of_names<'s>(names: impl IntoIterator<Item = &'s str>) -> TagFacts {
        let mut f = TagFacts::default();
        for n in names {
            f.add(&FaultTag::parse(n));
        }
        f
    }

    fn add(&mut self, t: &FaultTag) {
        self.front_redirect |= *t == FaultTag::FrontRedirect;
        self.excuses_slowness |= crate::grading::excuse::excuses_slowness(t);
        self.drop_ack |= *t == FaultTag::DropAck;
        self.explains_missing_ack |= crate::grading::excuse::explains_missing_ack(t);
        self.duplicate |= t.is_duplicate();
        self.front_status |= matches!(t, FaultTag::FrontStatus(_));
        self.excuses_poison_error |=
            crate::grading::excuse::excused(t, crate::invariant::InvariantId::I8);
    }
}

/// Builds [`AttemptView`] and its two ways in (from an [`Attempt`], from a
/// scanned history line) from the attempt's one field list
/// (`history::record`): a field's kind gives its type here.
macro_rules! attempt_view {
    ($( $(#[doc = $doc:literal])* $(#[serde($($serde:tt)*)])? $name:ident : $kind:ident $($t:ty)? ),* $(,)?) => {
        /// Every field of an attempt as the checker reads it, borrowed
        /// (from an [`Attempt`] or straight from a history line); the
        /// faults as the facts the checker draws from them. It carries
        /// every field, so the list alone says what a view holds; the
        /// checker reads neither the scenario (it has the name), the round
        /// nor the send time.
        #[derive(Debug)]
        #[allow(dead_code)]
        pub(crate) struct AttemptView<'a> {
            $($(#[doc = $doc])* pub $name: view_type!('a, $kind $($t)?),)*
        }

        impl<'a> From<&'a Attempt> for AttemptView<'a> {
            fn from(a: &'a Attempt) -> Self {
                AttemptView {
                    $($name: view_of!(a.$name, $kind $($t)?),)*
                }
            }
        }

        impl<'a> AttemptView<'a> {
            /// The attempt on a scanned line; the error names the first
            /// field the checker needs that the line lacks.
            pub(crate) fn of_scanned(raw: &'a RawLine<'_>) -> Result<AttemptView<'a>, String> {
                Ok(AttemptView {
                    $($name: view_of_scanned!(raw.$name, stringify!($name), $kind $($t)?),)*
                })
            }
        }
    };
}

/// A field's type in [`AttemptView`], from its kind.
macro_rules! view_type {
    ($l:lifetime, text) => { &$l str };
    ($l:lifetime, stamp) => { Option<&$l str> };
    ($l:lifetime, opt_text) => { Option<&$l str> };
    ($l:lifetime, req $t:ty) => { $t };
    ($l:lifetime, dflt $t:ty) => { $t };
    ($l:lifetime, opt $t:ty) => { Option<$t> };
    ($l:lifetime, tags) => { TagFacts };
}

/// A field of an owned attempt as [`AttemptView`] holds it.
macro_rules! view_of {
    ($v:expr, text) => {
        $v.as_str()
    };
    ($v:expr, stamp) => {
        Some($v.as_str())
    };
    ($v:expr, opt_text) => {
        $v.as_deref()
    };
    ($v:expr, req $t:ty) => {
        $v
    };
    ($v:expr, dflt $t:ty) => {
        $v
    };
    ($v:expr, opt $t:ty) => {
        $v
    };
    ($v:expr, tags) => {
        TagFacts::of(&$v)
    };
}

/// A field of a scanned line as [`AttemptView`] holds it (`?` on a
/// missing field the checker needs).
macro_rules! view_of_scanned {
    ($v:expr, $name:expr, text) => {
        $v.as_deref().ok_or_else(|| missing_field($name))?
    };
    ($v:expr, $name:expr, stamp) => {
        $v.as_deref()
    };
    ($v:expr, $name:expr, opt_text) => {
        $v.as_deref()
    };
    ($v:expr, $name:expr, req $t:ty) => {
        $v.ok_or_else(|| missing_field($name))?
    };
    ($v:expr, $name:expr, dflt $t:ty) => {
        $v
    };
    ($v:expr, $name:expr, opt $t:ty) => {
        $v
    };
    ($v:expr, $name:expr, tags) => {
        TagFacts::of_names($v.iter().map(|f| f.as_ref()))
    };
}

attempt_fields!(attempt_view);

/// The error of a history line without a field the checker needs.
pub(crate) fn missing_field(field: &str) -> String {
    format!("missing field `{field}`")
}

/// The fields of a provider task the checker reads, borrowed.
#[derive(Debug)]
pub(crate) struct ProviderView<'a> {
    pub account: &'a str,
    pub key: &'a str,
    pub job: Option<&'a str>,
    pub task_status: TaskStatus,
    pub created_at: &'a str,
}

impl<'a> From<&'a ProviderTask> for ProviderView<'a> {
    fn from(p: &'a ProviderTask) -> Self {
        ProviderView {
            account: &p.account,
            key: &p.key,
            job: p.job.as_deref(),
            task_status: p.task_status,
            created_at: &p.created_at,
        }
    }
}

/// Everything the checker keeps about one (account, key): 72 bytes. Line
/// numbers are `u32` (the reader refuses histories past [`MAX_LINES`]),
/// and the sequence counts only with a resource.
#[derive(Debug, Clone)]
pub(crate) struct KeyAgg {
    pub account: u32,
    pub key: u32,
    pub job: u32,
    pub resource: u32,
    /// The resource's sequence (read through [`KeyAgg::sequence`]).
    pub sequence: u64,
    pub created: i64,
    pub flags: u32,
    pub first_line: u32,
    pub lines: [u32; KEY_LINES],
    /// Relevant lines seen (saturating); the first [`KEY_LINES`] are kept.
    pub seen: u16,
    /// First line of a non-strict status deviation.
    pub status_line: u32,
    /// Line of the last genuine attempt that reached the receiver and was
    /// not acknowledged (0: none).
    pub missed_line: u32,
    /// The status of that attempt (0: no answer).
    pub missed_status: u16,
    /// Genuine attempts made.
    pub genuine_attempts: u32,
}

/// The most history lines a check reads (line numbers are kept as `u32`).
pub(crate) const MAX_LINES: u64 = u32::MAX as u64;

/// A line number as a record keeps it; the reader stops at [`MAX_LINES`],
/// so the saturation never shows.
pub(crate) fn line32(line: u64) -> u32 {
    u32::try_from(line).unwrap_or(u32::MAX)
}

impl KeyAgg {
    pub fn has(&self, f: u32) -> bool {
        self.flags & f != 0
    }

    pub(super) fn add_line(&mut self, line: u64) {
        let kept = self.kept();
        if kept < KEY_LINES {
            self.lines[kept] = line32(line);
        }
        self.seen = self.seen.saturating_add(1);
    }

    /// How many of `lines` hold a line.
    pub(super) fn kept(&self) -> usize {
        usize::from(self.seen).min(KEY_LINES)
    }

    /// How many relevant lines the key had in all (the first line when
    /// none was marked relevant), of which [`KeyAgg::evidence_lines`] lists
    /// the first [`KEY_LINES`].
    pub fn lines_seen(&self) -> usize {
        usize::from(self.seen).max(1)
    }

    /// The resource's sequence, when the key has a resource.
    pub fn sequence(&self) -> Option<u64> {
        (self.resource != NONE).then_some(self.sequence)
    }

    /// The relevant lines, or the first line when none was marked relevant.
    pub fn evidence_lines(&self) -> Vec<u64> {
        if self.seen == 0 {
            vec![self.first_line.into()]
        } else {
            self.lines[..self.kept()]
                .iter()
                .map(|&l| l.into())
                .collect()
        }
    }

    /// A genuine key acknowledged with a 2xx (also one the harness discarded).
    pub fn acknowledged(&self) -> bool {
        self.has(flag::GENUINE) && self.has(flag::ACKED)
    }

    /// Whether the key must be in the inbox (I1): acknowledged, or after a
    /// reconciliation a final task the provider knows.
    pub fn must_store(&self, reconciled: bool) -> bool {
        self.acknowledged() || (reconciled && self.has(flag::PROVIDER_FINAL))
    }
}

/// The streaming fold of a scenario's history.
pub struct Aggregator {
    pub(crate) strings: Interner,
    pub(crate) keys: Vec<KeyAgg>,
    /// The records, found by [`name_hash`] of (account id, key): a line
    /// finds its key's record without interning the key, and a state row by
    /// its ids. The table holds bare record indexes (rehashed through
    /// `keys` and `strings`), about 6 bytes a key: two maps of ids and of
    /// hashes cost about 50.
    by_name: hashbrown::HashTable<u32>,
    pub(super) deliveries: FxHashSet<u64>,
    pub(crate) counts: Counts,
    /// The first dead letters, with their history lines and records.
    pub(super) dead: Vec<(u64, DeadLetter, u32)>,
    /// The record of every genuine delivery that died, in order: what
    /// each death came to is settled once its key is read
    /// ([`Aggregator::settle_deaths`]).
    pub(super) died: Vec<u32>,
    /// I7's findings about single answers ([`status_findings`]).
    pub(crate) status_fail: Found,
    pub(crate) answer_limit: Duration,
    pub(crate) sequenced: bool,
    /// The account of the last attempt: histories have few accounts, so
    /// most lines skip interning theirs.
    last_account: u32,
}

fn is_2xx(s: Option<u16>) -> bool {
    matches!(s, Some(200..=299))
}

fn is_4xx(s: Option<u16>) -> bool {
    matches!(s, Some(400..=499))
}

/// The hash [`Aggregator`] finds a key's record by.
pub(super) fn name_hash(account: u32, key: &str) -> u64 {
    let mut h = rustc_hash::FxHasher::default();
    account.hash(&mut h);
    key.hash(&mut h);
    h.finish()
}

fn parse_time(t: Option<&str>) -> i64 {
    t.and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .and_then(|d| d.timestamp_nanos_opt())
        .unwrap_or(NO_TIME)
}

impl crate::history::Fold for Aggregator {
    fn push(&mut self, line: u64, event: &Event) {
        Aggregator::push(self, line, event);
    }
}

impl Aggregator {
    /// An empty fold; `answer_limit` is the profile's answer time limit.
    pub fn new(answer_limit: Duration) -> Self {
        Aggregator {
            strings: Interner::default(),
            keys: Vec::new(),
            by_name: hashbrown::HashTable::new(),
            deliveries: FxHashSet::default(),
            counts: Counts::default(),
            dead: Vec::new(),
            died: Vec::new(),
            status_fail: Found::default(),
            answer_limit,
            sequenced: false,
            last_account: NONE,
        }
    }

    fn slot(&mut self, account: &str, key: &str, line: u64) -> usize {
        let last = self.last_account;
        let a = if last != NONE && self.strings.name(last) == account {
            last
        } else {
            self.strings.intern(account)
        };
        self.last_account = a;
        let h = name_hash(a, key);
        let (keys, strings) = (&self.keys, &self.strings);
        if let Some(&i) = self.by_name.find(h, |&i| {
            let k = &keys[i as usize];
            k.account == a && strings.name(k.key) == key
        }) {
            return i as usize;
        }
        let k = self.strings.intern(key);
        self.add_key(
            KeyAgg {
                account: a,
                key: k,
                job: NONE,
                resource: NONE,
                sequence: 0,
                created: NO_TIME,
                flags: 0,
                first_line: line32(line),
                lines: [0; KEY_LINES],
                seen: 0,
                status_line: 0,
                missed_line: 0,
                missed_status: 0,
                genuine_attempts: 0,
            },
            h,
        ) as usize
    }

    /// Counts the distinct deliveries read so far and frees their set
    /// (about 16 bytes a delivery) before the state is read: called once
    /// the history has no more lines to give.
    pub(crate) fn seal_deliveries(&mut self) {
        self.counts.deliveries += self.deliveries.len();
        self.deliveries = FxHashSet::default();
    }

    /// Adds a record for a new (account, key) whose [`name_hash`] is `h`.
    pub(super) fn add_key(&mut self, k: KeyAgg, h: u64) -> u32 {
        let i = self.keys.len() as u32;
        self.keys.push(k);
        let (keys, strings) = (&self.keys, &self.strings);
        self.by_name.insert_unique(h, i, |&i| {
            let k = &keys[i as usize];
            name_hash(k.account, strings.name(k.key))
        });
        i
    }

    /// The index into `keys` of (account, key), when the history has it.
    pub(crate) fn slot_of(&self, account: u32, key: u32) -> Option<usize> {
        let h = name_hash(account, self.strings.name(key));
        self.by_name
            .find(h, |&i| {
                let k = &self.keys[i as usize];
                k.account == account && k.key == key
            })
            .map(|&i| i as usize)
    }

    pub(crate) fn lookup(&self, account: u32, key: u32) -> Option<&KeyAgg> {
        self.slot_of(account, key).map(|i| &self.keys[i])
    }

    /// The (account, key) pairs the receiver must end up storing so far:
    /// what I1 will check ([`KeyAgg::must_store`]).
    pub fn keys_to_store(&self, reconciled: bool) -> HashSet<(String, String)> {
        self.keys
            .iter()
            .filter(|k| k.must_store(reconciled))
            .map(|k| {
                (
                    self.strings.name(k.account).to_string(),
                    self.strings.name(k.key).to_string(),
                )
            })
            .collect()
    }

    /// Folds one event (with its 1-based history line) in.
    pub fn push(&mut self, line: u64, event: &Event) {
        match event {
            Event::Attempt(a) => self.attempt(line, &AttemptView::from(a)),
            Event::Provider(p) => self.provider(line, &ProviderView::from(p)),
            Event::Run(_) | Event::Fault(_) | Event::Emit(_) => {}
        }
    }

    fn describe_task(
        &mut self,
        i: usize,
        job: Option<&str>,
        status: Option<TaskStatus>,
        created: Option<&str>,
    ) {
        if self.keys[i].job == NONE {
            if let Some(j) = job {
                self.keys[i].job = self.strings.intern(job_key(j));
            }
        }
        let agg = &mut self.keys[i];
        match status {
            Some(TaskStatus::Completed) => agg.flags |= flag::COMPLETED,
            Some(TaskStatus::Failed) => agg.flags |= flag::FAILED,
            _ => {}
        }
        if agg.created == NO_TIME {
            agg.created = parse_time(created);
        }
    }

    pub(crate) fn provider(&mut self, line: u64, p: &ProviderView) {
        let i = self.slot(p.account, p.key, line);
        self.keys[i].flags |= flag::PROVIDER;
        if p.task_status.is_final() {
            self.keys[i].flags |= flag::PROVIDER_FINAL;
        }
        self.describe_task(i, p.job, Some(p.task_status), Some(p.created_at));
    }

    /// Folds one attempt: the run's counts, the answer's own findings
    /// ([`status_findings`]) and the key's record ([`Aggregator::key_attempt`]).
    pub(crate) fn attempt(&mut self, line: u64, a: &AttemptView) {
        self.counts.count(a);
        let mut h = std::hash::DefaultHasher::new();
        a.delivery.hash(&mut h);
        self.deliveries.insert(h.finish());
        status_findings(line, a, self.answer_limit, &mut self.status_fail);
        self.key_attempt(line, a);
    }

    /// Folds what one attempt says about its key. It reads neither the
    /// latency nor the detail of the attempt, and its delivery and error
    /// only when the delivery died: a partition's spilled attempts carry
    /// no more than that.
    pub(crate) fn key_attempt(&mut self, line: u64, a: &AttemptView) {
        let i = self.slot(a.account, a.key, line);
        if a.intent == Intent::Genuine {
            self.describe_task(i, a.job, a.task_status, a.created_at);
        }
        if let (Some(r), Some(s)) = (a.resource, a.sequence) {
            self.sequenced = true;
            if self.keys[i].resource == NONE {
                self.keys[i].resource = self.strings.intern(r);
                self.keys[i].sequence = s;
            }
        }
        let tags = a.faults;
        let agg = &mut self.keys[i];
        // A 4xx the harness's front gave (`front:429`) is not the
        // receiver's answer (the excuse table's front:<status> row).
        if is_4xx(a.status) && !tags.front_status {
            // I7's 4xx rules; whether they are deviations or failures is
            // decided at the end, once the state says whether it stayed intact.
            let f = match a.intent {
                Intent::Genuine if agg.has(flag::ACKED) || tags.duplicate => flag::DUP_4XX,
                Intent::Genuine => flag::GEN_4XX,
                Intent::Test => flag::TEST_4XX,
                _ => 0,
            };
            if f != 0 {
                agg.flags |= f;
                if agg.status_line == 0 {
                    agg.status_line = line32(line);
                }
            }
        }
        agg.flags |= match a.intent {
            Intent::Genuine => flag::GENUINE,
            Intent::Test => flag::TEST,
            Intent::Forged => flag::FORGED,
            Intent::CrossAccount => flag::CROSS,
            Intent::Oversized => flag::OVERSIZED,
            Intent::ExpiredReplay => flag::EXPIRED,
        };
        if a.poison {
            agg.flags |= flag::POISON;
            // A status the harness's own front gave, or a 5xx while the
            // harness had the database cut, is no processing error that
            // reached the sender (the table of what faults excuse says so).
            if a.status.is_some() && !is_2xx(a.status) && !tags.excuses_poison_error {
                agg.flags |= flag::POISON_NON2XX;
                if agg.status_line == 0 {
                    agg.status_line = line32(line);
                }
            }
        }
        let genuine = a.intent == Intent::Genuine;
        let ok = genuine && a.outcome == Outcome::Ok;
        let drop_ack = genuine && is_2xx(a.status) && tags.drop_ack;
        if ok {
            agg.flags |= flag::OK;
        }
        if drop_ack {
            agg.flags |= flag::DROP_ACK;
        }
        if genuine {
            agg.genuine_attempts += 1;
            // I9: an attempt the receiver itself saw and did not acknowledge.
            // A transport error, a malformed answer or a connection closed
            // before the status line has no status: never an acknowledgement.
            if outcome::receiver_missed(&facts(a)) {
                agg.flags |= flag::RECEIVER_MISSED;
                agg.missed_line = line32(line);
                agg.missed_status = a.status.unwrap_or(0);
            }
            if a.dead {
                agg.flags |= flag::DIED;
            }
        }
        if ok || drop_ack || !genuine {
            agg.add_line(line);
        }

        if a.dead {
            self.counts_dead_letter(line, i, a);
        }
    }

    /// Keeps a dead delivery, while there is room (`Counts::dead` counts
    /// them all). A genuine one's death is settled with its key
    /// ([`Aggregator::settle_deaths`]); any other died as its own last
    /// attempt says (a forged delivery refused to the end died by design).
    fn counts_dead_letter(&mut self, line: u64, i: usize, a: &AttemptView) {
        let by_design = match outcome::judge(&facts(a)) {
            Judged::Died => {
                self.died.push(i as u32);
                true
            }
            Judged::Now(o) => matches!(
                o,
                AttemptOutcome::RejectedAsRequired | AttemptOutcome::FailedByDesign
            ),
        };
        if self.dead.len() < MAX_DEAD_LETTERS {
            self.dead.push((
                line,
                DeadLetter {
                    delivery: a.delivery.to_string(),
                    key: a.key.to_string(),
                    account: a.account.to_string(),
                    attempts: a.attempt,
                    last_status: a.status,
                    last_error: a.error.map(str::to_string),
                    recovered: false,
                    by_design,
                },
                i as u32,
            ));
        }
    }

    /// Every genuine death settled by its key, as I9 judges it: by design
    /// unless the receiver itself missed an attempt of the key. Counts
    /// each into `counts` and says so on the dead letters.
    pub(crate) fn settle_deaths(&self, counts: &mut Counts) -> Vec<(u64, DeadLetter, u32)> {
        for &i in &self.died {
            let missed = self.keys[i as usize].has(flag::RECEIVER_MISSED);
            counts.add_outcome(outcome::of_death(missed), 1);
        }
        self.dead
            .iter()
            .map(|(line, d, i)| {
                let k = &self.keys[*i as usize];
                let mut d = d.clone();
                if k.has(flag::GENUINE) && k.has(flag::RECEIVER_MISSED) {
                    d.by_design = false;
                }
                (*line, d, *i)
            })
            .collect()
    }
}

/// What [`outcome::judge`] reads of an attempt.
pub(crate) fn facts(a: &AttemptView) -> Facts {
    Facts {
        intent: a.intent,
        status: a.status,
        outcome: a.outcome,
        excused: a.faults.explains_missing_ack,
        drop_ack: a.faults.drop_ack,
        dead: a.dead,
    }
}

impl Counts {
    /// Counts one attempt (not its delivery: distinct deliveries are
    /// counted apart).
    pub(crate) fn count(&mut self, a: &AttemptView) {
        self.attempts += 1;
        match a.outcome {
            Outcome::Ok => self.ok += 1,
            Outcome::Fail => self.fail += 1,
            Outcome::Info => self.info += 1,
        }
        if a.dead {
            self.dead += 1;
        }
        // What the attempt came to; a genuine death is counted with its
        // key ([`Aggregator::settle_deaths`]).
        if let Judged::Now(o) = outcome::judge(&facts(a)) {
            self.add_outcome(o, 1);
        }
    }

    /// Adds `other`'s counts, found apart.
    pub(crate) fn add(&mut self, other: &Counts) {
        self.deliveries += other.deliveries;
        self.attempts += other.attempts;
        self.ok += other.ok;
        self.fail += other.fail;
        self.info += other.info;
        self.dead += other.dead;
        for (o, n) in &other.outcomes {
            self.add_outcome(*o, *n);
        }
    }
}

/// I7's rules for one answer alone, whatever else the history holds: every
/// 3xx (but the harness's own redirect), a 2xx to a delivery that had to be
/// rejected or a test delivery's 2xx the provider would not accept, and an
/// answer slower than `limit` (unless a fault the harness injected made it
/// slow). Ranked by the attempt's history line.
pub(crate) fn status_findings(line: u64, a: &AttemptView, limit: Duration, out: &mut Found) {
    let fail = |what: String| Evidence::new(a.key, Some(a.account.to_string()), what, vec![line]);
    let rank = (0, line);
    if let Some(s @ 300..=399) = a.status {
        if !a.faults.front_redirect {
            out.push(rank, || {
                fail(format!(
                    "answered {s}: redirects are never followed, every 3xx is a failed attempt"
                ))
            });
        }
    }
    if a.intent.must_reject() && is_2xx(a.status) {
        let s = a.status.unwrap_or_default();
        let kind = a.detail.unwrap_or(match a.intent {
            Intent::CrossAccount => "other account's secret",
            Intent::Oversized => "oversized body",
            Intent::ExpiredReplay => "expired replay",
            _ => "forged",
        });
        out.push(rank, || {
            fail(format!("{kind} delivery answered {s}; it must get a 4xx"))
        });
    }
    // A 2xx the sender did not accept: the answer lacked what the
    // provider's own check asks for (a Slack url_verification's challenge).
    if a.intent == Intent::Test && is_2xx(a.status) && a.outcome == Outcome::Fail {
        let s = a.status.unwrap_or_default();
        let why = a
            .error
            .unwrap_or("it lacked what the provider's check asks for");
        out.push(rank, || {
            fail(format!(
                "test delivery answered {s}, but {why}: the provider would not enable this URL"
            ))
        });
    }
    // Only the harness holding or stalling the request excuses slowness.
    if !a.faults.excuses_slowness {
        let limit_ms = limit.as_secs_f64() * 1000.0;
        if let Some(ms) = a.latency_ms.filter(|&ms| ms > limit_ms) {
            out.push(rank, || {
                fail(format!(
                    "answered after {:.0} ms, over the {:.0} ms limit",
                    ms, limit_ms
                ))
            });
        } else if a.status.is_none()
            && a.error.map(TransportFailure::of) == Some(TransportFailure::Timeout)
        {
            out.push(rank, || {
                fail(format!("no answer within the {:.0} ms limit", limit_ms))
            });
        }
    }
}

#[cfg(test)]
mod one_record {
    //! The attempt's one field list reaches every form: an attempt with
    //! every field set reads back the same through serde, through the
    //! scanner, and into the checker's view from either.
    use super::*;
    use crate::history::scan;

    /// An attempt whose every listed field differs from its default.
    fn every_field_set() -> Attempt {
        Attempt {
            scenario: "baseline".into(),
            delivery: "whd_1".into(),
            key: "tsk_1".into(),
            job: Some("job-1".into()),
            account: "acct_a".into(),
            attempt: 3,
            round: 1,
            faults: vec![FaultTag::DropAck, FaultTag::Replay],
            sent_at: "2026-12-05T10:00:00.000Z".into(),
            status: Some(503),
            latency_ms: Some(12.5),
            error: Some("connection reset".into()),
            outcome: Outcome::Fail,
            intent: Intent::Forged,
            detail: Some("stale-timestamp".into()),
            task_status: Some(TaskStatus::Failed),
            created_at: Some("2026-12-05T09:59:00Z".into()),
            resource: Some("res-1".into()),
            sequence: Some(7),
            poison: true,
            dead: true,
            sink: None,
        }
    }

    /// Fails naming each listed field the fixture leaves at its default:
    /// a field added to the list must be set above, and so is carried
    /// through every form below.
    macro_rules! assert_every_field_set {
        ($( $(#[doc = $doc:literal])* $(#[serde($($serde:tt)*)])? $name:ident : $kind:ident $($t:ty)? ),* $(,)?) => {{
            let (a, d) = (every_field_set(), Attempt::default());
            let unset: Vec<&str> = [$((stringify!($name), a.$name == d.$name)),*]
                .into_iter()
                .filter(|(_, same)| *same)
                .map(|(name, _)| name)
                .collect();
            assert!(unset.is_empty(), "fields the fixture leaves unset: {unset:?}");
        }};
    }

    #[test]
    fn every_listed_field_reaches_serde_the_scanner_and_the_checkers_view() {
        attempt_fields!(assert_every_field_set);
        let a = every_field_set();
        let line = serde_json::to_string(&Event::Attempt(a.clone())).expect("serialize");
        // serde, both ways.
        let back: Event = serde_json::from_str(&line).expect("serde reads it");
        assert_eq!(back, Event::Attempt(a.clone()));
        // The scanner reads what serde reads into the flat line.
        let scanned = scan::parse(&line).expect("the fast path reads a line hookstorm wrote");
        let by_serde: RawLine<'_> = serde_json::from_str(&line).expect("serde's flat line");
        assert_eq!(scanned, by_serde);
        // The checker's view is the same from the attempt and from the line.
        let from_attempt = format!("{:?}", AttemptView::from(&a));
        let from_line = format!("{:?}", AttemptView::of_scanned(&scanned).expect("view"));
        assert_eq!(from_attempt, from_line);
        for value in [
            "whd_1",
            "job-1",
            "503",
            "12.5",
            "stale-timestamp",
            "res-1",
            "Failed",
        ] {
            assert!(
                from_line.contains(value),
                "{value} missing from {from_line}"
            );
        }
    }

    #[test]
    fn a_line_without_a_field_the_checker_needs_names_it() {
        let line = r#"{"type":"attempt","scenario":"s","delivery":"d","key":"k","account":"a","sent_at":"t","outcome":"ok","intent":"genuine"}"#;
        let raw = scan::parse(line).expect("scanned");
        let err = AttemptView::of_scanned(&raw).expect_err("no attempt number");
        assert_eq!(err, "missing field `attempt`");
    }
}
