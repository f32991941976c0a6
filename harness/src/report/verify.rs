//! `hookstorm verify REPORT_DIR`: is this folder the one the run wrote, and
//! do its histories still grade as it says?
//!
//! Three checks, each naming what it found wrong:
//! 1. every file `SHA256SUMS` lists has the digest it lists (`report.json`,
//!    the other reports, every history and state);
//! 2. `report.json`'s own list of history and state digests agrees with
//!    `SHA256SUMS`, and names every history and state its scenarios cite;
//! 3. each scenario that was graded from its files is graded again with
//!    the checker, with what `report.json` recorded it was graded with,
//!    and every invariant's verdict must be the recorded one.
//!
//! The seal is no signature: whoever can rewrite the folder can rewrite
//! `SHA256SUMS` too. What it gives a reader is this: the digest of
//! `report.json` that `summary.md`, `report.html` and the console printed
//! at the end of the run, compared with the one `verify` prints, shows the
//! folder is the one the run wrote, and the re-check shows its verdicts
//! follow from its histories.
//!
//! Exit codes ([`Verification::exit_code`], `docs/invariants.md`): 0
//! verified, 1 a mismatch, 2 not verifiable (no `SHA256SUMS`: a folder
//! written before reports were sealed); a path that is no report folder is
//! a usage error (254).

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::seal::{self, FileDigest, SealError, REPORT_JSON, SUMS};
use super::{RunReport, ScenarioReport};
use crate::check::{self, CheckOptions, Verdict};
use crate::history;
use crate::profile::vocabulary::Vocabulary;
use crate::state::State;

/// One thing that does not hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mismatch {
    /// A file's bytes are not the ones sealed.
    Digest {
        /// The file, as `SHA256SUMS` names it.
        file: String,
        /// The digest sealed.
        sealed: String,
        /// The digest of the file now.
        found: String,
    },
    /// A sealed file is gone or unreadable.
    Missing {
        /// The file.
        file: String,
        /// Why it could not be read.
        why: String,
    },
    /// `report.json` and `SHA256SUMS` disagree about a file, or a file
    /// a scenario cites is sealed by neither.
    Unsealed {
        /// The file.
        file: String,
        /// What disagrees.
        why: String,
    },
    /// `SHA256SUMS` itself is not readable as digests, or `report.json`
    /// is not a report.
    Malformed {
        /// The file.
        file: String,
        /// What is wrong.
        why: String,
    },
    /// Grading the scenario's files again gave another verdict.
    Verdict {
        /// The scenario.
        scenario: String,
        /// The invariant (`I2 exactly-once`).
        invariant: String,
        /// The verdict `report.json` records (`none`: not recorded).
        recorded: String,
        /// The verdict the files give now (`none`: not graded).
        regraded: String,
    },
    /// The scenario's files could not be graded again.
    Regrade {
        /// The scenario.
        scenario: String,
        /// Why.
        why: String,
    },
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Mismatch::Digest { file, sealed, found } => write!(
                f,
                "{file}: changed since the run sealed it (SHA-256 {found}, sealed {sealed})"
            ),
            Mismatch::Missing { file, why } => write!(f, "{file}: sealed but unreadable: {why}"),
            Mismatch::Unsealed { file, why } => write!(f, "{file}: {why}"),
            Mismatch::Malformed { file, why } => write!(f, "{file}: {why}"),
            Mismatch::Verdict {
                scenario,
                invariant,
                recorded,
                regraded,
            } => write!(
                f,
                "{scenario} {invariant}: report.json records {recorded}, its history and state grade {regraded}"
            ),
            Mismatch::Regrade { scenario, why } => {
                write!(f, "{scenario}: cannot be graded again: {why}")
            }
        }
    }
}

/// What `verify` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verification {
    /// The folder.
    pub dir: PathBuf,
    /// `report.json`'s digest as `SHA256SUMS` seals it.
    pub report_sha256: Option<String>,
    /// The files whose digests matched.
    pub files_ok: Vec<String>,
    /// The scenarios graded again with the recorded verdicts.
    pub regraded: Vec<String>,
    /// The scenarios not graded again, and why (skipped, cut short).
    pub not_regraded: Vec<(String, String)>,
    /// Everything that does not hold.
    pub mismatches: Vec<Mismatch>,
}

