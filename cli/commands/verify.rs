//! `hookstorm verify REPORT_DIR`: checks that a report folder is the one
//! the run wrote (every digest of `SHA256SUMS`) and that its histories
//! still grade as `report.json` says. Exit 0 verified, 1 a mismatch (each
//! named), 2 a folder written before reports were sealed, 254 a path that
//! is no report folder, or a `--key` file that is no public key.
//!
//! `--key PUB` also checks the folder's signature (`report.dsse.json`):
//! it must be made by that key over the files as they are. Without it,
//! verify says whether the folder is signed, and that it did not check.

use std::path::PathBuf;

use hookstorm::check::Verdict;
use hookstorm::report::attest::{read_public_key, Signature, ENVELOPE_FILE};
use hookstorm::report::console::paint;
use hookstorm::report::verify::verify_with;

/// Arguments of `hookstorm verify`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A report folder written by `hookstorm run` (e.g. reports/latest).
    report_dir: PathBuf,
    /// The public key (PEM, `-----BEGIN PUBLIC KEY-----`, as `hookstorm
    /// keygen` writes it) the folder must be signed with.
    #[arg(long, value_name = "PUB")]
    key: Option<PathBuf>,
}

/// Verifies and prints what does not hold, then one line.
pub fn run(args: Args) -> anyhow::Result<i32> {
    let key = match args.key.as_deref().map(read_public_key).transpose() {
        Ok(k) => k,
        Err(e) => return Ok(super::usage_error(format!("--key {e}"))),
    };
    let v = match verify_with(&args.report_dir, key.as_ref()) {
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
    match &v.signature {
        Signature::Unsigned => outln!("unsigned: the folder has no {ENVELOPE_FILE}"),
        Signature::NotChecked(ids) => outln!(
            "signed (key {}), signature not checked (hint: --key PUB checks it)",
            ids.join(", ")
        ),
        Signature::Holds(id) => outln!("signature holds: signed by key {id}, every file as signed"),
        Signature::Broken => {}
    }
    Ok(v.exit_code())
}
