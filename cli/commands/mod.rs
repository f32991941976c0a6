//! Subcommands of the CLI, one module each; `dispatch` runs one and returns
//! its exit code.

mod bench;
mod catalog;
mod check;
mod completions;
mod doctor;
mod explore;
mod init;
mod keys;
mod list;
mod merge;
mod message;
mod provider;
mod proxy;
mod resolve;
mod run;
mod run_flags;
mod schedule;
mod select;
mod shrink;
mod sign;
mod sink;
mod target_flags;
mod verify;

use clap::{Parser, Subcommand};

use crate::ui::{ColorChoice, Verbosity};

/// hookstorm: chaos and conformance runs against webhook receivers (and, with `sink`, senders).
#[derive(Debug, Parser)]
#[command(name = "hookstorm", version, about, long_about = None, after_help = hookstorm::exit::help())]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Colour the output: auto (a terminal, and NO_COLOR unset), always, never.
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto)]
    color: ColorChoice,
    /// Say less: errors, warnings and results only.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    quiet: bool,
    /// Say more: the notes of each scenario, counts and details.
    #[arg(short, long, global = true)]
    verbose: bool,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run scenarios against a receiver (the built-in reference receiver when no target is given).
    Run(Box<run::Args>),
    /// Check a target's configuration in seconds (state source, reset, signed deliveries) and say which scenarios it would skip.
    Doctor(Box<doctor::Args>),
    /// List the scenarios: description, tags, needs and invariants.
    List(list::Args),
    /// Re-check a stored history against a stored state, without re-running.
    Check(check::Args),
    /// Check that a report folder is the one the run wrote (its SHA-256 digests) and that its histories still grade as it says.
    Verify(verify::Args),
    /// Make an Ed25519 key pair for signing report folders: the private key for the pipeline's secret HOOKSTORM_SIGNING_KEY, the public key for `verify --key`.
    Keygen(keys::Args),
    /// Print the retry schedule of one delivery (attempt, wait, cumulative, min and max).
    Schedule(schedule::Args),
    /// Print the headers a real sender would send for a body read from stdin.
    Sign(sign::Args),
    /// Run a TCP fault proxy (refuse, reset, blackhole, latency) with a small HTTP control API.
    Proxy(proxy::Args),
    /// Run the reference receiver (as `hookstorm-receiver` does); lifecycle targets start it with `{hookstorm} receiver`.
    Receiver(hookstorm_receiver::cli::Cli),
    /// Serve the provider API (task lookups) for testing a reconciliation job by hand.
    Provider(provider::Args),
    /// Load and benchmark a receiver: latency, throughput, and the checker's verdict.
    Bench(bench::Args),
    /// Serve the null receiver (verifies the signature, answers 204, stores nothing).
    NullReceiver(bench::NullArgs),
    /// Write a commented target file (URL, profile, accounts, state), asking for what the flags leave out.
    Init(init::Args),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(completions::Args),
    /// Cut a failing scenario down to a minimal plan that still fails the same invariant, and write it as a scenario that replays as it is.
    Shrink(Box<shrink::Args>),
    /// Draw random fault plans (weighted towards combinations) against a receiver, shrink every failure and keep it in the regression folder that `run` replays first.
    Explore(Box<explore::Args>),
    /// Merge the report folders of sharded runs (`--shard I/N`) into one report and one verdict.
    Merge(merge::Args),
    /// Judge a webhook sender: a chaos receiver for it, the sender scenarios and invariants S1-S9 (the built-in reference sender when no target is given).
    Sink(Box<sink::Args>),
    /// Run the reference sender (an outbox on SQLite with a delivery worker), as `hookstorm sink` starts it.
    Sender(hookstorm_receiver::sender::cli::SenderArgs),
}

/// Runs the chosen subcommand and returns the process exit code.
pub fn dispatch(cli: Cli) -> i32 {
    crate::ui::init(
        cli.color,
        match (cli.quiet, cli.verbose) {
            (true, _) => Verbosity::Quiet,
            (_, true) => Verbosity::Verbose,
            _ => Verbosity::Normal,
        },
    );
    let result = match cli.command {
        Command::Run(a) => run::run(*a),
        Command::Doctor(a) => doctor::run(*a),
        Command::List(a) => list::run(a),
        Command::Check(a) => check::run(a),
        Command::Verify(a) => verify::run(a),
        Command::Keygen(a) => keys::keygen(a),
        Command::Schedule(a) => schedule::run(a),
        Command::Sign(a) => sign::run(a),
        Command::Proxy(a) => proxy::run(a),
        Command::Receiver(cli) => Ok(hookstorm_receiver::cli::main_with(cli)),
        Command::Provider(a) => provider::run(a),
        Command::Bench(a) => bench::run(a),
        Command::NullReceiver(a) => bench::null_receiver(a),
        Command::Init(a) => init::run(a),
        Command::Completions(a) => completions::run(a),
        Command::Merge(a) => merge::run(a),
        Command::Shrink(a) => shrink::run(*a),
        Command::Explore(a) => explore::run(*a),
        Command::Sink(a) => sink::run(*a),
        Command::Sender(a) => Ok(hookstorm_receiver::sender::cli::main_with(a)),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            errln!("error: {e:#}");
            hookstorm::exit::TARGET_UNUSABLE
        }
    }
}

/// Prints a usage-level error and returns the usage exit code.
fn usage_error(msg: impl std::fmt::Display) -> i32 {
    errln!("error: {msg}");
    hookstorm::exit::USAGE
}

/// Prints a finished run's console table, where its reports are and any
/// further lines (what `--shrink` found); returns the run's exit code.
fn print_run(
    report: &hookstorm::report::RunReport,
    dir: &std::path::Path,
    lines: &[String],
    no_color: bool,
) -> i32 {
    let color = !no_color && crate::ui::color_stdout();
    outln!(
        "{}",
        hookstorm::report::console::console_table(report, color)
    );
    outln!("reports: {}", dir.display());
    for line in lines {
        outln!("{line}");
    }
    report.exit_code()
}
