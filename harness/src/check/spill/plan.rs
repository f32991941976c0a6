//! How a check is cut up: the partitions' sizes, and how many a check of
//! given inputs needs. A leaf of the check in partitions.

use std::path::{Path, PathBuf};

use super::route::Partition;
pub use super::route::MAX_PARTITIONS;

/// History one partition holds at most, in bytes: at one attempt per key
/// (the densest a history gets) about 280,000 keys, whose records, rows
/// and grading come to about 70 MiB; [`KEY_THREADS`] partitions are graded
/// at once.
pub const HISTORY_PER_PARTITION: u64 = 96 << 20;

/// State one partition holds at most, in bytes (about 350,000 inbox rows).
pub const STATE_PER_PARTITION: u64 = 32 << 20;

/// Key partitions graded at once, one per thread.
pub const KEY_THREADS: usize = 2;

/// How a check is cut up.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Partitioning {
    /// Partitions within this process; `None`: as many as the inputs'
    /// size asks for ([`partitions_for`]), one (the check in memory) for
    /// inputs that fit.
    pub partitions: Option<u32>,
    /// This process checks one share of N: `hookstorm check --partition I/N`.
    pub share: Option<Partition>,
    /// Where the spilled files go (a temporary folder is made in it);
    /// `None`: the first history's folder, or the system's temporary one.
    pub spill_dir: Option<PathBuf>,
}

/// How many partitions inputs of these sizes need (`share`: of the keys
/// one process of N checks).
pub fn partitions_for(history_bytes: u64, state_bytes: u64, share: Option<Partition>) -> u32 {
    let n = share.map_or(1, |p| u64::from(p.count));
    let need = |bytes: u64, per: u64| (bytes / n).div_ceil(per);
    need(history_bytes, HISTORY_PER_PARTITION)
        .max(need(state_bytes, STATE_PER_PARTITION))
        .clamp(1, u64::from(MAX_PARTITIONS)) as u32
}

/// The size of a state argument: a file's, or a folder's files'.
pub(crate) fn state_bytes(state: &Path) -> u64 {
    if state.is_dir() {
        std::fs::read_dir(state)
            .map(|d| {
                d.filter_map(Result::ok)
                    .filter_map(|e| e.metadata().ok())
                    .filter(|m| m.is_file())
                    .map(|m| m.len())
                    .sum()
            })
            .unwrap_or(0)
    } else {
        std::fs::metadata(state).map_or(0, |m| m.len())
    }
}
