//! One share of a partitioned check as a folder another process reads, and
//! the shares joined into the whole check.
//!
//! `hookstorm check --partition I/N` writes `partition.json` (what its
//! keys showed, per scenario, before it is worded: [`Findings`]) and
//! `join.bin` (the per-key records I5 and I6 need, which group keys by job
//! and resource across every share). `hookstorm merge` reads the N
//! folders, holds them to one check of the same histories with the same
//! options, merges the findings, grades I5 and I6 over every share's
//! records, a join partition at a time, and words the verdicts: the same
//! check one process would have made.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::codec::{Reader, Record};
use super::plan::{partitions_for, MAX_PARTITIONS};
use super::route::{hash, Partition, Route};
use super::split::{join_file, join_files, Writers};
use super::stage::{self, Spilled};
use crate::check::grade::requested;
use crate::check::partial::Findings;
use crate::check::verdict::{CheckError, CheckOptions};
use crate::check::verdict::{FileCheck, HistorySource, MultiCheck, ScenarioCheck};

/// The file that says what one share found.
pub const PARTITION_FILE: &str = "partition.json";
/// The file of its records for I5 and I6.
pub const JOIN_FILE: &str = "join.bin";

/// `partition.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PartitionReport {
    /// The version of hookstorm that wrote it (the join records' form is its own).
    pub version: String,
    /// Which share of how many.
    pub partition: Partition,
    /// The options it checked with (the merge words with the same).
    pub options: CheckOptions,
    /// The scenario filter, if any.
    pub scenario: Option<String>,
    /// The histories, in the order their line numbers run.
    pub sources: Vec<HistorySource>,
    /// Attempt and provider lines in the histories (all shares').
    pub events: u64,
    /// What the reader had to work around.
    pub warnings: Vec<String>,
    /// The scenarios, in the order the join records number them.
    pub scenarios: Vec<String>,
    /// What this share's keys showed, per scenario, I5 and I6 aside.
    pub findings: BTreeMap<String, Findings>,
}

fn io_error(path: &Path) -> impl Fn(std::io::Error) -> CheckError + '_ {
    move |source| CheckError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Writes a share's folder `dir`: `partition.json` and `join.bin`.
pub(crate) fn write(
    dir: &Path,
    partition: Partition,
    options: &CheckOptions,
    scenario: Option<&str>,
    spilled: Spilled,
    local: u32,
) -> Result<PartitionReport, CheckError> {
    std::fs::create_dir_all(dir).map_err(io_error(dir))?;
    let join = dir.join(JOIN_FILE);
    let mut out = std::io::BufWriter::new(std::fs::File::create(&join).map_err(io_error(&join))?);
    if let Some(tmp) = &spilled.joins {
        for q in 0..local {
            for path in join_files(tmp.path(), q) {
                let mut f =
                    std::fs::File::open(&path).map_err(|e| CheckError::Spill { source: e })?;
                std::io::copy(&mut f, &mut out).map_err(io_error(&join))?;
            }
        }
    }
    out.flush().map_err(io_error(&join))?;
    let report = PartitionReport {
        version: env!("CARGO_PKG_VERSION").to_string(),
        partition,
        options: options.clone(),
        scenario: scenario.map(str::to_string),
        sources: spilled.sources,
        events: spilled.events,
        warnings: spilled.warnings,
        scenarios: spilled.findings.keys().cloned().collect(),
        findings: spilled.findings,
    };
    let path = dir.join(PARTITION_FILE);
    let json = serde_json::to_vec_pretty(&report).map_err(|e| CheckError::Spill {
        source: std::io::Error::other(e),
    })?;
    std::fs::write(&path, json).map_err(io_error(&path))?;
    Ok(report)
}

/// A share's folder, read.
struct Share {
    dir: PathBuf,
    report: PartitionReport,
}

