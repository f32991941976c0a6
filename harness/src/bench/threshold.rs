//! Bench thresholds, as k6 writes them: `p99<100ms`, `errors<1%`,
//! `rate>5000/s`. A bench given thresholds gates on them: one that does not
//! hold fails the exit code, so a bench in CI can fail a build on latency,
//! errors or throughput and not only on the checker's verdict.
//!
//! A threshold is a metric, a comparison and a value whose unit fits the
//! metric: latencies (`p50`, `p90`, `p99`, `p99.9`, `max`, `mean`) take
//! `us`, `ms` or `s` and read the corrected percentiles; `errors` takes a
//! percentage or a share (`1%`, `0.01`); `rate` takes requests per second
//! (`5000/s` or `5000`). Parse errors name the threshold and what was
//! expected.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

/// What a threshold measures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Metric {
    /// A corrected latency percentile (0.5, 0.9, 0.99, 0.999) or the
    /// maximum (1.0), in milliseconds.
    Latency(f64),
    /// The mean corrected latency, in milliseconds.
    Mean,
    /// The share of measured requests without a success status (0 to 1).
    Errors,
    /// Measured requests per second.
    Rate,
}

/// How the measured value must compare with the limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl Op {
    fn holds(self, actual: f64, limit: f64) -> bool {
        match self {
            Op::Lt => actual < limit,
            Op::Le => actual <= limit,
            Op::Gt => actual > limit,
            Op::Ge => actual >= limit,
        }
    }
}

/// One `--threshold`.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    /// The text it was given as.
    pub text: String,
    /// What it measures.
    pub metric: Metric,
    /// The comparison.
    pub op: Op,
    /// The limit, in the metric's unit (ms, share, per second).
    pub limit: f64,
}

/// A threshold that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("threshold {text:?}: {message} (hint: like 'p99<100ms', 'errors<1%' or 'rate>5000/s')")]
pub struct ThresholdError {
    /// The threshold as given.
    pub text: String,
    /// What was wrong, and what was expected.
    pub message: String,
}

/// A threshold and what the bench measured against it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThresholdResult {
    /// The threshold as given.
    pub threshold: String,
    /// The measured value, with its unit.
    pub actual: String,
    /// Whether it held.
    pub passed: bool,
}

fn split_op(s: &str) -> Option<(&str, Op, &str)> {
    for (sym, op) in [("<=", Op::Le), (">=", Op::Ge), ("<", Op::Lt), (">", Op::Gt)] {
        if let Some(i) = s.find(sym) {
            return Some((&s[..i], op, &s[i + sym.len()..]));
        }
    }
    None
}

fn number(s: &str) -> Option<f64> {
    s.trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
}

impl FromStr for Threshold {
    type Err = ThresholdError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let err = |message: String| ThresholdError {
            text: text.to_string(),
            message,
        };
        let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        let (name, op, value) = split_op(&compact)
            .ok_or_else(|| err("expected METRIC<VALUE or METRIC>VALUE (also <= and >=)".into()))?;
        let name = name.to_ascii_lowercase();
        let value = value.to_ascii_lowercase();
        let metric = match name.as_str() {
            "p50" | "median" => Metric::Latency(0.5),
            "p90" => Metric::Latency(0.9),
            "p95" => Metric::Latency(0.95),
            "p99" => Metric::Latency(0.99),
            "p99.9" | "p999" => Metric::Latency(0.999),
            "max" => Metric::Latency(1.0),
            "mean" | "avg" => Metric::Mean,
            "errors" | "error_rate" => Metric::Errors,
            "rate" | "throughput" => Metric::Rate,
            "" => return Err(err("expected a metric before the comparison".into())),
            other => {
                return Err(err(format!(
                "unknown metric {other:?}; expected p50, p90, p95, p99, p99.9, max, mean, errors or rate"
            )))
            }
        };
        let limit = match metric {
            Metric::Latency(_) | Metric::Mean => {
                let (digits, scale) = if let Some(v) = value.strip_suffix("us") {
                    (v, 0.001)
                } else if let Some(v) = value.strip_suffix("ms") {
                    (v, 1.0)
                } else if let Some(v) = value.strip_suffix('s') {
                    (v, 1000.0)
                } else {
                    return Err(err(format!(
                        "{value:?}: expected a latency with its unit, like 100ms, 1.5s or 800us"
                    )));
                };
                number(digits).ok_or_else(|| {
                    err(format!(
                        "{value:?}: expected a latency with its unit, like 100ms, 1.5s or 800us"
                    ))
                })? * scale
            }
            Metric::Errors => {
                let share = match value.strip_suffix('%') {
                    Some(p) => number(p).map(|v| v / 100.0),
                    None => number(&value),
                };
                share.filter(|v| *v <= 1.0).ok_or_else(|| {
                    err(format!(
                        "{value:?}: expected a percentage like 1% or a share like 0.01"
                    ))
                })?
            }
            Metric::Rate => {
                number(value.strip_suffix("/s").unwrap_or(&value)).ok_or_else(|| {
                    err(format!(
                        "{value:?}: expected requests per second, like 5000/s"
                    ))
                })?
            }
        };
        Ok(Threshold {
            text: text.trim().to_string(),
            metric,
            op,
            limit,
        })
    }
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// The numbers a threshold is held against: one bench's, or the merged
/// numbers of a sharded run's benches.
#[derive(Debug, Clone, Copy)]
pub struct Measured<'a> {
    /// Latency percentiles (corrected).
    pub latency: &'a crate::bench::latency::Percentiles,
    /// The 95th percentile, which the stored percentiles do not carry.
    pub p95_ms: f64,
    /// Share of measured requests that failed.
    pub error_rate: f64,
    /// Requests per second achieved.
    pub achieved_rate: f64,
    /// Measured requests.
    pub requests: u64,
}

