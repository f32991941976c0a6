//! `report.json`: the whole run for machines. Its shape is fixed by
//! `reports/schema/report.schema.json` (a test validates generated reports
//! against it). On top of [`RunReport`]'s fields it carries the derived
//! values a consumer should not recompute: the run's `verdict`,
//! `exit_code` and `coverage` (what ran, what was skipped for which need,
//! with the same line the console prints), the `conformance` statement
//! (levels met, skips, profile, seed, version and the SHA-256 of every
//! history and state file), each scenario's `verdict` (`skipped` when it
//! did not run) and `grade`, and each invariant's `name` and `grade`.

use serde_json::{json, Value};

use super::{conformance, RunReport};

/// The version of the report format; bumped on incompatible changes.
pub const FORMAT_VERSION: u32 = 1;

/// The report as a JSON value.
pub fn to_value(report: &RunReport) -> Value {
    let mut v = serde_json::to_value(report).expect("a report always serializes");
    let obj = v.as_object_mut().expect("a report is an object");
    obj.insert("format_version".into(), json!(FORMAT_VERSION));
    obj.insert("verdict".into(), json!(report.verdict()));
    obj.insert("exit_code".into(), json!(report.exit_code()));
    let mut coverage = serde_json::to_value(report.coverage()).expect("coverage serializes");
    coverage["line"] = json!(report.coverage_line());
    obj.insert("coverage".into(), coverage);
    obj.insert(
        "conformance".into(),
        serde_json::to_value(conformance::statement(report)).expect("a statement serializes"),
    );
    if let Some(Value::Array(scenarios)) = obj.get_mut("scenarios") {
        for (s, r) in scenarios.iter_mut().zip(&report.scenarios) {
            let verdict = r.verdict(report.require_all);
            s["verdict"] = match verdict {
                Some(v) => json!(v),
                None => json!("skipped"),
            };
            s["grade"] = match (&r.skipped, verdict) {
                (None, _) => json!(r.check.grade()),
                (Some(_), Some(v)) => json!(v),
                (Some(_), None) => json!("skipped"),
            };
            if let Some(Value::Array(results)) = s["check"].get_mut("results") {
                for (res, inv) in results.iter_mut().zip(&r.check.results) {
                    res["name"] = json!(inv.id.name());
                    res["grade"] = json!(r.check.grade_of(inv));
                }
            }
        }
    }
    v
}

/// The report as pretty JSON text.
pub fn render(report: &RunReport) -> String {
    let mut s = serde_json::to_string_pretty(&to_value(report)).expect("a value always serializes");
    s.push('\n');
    s
}
