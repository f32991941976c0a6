//! One scenario's timeline for `report.html`, built from its history: a
//! row per delivery (key, account, intent), a mark per attempt with what it
//! came to ([`crate::grading::outcome`]), its answer time and the window its retry
//! schedule gave it, and the fault events the harness wrote.
//!
//! In a sink's history (`hookstorm sink`) a row is an event the sender was
//! asked to emit, times are the sink's own clock, and each retry's window
//! is the one the sink recorded: where the sender's schedule puts it,
//! from the end of the attempt before.
//!
//! Rows whose key a failing invariant cites come first, in the order the
//! evidence names them, each with the invariants that cite it; the page
//! marks them. A retry's window is measured as the run's gap note measures
//! it ([`crate::grading::gaps::window`]): from the previous attempt's send,
//! the schedule's range widened by the attempt's own time.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

use super::{RunReport, ScenarioReport};
use crate::grading::gaps;
use crate::grading::outcome::{self, Facts, Judged};
use crate::history::{self, Attempt, Emitted, Event, FaultEvent, Intent, RunHeader};
use crate::profile::schedule::Schedule;
use crate::profile::Profile;
use crate::state::probe::redact_text;

/// The most attempt marks one scenario's timeline carries.
pub const MAX_ATTEMPTS: usize = 20_000;

/// The most fault events one scenario's timeline carries.
pub const MAX_FAULTS: usize = 2_000;

/// Milliseconds since the epoch of an RFC 3339 time.
fn epoch_ms(t: &str) -> Option<f64> {
    chrono::DateTime::parse_from_rfc3339(t)
        .ok()
        .map(|d| d.timestamp_millis() as f64)
}

