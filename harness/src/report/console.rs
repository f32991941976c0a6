//! The end-of-run table on the terminal: one line per scenario with a
//! column per invariant, then every failure with its evidence, the seed and
//! the command that reproduces it, why each skipped scenario was skipped,
//! the coverage line (what ran) and the exit code.

use std::fmt::Write;

use super::{evidence_label, lines_label, scenario_word, verdict_word, RunReport};
use crate::check::Verdict;

const RED: &str = "\x1b[31m";
const GREEN: &str = "\x1b[32m";
const YELLOW: &str = "\x1b[33m";
const BOLD: &str = "\x1b[1m";
const RESET: &str = "\x1b[0m";

fn cell(v: Verdict) -> &'static str {
    match v {
        Verdict::Pass => "ok",
        Verdict::Fail => "FAIL",
        Verdict::NonStrict => "warn",
        Verdict::Unknown => "?",
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
            let (text, v) = s
                .check
                .result(*id)
                .map_or(("-", Verdict::Pass), |r| (cell(r.verdict), r.verdict));
            let _ = write!(out, "  {}", paint(&format!("{text:4}"), v, color));
        }
        let v = s.verdict(report.require_all).unwrap_or(Verdict::NonStrict);
        let word = format!("{:10}", scenario_word(s, &report));
        let _ = writeln!(out, "  {}  {:>7.1}s", paint(&word, v, color), s.duration_s);
    }

    let dead: Vec<String> = report
        .scenarios
        .iter()
        .filter(|s| s.check.counts.dead > 0)
        .map(|s| {
            let recovered = s.check.dead_letters.iter().filter(|d| d.recovered).count();
            format!("{} {} ({recovered} recovered)", s.name, s.check.counts.dead)
        })
        .collect();
    if !dead.is_empty() {
        let _ = writeln!(
            out,
            "\ndead letters: {} (listed in summary.md and report.json)",
            dead.join(", ")
        );
    }
    for s in &report.scenarios {
        for n in s.notes.iter().filter(|n| n.asks_for_final_url()) {
            let _ = writeln!(out, "{}: {n}", s.name);
        }
    }
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
                    let lines = lines_label(&e.lines);
                    let at = if lines.is_empty() {
                        String::new()
                    } else {
                        format!(" ({lines})")
                    };
                    let _ = writeln!(out, "    {}: {}{at}", evidence_label(e), e.what);
                }
                if r.evidence_total > r.evidence.len() {
                    let _ = writeln!(
                        out,
                        "    ... and {} more",
                        r.evidence_total - r.evidence.len()
                    );
                }
                if r.verdict != Verdict::Unknown {
                    let _ = writeln!(out, "    seed {}; reproduce: {}", report.seed, s.reproduce);
                }
            }
        }
    }
    let v = report.verdict();
    let code = report.exit_code();
    if report.interrupted {
        let _ = writeln!(
            out,
            "\ninterrupted: only the {} scenario(s) above finished",
            report.scenarios.len()
        );
    }
    let line = format!("verdict: {} (exit {code})", verdict_word(v, report.strict));
    out.push('\n');
    for s in &report.scenarios {
        if let Some(skip) = s.skipped.as_ref().filter(|k| k.need.is_some()) {
            let _ = writeln!(out, "skipped {}: {}", s.name, skip.reason);
        }
    }
    let _ = writeln!(out, "{}", report.coverage_line());
    if color {
        let _ = writeln!(out, "{BOLD}{}{RESET}", paint(&line, v, color));
    } else {
        let _ = writeln!(out, "{line}");
    }
    out
}
