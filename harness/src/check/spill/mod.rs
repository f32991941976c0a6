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
//! 2. **Keys** ([`stage::keys`]): a partition at a time on each of
//!    [`KEY_THREADS`] threads, its events are folded into records, its rows
//!    read next to them, and every invariant but I5 and I6 is graded; the
//!    records I5 and I6 need go to the join partition of their job or
//!    resource.
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
//! shares ([`export`]).

mod codec;
pub mod export;
mod plan;
mod route;
mod split;
mod stage;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

pub use plan::{
    estimate_keys, partitions_for, partitions_needed, Partitioning, HISTORY_PER_PARTITION,
    IN_MEMORY_KEYS, IN_MEMORY_STATE, KEY_THREADS, MAX_PARTITIONS, STATE_PER_PARTITION,
};
pub use route::Partition;
pub(crate) use stage::Spilled;

use super::chunks::{self, Filter};
use super::grade::{requested, state_result};
use super::partial::{Findings, Sections};
use super::source::{feed_state, States};
use super::verdict::{CheckError, CheckOptions};
use crate::invariant::InvariantId;
use route::Route;
use split::{join_file, join_files, rows_file, scenario_table, Spiller, StateSplit, Writers};
use stage::{KeyStep, PartRead};

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

/// Splits every history into the partitions' files under `dir`, line
/// numbers running on from file to file; each part read, and what it
/// said per scenario, is added to `said`.
fn read_histories(
    inputs: &Inputs<'_>,
    opts: &CheckOptions,
    route: Route,
    dir: &Path,
    said: &mut Vec<(PartRead, Vec<split::Said>)>,
) -> Result<chunks::HistoriesRead, CheckError> {
    let filter = Filter {
        all_as_one: inputs.all_as_one,
        scenario: inputs.scenario,
        answer_limit: opts.answer_limit,
    };
    chunks::read_histories(
        inputs.histories,
        inputs.parts,
        |file, history, parts, base| {
            let make = |part| Spiller::new(dir, file, part, route, opts.answer_limit);
            chunks::read_file(history, &filter, parts, base, make, |sp, at| {
                let part = PartRead {
                    file,
                    part: sp.part,
                    base: at,
                    scenarios: Vec::new(),
                };
                said.push((part, sp.said));
            })
        },
    )
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

    // 1. Split the histories and the state. One state file is the state
    // of the one scenario the histories fold into (every event as `all`,
    // or the scenario asked for): it is split on a thread of its own while
    // the histories are read.
    let join_route = route.whole();
    let mut rows = Writers::new((0..route.local).map(|p| rows_file(dir, p)).collect());
    let mut joins = Writers::new((0..route.local).map(|q| join_file(dir, q, 0)).collect());
    let one = matches!(inputs.states, States::One(_));
    let split_one = |rows: &mut Writers, joins: &mut Writers| {
        let mut sink = StateSplit::new(route, join_route, 0, rows, joins);
        let fed = feed_state(inputs.states, inputs.state, "", &mut sink)?;
        Ok::<_, CheckError>(fed.map(|()| sink.sections))
    };
    let mut said: Vec<(PartRead, Vec<split::Said>)> = Vec::new();
    let (read, one_state) = std::thread::scope(|s| {
        let state = one.then(|| s.spawn(|| split_one(&mut rows, &mut joins)));
        let read = read_histories(inputs, opts, route, dir, &mut said);
        let state = state.map(|t| t.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
        (read, state)
    });
    let chunks::HistoriesRead {
        events,
        sources,
        warnings,
    } = read?;
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
    let mut states: Vec<Result<Sections, String>> = Vec::with_capacity(table.len());
    match one_state {
        Some(state) => {
            let state = state?;
            if !table.is_empty() {
                states.push(state);
            }
        }
        None => {
            for (name, &g) in &table {
                let mut sink = StateSplit::new(route, join_route, g, &mut rows, &mut joins);
                let fed = feed_state(inputs.states, inputs.state, name, &mut sink)?;
                states.push(fed.map(|()| sink.sections));
            }
        }
    }
    rows.finish().map_err(spill_error)?;
    if table.is_empty() {
        // No event to judge: whatever the state holds decides nothing.
        return Ok(Spilled {
            findings: BTreeMap::new(),
            events,
            sources,
            warnings,
            joins: None,
        });
    }

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

    joins.finish().map_err(spill_error)?;

    // 3. Keys, a partition at a time on each of two threads.
    let done = keys_all(dir, route, join_route, &parts, &states, opts, &ids);
    for found in done {
        for by_scenario in found? {
            for (g, f) in by_scenario {
                findings[usize::from(g)].merge(f);
            }
        }
    }

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

/// Grades the keys of the `route.local` partitions under `dir`, a
/// partition at a time on each of [`KEY_THREADS`] threads: each thread's
/// findings by scenario, or its error.
fn keys_all(
    dir: &Path,
    route: Route,
    join_route: Route,
    parts: &[PartRead],
    states: &[Result<Sections, String>],
    opts: &CheckOptions,
    ids: &[InvariantId],
) -> Vec<Result<Vec<BTreeMap<u16, Findings>>, CheckError>> {
    let next = AtomicU32::new(0);
    let threads = KEY_THREADS.min(route.local as usize);
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|w| {
                let next = &next;
                s.spawn(move || {
                    let paths = (0..route.local).map(|q| join_file(dir, q, w + 1)).collect();
                    let mut joins = Writers::new(paths);
                    let mut step = KeyStep {
                        dir,
                        parts,
                        states,
                        answer_limit: opts.answer_limit,
                        opts,
                        ids,
                        joins: &mut joins,
                        join_route,
                    };
                    let mut out = Vec::new();
                    loop {
                        let p = next.fetch_add(1, Ordering::Relaxed);
                        if p >= route.local {
                            break;
                        }
                        out.push(stage::keys(&mut step, p)?);
                        // The partition's files are read: give their room back.
                        for part in parts {
                            let _ = std::fs::remove_file(split::events_file(
                                dir, part.file, part.part, p,
                            ));
                        }
                        let _ = std::fs::remove_file(rows_file(dir, p));
                    }
                    joins.finish().map_err(spill_error)?;
                    Ok(out)
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| {
                w.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
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
        for (g, partials) in stage::joins(&join_files(dir, q), opts, ids)? {
            let f = findings.get_mut(usize::from(g)).ok_or_else(|| {
                spill_error(std::io::Error::other("a join record names no scenario"))
            })?;
            for (id, p) in partials {
                f.partials.entry(id).or_default().merge(p);
            }
        }
        for path in join_files(dir, q) {
            let _ = std::fs::remove_file(path);
        }
    }
    Ok(())
}
#[cfg(test)]
mod tests;