/// The keys a failing invariant of `s` cites, each with the invariants
/// that cite it, in the order the evidence names them.
fn cited(s: &ScenarioReport, strict: bool) -> Vec<(String, Option<String>, Vec<&'static str>)> {
    let mut out: Vec<(String, Option<String>, Vec<&'static str>)> = Vec::new();
    for r in s
        .check
        .results
        .iter()
        .filter(|r| r.verdict.is_failing(strict))
    {
        for e in &r.evidence {
            match out
                .iter_mut()
                .find(|(k, a, _)| *k == e.key && *a == e.account)
            {
                Some((_, _, ids)) if !ids.contains(&r.id.code()) => ids.push(r.id.code()),
                Some(_) => {}
                None => out.push((e.key.clone(), e.account.clone(), vec![r.id.code()])),
            }
        }
    }
    out
}

/// One delivery's row while the history is read.
struct Row {
    value: Value,
    /// What a cited key can be: the task id, its job, its resource.
    names: Vec<String>,
    account: String,
    key: String,
    attempts: Vec<Value>,
    /// Indexes into `attempts` of deaths its key settles.
    deaths: Vec<usize>,
}

/// The timeline of `s` (`null` when it did not run), from its history in `dir`.
pub(crate) fn timeline(s: &ScenarioReport, dir: &Path, report: &RunReport) -> Value {
    if s.skipped.is_some() || s.history.is_empty() {
        return Value::Null;
    }
    let path = dir.join(&s.history);
    let events = match history::read_numbered(&path) {
        Ok(ev) => ev,
        Err(e) => return json!({ "error": redact_text(&e.to_string()) }),
    };
    let slack = Duration::from_secs_f64(
        s.gap_slack_ms
            .unwrap_or(gaps::BASE_SLACK.as_secs_f64() * 1000.0)
            / 1000.0,
    );
    let mut b = Builder::new(report, slack);
    for item in events {
        match item {
            Ok((_, Event::Run(h))) => b.run(h),
            Ok((_, Event::Emit(e))) => b.emit(&e),
            Ok((line, Event::Attempt(a))) => b.attempt(line, &a),
            Ok((line, Event::Fault(f))) => b.fault(line, &f),
            Ok((_, Event::Provider(_))) => {}
            Err(_) => b.bad_lines += 1,
        }
    }
    let deliveries = order_rows(b.rows, &cited(s, report.strict), &b.missed);
    json!({
        "history": s.history,
        "span_ms": b.last.ceil(),
        "time_scale": b.scale,
        "profile": b.profile,
        "slack_ms": slack.as_secs_f64() * 1000.0,
        "deliveries": deliveries,
        "fault_names": b.fault_names,
        "faults": b.faults,
        "attempts": b.kept,
        "attempts_left_out": b.left_out,
        "faults_left_out": b.faults_left_out,
        "bad_lines": b.bad_lines,
    })
}

/// A timeline while its history is read.
struct Builder {
    /// The first time seen (ms since the epoch): the timeline's zero.
    t0: Option<f64>,
    scale: f64,
    profile: String,
    schedule: Option<Schedule>,
    slack: Duration,
    rows: Vec<Row>,
    index: HashMap<String, usize>,
    /// The last send of each delivery and round, for its next retry's window.
    last_send: HashMap<(usize, u32), (u32, f64)>,
    /// Keys the receiver itself missed an attempt of, for their deaths.
    missed: HashMap<(String, String), bool>,
    fault_names: Vec<String>,
    faults: Vec<Value>,
    kept: usize,
    left_out: usize,
    faults_left_out: usize,
    /// The latest time seen, from the zero.
    last: f64,
    bad_lines: usize,
}

impl Builder {
    fn new(report: &RunReport, slack: Duration) -> Builder {
        Builder {
            t0: None,
            scale: report.time_scale,
            profile: report.profile.clone(),
            schedule: Profile::builtin(&report.profile).map(|p| p.schedule),
            slack,
            rows: Vec::new(),
            index: HashMap::new(),
            last_send: HashMap::new(),
            missed: HashMap::new(),
            fault_names: Vec::new(),
            faults: Vec::new(),
            kept: 0,
            left_out: 0,
            faults_left_out: 0,
            last: 0.0,
            bad_lines: 0,
        }
    }

    /// The run's header: its scale, profile (and schedule) and start.
    fn run(&mut self, h: RunHeader) {
        self.scale = h.time_scale;
        self.schedule = Profile::builtin(&h.profile).map(|p| p.schedule);
        self.profile = h.profile;
        self.t0 = self.t0.or_else(|| epoch_ms(&h.started_at));
    }

    /// A sink's history: one row per event, even one never sent.
    fn emit(&mut self, e: &Emitted) {
        let id = format!("{}/{}", e.account, e.key);
        let rows = &mut self.rows;
        self.index.entry(id).or_insert_with(|| {
            rows.push(event_row(&e.account, &e.key));
            rows.len() - 1
        });
    }

    /// An attempt, on line `line`: a mark on its delivery's row (up to
    /// [`MAX_ATTEMPTS`] of them).
    fn attempt(&mut self, line: u64, a: &Attempt) {
        // A sink's attempts carry their own clock (from the scenario's
        // start) and the window the sender's schedule gives them.
        let at = match &a.sink {
            Some(got) => Some(self.t0.unwrap_or(0.0) + got.at_ms),
            None => epoch_ms(&a.sent_at),
        };
        let Some(at) = at else {
            self.bad_lines += 1;
            return;
        };
        let facts = Facts::from(a);
        if a.intent == Intent::Genuine {
            *self
                .missed
                .entry((a.account.clone(), a.key.clone()))
                .or_default() |= outcome::receiver_missed(&facts);
        }
        let t = at - *self.t0.get_or_insert(at);
        self.last = self.last.max(t + a.latency_ms.unwrap_or(0.0));
        if self.kept >= MAX_ATTEMPTS {
            self.left_out += 1;
            return;
        }
        self.kept += 1;
        let row_id = match &a.sink {
            Some(_) => format!("{}/{}", a.account, a.key),
            None => a.delivery.clone(),
        };
        let rows = &mut self.rows;
        let r = *self.index.entry(row_id).or_insert_with(|| new_row(rows, a));
        let row = &mut rows[r];
        for name in [&a.job, &a.resource].into_iter().flatten() {
            if !row.names.contains(name) {
                row.names.push(name.clone());
            }
        }
        let (o, died) = match outcome::judge(&facts) {
            Judged::Now(o) => (Value::from(o.index()), false),
            Judged::Died => (Value::Null, true),
        };
        let previous = self.last_send.get(&(r, a.round)).copied();
        let window = retry_window(a, self.schedule.as_ref(), previous, self.scale, self.slack);
        // A held-back attempt was never sent: no gap starts there.
        if !a.faults.contains(&crate::tag::FaultTag::HoldBack) {
            self.last_send.insert((r, a.round), (a.attempt, t));
        }
        if died {
            row.deaths.push(row.attempts.len());
        }
        let fault = fault_index(a, &mut self.fault_names);
        row.attempts
            .push(attempt_cell(a, t, o, line, fault, window));
    }

    /// A fault event, on line `line` (up to [`MAX_FAULTS`] of them).
    fn fault(&mut self, line: u64, f: &FaultEvent) {
        let Some(at) = epoch_ms(&f.at) else {
            self.bad_lines += 1;
            return;
        };
        let t = at - *self.t0.get_or_insert(at);
        self.last = self.last.max(t);
        if self.faults.len() >= MAX_FAULTS {
            self.faults_left_out += 1;
            return;
        }
        self.faults.push(json!({
            "t": t.round(),
            "fault": f.fault,
            "action": redact_text(&f.action),
            "detail": f.detail.as_deref().map(redact_text),
            "line": line,
        }));
    }
}

/// A sink's row for an event (one even when it was never sent).
fn event_row(account: &str, key: &str) -> Row {
    Row {
        value: json!({ "id": key, "key": key, "account": account }),
        names: vec![key.to_string()],
        account: account.to_string(),
        key: key.to_string(),
        attempts: Vec::new(),
        deaths: Vec::new(),
    }
}

/// The window attempt `a` was due in: the sink's own, or the schedule's
/// after the `previous` send of its round (attempt number, ms), else null.
fn retry_window(
    a: &Attempt,
    schedule: Option<&Schedule>,
    previous: Option<(u32, f64)>,
    scale: f64,
    slack: Duration,
) -> Value {
    if let Some([lo, hi]) = a.sink.as_ref().and_then(|g| g.window_ms) {
        return json!([lo.round(), hi.round()]);
    }
    match (schedule, previous) {
        (Some(sch), Some((n, prev))) if n + 1 == a.attempt => {
            gaps::window(sch, a.attempt, scale, slack)
                .map(|(lo, hi)| json!([(prev + lo * 1000.0).round(), (prev + hi * 1000.0).round()]))
                .unwrap_or(Value::Null)
        }
        _ => Value::Null,
    }
}

/// One attempt's cell: when (ms from the start), its outcome, numbers,
/// status, history line, latency, fault, error (redacted, cut) and window.
fn attempt_cell(a: &Attempt, t: f64, o: Value, line: u64, fault: Value, window: Value) -> Value {
    let error = a
        .error
        .as_deref()
        .map(|e| redact_text(&e.chars().take(160).collect::<String>()));
    json!([
        t.round(),
        o,
        a.attempt,
        a.round,
        a.status,
        line,
        a.latency_ms.map(|l| (l * 10.0).round() / 10.0),
        fault,
        error,
        window,
    ])
}

/// A new row for the delivery of `a`: only what differs from the common
/// case (a genuine delivery with no detail carries neither).
fn new_row(rows: &mut Vec<Row>, a: &Attempt) -> usize {
    let mut value = json!({
        "id": a.delivery,
        "key": a.key,
        "account": a.account,
    });
    if a.intent != Intent::Genuine {
        value["intent"] = json!(a.intent);
    }
    if let Some(d) = &a.detail {
        value["detail"] = json!(redact_text(d));
    }
    rows.push(Row {
        value,
        names: vec![a.key.clone()],
        account: a.account.clone(),
        key: a.key.clone(),
        attempts: Vec::new(),
        deaths: Vec::new(),
    });
    rows.len() - 1
}

/// The index into `names` of the attempt's faults (joined), if any; a
/// sender that followed a sink's redirect is shown as such.
fn fault_index(a: &Attempt, names: &mut Vec<String>) -> Value {
    let followed = a.sink.as_ref().is_some_and(|g| g.followed);
    if a.faults.is_empty() && !followed {
        return Value::Null;
    }
    let name = if followed {
        "followed a redirect".to_string()
    } else {
        a.faults
            .iter()
            .map(|t| t.to_string())
            .collect::<Vec<_>>()
            .join("+")
    };
    let i = names.iter().position(|n| *n == name).unwrap_or_else(|| {
        names.push(name);
        names.len() - 1
    });
    json!(i)
}

/// The rows as the page draws them: each death settled by its key, the
/// rows a failure cites first (marked with the invariants citing them),
/// then the rest in the order their first attempt was sent.
fn order_rows(
    rows: Vec<Row>,
    cited: &[(String, Option<String>, Vec<&'static str>)],
    missed: &HashMap<(String, String), bool>,
) -> Vec<Value> {
    let rank = |row: &Row| {
        cited.iter().position(|(k, acc, _)| {
            row.names.contains(k) && acc.as_ref().is_none_or(|a| *a == row.account)
        })
    };
    let mut ranked: Vec<(Option<usize>, usize, Row)> = rows
        .into_iter()
        .enumerate()
        .map(|(i, r)| (rank(&r), i, r))
        .collect();
    ranked.sort_by_key(|(c, i, _)| (c.is_none(), *c, *i));
    ranked
        .into_iter()
        .map(|(c, _, mut row)| {
            let key_missed = missed
                .get(&(row.account.clone(), row.key.clone()))
                .copied()
                .unwrap_or(false);
            let death = outcome::of_death(key_missed).index();
            for &d in &row.deaths {
                row.attempts[d][1] = json!(death);
            }
            if let Some(c) = c {
                row.value["cited"] = json!(cited[c].2);
            }
            row.value["a"] = Value::Array(row.attempts);
            row.value
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{Counts, Evidence, InvariantId, InvariantResult, ScenarioCheck, Verdict};
    use crate::history::{Outcome, RunHeader};
    use crate::tag::FaultTag;

    fn at(ms: i64) -> String {
        let t = chrono::DateTime::parse_from_rfc3339("2026-11-29T10:00:00Z").unwrap()
            + chrono::Duration::milliseconds(ms);
        t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
    }

    /// k1 retried after a 1 s stall, k2 stored twice (cited by I2).
    fn folder(dir: &Path) -> (RunReport, ScenarioReport) {
        let header = Event::Run(RunHeader {
            run_id: "r".into(),
            seed: 1,
            profile: "answerline".into(),
            time_scale: 100.0,
            started_at: at(0),
            version: "0".into(),
        });
        let stalled = Attempt {
            sent_at: at(0),
            status: None,
            latency_ms: None,
            error: Some("timeout".into()),
            outcome: Outcome::Info,
            faults: vec![FaultTag::FrontStall],
            ..Attempt::acknowledged("s", "acct_a", "k1")
        };
        let retry = Attempt {
            attempt: 2,
            sent_at: at(1_100),
            latency_ms: Some(40.0),
            ..Attempt::acknowledged("s", "acct_a", "k1")
        };
        let k2 = Attempt {
            sent_at: at(1_200),
            ..Attempt::acknowledged("s", "acct_a", "k2")
        };
        let lines: Vec<String> = [
            header,
            Event::Attempt(stalled),
            Event::Attempt(retry),
            Event::Attempt(k2),
        ]
        .iter()
        .map(|e| serde_json::to_string(e).unwrap())
        .collect();
        std::fs::write(dir.join("h.jsonl"), lines.join("\n") + "\n").unwrap();
        let mut doubled = InvariantResult::new(InvariantId::I2, Verdict::Fail, "doubled");
        doubled.evidence = vec![Evidence::new(
            "k2",
            Some("acct_a".into()),
            "2 inbox rows for one key",
            vec![4],
        )];
        doubled.evidence_total = 1;
        let s = ScenarioReport {
            name: "s".into(),
            description: String::new(),
            when_it_fails: String::new(),
            check: ScenarioCheck {
                scenario: "s".into(),
                results: vec![doubled],
                counts: Counts::default(),
                dead_letters: vec![],
                observations: vec![],
            },
            reproduce: String::new(),
            duration_s: 1.0,
            history: "h.jsonl".into(),
            state: None,
            notes: vec![],
            skipped: None,
            graded_with: None,
            gap_slack_ms: Some(1_050.0),
        };
        let report = RunReport {
            run_id: "r".into(),
            seed: 1,
            profile: "answerline".into(),
            time_scale: 100.0,
            target: String::new(),
            started_at: at(0),
            duration_s: 1.0,
            strict: false,
            require_all: false,
            hookstorm_version: "0".into(),
            scenarios: vec![s.clone()],
            machine: None,
            interrupted: false,
            seal: None,
        };
        (report, s)
    }

    #[test]
    fn the_keys_a_failure_cites_come_first_and_are_marked() {
        let dir = tempfile::tempdir().unwrap();
        let (report, s) = folder(dir.path());
        let tl = timeline(&s, dir.path(), &report);
        let rows = tl["deliveries"].as_array().unwrap();
        let keys: Vec<&str> = rows.iter().map(|r| r["key"].as_str().unwrap()).collect();
        assert_eq!(keys, ["k2", "k1"]);
        assert_eq!(rows[0]["cited"], json!(["I2"]));
        assert!(rows[1].get("cited").is_none());
    }

    #[test]
    fn a_retry_window_starts_at_the_previous_send_and_takes_the_attempts_own_time() {
        let dir = tempfile::tempdir().unwrap();
        let (report, s) = folder(dir.path());
        let tl = timeline(&s, dir.path(), &report);
        let k1 = &tl["deliveries"][1]["a"];
        assert_eq!(k1[0][9], Value::Null, "a first attempt has no window");
        let sch = Profile::builtin("answerline").unwrap().schedule;
        let (lo, hi) = gaps::window(&sch, 2, 100.0, Duration::from_millis(1_050)).unwrap();
        assert_eq!(
            k1[1][9],
            json!([(lo * 1000.0).round(), (hi * 1000.0).round()])
        );
        // The retry, sent 1.1 s after the stalled attempt, is inside it.
        let (w0, w1) = (k1[1][9][0].as_f64().unwrap(), k1[1][9][1].as_f64().unwrap());
        assert!(w0 <= 1_100.0 && 1_100.0 <= w1, "{w0}..{w1}");
        // Its answer is a bar of 40 ms; the stall is no answer, a fault by design.
        assert_eq!(k1[1][6], json!(40.0));
        let by_design = crate::grading::outcome::AttemptOutcome::FailedByDesign.index();
        assert_eq!(k1[0][1], json!(by_design));
    }
}
