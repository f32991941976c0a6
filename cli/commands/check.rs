//! `hookstorm check`: re-checks stored histories without re-running
//! anything. An empty history is `unknown` (exit 2), never a pass; a
//! history cut off in its last line is checked up to the cut, with a
//! warning on stderr and in the output.
//!
//! `check HISTORY... STATE` checks one or more histories (files, shard
//! report folders, or folders holding them) against a state file;
//! `--target FILE` reads the state from the receiver instead, once its
//! inbox drained. Inputs larger than memory are checked in partitions
//! spilled to disk. `--partition I/N` checks one share of the keys and
//! writes it for `hookstorm merge` to join with the other N-1: the
//! processes of a sharded run check their partitions in parallel.

use std::path::{Path, PathBuf};
use std::time::Duration;

use hookstorm::check::spill::export::PartitionReport;
use hookstorm::check::{
    check_partitioned, check_share, CheckOptions, InvariantId, Partition, Partitioning,
    ScenarioCheck, Verdict,
};
use hookstorm::history::Event;
use hookstorm::profile::vocabulary::Vocabulary;
use hookstorm::report::console::paint;
use hookstorm::text::units::HumanDuration;

/// Arguments of `hookstorm check`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// HISTORY... STATE: history files (a history.jsonl, a shard's report
    /// folder, or a folder holding shard folders), then the receiver's
    /// state file; with --target, histories only.
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<PathBuf>,
    /// Only this scenario's events (default: `bench` for bench shards).
    #[arg(long)]
    scenario: Option<String>,
    /// Invariants to check, comma separated (default: all).
    #[arg(long, value_delimiter = ',')]
    invariants: Vec<String>,
    /// Non-strict deviations fail.
    #[arg(long)]
    strict: bool,
    /// The receiver's answer budget per attempt (default: the target's
    /// profile's, else 15s).
    #[arg(long)]
    answer_limit: Option<HumanDuration>,
    /// Read the state from the receiver this target file names, once its
    /// inbox drained, instead of a STATE file.
    #[arg(long, value_name = "FILE")]
    target: Option<PathBuf>,
    /// With --target: how long to wait for the inbox to drain.
    #[arg(long, default_value = "60s")]
    drain: HumanDuration,
    /// Check only partition I of N (I from 0), and write what it found to
    /// `<out>/check-partIofN/` for `hookstorm merge` to join. `N` alone
    /// takes the index from $JOB_COMPLETION_INDEX (a Kubernetes Indexed Job).
    #[arg(long, value_name = "I/N")]
    partition: Option<String>,
    /// Reports folder (for --partition, and the state --target reads).
    #[arg(long, default_value = "reports")]
    out: PathBuf,
    /// Partitions within this process (default: as many as the inputs'
    /// size asks for; one, in memory, for inputs that fit).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=4096))]
    partitions: Option<u32>,
    /// Where the partitions are spilled (default: the first history's folder).
    #[arg(long, value_name = "DIR")]
    spill_dir: Option<PathBuf>,
    /// The public key (PEM) every shard folder read must be signed with.
    #[arg(long, value_name = "PUB")]
    key: Option<PathBuf>,
}

/// The histories the paths name: files as they are, shard folders (or
/// folders holding them) in shard order; and whether they are all bench
/// shards.
fn histories(
    paths: &[PathBuf],
    key: Option<&hookstorm::report::dsse::PublicKey>,
) -> Result<(Vec<PathBuf>, bool), hookstorm::merge::MergeError> {
    let (mut out, mut benches, mut shards) = (Vec::new(), 0usize, 0usize);
    for p in paths {
        if !p.is_dir() {
            out.push(p.clone());
            continue;
        }
        if p.join("history.jsonl").is_file() && !p.join(hookstorm::shard::MANIFEST).is_file() {
            out.push(p.join("history.jsonl"));
            continue;
        }
        let found = hookstorm::merge::shard_histories(std::slice::from_ref(p), key)?;
        for (history, m) in found {
            shards += 1;
            benches += usize::from(m.kind == "bench");
            out.push(history);
        }
    }
    Ok((out, shards > 0 && benches == shards))
}

