//! A check in partitions: bounded memory whatever the history's size.
//!
//! The check in memory keeps a record per key (about 230 bytes a delivery
//! with its state rows), so its memory grows with the run. Nearly every
//! invariant is a question about one key (I1–I4, I7–I9) or about one job
//! or resource (I5, I6), so the work partitions:
//!
//! 1. **Split** ([`split`]): the histories are read once, on two threads,
//!    and each event is written to the partition of its key (a hash of
//!    the name, [`route`]); what a line says about its answer alone (I7's
//!    single-answer findings, the counts) is decided on the way. The state
//!    is read once and each row goes to the partition of its key, task or
//!    resource.
//! 2. **Keys** ([`stage::keys`]): one partition at a time, its events are
//!    folded into records, its rows read next to them, and every invariant
//!    but I5 and I6 is graded; the records I5 and I6 need go to the join
//!    partition of their job or resource.
//! 3. **Joins** ([`stage::joins`]): one join partition at a time, I5 and I6.
//! 4. The partials are merged ([`Findings::merge`]) and worded.
//!
//! Every finding keeps its rank ([`Found`](super::found::Found)), so the
//! verdicts, the evidence and its order are those of the check in memory:
//! the tests hold them equal for random histories cut into any number of
//! partitions. The spilled files live in a temporary folder (under the
//! report folder when the caller names one) and are gone when the check
//! returns.
//!
//! A process may also check one share of the keys of N
//! (`hookstorm check --partition I/N`, [`Partition`]): the same steps,
//! keeping only the keys, rows and deliveries of its share, and handing
//! its records for I5 and I6 on to `hookstorm merge`, which joins the
//! shares.

mod codec;
mod route;
mod split;
mod stage;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use route::Partition;

use super::chunks::{self, Filter};
use super::files::{feed_state, HistorySource, States};
use super::grade::{requested, state_result};
use super::partial::{Findings, Sections};
use super::verdict::{CheckError, CheckOptions};
use crate::invariant::InvariantId;
use route::Route;
use split::{join_file, rows_file, scenario_table, Spiller, StateSplit, Writers};
use stage::{KeyStep, PartRead};

/// The most partitions a check is cut into (and the most processes of
/// `--partition I/N`).
pub const MAX_PARTITIONS: u32 = 4096;

/// History one partition holds at most, in bytes: at one attempt per key
/// (the densest a history gets) about 550,000 keys, whose records, rows
/// and grading peak near 150 MiB.
pub const HISTORY_PER_PARTITION: u64 = 192 << 20;

/// State one partition holds at most, in bytes (about 700,000 inbox rows).
pub const STATE_PER_PARTITION: u64 = 64 << 20;

/// How a check is cut up.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Partitioning {
    /// Partitions within this process; `None`: as many as the inputs'
    /// size asks for ([`partitions_for`]), one (the check in memory) for
    /// inputs that fit.
    pub partitions: Option<u32>,
    /// This process checks one share of N: `hookstorm check --partition I/N`.
    pub share: Option<Partition>,
    /// Where the spilled files go (a temporary folder is made in it);
    /// `None`: the first history's folder, or the system's temporary one.
    pub spill_dir: Option<PathBuf>,
}

/// How many partitions inputs of these sizes need (`share`: of the keys
/// one process of N checks).
pub fn partitions_for(history_bytes: u64, state_bytes: u64, share: Option<Partition>) -> u32 {
    let n = share.map_or(1, |p| u64::from(p.count));
    let need = |bytes: u64, per: u64| (bytes / n).div_ceil(per);
    need(history_bytes, HISTORY_PER_PARTITION)
        .max(need(state_bytes, STATE_PER_PARTITION))
        .clamp(1, u64::from(MAX_PARTITIONS)) as u32
}

/// The size of a state argument: a file's, or a folder's files'.
pub(super) fn state_bytes(state: &Path) -> u64 {
    if state.is_dir() {
        std::fs::read_dir(state)
            .map(|d| {
                d.filter_map(Result::ok)
                    .filter_map(|e| e.metadata().ok())
                    .filter(|m| m.is_file())
                    .map(|m| m.len())
                    .sum()
            })
            .unwrap_or(0)
    } else {
        std::fs::metadata(state).map_or(0, |m| m.len())
    }
}

/// What a check in partitions found, per scenario, before it is worded.
pub(crate) struct Spilled {
    /// Per scenario (I5 and I6 included unless this is one share of N).
    pub findings: BTreeMap<String, Findings>,
    /// Attempt and provider lines read (of every share).
    pub events: u64,
    /// The histories and the line numbers they got.
    pub sources: Vec<HistorySource>,
    /// What the reader had to work around.
    pub warnings: Vec<String>,
    /// The folder of the records for I5 and I6 a share hands on, kept
    /// until it is exported.
    pub joins: Option<tempfile::TempDir>,
}

/// The inputs of a check in partitions.
pub(crate) struct Inputs<'a> {
    pub histories: &'a [PathBuf],
    pub state: &'a Path,
    pub states: &'a States,
    pub scenario: Option<&'a str>,
    pub all_as_one: bool,
    pub parts: Option<usize>,
}

fn spill_error(e: std::io::Error) -> CheckError {
    CheckError::Spill { source: e }
}