/// Why the shares could not be joined into one check.
#[derive(Debug, thiserror::Error)]
pub enum JoinError {
    /// A folder could not be read.
    #[error("{0}")]
    Unreadable(String),
    /// The shares are not of one check.
    #[error("{0}")]
    Inconsistent(String),
    /// The join itself failed.
    #[error(transparent)]
    Check(#[from] CheckError),
}

/// What joining the shares gave.
#[derive(Debug)]
pub struct Joined {
    /// The check of everything.
    pub check: MultiCheck,
    /// The options the shares checked with.
    pub options: CheckOptions,
    /// Into how many shares the check was cut.
    pub count: u32,
    /// The shares of N that were not found (the check is then of the
    /// shares found, and says so).
    pub missing: Vec<u32>,
}

/// Reads `dir`'s `partition.json`.
pub fn read_report(dir: &Path) -> Result<PartitionReport, JoinError> {
    let path = dir.join(PARTITION_FILE);
    let text = crate::limits::budget::read_file(&path, crate::limits::budget::PARTITION_REPORT)
        .map_err(|e| JoinError::Unreadable(format!("{}: {e}", path.display())))?;
    serde_json::from_slice(&text).map_err(|e| {
        JoinError::Unreadable(format!(
            "{}: not a partition of a check: {e}",
            path.display()
        ))
    })
}

/// Joins the shares in `dirs` (folders written by `check --partition`),
/// spilling under `spill`.
pub fn join(dirs: &[PathBuf], spill: &Path) -> Result<Joined, JoinError> {
    let mut shares: Vec<Share> = Vec::new();
    for dir in dirs {
        let report = read_report(dir)?;
        shares.push(Share {
            dir: dir.clone(),
            report,
        });
    }
    shares.sort_by_key(|s| s.report.partition.index);
    let Some(first) = shares.first() else {
        return Err(JoinError::Inconsistent(
            "no partition of a check to join".into(),
        ));
    };
    let first = first.report.clone();
    let count = first.partition.count;
    same_check(&shares)?;
    let missing: Vec<u32> = (0..count)
        .filter(|i| !shares.iter().any(|s| s.report.partition.index == *i))
        .collect();

    // A share whose state read ended before the inbox drained words its
    // unsettled rows so; the whole check was drained only if every share's was.
    let opts = CheckOptions {
        drained: shares.iter().all(|s| s.report.options.drained),
        ..first.options.clone()
    };
    let ids = requested(&opts);
    let mut names: Vec<String> = shares
        .iter()
        .flat_map(|s| s.report.scenarios.iter().cloned())
        .collect();
    names.sort();
    names.dedup();
    let index: BTreeMap<&str, u16> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), u16::try_from(i).unwrap_or(u16::MAX)))
        .collect();
    let mut findings: Vec<Option<Findings>> = names.iter().map(|_| None).collect();
    for s in &shares {
        for (name, f) in &s.report.findings {
            let slot = &mut findings[usize::from(index[name.as_str()])];
            match slot {
                Some(all) => all.merge(f.clone()),
                None => *slot = Some(f.clone()),
            }
        }
    }

    // The records for I5 and I6 of every share, cut into join partitions
    // again by job and resource, numbered by this join's scenarios.
    let bytes: u64 = shares
        .iter()
        .map(|s| std::fs::metadata(s.dir.join(JOIN_FILE)).map_or(0, |m| m.len()))
        .sum();
    let local = partitions_for(bytes, 0, None).min(MAX_PARTITIONS);
    let route = Route { share: None, local };
    let tmp = tempfile::Builder::new()
        .prefix(".hookstorm-join-")
        .tempdir_in(spill)
        .map_err(|e| CheckError::Spill { source: e })?;
    let mut joins = Writers::new((0..local).map(|q| join_file(tmp.path(), q, 0)).collect());
    for s in &shares {
        let path = s.dir.join(JOIN_FILE);
        let mut r = Reader::open(&path).map_err(io_error(&path))?;
        let theirs = &s.report.scenarios;
        let spill_err = |e| CheckError::Spill { source: e };
        while let Some((g, record)) = r.next().map_err(corrupt(&path))? {
            let name = theirs.get(usize::from(g)).ok_or_else(|| {
                JoinError::Unreadable(format!("{}: a record names no scenario", path.display()))
            })?;
            let g = index[name.as_str()];
            write_again(&mut joins, route, g, &record).map_err(spill_err)?;
        }
    }
    joins
        .finish()
        .map_err(|e| CheckError::Spill { source: e })?;
    for q in 0..local {
        for (g, partials) in stage::joins(&join_files(tmp.path(), q), &opts, &ids)? {
            let f = findings[usize::from(g)]
                .get_or_insert_with(|| Findings::new(Ok(Default::default())));
            for (id, p) in partials {
                f.partials.entry(id).or_default().merge(p);
            }
        }
        let _ = std::fs::remove_file(join_file(tmp.path(), q, 0));
    }

    let checks = if first.events == 0 {
        vec![ScenarioCheck::empty(first.scenario.as_deref(), &opts)]
    } else {
        names
            .iter()
            .zip(findings)
            .filter_map(|(name, f)| f.map(|f| f.into_check(name, &opts)))
            .collect()
    };
    Ok(Joined {
        check: MultiCheck {
            check: FileCheck {
                checks,
                warnings: first.warnings.clone(),
            },
            sources: first.sources.clone(),
        },
        options: opts,
        count,
        missing,
    })
}

