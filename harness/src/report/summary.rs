//! `summary.md`: the run in Markdown for a CI step summary or a PR comment.
//! A verdict line first, then what someone must act on: each failure with
//! its evidence and the command that reproduces it, and undecided checks;
//! then the conformance statement (levels, skips, digests), one row per
//! scenario with a mark per invariant, and real dead letters; what the
//! scenarios killed on purpose is listed apart, calmly.

use std::fmt::Write;

use super::conformance::{self, LevelStatus};
use super::{
    evidence_label, lines_label, more_label, scenario_word, verdict_word, RunReport, ScenarioReport,
};
use crate::check::{Grade, InvariantResult, Verdict};
use crate::text::words::count;

/// How many dead letters the summary lists (report.json has them all).
pub const MAX_DEAD_ROWS: usize = 20;

/// The table mark of a verdict.
pub fn mark(v: Verdict) -> &'static str {
    grade_mark(Grade::of(v, false))
}

/// The table mark of a grade.
pub fn grade_mark(g: Grade) -> &'static str {
    match g {
        Grade::Pass => "✅",
        Grade::Informational => "ℹ️",
        Grade::Fail => "❌",
        Grade::NonStrict => "⚠️",
        Grade::Unknown => "❔",
    }
}

fn md(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

fn result_block(out: &mut String, report: &RunReport, s: &ScenarioReport, r: &InvariantResult) {
    let _ = writeln!(out, "### {} · {} {}\n", s.name, r.id, mark(r.verdict));
    let _ = writeln!(out, "{}\n", md(&r.summary));
    for e in &r.evidence {
        let lines = lines_label(e);
        let at = if lines.is_empty() {
            String::new()
        } else {
            format!(" ({lines} of `{}`)", s.history)
        };
        let _ = writeln!(out, "- `{}`: {}{at}", evidence_label(e), md(&e.what));
    }
    if let Some(more) = more_label(r.evidence.len(), r.evidence_total) {
        let _ = writeln!(out, "- {more}");
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
    if report.interrupted {
        let _ = writeln!(
            out,
            "**Interrupted** (Ctrl-C or SIGTERM): only the {} below finished; the verdict covers them alone.\n",
            count(report.scenarios.len(), "scenario")
        );
    }
    // What someone must act on comes first, with its evidence and the
    // command that reproduces it; the statement and the matrix follow.
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

    statement(&mut out, report);
    let _ = writeln!(out, "**{}**\n", md(&report.coverage_line()));
    verdict_table(&mut out, report);

    dead_letters(&mut out, report);

    informational(&mut out, report);

    designed_deaths(&mut out, report);
    notes(&mut out, report);
    out
}

/// The table of scenarios by invariant, with its legend.
fn verdict_table(out: &mut String, report: &RunReport) {
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
            let m = s
                .check
                .result(*id)
                .map_or("–", |r| grade_mark(s.check.grade_of(r)));
            let _ = write!(out, " {m} |");
        }
        let _ = writeln!(out, " {} |", scenario_word(s, report));
    }
    out.push('\n');
    let names: Vec<String> = ids.iter().map(|i| i.to_string()).collect();
    let _ = writeln!(out, "{}\n", names.join(" · "));
    out.push_str("✅ pass · ℹ️ informational (a pass with something worth knowing) · ⚠️ non-strict (fails only with `--strict`) · ❔ unknown (not decided) · ❌ fail · – not checked\n\n");
}

/// The observations that change no verdict, when any.
fn informational(out: &mut String, report: &RunReport) {
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
}

/// The notes of the scenarios that ran, when any.
fn notes(out: &mut String, report: &RunReport) {
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
}

