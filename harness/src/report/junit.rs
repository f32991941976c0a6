//! `junit.xml`: one test case per scenario × invariant, so CI systems that
//! show JUnit results list every invariant of every scenario. A failure
//! carries the summary and the evidence; `unknown` is a skipped test (it was
//! not decided); non-strict is a failure only in strict runs. A scenario
//! that did not run has one skipped test per invariant it would have
//! checked, with the reason (a failure under `--require-all`).

use std::fmt::Write;

use super::{evidence_label, lines_label, RunReport};
use crate::check::Verdict;

fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if (c as u32) < 0x20 && !matches!(c, '\n' | '\t' | '\r') => {}
            c => out.push(c),
        }
    }
    out
}

/// The report as JUnit XML.
pub fn render(report: &RunReport) -> String {
    let failing = |v: Verdict| v == Verdict::Fail || (v == Verdict::NonStrict && report.strict);
    let cases = |f: &dyn Fn(Verdict) -> bool| {
        report
            .scenarios
            .iter()
            .flat_map(|s| s.check.results.iter())
            .filter(|r| f(r.verdict))
            .count()
    };
    // Test cases of scenarios that did not run: (skipped, failed by --require-all).
    let unrun = report
        .scenarios
        .iter()
        .filter_map(|s| s.skipped.as_ref().map(|k| (s, k.invariants.len())))
        .fold((0, 0), |(sk, f), (s, n)| {
            if s.verdict(report.require_all).is_some() {
                (sk, f + n)
            } else {
                (sk + n, f)
            }
        });
    let total = cases(&|_| true) + unrun.0 + unrun.1;
    let failures = cases(&failing) + unrun.1;
    let skipped = cases(&|v| v == Verdict::Unknown) + unrun.0;
    let mut x = String::new();
    x.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        x,
        "<testsuites name=\"hookstorm\" tests=\"{total}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\" time=\"{:.3}\">",
        report.duration_s
    );
    for s in &report.scenarios {
        if let Some(k) = &s.skipped {
            let fail = s.verdict(report.require_all).is_some();
            let n = k.invariants.len();
            let _ = writeln!(
                x,
                "  <testsuite name=\"{}\" tests=\"{n}\" failures=\"{}\" errors=\"0\" skipped=\"{}\" time=\"0.000\" timestamp=\"{}\">",
                esc(&s.name),
                if fail { n } else { 0 },
                if fail { 0 } else { n },
                esc(&report.started_at)
            );
            for id in &k.invariants {
                let _ = write!(
                    x,
                    "    <testcase classname=\"hookstorm.{}\" name=\"{}\" time=\"0\">",
                    esc(&s.name),
                    esc(&id.to_string())
                );
                if fail {
                    let _ = writeln!(
                        x,
                        "\n      <failure message=\"skipped, and --require-all wants every scenario: {}\" type=\"skipped\"/>\n    </testcase>",
                        esc(&k.reason)
                    );
                } else {
                    let _ = writeln!(
                        x,
                        "\n      <skipped message=\"{}\"/>\n    </testcase>",
                        esc(&k.reason)
                    );
                }
            }
            x.push_str("  </testsuite>\n");
            continue;
        }
        let r = &s.check.results;
        let f = r.iter().filter(|r| failing(r.verdict)).count();
        let sk = r.iter().filter(|r| r.verdict == Verdict::Unknown).count();
        let _ = writeln!(
            x,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{f}\" errors=\"0\" skipped=\"{sk}\" time=\"{:.3}\" timestamp=\"{}\">",
            esc(&s.name),
            r.len(),
            s.duration_s,
            esc(&report.started_at)
        );
        x.push_str("    <properties>\n");
        for (k, v) in [
            ("run_id", report.run_id.clone()),
            ("seed", report.seed.to_string()),
            ("profile", report.profile.clone()),
            ("time_scale", report.time_scale.to_string()),
            ("target", report.target.clone()),
            ("reproduce", s.reproduce.clone()),
            ("history", s.history.clone()),
            ("interrupted", report.interrupted.to_string()),
        ] {
            let _ = writeln!(x, "      <property name=\"{k}\" value=\"{}\"/>", esc(&v));
        }
        x.push_str("    </properties>\n");
        for res in r {
            let _ = write!(
                x,
                "    <testcase classname=\"hookstorm.{}\" name=\"{}\" time=\"0\"",
                esc(&s.name),
                esc(&res.id.to_string())
            );
            let mut body = String::new();
            for e in &res.evidence {
                let _ = writeln!(
                    body,
                    "{}: {} [{}]",
                    evidence_label(e),
                    e.what,
                    lines_label(&e.lines)
                );
            }
            if res.evidence_total > res.evidence.len() {
                let _ = writeln!(
                    body,
                    "... and {} more",
                    res.evidence_total - res.evidence.len()
                );
            }
            let _ = writeln!(body, "seed {}; reproduce: {}", report.seed, s.reproduce);
            if failing(res.verdict) {
                let _ = writeln!(
                    x,
                    ">\n      <failure message=\"{}\" type=\"{}\">{}</failure>\n    </testcase>",
                    esc(&res.summary),
                    res.verdict,
                    esc(&body)
                );
            } else if res.verdict == Verdict::Unknown {
                let _ = writeln!(
                    x,
                    ">\n      <skipped message=\"{}\"/>\n    </testcase>",
                    esc(&res.summary)
                );
            } else if res.verdict == Verdict::NonStrict {
                let _ = writeln!(
                    x,
                    ">\n      <system-out>non-strict: {}\n{}</system-out>\n    </testcase>",
                    esc(&res.summary),
                    esc(&body)
                );
            } else {
                x.push_str("/>\n");
            }
        }
        x.push_str("  </testsuite>\n");
    }
    x.push_str("</testsuites>\n");
    x
}

#[cfg(test)]
mod tests {
    #[test]
    fn xml_text_is_escaped() {
        assert_eq!(super::esc("a<b & \"c\"\u{1}"), "a&lt;b &amp; &quot;c&quot;");
    }
}
