//! Reports: render a finished run for people (console table, Markdown
//! summary for CI step summaries and PR comments) and for machines
//! (`report.json` with a checked-in schema, JUnit XML for CI test views),
//! and `report.html`, one self-contained page with the verdict matrix and a
//! timeline of every scenario's history.
//!
//! Every report opens with the same conformance statement
//! ([`conformance`]: which levels the run established, what was skipped,
//! profile, seed, version and the digests of what the run wrote); the
//! folder is sealed with a `SHA256SUMS` file ([`seal`]) that
//! `hookstorm verify` checks, grading the histories again ([`verify`]).
//!
//! Reporters never decide a verdict: the checker did, and every renderer
//! shows the same [`ScenarioCheck`]s, their [`Grade`]s and the outcome of
//! every attempt ([`crate::grading::outcome`]). Every text that comes from outside
//! (target, reproduce command, notes) passes through the probe redaction
//! before it is rendered, so no report carries a token or a password even
//! if a caller forgot to redact it.

pub mod attest;
pub mod conformance;
pub mod console;
pub mod dsse;
pub mod folder;
pub mod html;
mod html_timeline;
pub mod json;
pub mod junit;
pub mod seal;
pub mod summary;
pub mod verify;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::check::{CheckOptions, Grade, InvariantId, ScenarioCheck, Verdict};
use crate::exit;
use crate::findings::coverage::{Coverage, Skip};
use crate::findings::note::Note;
use crate::state::probe::redact_text;

/// One run, as every report shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    /// The run id (also the report folder's name).
    pub run_id: String,
    /// The seed that drives everything.
    pub seed: u64,
    /// The sender profile.
    pub profile: String,
    /// Real time was divided by this.
    pub time_scale: f64,
    /// The target, redacted (no userinfo, no tokens).
    pub target: String,
    /// When the run started (RFC 3339).
    pub started_at: String,
    /// Wall time of the whole run, in seconds.
    pub duration_s: f64,
    /// Non-strict deviations fail the run.
    pub strict: bool,
    /// A scenario skipped for an unmet need fails the run.
    #[serde(default)]
    pub require_all: bool,
    /// hookstorm's version.
    pub hookstorm_version: String,
    /// One entry per scenario, in run order.
    pub scenarios: Vec<ScenarioReport>,
    /// The machine it ran on, if recorded.
    pub machine: Option<String>,
    /// The run was stopped (Ctrl-C, SIGTERM) before every scenario ran;
    /// `scenarios` holds those that finished. Absent in older reports.
    #[serde(default)]
    pub interrupted: bool,
    /// The digests of what the run wrote, once [`write_reports`] sealed
    /// the folder (report.json carries them in its `conformance`).
    #[serde(skip)]
    pub seal: Option<seal::Seal>,
}

/// One scenario of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScenarioReport {
    /// The scenario's name.
    pub name: String,
    /// What the scenario does.
    pub description: String,
    /// What a failure usually means and where to look.
    pub when_it_fails: String,
    /// The checker's verdicts.
    pub check: ScenarioCheck,
    /// The exact command that reproduces this scenario.
    pub reproduce: String,
    /// Wall time of the scenario, in seconds.
    pub duration_s: f64,
    /// The history file, relative to the report folder.
    pub history: String,
    /// The state file, relative to the report folder.
    pub state: Option<String>,
    /// What the run says beyond the verdicts (what the faults did, the
    /// send's counts), worded by [`Note`]'s `Display`.
    pub notes: Vec<Note>,
    /// Why the scenario did not run, if it did not (no checks then).
    #[serde(default)]
    pub skipped: Option<Skip>,
    /// What the check was graded with beyond the history and the state,
    /// so `hookstorm verify` can grade them again; `None` when nothing
    /// was graded from the files (skipped, or cut short by `--timeout`).
    #[serde(default)]
    pub graded_with: Option<GradedWith>,
    /// How far past its scheduled wait a retry may come, in milliseconds
    /// (the attempt's own time, [`crate::grading::gaps::slack`]): the timeline
    /// draws each retry's window with it. `None` when nothing was sent.
    #[serde(default)]
    pub gap_slack_ms: Option<f64>,
}

