//! Latency recording with HdrHistogram, corrected for coordinated omission.
//!
//! In open loop every request has an *intended* send time on the arrival
//! schedule. A receiver that stalls makes requests wait for a free
//! connection; measuring from the actual send would hide that wait (the
//! "coordinated omission" of closed-loop tools), so the corrected latency is
//! measured from the intended time. Both are kept so reports can show the
//! gap. Values are microseconds, 1 µs to 60 s, three significant digits.

use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Largest latency recorded (longer ones are clamped): 60 s in µs.
pub const MAX_MICROS: u64 = 60_000_000;

/// A new empty histogram with the bench's range and precision.
pub fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_MICROS, 3).expect("static bounds are valid")
}

fn micros(d: Duration) -> u64 {
    (d.as_micros() as u64).clamp(1, MAX_MICROS)
}

/// Two histograms: from the intended send time (corrected) and from the
/// actual send time (what a closed-loop tool would report).
#[derive(Debug, Clone)]
pub struct Recorder {
    /// From the intended send time.
    pub corrected: Histogram<u64>,
    /// From the actual send time.
    pub uncorrected: Histogram<u64>,
}

impl Default for Recorder {
    fn default() -> Self {
        Recorder {
            corrected: histogram(),
            uncorrected: histogram(),
        }
    }
}

impl Recorder {
    /// Records one request: `intended` is its slot on the schedule (the
    /// actual send time in closed loop), `sent` when it left, `done` when the
    /// answer's head (or the error) came.
    pub fn record(&mut self, intended: Instant, sent: Instant, done: Instant) {
        let _ = self
            .corrected
            .record(micros(done.saturating_duration_since(intended)));
        let _ = self
            .uncorrected
            .record(micros(done.saturating_duration_since(sent)));
    }

    /// Records durations directly (µs resolution).
    pub fn record_durations(&mut self, corrected: Duration, uncorrected: Duration) {
        let _ = self.corrected.record(micros(corrected));
        let _ = self.uncorrected.record(micros(uncorrected));
    }

    /// Adds another recorder's values.
    pub fn merge(&mut self, other: &Recorder) {
        let _ = self.corrected.add(&other.corrected);
        let _ = self.uncorrected.add(&other.uncorrected);
    }

    /// Forgets everything.
    pub fn reset(&mut self) {
        self.corrected.reset();
        self.uncorrected.reset();
    }
}

/// Percentiles of one histogram, in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Percentiles {
    /// Values recorded.
    pub count: u64,
    /// Mean.
    pub mean_ms: f64,
    /// Median.
    pub p50_ms: f64,
    /// 90th percentile.
    pub p90_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// 99.9th percentile.
    pub p999_ms: f64,
    /// Largest value.
    pub max_ms: f64,
}

impl Percentiles {
    /// The percentiles of `h` (all zero when it is empty).
    pub fn of(h: &Histogram<u64>) -> Percentiles {
        if h.is_empty() {
            return Percentiles::default();
        }
        let ms = |us: u64| us as f64 / 1000.0;
        Percentiles {
            count: h.len(),
            mean_ms: h.mean() / 1000.0,
            p50_ms: ms(h.value_at_quantile(0.50)),
            p90_ms: ms(h.value_at_quantile(0.90)),
            p99_ms: ms(h.value_at_quantile(0.99)),
            p999_ms: ms(h.value_at_quantile(0.999)),
            max_ms: ms(h.max()),
        }
    }
}

/// A histogram as data, losslessly: its bounds, precision and every
/// non-empty bucket with its count. Decoding records each count at its
/// bucket's value, which lands in the same bucket, so a decoded histogram
/// equals the original and merged ones give the percentiles of the union
/// (never averaged percentiles). Plain JSON, so shards need no codec.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistogramData {
    /// Smallest value it can tell apart.
    pub low: u64,
    /// Largest value it holds.
    pub high: u64,
    /// Significant decimal digits.
    pub sigfig: u8,
    /// Total count (a check on `buckets`).
    pub count: u64,
    /// `[value, count]` for every non-empty bucket, ascending.
    pub buckets: Vec<[u64; 2]>,
}

/// Serialised histograms that cannot be read back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a latency histogram: {0}")]
pub struct HistogramDataError(pub String);

impl HistogramData {
    /// Encodes `h`.
    pub fn encode(h: &Histogram<u64>) -> Self {
        HistogramData {
            low: h.low(),
            high: h.high(),
            sigfig: h.sigfig(),
            count: h.len(),
            buckets: h
                .iter_recorded()
                .map(|v| [v.value_iterated_to(), v.count_at_value()])
                .collect(),
        }
    }

