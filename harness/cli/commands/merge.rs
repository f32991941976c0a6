//! `hookstorm merge DIR...`: the report folders of N shards into one
//! report with one verdict (see the library's `merge` module).
//!
//! When the folders hold the partitions of a check (`hookstorm check
//! --partition I/N` over the shards), the merge joins them into the
//! verdict. Otherwise, with `--target` (the target file the bench shards
//! sent to) the merge reads the receiver's state once, now that every shard
//! finished, and checks the union of their histories against it (in
//! partitions spilled next to its report when they are large); without it
//! a bench merge's verdict is unknown, unless the shards checked nothing
//! even alone (`bench --null`): then, as for one such bench, the check is
//! skipped and only `--threshold` can fail the exit code. Partitions alone,
//! without shards, merge into the verdict of the check they cut up.

use std::path::PathBuf;
use std::time::Duration;

use hookstorm::exit;
use hookstorm::merge::{MergeError, MergeOptions};
use hookstorm::text::units::HumanDuration;

/// Arguments of `hookstorm merge`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Shard report folders, the check's partition folders
    /// (`check --partition`), or folders holding them.
    #[arg(required = true)]
    dirs: Vec<PathBuf>,
    /// The target file the shards sent to: its state is read once, after
    /// every shard finished, for the checker (not needed when the folders
    /// hold the check's partitions).
    #[arg(long)]
    target: Option<PathBuf>,
    /// Shards expected (default: the count the shards were given).
    #[arg(long)]
    expect: Option<u32>,
    /// How long to wait for the receiver to drain before reading its state.
    #[arg(long, default_value = "60s")]
    drain: HumanDuration,
    /// Reports folder.
    #[arg(long, default_value = "reports")]
    out: PathBuf,
    /// Print merge.json to stdout instead of the summary.
    #[arg(long)]
    json: bool,
    /// A limit the merged bench must keep, as `hookstorm bench` takes it:
    /// 'p99<100ms', 'errors<1%', 'rate>5000/s' (summed over the shards);
    /// repeatable. One that does not hold fails the exit code (1).
    #[arg(long = "threshold", value_name = "EXPR")]
    thresholds: Vec<hookstorm::bench::threshold::Threshold>,
}

/// Merges and returns the verdict's exit code.
pub fn run(args: Args) -> anyhow::Result<i32> {
    let (probe, answer_limit) = match &args.target {
        None => (
            None,
            hookstorm::profile::Profile::resolve(hookstorm::profile::DEFAULT_PROFILE)?.timeout,
        ),
        Some(path) => {
            let t = match hookstorm::target::Target::from_file(path) {
                Ok(t) => t,
                Err(e) => {
                    errln!("error: {e}");
                    return Ok(exit::TARGET_UNUSABLE);
                }
            };
            match t.probe() {
                Ok(p) => (Some(p), t.profile.timeout),
                Err(e) => {
                    errln!("error: {e}");
                    return Ok(exit::TARGET_UNUSABLE);
                }
            }
        }
    };
    let opts = MergeOptions {
        dirs: args.dirs,
        expect: args.expect,
        probe,
        drain: args.drain.0.max(Duration::from_millis(100)),
        answer_limit,
        out_dir: args.out,
        thresholds: args.thresholds,
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let outcome = match rt.block_on(hookstorm::merge::merge(&opts)) {
        Ok(o) => o,
        Err(e @ MergeError::Inconsistent(_)) => return Ok(super::usage_error(e)),
        Err(e) => return Err(e.into()),
    };
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&outcome.report)?);
    } else {
        out!("{}", outcome.report.console());
        outln!("reports: {}", outcome.dir.display());
    }
    Ok(outcome.report.exit_code())
}