/// What a scenario's check read besides its history and state: the run's
/// strictness, profile and invariants are in the report already.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GradedWith {
    /// The profile's answer limit, in milliseconds.
    pub answer_limit_ms: u64,
    /// The state settled (or was read as it was) before the drain ran out.
    pub drained: bool,
    /// The scenario ran a reconciliation: final provider tasks must be stored.
    pub reconciled: bool,
    /// Why the scenario's fault met nothing, if it did not: its passes
    /// were made unknown.
    pub not_exercised: Option<String>,
}

impl GradedWith {
    /// What `opts` and the fault's finding say.
    pub fn of(opts: &CheckOptions, not_exercised: Option<String>) -> GradedWith {
        GradedWith {
            answer_limit_ms: u64::try_from(opts.answer_limit.as_millis()).unwrap_or(u64::MAX),
            drained: opts.drained,
            reconciled: opts.reconciled,
            not_exercised,
        }
    }
}

impl ScenarioReport {
    /// The scenario's grade, `None` when it was skipped or not run; under
    /// `require_all` a scenario skipped for an unmet need is a failure.
    pub fn verdict(&self, require_all: bool) -> Option<Verdict> {
        match &self.skipped {
            None => Some(self.check.verdict()),
            Some(s) if require_all && s.fails_require_all() => Some(Verdict::Fail),
            Some(_) => None,
        }
    }
}

impl ScenarioReport {
    /// The notes in words, as every report shows them.
    pub fn said(&self) -> Vec<String> {
        self.notes.iter().map(Note::to_string).collect()
    }

    /// A copy with every free text passed through the redaction.
    pub fn redacted(&self) -> ScenarioReport {
        let mut s = self.clone();
        s.reproduce = redact_text(&s.reproduce);
        s.description = redact_text(&s.description);
        s.notes = s.notes.iter().map(Note::redacted).collect();
        if let Some(skip) = s.skipped.as_mut() {
            skip.reason = redact_text(&skip.reason);
        }
        for res in &mut s.check.results {
            res.summary = redact_text(&res.summary);
        }
        for d in &mut s.check.dead_letters {
            d.last_error = d.last_error.as_deref().map(redact_text);
        }
        s
    }
}

impl RunReport {
    /// The run's grade: the worst scenario verdict. Skipped scenarios
    /// count only under `require_all` (as failures); a run in which no
    /// scenario ran decided nothing, so it is unknown.
    pub fn verdict(&self) -> Verdict {
        let v = self
            .scenarios
            .iter()
            .filter_map(|s| s.verdict(self.require_all))
            .fold(Verdict::Pass, Verdict::worst);
        if v == Verdict::Pass && self.coverage().ran == 0 {
            return Verdict::Unknown;
        }
        v
    }

    /// What ran, what was skipped and why.
    pub fn coverage(&self) -> Coverage {
        Coverage::of(self.scenarios.iter().map(|s| s.skipped.as_ref()))
    }

    /// The coverage line, with what `--require-all` made of the skips.
    pub fn coverage_line(&self) -> String {
        let c = self.coverage();
        let mut line = c.line();
        let blocking = self
            .scenarios
            .iter()
            .any(|s| s.skipped.as_ref().is_some_and(Skip::fails_require_all));
        if self.require_all && blocking {
            line.push_str(" (--require-all: skips fail the run)");
        }
        line
    }

    /// The documented exit code: 0 pass, 1 any fail (or non-strict under
    /// `strict`), 2 unknown; 130 when the run was interrupted.
    pub fn exit_code(&self) -> i32 {
        if self.interrupted {
            return exit::INTERRUPTED;
        }
        self.verdict().exit_code(self.strict)
    }

    /// The command that made it: `sink` when its scenarios judged a sender
    /// (sender invariants), `run` otherwise.
    pub fn command(&self) -> &'static str {
        if self.invariants().iter().any(|i| i.is_sender()) {
            "sink"
        } else {
            "run"
        }
    }

    /// The invariants checked in any scenario, in order.
    pub fn invariants(&self) -> Vec<InvariantId> {
        let mut ids: Vec<InvariantId> = self
            .scenarios
            .iter()
            .flat_map(|s| s.check.results.iter().map(|r| r.id))
            .collect();
        ids.sort();
        ids.dedup();
        ids
    }

    /// A copy with every free text passed through the redaction.
    pub fn redacted(&self) -> RunReport {
        let mut r = self.clone();
        r.target = redact_text(&r.target);
        r.machine = r.machine.as_deref().map(redact_text);
        r.scenarios = r.scenarios.iter().map(ScenarioReport::redacted).collect();
        r
    }
}

