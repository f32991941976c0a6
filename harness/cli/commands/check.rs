//! `hookstorm check HISTORY STATE`: re-checks stored files without
//! re-running anything.

use std::path::PathBuf;
use std::time::Duration;

use hookstorm::check::{check_files, CheckOptions, InvariantId, Verdict};

/// Arguments of `hookstorm check`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A history.jsonl written by `hookstorm run`.
    history: PathBuf,
    /// The receiver's state JSON (state.json of the same scenario).
    state: PathBuf,
    /// Only this scenario's events.
    #[arg(long)]
    scenario: Option<String>,
    /// Invariants to check, comma separated (default: all).
    #[arg(long, value_delimiter = ',')]
    invariants: Vec<String>,
    /// Non-strict deviations fail.
    #[arg(long)]
    strict: bool,
    /// The receiver's answer budget per attempt.
    #[arg(long, default_value = "15s")]
    answer_limit: hookstorm::units::HumanDuration,
}

/// Checks and prints one line per invariant.
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
    let opts = CheckOptions {
        invariants,
        strict: args.strict,
        answer_limit: args.answer_limit.0.max(Duration::from_millis(1)),
        drained: true,
        reconciled: false,
    };
    let checks = match check_files(&args.history, &args.state, args.scenario.as_deref(), &opts) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(hookstorm::exit::TARGET_UNUSABLE);
        }
    };
    let mut worst = Verdict::Pass;
    for c in &checks {
        for r in &c.results {
            println!(
                "{:<14} {:<24} {:<10} {}",
                c.scenario,
                r.id.to_string(),
                r.verdict.to_string(),
                r.summary
            );
            for e in &r.evidence {
                println!(
                    "{:<14} {:<24} {:<10}   {} {} (history lines {:?})",
                    "", "", "", e.key, e.what, e.lines
                );
            }
        }
        worst = worst.worst(c.verdict());
    }
    Ok(match worst {
        Verdict::Fail => hookstorm::exit::FAIL,
        Verdict::NonStrict if args.strict => hookstorm::exit::FAIL,
        Verdict::Unknown => hookstorm::exit::UNKNOWN,
        _ => hookstorm::exit::PASS,
    })
}
