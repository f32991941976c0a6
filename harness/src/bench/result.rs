//! The result of a bench: `bench.json` and its console summary.
//!
//! One serializable [`BenchResult`] holds what the run measured (rate,
//! corrected and uncorrected percentiles, statuses, errors, throughput per
//! second), the ramp steps and where the receiver broke, the checker's
//! verdict, and the machine it ran on, so numbers can be compared later.
//! It also carries the latency curve (percentile against latency, from the
//! HdrHistograms) and the per-second error series that `report.html`
//! plots, and the thresholds the bench was held to.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use super::latency::{Percentiles, Recorder};
use super::mix::Mix;
use super::threshold::{Measured, Threshold, ThresholdResult};
use crate::check::ScenarioCheck;

/// The machine a bench ran on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Machine {
    /// Operating system.
    pub os: String,
    /// CPU architecture.
    pub arch: String,
    /// Cores available to the process.
    pub cores: usize,
    /// CPU model name from /proc/cpuinfo, when readable.
    pub cpu_model: Option<String>,
    /// Total memory in MiB, when readable.
    pub memory_mib: Option<u64>,
}

impl Machine {
    /// Describes this machine.
    pub fn detect() -> Machine {
        let cpu_model = std::fs::read_to_string("/proc/cpuinfo").ok().and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        });
        let memory_mib = std::fs::read_to_string("/proc/meminfo").ok().and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<u64>().ok())
                .map(|kib| kib / 1024)
        });
        Machine {
            os: std::env::consts::OS.into(),
            arch: std::env::consts::ARCH.into(),
            cores: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            cpu_model,
            memory_mib,
        }
    }

    /// One line: `linux x86_64 · 2 cores · Intel …`.
    pub fn describe(&self) -> String {
        let mut s = format!("{} {} · {} cores", self.os, self.arch, self.cores);
        if let Some(m) = &self.cpu_model {
            s.push_str(&format!(" · {m}"));
        }
        s
    }
}

/// Peak resident memory of this process in MiB (Linux), if readable.
pub fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// One step of a ramp.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RampStep {
    /// Target rate, requests per second.
    pub rate: f64,
    /// Achieved rate.
    pub achieved: f64,
    /// Requests measured.
    pub requests: u64,
    /// Corrected p99 in milliseconds.
    pub p99_ms: f64,
    /// Share of requests without a success status.
    pub error_rate: f64,
}

/// A ramp and where it broke.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ramp {
    /// The steps, in order.
    pub steps: Vec<RampStep>,
    /// p99 above this (ms) breaks.
    pub p99_limit_ms: f64,
    /// Error share above this breaks.
    pub error_limit: f64,
    /// Index of the first step that broke.
    pub broke_at: Option<usize>,
}

/// The first step whose p99 is above `p99_limit_ms` or whose error share
/// is above `error_limit`.
pub fn find_break(steps: &[RampStep], p99_limit_ms: f64, error_limit: f64) -> Option<usize> {
    steps
        .iter()
        .position(|s| s.p99_ms > p99_limit_ms || s.error_rate > error_limit)
}

/// One point of the latency curve.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CurvePoint {
    /// The quantile, 0 to 1.
    pub quantile: f64,
    /// Corrected latency at it, in milliseconds.
    pub corrected_ms: f64,
    /// Uncorrected latency at it, in milliseconds.
    pub uncorrected_ms: f64,
}

/// The quantiles of the curve: dense near the tail, where latency lives,
/// up to the last one the recorded count can resolve.
fn curve_quantiles(count: u64) -> Vec<f64> {
    let mut qs = Vec::new();
    let mut nines = 0.0f64;
    while nines <= 6.0 {
        let q = 1.0 - 10f64.powf(-nines);
        // Past 1/count the curve only repeats the maximum.
        if nines > 0.0 && 10f64.powf(nines) > (count as f64) * 10.0 {
            break;
        }
        qs.push(q);
        nines += 0.125;
    }
    qs.push(1.0);
    qs
}

/// The latency curve of a recorder (empty when nothing was recorded). A
/// closed loop records one view only: its uncorrected side repeats the
/// corrected one.
pub fn latency_curve(rec: &Recorder) -> Vec<CurvePoint> {
    let c = &rec.corrected;
    if c.is_empty() {
        return Vec::new();
    }
    let u = if rec.uncorrected.is_empty() {
        c
    } else {
        &rec.uncorrected
    };
    let ms = |us: u64| us as f64 / 1000.0;
    curve_quantiles(c.len())
        .into_iter()
        .map(|q| CurvePoint {
            quantile: q,
            corrected_ms: ms(c.value_at_quantile(q)),
            uncorrected_ms: ms(u.value_at_quantile(q)),
        })
        .collect()
}

