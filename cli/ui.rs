//! How the command line talks to a person or a pipe: colour (`--color`,
//! `NO_COLOR`), verbosity (`-q`, `-v`) and output that ends quietly when
//! the reader went away.
//!
//! The choices are made once, from the global flags, before a command runs,
//! and every command asks here instead of looking at the terminal itself.
//! Writing to a closed pipe (`hookstorm schedule | head -1`) is not an
//! error for a Unix tool: the first `EPIPE` on stdout marks it closed,
//! later writes are dropped, and the command finishes with its own exit
//! code (so `check … | head` still reports the verdict). Anything that
//! still prints with `println!`/`eprintln!` (the receiver subcommand,
//! library warnings) is covered by [`install_pipe_guard`], which turns
//! std's "failed printing" panic on a closed pipe into a quiet exit.

use std::fmt;
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

/// `--color`: when to colour the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ColorChoice {
    /// Colour when the output is a terminal and `NO_COLOR` is not set.
    #[default]
    Auto,
    /// Always colour, also into a pipe or a file.
    Always,
    /// Never colour.
    Never,
}

/// How much the command says on stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verbosity {
    /// `-q`: errors and warnings only; results still go to stdout.
    Quiet = 0,
    /// Progress lines too.
    Normal = 1,
    /// `-v`: details as well (notes of each scenario, counts).
    Verbose = 2,
}

static COLOR: AtomicU8 = AtomicU8::new(0);
static LEVEL: AtomicU8 = AtomicU8::new(Verbosity::Normal as u8);
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// The exit status a shell reports for a process ended by SIGPIPE; used
/// only by the fallback guard, where the command's own code is not known.
const CLOSED_PIPE_EXIT: i32 = 128 + 13;

/// Records the global flags; call once before running a command.
pub fn init(color: ColorChoice, verbosity: Verbosity) {
    COLOR.store(
        match color {
            ColorChoice::Auto => 0,
            ColorChoice::Always => 1,
            ColorChoice::Never => 2,
        },
        Ordering::Relaxed,
    );
    LEVEL.store(verbosity as u8, Ordering::Relaxed);
}

/// `NO_COLOR` set to anything but the empty string (no-color.org).
fn no_color_env() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}

fn color_for(is_terminal: bool) -> bool {
    match COLOR.load(Ordering::Relaxed) {
        1 => true,
        2 => false,
        _ => is_terminal && !no_color_env(),
    }
}

/// Colour what goes to stdout.
pub fn color_stdout() -> bool {
    color_for(std::io::stdout().is_terminal())
}

/// The chosen verbosity.
pub fn verbosity() -> Verbosity {
    match LEVEL.load(Ordering::Relaxed) {
        0 => Verbosity::Quiet,
        2 => Verbosity::Verbose,
        _ => Verbosity::Normal,
    }
}

/// Writes to stdout; after the reader closed the pipe, writes nothing.
pub fn write_stdout(args: fmt::Arguments<'_>) {
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(args).and_then(|_| out.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            STDOUT_CLOSED.store(true, Ordering::Relaxed);
        } else {
            let _ = writeln!(std::io::stderr(), "error: writing to stdout: {e}");
            STDOUT_CLOSED.store(true, Ordering::Relaxed);
        }
    }
}

/// Writes to stderr at `level` or above; a closed stderr is ignored.
pub fn write_stderr(level: Verbosity, args: fmt::Arguments<'_>) {
    if verbosity() < level {
        return;
    }
    let _ = std::io::stderr().lock().write_fmt(args);
}

/// Turns the panic std raises when `println!`/`eprintln!` hit a closed
/// pipe into a quiet exit; every other panic reports as before.
pub fn install_pipe_guard() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let text = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if text.starts_with("failed printing to std") && text.contains("Broken pipe") {
            std::process::exit(CLOSED_PIPE_EXIT);
        }
        previous(info);
    }));
}

/// Like `println!`, through [`write_stdout`].
macro_rules! outln {
    () => { $crate::ui::write_stdout(format_args!("\n")) };
    ($($t:tt)*) => { $crate::ui::write_stdout(format_args!("{}\n", format_args!($($t)*))) };
}

/// Like `print!`, through [`write_stdout`].
macro_rules! out {
    ($($t:tt)*) => { $crate::ui::write_stdout(format_args!($($t)*)) };
}

/// A progress line on stderr; silent under `-q`.
macro_rules! info {
    ($($t:tt)*) => {
        $crate::ui::write_stderr(
            $crate::ui::Verbosity::Normal,
            format_args!("{}\n", format_args!($($t)*)),
        )
    };
}

/// A detail on stderr; shown only under `-v`.
macro_rules! detail {
    ($($t:tt)*) => {
        $crate::ui::write_stderr(
            $crate::ui::Verbosity::Verbose,
            format_args!("{}\n", format_args!($($t)*)),
        )
    };
}

/// An error or warning on stderr; shown even under `-q`.
macro_rules! errln {
    ($($t:tt)*) => {
        $crate::ui::write_stderr(
            $crate::ui::Verbosity::Quiet,
            format_args!("{}\n", format_args!($($t)*)),
        )
    };
}
