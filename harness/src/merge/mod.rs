//! `hookstorm merge DIR...`: the folders of N shards become one report
//! with one verdict.
//!
//! Bench shards sent disjoint keys to one receiver, so the verdict comes
//! from the checker over the union of their histories
//! ([`crate::check::check_histories`]) against the state read once, here,
//! after every shard finished: the merge is given the target and reads the
//! state itself. Without a target the verdict is `unknown`: a state a shard
//! read could predate another shard's last delivery, so it proves nothing
//! about the union. Latency comes from the shards' histograms merged
//! bucket by bucket (never averaged percentiles); throughput is summed per
//! wall-clock second, lined up by each shard's start.
//!
//! Run shards ran disjoint shares of the scenario list, each against its
//! own receiver (a run resets the state before every scenario, so two run
//! shards must not share one), and each scenario was checked against the
//! state read after it: the merge unions their scenario reports into one
//! `report.json`, naming the shard of each.
//!
//! Shards that check nothing even alone (a null-receiver bench: the null
//! receiver stores nothing, so there is no state to read) merge as one such
//! bench does: the check is skipped, not unknown, and the exit code is 0
//! unless a `--threshold` over the merged numbers fails.
//!
//! A shard that is missing, still `running` (it died) or interrupted makes
//! the verdict `unknown`, never `pass`; for bench shards even a `fail` (the
//! dead shard's rows are in the state but not in any history read), for
//! run shards a `fail` of a scenario that was checked stays a `fail`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::bench::latency::{Percentiles, Recorder, RecorderData};
use crate::bench::threshold::{Measured, Threshold};
use crate::check::{check_partitioned, CheckOptions, InvariantId, Partitioning, Verdict};
use crate::report::RunReport;
use crate::shard::{
    marked_folders, ManifestError, ShardManifest, ShardStatus, LATENCY_FILE, MANIFEST, SEARCH_DEPTH,
};
use crate::state::probe::Probe;

pub mod admit;
mod merged;
mod partitions;

pub use merged::{BenchTotals, Finding, MergeError, MergeOutcome, MergeReport, ShardEntry};

/// How to merge.
#[derive(Debug)]
pub struct MergeOptions {
    /// Shard folders, or folders whose subfolders are shard folders.
    pub dirs: Vec<PathBuf>,
    /// Shards expected (default: the count the shards were told).
    pub expect: Option<u32>,
    /// Reads the receiver's state once (bench shards); `None`: unknown.
    pub probe: Option<Probe>,
    /// How long to wait for the inbox to drain before reading it.
    pub drain: Duration,
    /// The profile's answer time limit, for the checker.
    pub answer_limit: Duration,
    /// Reports folder; the merge writes `<out>/<merge-id>/`.
    pub out_dir: PathBuf,
    /// Limits the merged bench must keep (`p99<100ms`, `rate>5000/s`);
    /// one that does not hold fails a verdict that would pass.
    pub thresholds: Vec<Threshold>,
    /// The key every shard and partition must be signed with (`--key`).
    pub key: Option<crate::report::dsse::PublicKey>,
}

/// Finds the shard folders under the given ones. A given folder with a
/// report but no `shard.json` is kept: the merge reports it as a shard
/// that did not finish.
fn shard_dirs(dirs: &[PathBuf]) -> Result<Vec<PathBuf>, MergeError> {
    let mut out = Vec::new();
    for d in dirs {
        if !d.is_dir() {
            return Err(MergeError::Inconsistent(format!(
                "{}: not a folder (hint: give the shards' report folders, or the folder holding them)",
                d.display()
            )));
        }
        if d.join("bench.json").is_file() || d.join("report.json").is_file() {
            out.push(d.clone());
            continue;
        }
        let before = out.len();
        marked_folders(d, MANIFEST, SEARCH_DEPTH, &mut out)
            .map_err(|e| MergeError::Inconsistent(format!("{}: {e}", d.display())))?;
        if out.len() == before {
            return Err(MergeError::Inconsistent(format!(
                "{}: no {MANIFEST} in it or below it (hint: run the shards with --shard I/N)",
                d.display()
            )));
        }
    }
    Ok(out)
}

