//! The records a check in partitions spills to disk, and their binary form.
//!
//! A partition's attempts, state rows and the per-key records I5 and I6
//! need are written once and read back once, so the form is as small and
//! as quick to read as it can be without a library: every record is its
//! length (`u32`, little-endian) and a payload that starts with a tag and
//! the scenario's index; numbers are little-endian, strings their length
//! and bytes. An attempt keeps only what the key's record folds
//! ([`Aggregator::key_attempt`](crate::check::aggregate::Aggregator)):
//! about 90 bytes where its history line has 350. The reader lends each
//! record from one buffer, so reading allocates nothing per record.
//!
//! The files are the harness's own, written and read by one process (or by
//! one version of it, for a partition another process checked); a record
//! that does not decode is an `InvalidData` error, never a panic.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::Path;

use crate::delivery::TaskStatus;
use crate::history::{Intent, Outcome};

use crate::check::aggregate::{AttemptView, ProviderView, TagFacts, KEY_LINES};
use crate::check::order::{Cand, EvLines, Seq, TaskInfo};
use crate::check::view::RowRef;

/// What each spill file's writer holds before it writes (whole records):
/// a partitioned check keeps one open per partition and reading thread.
const WRITE_BUFFER: usize = 32 * 1024;
/// Buffer of a reader (more for a longer record).
const READ_BUFFER: usize = 1 << 20;

const ATTEMPT: u8 = 1;
const PROVIDER: u8 = 2;
const DELIVERY: u8 = 3;
const ROW: u8 = 4;
const CAND: u8 = 5;
const WIN: u8 = 6;
const SEQ: u8 = 7;

const INTENTS: [Intent; 6] = [
    Intent::Genuine,
    Intent::Test,
    Intent::Forged,
    Intent::CrossAccount,
    Intent::Oversized,
    Intent::ExpiredReplay,
];
const OUTCOMES: [Outcome; 3] = [Outcome::Ok, Outcome::Fail, Outcome::Info];
const TASKS: [TaskStatus; 4] = [
    TaskStatus::Queued,
    TaskStatus::Processing,
    TaskStatus::Completed,
    TaskStatus::Failed,
];

/// Attempt flags.
mod bit {
    pub const POISON: u32 = 1 << 5;
    pub const DEAD: u32 = 1 << 6;
    pub const STATUS: u32 = 1 << 7;
    pub const DROP_ACK: u32 = 1 << 8;
    pub const DUPLICATE: u32 = 1 << 9;
    pub const EXPLAINED: u32 = 1 << 10;
    pub const JOB: u32 = 1 << 11;
    pub const CREATED: u32 = 1 << 12;
    pub const RESOURCE: u32 = 1 << 13;
    pub const TASK: u32 = 1 << 14;
    pub const ERROR: u32 = 1 << 15;
    pub const FRONT_STATUS: u32 = 1 << 16;
    pub const POISON_EXCUSED: u32 = 1 << 17;
}

/// A per-key record of I5 or I6, or a winners row and what its task is,
/// with names instead of ids.
#[derive(Debug)]
pub(crate) enum JoinRecord<'a> {
    /// A candidate of a job's race (I5).
    Cand {
        account: &'a str,
        job: &'a str,
        key: &'a str,
        cand: Cand,
    },
    /// A winners row, with what its task is in the history for each
    /// account that has it.
    Win {
        at: u32,
        account: Option<&'a str>,
        job: &'a str,
        task: &'a str,
        infos: Vec<(&'a str, TaskInfo)>,
    },
    /// A stored key of a sequenced resource (I6).
    Seq {
        account: &'a str,
        resource: &'a str,
        seq: Seq,
    },
}

