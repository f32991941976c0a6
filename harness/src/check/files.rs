//! `hookstorm check HISTORY STATE`: checks a recorded history again, later,
//! against saved state, without re-running anything.
//!
//! The history is read once, streaming, and folded per scenario. STATE is
//! either one state JSON (applied to the scenario named by the filter, or,
//! without a filter, to all events as one scenario named `all`), a JSON
//! object mapping scenario names to states, or a directory holding
//! `<scenario>.json` (or `<scenario>.state.json`) per scenario; a scenario
//! without a state is graded `unknown`.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use crate::history::Event;
use crate::state::State;

use super::{Aggregator, CheckOptions, ScenarioCheck};

/// `hookstorm check` could not read its inputs.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// I/O on a file.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A history line is not an event.
    #[error("{path}: line {line}: not a history event: {message}")]
    History {
        /// The history file.
        path: PathBuf,
        /// 1-based line.
        line: u64,
        /// What was wrong.
        message: String,
    },
    /// The state file is not a state.
    #[error("{path}: not a receiver state: {message} (hint: expected {{\"inbox\": [...]}} as in invariants.md)")]
    State {
        /// The state file.
        path: PathBuf,
        /// What was wrong.
        message: String,
    },
    /// The scenario filter matched nothing in the history.
    #[error("{path}: no events for scenario {scenario:?}")]
    NoScenario {
        /// The history file.
        path: PathBuf,
        /// The filter.
        scenario: String,
    },
}

/// Reads history events with their 1-based line numbers, skipping blank lines.
pub fn read_numbered(path: &Path) -> Result<impl Iterator<Item = Result<(u64, Event), CheckError>>, CheckError> {
    let file = File::open(path).map_err(|source| CheckError::Io { path: path.into(), source })?;
    let path = path.to_path_buf();
    Ok(BufReader::with_capacity(1 << 16, file)
        .lines()
        .enumerate()
        .filter(|(_, l)| !matches!(l, Ok(s) if s.trim().is_empty()))
        .map(move |(i, line)| {
            let line = line.map_err(|source| CheckError::Io { path: path.clone(), source })?;
            let n = i as u64 + 1;
            serde_json::from_str(&line)
                .map(|e| (n, e))
                .map_err(|e| CheckError::History { path: path.clone(), line: n, message: e.to_string() })
        }))
}

enum States {
    One(State),
    Many(BTreeMap<String, State>),
    Dir(PathBuf),
}

fn read_state_file(path: &Path) -> Result<serde_json::Value, CheckError> {
    let text = std::fs::read_to_string(path).map_err(|source| CheckError::Io { path: path.into(), source })?;
    serde_json::from_str(&text).map_err(|e| CheckError::State { path: path.into(), message: e.to_string() })
}

fn load_states(path: &Path) -> Result<States, CheckError> {
    if path.is_dir() {
        return Ok(States::Dir(path.to_path_buf()));
    }
    let value = read_state_file(path)?;
    let bad = |e: serde_json::Error| CheckError::State { path: path.into(), message: e.to_string() };
    if value.get("inbox").is_some() {
        return serde_json::from_value(value).map(States::One).map_err(bad);
    }
    serde_json::from_value(value).map(States::Many).map_err(bad)
}

/// Checks a history file against a state file or folder; one result per scenario.
pub fn check_files(
    history: &Path,
    state: &Path,
    scenario: Option<&str>,
    opts: &CheckOptions,
) -> Result<Vec<ScenarioCheck>, CheckError> {
    let states = load_states(state)?;
    let all_as_one = matches!(states, States::One(_)) && scenario.is_none();
    let mut folds: BTreeMap<String, Aggregator> = BTreeMap::new();
    for item in read_numbered(history)? {
        let (line, event) = item?;
        let name = match (event.scenario(), all_as_one) {
            (None, _) => continue,
            (Some(_), true) => "all",
            (Some(s), false) => s,
        };
        if scenario.is_some_and(|f| f != name) {
            continue;
        }
        folds
            .entry(name.to_string())
            .or_insert_with(|| Aggregator::new(opts.answer_limit))
            .push(line, &event);
    }
    if let Some(f) = scenario {
        folds
            .entry(f.to_string())
            .or_insert_with(|| Aggregator::new(opts.answer_limit));
        if folds[f].counts.attempts == 0 && folds[f].keys.is_empty() {
            return Err(CheckError::NoScenario { path: history.into(), scenario: f.to_string() });
        }
    }
    let mut out = Vec::new();
    for (name, fold) in folds {
        let found: Result<State, String> = match &states {
            States::One(s) => Ok(s.clone()),
            States::Many(m) => m.get(&name).cloned().ok_or_else(|| format!("{} has no state for this scenario", state.display())),
            States::Dir(dir) => {
                let candidates = [dir.join(format!("{name}.json")), dir.join(format!("{name}.state.json"))];
                match candidates.iter().find(|p| p.is_file()) {
                    None => Err(format!("no {name}.json in {}", dir.display())),
                    Some(p) => {
                        read_state_file(p).map_err(|e| e.to_string()).and_then(|v| {
                            serde_json::from_value(v)
                                .map_err(|e| format!("{}: not a receiver state: {e}", p.display()))
                        })
                    }
                }
            }
        };
        out.push(match &found {
            Ok(s) => fold.finish(&name, Ok(s), opts),
            Err(reason) => fold.finish(&name, Err(reason), opts),
        });
    }
    Ok(out)
}
