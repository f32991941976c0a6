//! `hookstorm check HISTORY STATE`: re-checks stored files without
//! re-running anything. An empty history is `unknown` (exit 2), never a
//! pass; a history cut off in its last line is checked up to the cut,
//! with a warning on stderr and in the output.

use std::path::{Path, PathBuf};
use std::time::Duration;

use hookstorm::check::{check_history, CheckOptions, InvariantId, Verdict};
use hookstorm::history::Event;
use hookstorm::profile::vocabulary::Vocabulary;
use hookstorm::report::console::paint;

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
        vocabulary: words_of_run(&args.history),
    };
    let found = match check_history(&args.history, &args.state, args.scenario.as_deref(), &opts) {
        Ok(c) => c,
        // A history line the checker cannot read or place leaves the
        // verdict undecided: unknown, naming the line.
        Err(e @ hookstorm::check::CheckError::History { .. }) => {
            errln!("unknown: {e}");
            return Ok(hookstorm::exit::UNKNOWN);
        }
        Err(e) => {
            errln!("error: {e}");
            return Ok(hookstorm::exit::TARGET_UNUSABLE);
        }
    };
    for w in &found.warnings {
        errln!("warning: {w}");
        outln!("warning: {w}");
    }
    let color = crate::ui::color_stdout();
    let mut worst = Verdict::Pass;
    for c in &found.checks {
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
    Ok(worst.exit_code(args.strict))
}

/// The words of the profile the history's run header names (the
/// answerline's when the history has no header).
fn words_of_run(history: &Path) -> Vocabulary {
    // Only the first event is needed: the first line, read within its budget.
    let first = hookstorm::history::read(history)
        .ok()
        .and_then(|mut events| events.next()?.ok());
    match first {
        Some(Event::Run(header)) => Vocabulary::of_name(&header.profile),
        _ => Vocabulary::answerline(),
    }
}