/// The history files of the shards at or below `dirs`, in the order a
/// merge reads them (by shard index), with each shard's manifest: what
/// `hookstorm check` over shard folders checks, so its line numbers are
/// the merge's. Each shard is admitted first ([`admit::shard`]: its seal,
/// and with `key` its signature).
pub fn shard_histories(
    dirs: &[PathBuf],
    key: Option<&crate::report::dsse::PublicKey>,
) -> Result<Vec<(PathBuf, ShardManifest)>, MergeError> {
    let mut found: BTreeMap<u32, (PathBuf, ShardManifest)> = BTreeMap::new();
    for dir in shard_dirs(dirs)? {
        let m = ShardManifest::read(&dir).map_err(|e| {
            MergeError::Inconsistent(format!("{}: no readable {MANIFEST} ({e})", dir.display()))
        })?;
        admit::shard(&dir, Some(&m), key)?;
        if let Some((other, _)) = found.get(&m.shard.index) {
            return Err(MergeError::Inconsistent(format!(
                "shard {} twice: {} and {}",
                m.shard.index,
                other.display(),
                dir.display()
            )));
        }
        found.insert(m.shard.index, (dir.join(&m.history), m));
    }
    Ok(found.into_values().collect())
}

/// Merges the shards' folders and writes `merge.json` (and, for run
/// shards, the union `report.json`, `junit.xml` and `summary.md`).
pub async fn merge(opts: &MergeOptions) -> Result<MergeOutcome, MergeError> {
    let dirs = match shard_dirs(&opts.dirs) {
        Ok(dirs) => dirs,
        Err(e) => {
            // No shard, but the partitions of a check: join them alone.
            let parts = partitions::find(&opts.dirs)?;
            if parts.is_empty() {
                return Err(e);
            }
            return merge_partitions(opts, &parts);
        }
    };
    let mut found: BTreeMap<u32, (PathBuf, ShardManifest)> = BTreeMap::new();
    let mut unknown = Vec::new();
    let mut first: Option<ShardManifest> = None;
    for dir in dirs {
        let m = match ShardManifest::read(&dir) {
            Ok(m) => m,
            Err(e @ ManifestError::Unreadable { .. }) => {
                admit::shard(&dir, None, opts.key.as_ref())?;
                unknown.push(format!(
                    "{}: no readable {MANIFEST}, the shard did not finish ({e})",
                    dir.display()
                ));
                continue;
            }
            Err(e @ ManifestError::Malformed { .. }) => {
                return Err(MergeError::Inconsistent(format!(
                    "{e} (a shard writes its manifest whole: this folder was changed after the shard finished; merge the shards' own output)"
                )));
            }
        };
        admit::shard(&dir, Some(&m), opts.key.as_ref())?;
        if let Some(f) = &first {
            if (f.kind.as_str(), f.shard.count, f.run_seed)
                != (m.kind.as_str(), m.shard.count, m.run_seed)
            {
                return Err(MergeError::Inconsistent(format!(
                    "{} is shard {} of a {} run with seed {}, but {} came first with {} shards, {} and seed {} (hint: merge the shards of one run)",
                    dir.display(), m.shard, m.kind, m.run_seed, f.shard.count, f.shard.count, f.kind, f.run_seed
                )));
            }
        }
        if let Some((other, _)) = found.get(&m.shard.index) {
            return Err(MergeError::Inconsistent(format!(
                "shard {} twice: {} and {}",
                m.shard.index,
                other.display(),
                dir.display()
            )));
        }
        first.get_or_insert_with(|| m.clone());
        found.insert(m.shard.index, (dir, m));
    }
    let Some(first) = first else {
        return Err(MergeError::Inconsistent(format!(
            "no shard finished far enough to be merged: {}",
            unknown.join("; ")
        )));
    };
    let expected = opts.expect.unwrap_or(first.shard.count);
    let shards = shard_entries(
        &found,
        expected.max(first.shard.count),
        expected,
        &mut unknown,
    );
    let mut report = MergeReport::new(&first.kind, first.run_seed, expected, shards, unknown);
    let stem = format!(
        "{}-merge-{}-{:08x}",
        chrono::Utc::now().format("%Y%m%d-%H%M%S"),
        first.kind,
        first.run_seed as u32
    );
    let (_, dir) = crate::report::folder::create_unique(&opts.out_dir, &stem)
        .map_err(|e| MergeError::Io(format!("{}: {e}", opts.out_dir.display())))?;
    match first.kind.as_str() {
        "bench" => merge_bench(opts, &found, &dir, &mut report).await?,
        _ => merge_runs(&found, &dir, &mut report)?,
    }
    // A bench shard that did not finish leaves rows in the state its history
    // does not explain (and keys it acknowledged unrecorded), so nothing
    // the checker says about the union holds: unknown, even over a fail. A
    // run shard's scenarios were checked on their own, so a fail stays one.
    let self_contained = report.kind == "run" && report.verdict == Verdict::Fail;
    if !report.unknown_because.is_empty() && !self_contained {
        report.verdict = Verdict::Unknown;
    }
    // As in one bench: a broken threshold fails a verdict that passed.
    if report.thresholds.iter().any(|t| !t.passed)
        && matches!(report.verdict, Verdict::Pass | Verdict::NonStrict)
    {
        report.verdict = Verdict::Fail;
    }
    let json = serde_json::to_vec_pretty(&report).map_err(|e| MergeError::Io(e.to_string()))?;
    let path = dir.join("merge.json");
    std::fs::write(&path, json).map_err(|e| MergeError::Io(format!("{}: {e}", path.display())))?;
    Ok(MergeOutcome { report, dir })
}