/// A record of `path` that cannot be read: the file's fault (cut short or
/// changed), not the disk's.
fn corrupt(path: &Path) -> impl Fn(std::io::Error) -> JoinError + '_ {
    move |e| {
        JoinError::Unreadable(format!(
            "{}: truncated or corrupt: {e} (hint: copy the partition's folder again as `check --partition` wrote it)",
            path.display()
        ))
    }
}

/// Refuses shares that are not partitions of one check: cut otherwise,
/// by another version, with other options or of other histories, or the
/// same partition twice. `shares` is sorted by partition.
fn same_check(shares: &[Share]) -> Result<(), JoinError> {
    let first = &shares[0].report;
    let count = first.partition.count;
    for s in shares {
        let r = &s.report;
        let differs = |what: &str| {
            JoinError::Inconsistent(format!(
                "{} is partition {} of a check {what} than {}'s (hint: join the partitions of one check)",
                s.dir.display(),
                r.partition,
                shares[0].dir.display()
            ))
        };
        if r.partition.count != count {
            return Err(differs("cut into another number of partitions"));
        }
        if r.version != first.version {
            return Err(differs("by another version of hookstorm"));
        }
        let drained = |o: &CheckOptions| CheckOptions {
            drained: true,
            ..o.clone()
        };
        if drained(&r.options) != drained(&first.options) || r.scenario != first.scenario {
            return Err(differs("with other options"));
        }
        let lines = |s: &[HistorySource]| s.iter().map(|h| h.lines).collect::<Vec<_>>();
        if lines(&r.sources) != lines(&first.sources) || r.events != first.events {
            return Err(differs("of other histories"));
        }
    }
    for pair in shares.windows(2) {
        if pair[0].report.partition.index == pair[1].report.partition.index {
            return Err(JoinError::Inconsistent(format!(
                "partition {} twice: {} and {}",
                pair[0].report.partition,
                pair[0].dir.display(),
                pair[1].dir.display()
            )));
        }
    }
    Ok(())
}

/// Writes a record read from a share's `join.bin` to its join partition.
fn write_again(joins: &mut Writers, route: Route, g: u16, record: &Record) -> std::io::Result<()> {
    use super::codec::JoinRecord;
    use crate::check::view::RowRef;
    match record {
        Record::Join(r) => {
            let name = match r {
                JoinRecord::Cand { job, .. } | JoinRecord::Win { job, .. } => *job,
                JoinRecord::Seq { resource, .. } => *resource,
            };
            let q = route.of(hash(name)).unwrap_or(0);
            joins.to(q)?.join(g, r)
        }
        Record::Row(at, row @ RowRef::Resources { resource, .. }) => {
            let q = route.of(hash(resource)).unwrap_or(0);
            joins.to(q)?.row(g, *at, row)
        }
        _ => Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "a join file holds a record of another kind",
        )),
    }
}
