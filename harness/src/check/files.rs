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
use std::fs::File;
use std::path::{Path, PathBuf};

use crate::history::Event;
use crate::state::State;

use super::aggregate::MAX_LINES;
use super::view::{Compact, Rows};

use super::aggregate::Aggregator;
use super::chunks::{self, Filter};
use super::verdict::{CheckError, EMPTY_HISTORY};
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

enum States {
    /// One state file, read (streaming) once the history is folded.
    One(PathBuf),
    Many(BTreeMap<String, State>),
    Dir(PathBuf),
}

/// Streams a state file into the fold's compact rows.
fn read_state_file(path: &Path, fold: &mut Aggregator) -> Result<Rows, CheckError> {
    let file = File::open(path).map_err(|source| CheckError::Io {
        path: path.into(),
        source,
    })?;
    crate::state::stream::read_any(file, fold.state_sink())
        .map(|c| c.rows)
        .map_err(|e| CheckError::State {
            path: path.into(),
            message: e.to_string(),
        })
}

/// The first key of the JSON object at the start of `path`, when it has one.
fn first_key(path: &Path) -> Result<Option<String>, CheckError> {
    use std::io::Read;
    let mut head = Vec::new();
    File::open(path)
        .and_then(|f| f.take(4096).read_to_end(&mut head))
        .map_err(|source| CheckError::Io {
            path: path.into(),
            source,
        })?;
    let text = String::from_utf8_lossy(&head);
    let rest = text.trim_start().strip_prefix('{').map(str::trim_start);
    Ok(rest
        .and_then(|r| r.strip_prefix('"'))
        .and_then(|r| r.split_once('"'))
        .map(|(key, _)| key.to_string()))
}

/// Whether `path` is one state file rather than a folder or a map of
/// scenario names to states: a state names its sections first (`inbox`,
/// …, or `sections` in JSON Lines); a map of states names a scenario.
fn names_a_state(path: &Path) -> Result<bool, CheckError> {
    if path.is_dir() {
        return Ok(false);
    }
    Ok(first_key(path)?.is_some_and(|k| {
        k == "sections"
            || ["inbox", "results", "winners", "effects", "resources"].contains(&k.as_str())
    }))
}

/// What reading the histories gave.
struct Read {
    folds: BTreeMap<String, Aggregator>,
    events: u64,
    sources: Vec<HistorySource>,
    warnings: Vec<String>,
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
    let mut out = Read {
        folds: BTreeMap::new(),
        events: 0,
        sources: Vec::new(),
        warnings: Vec::new(),
    };
    let mut line = 0u64;
    for history in histories {
        let parts = match parts {
            Some(n) => n,
            None => chunks::parts_for(std::fs::metadata(history).map_or(0, |m| m.len())),
        };
        let read = chunks::fold_file(history, &filter, parts, line, &mut out.folds)?;
        out.events += read.events;
        out.warnings.extend(read.warning);
        out.sources.push(HistorySource {
            path: history.to_path_buf(),
            first_line: line + 1,
            lines: read.lines,
        });
        line += read.lines;
        if line > MAX_LINES {
            return Err(CheckError::TooLong {
                path: history.to_path_buf(),
                max: MAX_LINES,
            });
        }
    }
    for fold in out.folds.values_mut() {
        fold.seal_deliveries();
    }
    Ok(out)
}

