//! Shards: one hookstorm process out of N that together make one run.
//!
//! One machine signs and records some 75–90k deliveries/s, and a
//! conformance matrix runs scenarios one after another; both outgrow one
//! process. Instead of a cluster of its own, hookstorm runs as N ordinary
//! processes under an engine teams already operate (a Kubernetes Indexed
//! Job, a CI matrix), each told `--shard I/N`, and `hookstorm merge`
//! ([`crate::merge`]) turns their folders into one verdict.
//!
//! This module holds what every shard agrees on without talking to the
//! others: which shard it is ([`Shard`], from the flag or the
//! environment), its seed ([`Shard::seed`], derived from the run seed, so
//! the whole sharded run is reproducible from one seed), its share of a
//! list ([`Shard::take`]), the common start ([`StartAt`]), and the manifest
//! it leaves for the merge ([`ShardManifest`], `shard.json`), written
//! `running` before the first delivery and `finished` after the last, so a
//! shard that died is told from one that finished.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

/// Environment variables a shard index is read from, in this order:
/// hookstorm's own, then the one Kubernetes sets in an Indexed Job.
pub const INDEX_ENV: [&str; 2] = ["HOOKSTORM_SHARD_INDEX", "JOB_COMPLETION_INDEX"];

/// How deep below a given folder shard and partition folders are looked
/// for (a CI artifact folder holding a reports folder holding the run's
/// folder).
pub(crate) const SEARCH_DEPTH: usize = 3;

/// The folders at or below `dir` (down to `depth` levels) that hold a file
/// named `marker`, sorted; a marked folder is not searched further, and
/// links (`latest`) are not followed, so none is found twice.
pub(crate) fn marked_folders(
    dir: &Path,
    marker: &str,
    depth: usize,
    out: &mut Vec<PathBuf>,
) -> std::io::Result<()> {
    if dir.join(marker).is_file() {
        out.push(dir.to_path_buf());
        return Ok(());
    }
    if depth == 0 {
        return Ok(());
    }
    let mut subs: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect();
    subs.sort();
    for sub in subs {
        marked_folders(&sub, marker, depth - 1, out)?;
    }
    Ok(())
}

/// The manifest file every shard writes into its report folder.
pub const MANIFEST: &str = "shard.json";

/// The lossless latency histograms a bench shard writes beside `bench.json`.
pub const LATENCY_FILE: &str = "latency.hdr.json";

/// Shard `index` of `count` (0-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// This shard, 0 ≤ index < count.
    pub index: u32,
    /// How many shards make the run.
    pub count: u32,
}

/// A shard flag or variable could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShardError {
    /// Not `I/N` with I < N.
    #[error("expected SHARD like 0/4 (index/count, index from 0 to count-1), or the count alone with the index in ${a} or ${b}, got {0:?}", a = INDEX_ENV[0], b = INDEX_ENV[1])]
    Syntax(String),
    /// `--shard N` without the index anywhere.
    #[error("--shard {0} gives no index and neither ${a} nor ${b} is set (hint: --shard I/N, or run as a Kubernetes Indexed Job)", a = INDEX_ENV[0], b = INDEX_ENV[1])]
    NoIndex(String),
    /// `--start-at` is not a time.
    #[error("expected a start time like 2026-01-31T12:00:00Z or +30s, got {0:?}")]
    StartAt(String),
}

