//! What a merge says: `merge.json` ([`MergeReport`]), its findings and
//! totals, the console's lines, and why a merge could not run. A leaf of
//! the merge: the shards' merge and the join of a check's partitions both
//! fill it.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Serialize;

use crate::bench::latency::Percentiles;
use crate::bench::threshold::ThresholdResult;
use crate::check::{ScenarioCheck, Verdict};

/// The merge could not run at all.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// Folders of different runs, or nothing to merge.
    #[error("{0}")]
    Inconsistent(String),
    /// A shard or partition changed since it was written, or is not
    /// signed by the key given: named, with the file.
    #[error("refused: {0}")]
    Refused(String),
    /// The merged report could not be written.
    #[error("cannot write the merged report: {0}")]
    Io(String),
}

/// One shard as the merge found it.
#[derive(Debug, Clone, Serialize)]
pub struct ShardEntry {
    /// Its index.
    pub index: u32,
    /// Its folder.
    pub dir: PathBuf,
    /// `finished`, `running` (it died), `interrupted`, or `missing`.
    pub status: String,
    /// Requests it measured (bench) or scenarios it ran (run).
    pub count: u64,
}

/// A violation, with the shard whose history holds it.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// Scenario (`bench` for a bench).
    pub scenario: String,
    /// Invariant code.
    pub invariant: String,
    /// Its verdict.
    pub verdict: Verdict,
    /// The key concerned.
    pub key: String,
    /// What is wrong.
    pub what: String,
    /// The shard whose history holds the evidence, when it has lines.
    pub shard: Option<u32>,
    /// Lines within that shard's history.
    pub lines: Vec<u64>,
}

/// Merged bench numbers.
#[derive(Debug, Clone, Serialize)]
pub struct BenchTotals {
    /// Measured requests, all shards.
    pub requests: u64,
    /// Warmup requests, all shards.
    pub warmup_requests: u64,
    /// Sum of the shards' achieved rates (they ran at the same time).
    pub achieved_rate: f64,
    /// Percentiles of the merged corrected histograms.
    pub latency: Percentiles,
    /// Percentiles of the merged uncorrected histograms.
    pub latency_uncorrected: Percentiles,
    /// Requests completed per wall-clock second, summed over shards.
    pub throughput: Vec<u64>,
    /// Measured requests by status, summed.
    pub statuses: BTreeMap<String, u64>,
}

/// `merge.json`.
#[derive(Debug, Clone, Serialize)]
pub struct MergeReport {
    /// `bench` or `run`.
    pub kind: String,
    /// The run seed every shard was given.
    pub run_seed: u64,
    /// Shards expected.
    pub shards_expected: u32,
    /// Every expected shard, found or not.
    pub shards: Vec<ShardEntry>,
    /// The one verdict.
    pub verdict: Verdict,
    /// Why it is unknown, when it is.
    pub unknown_because: Vec<String>,
    /// The checker's result over the union (bench; absent without a state).
    pub check: Option<ScenarioCheck>,
    /// How many partitions the check was joined from, when other
    /// processes checked it (`check --partition I/N`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partitions: Option<u32>,
    /// Why nothing was checked, when the shards check nothing even alone
    /// (the null receiver): the verdict then rests on the thresholds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub check_skipped: Option<String>,
    /// Each `--threshold` against the merged numbers (bench).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub thresholds: Vec<ThresholdResult>,
    /// Violations and the shard each came from.
    pub findings: Vec<Finding>,
    /// Merged latency and throughput (bench).
    pub bench: Option<BenchTotals>,
    /// Scenarios run across shards, and by which shard (run).
    pub coverage: BTreeMap<String, u32>,
}

/// A finished merge.
#[derive(Debug)]
pub struct MergeOutcome {
    /// What `merge.json` holds.
    pub report: MergeReport,
    /// `<out>/<merge-id>`.
    pub dir: PathBuf,
}

impl MergeReport {
    /// A report of `kind` with nothing decided yet: `unknown` until the
    /// merge says otherwise.
    pub(crate) fn new(
        kind: &str,
        run_seed: u64,
        shards_expected: u32,
        shards: Vec<ShardEntry>,
        unknown_because: Vec<String>,
    ) -> Self {
        MergeReport {
            kind: kind.to_string(),
            run_seed,
            shards_expected,
            shards,
            verdict: Verdict::Unknown,
            unknown_because,
            check: None,
            partitions: None,
            check_skipped: None,
            thresholds: Vec::new(),
            findings: Vec::new(),
            bench: None,
            coverage: BTreeMap::new(),
        }
    }

    /// The documented exit code of the verdict.
    pub fn exit_code(&self) -> i32 {
        // The shards' reports do not say whether they ran `--strict`.
        self.verdict.exit_code(false)
    }

    /// A few lines for the console.
    pub fn console(&self) -> String {
        if self.kind == "check" {
            let mut s = format!(
                "joined {} partition(s) of a check: {}\n",
                self.partitions.unwrap_or(0),
                self.verdict
            );
            for why in &self.unknown_because {
                s.push_str(&format!("  unknown: {why}\n"));
            }
            for f in self.findings.iter().take(10) {
                s.push_str(&format!(
                    "  {} {} {}: {}\n",
                    f.scenario, f.invariant, f.key, f.what
                ));
            }
            return s;
        }
        let mut s = format!(
            "merged {} of {} {} shard(s), seed {}: {}\n",
            self.shards
                .iter()
                .filter(|e| e.status == "finished")
                .count(),
            self.shards_expected,
            self.kind,
            self.run_seed,
            self.verdict
        );
        for e in self.shards.iter().filter(|e| e.status != "finished") {
            s.push_str(&format!("  shard {}: {}\n", e.index, e.status));
        }
        for why in &self.unknown_because {
            s.push_str(&format!("  unknown: {why}\n"));
        }
        if let Some(n) = self.partitions {
            s.push_str(&format!("  the check joined from {n} partition(s)\n"));
        }
        if let Some(why) = &self.check_skipped {
            s.push_str(&format!("  check skipped ({why})\n"));
        }
        for t in &self.thresholds {
            s.push_str(&format!(
                "  threshold {} · measured {} · {}\n",
                t.threshold,
                t.actual,
                if t.passed { "ok" } else { "BROKEN" }
            ));
        }
        if let Some(b) = &self.bench {
            s.push_str(&format!(
                "  {} requests, {:.0}/s summed, p50 {:.2} ms, p99 {:.2} ms, p99.9 {:.2} ms (merged histograms)\n",
                b.requests, b.achieved_rate, b.latency.p50_ms, b.latency.p99_ms, b.latency.p999_ms
            ));
        }
        for f in self.findings.iter().take(10) {
            s.push_str(&format!(
                "  {} {} {}: {} (shard {})\n",
                f.scenario,
                f.invariant,
                f.key,
                f.what,
                f.shard.map_or("?".into(), |i| i.to_string())
            ));
        }
        s
    }
}