impl BenchResult {
    /// The numbers a threshold is held against.
    pub fn measured(&self) -> Measured<'_> {
        // p95 is not among the stored percentiles: read it off the curve.
        let p95_ms = self
            .latency_curve
            .iter()
            .find(|p| p.quantile >= 0.95)
            .map(|p| p.corrected_ms)
            .unwrap_or(self.latency.p99_ms);
        Measured {
            latency: &self.latency,
            p95_ms,
            error_rate: self.error_rate,
            achieved_rate: self.achieved_rate,
            requests: self.requests,
        }
    }

    /// Holds this result against `threshold`.
    pub fn hold(&self, threshold: &Threshold) -> ThresholdResult {
        threshold.hold(&self.measured())
    }
}

/// A bench result as a self-contained HTML page (the run report's page,
/// with the bench's data).
pub fn render_html(result: &BenchResult) -> String {
    let mut data = serde_json::to_value(result).unwrap_or(serde_json::Value::Null);
    data["kind"] = serde_json::json!("bench");
    data["target"] = serde_json::json!(crate::state::probe::redact_text(&result.target));
    crate::report::html::page(&format!("hookstorm bench {}", result.run_id), &data)
}

/// Writes `report.html` for a bench into `dir`.
pub fn write_html(dir: &std::path::Path, result: &BenchResult) -> Result<(), String> {
    let path = dir.join("report.html");
    std::fs::write(&path, render_html(result)).map_err(|e| format!("{}: {e}", path.display()))
}

/// The files a bench's folder is sealed with, when they are there.
pub const SEALED: [&str; 5] = [
    "bench.json",
    "report.html",
    "history.jsonl",
    "state.json",
    crate::shard::LATENCY_FILE,
];

/// Seals a bench's folder once everything is written: `SHA256SUMS` of
/// [`SEALED`], which `merge` holds a bench shard to before reading it.
pub fn seal(dir: &std::path::Path) -> Result<(), crate::report::seal::SealError> {
    crate::report::seal::seal_files(dir, &SEALED)
}

/// Writes `bench.json` and `report.html` again (after thresholds were
/// added to the result).
pub fn rewrite(dir: &std::path::Path, result: &BenchResult) -> Result<(), String> {
    let json = serde_json::to_vec_pretty(result).map_err(|e| e.to_string())?;
    let path = dir.join("bench.json");
    std::fs::write(&path, json).map_err(|e| format!("{}: {e}", path.display()))?;
    write_html(dir, result)
}

/// What the checker said about the receiver's state after the bench.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Correctness {
    /// The scenario's grade (`pass`, `fail`, `unknown`, `non-strict`).
    pub verdict: crate::check::Verdict,
    /// The full check.
    pub check: ScenarioCheck,
    /// The inbox drained before the state was read.
    pub drained: bool,
}

