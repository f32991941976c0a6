//! `hookstorm verify REPORT_DIR`: checks that a report folder is the one
//! the run wrote (every digest of `SHA256SUMS`) and that its histories
//! still grade as `report.json` says. Exit 0 verified, 1 a mismatch (each
//! named), 2 a folder written before reports were sealed, 254 a path that
//! is no report folder.

use std::path::PathBuf;

use hookstorm::check::Verdict;
use hookstorm::report::console::paint;
use hookstorm::report::verify::verify;

/// Arguments of `hookstorm verify`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A report folder written by `hookstorm run` (e.g. reports/latest).
    report_dir: PathBuf,
}

/// Verifies and prints what does not hold, then one line.
pub fn run(args: Args) -> anyhow::Result<i32> {
    let v = match verify(&args.report_dir) {
        Ok(v) => v,
        Err(e) => {
            errln!("error: {e}");
            return Ok(e.exit_code());
        }
    };
    let color = crate::ui::color_stdout();
    for f in &v.files_ok {
        detail!("ok {f}");
    }
    for s in &v.regraded {
        detail!("ok {s}: graded again, same verdicts");
    }
    for (s, why) in &v.not_regraded {
        detail!("not graded again {s}: {why}");
    }
    for m in &v.mismatches {
        outln!("{} {m}", paint("MISMATCH", Verdict::Fail, color));
    }
    let sha = v.report_sha256.as_deref().unwrap_or("(not sealed)");
    if v.mismatches.is_empty() {
        outln!(
            "{}: {} intact, {} graded again with the recorded verdicts; report.json SHA-256 {sha}",
            paint("verified", Verdict::Pass, color),
            hookstorm::text::words::count(v.files_ok.len(), "file"),
            hookstorm::text::words::count(v.regraded.len(), "scenario")
        );
    } else {
        outln!(
            "{}: {} in {}; report.json SHA-256 {sha}",
            paint("not verified", Verdict::Fail, color),
            hookstorm::text::words::count(v.mismatches.len(), "mismatch"),
            args.report_dir.display()
        );
    }
    Ok(v.exit_code())
}