/// Checks and prints one line per invariant (or, for one partition, what it wrote).
pub fn run(args: Args) -> anyhow::Result<i32> {
    let mut invariants = Vec::new();
    for s in &args.invariants {
        match s.parse::<InvariantId>() {
            Ok(i) => invariants.push(i),
            Err(e) => return Ok(super::usage_error(e)),
        }
    }
    if invariants.is_empty() {
        invariants = InvariantId::ALL.to_vec();
    }
    let partition = match args.partition.as_deref().map(partition_of) {
        None => None,
        Some(Ok(p)) => Some(p),
        Some(Err(e)) => return Ok(super::usage_error(e)),
    };
    let (history_paths, state_arg) = match &args.target {
        Some(_) => (&args.paths[..], None),
        None if args.paths.len() < 2 => {
            return Ok(super::usage_error(
                "check takes HISTORY... STATE (hint: or --target FILE to read the state from the receiver)",
            ))
        }
        None => {
            let (state, h) = args.paths.split_last().expect("two or more");
            (h, Some(state.clone()))
        }
    };
    let (key, signing) = match keys_of(&args, partition.is_some()) {
        Ok(k) => k,
        Err(code) => return Ok(code),
    };
    let (histories, benches) = match histories(history_paths, key.as_ref()) {
        Ok(h) => h,
        Err(e @ hookstorm::merge::MergeError::Refused(_)) => {
            errln!("error: {e}");
            return Ok(hookstorm::exit::FAIL);
        }
        Err(e) => return Ok(super::usage_error(e)),
    };
    let scenario = args
        .scenario
        .clone()
        .or_else(|| benches.then(|| hookstorm::bench::load::SCENARIO.to_string()));

    // The state: a file, or read from the receiver into one.
    let mut profile_limit = None;
    let mut drained = true;
    let _read; // the state read from the receiver, removed when the check is done
    let state = match (state_arg, &args.target) {
        (Some(s), _) => s,
        (None, Some(target)) => match state_of_target(target, &args.out, args.drain.0)? {
            Ok(read) => {
                profile_limit = Some(read.answer_limit);
                drained = read.drained;
                let path = read.file.path().to_path_buf();
                _read = read.file;
                path
            }
            Err(code) => return Ok(code),
        },
        (None, None) => unreachable!("the state is a path or read from the target"),
    };
    let answer_limit = args
        .answer_limit
        .map(|d| d.0)
        .or(profile_limit)
        .unwrap_or(Duration::from_secs(15))
        .max(Duration::from_millis(1));
    let opts = CheckOptions {
        invariants,
        strict: args.strict,
        answer_limit,
        drained,
        reconciled: false,
        vocabulary: words_of_run(histories.first().map(PathBuf::as_path)),
    };
    let how = Partitioning {
        partitions: args.partitions,
        share: None,
        spill_dir: args.spill_dir.clone(),
    };
    if let Some(share) = partition {
        let out = args
            .out
            .join(format!("check-part{}of{}", share.index, share.count));
        return match check_share(
            &histories,
            &state,
            scenario.as_deref(),
            &opts,
            &how,
            share,
            &out,
        ) {
            Ok(report) => {
                hookstorm::merge::admit::seal_partition(&out)
                    .map_err(|e| anyhow::anyhow!("sealing {}: {e}", out.display()))?;
                print_share(share, &report, &out);
                super::keys::sign(&out, signing.as_ref(), "check-partition", None, None)?;
                Ok(hookstorm::exit::PASS)
            }
            Err(e) => Ok(check_error(e)),
        };
    }
    let found = match check_partitioned(&histories, &state, scenario.as_deref(), &opts, &how) {
        Ok(c) => c.check,
        Err(e) => return Ok(check_error(e)),
    };
    for w in &found.warnings {
        errln!("warning: {w}");
        outln!("warning: {w}");
    }
    let worst = print_checks(&found.checks);
    Ok(worst.exit_code(args.strict))
}

/// `--key`'s public key, and the signing key in the environment when a
/// partition is written (it signs its folder); or the usage error's code.
fn keys_of(
    args: &Args,
    partition: bool,
) -> Result<
    (
        Option<hookstorm::report::dsse::PublicKey>,
        Option<hookstorm::report::dsse::SigningKey>,
    ),
    i32,
> {
    let key = args
        .key
        .as_deref()
        .map(hookstorm::report::attest::read_public_key)
        .transpose()
        .map_err(|e| super::usage_error(format!("--key {e}")))?;
    let signing = match partition {
        true => super::keys::signing_key()?,
        false => None,
    };
    Ok((key, signing))
}

/// The receiver's state, read once its inbox drained.
struct TargetState {
    /// The file it was read into (removed when dropped).
    file: tempfile::NamedTempFile,
    /// The target's profile's answer limit.
    answer_limit: Duration,
    /// Whether the inbox drained before the read.
    drained: bool,
}

