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
//!    and every invariant's verdict must be the recorded one;
//! 4. every report is rendered again from `report.json`'s own data, byte
//!    for byte: a value derived from the results (the run's verdict and
//!    exit code, a scenario's verdict, a grade, the coverage, the
//!    conformance levels) that the results do not give, or a `junit.xml`,
//!    `summary.md` or `report.html` saying anything else, is a mismatch,
//!    named by its place (`report.json` at `/verdict`).
//!
//! 5. with `--key`, the folder's signature (`report.dsse.json`,
//!    [`super::attest`]) must hold for that key and sign the files as they
//!    are; without it, `verify` says whether the folder is signed.
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

use super::attest::{self, Signature};
use super::dsse::PublicKey;
use super::seal::{self, FileDigest, Seal, SealError, REPORT_JSON, SUMS};
use super::{html, json, junit, summary, RunReport, ScenarioReport};
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
    /// A report says what its own data does not give: a derived value
    /// of `report.json` edited, or another report changed after the run.
    Derived {
        /// The file.
        file: String,
        /// What differs, and where.
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
    /// The folder's signature does not hold, for the key given or for a
    /// file signed ([`super::attest`]).
    Signature {
        /// The file (`report.dsse.json`, or a file signed).
        file: String,
        /// What does not hold.
        why: String,
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
            Mismatch::Derived { file, why } => write!(f, "{file}: {why}"),
            Mismatch::Signature { file, why } => write!(f, "{file}: signature: {why}"),
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
    /// Whether the folder is signed, and whether the signature held.
    pub signature: Signature,
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

/// Verifies the report folder `dir`, saying whether it is signed.
pub fn verify(dir: &Path) -> Result<Verification, VerifyError> {
    verify_with(dir, None)
}

/// Verifies the report folder `dir` and, with `key`, its signature: it
/// must be signed by that key, over the files as they are.
pub fn verify_with(dir: &Path, key: Option<&PublicKey>) -> Result<Verification, VerifyError> {
    if !dir.join(REPORT_JSON).is_file() {
        return Err(VerifyError::NotAReport { path: dir.into() });
    }
    let mut v = Verification {
        dir: dir.into(),
        report_sha256: None,
        files_ok: Vec::new(),
        regraded: Vec::new(),
        not_regraded: Vec::new(),
        signature: Signature::Unsigned,
        mismatches: Vec::new(),
    };
    let signed = attest::check_folder(dir, key);
    v.signature = signed.signature;
    v.mismatches.extend(
        signed
            .problems
            .into_iter()
            .map(|(file, why)| Mismatch::Signature { file, why }),
    );
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
    // Another version renders its reports otherwise: only the version
    // that wrote them can render them again byte for byte.
    if report.hookstorm_version == env!("CARGO_PKG_VERSION") {
        let sha = v.report_sha256.clone().unwrap_or_default();
        rerender(dir, &report, &files, &sha, &mut v);
    } else {
        v.not_regraded.push((
            "(the reports)".into(),
            format!(
                "not rendered again: written by hookstorm {}, this is {}",
                report.hookstorm_version,
                env!("CARGO_PKG_VERSION")
            ),
        ));
    }
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

/// Renders every report again from `report`, sealed with `files` (and,
/// for the reports that name it, `report.json`'s digest `sha`), and
/// compares each with the file: the first value of `report.json` that
/// differs is named by its JSON pointer.
fn rerender(dir: &Path, report: &RunReport, files: &[FileDigest], sha: &str, v: &mut Verification) {
    let mut r = report.clone();
    r.seal = Some(Seal {
        files: files.to_vec(),
        report_json: None,
    });
    let read = |name: &str| {
        crate::limits::budget::read_file(&dir.join(name), crate::limits::budget::REPORT_FILE)
    };
    let again = json::to_value(&r);
    match read(REPORT_JSON)
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
    {
        Some(there) => {
            if let Some((at, was, is)) = first_difference(&there, &again, String::new()) {
                v.mismatches.push(Mismatch::Derived {
                    file: REPORT_JSON.into(),
                    why: format!("at {at} it says {was}; its own results give {is}"),
                });
            }
        }
        None => v.mismatches.push(Mismatch::Derived {
            file: REPORT_JSON.into(),
            why: "not readable as JSON".into(),
        }),
    }
    r.seal = Some(Seal {
        files: files.to_vec(),
        report_json: Some(sha.to_string()),
    });
    // An exploration writes its own summary, from `explore.json`, over
    // the run's: sealed, it is checked by its digest alone.
    let explored = v.files_ok.iter().any(|f| f == EXPLORE_JSON);
    if explored {
        v.not_regraded.push((
            "(summary.md)".into(),
            format!("an exploration's own summary, from {EXPLORE_JSON}: checked by its digest, not rendered again"),
        ));
    }
    // The page draws the histories: one that changed is named already,
    // and the page cannot be drawn again as the run drew it.
    let drawn_from_intact = !v.mismatches.iter().any(|m| {
        matches!(m, Mismatch::Digest { file, .. } | Mismatch::Missing { file, .. }
            if file.ends_with(".jsonl"))
    });
    if !drawn_from_intact {
        v.not_regraded.push((
            "(report.html)".into(),
            "not drawn again: a history it draws changed".into(),
        ));
    }
    let reports = [
        ("junit.xml", Some(junit::render(&r))),
        ("summary.md", (!explored).then(|| summary::render(&r))),
        (
            "report.html",
            drawn_from_intact.then(|| html::render(&r, dir)),
        ),
    ];
    for (name, text) in reports {
        let Some(text) = text else { continue };
        match read(name) {
            Ok(bytes) if bytes == text.as_bytes() => {}
            Ok(_) => v.mismatches.push(Mismatch::Derived {
                file: name.into(),
                why: format!("not the report {REPORT_JSON} renders (edited after the run)"),
            }),
            Err(e) => v.mismatches.push(Mismatch::Derived {
                file: name.into(),
                why: format!("unreadable: {e}"),
            }),
        }
    }
}

/// The file an exploration seals beside the run's reports.
const EXPLORE_JSON: &str = "explore.json";

/// The first place (a JSON pointer) where `there` and `again` differ, with
/// both values there, in short.
fn first_difference(
    there: &serde_json::Value,
    again: &serde_json::Value,
    at: String,
) -> Option<(String, String, String)> {
    use serde_json::Value;
    let short = |v: Option<&Value>| {
        let t = v.map_or("nothing".to_string(), Value::to_string);
        crate::limits::budget::quote(&t)
    };
    match (there, again) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            keys.into_iter().find_map(|k| {
                let here = format!("{at}/{k}");
                match (a.get(k), b.get(k)) {
                    (Some(x), Some(y)) => first_difference(x, y, here),
                    (x, y) => Some((here, short(x), short(y))),
                }
            })
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => a
            .iter()
            .zip(b)
            .enumerate()
            .find_map(|(i, (x, y))| first_difference(x, y, format!("{at}/{i}"))),
        (x, y) if x == y => None,
        (x, y) => Some((
            if at.is_empty() { "/".into() } else { at },
            short(Some(x)),
            short(Some(y)),
        )),
    }
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