/// One entry per shard index below `slots`, as its manifest says it
/// ended; a shard missing, still running or interrupted adds why to
/// `unknown`.
fn shard_entries(
    found: &BTreeMap<u32, (PathBuf, ShardManifest)>,
    slots: u32,
    expected: u32,
    unknown: &mut Vec<String>,
) -> Vec<ShardEntry> {
    let mut shards = Vec::new();
    for index in 0..slots {
        let entry = match found.get(&index) {
            None => {
                unknown.push(format!("shard {index} of {expected} is missing"));
                ShardEntry {
                    index,
                    dir: PathBuf::new(),
                    status: "missing".into(),
                    count: 0,
                }
            }
            Some((dir, m)) => {
                let status = match m.status {
                    ShardStatus::Finished => "finished",
                    ShardStatus::Running => {
                        unknown.push(format!(
                            "shard {index} never finished ({} still says running: it died)",
                            dir.join(MANIFEST).display()
                        ));
                        "running"
                    }
                    ShardStatus::Interrupted => {
                        unknown.push(format!("shard {index} was interrupted"));
                        "interrupted"
                    }
                };
                ShardEntry {
                    index,
                    dir: dir.clone(),
                    status: status.into(),
                    count: m.planned,
                }
            }
        };
        shards.push(entry);
    }
    shards
}

/// The merge of partitions of a check without shards (`check --partition`
/// over any histories): `merge.json` with the joined check's verdict.
fn merge_partitions(opts: &MergeOptions, parts: &[PathBuf]) -> Result<MergeOutcome, MergeError> {
    let mut report = MergeReport::new("check", 0, 0, Vec::new(), Vec::new());
    let stem = format!("{}-merge-check", chrono::Utc::now().format("%Y%m%d-%H%M%S"));
    let (_, dir) = crate::report::folder::create_unique(&opts.out_dir, &stem)
        .map_err(|e| MergeError::Io(format!("{}: {e}", opts.out_dir.display())))?;
    partitions::join_into(&mut report, parts, &[], &[], &dir, opts.key.as_ref())?;
    if !report.unknown_because.is_empty() {
        report.verdict = Verdict::Unknown;
    }
    let json = serde_json::to_vec_pretty(&report).map_err(|e| MergeError::Io(e.to_string()))?;
    let path = dir.join("merge.json");
    std::fs::write(&path, json).map_err(|e| MergeError::Io(format!("{}: {e}", path.display())))?;
    Ok(MergeOutcome { report, dir })
}

