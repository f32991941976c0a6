//! The check of a sharded run, done in partitions by other processes:
//! `hookstorm merge` finds their folders (`check --partition I/N` wrote
//! `partition.json` and `join.bin` in each), joins them into the run's
//! check ([`crate::check::spill::export::join`]) and takes its verdict, so
//! the merge never reads the histories or the state itself.
//!
//! The partitions must have checked the histories of the shards the merge
//! found, in the merge's order (their evidence names lines of those files);
//! a partition missing, or partitions of another check, make the verdict
//! unknown, never a pass.

use std::path::{Path, PathBuf};

use crate::check::spill::export::{self, JoinError, PARTITION_FILE};
use crate::check::MultiCheck;

use super::merged::{Finding, MergeError, MergeReport};
use crate::shard::{marked_folders, SEARCH_DEPTH};

/// The partition folders at or below `dirs`, sorted.
pub(super) fn find(dirs: &[PathBuf]) -> Result<Vec<PathBuf>, MergeError> {
    let mut out = Vec::new();
    for d in dirs.iter().filter(|d| d.is_dir()) {
        marked_folders(d, PARTITION_FILE, SEARCH_DEPTH, &mut out)
            .map_err(|e| MergeError::Inconsistent(format!("{}: {e}", d.display())))?;
    }
    Ok(out)
}

/// Joins the partitions in `parts` into `report`'s verdict. `histories`
/// are the shards' history files in the merge's order and `indices`
/// their shard indexes (empty when the merge joins partitions alone);
/// `spill` is where the join may spill. Each partition is admitted first
/// ([`super::admit::partition`]): one changed since it was written, or
/// not signed by `key`, refuses the merge, naming the file.
pub(super) fn join_into(
    report: &mut MergeReport,
    parts: &[PathBuf],
    histories: &[PathBuf],
    indices: &[u32],
    spill: &Path,
    key: Option<&crate::report::dsse::PublicKey>,
) -> Result<(), MergeError> {
    for part in parts {
        super::admit::partition(part, key)?;
    }
    let joined = match export::join(parts, spill) {
        Ok(j) => j,
        Err(e @ JoinError::Inconsistent(_)) => return Err(MergeError::Inconsistent(e.to_string())),
        Err(e) => {
            report.unknown_because.push(format!(
                "the partitions of the check could not be joined: {e}"
            ));
            return Ok(());
        }
    };
    let count = joined.count;
    report.partitions = Some(count);
    for i in &joined.missing {
        report
            .unknown_because
            .push(format!("partition {i}/{count} of the check is missing"));
    }
    if !histories.is_empty() && !same_files(&joined.check, histories) {
        report.unknown_because.push(format!(
            "the partitions checked other histories than the {} shard(s) found (hint: run `check --partition` over the same shard folders)",
            histories.len()
        ));
        return Ok(());
    }
    record(report, &joined.check, indices);
    Ok(())
}

/// Whether the check's sources are `histories`, in order: the same shard
/// folder and file names (the processes may have mounted them elsewhere).
fn same_files(check: &MultiCheck, histories: &[PathBuf]) -> bool {
    let tail = |p: &Path| -> Vec<String> {
        p.iter()
            .rev()
            .take(2)
            .map(|c| c.to_string_lossy().into_owned())
            .collect()
    };
    check.sources.len() == histories.len()
        && check
            .sources
            .iter()
            .zip(histories)
            .all(|(s, h)| tail(&s.path) == tail(h))
}

/// Takes the check's verdict and findings into `report`; `indices` are the
/// shard indexes of its sources, in order (their evidence lines are told
/// per shard).
pub(super) fn record(report: &mut MergeReport, multi: &MultiCheck, indices: &[u32]) {
    for w in &multi.check.warnings {
        report.unknown_because.push(format!("history: {w}"));
    }
    let Some(check) = multi.check.checks.first().cloned() else {
        report
            .unknown_because
            .push("the checker returned nothing".into());
        return;
    };
    for r in &check.results {
        for e in &r.evidence {
            let located: Vec<(usize, u64)> =
                e.lines.iter().filter_map(|l| multi.locate(*l)).collect();
            report.findings.push(Finding {
                scenario: check.scenario.clone(),
                invariant: r.id.code().to_string(),
                verdict: r.verdict,
                key: e.key.clone(),
                what: e.what.clone(),
                shard: located.first().and_then(|(i, _)| indices.get(*i).copied()),
                lines: located.iter().map(|(_, l)| *l).collect(),
            });
        }
    }
    report.verdict = check.verdict();
    report.check = Some(check);
}
