//! `hookstorm check HISTORY STATE`: checks a recorded history again, later,
//! against saved state, without re-running anything.
//!
//! The history is read once, streaming, in parts on several threads
//! (`chunks`), and folded per scenario. STATE is
//! either one state JSON (applied to the scenario named by the filter, or,
//! without a filter, to all events as one scenario named `all`), a JSON
//! object mapping scenario names to states, or a directory holding
//! `<scenario>.json` (or `<scenario>.state.json`) per scenario; a scenario
//! without a state is graded `unknown`.
//!
//! One state (a file or a folder's) is read after the history, row by row
//! into the fold's interned ids, in either of its forms (the document or
//! JSON Lines): a million-row state never sits in memory as text or strings.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::history::Event;

use super::source::{feed_state, load_states, names_a_state, States};
use super::spill::{self, Partitioning};
use super::verdict::{FileCheck, MultiCheck};

use super::aggregate::Aggregator;
use super::chunks::{self, Filter};
use super::verdict::CheckError;
use super::verdict::{CheckOptions, ScenarioCheck};

/// Reads history events with their 1-based line numbers, skipping blank lines.
pub fn read_numbered(
    path: &Path,
) -> Result<impl Iterator<Item = Result<(u64, Event), CheckError>>, CheckError> {
    Ok(crate::history::read_numbered(path)
        .map_err(CheckError::from)?
        .map(|r| r.map_err(CheckError::from)))
}

impl From<crate::history::HistoryError> for CheckError {
    fn from(e: crate::history::HistoryError) -> Self {
        match e {
            crate::history::HistoryError::Io { path, source } => CheckError::Io { path, source },
            crate::history::HistoryError::Line {
                path,
                line,
                message,
            } => CheckError::History {
                path,
                line: line as u64,
                message,
            },
        }
    }
}

/// What reading the histories gave.
struct Read {
    folds: BTreeMap<String, Aggregator>,
    read: chunks::HistoriesRead,
}

/// Reads and folds every history in turn, line numbers running on.
fn read_histories(
    histories: &[PathBuf],
    scenario: Option<&str>,
    all_as_one: bool,
    opts: &CheckOptions,
    parts: Option<usize>,
) -> Result<Read, CheckError> {
    let filter = Filter {
        all_as_one,
        scenario,
        answer_limit: opts.answer_limit,
    };
    let mut folds = BTreeMap::new();
    let read = chunks::read_histories(histories, parts, |_, history, parts, base| {
        chunks::fold_file(history, &filter, parts, base, &mut folds)
    })?;
    for fold in folds.values_mut() {
        fold.seal_deliveries();
    }
    Ok(Read { folds, read })
}

/// Checks a history file against a state file or folder; one result per
/// scenario. See [`check_history`] for the warnings (a cut last line).
pub fn check_files(
    history: &Path,
    state: &Path,
    scenario: Option<&str>,
    opts: &CheckOptions,
) -> Result<Vec<ScenarioCheck>, CheckError> {
    check_history(history, state, scenario, opts).map(|c| c.checks)
}

/// Like [`check_files`], and says what it had to work around. A history
/// whose last line was cut off (as a crash leaves it: no newline at the
/// end and not a whole JSON object) is checked up to the cut, with a
/// warning naming the line. A history without any attempt is not a pass:
/// every invariant is `unknown` ([`EMPTY_HISTORY`]).
pub fn check_history(
    history: &Path,
    state: &Path,
    scenario: Option<&str>,
    opts: &CheckOptions,
) -> Result<FileCheck, CheckError> {
    check_histories(&[history.to_path_buf()], state, scenario, opts).map(|m| m.check)
}

/// Checks several histories as one against one state: the histories of
/// shards that sent disjoint keys to one receiver. Every key's attempts
/// are in one file, in the order its shard made them, and the checker
/// orders attempts per key (by history line, never across keys), so the
/// files' order and the machines' clocks do not matter. Line numbers run
/// on from file to file; [`MultiCheck::locate`] maps them back.
///
/// Inputs too large for memory are checked in partitions spilled to disk
/// (`check::spill`), in the first history's folder.
pub fn check_histories(
    histories: &[PathBuf],
    state: &Path,
    scenario: Option<&str>,
    opts: &CheckOptions,
) -> Result<MultiCheck, CheckError> {
    check_partitioned(histories, state, scenario, opts, &Partitioning::default())
}

