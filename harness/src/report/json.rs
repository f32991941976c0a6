//! `report.json`: the whole run for machines. Its shape is fixed by
//! `reports/schema/report.schema.json` (a test validates generated reports
//! against it). On top of [`RunReport`]'s fields it carries the derived
//! values a consumer should not recompute: the run's `verdict`,
//! `exit_code` and `coverage` (what ran, what was skipped for which need,
//! with the same line the console prints), each scenario's `verdict`
//! (`skipped` when it did not run) and each invariant's `name`.

use serde_json::{json, Value};

use super::RunReport;

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
    if let Some(Value::Array(scenarios)) = obj.get_mut("scenarios") {
        for (s, r) in scenarios.iter_mut().zip(&report.scenarios) {
            s["verdict"] = match r.verdict(report.require_all) {
                Some(v) => json!(v),
                None => json!("skipped"),
            };
            if let Some(Value::Array(results)) = s["check"].get_mut("results") {
                for (res, inv) in results.iter_mut().zip(&r.check.results) {
                    res["name"] = json!(inv.id.name());
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
