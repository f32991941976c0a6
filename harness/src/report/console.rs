//! The end-of-run table on the terminal: one line per scenario with a
//! column per invariant, then every failure with its evidence, the seed and
//! the command that reproduces it, why each skipped scenario was skipped,
//! the conformance statement (levels, digests), the coverage line (what
//! ran) and the exit code.

use std::fmt::Write;

use super::conformance::{self, LevelStatus};
use super::{evidence_label, lines_label, more_label, scenario_word, verdict_word, RunReport};
use crate::check::{Grade, Verdict};
use crate::text::words::count;

const RED: &str = "\x1b[31m";
const GREEN: &str = "\x1b[32m";
const YELLOW: &str = "\x1b[33m";
const BOLD: &str = "\x1b[1m";
const RESET: &str = "\x1b[0m";

fn cell(g: Grade) -> &'static str {
    match g {
        Grade::Pass => "ok",
        Grade::Informational => "info",
        Grade::Fail => "FAIL",
        Grade::NonStrict => "warn",
        Grade::Unknown => "?",
    }
}

/// `text` in the colour of verdict `v` when `color` (ANSI), else as is.
pub fn paint(text: &str, v: Verdict, color: bool) -> String {
    if !color {
        return text.to_string();
    }
    let c = match v {
        Verdict::Pass => GREEN,
        Verdict::Fail => RED,
        Verdict::NonStrict | Verdict::Unknown => YELLOW,
    };
    format!("{c}{text}{RESET}")
}

/// The table, with ANSI colors when `color`.
pub fn console_table(report: &RunReport, color: bool) -> String {
    let report = report.redacted();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "hookstorm {} {}  seed {}  profile {}  time scale {}x  target {}",
        report.command(),
        report.run_id,
        report.seed,
        report.profile,
        report.time_scale,
        report.target
    );
    let ids = report.invariants();
    let width = report
        .scenarios
        .iter()
        .map(|s| s.name.len())
        .max()
        .unwrap_or(8)
        .max(8);
    let _ = write!(out, "{:width$}", "scenario");
    for id in &ids {
        let _ = write!(out, "  {:4}", id.code());
    }
    let _ = writeln!(out, "  {:10}  {:>8}", "verdict", "time");
    for s in &report.scenarios {
        let _ = write!(out, "{:width$}", s.name);
        for id in &ids {
            let (text, v) = s.check.result(*id).map_or(("-", Verdict::Pass), |r| {
                (cell(s.check.grade_of(r)), r.verdict)
            });
            let _ = write!(out, "  {}", paint(&format!("{text:4}"), v, color));
        }
        let v = s.verdict(report.require_all).unwrap_or(Verdict::NonStrict);
        let word = format!("{:10}", scenario_word(s, &report));
        let _ = writeln!(out, "  {}  {:>7.1}s", paint(&word, v, color), s.duration_s);
    }

    dead_letters(&mut out, &report, color);
    for s in &report.scenarios {
        for n in s.notes.iter().filter(|n| n.asks_for_final_url()) {
            let _ = writeln!(out, "{}: {n}", s.name);
        }
    }
    findings(&mut out, &report, color);
    let v = report.verdict();
    let code = report.exit_code();
    if report.interrupted {
        let _ = writeln!(
            out,
            "\ninterrupted: only the {} above finished",
            count(report.scenarios.len(), "scenario")
        );
    }
    let line = format!("verdict: {} (exit {code})", verdict_word(v, report.strict));
    out.push('\n');
    for s in &report.scenarios {
        if let Some(skip) = s.skipped.as_ref().filter(|k| k.need.is_some()) {
            let _ = writeln!(out, "skipped {}: {}", s.name, skip.reason);
        }
    }
    statement(&mut out, &report, color);
    let _ = writeln!(out, "{}", report.coverage_line());
    if color {
        let _ = writeln!(out, "{BOLD}{}{RESET}", paint(&line, v, color));
    } else {
        let _ = writeln!(out, "{line}");
    }
    out
}

