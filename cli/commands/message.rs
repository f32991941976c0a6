//! `--message-format json`: a run as a stream of JSON lines on stdout, for
//! other tools (editors, dashboards, CI annotations), as cargo's own
//! `--message-format json` does.
//!
//! One object per line, each with a `reason`:
//! - `scenario-finished`: a scenario's name, verdict (or `skipped` and
//!   why), duration and counts, as soon as it finishes;
//! - `finding`: one invariant of a scenario that did not pass, with its
//!   summary, evidence and the command that reproduces it;
//! - `run-finished`: the run's verdict, exit code, seed, coverage line and
//!   report folder, last.
//!
//! These render what the checker decided; they decide nothing. Every text
//! passes through the report redaction first.

use std::path::Path;

use hookstorm::check::Verdict;
use hookstorm::report::{RunReport, ScenarioReport};
use serde_json::{json, Value};

/// How `run` writes to stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum MessageFormat {
    /// The console table for people.
    #[default]
    Human,
    /// One JSON object per line per scenario and per finding.
    Json,
}

/// The lines of one finished scenario: the scenario, then each finding.
pub fn scenario_lines(s: &ScenarioReport, require_all: bool) -> Vec<Value> {
    let s = &s.redacted();
    let verdict = match s.verdict(require_all) {
        Some(v) => json!(v),
        None => json!("skipped"),
    };
    let mut out = vec![json!({
        "reason": "scenario-finished",
        "scenario": s.name,
        "verdict": verdict,
        "skipped": s.skipped.as_ref().map(|k| &k.reason),
        "duration_s": s.duration_s,
        "counts": s.check.counts,
        "history": s.history,
    })];
    if s.skipped.is_none() {
        for r in s
            .check
            .results
            .iter()
            .filter(|r| r.verdict != Verdict::Pass)
        {
            out.push(json!({
                "reason": "finding",
                "scenario": s.name,
                "invariant": r.id,
                "name": r.id.name(),
                "verdict": r.verdict,
                "summary": r.summary,
                "evidence": r.evidence,
                "evidence_total": r.evidence_total,
                "reproduce": s.reproduce,
            }));
        }
    }
    out
}

/// The last line: the run's verdict.
pub fn run_line(report: &RunReport, dir: &Path) -> Value {
    json!({
        "reason": "run-finished",
        "run_id": report.run_id,
        "verdict": report.verdict(),
        "exit_code": report.exit_code(),
        "seed": report.seed,
        "coverage": report.coverage_line(),
        "interrupted": report.interrupted,
        "report_dir": dir.display().to_string(),
    })
}

/// Prints one line of the stream.
pub fn emit(v: &Value) {
    outln!("{v}");
}