type Found = BTreeMap<u32, (PathBuf, ShardManifest)>;

/// Merges bench shards: their totals, the thresholds held over them,
/// and the check of the union of their histories.
async fn merge_bench(
    opts: &MergeOptions,
    found: &Found,
    dir: &Path,
    report: &mut MergeReport,
) -> Result<(), MergeError> {
    let (totals, p95_ms, error_rate) = add_up(found, report);
    report.thresholds = opts
        .thresholds
        .iter()
        .map(|t| {
            t.hold(&Measured {
                latency: &totals.latency,
                p95_ms,
                error_rate,
                achieved_rate: totals.achieved_rate,
                requests: totals.requests,
            })
        })
        .collect();
    report.bench = Some(totals);
    report
        .coverage
        .insert(crate::bench::load::SCENARIO.to_string(), found.len() as u32);

    check_union(opts, found, dir, report).await
}

/// The finished shards' figures added up: requests, rates, statuses, the
/// series lined up on each shard's start, and latency from the merged
/// recorders; with the 95th percentile (ms) and the error rate. A shard
/// whose figures cannot be read makes the merge unknown.
fn add_up(found: &Found, report: &mut MergeReport) -> (BenchTotals, f64, f64) {
    let mut latency = Recorder::default();
    let mut totals = BenchTotals {
        requests: 0,
        warmup_requests: 0,
        achieved_rate: 0.0,
        latency: Percentiles::default(),
        latency_uncorrected: Percentiles::default(),
        throughput: Vec::new(),
        statuses: BTreeMap::new(),
    };
    // Requests without a success status, summed from each shard's share.
    let mut failed = 0.0;
    let start0 = found
        .values()
        .filter_map(|(_, m)| m.phase_start_ms)
        .min()
        .unwrap_or(0);
    for (index, (sdir, m)) in found {
        if m.status != ShardStatus::Finished {
            continue;
        }
        let bad = |what: String| format!("shard {index}: {what}");
        let hdr = sdir.join(LATENCY_FILE);
        match std::fs::read_to_string(&hdr)
            .map_err(|e| e.to_string())
            .and_then(|t| serde_json::from_str::<RecorderData>(&t).map_err(|e| e.to_string()))
            .and_then(|d| d.decode().map_err(|e| e.to_string()))
        {
            Ok(r) => latency.merge(&r),
            Err(e) => report
                .unknown_because
                .push(bad(format!("{}: {e}", hdr.display()))),
        }
        let bench = sdir.join("bench.json");
        let v: serde_json::Value = match std::fs::read_to_string(&bench)
            .map_err(|e| e.to_string())
            .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()))
        {
            Ok(v) => v,
            Err(e) => {
                report
                    .unknown_because
                    .push(bad(format!("{}: {e}", bench.display())));
                continue;
            }
        };
        let n = |k: &str| v.get(k).and_then(serde_json::Value::as_u64).unwrap_or(0);
        totals.requests += n("requests");
        failed += n("requests") as f64
            * v.get("error_rate")
                .and_then(serde_json::Value::as_f64)
                .unwrap_or(0.0);
        totals.warmup_requests += n("warmup_requests");
        totals.achieved_rate += v
            .get("achieved_rate")
            .and_then(serde_json::Value::as_f64)
            .unwrap_or(0.0);
        if let Some(st) = v.get("statuses").and_then(|s| s.as_object()) {
            for (k, c) in st {
                *totals.statuses.entry(k.clone()).or_default() += c.as_u64().unwrap_or(0);
            }
        }
        // Seconds are lined up on each shard's start by the wall clock:
        // the one place the machines' clocks matter.
        let offset =
            ((m.phase_start_ms.unwrap_or(start0) - start0) as f64 / 1000.0).round() as usize;
        let series = v.get("throughput").and_then(|t| t.as_array());
        for (i, c) in series.into_iter().flatten().enumerate() {
            let at = offset + i;
            if totals.throughput.len() <= at {
                totals.throughput.resize(at + 1, 0);
            }
            totals.throughput[at] += c.as_u64().unwrap_or(0);
        }
    }
    totals.latency = Percentiles::of(&latency.corrected);
    totals.latency_uncorrected = if latency.uncorrected.is_empty() {
        totals.latency
    } else {
        Percentiles::of(&latency.uncorrected)
    };
    let p95_ms = if latency.corrected.is_empty() {
        0.0
    } else {
        latency.corrected.value_at_quantile(0.95) as f64 / 1000.0
    };
    let error_rate = failed / (totals.requests.max(1) as f64);
    (totals, p95_ms, error_rate)
}

