//! The first step of a check in partitions: the history and the state are
//! read once and every event and row is written to the partition of its
//! name ([`route`](super::route)).
//!
//! What a history line says about its answer alone (I7's single-answer
//! findings, the run's counts) needs no partition: the [`Spiller`] decides
//! it on the way, so a partition folds only what its keys' records need.
//! Each reading thread writes files of its own, in line order, numbered
//! from its part's first line; the parts' places in the file are known
//! once every part is read, and the partitions add them when they read.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::state::stream::{Row, Section, SinkError, StateSink};

use super::codec::Writer;
use super::plan::KEY_THREADS;
use super::route::{hash, Route};
use crate::check::aggregate::{status_findings, AttemptView, ProviderView};
use crate::check::chunks::LineSink;
use crate::check::found::Found;
use crate::check::partial::Sections;
use crate::check::verdict::Counts;
use crate::check::view::RowRef;

/// The file of partition `p`'s events from part `part` of history `file`.
pub(super) fn events_file(dir: &Path, file: usize, part: usize, p: u32) -> PathBuf {
    dir.join(format!("events-{file}-{part}-{p}.bin"))
}

/// The file of partition `p`'s state rows.
pub(super) fn rows_file(dir: &Path, p: u32) -> PathBuf {
    dir.join(format!("rows-{p}.bin"))
}

/// The file of join partition `q`'s records for I5 and I6 from writer
/// `w` (0: the state's split, then one per thread of the key step).
pub(super) fn join_file(dir: &Path, q: u32, w: usize) -> PathBuf {
    dir.join(format!("join-{q}-{w}.bin"))
}

/// Every file of join partition `q` under `dir`.
pub(super) fn join_files(dir: &Path, q: u32) -> Vec<PathBuf> {
    (0..=KEY_THREADS)
        .map(|w| join_file(dir, q, w))
        .filter(|p| p.is_file())
        .collect()
}

/// One writer per partition, each opened at its first record.
pub(super) struct Writers {
    paths: Vec<PathBuf>,
    open: Vec<Option<Writer>>,
}

impl Writers {
    /// Writers of `paths`, none open yet.
    pub fn new(paths: Vec<PathBuf>) -> Self {
        let open = paths.iter().map(|_| None).collect();
        Writers { paths, open }
    }

    /// Partition `p`'s writer.
    pub fn to(&mut self, p: u32) -> io::Result<&mut Writer> {
        let slot = &mut self.open[p as usize];
        if slot.is_none() {
            *slot = Some(Writer::create(&self.paths[p as usize])?);
        }
        Ok(slot.as_mut().expect("opened above"))
    }

    /// Flushes every writer that was opened.
    pub fn finish(&mut self) -> io::Result<()> {
        for w in self.open.iter_mut().filter_map(Option::take) {
            w.finish()?;
        }
        Ok(())
    }
}

/// What one part of a history says per scenario without its keys.
#[derive(Debug, Default)]
pub(super) struct Said {
    /// The scenario's name.
    pub name: String,
    /// Its attempts (deliveries are counted by the partitions).
    pub counts: Counts,
    /// I7's single-answer findings, ranked by the part's own line numbers.
    pub status: Found,
}

/// Reads one part of a history into the partitions' files.
pub(super) struct Spiller {
    /// Which part of its history it reads.
    pub part: usize,
    route: Route,
    answer_limit: Duration,
    writers: Writers,
    /// The part's scenarios, in the order it met them: a record names its
    /// scenario by its index here.
    pub said: Vec<Said>,
}

impl Spiller {
    /// A spiller for part `part` of history `file`, writing under `dir`.
    pub fn new(dir: &Path, file: usize, part: usize, route: Route, answer_limit: Duration) -> Self {
        let paths = (0..route.local)
            .map(|p| events_file(dir, file, part, p))
            .collect();
        Spiller {
            part,
            route,
            answer_limit,
            writers: Writers::new(paths),
            said: Vec::new(),
        }
    }

    fn scenario(&mut self, name: &str) -> u16 {
        // Scenarios come in runs: the last one met is the likely one.
        let i = match self.said.iter().rposition(|s| s.name == name) {
            Some(i) => i,
            None => {
                self.said.push(Said {
                    name: name.to_string(),
                    ..Said::default()
                });
                self.said.len() - 1
            }
        };
        u16::try_from(i).unwrap_or(u16::MAX)
    }
}

/// The hash a delivery id is counted by (the one a check in memory counts
/// distinct deliveries by).
pub(super) fn delivery_hash(delivery: &str) -> u64 {
    let mut h = std::hash::DefaultHasher::new();
    delivery.hash(&mut h);
    h.finish()
}