/// One record, borrowed from the reader.
#[derive(Debug)]
pub(crate) enum Record<'a> {
    /// An attempt at a history line (of the reading part's own numbering).
    Attempt(u64, AttemptView<'a>),
    /// A provider task at a history line.
    Provider(u64, ProviderView<'a>),
    /// A delivery id's hash, for the distinct count.
    Delivery(u64),
    /// A state row and its place in its section.
    Row(u32, RowRef<'a>),
    /// A record for I5 or I6.
    Join(JoinRecord<'a>),
}

/// Writes records to one spill file.
pub(crate) struct Writer {
    out: File,
    /// Whole records not yet written, each encoded in place.
    buf: Vec<u8>,
    /// Where the record being encoded starts (its length goes there).
    at: usize,
}

impl Writer {
    /// Creates (or truncates) `path`.
    pub fn create(path: &Path) -> io::Result<Writer> {
        Ok(Writer {
            out: File::create(path)?,
            buf: Vec::with_capacity(WRITE_BUFFER + 256),
            at: 0,
        })
    }

    fn begin(&mut self, tag: u8, scenario: u16) {
        self.at = self.buf.len();
        self.buf.extend_from_slice(&[0; 4]);
        self.buf.push(tag);
        self.buf.extend_from_slice(&scenario.to_le_bytes());
    }

    fn num<const N: usize>(&mut self, bytes: [u8; N]) {
        self.buf.extend_from_slice(&bytes);
    }

    fn text(&mut self, s: &str) {
        self.num((s.len() as u32).to_le_bytes());
        self.buf.extend_from_slice(s.as_bytes());
    }

    fn lines(&mut self, l: EvLines) {
        self.buf.push(l.n);
        self.num(l.seen.to_le_bytes());
        for x in l.lines {
            self.num(x.to_le_bytes());
        }
    }

    fn end(&mut self) -> io::Result<()> {
        let len = (self.buf.len() - self.at - 4) as u32;
        self.buf[self.at..self.at + 4].copy_from_slice(&len.to_le_bytes());
        if self.buf.len() >= WRITE_BUFFER {
            self.out.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }

    /// What the key's record folds of an attempt at `line`.
    pub fn attempt(&mut self, scenario: u16, line: u64, a: &AttemptView) -> io::Result<()> {
        // Every field by name, no `..`: a field added to the attempt does
        // not compile here until the spill keeps it or says why not.
        let AttemptView {
            // The record's scenario index says it.
            scenario: _,
            delivery,
            key,
            account,
            job,
            attempt,
            // Not folded into a key's record.
            round: _,
            faults: tags,
            sent_at: _,
            status,
            // Read only by the whole-history pass (slowness, I7).
            latency_ms: _,
            error,
            outcome,
            intent,
            detail: _,
            task_status,
            created_at,
            resource,
            sequence,
            poison,
            dead,
        } = *a;
        self.begin(ATTEMPT, scenario);
        let intent = INTENTS.iter().position(|i| *i == intent).unwrap_or(0) as u32;
        let outcome = OUTCOMES.iter().position(|o| *o == outcome).unwrap_or(0) as u32;
        let error = error.filter(|_| dead);
        let resource = resource.filter(|_| sequence.is_some());
        let bits = [
            (poison, bit::POISON),
            (dead, bit::DEAD),
            (status.is_some(), bit::STATUS),
            (tags.drop_ack, bit::DROP_ACK),
            (tags.duplicate, bit::DUPLICATE),
            (tags.front_status, bit::FRONT_STATUS),
            (tags.excuses_poison_error, bit::POISON_EXCUSED),
            (tags.explains_missing_ack, bit::EXPLAINED),
            (job.is_some(), bit::JOB),
            (created_at.is_some(), bit::CREATED),
            (resource.is_some(), bit::RESOURCE),
            (task_status.is_some(), bit::TASK),
            (error.is_some(), bit::ERROR),
        ];
        let flags = bits
            .into_iter()
            .filter(|(on, _)| *on)
            .fold(intent | outcome << 3, |f, (_, b)| f | b);
        self.num(flags.to_le_bytes());
        self.num(line.to_le_bytes());
        self.num(status.unwrap_or(0).to_le_bytes());
        self.num(attempt.to_le_bytes());
        self.buf.push(task_code(task_status));
        self.num(sequence.unwrap_or(0).to_le_bytes());
        self.text(account);
        self.text(key);
        for s in [job, created_at, resource].into_iter().flatten() {
            self.text(s);
        }
        if dead {
            self.text(delivery);
        }
        if let Some(e) = error {
            self.text(e);
        }
        self.end()
    }

    /// A provider task at `line`.
    pub fn provider(&mut self, scenario: u16, line: u64, p: &ProviderView) -> io::Result<()> {
        self.begin(PROVIDER, scenario);
        self.num(line.to_le_bytes());
        self.buf.push(task_code(Some(p.task_status)));
        self.buf.push(u8::from(p.job.is_some()));
        self.text(p.account);
        self.text(p.key);
        self.text(p.created_at);
        if let Some(j) = p.job {
            self.text(j);
        }
        self.end()
    }

    /// A delivery id's hash.
    pub fn delivery(&mut self, scenario: u16, hash: u64) -> io::Result<()> {
        self.begin(DELIVERY, scenario);
        self.num(hash.to_le_bytes());
        self.end()
    }

    /// A state row, the `at`-th of its section.
    pub fn row(&mut self, scenario: u16, at: u32, row: &RowRef) -> io::Result<()> {
        self.begin(ROW, scenario);
        self.num(at.to_le_bytes());
        let (section, account) = match row {
            RowRef::Inbox { account, .. } => (0u8, account),
            RowRef::Results { account, .. } => (1, account),
            RowRef::Winners { account, .. } => (2, account),
            RowRef::Effects { account, .. } => (3, account),
            RowRef::Resources { account, .. } => (4, account),
        };
        self.buf.push(section);
        self.buf.push(u8::from(account.is_some()));
        if let Some(a) = account {
            self.text(a);
        }
        match *row {
            RowRef::Inbox {
                key,
                processed,
                failed,
                ..
            } => {
                self.buf.push(u8::from(processed) | u8::from(failed) << 1);
                self.text(key);
            }
            RowRef::Results { task, .. } => self.text(task),
            RowRef::Winners { job, task, .. } => {
                self.text(job);
                self.text(task);
            }
            RowRef::Effects { key, count, .. } => {
                self.num(count.to_le_bytes());
                self.text(key);
            }
            RowRef::Resources {
                resource, sequence, ..
            } => {
                self.num(sequence.to_le_bytes());
                self.text(resource);
            }
        }
        self.end()
    }

    /// A record for I5 or I6.
    pub fn join(&mut self, scenario: u16, r: &JoinRecord) -> io::Result<()> {
        match r {
            JoinRecord::Cand {
                account,
                job,
                key,
                cand: c,
            } => {
                self.begin(CAND, scenario);
                self.num(c.created.to_le_bytes());
                self.buf.push(u8::from(c.completed));
                self.num(c.first_line.to_le_bytes());
                self.lines(c.lines);
                self.text(account);
                self.text(job);
                self.text(key);
            }
            JoinRecord::Win {
                at,
                account,
                job,
                task,
                infos,
            } => {
                self.begin(WIN, scenario);
                self.num(at.to_le_bytes());
                self.buf.push(u8::from(account.is_some()));
                if let Some(a) = account {
                    self.text(a);
                }
                self.text(job);
                self.text(task);
                self.num((infos.len() as u32).to_le_bytes());
                for (a, t) in infos {
                    self.buf.push(u8::from(t.failed));
                    self.num(t.created.to_le_bytes());
                    self.lines(t.lines);
                    self.text(a);
                }
            }
            JoinRecord::Seq {
                account,
                resource,
                seq: s,
            } => {
                self.begin(SEQ, scenario);
                self.num(s.sequence.to_le_bytes());
                self.num(s.first_line.to_le_bytes());
                self.lines(s.lines);
                self.text(account);
                self.text(resource);
            }
        }
        self.end()
    }

    /// Flushes what is buffered.
    pub fn finish(mut self) -> io::Result<()> {
        self.out.write_all(&self.buf)?;
        self.buf.clear();
        self.out.flush()
    }
}

fn task_code(t: Option<TaskStatus>) -> u8 {
    t.and_then(|t| TASKS.iter().position(|x| *x == t))
        .map_or(0, |i| i as u8 + 1)
}

/// Reads one spill file's records in order.
pub(crate) struct Reader {
    input: File,
    /// What was read and not yet decoded: `buf[at..end]`.
    buf: Vec<u8>,
    at: usize,
    end: usize,
}

fn bad(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("a spilled record of the check is damaged ({what})"),
    )
}

/// Reads fields off a record's payload.
struct Fields<'a> {
    b: &'a [u8],
}

impl<'a> Fields<'a> {
    fn take(&mut self, n: usize) -> io::Result<&'a [u8]> {
        if self.b.len() < n {
            return Err(bad("cut short"));
        }
        let (head, rest) = self.b.split_at(n);
        self.b = rest;
        Ok(head)
    }

    fn u8(&mut self) -> io::Result<u8> {
        Ok(self.take(1)?[0])
    }

    fn array<const N: usize>(&mut self) -> io::Result<[u8; N]> {
        Ok(self.take(N)?.try_into().expect("took N bytes"))
    }

    fn u16(&mut self) -> io::Result<u16> {
        Ok(u16::from_le_bytes(self.array()?))
    }

    fn u32(&mut self) -> io::Result<u32> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    fn u64(&mut self) -> io::Result<u64> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    fn i64(&mut self) -> io::Result<i64> {
        Ok(i64::from_le_bytes(self.array()?))
    }

    fn text(&mut self) -> io::Result<&'a str> {
        let n = self.u32()? as usize;
        std::str::from_utf8(self.take(n)?).map_err(|_| bad("not UTF-8"))
    }

    fn lines(&mut self) -> io::Result<EvLines> {
        let n = self.u8()?;
        let seen = self.u16()?;
        let mut lines = [0u32; KEY_LINES];
        for l in &mut lines {
            *l = self.u32()?;
        }
        if usize::from(n) > KEY_LINES {
            return Err(bad("too many lines"));
        }
        Ok(EvLines { lines, n, seen })
    }

    fn task(&mut self) -> io::Result<Option<TaskStatus>> {
        match self.u8()? {
            0 => Ok(None),
            n => TASKS
                .get(usize::from(n) - 1)
                .copied()
                .map(Some)
                .ok_or_else(|| bad("task status")),
        }
    }
}