/// The conformance statement: levels, skips, profile, seed, version, and
/// the digests a reader verifies the folder with.
fn statement(out: &mut String, report: &RunReport) {
    let st = conformance::statement(report);
    out.push_str("## Conformance\n\n");
    let _ = writeln!(
        out,
        "**{}** · profile `{}` · seed `{}` · hookstorm {}{}\n",
        capitalized(&st.headline()),
        md(&st.profile),
        st.seed,
        md(&st.hookstorm_version),
        if st.strict { " · strict" } else { "" }
    );
    if !st.levels.is_empty() {
        out.push_str("| level | status | why |\n|---|---|---|\n");
    }
    for l in &st.levels {
        let m = match l.status {
            LevelStatus::Met => "✅",
            LevelStatus::NotMet => "❌",
            LevelStatus::NotEstablished => "❔",
            LevelStatus::NotApplicable => "➖",
        };
        let _ = writeln!(
            out,
            "| {} | {m} {} | {} |",
            md(l.name),
            l.status.word(),
            md(&l.why)
        );
    }
    out.push('\n');
    if !st.skipped.is_empty() {
        out.push_str("Skipped:\n\n");
        for k in &st.skipped {
            let _ = writeln!(out, "- `{}`: {}", md(&k.scenario), md(&k.reason));
        }
        out.push('\n');
    }
    if !st.outside_levels.is_empty() {
        let names: Vec<String> = st
            .outside_levels
            .iter()
            .map(|n| format!("`{}`", md(n)))
            .collect();
        let _ = writeln!(out, "In no level: {}.\n", names.join(", "));
    }
    let Some(seal) = &report.seal else {
        return;
    };
    if let Some(sha) = &seal.report_json {
        let _ = writeln!(
            out,
            "SHA-256 of `report.json`: `{sha}`. `hookstorm verify REPORT_DIR` checks it, the digests below and the verdicts against the histories.\n"
        );
    }
    if !seal.files.is_empty() {
        let _ = writeln!(
            out,
            "<details><summary>SHA-256 of the {}</summary>\n\n| file | SHA-256 |\n|---|---|",
            count(seal.files.len(), "history and state file")
        );
        for f in &seal.files {
            let _ = writeln!(out, "| `{}` | `{}` |", md(&f.path), f.sha256);
        }
        out.push_str("\n</details>\n\n");
    }
}

fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// Dead letters that count against the receiver: every delivery that ran
/// out of attempts without the scenario meaning it to.
fn dead_letters(out: &mut String, report: &RunReport) {
    let dead: Vec<_> = report
        .scenarios
        .iter()
        .flat_map(|s| s.check.dead_letters.iter().map(move |d| (s, d)))
        .filter(|(_, d)| !d.by_design)
        .collect();
    let total: usize = report
        .scenarios
        .iter()
        .map(|s| {
            let designed = s.check.dead_letters.iter().filter(|d| d.by_design).count();
            s.check.counts.dead.saturating_sub(designed)
        })
        .sum();
    if total == 0 {
        return;
    }
    let _ = writeln!(out, "## Dead letters ({total})\n");
    out.push_str("| scenario | delivery | key | account | attempts | last status | last error | stored later |\n");
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
    if let Some(more) = more_label(dead.len().min(MAX_DEAD_ROWS), total) {
        let _ = writeln!(out, "\n{more} in `report.json`.");
    }
    out.push('\n');
}

/// What the scenarios killed on purpose, per scenario.
fn designed_deaths(out: &mut String, report: &RunReport) {
    let per: Vec<(&str, usize)> = report
        .scenarios
        .iter()
        .map(|s| {
            let n = s.check.dead_letters.iter().filter(|d| d.by_design).count();
            (s.name.as_str(), n)
        })
        .filter(|(_, n)| *n > 0)
        .collect();
    if per.is_empty() {
        return;
    }
    let total: usize = per.iter().map(|(_, n)| n).sum();
    let _ = writeln!(
        out,
        "## Dead by design ({total})\n\nThe scenarios' own faults killed these deliveries on purpose: they explain every attempt the receiver did not acknowledge. None counts against the receiver.\n"
    );
    out.push_str("| scenario | deliveries |\n|---|--:|\n");
    for (name, n) in per {
        let _ = writeln!(out, "| {} | {n} |", md(name));
    }
    out.push('\n');
}
