//! The `hookstorm` command line: parses arguments, calls the library, and
//! maps the outcome to a documented exit code (`hookstorm::exit`).

#[macro_use]
mod ui;
mod commands;

use clap::Parser;

fn main() {
    hookstorm::limits::memory::map_large_allocations();
    ui::install_pipe_guard();
    let cli = match commands::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = match e.kind() {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => {
                    hookstorm::exit::PASS
                }
                _ => hookstorm::exit::USAGE,
            };
            let _ = e.print();
            std::process::exit(code);
        }
    };
    std::process::exit(commands::dispatch(cli));
}