impl Threshold {
    /// Holds measured numbers against this threshold.
    pub fn hold(&self, m: &Measured<'_>) -> ThresholdResult {
        let l = m.latency;
        let (actual, shown) = match self.metric {
            Metric::Latency(q) => {
                let v = if q >= 1.0 {
                    l.max_ms
                } else if q >= 0.999 {
                    l.p999_ms
                } else if q >= 0.99 {
                    l.p99_ms
                } else if q >= 0.95 {
                    m.p95_ms
                } else if q >= 0.9 {
                    l.p90_ms
                } else {
                    l.p50_ms
                };
                (v, format!("{v:.2}ms"))
            }
            Metric::Mean => (l.mean_ms, format!("{:.2}ms", l.mean_ms)),
            Metric::Errors => (m.error_rate, format!("{:.2}%", m.error_rate * 100.0)),
            Metric::Rate => (m.achieved_rate, format!("{:.0}/s", m.achieved_rate)),
        };
        // No request measured: nothing can hold.
        let passed = m.requests > 0 && self.op.holds(actual, self.limit);
        ThresholdResult {
            threshold: self.text.clone(),
            actual: shown,
            passed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Threshold {
        s.parse().unwrap()
    }

    #[test]
    fn thresholds_parse_as_k6_writes_them() {
        let t = parse("p99<100ms");
        assert_eq!(
            (t.metric, t.op, t.limit),
            (Metric::Latency(0.99), Op::Lt, 100.0)
        );
        assert_eq!(parse("p99.9 <= 1.5s").limit, 1500.0);
        assert_eq!(parse("max<800us").limit, 0.8);
        let e = parse("errors<1%");
        assert_eq!((e.metric, e.limit), (Metric::Errors, 0.01));
        assert_eq!(parse("errors<0.05").limit, 0.05);
        let r = parse("rate>5000/s");
        assert_eq!((r.metric, r.op, r.limit), (Metric::Rate, Op::Gt, 5000.0));
        assert_eq!(parse("rate>=200").op, Op::Ge);
    }

    #[test]
    fn a_bad_threshold_names_itself_and_what_was_expected() {
        for (text, says) in [
            ("p99 100ms", "expected METRIC<VALUE"),
            ("p98<100ms", "unknown metric \"p98\""),
            ("p99<100", "expected a latency with its unit"),
            ("errors<150%", "expected a percentage"),
            ("rate>fast", "expected requests per second"),
            ("<5", "expected a metric"),
        ] {
            let e = text.parse::<Threshold>().unwrap_err().to_string();
            assert!(e.contains(&format!("{text:?}")), "{e}");
            assert!(e.contains(says), "{text}: {e}");
            assert!(e.contains("hint:"), "{e}");
        }
    }
}
