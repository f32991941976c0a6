//! What the STATE argument of a check names, and how each scenario's state
//! is fed to a sink: one state file (the document or JSON Lines), a JSON
//! object mapping scenario names to states, or a folder of
//! `<scenario>.json` files. The check in memory and the check in
//! partitions read states through here alike.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use crate::limits::budget::{self, FileError};
use crate::state::stream::{ReadError, SinkError, StateSink};
use crate::state::State;

use super::verdict::CheckError;

/// What the STATE argument of a check is.
pub(crate) enum States {
    /// One state file, read (streaming) once the history is folded.
    One(PathBuf),
    Many(BTreeMap<String, State>),
    Dir(PathBuf),
}

/// Streams a state file into `sink`.
fn read_state(path: &Path, sink: &mut impl StateSink) -> Result<(), CheckError> {
    let file = File::open(path).map_err(|source| CheckError::Io {
        path: path.into(),
        source,
    })?;
    crate::state::stream::read_any(file, sink)
        .map(|_| ())
        .map_err(|e| match e {
            ReadError::Keep(why) => kept_not(why),
            e => CheckError::State {
                path: path.into(),
                message: e.to_string(),
            },
        })
}

/// The check's own write of a state it read failed (a spill, a full
/// disk): the check's failure, not the state's.
fn kept_not(why: String) -> CheckError {
    CheckError::Spill {
        source: std::io::Error::other(why),
    }
}

/// Feeds scenario `name`'s state to `sink`. `Ok(Err(reason))`: the
/// scenario has no readable state of its own (it is graded without one);
/// `Err`: the one state file given (`state`) is not a state.
pub(crate) fn feed_state(
    states: &States,
    state: &Path,
    name: &str,
    sink: &mut impl StateSink,
) -> Result<Result<(), String>, CheckError> {
    match states {
        States::One(p) => read_state(p, sink).map(Ok),
        States::Many(m) => Ok(match m.get(name) {
            Some(s) => match s.replay(sink) {
                Err(SinkError::Keep(why)) => return Err(kept_not(why)),
                Err(SinkError::Refused(why)) => Err(why),
                Ok(()) => Ok(()),
            },
            None => Err(format!(
                "{} has no state for this scenario",
                state.display()
            )),
        }),
        States::Dir(dir) => {
            let candidates = [
                dir.join(format!("{name}.json")),
                dir.join(format!("{name}.state.json")),
            ];
            Ok(match candidates.iter().find(|p| p.is_file()) {
                None => Err(format!("no {name}.json in {}", dir.display())),
                Some(p) => match read_state(p, sink) {
                    Err(e @ CheckError::Spill { .. }) => return Err(e),
                    r => r.map_err(|e| e.to_string()),
                },
            })
        }
    }
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
pub(crate) fn names_a_state(path: &Path) -> Result<bool, CheckError> {
    if path.is_dir() {
        return Ok(false);
    }
    Ok(first_key(path)?.is_some_and(|k| {
        k == "sections"
            || ["inbox", "results", "winners", "effects", "resources"].contains(&k.as_str())
    }))
}

/// The text of a map of states, within [`budget::STATE_MAP`]: a device,
/// a pipe or a larger file is refused naming the file, never read whole.
fn read_map(path: &Path) -> Result<String, CheckError> {
    budget::read_text(path, budget::STATE_MAP).map_err(|e| match e {
        FileError::Io(source) => CheckError::Io {
            path: path.into(),
            source,
        },
        FileError::NotAFile => CheckError::State {
            path: path.into(),
            message: "its first bytes name no section, and it is not a regular file \
                      (a device or a pipe) to read as a map of scenario names to states"
                .into(),
        },
        FileError::TooLarge(cap) => CheckError::State {
            path: path.into(),
            message: format!(
                "its first key names no section, and it is longer than {} for a map of \
                 scenario names to states (a folder of <scenario>.json files is read row by row)",
                budget::show(cap)
            ),
        },
    })
}

pub(crate) fn load_states(path: &Path) -> Result<States, CheckError> {
    if path.is_dir() {
        return Ok(States::Dir(path.to_path_buf()));
    }
    if names_a_state(path)? {
        return Ok(States::One(path.to_path_buf()));
    }
    let text = read_map(path)?;
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