/// The dead letters, real ones apart from those the scenarios intend.
fn dead_letters(out: &mut String, report: &RunReport, color: bool) {
    let (mut real, mut designed) = (Vec::new(), Vec::new());
    for s in report.scenarios.iter().filter(|s| s.check.counts.dead > 0) {
        let listed = &s.check.dead_letters;
        let by_design = listed.iter().filter(|d| d.by_design).count();
        let dead = s.check.counts.dead.saturating_sub(by_design);
        if by_design > 0 {
            designed.push(format!("{} {by_design}", s.name));
        }
        if dead > 0 {
            let recovered = listed
                .iter()
                .filter(|d| !d.by_design && d.recovered)
                .count();
            let recovered = match recovered {
                0 => String::new(),
                n => format!(", {n} of them stored later"),
            };
            real.push(format!("{} {}{recovered}", s.name, count(dead, "delivery")));
        }
    }
    if !real.is_empty() {
        let _ = writeln!(
            out,
            "\n{}: {} (listed in summary.md and report.json)",
            paint("dead letters", Verdict::Fail, color),
            real.join("; ")
        );
    }
    if !designed.is_empty() {
        let _ = writeln!(
            out,
            "{}dead by design, as the scenarios intend: {}",
            if real.is_empty() { "\n" } else { "" },
            designed.join(", ")
        );
    }
}

/// Every invariant that did not pass, worst first, with its evidence and
/// how to reproduce it.
fn findings(out: &mut String, report: &RunReport, color: bool) {
    let mut any = false;
    let order = [Verdict::Fail, Verdict::NonStrict, Verdict::Unknown];
    for which in order {
        for s in &report.scenarios {
            for r in s.check.results.iter().filter(|r| r.verdict == which) {
                if !any {
                    out.push('\n');
                    any = true;
                }
                let _ = writeln!(
                    out,
                    "{} {} {}: {}",
                    paint(verdict_word(r.verdict, report.strict), r.verdict, color),
                    s.name,
                    r.id,
                    r.summary
                );
                for e in &r.evidence {
                    let lines = lines_label(e);
                    let at = if lines.is_empty() {
                        String::new()
                    } else {
                        format!(" ({lines})")
                    };
                    let _ = writeln!(out, "    {}: {}{at}", evidence_label(e), e.what);
                }
                if let Some(more) = more_label(r.evidence.len(), r.evidence_total) {
                    let _ = writeln!(out, "    {more}");
                }
                if r.verdict != Verdict::Unknown {
                    let _ = writeln!(out, "    seed {}; reproduce: {}", report.seed, s.reproduce);
                }
            }
        }
    }
}

/// The conformance statement: a line per level, then the digests.
fn statement(out: &mut String, report: &RunReport, color: bool) {
    let st = conformance::statement(report);
    let _ = writeln!(
        out,
        "conformance: {} (profile {}, seed {}, hookstorm {}{})",
        st.headline(),
        st.profile,
        st.seed,
        st.hookstorm_version,
        if st.strict { ", strict" } else { "" }
    );
    for l in &st.levels {
        let v = match l.status {
            LevelStatus::Met => Some(Verdict::Pass),
            LevelStatus::NotMet => Some(Verdict::Fail),
            LevelStatus::NotEstablished => Some(Verdict::Unknown),
            // Calm: nothing to do about a level the provider has no use for.
            LevelStatus::NotApplicable => None,
        };
        let word = match l.status {
            LevelStatus::NotMet => "NOT MET".to_string(),
            s => s.word().to_string(),
        };
        let word = format!("{word:<15}");
        let _ = writeln!(
            out,
            "  {} {}: {}",
            v.map_or(word.clone(), |v| paint(&word, v, color)),
            l.name,
            l.why
        );
    }
    if let Some(seal) = &report.seal {
        if let Some(sha) = &seal.report_json {
            let _ = writeln!(
                out,
                "report.json SHA-256 {sha}; {} sealed in SHA256SUMS (hookstorm verify REPORT_DIR checks them)",
                count(seal.files.len(), "history and state file")
            );
        }
    }
}