impl Reader {
    /// Opens `path`.
    pub fn open(path: &Path) -> io::Result<Reader> {
        Ok(Reader {
            input: File::open(path)?,
            buf: vec![0; READ_BUFFER],
            at: 0,
            end: 0,
        })
    }

    /// Has at least `n` undecoded bytes in the buffer, reading more (and
    /// growing it for a long record) as needed; false at the file's end.
    fn fill(&mut self, n: usize) -> io::Result<bool> {
        if self.end - self.at >= n {
            return Ok(true);
        }
        self.buf.copy_within(self.at..self.end, 0);
        self.end -= self.at;
        self.at = 0;
        if self.buf.len() < n {
            self.buf.resize(n.next_power_of_two(), 0);
        }
        while self.end < n {
            match self.input.read(&mut self.buf[self.end..]) {
                Ok(0) => return Ok(false),
                Ok(k) => self.end += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }

    /// The next record and its scenario's index, or `None` at the end.
    pub fn next(&mut self) -> io::Result<Option<(u16, Record<'_>)>> {
        if !self.fill(4)? {
            return if self.end == self.at {
                Ok(None)
            } else {
                Err(bad("cut short"))
            };
        }
        let head: [u8; 4] = self.buf[self.at..self.at + 4]
            .try_into()
            .expect("four bytes");
        let len = u32::from_le_bytes(head) as usize;
        if !self.fill(4 + len)? {
            return Err(bad("cut short"));
        }
        let from = self.at + 4;
        self.at = from + len;
        let mut f = Fields {
            b: &self.buf[from..from + len],
        };
        let tag = f.u8()?;
        let scenario = f.u16()?;
        let record = record(tag, &mut f)?;
        Ok(Some((scenario, record)))
    }
}

/// An attempt's record: its flags, numbers, then its texts.
fn attempt_record<'b>(f: &mut Fields<'b>) -> io::Result<Record<'b>> {
    let flags = f.u32()?;
    let line = f.u64()?;
    let status = f.u16()?;
    let attempt = f.u32()?;
    let task_status = f.task()?;
    let sequence = f.u64()?;
    let account = f.text()?;
    let key = f.text()?;
    let has = |b: u32| flags & b != 0;
    let job = if has(bit::JOB) { Some(f.text()?) } else { None };
    let created_at = if has(bit::CREATED) {
        Some(f.text()?)
    } else {
        None
    };
    let resource = if has(bit::RESOURCE) {
        Some(f.text()?)
    } else {
        None
    };
    let delivery = if has(bit::DEAD) { f.text()? } else { "" };
    let error = if has(bit::ERROR) {
        Some(f.text()?)
    } else {
        None
    };
    let intent = *INTENTS
        .get((flags & 7) as usize)
        .ok_or_else(|| bad("intent"))?;
    let outcome = *OUTCOMES
        .get((flags >> 3 & 3) as usize)
        .ok_or_else(|| bad("outcome"))?;
    Ok(Record::Attempt(
        line,
        AttemptView {
            scenario: "",
            delivery,
            key,
            account,
            job,
            attempt,
            round: 0,
            sent_at: None,
            faults: TagFacts {
                drop_ack: has(bit::DROP_ACK),
                duplicate: has(bit::DUPLICATE),
                explains_missing_ack: has(bit::EXPLAINED),
                front_status: has(bit::FRONT_STATUS),
                excuses_poison_error: has(bit::POISON_EXCUSED),
                ..TagFacts::default()
            },
            status: has(bit::STATUS).then_some(status),
            latency_ms: None,
            error,
            outcome,
            intent,
            detail: None,
            task_status,
            created_at,
            resource,
            sequence: has(bit::RESOURCE).then_some(sequence),
            poison: has(bit::POISON),
            dead: has(bit::DEAD),
        },
    ))
}