/// Reads the state of the receiver `target` names into a file under
/// `out`, waiting up to `drain` for its inbox; or the exit code (3 an
/// unusable target, 2 a state that could not be read).
fn state_of_target(
    target: &Path,
    out: &Path,
    drain: Duration,
) -> anyhow::Result<Result<TargetState, i32>> {
    let t = match hookstorm::target::Target::from_file(target) {
        Ok(t) => t,
        Err(e) => {
            errln!("error: {e}");
            return Ok(Err(hookstorm::exit::TARGET_UNUSABLE));
        }
    };
    let probe = match t.probe() {
        Ok(p) => p,
        Err(e) => {
            errln!("error: {e}");
            return Ok(Err(hookstorm::exit::TARGET_UNUSABLE));
        }
    };
    std::fs::create_dir_all(out)?;
    let file = tempfile::Builder::new()
        .prefix(".hookstorm-state-")
        .suffix(".json")
        .tempfile_in(out)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let drain = drain.max(Duration::from_millis(100));
    match rt.block_on(probe.wait_drained_to(drain, file.path())) {
        Ok((drained, _rows)) => Ok(Ok(TargetState {
            file,
            answer_limit: t.profile.timeout,
            drained,
        })),
        Err(e) => {
            errln!("unknown: cannot read the receiver's state: {e}");
            Ok(Err(hookstorm::exit::UNKNOWN))
        }
    }
}

/// What a partition of a check wrote to `out`: the lines it read, what
/// its keys found so far, and how to join the partitions.
fn print_share(share: Partition, report: &PartitionReport, out: &Path) {
    let lines: u64 = report.sources.iter().map(|s| s.lines).sum();
    outln!(
        "partition {share}: {} history file(s), {lines} lines read; the verdict is the merge's",
        report.sources.len()
    );
    for (name, f) in &report.findings {
        let found: Vec<String> = f
            .partials
            .iter()
            .map(|(id, p)| format!("{} {}", id.code(), p.found.total))
            .collect();
        outln!(
            "  {name}: {} attempts of this partition's keys; findings so far: {}",
            f.counts.attempts,
            found.join(", ")
        );
    }
    outln!(
        "wrote {} (join the {} partitions: hookstorm merge FOLDERS...)",
        out.display(),
        share.count
    );
}

/// One line per invariant of every scenario checked, with its evidence:
/// the worst verdict.
fn print_checks(checks: &[ScenarioCheck]) -> Verdict {
    let color = crate::ui::color_stdout();
    let mut worst = Verdict::Pass;
    for c in checks {
        detail!(
            "{}: {} deliveries, {} attempts ({} ok, {} fail, {} info, {} dead)",
            c.scenario,
            c.counts.deliveries,
            c.counts.attempts,
            c.counts.ok,
            c.counts.fail,
            c.counts.info,
            c.counts.dead
        );
        for r in &c.results {
            outln!(
                "{:<14} {:<24} {} {}",
                c.scenario,
                r.id.to_string(),
                paint(&format!("{:<10}", r.verdict.to_string()), r.verdict, color),
                r.summary
            );
            for e in &r.evidence {
                outln!(
                    "{:<14} {:<24} {:<10}   {} {} (history lines {:?})",
                    "",
                    "",
                    "",
                    e.key,
                    e.what,
                    e.lines
                );
            }
        }
        worst = worst.worst(c.verdict());
    }
    worst
}

/// `--partition I/N`, or `N` with the index from the environment (as
/// `--shard` takes it).
fn partition_of(s: &str) -> Result<Partition, String> {
    let shard =
        hookstorm::shard::Shard::parse_with_env(s, |v| std::env::var(v).ok()).map_err(|e| {
            e.to_string()
                .replace("SHARD", "PARTITION")
                .replace("--shard", "--partition")
        })?;
    let p = Partition {
        index: shard.index,
        count: shard.count,
    };
    format!("{}/{}", p.index, p.count).parse::<Partition>()
}

/// The exit code of a check that could not read its inputs: a history
/// line it cannot read or place leaves the verdict undecided (unknown,
/// naming the line); anything else makes the inputs unusable.
fn check_error(e: hookstorm::check::CheckError) -> i32 {
    match e {
        e @ hookstorm::check::CheckError::History { .. } => {
            errln!("unknown: {e}");
            hookstorm::exit::UNKNOWN
        }
        e => {
            errln!("error: {e}");
            hookstorm::exit::TARGET_UNUSABLE
        }
    }
}

/// The words of the profile the history's run header names (the
/// answerline's when the history has no header).
fn words_of_run(history: Option<&Path>) -> Vocabulary {
    // Only the first event is needed: the first line, read within its budget.
    let first = history
        .and_then(|h| hookstorm::history::read(h).ok())
        .and_then(|mut events| events.next()?.ok());
    match first {
        Some(Event::Run(header)) => Vocabulary::of_name(&header.profile),
        _ => Vocabulary::answerline(),
    }
}