/// `bench.json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BenchResult {
    /// The run id (the report folder's name).
    pub run_id: String,
    /// When it started (RFC 3339).
    pub started_at: String,
    /// `open`, `closed` or `ramp`.
    pub mode: String,
    /// What was benched (redacted).
    pub target: String,
    /// The sender profile.
    pub profile: String,
    /// The seed of the deliveries.
    pub seed: u64,
    /// Connections.
    pub connections: usize,
    /// Measured seconds.
    pub duration_s: f64,
    /// Warmup seconds.
    pub warmup_s: f64,
    /// The count of requests asked for (`--requests`), this shard's share
    /// in a sharded bench; absent when only the duration bounded it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests_asked: Option<u64>,
    /// With `requests_asked`: the count ended the bench (every step of a
    /// ramp), not the duration.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests_reached: Option<bool>,
    /// Target rate (open loop; the last step of a ramp).
    pub target_rate: Option<f64>,
    /// Requests measured.
    pub requests: u64,
    /// Requests sent during warmup.
    pub warmup_requests: u64,
    /// Measured requests per second.
    pub achieved_rate: f64,
    /// Latency from the intended send time (open loop) or the send (closed).
    pub latency: Percentiles,
    /// Latency from the actual send time.
    pub latency_uncorrected: Percentiles,
    /// Measured requests by status, `error` for no answer.
    pub statuses: BTreeMap<String, u64>,
    /// Transport errors by kind.
    pub errors: BTreeMap<String, u64>,
    /// Share of measured requests without a success status.
    pub error_rate: f64,
    /// Requests completed in each second of the run (warmup included).
    pub throughput: Vec<u64>,
    /// Of those, requests without a success status in each second.
    pub errors_per_second: Vec<u64>,
    /// Latency by percentile, corrected and uncorrected, for the plot.
    pub latency_curve: Vec<CurvePoint>,
    /// The `--threshold`s and what they found, in the order given.
    pub thresholds: Vec<ThresholdResult>,
    /// The ramp, when the rate was a range.
    pub ramp: Option<Ramp>,
    /// The delivery mix.
    pub mix: Mix,
    /// Deliveries the receiver refused (no copy acknowledged, one refused
    /// with a status a provider does not retry: see
    /// [`crate::bench::load::refuses`]), resends aside, warmup included.
    pub refused: u64,
    /// The first refusal: its status and what the receiver said.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_refusal: Option<super::load::Refusal>,
    /// The processes the bench started and stopped (a target's
    /// `[lifecycle]`, its `[database]` proxy, the built-in receiver).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub processes: Vec<String>,
    /// The process and database faults carried out under the load, and
    /// what they did (`--fault`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub faults: Option<super::faults::FaultsResult>,
    /// The checker's verdict, unless checking was off.
    pub check: Option<Correctness>,
    /// Why there is no verdict.
    pub check_skipped: Option<String>,
    /// The machine.
    pub machine: Machine,
    /// Peak RSS of the harness in MiB.
    pub peak_rss_mib: Option<f64>,
    /// The history file, relative to the run folder.
    pub history: Option<String>,
    /// Open loop and ramp: why the target rate was not reached (requests
    /// due against requests sent before the duration ran out); `None` when
    /// it was reached, or in closed loop.
    pub rate_unreachable: Option<String>,
    /// Stopped by Ctrl-C or SIGTERM before its duration ran out; the
    /// figures cover what ran.
    pub interrupted: bool,
    /// hookstorm's version.
    pub version: String,
}

impl BenchResult {
    /// The console summary.
    pub fn console(&self) -> String {
        let mut s = String::new();
        let l = &self.latency;
        let _ = writeln!(
            s,
            "bench {} · {} · {} connections · {:.1}s measured (+{:.1}s warmup)",
            self.mode, self.target, self.connections, self.duration_s, self.warmup_s
        );
        let _ = writeln!(
            s,
            "  rate      {:.0} req/s achieved{} · {} requests",
            self.achieved_rate,
            self.target_rate
                .map(|r| format!(" (target {r:.0}/s)"))
                .unwrap_or_default(),
            self.requests
        );
        if let Some(n) = self.requests_asked {
            let _ = writeln!(
                s,
                "  count     {n} requests asked{}",
                if self.requests_reached == Some(true) {
                    ": sent before the duration ran out"
                } else {
                    "; the duration ran out first"
                }
            );
        }
        if let Some(why) = &self.rate_unreachable {
            let _ = writeln!(s, "  UNREACHABLE rate: {why}");
        }
        if self.interrupted {
            let _ = writeln!(
                s,
                "  interrupted after {:.1}s measured: the figures cover what ran",
                self.duration_s
            );
        }
        let _ = writeln!(
            s,
            "  latency   p50 {:.2} ms · p90 {:.2} · p99 {:.2} · p99.9 {:.2} · max {:.2}{}",
            l.p50_ms,
            l.p90_ms,
            l.p99_ms,
            l.p999_ms,
            l.max_ms,
            if self.mode == "closed" {
                ""
            } else {
                " (from intended send time)"
            }
        );
        let statuses: Vec<String> = self
            .statuses
            .iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect();
        let _ = writeln!(
            s,
            "  statuses  {} · errors {:.2}%",
            statuses.join(", "),
            self.error_rate * 100.0
        );
        for (k, v) in &self.errors {
            let _ = writeln!(s, "    {k}: {v}");
        }
        if !self.throughput.is_empty() {
            let series: Vec<String> = self.throughput.iter().map(|n| n.to_string()).collect();
            let _ = writeln!(s, "  per second {}", series.join(" "));
        }
        if let Some(r) = &self.first_refusal {
            let body: String = r.body.trim().chars().take(160).collect();
            let _ = writeln!(
                s,
                "  refused   {} deliveries; the first ({}) was answered {} {body:?}",
                self.refused, r.delivery, r.status
            );
        }
        for p in &self.processes {
            let _ = writeln!(s, "  ran       {p}");
        }
        if let Some(f) = &self.faults {
            let _ = writeln!(s, "  {}", f.line());
            if let Some(why) = &f.not_exercised {
                let _ = writeln!(s, "  not exercised: {why}");
            }
        }
        if let Some(r) = &self.ramp {
            r.console(&mut s);
        }
        for t in &self.thresholds {
            let _ = writeln!(
                s,
                "  threshold {} · measured {} · {}",
                t.threshold,
                t.actual,
                if t.passed { "ok" } else { "BROKEN" }
            );
        }
        self.check_lines(&mut s);
        let _ = writeln!(
            s,
            "  machine   {}{}",
            self.machine.describe(),
            self.peak_rss_mib
                .map(|m| format!(" · harness peak RSS {m:.0} MiB"))
                .unwrap_or_default()
        );
        s
    }