impl Verification {
    /// 0 verified, 1 a mismatch.
    pub fn exit_code(&self) -> i32 {
        if self.mismatches.is_empty() {
            crate::exit::PASS
        } else {
            crate::exit::FAIL
        }
    }
}

/// Why a folder could not be verified at all.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    /// Not a report folder.
    #[error("{path}: not a report folder (hint: give the folder a run wrote, which holds report.json and SHA256SUMS, e.g. reports/latest)")]
    NotAReport {
        /// The path given.
        path: PathBuf,
    },
    /// The folder has no `SHA256SUMS`.
    #[error("{0} (hint: a folder written by an older hookstorm cannot be verified; re-check its histories with `hookstorm check`)")]
    Unsealed(SealError),
}

impl VerifyError {
    /// 254 for a path that is no report folder, 2 for a folder that was
    /// never sealed.
    pub fn exit_code(&self) -> i32 {
        match self {
            VerifyError::NotAReport { .. } => crate::exit::USAGE,
            VerifyError::Unsealed(_) => crate::exit::UNKNOWN,
        }
    }
}

/// Verifies the report folder `dir`.
pub fn verify(dir: &Path) -> Result<Verification, VerifyError> {
    if !dir.join(REPORT_JSON).is_file() {
        return Err(VerifyError::NotAReport { path: dir.into() });
    }
    let mut v = Verification {
        dir: dir.into(),
        report_sha256: None,
        files_ok: Vec::new(),
        regraded: Vec::new(),
        not_regraded: Vec::new(),
        mismatches: Vec::new(),
    };
    let sums = match seal::read_sums(&dir.join(SUMS)) {
        Ok(s) => s,
        Err(e @ SealError::Missing { .. }) => return Err(VerifyError::Unsealed(e)),
        Err(e) => {
            v.mismatches.push(Mismatch::Malformed {
                file: SUMS.into(),
                why: e.to_string(),
            });
            return Ok(v);
        }
    };
    let mut intact = BTreeMap::new();
    for d in &sums {
        match seal::sealed_file_digest(dir, &d.path) {
            Ok(found) if found == d.sha256 => {
                v.files_ok.push(d.path.clone());
                intact.insert(d.path.clone(), d.sha256.clone());
            }
            Ok(found) => v.mismatches.push(Mismatch::Digest {
                file: d.path.clone(),
                sealed: d.sha256.clone(),
                found,
            }),
            Err(why) => v.mismatches.push(Mismatch::Missing {
                file: d.path.clone(),
                why,
            }),
        }
    }
    v.report_sha256 = sums
        .iter()
        .find(|d| d.path == REPORT_JSON)
        .map(|d| d.sha256.clone());
    if v.report_sha256.is_none() {
        v.mismatches.push(Mismatch::Unsealed {
            file: REPORT_JSON.into(),
            why: format!("{SUMS} does not list it"),
        });
    }
    // Only a report.json that is the sealed one says what to grade.
    if !intact.contains_key(REPORT_JSON) {
        return Ok(v);
    }
    let (report, files) = match read_report(&dir.join(REPORT_JSON)) {
        Ok(r) => r,
        Err(why) => {
            v.mismatches.push(Mismatch::Malformed {
                file: REPORT_JSON.into(),
                why,
            });
            return Ok(v);
        }
    };
    cross_check(&report, &files, &sums, &mut v);
    for s in &report.scenarios {
        regrade(dir, &report, s, &intact, &mut v);
    }
    Ok(v)
}

/// `report.json` as a report, and the digests its statement lists.
fn read_report(path: &Path) -> Result<(RunReport, Vec<FileDigest>), String> {
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|f| {
            f.take(crate::limits::budget::REPORT_FILE as u64)
                .read_to_string(&mut text)
        })
        .map_err(|e| e.to_string())?;
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let files: Vec<FileDigest> = value
        .pointer("/conformance/files")
        .cloned()
        .map(serde_json::from_value)
        .transpose()
        .map_err(|e| format!("conformance.files: {e}"))?
        .ok_or("no conformance.files: not a sealed report")?;
    let report: RunReport = serde_json::from_value(value).map_err(|e| e.to_string())?;
    Ok((report, files))
}