/// Checks the union of the shards' histories: the partitions' join when
/// other processes checked it, else the receiver's state read once every
/// shard finished (unknown without a target to read it from).
async fn check_union(
    opts: &MergeOptions,
    found: &Found,
    dir: &Path,
    report: &mut MergeReport,
) -> Result<(), MergeError> {
    // Partitions of the check, done by other processes: the verdict is
    // their join, and the state is not read here.
    let parts = partitions::find(&opts.dirs)?;
    if !parts.is_empty() {
        let histories: Vec<PathBuf> = found.values().map(|(d, m)| d.join(&m.history)).collect();
        let indices: Vec<u32> = found.keys().copied().collect();
        return partitions::join_into(report, &parts, &histories, &indices, dir, opts.key.as_ref());
    }
    let Some(probe) = &opts.probe else {
        // Shards that check nothing even alone: as one such bench, the
        // check is skipped and the verdict is the thresholds'.
        let unchecked: Option<Vec<&str>> = found
            .values()
            .map(|(_, m)| m.unchecked.as_deref())
            .collect();
        if let Some(why) = unchecked.and_then(|w| w.first().copied()) {
            report.check_skipped = Some(why.to_string());
            report.verdict = Verdict::Pass;
            return Ok(());
        }
        report.unknown_because.push(
            "no target given: the receiver's state was not read after every shard finished (hint: hookstorm merge --target FILE)".into(),
        );
        return Ok(());
    };
    let histories: Vec<PathBuf> = found.values().map(|(d, m)| d.join(&m.history)).collect();
    let indices: Vec<u32> = found.keys().copied().collect();
    // The state streams to a file, and the check spills partitions next
    // to it: the merge's memory does not grow with the run.
    let state_path = dir.join("state.json");
    let drained = match probe.wait_drained_to(opts.drain, &state_path).await {
        Ok((drained, _rows)) => drained,
        Err(e) => {
            report
                .unknown_because
                .push(format!("cannot read the receiver's state: {e}"));
            return Ok(());
        }
    };
    let copts = CheckOptions {
        invariants: InvariantId::ALL.to_vec(),
        strict: false,
        answer_limit: opts.answer_limit,
        drained,
        reconciled: false,
        vocabulary: found
            .values()
            .next()
            .map(|(_, m)| crate::profile::vocabulary::Vocabulary::of_name(&m.profile))
            .unwrap_or_default(),
    };
    let how = Partitioning {
        spill_dir: Some(dir.to_path_buf()),
        ..Partitioning::default()
    };
    let res = tokio::task::spawn_blocking(move || {
        check_partitioned(
            &histories,
            &state_path,
            Some(crate::bench::load::SCENARIO),
            &copts,
            &how,
        )
    })
    .await
    .map_err(|e| MergeError::Io(e.to_string()))?;
    match res {
        Ok(multi) => partitions::record(report, &multi, &indices),
        Err(e) => report
            .unknown_because
            .push(format!("the checker could not read the histories: {e}")),
    }
    Ok(())
}