/// [`check_histories`], cut into partitions as `how` says.
pub fn check_partitioned(
    histories: &[PathBuf],
    state: &Path,
    scenario: Option<&str>,
    opts: &CheckOptions,
    how: &Partitioning,
) -> Result<MultiCheck, CheckError> {
    check_in_parts(histories, state, scenario, opts, None, how)
}

/// [`check_partitioned`], reading each file in `parts` parts (by default
/// as many as [`chunks::parts_for`] says).
pub(crate) fn check_in_parts(
    histories: &[PathBuf],
    state: &Path,
    scenario: Option<&str>,
    opts: &CheckOptions,
    parts: Option<usize>,
    how: &Partitioning,
) -> Result<MultiCheck, CheckError> {
    let local = local_partitions(how, histories, state);
    if local > 1 || how.share.is_some() {
        let dir = spill_dir(how, histories);
        return check_spilled(
            histories, state, scenario, opts, parts, local, how.share, &dir,
        )
        .map(|(m, _)| m);
    }
    // A map of states is parsed on its own thread while the histories are
    // read. Only whether STATE is one state (then all events fold as one
    // scenario) changes how they are folded: its first key says so, the
    // same test `load_states` makes (a folder is not one), so the
    // histories are read once; an unreadable file is reported by
    // `load_states`.
    let guess = scenario.is_none() && names_a_state(state).unwrap_or(true);
    check_guessing(histories, state, scenario, opts, parts, guess)
}

/// Checks one share of the keys (`share`, of N; `hookstorm check
/// --partition I/N`) and writes what it found to `out` (`partition.json`
/// and `join.bin`), for `hookstorm merge` to join with the other shares
/// ([`spill::export::join`]).
pub fn check_share(
    histories: &[PathBuf],
    state: &Path,
    scenario: Option<&str>,
    opts: &CheckOptions,
    how: &Partitioning,
    share: spill::Partition,
    out: &Path,
) -> Result<spill::export::PartitionReport, CheckError> {
    let how = Partitioning {
        share: Some(share),
        ..how.clone()
    };
    let local = local_partitions(&how, histories, state);
    let dir = spill_dir(&how, histories);
    let (_, spilled) = check_spilled(
        histories,
        state,
        scenario,
        opts,
        None,
        local,
        Some(share),
        &dir,
    )?;
    spill::export::write(out, share, opts, scenario, spilled, local)
}

/// The partitions a check cuts its inputs into in this process: what `how`
/// says, else what their size asks for.
fn local_partitions(how: &Partitioning, histories: &[PathBuf], state: &Path) -> u32 {
    how.partitions
        .unwrap_or_else(|| spill::partitions_needed(histories, state, how.share))
}

/// Where a check spills: where `how` says, else the first history's
/// folder when it can be written to, else the system's temporary folder.
fn spill_dir(how: &Partitioning, histories: &[PathBuf]) -> PathBuf {
    if let Some(d) = &how.spill_dir {
        return d.clone();
    }
    let beside = histories.first().and_then(|h| h.parent()).map(|p| {
        if p.as_os_str().is_empty() {
            Path::new(".")
        } else {
            p
        }
    });
    match beside {
        Some(p) if tempfile::Builder::new().tempfile_in(p).is_ok() => p.to_path_buf(),
        _ => std::env::temp_dir(),
    }
}

/// A check in `local` partitions (of `share`): the checks, and the
/// spilled records for I5 and I6 a share hands on.
#[allow(clippy::too_many_arguments)]
pub(crate) fn check_spilled(
    histories: &[PathBuf],
    state: &Path,
    scenario: Option<&str>,
    opts: &CheckOptions,
    parts: Option<usize>,
    local: u32,
    share: Option<spill::Partition>,
    dir: &Path,
) -> Result<(MultiCheck, spill::Spilled), CheckError> {
    let states = load_states(state)?;
    let inputs = spill::Inputs {
        histories,
        state,
        states: &states,
        scenario,
        all_as_one: matches!(states, States::One(_)) && scenario.is_none(),
        parts,
    };
    let mut sp = spill::check(&inputs, opts, local, share, dir)?;
    let findings = std::mem::take(&mut sp.findings);
    let (sources, warnings) = (sp.sources.clone(), sp.warnings.clone());
    let checks = if sp.events == 0 {
        vec![ScenarioCheck::empty(scenario, opts)]
    } else {
        findings
            .iter()
            .map(|(name, f)| f.clone().into_check(name, opts))
            .collect()
    };
    sp.findings = findings;
    Ok((
        MultiCheck {
            check: FileCheck { checks, warnings },
            sources,
        },
        sp,
    ))
}