/// A state row's record: where it was read, its section and fields.
fn row_record<'b>(f: &mut Fields<'b>) -> io::Result<Record<'b>> {
    let at = f.u32()?;
    let section = f.u8()?;
    let account = if f.u8()? != 0 { Some(f.text()?) } else { None };
    let row = match section {
        0 => {
            let b = f.u8()?;
            RowRef::Inbox {
                account,
                processed: b & 1 != 0,
                failed: b & 2 != 0,
                key: f.text()?,
            }
        }
        1 => RowRef::Results {
            account,
            task: f.text()?,
        },
        2 => RowRef::Winners {
            account,
            job: f.text()?,
            task: f.text()?,
        },
        3 => RowRef::Effects {
            account,
            count: f.u64()?,
            key: f.text()?,
        },
        4 => RowRef::Resources {
            account,
            sequence: f.u64()?,
            resource: f.text()?,
        },
        _ => return Err(bad("section")),
    };
    Ok(Record::Row(at, row))
}

/// A winner's record: the row and every task of its job.
fn win_record<'b>(f: &mut Fields<'b>) -> io::Result<Record<'b>> {
    let at = f.u32()?;
    let account = if f.u8()? != 0 { Some(f.text()?) } else { None };
    let (job, task) = (f.text()?, f.text()?);
    let n = f.u32()? as usize;
    let mut infos = Vec::with_capacity(n.min(16));
    for _ in 0..n {
        let failed = f.u8()? != 0;
        let created = f.i64()?;
        let lines = f.lines()?;
        let a = f.text()?;
        infos.push((
            a,
            TaskInfo {
                failed,
                created,
                lines,
            },
        ));
    }
    Ok(Record::Join(JoinRecord::Win {
        at,
        account,
        job,
        task,
        infos,
    }))
}