fn merge_runs(found: &Found, dir: &Path, report: &mut MergeReport) -> Result<(), MergeError> {
    let mut union: Option<RunReport> = None;
    for (index, (sdir, m)) in found {
        let path = sdir.join("report.json");
        let r: RunReport = match std::fs::read_to_string(&path)
            .map_err(|e| e.to_string())
            .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()))
        {
            Ok(r) => r,
            Err(e) => {
                report
                    .unknown_because
                    .push(format!("shard {index}: {}: {e}", path.display()));
                continue;
            }
        };
        for name in &m.scenarios {
            if !r.scenarios.iter().any(|s| &s.name == name) {
                report
                    .unknown_because
                    .push(format!("shard {index}: scenario {name} has no result"));
            }
        }
        for s in &r.scenarios {
            report.coverage.insert(s.name.clone(), *index);
            for res in &s.check.results {
                for e in &res.evidence {
                    report.findings.push(Finding {
                        scenario: s.name.clone(),
                        invariant: res.id.code().to_string(),
                        verdict: res.verdict,
                        key: e.key.clone(),
                        what: e.what.clone(),
                        shard: Some(*index),
                        lines: e.lines.clone(),
                    });
                }
            }
        }
        match &mut union {
            None => {
                let mut first = r;
                first.run_id = dir
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                for s in &mut first.scenarios {
                    rebase(s, sdir, dir, *index)?;
                }
                union = Some(first);
            }
            Some(u) => {
                u.duration_s = u.duration_s.max(r.duration_s);
                u.interrupted |= r.interrupted;
                u.require_all |= r.require_all;
                for mut s in r.scenarios {
                    rebase(&mut s, sdir, dir, *index)?;
                    u.scenarios.push(s);
                }
            }
        }
    }
    if let Some(u) = union {
        report.verdict = u.verdict();
        crate::report::write_reports(dir, &u).map_err(|e| MergeError::Io(e.to_string()))?;
    }
    Ok(())
}