/// How a scenario's outcome reads in a column of a table.
pub(crate) fn scenario_word(s: &ScenarioReport, report: &RunReport) -> &'static str {
    match (&s.skipped, s.verdict(report.require_all)) {
        (Some(skip), _) if skip.need.is_none() => "not run",
        (Some(_), Some(_)) => "FAIL (skipped)",
        (Some(_), None) => "skipped",
        (None, _) => grade_word(s.check.grade(), report.strict),
    }
}

/// How a verdict reads in a column of a table.
pub(crate) fn verdict_word(v: Verdict, strict: bool) -> &'static str {
    grade_word(Grade::of(v, false), strict)
}

/// How a grade reads in a column of a table.
pub(crate) fn grade_word(g: Grade, strict: bool) -> &'static str {
    match g {
        Grade::Pass => "pass",
        Grade::Informational => "informational",
        Grade::Fail => "FAIL",
        Grade::Unknown => "unknown",
        Grade::NonStrict if strict => "FAIL (strict)",
        Grade::NonStrict => "non-strict",
    }
}

/// Writing a report failed.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// I/O on a report file.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// What [`write_reports`] wrote.
#[derive(Debug, Clone)]
pub struct Written {
    /// `report.json`, `junit.xml`, `summary.md`, `report.html` and
    /// `SHA256SUMS`, in that order.
    pub files: Vec<PathBuf>,
    /// The report it was given, with its [`seal::Seal`].
    pub report: RunReport,
}

/// Writes `report.json`, `junit.xml`, `summary.md` and `report.html` into
/// `dir` (created if missing), then seals the folder: `SHA256SUMS` holds
/// the SHA-256 of each of them and of every history and state file, and
/// every report but `report.json` names `report.json`'s own digest. The
/// page reads the scenarios' histories from `dir`.
pub fn write_reports(dir: &Path, report: &RunReport) -> Result<Written, ReportError> {
    std::fs::create_dir_all(dir).map_err(|source| ReportError::Io {
        path: dir.into(),
        source,
    })?;
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ReportError::Io { path, source }
    };
    let mut sealed = report.clone();
    let mut seal = seal::Seal {
        files: seal::data_files(report, dir),
        report_json: None,
    };
    sealed.seal = Some(seal.clone());
    let mut redacted = sealed.redacted();
    let json_text = json::render(&redacted);
    seal.report_json = Some(seal::sha256_hex(json_text.as_bytes()));
    redacted.seal = Some(seal.clone());
    sealed.seal = Some(seal.clone());
    let files = [
        (seal::REPORT_JSON, json_text),
        ("junit.xml", junit::render(&redacted)),
        ("summary.md", summary::render(&redacted)),
        ("report.html", html::render(&redacted, dir)),
    ];
    let mut out = Vec::new();
    let mut sums = Vec::new();
    for (name, text) in files {
        let path = dir.join(name);
        std::fs::write(&path, &text).map_err(io(&path))?;
        sums.push(seal::FileDigest {
            path: name.to_string(),
            sha256: seal::sha256_hex(text.as_bytes()),
        });
        out.push(path);
    }
    sums.extend(seal.files.iter().cloned());
    let path = dir.join(seal::SUMS);
    seal::write_sums(&path, &sums).map_err(io(&path))?;
    out.push(path);
    Ok(Written {
        files: out,
        report: sealed,
    })
}

/// `12 (acct_a)` style label of an evidence key.
pub(crate) fn evidence_label(e: &crate::check::Evidence) -> String {
    match &e.account {
        Some(a) => format!("{} ({a})", e.key),
        None => e.key.clone(),
    }
}

/// `history lines 2, 5`, `history lines 3, 4, 5, 6 and 3 more` or empty.
pub(crate) fn lines_label(e: &crate::check::Evidence) -> String {
    let more = match e.lines_left_out() {
        0 => String::new(),
        n => format!(" and {n} more"),
    };
    match e.lines.as_slice() {
        [] => String::new(),
        [one] if more.is_empty() => format!("history line {one}"),
        many => format!(
            "history lines {}{more}",
            many.iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// `… and 3 more` after a list cut at what it shows, or nothing.
pub(crate) fn more_label(shown: usize, total: usize) -> Option<String> {
    (total > shown).then(|| format!("… and {} more", total - shown))
}