/// Checks `inputs` in `local` partitions (of `share`, when set), spilling
/// under `dir`.
pub(crate) fn check(
    inputs: &Inputs<'_>,
    opts: &CheckOptions,
    local: u32,
    share: Option<Partition>,
    dir: &Path,
) -> Result<Spilled, CheckError> {
    let tmp = tempfile::Builder::new()
        .prefix(".hookstorm-check-")
        .tempdir_in(dir)
        .map_err(spill_error)?;
    let dir = tmp.path();
    let route = Route {
        share,
        local: local.max(1),
    };
    let ids = requested(opts);

    // 1. Split the histories.
    let filter = Filter {
        all_as_one: inputs.all_as_one,
        scenario: inputs.scenario,
        answer_limit: opts.answer_limit,
    };
    let mut said: Vec<(PartRead, Vec<split::Said>)> = Vec::new();
    let (mut line, mut events) = (0u64, 0u64);
    let (mut sources, mut warnings) = (Vec::new(), Vec::new());
    for (file, history) in inputs.histories.iter().enumerate() {
        let parts = inputs.parts.unwrap_or_else(|| {
            chunks::parts_for(std::fs::metadata(history).map_or(0, |m| m.len()))
        });
        let make = |part| Spiller::new(dir, file, part, route, opts.answer_limit);
        let read = chunks::read_file(history, &filter, parts, line, make, |sp, at| {
            let part = PartRead {
                file,
                part: sp.part,
                base: at,
                scenarios: Vec::new(),
            };
            said.push((part, sp.said));
        })?;
        events += read.events;
        warnings.extend(read.warning);
        sources.push(HistorySource {
            path: history.to_path_buf(),
            first_line: line + 1,
            lines: read.lines,
        });
        line += read.lines;
        if line > super::aggregate::MAX_LINES {
            return Err(CheckError::TooLong {
                path: history.to_path_buf(),
                max: super::aggregate::MAX_LINES,
            });
        }
    }
    let table = scenario_table(
        said.iter()
            .flat_map(|(_, s)| s.iter().map(|s| s.name.as_str())),
    );
    if let Some(f) = inputs.scenario {
        if events > 0 && !table.contains_key(f) {
            let path = inputs
                .histories
                .first()
                .map_or(inputs.state, PathBuf::as_path);
            return Err(CheckError::NoScenario {
                path: path.into(),
                scenario: f.to_string(),
            });
        }
    }

    // 2. Split each scenario's state.
    let join_route = route.whole();
    let mut rows = Writers::new((0..route.local).map(|p| rows_file(dir, p)).collect());
    let mut joins = Writers::new((0..route.local).map(|q| join_file(dir, q)).collect());
    let mut states: Vec<Result<Sections, String>> = Vec::with_capacity(table.len());
    for (name, &g) in &table {
        let mut sink = StateSplit::new(route, join_route, g, &mut rows, &mut joins);
        let fed = feed_state(inputs.states, inputs.state, name, &mut sink)?;
        states.push(fed.map(|()| sink.sections));
    }
    rows.finish().map_err(spill_error)?;

    // What the split decided: per scenario, its counts and the answers'
    // own findings, at their places in the whole history.
    let names: Vec<&String> = table.keys().collect();
    let mut findings: Vec<Findings> = states
        .iter()
        .map(|s| Findings::new(state_result(s.as_ref().copied().map_err(String::as_str))))
        .collect();
    let parts: Vec<PartRead> = said
        .into_iter()
        .map(|(mut part, said)| {
            for mut s in said {
                let g = table[&s.name];
                part.scenarios.push(g);
                s.status.shift_lines(0, part.base);
                let f = &mut findings[usize::from(g)];
                f.counts.add(&s.counts);
                f.status.merge(s.status);
            }
            part
        })
        .collect();

    // 3. Keys, a partition at a time.
    let mut step = KeyStep {
        dir,
        parts: &parts,
        states: &states,
        answer_limit: opts.answer_limit,
        opts,
        ids: &ids,
        joins: &mut joins,
        join_route,
    };
    for p in 0..route.local {
        for (g, f) in stage::keys(&mut step, p)? {
            findings[usize::from(g)].merge(f);
        }
        // The partition's files are read: give their room back.
        for part in &parts {
            let _ = std::fs::remove_file(split::events_file(dir, part.file, part.part, p));
        }
        let _ = std::fs::remove_file(rows_file(dir, p));
    }
    joins.finish().map_err(spill_error)?;

    // 4. Joins: here, or by the merge of the shares.
    let keep = if share.is_some() {
        Some(tmp)
    } else {
        join_all(dir, route.local, opts, &ids, &mut findings)?;
        drop(tmp);
        None
    };
    Ok(Spilled {
        findings: names.into_iter().cloned().zip(findings).collect(),
        events,
        sources,
        warnings,
        joins: keep,
    })
}

/// Grades I5 and I6 over the `count` join partitions under `dir`, into
/// each scenario's findings.
fn join_all(
    dir: &Path,
    count: u32,
    opts: &CheckOptions,
    ids: &[InvariantId],
    findings: &mut [Findings],
) -> Result<(), CheckError> {
    for q in 0..count {
        for (g, partials) in stage::joins(&join_file(dir, q), opts, ids)? {
            let f = findings.get_mut(usize::from(g)).ok_or_else(|| {
                spill_error(std::io::Error::other("a join record names no scenario"))
            })?;
            for (id, p) in partials {
                f.partials.entry(id).or_default().merge(p);
            }
        }
        let _ = std::fs::remove_file(join_file(dir, q));
    }
    Ok(())
}
#[cfg(test)]
mod tests;
