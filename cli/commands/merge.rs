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
//!
//! Every run shard is verified and every partition's seal checked before
//! it is read (with `--key`, their signatures too); a mismatch refuses the
//! merge, naming the folder and the file (exit 1, as `verify`'s
//! mismatch). With `$HOOKSTORM_SIGNING_KEY` set, a merged report folder is
//! signed as a run's is.

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
    /// The public key (PEM) every shard and partition must be signed
    /// with; a folder unsigned or signed by another key is refused.
    #[arg(long, value_name = "PUB")]
    key: Option<PathBuf>,
}

/// Merges and returns the verdict's exit code.
pub fn run(args: Args) -> anyhow::Result<i32> {
    let key = match args
        .key
        .as_deref()
        .map(hookstorm::report::attest::read_public_key)
        .transpose()
    {
        Ok(k) => k,
        Err(e) => return Ok(super::usage_error(format!("--key {e}"))),
    };
    let signing = match super::keys::signing_key() {
        Ok(k) => k,
        Err(code) => return Ok(code),
    };
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
        key,
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let outcome = match rt.block_on(hookstorm::merge::merge(&opts)) {
        Ok(o) => o,
        Err(e @ MergeError::Inconsistent(_)) => return Ok(super::usage_error(e)),
        Err(e @ MergeError::Refused(_)) => {
            errln!("error: {e}");
            return Ok(exit::FAIL);
        }
        Err(e) => return Err(e.into()),
    };
    // A merged report folder (run shards) is sealed: it is signed as a
    // run's is. A bench or check merge writes merge.json alone, unsealed.
    if outcome.dir.join(hookstorm::report::seal::SUMS).is_file() {
        let verdict = Some(outcome.report.verdict.to_string());
        let code = Some(outcome.report.exit_code());
        super::keys::sign(&outcome.dir, signing.as_ref(), "merge", verdict, code)?;
    }
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&outcome.report)?);
    } else {
        out!("{}", outcome.report.console());
        outln!("reports: {}", outcome.dir.display());
    }
    Ok(outcome.report.exit_code())
}