/// The check in memory, reading the histories as if the state were one
/// state (`guess`) while it is parsed.
fn check_guessing(
    histories: &[PathBuf],
    state: &Path,
    scenario: Option<&str>,
    opts: &CheckOptions,
    parts: Option<usize>,
    guess: bool,
) -> Result<MultiCheck, CheckError> {
    let (states, read) = std::thread::scope(|s| {
        let loading = s.spawn(|| load_states(state));
        let read = read_histories(histories, scenario, guess, opts, parts);
        let states = loading
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (states, read)
    });
    let states = states?;
    let all_as_one = matches!(states, States::One(_)) && scenario.is_none();
    let Read {
        mut folds,
        read:
            chunks::HistoriesRead {
                events,
                sources,
                warnings,
            },
    } = if all_as_one == guess {
        read?
    } else {
        read_histories(histories, scenario, all_as_one, opts, parts)?
    };
    let history = histories.first().map(PathBuf::as_path).unwrap_or(state);
    if events == 0 {
        return Ok(MultiCheck {
            sources,
            check: FileCheck {
                checks: vec![ScenarioCheck::empty(scenario, opts)],
                warnings,
            },
        });
    }
    if let Some(f) = scenario {
        folds
            .entry(f.to_string())
            .or_insert_with(|| Aggregator::new(opts.answer_limit));
        if folds[f].counts.attempts == 0 && folds[f].keys.is_empty() {
            return Err(CheckError::NoScenario {
                path: history.into(),
                scenario: f.to_string(),
            });
        }
    }
    let mut out = Vec::new();
    for (name, mut fold) in folds {
        let mut sink = fold.state_sink();
        let fed = feed_state(&states, state, &name, &mut sink)?;
        let rows = sink.rows;
        out.push(match fed {
            Ok(()) => fold.finish_rows(&name, Ok(rows), opts),
            Err(reason) => fold.finish_rows(&name, Err(&reason), opts),
        });
    }
    Ok(MultiCheck {
        check: FileCheck {
            checks: out,
            warnings,
        },
        sources,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wrong_guess_of_the_state_kind_reads_the_history_again_and_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let history = dir.path().join("history.jsonl");
        let mut text = String::new();
        for (scenario, key, status) in [("s1", "k1", 204), ("s2", "k2", 503), ("s1", "k3", 204)] {
            let a = crate::history::Attempt {
                status: Some(status),
                outcome: if status == 204 {
                    crate::history::Outcome::Ok
                } else {
                    crate::history::Outcome::Info
                },
                ..crate::history::Attempt::new(scenario, key, key, "a")
            };
            text.push_str(&serde_json::to_string(&Event::Attempt(a)).unwrap());
            text.push('\n');
        }
        std::fs::write(&history, text).unwrap();
        let one = dir.path().join("one.json");
        std::fs::write(
            &one,
            r#"{"inbox": [{"key": "k1", "account": "a", "processed": true}]}"#,
        )
        .unwrap();
        let many = dir.path().join("many.json");
        std::fs::write(
            &many,
            r#"{"s1": {"inbox": [{"key": "k1", "account": "a", "processed": true}]}, "s2": {"inbox": []}}"#,
        )
        .unwrap();
        assert!(names_a_state(&one).unwrap());
        assert!(!names_a_state(&many).unwrap());
        let opts = CheckOptions::default();
        let histories = [history];
        for state in [&one, &many] {
            for scenario in [None, Some("s1")] {
                let check = |guess| {
                    check_guessing(&histories, state, scenario, &opts, Some(2), guess)
                        .map(|m| m.check)
                        .map_err(|e| e.to_string())
                };
                let (right, wrong) = (check(true), check(false));
                assert_eq!(right, wrong, "{state:?} {scenario:?}");
                let names: Vec<String> = right
                    .unwrap()
                    .checks
                    .into_iter()
                    .map(|c| c.scenario)
                    .collect();
                let expected: &[&str] = match (state == &one, scenario) {
                    (true, None) => &["all"],
                    (false, None) => &["s1", "s2"],
                    (_, Some(_)) => &["s1"],
                };
                assert_eq!(names, expected, "{state:?} {scenario:?}");
            }
        }
    }
}
