//! How a check is cut up: the partitions' sizes, and how many a check of
//! given inputs needs. A leaf of the check in partitions.
//!
//! The check in memory is the quicker of the two as long as it fits: it
//! reads and folds in one pass, where a check in partitions also writes
//! and reads back what it spilled (about 1.4 times the CPU at a million
//! attempts). What it holds grows with the distinct keys, not the lines,
//! so the choice is made on an estimate of the keys ([`estimate_keys`]):
//! a history of retries (several lines a key) stays in memory far longer
//! than one of first attempts only.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use rustc_hash::FxHashSet;

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

/// The most distinct keys a check holds in memory: read on two threads,
/// each part's fold may name every key, with their state rows, records
/// and grading about 300 bytes a key at that size (200,000 keys: 56 MiB
/// peak), so well under 256 MiB. Past it, the check partitions.
pub const IN_MEMORY_KEYS: u64 = 400_000;

/// The most state bytes a check holds in memory (its rows as ids).
pub const IN_MEMORY_STATE: u64 = 48 << 20;

/// Bytes of history read at each of the places [`estimate_keys`] samples.
const SAMPLE_WINDOW: u64 = 256 << 10;

/// Places a history is sampled at.
const SAMPLES: u64 = 8;

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

/// How many partitions a check of `histories` against `state` needs in
/// this process: one (in memory) when the estimated keys and the state
/// fit ([`IN_MEMORY_KEYS`], [`IN_MEMORY_STATE`]), else as many as the
/// inputs' size asks for ([`partitions_for`]). A share of a partitioned
/// check always spills (its records for I5 and I6 go to the merge).
pub fn partitions_needed(histories: &[PathBuf], state: &Path, share: Option<Partition>) -> u32 {
    let history: u64 = histories
        .iter()
        .map(|h| std::fs::metadata(h).map_or(0, |m| m.len()))
        .sum();
    choose(history, state_bytes(state), share, || {
        estimate_keys(histories)
    })
}

/// [`partitions_needed`] for inputs of these sizes, `keys` estimating the
/// distinct keys when the size alone does not decide.
fn choose(history: u64, state: u64, share: Option<Partition>, keys: impl FnOnce() -> u64) -> u32 {
    let by_size = partitions_for(history, state, share);
    if share.is_none() && by_size > 1 && state <= IN_MEMORY_STATE && keys() <= IN_MEMORY_KEYS {
        return 1;
    }
    by_size
}

/// An upper estimate of the distinct keys in `histories`: each file is
/// sampled at [`SAMPLES`] places, and its size times the densest sample's
/// distinct keys per byte is its estimate. A history whose keys repeat
/// close together (retries) samples sparse; one of first attempts, or of
/// retries coming round by round, samples dense (every line a new key),
/// which is the safe side: it is then checked in partitions.
pub fn estimate_keys(histories: &[PathBuf]) -> u64 {
    histories.iter().map(|h| estimate_file(h)).sum()
}

fn estimate_file(path: &Path) -> u64 {
    let Ok(mut file) = std::fs::File::open(path) else {
        return 0;
    };
    let size = file.metadata().map_or(0, |m| m.len());
    if size == 0 {
        return 0;
    }
    let mut densest = 0f64;
    let mut buf = Vec::with_capacity(SAMPLE_WINDOW as usize);
    let places = if size <= SAMPLE_WINDOW * SAMPLES {
        1
    } else {
        SAMPLES
    };
    for i in 0..places {
        let at = size * i / places;
        let window = if places == 1 { size } else { SAMPLE_WINDOW };
        buf.clear();
        if file.seek(SeekFrom::Start(at)).is_err()
            || (&mut file).take(window).read_to_end(&mut buf).is_err()
        {
            continue;
        }
        // Whole lines only: past the first newline unless at the start.
        let from = if at == 0 {
            0
        } else {
            match memchr::memchr(b'\n', &buf) {
                Some(nl) => nl + 1,
                None => continue,
            }
        };
        let mut keys: FxHashSet<u64> = FxHashSet::default();
        let mut bytes = 0usize;
        for line in buf[from..].split_inclusive(|&b| b == b'\n') {
            if !line.ends_with(b"\n") {
                break;
            }
            bytes += line.len();
            let key = std::str::from_utf8(line)
                .ok()
                .and_then(crate::history::scan::parse)
                .and_then(|r| r.key.map(|k| super::route::hash(&k)));
            if let Some(k) = key {
                keys.insert(k);
            }
        }
        if bytes > 0 {
            densest = densest.max(keys.len() as f64 / bytes as f64);
        }
    }
    (densest * size as f64).ceil() as u64
}

/// The size of a state argument: a file's, or a folder's files'.
fn state_bytes(state: &Path) -> u64 {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// `keys` keys × `attempts` lines, each key's lines together or
    /// (`spread`) round by round.
    fn history(dir: &Path, keys: usize, attempts: usize, spread: bool) -> PathBuf {
        let path = dir.join(format!("h-{keys}-{attempts}-{spread}.jsonl"));
        let mut out = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        let order: Vec<(usize, usize)> = if spread {
            (0..attempts)
                .flat_map(|n| (0..keys).map(move |k| (k, n)))
                .collect()
        } else {
            (0..keys)
                .flat_map(|k| (0..attempts).map(move |n| (k, n)))
                .collect()
        };
        for (k, n) in order {
            writeln!(
                out,
                r#"{{"type":"attempt","scenario":"s","delivery":"d{k}","key":"tsk_{k:08}","account":"a","attempt":{},"round":0,"faults":[],"sent_at":"2026-11-29T10:00:00Z","status":503,"latency_ms":2.5,"error":null,"outcome":"info","intent":"genuine"}}"#,
                n + 1
            )
            .unwrap();
        }
        out.flush().unwrap();
        path
    }

    #[test]
    fn the_key_estimate_is_close_for_retries_together_and_never_low_for_retries_spread() {
        let dir = tempfile::tempdir().unwrap();
        for (keys, attempts) in [(40_000, 5), (30_000, 1)] {
            let together = estimate_keys(&[history(dir.path(), keys, attempts, false)]);
            let k = keys as u64;
            assert!(
                together >= k * 9 / 10 && together <= k * 11 / 10,
                "{keys}×{attempts}: {together}"
            );
            let spread = estimate_keys(&[history(dir.path(), keys, attempts, true)]);
            assert!(spread >= k * 9 / 10, "{keys}×{attempts} spread: {spread}");
        }
        assert_eq!(estimate_keys(&[dir.path().join("none.jsonl")]), 0);
    }

    #[test]
    fn a_history_of_few_keys_stays_in_memory_and_one_of_many_partitions() {
        let big = 10 * HISTORY_PER_PARTITION;
        let small_state = 1 << 20;
        // Retries of few keys: in memory, however long.
        assert_eq!(choose(big, small_state, None, || IN_MEMORY_KEYS), 1);
        // First attempts of many keys: by size.
        assert_eq!(choose(big, small_state, None, || IN_MEMORY_KEYS + 1), 10);
        // A large state partitions, whatever the keys.
        let big_state = IN_MEMORY_STATE + 1;
        assert_eq!(choose(big, big_state, None, || 1), 10);
        // What fits by size is never estimated.
        assert_eq!(
            choose(HISTORY_PER_PARTITION, 1, None, || panic!("estimated")),
            1
        );
        // A share always goes by size (its records go to the merge).
        let share = Some(Partition { index: 0, count: 2 });
        assert_eq!(choose(big, small_state, share, || 1), 5);
    }
}
