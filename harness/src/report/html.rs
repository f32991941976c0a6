//! `report.html`: the run for people, in one self-contained file.
//!
//! The file carries its data as JSON in a `<script type="application/json">`
//! block and draws it with the small hand-written script and stylesheet in
//! `html_assets/` (compiled in with `include_str!`): no network, no CDN, so
//! it works from a CI artifact opened offline. The page shows the verdict
//! matrix (scenario × invariant), the coverage line, the seed and the
//! reproduce commands, then one timeline per scenario built from its
//! history: a row per delivery, a mark per attempt coloured by outcome,
//! the profile's retry envelope behind each row, and the faults the
//! harness injected as bands. Evidence links to the delivery rows and the
//! history lines it cites.
//!
//! Like every renderer it decides nothing: verdicts come from the report,
//! times and outcomes from the history. A history that is missing or
//! unreadable leaves its timeline out with the reason, never the report.
//! Large scenarios keep at most [`MAX_ATTEMPTS`] attempt marks (the page
//! says how many it left out) and the page draws only the rows in view.

use std::collections::HashMap;
use std::path::Path;

use serde_json::{json, Value};

use super::{json as report_json, scenario_word, RunReport, ScenarioReport};
use crate::history::{self, Event, Intent, Outcome};
use crate::profile::Profile;
use crate::state::probe::redact_text;

/// The most attempt marks one scenario's timeline carries.
pub const MAX_ATTEMPTS: usize = 20_000;

/// The most fault events one scenario's timeline carries.
pub const MAX_FAULTS: usize = 2_000;

const STYLE: &str = include_str!("html_assets/report.css");
const SCRIPT: &str = include_str!("html_assets/report.js");

