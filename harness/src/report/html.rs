//! `report.html`: the run for people, in one self-contained file.
//!
//! The file carries its data as JSON in a `<script type="application/json">`
//! block and draws it with the small hand-written script and stylesheet in
//! `html_assets/` (compiled in with `include_str!`): no network, no CDN, so
//! it works from a CI artifact opened offline. The page shows the verdict
//! conformance statement (levels, skips, digests), the verdict matrix
//! (scenario × invariant), the coverage line, the seed and the reproduce
//! commands, then one timeline per scenario built from its history
//! ([`super::html_timeline`]): a row per delivery with its full label, a
//! mark per attempt coloured by what it came to (only wrong ones red), a
//! bar from send to answer, each retry's window behind it, and the faults
//! the harness injected as bands. Rows a failure cites come first, marked;
//! evidence links to them and to the history lines it cites.
//!
//! Like every renderer it decides nothing: verdicts and grades come from
//! the report, outcomes from [`crate::grading::outcome`], times from the history. A
//! history that is missing or unreadable leaves its timeline out with the
//! reason, never the report. Large scenarios keep at most
//! [`MAX_ATTEMPTS`] attempt marks (the page says how many it left out) and
//! the page draws only the rows in view.

use std::path::Path;

use serde_json::{json, Value};

use super::html_timeline::timeline;
use super::{json as report_json, scenario_word, RunReport};
use crate::grading::outcome;

pub use super::html_timeline::{MAX_ATTEMPTS, MAX_FAULTS};

const STYLE: &str = include_str!("html_assets/report.css");
const SCRIPT: &str = include_str!("html_assets/report.js");

/// The run report as a self-contained HTML page; `dir` is the report
/// folder the scenarios' history paths are relative to.
pub fn render(report: &RunReport, dir: &Path) -> String {
    let mut data = report_json::to_value(report);
    data["kind"] = json!("run");
    data["command"] = json!(report.command());
    data["coverage_line"] = json!(report.coverage_line());
    data["outcomes"] = json!(outcome::TABLE);
    data["report_sha256"] = json!(report.seal.as_ref().and_then(|s| s.report_json.clone()));
    if let Some(Value::Array(scenarios)) = data.get_mut("scenarios") {
        for (v, s) in scenarios.iter_mut().zip(&report.scenarios) {
            v["word"] = json!(scenario_word(s, report));
            v["timeline"] = timeline(s, dir, report);
        }
    }
    page(
        &format!("hookstorm {} {}", report.command(), report.run_id),
        &data,
    )
}

/// A self-contained page titled `title` that draws `data` (a run's or a
/// bench's JSON) with the compiled-in script and stylesheet.
pub fn page(title: &str, data: &Value) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
<title>{}</title>\n<style>\n{STYLE}</style>\n</head>\n\
<body data-marks=\"-1\" data-drawn=\"0\">\n<main id=\"app\"><p>loading…</p></main>\n\
<ul id=\"errors\"></ul>\n\
<script type=\"application/json\" id=\"data\">{}</script>\n<script>\n{SCRIPT}</script>\n</body>\n</html>\n",
        escape_text(title),
        embed(data)
    )
}

/// JSON safe inside a `<script>` element: no `<` at all, so neither
/// `</script>` nor `<!--` can appear.
fn embed(v: &Value) -> String {
    serde_json::to_string(v)
        .unwrap_or_else(|_| "null".into())
        .replace('<', "\\u003c")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

fn escape_text(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_json_cannot_close_its_script_element() {
        let v = json!({ "note": "</script><script>alert(1)</script><!--" });
        let text = embed(&v);
        assert!(!text.contains('<'), "{text}");
        let back: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back, v);
    }
}
