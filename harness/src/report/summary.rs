//! `summary.md`: the run in Markdown for a CI step summary or a PR comment.
//! A verdict line first, then one row per scenario with a mark per
//! invariant, then what someone must act on: each failure with its evidence
//! and the command that reproduces it, undecided checks, and dead letters.

use std::fmt::Write;

use super::{evidence_label, lines_label, scenario_word, verdict_word, RunReport, ScenarioReport};
use crate::check::{InvariantResult, Verdict};

/// How many dead letters the summary lists (report.json has them all).
pub const MAX_DEAD_ROWS: usize = 20;

/// The table mark of a verdict.
pub fn mark(v: Verdict) -> &'static str {
    match v {
        Verdict::Pass => "✅",
        Verdict::Fail => "❌",
        Verdict::NonStrict => "⚠️",
        Verdict::Unknown => "❔",
    }
}

fn md(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

fn result_block(out: &mut String, report: &RunReport, s: &ScenarioReport, r: &InvariantResult) {
    let _ = writeln!(out, "### {} · {} {}\n", s.name, r.id, mark(r.verdict));
    let _ = writeln!(out, "{}\n", md(&r.summary));
    for e in &r.evidence {
        let lines = lines_label(&e.lines);
        let at = if lines.is_empty() {
            String::new()
        } else {
            format!(" ({lines} of `{}`)", s.history)
        };
        let _ = writeln!(out, "- `{}`: {}{at}", evidence_label(e), md(&e.what));
    }
    if r.evidence_total > r.evidence.len() {
        let _ = writeln!(out, "- … and {} more", r.evidence_total - r.evidence.len());
    }
    if !r.evidence.is_empty() {
        out.push('\n');
    }
    if !s.when_it_fails.is_empty() && r.verdict != Verdict::Unknown {
        let _ = writeln!(out, "When it fails: {}\n", md(&s.when_it_fails));
    }
    let _ = writeln!(
        out,
        "Reproduce (seed {}):\n\n```sh\n{}\n```\n",
        report.seed, s.reproduce
    );
}

/// The report as Markdown.
pub fn render(report: &RunReport) -> String {
    let mut out = String::new();
    let v = report.verdict();
    let _ = writeln!(
        out,
        "# hookstorm: {} {}{}\n",
        mark(v),
        verdict_word(v, report.strict),
        if report.interrupted {
            " (interrupted)"
        } else {
            ""
        }
    );
    let _ = writeln!(
        out,
        "Run `{}` · seed `{}` · profile `{}` · time scale {}× · target `{}` · {:.1} s · hookstorm {}{}\n",
        report.run_id,
        report.seed,
        report.profile,
        report.time_scale,
        report.target,
        report.duration_s,
        report.hookstorm_version,
        if report.strict { " · strict" } else { "" }
    );
    let _ = writeln!(out, "**{}**\n", md(&report.coverage_line()));
    if report.interrupted {
        let _ = writeln!(
            out,
            "**Interrupted** (Ctrl-C or SIGTERM): only the {} scenario(s) below finished; the verdict covers them alone.\n",
            report.scenarios.len()
        );
    }
    let ids = report.invariants();
    out.push_str("| scenario |");
    for id in &ids {
        let _ = write!(out, " {} |", id.code());
    }
    out.push_str(" verdict |\n|---|");
    for _ in &ids {
        out.push_str(":-:|");
    }
    out.push_str("---|\n");
    for s in &report.scenarios {
        let _ = write!(out, "| {} |", md(&s.name));
        for id in &ids {
            let m = s.check.result(*id).map_or("–", |r| mark(r.verdict));
            let _ = write!(out, " {m} |");
        }
        let _ = writeln!(out, " {} |", scenario_word(s, report));
    }
    out.push('\n');
    let names: Vec<String> = ids.iter().map(|i| i.to_string()).collect();
    let _ = writeln!(out, "{}\n", names.join(" · "));
    out.push_str("✅ pass · ❌ fail · ⚠️ non-strict (fails only with `--strict`) · ❔ unknown (not decided) · – not checked\n\n");

    let sections = [
        ("Failures", Verdict::Fail),
        ("Non-strict deviations", Verdict::NonStrict),
        ("Not decided", Verdict::Unknown),
    ];
    for (title, which) in sections {
        let items: Vec<(&ScenarioReport, &InvariantResult)> = report
            .scenarios
            .iter()
            .flat_map(|s| s.check.results.iter().map(move |r| (s, r)))
            .filter(|(_, r)| r.verdict == which)
            .collect();
        if items.is_empty() {
            continue;
        }
        let _ = writeln!(out, "## {title}\n");
        for (s, r) in items {
            result_block(&mut out, report, s, r);
        }
    }

    let skipped: Vec<&ScenarioReport> = report
        .scenarios
        .iter()
        .filter(|s| s.skipped.is_some())
        .collect();
    if !skipped.is_empty() {
        out.push_str("## Skipped\n\n");
        for s in skipped {
            if let Some(k) = &s.skipped {
                let _ = writeln!(
                    out,
                    "- `{}` ({}): {}",
                    md(&s.name),
                    md(&k.label),
                    md(&k.reason)
                );
            }
        }
        out.push('\n');
    }

    let observed: Vec<_> = report
        .scenarios
        .iter()
        .flat_map(|s| s.check.observations.iter().map(move |o| (s, o)))
        .collect();
    if !observed.is_empty() {
        out.push_str(
            "## Informational

",
        );
        out.push_str(
            "Worth knowing, graded below a failure: these change no verdict.

",
        );
        for (s, o) in observed {
            let _ = writeln!(out, "- `{}`: {}", md(&s.name), md(o));
        }
        out.push('\n');
    }

    let dead: Vec<_> = report
        .scenarios
        .iter()
        .flat_map(|s| s.check.dead_letters.iter().map(move |d| (s, d)))
        .collect();
    if !dead.is_empty() {
        let total: usize = report.scenarios.iter().map(|s| s.check.counts.dead).sum();
        let _ = writeln!(out, "## Dead letters ({total})\n");
        out.push_str("| scenario | delivery | key | account | attempts | last status | last error | recovered |\n");
        out.push_str("|---|---|---|---|--:|--:|---|:-:|\n");
        for (s, d) in dead.iter().take(MAX_DEAD_ROWS) {
            let _ = writeln!(
                out,
                "| {} | `{}` | `{}` | {} | {} | {} | {} | {} |",
                md(&s.name),
                md(&d.delivery),
                md(&d.key),
                md(&d.account),
                d.attempts,
                d.last_status.map_or("–".to_string(), |s| s.to_string()),
                md(d.last_error.as_deref().unwrap_or("–")),
                if d.recovered { "yes" } else { "no" }
            );
        }
        if total > MAX_DEAD_ROWS {
            let _ = writeln!(
                out,
                "\n… {} more in `report.json`.",
                total - MAX_DEAD_ROWS.min(total)
            );
        }
        out.push('\n');
    }

    if report
        .scenarios
        .iter()
        .any(|s| s.skipped.is_none() && !s.notes.is_empty())
    {
        out.push_str("## Notes\n\n");
        for s in &report.scenarios {
            for n in s.notes.iter().filter(|_| s.skipped.is_none()) {
                let _ = writeln!(out, "- {}: {}", md(&s.name), md(&n.to_string()));
            }
        }
        out.push('\n');
    }
    out
}