impl Shard {
    /// Parses `I/N`, or `N` alone (or `?/N`) with the index from the
    /// environment ([`INDEX_ENV`]); `env` looks a variable up.
    pub fn parse_with_env(
        s: &str,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ShardError> {
        let bad = || ShardError::Syntax(s.to_string());
        let num = |x: &str| x.trim().parse::<u32>().map_err(|_| bad());
        let (index, count) = match s.split_once('/') {
            Some((i, n)) if i.trim() != "?" => (num(i)?, num(n)?),
            _ if s.trim().is_empty() => return Err(bad()),
            split => {
                let n = num(split.map_or(s, |(_, n)| n))?;
                let i = INDEX_ENV
                    .iter()
                    .find_map(|v| env(v))
                    .ok_or_else(|| ShardError::NoIndex(s.to_string()))?;
                let i = i
                    .trim()
                    .parse::<u32>()
                    .map_err(|_| ShardError::Syntax(format!("{i}/{n}")))?;
                (i, n)
            }
        };
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }

    /// This shard's seed: the run seed for a single shard, else a mix of
    /// the run seed and the index (one seed reproduces every shard).
    pub fn seed(self, run_seed: u64) -> u64 {
        if self.count == 1 {
            return run_seed;
        }
        let mut x = run_seed ^ (u64::from(self.index) + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        x ^ (x >> 31)
    }

    /// This shard's share of `items`: every N-th item from the I-th, so the
    /// shares are disjoint, cover the list, and differ in size by at most one.
    pub fn take<T>(self, items: impl IntoIterator<Item = T>) -> Vec<T> {
        items
            .into_iter()
            .enumerate()
            .filter(|(i, _)| *i as u64 % u64::from(self.count) == u64::from(self.index))
            .map(|(_, t)| t)
            .collect()
    }

    /// This shard's share of a rate: an even split.
    pub fn rate(self, total: f64) -> f64 {
        total / f64::from(self.count)
    }

    /// This shard's share of a count of `total`: the counts of all shards
    /// add up to it exactly (the first `total % count` shards take one more).
    pub fn count_share(self, total: u64) -> u64 {
        count_share(total, u64::from(self.count), u64::from(self.index))
    }
}

/// Part `index` of `total` split into `parts` parts as evenly as counts
/// split: the parts add up to `total` exactly, the first `total % parts`
/// taking one more (a shard's share of `--requests`, a ramp step's share).
pub fn count_share(total: u64, parts: u64, index: u64) -> u64 {
    let n = parts.max(1);
    total / n + u64::from(index < total % n)
}

impl FromStr for Shard {
    type Err = ShardError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Shard::parse_with_env(s, |v| std::env::var(v).ok())
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// `--start-at`: a wall-clock time every shard waits for, so they start
/// together (as well as the machines' clocks agree).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StartAt(pub SystemTime);

impl FromStr for StartAt {
    type Err = ShardError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        if let Some(rel) = t.strip_prefix('+') {
            let d: crate::text::units::HumanDuration =
                rel.parse().map_err(|_| ShardError::StartAt(s.into()))?;
            return Ok(StartAt(SystemTime::now() + d.0));
        }
        let at = chrono::DateTime::parse_from_rfc3339(t)
            .map_err(|_| ShardError::StartAt(s.into()))?
            .with_timezone(&chrono::Utc);
        Ok(StartAt(at.into()))
    }
}

impl StartAt {
    /// How long until the start (zero once it passed).
    pub fn remaining(self) -> Duration {
        self.0
            .duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO)
    }

    /// Sleeps until the start.
    pub async fn wait(self) {
        tokio::time::sleep(self.remaining()).await;
    }

    /// The time as RFC 3339.
    pub fn rfc3339(self) -> String {
        chrono::DateTime::<chrono::Utc>::from(self.0).to_rfc3339()
    }
}

/// What a shard did, as far as it got.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ShardStatus {
    /// Started and not (yet) finished: a shard found so after the run died.
    Running,
    /// Sent everything and wrote its files.
    Finished,
    /// Stopped by a signal before the end.
    Interrupted,
}

/// `shard.json`: what the merge needs to know of one shard.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardManifest {
    /// `bench` or `run`.
    pub kind: String,
    /// Which shard.
    pub shard: Shard,
    /// The run seed every shard was given.
    pub run_seed: u64,
    /// This shard's own seed ([`Shard::seed`]).
    pub seed: u64,
    /// How far it got.
    pub status: ShardStatus,
    /// The profile sent.
    pub profile: String,
    /// What was targeted (no secrets).
    pub target: String,
    /// When it started sending (RFC 3339).
    pub started_at: String,
    /// Unix milliseconds at which its load began, warmup included (bench):
    /// the merge lines the shards' per-second throughput up on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase_start_ms: Option<i64>,
    /// The scenarios it ran (run).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scenarios: Vec<String>,
    /// The plan summary: deliveries planned or slots sent.
    pub planned: u64,
    /// The history file, relative to the folder.
    pub history: String,
    /// Why this shard's bench would check nothing even unsharded (the null
    /// receiver stores nothing, `--no-check`, a plain `--url` without a
    /// state probe): a merge without a target then skips the check as one
    /// such bench does, instead of calling the verdict unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unchecked: Option<String>,
    /// The hookstorm version.
    pub version: String,
}