fn load_states(path: &Path) -> Result<States, CheckError> {
    if path.is_dir() {
        return Ok(States::Dir(path.to_path_buf()));
    }
    if names_a_state(path)? {
        return Ok(States::One(path.to_path_buf()));
    }
    let text = std::fs::read_to_string(path).map_err(|source| CheckError::Io {
        path: path.into(),
        source,
    })?;
    match serde_json::from_str::<BTreeMap<String, State>>(&text) {
        Ok(m) => Ok(States::Many(m)),
        Err(e) => Err(CheckError::State {
            path: path.into(),
            message: serde_json::from_str::<State>(&text)
                .err()
                .map_or_else(|| e.to_string(), |e| e.to_string()),
        }),
    }
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

/// What [`check_history`] found.
#[derive(Debug, Clone, PartialEq)]
pub struct FileCheck {
    /// One result per scenario; an empty history gives one result whose
    /// every invariant is `unknown`, with the reason.
    pub checks: Vec<ScenarioCheck>,
    /// Things the reader had to work around (a last line cut off), for
    /// stderr and the output.
    pub warnings: Vec<String>,
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

/// One history file of several read as one, and the lines it was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistorySource {
    /// The file.
    pub path: PathBuf,
    /// The number its first line got (1 for the first file).
    pub first_line: u64,
    /// Lines read from it.
    pub lines: u64,
}

/// What [`check_histories`] found, and where each line number came from.
#[derive(Debug, Clone, PartialEq)]
pub struct MultiCheck {
    /// The verdicts, as for one history.
    pub check: FileCheck,
    /// The files in the order given; evidence line numbers run on from
    /// one file to the next.
    pub sources: Vec<HistorySource>,
}

impl MultiCheck {
    /// Which source (index into `sources`) and which of its own lines a
    /// line number of the evidence is.
    pub fn locate(&self, line: u64) -> Option<(usize, u64)> {
        self.sources.iter().enumerate().find_map(|(i, s)| {
            (line >= s.first_line && line < s.first_line + s.lines)
                .then(|| (i, line - s.first_line + 1))
        })
    }
}

/// Checks several histories as one against one state: the histories of
/// shards that sent disjoint keys to one receiver. Every key's attempts
/// are in one file, in the order its shard made them, and the checker
/// orders attempts per key (by history line, never across keys), so the
/// files' order and the machines' clocks do not matter. Line numbers run
/// on from file to file; [`MultiCheck::locate`] maps them back.
pub fn check_histories(
    histories: &[PathBuf],
    state: &Path,
    scenario: Option<&str>,
    opts: &CheckOptions,
) -> Result<MultiCheck, CheckError> {
    check_histories_in_parts(histories, state, scenario, opts, None)
}

/// [`check_histories`], reading each file in `parts` parts (by default as
/// many as [`chunks::parts_for`] says).
pub(crate) fn check_histories_in_parts(
    histories: &[PathBuf],
    state: &Path,
    scenario: Option<&str>,
    opts: &CheckOptions,
    parts: Option<usize>,
) -> Result<MultiCheck, CheckError> {
    // A map of states is parsed on its own thread while the histories are
    // read. Only whether STATE is one state (then all events fold as one
    // scenario) changes how they are folded: its first key says so, the
    // same test `load_states` makes (a folder is not one), so the
    // histories are read once; an unreadable file is reported by
    // `load_states`.
    let guess = scenario.is_none() && names_a_state(state).unwrap_or(true);
    check_guessing(histories, state, scenario, opts, parts, guess)
}

/// [`check_histories_in_parts`], reading the histories as if the state were
/// one state (`guess`) while it is parsed.
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
        events,
        sources,
        warnings,
    } = if all_as_one == guess {
        read?
    } else {
        read_histories(histories, scenario, all_as_one, opts, parts)?
    };
    let history = histories.first().map(PathBuf::as_path).unwrap_or(state);
    if events == 0 {
        let name = scenario.unwrap_or("all").to_string();
        return Ok(MultiCheck {
            sources,
            check: FileCheck {
                checks: vec![ScenarioCheck {
                    scenario: name,
                    results: opts
                        .invariants
                        .iter()
                        .map(|id| {
                            super::verdict::InvariantResult::new(
                                *id,
                                super::verdict::Verdict::Unknown,
                                EMPTY_HISTORY,
                            )
                        })
                        .collect(),
                    counts: Default::default(),
                    dead_letters: Vec::new(),
                    observations: Vec::new(),
                }],
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
        let rows: Result<Rows, String> = match &states {
            States::One(p) => Ok(read_state_file(p, &mut fold)?),
            States::Many(m) => m
                .get(&name)
                .map(|s| Compact::of(&mut fold.strings, s))
                .ok_or_else(|| format!("{} has no state for this scenario", state.display())),
            States::Dir(dir) => {
                let candidates = [
                    dir.join(format!("{name}.json")),
                    dir.join(format!("{name}.state.json")),
                ];
                match candidates.iter().find(|p| p.is_file()) {
                    None => Err(format!("no {name}.json in {}", dir.display())),
                    Some(p) => read_state_file(p, &mut fold).map_err(|e| e.to_string()),
                }
            }
        };
        out.push(match rows {
            Ok(rows) => fold.finish_rows(&name, Ok(rows), opts),
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
