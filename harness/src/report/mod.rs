//! Reports: render a finished run for people (console table, Markdown
//! summary for CI step summaries and PR comments) and for machines
//! (`report.json` with a checked-in schema, JUnit XML for CI test views),
//! and `report.html`, one self-contained page with the verdict matrix and a
//! timeline of every scenario's history.
//!
//! Reporters never decide a verdict: the checker did, and every renderer
//! shows the same [`ScenarioCheck`]s. Every text that comes from outside
//! (target, reproduce command, notes) passes through the probe redaction
//! before it is rendered, so no report carries a token or a password even
//! if a caller forgot to redact it.

pub mod console;
pub mod html;
pub mod json;
pub mod junit;
pub mod summary;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::check::{InvariantId, ScenarioCheck, Verdict};
use crate::exit;
use crate::note::Note;
use crate::run::coverage::{Coverage, Skip};
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
        (None, v) => verdict_word(v.unwrap_or(Verdict::Unknown), report.strict),
    }
}

/// How a verdict reads in a column of a table.
pub(crate) fn verdict_word(v: Verdict, strict: bool) -> &'static str {
    match v {
        Verdict::Pass => "pass",
        Verdict::Fail => "FAIL",
        Verdict::Unknown => "unknown",
        Verdict::NonStrict if strict => "FAIL (strict)",
        Verdict::NonStrict => "non-strict",
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

/// Writes `report.json`, `junit.xml`, `summary.md` and `report.html` into
/// `dir` (created if missing); returns their paths. The page reads the
/// scenarios' histories from `dir`.
pub fn write_reports(dir: &Path, report: &RunReport) -> Result<Vec<PathBuf>, ReportError> {
    std::fs::create_dir_all(dir).map_err(|source| ReportError::Io {
        path: dir.into(),
        source,
    })?;
    let report = report.redacted();
    let files = [
        ("report.json", json::render(&report)),
        ("junit.xml", junit::render(&report)),
        ("summary.md", summary::render(&report)),
        ("report.html", html::render(&report, dir)),
    ];
    let mut out = Vec::new();
    for (name, text) in files {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|source| ReportError::Io {
            path: path.clone(),
            source,
        })?;
        out.push(path);
    }
    Ok(out)
}

/// `12 (acct_a)` style label of an evidence key.
pub(crate) fn evidence_label(e: &crate::check::Evidence) -> String {
    match &e.account {
        Some(a) => format!("{} ({a})", e.key),
        None => e.key.clone(),
    }
}

/// `history lines 2, 5` or empty.
pub(crate) fn lines_label(lines: &[u64]) -> String {
    match lines {
        [] => String::new(),
        [one] => format!("history line {one}"),
        many => format!(
            "history lines {}",
            many.iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}