/// The run report as a self-contained HTML page; `dir` is the report
/// folder the scenarios' history paths are relative to.
pub fn render(report: &RunReport, dir: &Path) -> String {
    let mut data = report_json::to_value(report);
    data["kind"] = json!("run");
    data["command"] = json!(report.command());
    data["coverage_line"] = json!(report.coverage_line());
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

/// Milliseconds since the epoch of an RFC 3339 time.
fn epoch_ms(t: &str) -> Option<f64> {
    chrono::DateTime::parse_from_rfc3339(t)
        .ok()
        .map(|d| d.timestamp_millis() as f64)
}

fn outcome_code(o: Outcome, dead: bool) -> u8 {
    match (o, dead) {
        (_, true) => 3,
        (Outcome::Ok, _) => 0,
        (Outcome::Fail, _) => 1,
        (Outcome::Info, _) => 2,
    }
}

/// One scenario's timeline from its history: deliveries with their
/// attempts (`[t_ms, outcome, attempt, round, status, line, latency_ms,
/// fault_index, error, window]`, times from the first event), fault
/// events, and the retry envelope of the profile at the scenario's time
/// scale. In a sink's history (`hookstorm sink`) a row is an event the
/// sender was asked to emit, times are the sink's own clock, and each
/// retry carries `window`: `[from_ms, to_ms]`, where the profile's
/// schedule put it, measured from the end of the attempt before.
fn timeline(s: &ScenarioReport, dir: &Path, report: &RunReport) -> Value {
    if s.skipped.is_some() || s.history.is_empty() {
        return Value::Null;
    }
    let path = dir.join(&s.history);
    let events = match history::read_numbered(&path) {
        Ok(ev) => ev,
        Err(e) => return json!({ "error": redact_text(&e.to_string()) }),
    };
    let mut t0: Option<f64> = None;
    let mut scale = report.time_scale;
    let mut profile = report.profile.clone();
    let mut rows: Vec<Value> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut attempts: Vec<Vec<Value>> = Vec::new();
    let mut fault_names: Vec<String> = Vec::new();
    let mut faults: Vec<Value> = Vec::new();
    let (mut kept, mut left_out, mut faults_left_out) = (0usize, 0usize, 0usize);
    let mut last = 0.0f64;
    let mut bad_lines = 0usize;
    for item in events {
        let (line, event) = match item {
            Ok(x) => x,
            Err(_) => {
                bad_lines += 1;
                continue;
            }
        };
        match event {
            Event::Run(h) => {
                scale = h.time_scale;
                profile = h.profile;
                t0 = t0.or_else(|| epoch_ms(&h.started_at));
            }
            Event::Emit(e) => {
                // A sink's history: one row per event, even one never sent.
                index
                    .entry(format!("{}/{}", e.account, e.key))
                    .or_insert_with(|| {
                        rows.push(json!({ "id": e.key, "key": e.key, "account": e.account }));
                        attempts.push(Vec::new());
                        rows.len() - 1
                    });
            }
            Event::Attempt(a) => {
                // A sink's attempts carry their own clock (from the
                // scenario's start) and the window the schedule gives them.
                let t = match &a.sink {
                    Some(got) => got.at_ms,
                    None => {
                        let Some(at) = epoch_ms(&a.sent_at) else {
                            bad_lines += 1;
                            continue;
                        };
                        let base = *t0.get_or_insert(at);
                        at - base
                    }
                };
                last = last.max(t + a.latency_ms.unwrap_or(0.0));
                if kept >= MAX_ATTEMPTS {
                    left_out += 1;
                    continue;
                }
                kept += 1;
                let row_key = match &a.sink {
                    Some(_) => format!("{}/{}", a.account, a.key),
                    None => a.delivery.clone(),
                };
                let row = *index.entry(row_key).or_insert_with(|| {
                    // Only what differs from the common case: a genuine
                    // delivery with no detail carries neither.
                    let mut row = json!({
                        "id": a.delivery,
                        "key": a.key,
                        "account": a.account,
                    });
                    if a.intent != Intent::Genuine {
                        row["intent"] = json!(a.intent);
                    }
                    if let Some(d) = &a.detail {
                        row["detail"] = json!(redact_text(d));
                    }
                    rows.push(row);
                    attempts.push(Vec::new());
                    rows.len() - 1
                });
                let followed = a.sink.as_ref().is_some_and(|g| g.followed);
                let fault = match (a.faults.first(), followed) {
                    (None, false) => Value::Null,
                    _ => {
                        let name = match followed {
                            true => "followed a redirect".to_string(),
                            false => a
                                .faults
                                .iter()
                                .map(|t| t.to_string())
                                .collect::<Vec<_>>()
                                .join("+"),
                        };
                        let i = fault_names
                            .iter()
                            .position(|n| *n == name)
                            .unwrap_or_else(|| {
                                fault_names.push(name);
                                fault_names.len() - 1
                            });
                        json!(i)
                    }
                };
                let error = a
                    .error
                    .as_deref()
                    .map(|e| redact_text(&e.chars().take(160).collect::<String>()));
                attempts[row].push(json!([
                    t.round(),
                    outcome_code(a.outcome, a.dead),
                    a.attempt,
                    a.round,
                    a.status,
                    line,
                    a.latency_ms.map(|l| (l * 10.0).round() / 10.0),
                    fault,
                    error,
                    a.sink
                        .as_ref()
                        .and_then(|g| g.window_ms)
                        .map(|[lo, hi]| json!([lo.round(), hi.round()])),
                ]));
            }
            Event::Fault(f) => {
                let Some(at) = epoch_ms(&f.at) else {
                    bad_lines += 1;
                    continue;
                };
                let base = *t0.get_or_insert(at);
                let t = at - base;
                last = last.max(t);
                if faults.len() >= MAX_FAULTS {
                    faults_left_out += 1;
                    continue;
                }
                faults.push(json!({
                    "t": t.round(),
                    "fault": f.fault,
                    "action": redact_text(&f.action),
                    "detail": f.detail.as_deref().map(redact_text),
                    "line": line,
                }));
            }
            Event::Provider(_) => {}
        }
    }
    for (row, a) in rows.iter_mut().zip(attempts) {
        row["a"] = Value::Array(a);
    }
    json!({
        "history": s.history,
        "span_ms": last.ceil(),
        "time_scale": scale,
        "profile": profile,
        "envelope": envelope(&profile, scale),
        "deliveries": rows,
        "fault_names": fault_names,
        "faults": faults,
        "attempts": kept,
        "attempts_left_out": left_out,
        "faults_left_out": faults_left_out,
        "bad_lines": bad_lines,
    })
}

/// `[[min_ms, max_ms], …]` per attempt, from the first attempt, at `scale`;
/// empty for a profile that is not built in (a custom file's schedule is
/// not in the report).
fn envelope(profile: &str, scale: f64) -> Value {
    let Some(p) = Profile::builtin(profile) else {
        return json!([]);
    };
    let scale = if scale > 0.0 { scale } else { 1.0 };
    let plan = p.schedule.plan(0);
    Value::Array(
        plan.iter()
            .map(|r| {
                json!([
                    (r.cumulative_min.as_secs_f64() * 1000.0 / scale).round(),
                    (r.cumulative_max.as_secs_f64() * 1000.0 / scale).round()
                ])
            })
            .collect(),
    )
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

    #[test]
    fn the_envelope_of_a_builtin_profile_grows_and_scales() {
        let slow = envelope("answerline", 1.0);
        let fast = envelope("answerline", 100.0);
        let (slow, fast) = (slow.as_array().unwrap(), fast.as_array().unwrap());
        assert!(slow.len() > 2);
        assert_eq!(slow[0], json!([0.0, 0.0]));
        assert!(slow[2][1].as_f64() > slow[1][1].as_f64());
        assert!(fast[2][1].as_f64().unwrap() < slow[2][1].as_f64().unwrap());
        assert_eq!(envelope("a-custom-file.toml", 1.0), json!([]));
    }
}
