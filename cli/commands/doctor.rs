//! `hookstorm doctor` (and `run --preflight-only`): check a target's
//! configuration in seconds and say which scenarios it would skip, sending
//! no scenario.
//!
//! It takes only the flags it uses: the target, the scenario selection
//! (to say what a run would skip) and the built-in receiver's; the same
//! definitions `run` flattens in. It writes nothing it does not need: the
//! logs of the processes it starts (a lifecycle target, the built-in
//! receiver) go to a temporary folder that is removed when it ends, and
//! kept, and named, only when the target is unusable and they can say why.

use std::path::Path;

use anyhow::Context;
use hookstorm::exit;
use hookstorm::run::preflight::{Outcome, Preflight, Words};
use hookstorm::scenario::Scenario;

use super::resolve::{build_target, Built, BuiltinFlags};
use super::select::Selection;
use super::target_flags::TargetFlags;

/// Arguments of `hookstorm doctor`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub(crate) target: TargetFlags,
    #[command(flatten)]
    pub(crate) select: Selection,
    #[command(flatten)]
    pub(crate) builtin: BuiltinFlags,
}

/// Checks the target and returns the exit code: 0 usable, 3 unusable, 1
/// when `--require-all` meets scenarios the target would skip.
pub fn run(args: Args) -> anyhow::Result<i32> {
    let (scenarios, require_all) = match args.select.for_target(&args.target) {
        Ok(picked) => picked,
        Err(code) => return Ok(code),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(check(args, scenarios, require_all))
}

async fn check(args: Args, scenarios: Vec<Scenario>, require_all: bool) -> anyhow::Result<i32> {
    let stop = hookstorm::run::interrupt::on_signals().context("installing the Ctrl-C handler")?;
    let Built { target, child, .. } =
        match build_target(&args.target, &args.builtin, "hookstorm doctor")? {
            Ok(b) => b,
            Err(code) => return Ok(code),
        };
    info!(
        "profile {} · {} scenario(s) · target {}",
        target.profile.name,
        scenarios.len(),
        target.describe()
    );
    let words = args.target.words_for(&target);
    let logs = tempfile::Builder::new()
        .prefix("hookstorm-doctor-")
        .tempdir()
        .context("creating a folder for the logs of the processes doctor starts")?;
    let outcome = tokio::select! {
        o = hookstorm::run::doctor(&target, &scenarios, logs.path()) => o,
        _ = stop.wait() => {
            hookstorm::lifecycle::kill_all();
            errln!("interrupted: stopped every process the harness started");
            return Ok(exit::INTERRUPTED);
        }
    };
    drop(child);
    let code = match &outcome {
        Ok(d) => report(d, &words, require_all),
        Err(e) => {
            errln!("error: {e}");
            exit::TARGET_UNUSABLE
        }
    };
    if code == exit::TARGET_UNUSABLE && holds_files(logs.path()) {
        let kept = logs.keep();
        outln!("logs of the processes doctor started: {}", kept.display());
    }
    Ok(code)
}

fn holds_files(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_some())
}

/// The preflight's findings, one line each.
pub(super) fn preflight_lines(pf: &Preflight, words: &Words) -> String {
    let mut out = format!("preflight ({:.1}s):\n", pf.elapsed.as_secs_f64());
    for f in &pf.findings {
        let mark = match f.outcome {
            Outcome::Passed => "ok  ",
            Outcome::Warning => "note",
            Outcome::Problem(_) => "FAIL",
        };
        out.push_str(&format!("  {mark}  {}\n", f.render(words)));
    }
    out
}

/// Prints what `doctor` found; returns 0 when the target is usable, 3 when
/// it is not, 1 when a run would fail because `--require-all` meets skips.
fn report(d: &hookstorm::run::Doctor, words: &Words, require_all: bool) -> i32 {
    out!("{}", preflight_lines(&d.preflight, words));
    if d.preflight.problem().is_some() {
        // The FAIL line above says what and how to fix it; once is enough.
        outln!("target unusable: fix what the FAIL line says");
        return exit::TARGET_UNUSABLE;
    }
    let coverage =
        hookstorm::findings::coverage::Coverage::of(d.skips.iter().map(|(_, s)| s.as_ref()));
    for (name, skip) in &d.skips {
        if let Some(s) = skip {
            outln!("would skip {name}: {}", s.reason);
        }
    }
    outln!(
        "target usable; with it {}",
        coverage.line().replacen(" ran", " would run", 1)
    );
    if require_all && coverage.skipped > 0 {
        outln!("--require-all: a run would fail on these skips");
        return exit::FAIL;
    }
    exit::PASS
}