impl ShardManifest {
    /// Writes it as `shard.json` into `dir`.
    pub fn write(&self, dir: &Path) -> std::io::Result<()> {
        let json = serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?;
        let path = dir.join(MANIFEST);
        let tmp = dir.join(format!("{MANIFEST}.tmp"));
        std::fs::write(&tmp, json)?;
        std::fs::rename(tmp, path)
    }

    /// Reads `dir/shard.json`.
    pub fn read(dir: &Path) -> Result<ShardManifest, ManifestError> {
        let path = dir.join(MANIFEST);
        let text = std::fs::read_to_string(&path).map_err(|source| ManifestError::Unreadable {
            path: path.clone(),
            source,
        })?;
        serde_json::from_str(&text).map_err(|source| ManifestError::Malformed { path, source })
    }
}

/// Why a shard's manifest could not be read. The two tell a merge apart
/// a shard that never finished (no manifest: its verdict is unknown) from
/// a folder changed after it did (the manifest is written whole, by a
/// rename, so a malformed one was never the shard's: the merge refuses).
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// No manifest, or one that cannot be read.
    #[error("{}: {source}", path.display())]
    Unreadable {
        /// The manifest's path.
        path: std::path::PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A manifest that is not one.
    #[error("{}: not a shard manifest: {source}", path.display())]
    Malformed {
        /// The manifest's path.
        path: std::path::PathBuf,
        /// What is wrong with it.
        source: serde_json::Error,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shards_counts_add_up_to_the_whole() {
        for (total, count) in [
            (0u64, 1u32),
            (7, 1),
            (7, 3),
            (400, 8),
            (5, 8),
            (1_000_001, 16),
        ] {
            let shares: Vec<u64> = (0..count)
                .map(|index| Shard { index, count }.count_share(total))
                .collect();
            assert_eq!(shares.iter().sum::<u64>(), total, "{total} over {count}");
            let (lo, hi) = (shares.iter().min().unwrap(), shares.iter().max().unwrap());
            assert!(hi - lo <= 1, "{shares:?}");
        }
    }

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn shard_flags_parse_as_index_over_count() {
        assert_eq!(
            Shard::parse_with_env("2/4", no_env),
            Ok(Shard { index: 2, count: 4 })
        );
        for bad in ["", "4/4", "1/0", "a/2", "-1/2", "1/2/3"] {
            assert!(
                Shard::parse_with_env(bad, no_env).is_err(),
                "{bad:?} should not parse"
            );
        }
    }

    #[test]
    fn the_index_comes_from_the_job_completion_index_when_the_flag_has_only_the_count() {
        let k8s = |v: &str| (v == "JOB_COMPLETION_INDEX").then(|| "3".to_string());
        assert_eq!(
            Shard::parse_with_env("8", k8s),
            Ok(Shard { index: 3, count: 8 })
        );
        assert_eq!(
            Shard::parse_with_env("?/8", k8s),
            Ok(Shard { index: 3, count: 8 })
        );
        assert!(matches!(
            Shard::parse_with_env("8", no_env),
            Err(ShardError::NoIndex(_))
        ));
        let out_of_range = |_: &str| Some("8".to_string());
        assert!(Shard::parse_with_env("8", out_of_range).is_err());
    }

    #[test]
    fn shares_of_a_list_are_disjoint_and_cover_it() {
        let items: Vec<u32> = (0..11).collect();
        let mut all = Vec::new();
        for index in 0..3 {
            let share = Shard { index, count: 3 }.take(items.clone());
            assert!(share.len() == 3 || share.len() == 4, "{share:?}");
            all.extend(share);
        }
        all.sort();
        assert_eq!(all, items);
    }

    #[test]
    fn shard_seeds_differ_per_index_and_repeat_per_run_seed() {
        let s = |index| Shard { index, count: 4 }.seed(42);
        assert_eq!(s(1), Shard { index: 1, count: 4 }.seed(42));
        let mut seeds: Vec<u64> = (0..4).map(s).collect();
        seeds.dedup();
        assert_eq!(seeds.len(), 4);
        assert_eq!(Shard { index: 0, count: 1 }.seed(42), 42);
    }

    #[test]
    fn start_times_parse_absolute_or_relative() {
        let a: StartAt = "2026-01-31T12:00:00Z".parse().unwrap();
        assert_eq!(a.rfc3339(), "2026-01-31T12:00:00+00:00");
        let r: StartAt = "+30s".parse().unwrap();
        assert!(r.remaining() > Duration::from_secs(28));
        assert!("tomorrow".parse::<StartAt>().is_err());
    }
}