    /// Decodes into a histogram equal to the encoded one.
    pub fn decode(&self) -> Result<Histogram<u64>, HistogramDataError> {
        let bad = |m: String| HistogramDataError(m);
        let mut h = Histogram::new_with_bounds(self.low, self.high, self.sigfig).map_err(|e| {
            bad(format!(
                "bounds {}..{} sigfig {}: {e:?}",
                self.low, self.high, self.sigfig
            ))
        })?;
        for [value, count] in &self.buckets {
            h.record_n(*value, *count)
                .map_err(|e| bad(format!("value {value}: {e:?}")))?;
        }
        if h.len() != self.count {
            return Err(bad(format!(
                "buckets add up to {} values, the header says {}",
                h.len(),
                self.count
            )));
        }
        Ok(h)
    }
}

/// A bench's two histograms as data (`latency.hdr.json` of a shard).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecorderData {
    /// From the intended send time.
    pub corrected: HistogramData,
    /// From the actual send time (empty in closed loop).
    pub uncorrected: HistogramData,
}

impl RecorderData {
    /// Encodes a recorder.
    pub fn encode(r: &Recorder) -> Self {
        RecorderData {
            corrected: HistogramData::encode(&r.corrected),
            uncorrected: HistogramData::encode(&r.uncorrected),
        }
    }

    /// Decodes into a recorder.
    pub fn decode(&self) -> Result<Recorder, HistogramDataError> {
        Ok(Recorder {
            corrected: self.corrected.decode()?,
            uncorrected: self.uncorrected.decode()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialised_histograms_decode_equal_and_merge_as_the_union() {
        // Two shards' latencies, skewed differently, and one histogram of
        // all of them: merging the decoded shards gives the union exactly.
        let (mut a, mut b, mut all) = (histogram(), histogram(), histogram());
        for i in 1..5000u64 {
            let x = (i * i) % 900_000 + 1;
            let y = i * 37 % 20_000 + 1;
            a.record(x).unwrap();
            b.record(y).unwrap();
            all.record(x).unwrap();
            all.record(y).unwrap();
        }
        let da: HistogramData =
            serde_json::from_str(&serde_json::to_string(&HistogramData::encode(&a)).unwrap())
                .unwrap();
        let decoded = da.decode().unwrap();
        assert_eq!(decoded, a);
        let mut merged = decoded;
        merged
            .add(HistogramData::encode(&b).decode().unwrap())
            .unwrap();
        assert_eq!(Percentiles::of(&merged), Percentiles::of(&all));
        assert_eq!(merged, all);
    }

    #[test]
    fn a_histogram_whose_counts_do_not_add_up_is_refused() {
        let mut h = histogram();
        h.record(100).unwrap();
        let mut d = HistogramData::encode(&h);
        d.count = 2;
        assert!(d.decode().is_err());
    }

    /// One connection serving an open-loop schedule of `n` arrivals every
    /// `interval`; `service(k)` is how long request `k` takes. Returns the
    /// recorder, fed exactly as the open loop feeds it.
    fn simulate(n: u32, interval: Duration, service: impl Fn(u32) -> Duration) -> Recorder {
        let start = Instant::now();
        let mut rec = Recorder::default();
        let mut free_at = start;
        for k in 0..n {
            let intended = start + interval * k;
            let sent = intended.max(free_at);
            let done = sent + service(k);
            free_at = done;
            rec.record(intended, sent, done);
        }
        rec
    }

    #[test]
    fn a_stall_inflates_corrected_percentiles_but_not_uncorrected_ones() {
        // 1000 req/s, 100 µs each, one request stalls for 500 ms.
        let rec = simulate(2000, Duration::from_millis(1), |k| {
            if k == 1000 {
                Duration::from_millis(500)
            } else {
                Duration::from_micros(100)
            }
        });
        let corrected = Percentiles::of(&rec.corrected);
        let naive = Percentiles::of(&rec.uncorrected);
        // ~500 requests queued behind the stall: a quarter of all requests
        // waited, so the corrected p90 and p99 show it.
        assert!(corrected.p90_ms > 100.0, "{corrected:?}");
        assert!(corrected.p99_ms > 400.0, "{corrected:?}");
        // Measured from the actual send, only the stalled request is slow.
        assert!(naive.p99_ms < 1.0, "{naive:?}");
        assert!(naive.max_ms >= 499.0, "{naive:?}");
        assert_eq!(corrected.count, 2000);
    }

    #[test]
    fn without_a_stall_both_views_agree() {
        let rec = simulate(1000, Duration::from_millis(1), |_| {
            Duration::from_micros(200)
        });
        let c = Percentiles::of(&rec.corrected);
        let u = Percentiles::of(&rec.uncorrected);
        assert!((c.p99_ms - u.p99_ms).abs() < 0.01, "{c:?} {u:?}");
    }

    #[test]
    fn empty_histogram_gives_zero_percentiles() {
        assert_eq!(Percentiles::of(&histogram()), Percentiles::default());
    }
}