/// `report.json`'s digests against `SHA256SUMS`, and every history and
/// state a scenario cites sealed.
fn cross_check(
    report: &RunReport,
    files: &[FileDigest],
    sums: &[FileDigest],
    v: &mut Verification,
) {
    for f in files {
        match sums.iter().find(|d| d.path == f.path) {
            Some(d) if d.sha256 == f.sha256 => {}
            Some(_) => v.mismatches.push(Mismatch::Unsealed {
                file: f.path.clone(),
                why: format!("{REPORT_JSON} and {SUMS} seal it with different digests"),
            }),
            None => v.mismatches.push(Mismatch::Unsealed {
                file: f.path.clone(),
                why: format!("{REPORT_JSON} lists it, {SUMS} does not"),
            }),
        }
    }
    for s in report.scenarios.iter().filter(|s| s.graded_with.is_some()) {
        for path in std::iter::once(&s.history).chain(s.state.as_ref()) {
            if !files.iter().any(|f| &f.path == path) {
                v.mismatches.push(Mismatch::Unsealed {
                    file: path.clone(),
                    why: format!(
                        "scenario {} cites it, {REPORT_JSON} does not seal it",
                        s.name
                    ),
                });
            }
        }
    }
}

/// Grades scenario `s` again from its files and compares.
fn regrade(
    dir: &Path,
    report: &RunReport,
    s: &ScenarioReport,
    intact: &BTreeMap<String, String>,
    v: &mut Verification,
) {
    let Some(with) = &s.graded_with else {
        let why = match &s.skipped {
            Some(k) => format!("did not run: {}", k.reason),
            None => "not graded from its files (cut short)".to_string(),
        };
        v.not_regraded.push((s.name.clone(), why));
        return;
    };
    let files = std::iter::once(&s.history).chain(s.state.as_ref());
    if files.clone().any(|p| !intact.contains_key(p)) {
        // Its digest mismatch is reported already.
        v.not_regraded
            .push((s.name.clone(), "its files changed".to_string()));
        return;
    }
    let state = match &s.state {
        Some(p) => match read_state(&seal::resolve(dir, p)) {
            Ok(st) => Ok(st),
            Err(why) => {
                v.mismatches.push(Mismatch::Regrade {
                    scenario: s.name.clone(),
                    why: format!("{p}: {why}"),
                });
                return;
            }
        },
        None => Err("no state was read"),
    };
    let opts = CheckOptions {
        invariants: s.check.results.iter().map(|r| r.id).collect(),
        strict: report.strict,
        answer_limit: Duration::from_millis(with.answer_limit_ms),
        drained: with.drained,
        reconciled: with.reconciled,
        vocabulary: Vocabulary::of_name(&report.profile),
    };
    let mut agg = check::Aggregator::new(opts.answer_limit);
    let history = seal::resolve(dir, &s.history);
    if let Err(e) = history::fold(&history, &mut [&mut agg]) {
        v.mismatches.push(Mismatch::Regrade {
            scenario: s.name.clone(),
            why: e.to_string(),
        });
        return;
    }
    let mut again = agg.finish(&s.name, state.as_ref().map_err(|e| *e), &opts);
    if let Some(reason) = &with.not_exercised {
        again.not_exercised(reason);
    }
    if again.counts.attempts == 0 {
        again.nothing_sent();
    }
    let before = v.mismatches.len();
    let word = |x: Option<Verdict>| x.map_or("none".to_string(), |v| v.to_string());
    for id in s.check.results.iter().map(|r| r.id) {
        let recorded = s.check.result(id).map(|r| r.verdict);
        let regraded = again.result(id).map(|r| r.verdict);
        if recorded != regraded {
            v.mismatches.push(Mismatch::Verdict {
                scenario: s.name.clone(),
                invariant: id.to_string(),
                recorded: word(recorded),
                regraded: word(regraded),
            });
        }
    }
    if v.mismatches.len() == before {
        v.regraded.push(s.name.clone());
    }
}

fn read_state(path: &Path) -> Result<State, String> {
    let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
    serde_json::from_slice(&bytes).map_err(|e| e.to_string())
}