/// A shard's scenario with its history and state brought into the merged
/// folder (`shard-<index>/<scenario>/…`, linked where the file system
/// allows, else copied) and its paths made to name them: the merged folder
/// then holds, and its seal digests, every file its verdicts come from,
/// so `hookstorm verify` checks it like a run's folder.
fn rebase(
    s: &mut crate::report::ScenarioReport,
    sdir: &Path,
    dir: &Path,
    index: u32,
) -> Result<(), MergeError> {
    let bring = |rel: &str| -> Result<String, MergeError> {
        let from = sdir.join(rel);
        let inside = format!("shard-{index}/{rel}");
        let to = dir.join(&inside);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| MergeError::Io(format!("{}: {e}", parent.display())))?;
        }
        std::fs::hard_link(&from, &to)
            .or_else(|_| std::fs::copy(&from, &to).map(|_| ()))
            .map_err(|e| MergeError::Io(format!("{} -> {}: {e}", from.display(), to.display())))?;
        Ok(inside)
    };
    s.history = bring(&s.history)?;
    s.state = s.state.take().map(|p| bring(&p)).transpose()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shard::Shard;

    fn manifest(index: u32, count: u32, run_seed: u64, status: ShardStatus) -> ShardManifest {
        ShardManifest {
            kind: "bench".into(),
            shard: Shard { index, count },
            run_seed,
            seed: Shard { index, count }.seed(run_seed),
            status,
            profile: "answerline".into(),
            target: "test".into(),
            started_at: "2026-01-31T12:00:00Z".into(),
            phase_start_ms: Some(1_000 * i64::from(index)),
            scenarios: vec!["bench".into()],
            planned: 3,
            history: "history.jsonl".into(),
            unchecked: None,
            version: "0".into(),
        }
    }

    /// A bench shard folder with `latencies` (µs) and one second of throughput.
    fn shard_dir(root: &Path, m: &ShardManifest, latencies: &[u64]) -> PathBuf {
        let dir = root.join(format!("s{}", m.shard.index));
        std::fs::create_dir_all(&dir).unwrap();
        m.write(&dir).unwrap();
        let mut rec = Recorder::default();
        for l in latencies {
            rec.corrected.record(*l).unwrap();
        }
        std::fs::write(
            dir.join(LATENCY_FILE),
            serde_json::to_vec(&RecorderData::encode(&rec)).unwrap(),
        )
        .unwrap();
        let bench = serde_json::json!({
            "requests": latencies.len(),
            "warmup_requests": 0,
            "achieved_rate": latencies.len() as f64,
            "throughput": [latencies.len()],
            "statuses": {"204": latencies.len()},
        });
        std::fs::write(dir.join("bench.json"), bench.to_string()).unwrap();
        dir
    }

    fn opts(dirs: Vec<PathBuf>, out: &Path) -> MergeOptions {
        MergeOptions {
            dirs,
            expect: None,
            probe: None,
            drain: Duration::from_secs(1),
            answer_limit: Duration::from_secs(15),
            out_dir: out.to_path_buf(),
            thresholds: Vec::new(),
            key: None,
        }
    }

    #[tokio::test]
    async fn without_a_state_read_after_the_shards_the_verdict_is_unknown_but_latency_merges() {
        let root = tempfile::tempdir().unwrap();
        let a = shard_dir(
            root.path(),
            &manifest(0, 2, 7, ShardStatus::Finished),
            &[100, 200, 300],
        );
        let b = shard_dir(
            root.path(),
            &manifest(1, 2, 7, ShardStatus::Finished),
            &[5000],
        );
        let out = merge(&opts(vec![a, b], &root.path().join("out")))
            .await
            .unwrap();
        let r = &out.report;
        assert_eq!(r.verdict, Verdict::Unknown);
        assert!(r.unknown_because[0].contains("no target given"), "{r:?}");
        let b = r.bench.as_ref().unwrap();
        assert_eq!(b.requests, 4);
        assert_eq!(b.latency.count, 4);
        // The p99 of the union is the slow shard's value, which averaging
        // the shards' p99s (0.3 ms and 5 ms) would never give.
        assert!((b.latency.p99_ms - 5.0).abs() < 0.01, "{b:?}");
        // Shard 1 started a second later: its second is the union's second.
        assert_eq!(b.throughput, vec![3, 1]);
        assert!(out.dir.join("merge.json").is_file());
    }

    #[tokio::test]
    async fn null_shards_merge_with_the_check_skipped_and_gate_on_thresholds() {
        let root = tempfile::tempdir().unwrap();
        let mut dirs = Vec::new();
        for i in 0..2 {
            let mut m = manifest(i, 2, 7, ShardStatus::Finished);
            m.unchecked = Some("null receiver: it stores nothing".into());
            dirs.push(shard_dir(root.path(), &m, &[100, 200, 300]));
        }
        let out = merge(&opts(dirs.clone(), &root.path().join("out")))
            .await
            .unwrap();
        let r = &out.report;
        assert_eq!(r.verdict, Verdict::Pass, "{r:?}");
        assert_eq!(r.exit_code(), crate::exit::PASS);
        assert!(r.unknown_because.is_empty(), "{r:?}");
        assert!(r
            .check_skipped
            .as_deref()
            .unwrap()
            .contains("null receiver"));
        assert!(r.console().contains("check skipped"), "{}", r.console());

        let mut o = opts(dirs, &root.path().join("out"));
        o.thresholds = vec!["rate>1/s".parse().unwrap(), "p99<1ms".parse().unwrap()];
        assert_eq!(merge(&o).await.unwrap().report.verdict, Verdict::Pass);
        o.thresholds = vec!["rate>1000000/s".parse().unwrap()];
        let r = merge(&o).await.unwrap().report;
        assert_eq!(r.verdict, Verdict::Fail, "{r:?}");
        assert!(!r.thresholds[0].passed && r.console().contains("BROKEN"));
    }

    #[tokio::test]
    async fn with_a_key_an_unsealed_bench_shard_is_refused_by_its_folder() {
        let root = tempfile::tempdir().unwrap();
        let a = shard_dir(
            root.path(),
            &manifest(0, 1, 7, ShardStatus::Finished),
            &[100],
        );
        let mut o = opts(vec![a.clone()], &root.path().join("out"));
        o.key = Some(
            crate::report::dsse::SigningKey::generate()
                .unwrap()
                .0
                .public(),
        );
        let err = merge(&o).await.unwrap_err();
        let said = err.to_string();
        assert!(matches!(err, MergeError::Refused(_)), "{said}");
        assert!(
            said.contains(&format!("{}: cannot be checked against --key", a.display())),
            "{said}"
        );
        // Without a key it merges as before.
        o.key = None;
        assert!(merge(&o).await.is_ok());
    }

    #[tokio::test]
    async fn a_sealed_bench_shard_with_its_history_deleted_or_its_figures_edited_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let mut dirs = Vec::new();
        for i in 0..2 {
            let mut m = manifest(i, 2, 7, ShardStatus::Finished);
            m.unchecked = Some("null receiver: it stores nothing".into());
            let d = shard_dir(root.path(), &m, &[100, 200]);
            std::fs::write(d.join("history.jsonl"), b"").unwrap();
            crate::bench::result::seal(&d).unwrap();
            dirs.push(d);
        }
        let o = opts(dirs.clone(), &root.path().join("out"));
        assert_eq!(merge(&o).await.unwrap().report.verdict, Verdict::Pass);
        let bench = dirs[0].join("bench.json");
        let mut v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&bench).unwrap()).unwrap();
        v["requests"] = 9_000.into();
        std::fs::write(&bench, v.to_string()).unwrap();
        let said = merge(&o).await.unwrap_err().to_string();
        assert!(
            said.contains("bench.json: changed since the folder was sealed"),
            "{said}"
        );
        std::fs::remove_file(dirs[1].join("history.jsonl")).unwrap();
        let o = opts(vec![dirs[1].clone()], &root.path().join("out"));
        let said = merge(&o).await.unwrap_err().to_string();
        assert!(
            said.contains("history.jsonl: sealed but unreadable"),
            "{said}"
        );
    }

    #[tokio::test]
    async fn missing_and_dead_shards_are_named_and_shards_of_other_runs_refused() {
        let root = tempfile::tempdir().unwrap();
        let a = shard_dir(
            root.path(),
            &manifest(0, 3, 7, ShardStatus::Finished),
            &[100],
        );
        let b = shard_dir(
            root.path(),
            &manifest(1, 3, 7, ShardStatus::Running),
            &[100],
        );
        let out = merge(&opts(
            vec![root.path().to_path_buf()],
            &root.path().join("out"),
        ))
        .await
        .unwrap();
        let status: Vec<&str> = out
            .report
            .shards
            .iter()
            .map(|s| s.status.as_str())
            .collect();
        assert_eq!(status, ["finished", "running", "missing"]);
        assert_eq!(out.report.verdict, Verdict::Unknown);
        let why = out.report.unknown_because.join("; ");
        assert!(
            why.contains("shard 1 never finished") && why.contains("shard 2 of 3 is missing"),
            "{why}"
        );

        let other = tempfile::tempdir().unwrap();
        let c = shard_dir(
            other.path(),
            &manifest(2, 3, 8, ShardStatus::Finished),
            &[100],
        );
        let err = merge(&opts(vec![a, b, c], &root.path().join("out")))
            .await
            .unwrap_err();
        assert!(
            err.to_string().contains("merge the shards of one run"),
            "{err}"
        );
    }
}
