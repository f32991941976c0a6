//! `hookstorm completions SHELL`: prints the shell completion script for
//! bash, zsh, fish, elvish or PowerShell, generated from the same clap
//! definition the binary parses with, so it never drifts from the flags.

use clap::CommandFactory;

/// Arguments of `hookstorm completions`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Install, for example:\n  \
bash: hookstorm completions bash > ~/.local/share/bash-completion/completions/hookstorm\n  \
zsh:  hookstorm completions zsh > \"${fpath[1]}/_hookstorm\"\n  \
fish: hookstorm completions fish > ~/.config/fish/completions/hookstorm.fish")]
pub struct Args {
    /// The shell.
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

/// Prints the script and returns the exit code.
pub fn run(args: Args) -> anyhow::Result<i32> {
    let mut cmd = super::Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "hookstorm", &mut out);
    out!("{}", String::from_utf8_lossy(&out));
    Ok(hookstorm::exit::PASS)
}
