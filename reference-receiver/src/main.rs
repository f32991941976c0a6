//! The `hookstorm-receiver` binary: a thin wrapper over [`hookstorm_receiver::cli`].

use clap::Parser;

fn main() {
    let cli = hookstorm_receiver::cli::Cli::parse();
    std::process::exit(hookstorm_receiver::cli::main_with(cli));
}