    /// The check's lines: its verdict and one line per invariant, or why
    /// it was skipped.
    fn check_lines(&self, out: &mut String) {
        match (&self.check, &self.check_skipped) {
            (Some(v), _) => {
                let _ = writeln!(
                    out,
                    "  check     {} ({} deliveries, {} attempts{})",
                    v.verdict,
                    v.check.counts.deliveries,
                    v.check.counts.attempts,
                    if v.drained { "" } else { ", inbox not drained" }
                );
                for r in &v.check.results {
                    let _ = writeln!(out, "    {} {}: {}", r.id, r.verdict, r.summary);
                }
            }
            (None, Some(why)) => {
                let _ = writeln!(out, "  check     skipped ({why})");
            }
            _ => {}
        }
    }
}

impl Ramp {
    /// A ramp's lines: one per step, then where it broke.
    fn console(&self, out: &mut String) {
        let r = self;
        for (i, st) in r.steps.iter().enumerate() {
            let mark = if r.broke_at == Some(i) {
                "  <- breaks"
            } else {
                ""
            };
            let _ = writeln!(
                out,
                "  step {:>2}  {:>8.0}/s → {:>8.0}/s  p99 {:>8.2} ms  errors {:>6.2}%{mark}",
                i + 1,
                st.rate,
                st.achieved,
                st.p99_ms,
                st.error_rate * 100.0
            );
        }
        match r.broke_at {
            Some(i) => {
                let _ = writeln!(
                    out,
                    "  breaks at {:.0}/s (p99 > {} ms or errors > {}%)",
                    r.steps[i].rate,
                    r.p99_limit_ms,
                    r.error_limit * 100.0
                );
            }
            None => {
                let _ = writeln!(out, "  no break within the ramp");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(rate: f64, p99_ms: f64, error_rate: f64) -> RampStep {
        RampStep {
            rate,
            achieved: rate,
            requests: 100,
            p99_ms,
            error_rate,
        }
    }

    #[test]
    fn ramp_breaks_at_the_first_step_over_a_limit() {
        let steps = vec![
            step(1000.0, 2.0, 0.0),
            step(2000.0, 5.0, 0.005),
            step(3000.0, 150.0, 0.0),
            step(4000.0, 900.0, 0.2),
        ];
        assert_eq!(find_break(&steps, 100.0, 0.01), Some(2));
        assert_eq!(find_break(&steps, 1000.0, 0.01), Some(3));
        assert_eq!(find_break(&steps, 1000.0, 0.001), Some(1));
        assert_eq!(find_break(&steps[..2], 100.0, 0.01), None);
    }

    #[test]
    fn the_latency_curve_rises_to_the_maximum_with_both_views() {
        let mut rec = Recorder::default();
        for i in 1..=10_000u64 {
            rec.record_durations(
                std::time::Duration::from_micros(i * 10),
                std::time::Duration::from_micros(i * 5),
            );
        }
        let curve = latency_curve(&rec);
        assert!(curve.len() > 20, "{}", curve.len());
        assert!(curve.windows(2).all(|w| w[0].quantile < w[1].quantile));
        assert!(curve
            .windows(2)
            .all(|w| w[0].corrected_ms <= w[1].corrected_ms));
        let last = curve.last().unwrap();
        assert_eq!(last.quantile, 1.0);
        assert!((last.corrected_ms - 100.0).abs() < 0.2, "{last:?}");
        assert!((last.uncorrected_ms - 50.0).abs() < 0.1, "{last:?}");
        // 10 000 values resolve about five nines, not six.
        assert!(curve
            .iter()
            .all(|p| p.quantile == 1.0 || p.quantile < 0.999_999));
        assert!(latency_curve(&Recorder::default()).is_empty());
    }

    #[test]
    fn machine_names_its_cores() {
        let m = Machine::detect();
        assert!(m.cores >= 1);
        assert!(m.describe().contains("cores"));
    }
}