impl LineSink for Spiller {
    fn attempt(&mut self, scenario: &str, line: u64, a: &AttemptView) -> io::Result<()> {
        let s = self.scenario(scenario);
        if usize::from(s) >= usize::from(u16::MAX) {
            return Err(too_many_scenarios());
        }
        if let Some(p) = self.route.name(a.key) {
            let said = &mut self.said[usize::from(s)];
            said.counts.count(a);
            status_findings(line, a, self.answer_limit, &mut said.status);
            self.writers.to(p)?.attempt(s, line, a)?;
        }
        let d = delivery_hash(a.delivery);
        if let Some(p) = self.route.of(d) {
            self.writers.to(p)?.delivery(s, d)?;
        }
        Ok(())
    }

    fn provider(&mut self, scenario: &str, line: u64, p: &ProviderView) -> io::Result<()> {
        let s = self.scenario(scenario);
        if usize::from(s) >= usize::from(u16::MAX) {
            return Err(too_many_scenarios());
        }
        if let Some(to) = self.route.name(p.key) {
            self.writers.to(to)?.provider(s, line, p)?;
        }
        Ok(())
    }

    fn finish(&mut self) -> io::Result<()> {
        self.writers.finish()
    }
}

fn too_many_scenarios() -> io::Error {
    io::Error::other(format!(
        "a history of more than {} scenarios cannot be checked in partitions",
        u16::MAX - 1
    ))
}

/// Routes a scenario's state rows to the partitions: inbox and effects rows
/// by key, results and winners rows by task (a winners row goes where its
/// task's record is, which says what the task is), resources rows straight
/// to the join partition of their resource.
pub(super) struct StateSplit<'a> {
    keys: Route,
    joins_route: Route,
    scenario: u16,
    rows: &'a mut Writers,
    joins: &'a mut Writers,
    /// Rows seen per section: the next row's place.
    seen: [u32; 5],
    /// The sections reported.
    pub sections: Sections,
}

impl<'a> StateSplit<'a> {
    /// Splits scenario `scenario`'s state into `rows` (by `keys`) and
    /// `joins` (this process's share by `keys`, then by `joins_route`).
    pub fn new(
        keys: Route,
        joins_route: Route,
        scenario: u16,
        rows: &'a mut Writers,
        joins: &'a mut Writers,
    ) -> Self {
        StateSplit {
            keys,
            joins_route,
            scenario,
            rows,
            joins,
            seen: [0; 5],
            sections: Sections::default(),
        }
    }
}

impl StateSink for StateSplit<'_> {
    fn section(&mut self, s: Section) -> Result<(), SinkError> {
        let f = &mut self.sections;
        match s {
            Section::Inbox => {}
            Section::Results => f.results = true,
            Section::Winners => f.winners = true,
            Section::Effects => f.effects = true,
            Section::Resources => f.resources = true,
        }
        Ok(())
    }

    fn row(&mut self, row: Row) -> Result<(), SinkError> {
        let r = RowRef::of(&row);
        let seen = &mut self.seen[r.section() as usize];
        let at = *seen;
        *seen = seen.saturating_add(1);
        let (name, to_join) = match r {
            RowRef::Inbox { key, .. } | RowRef::Effects { key, .. } => (key, false),
            RowRef::Results { task, .. } | RowRef::Winners { task, .. } => (task, false),
            RowRef::Resources { resource, .. } => (resource, true),
        };
        let h = hash(name);
        let to = if to_join {
            self.keys.owns(h).then(|| self.joins_route.of(h)).flatten()
        } else {
            self.keys.of(h)
        };
        let Some(p) = to else {
            return Ok(());
        };
        let writers = if to_join {
            &mut *self.joins
        } else {
            &mut *self.rows
        };
        writers
            .to(p)
            .and_then(|w| w.row(self.scenario, at, &r))
            .map_err(|e| SinkError::keep(format!("cannot spill the state to disk: {e}")))
    }
}

/// The scenarios of every part, by name: the index each gets in the whole
/// check (the order of their names).
pub(super) fn scenario_table<'a>(names: impl Iterator<Item = &'a str>) -> BTreeMap<String, u16> {
    let mut table: BTreeMap<String, u16> = names.map(|n| (n.to_string(), 0)).collect();
    for (i, v) in table.values_mut().enumerate() {
        *v = u16::try_from(i).unwrap_or(u16::MAX);
    }
    table
}