/// The record of kind `tag` whose fields follow in `f`.
fn record<'b>(tag: u8, f: &mut Fields<'b>) -> io::Result<Record<'b>> {
    Ok(match tag {
        ATTEMPT => attempt_record(f)?,
        PROVIDER => {
            let line = f.u64()?;
            let task_status = f.task()?.ok_or_else(|| bad("provider task status"))?;
            let has_job = f.u8()? != 0;
            let account = f.text()?;
            let key = f.text()?;
            let created_at = f.text()?;
            let job = if has_job { Some(f.text()?) } else { None };
            Record::Provider(
                line,
                ProviderView {
                    account,
                    key,
                    job,
                    task_status,
                    created_at,
                },
            )
        }
        DELIVERY => Record::Delivery(f.u64()?),
        ROW => row_record(f)?,
        CAND => {
            let created = f.i64()?;
            let completed = f.u8()? != 0;
            let first_line = f.u32()?;
            let lines = f.lines()?;
            let (account, job, key) = (f.text()?, f.text()?, f.text()?);
            Record::Join(JoinRecord::Cand {
                account,
                job,
                key,
                cand: Cand {
                    account: 0,
                    job: 0,
                    key: 0,
                    created,
                    completed,
                    first_line,
                    lines,
                },
            })
        }
        WIN => win_record(f)?,
        SEQ => {
            let sequence = f.u64()?;
            let first_line = f.u32()?;
            let lines = f.lines()?;
            let (account, resource) = (f.text()?, f.text()?);
            Record::Join(JoinRecord::Seq {
                account,
                resource,
                seq: Seq {
                    account: 0,
                    resource: 0,
                    sequence,
                    first_line,
                    lines,
                },
            })
        }
        _ => return Err(bad("tag")),
    })
}
