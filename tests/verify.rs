//! `hookstorm verify REPORT_DIR` on real run folders: an untouched one
//! verifies (its digests hold, and grading its histories again, kills and
//! all, gives the recorded verdicts); one byte changed in a history or in
//! report.json fails it, naming the file.

use std::path::Path;

use crate::common::{output_text as text, run_binary as hookstorm, TestResult};
use crate::report_html::{copy_of, faulted_report, green_report};

fn verify(dir: &Path) -> std::process::Output {
    hookstorm(&["verify", &dir.display().to_string()], dir)
}

#[test]
fn hookstorm_verify_passes_on_untouched_report_folders() -> TestResult {
    for dir in [faulted_report(), green_report()] {
        let o = verify(dir);
        let out = text(&o);
        assert_eq!(o.status.code(), Some(hookstorm::exit::PASS), "{out}");
        let sha = hookstorm::report::seal::sha256_file(&dir.join("report.json"))?;
        assert!(out.contains(&format!("report.json SHA-256 {sha}")), "{out}");
        assert!(out.starts_with("verified: "), "{out}");
        // The summary handed over names the same digest.
        let summary = std::fs::read_to_string(dir.join("summary.md"))?;
        assert!(summary.contains(&sha), "summary.md does not name {sha}");
    }
    Ok(())
}

/// Changes one byte of `file` in `dir`.
fn flip_a_byte(dir: &Path, file: &str) -> TestResult {
    let path = dir.join(file);
    let mut bytes = std::fs::read(&path)?;
    let i = bytes.len() / 2;
    bytes[i] ^= 0x01;
    std::fs::write(path, bytes)?;
    Ok(())
}

#[test]
fn one_byte_changed_in_a_history_or_in_report_json_fails_verify_naming_the_file() -> TestResult {
    for file in ["concurrent-duplicates/history.jsonl", "report.json"] {
        let dir = copy_of(
            faulted_report(),
            &format!("tampered-{}", file.replace('/', "-")),
        );
        flip_a_byte(&dir, file)?;
        let o = verify(&dir);
        let out = text(&o);
        assert_eq!(o.status.code(), Some(hookstorm::exit::FAIL), "{out}");
        assert!(
            out.contains(&format!("MISMATCH {file}: changed since the run sealed it")),
            "{out}"
        );
        assert!(out.contains("not verified: 1 mismatch"), "{out}");
    }
    Ok(())
}
