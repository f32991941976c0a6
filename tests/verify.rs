//! `hookstorm verify REPORT_DIR` on real run folders: an untouched one
//! verifies (its digests hold, and grading its histories again, kills and
//! all, gives the recorded verdicts); one byte changed in a history or in
//! report.json fails it, naming the file.

use std::path::Path;

use crate::common::{output_text as text, reseal_by_hand, run_binary as hookstorm, TestResult};
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

#[test]
fn two_runs_with_one_seed_into_one_out_at_once_write_two_folders_that_each_verify() -> TestResult {
    let cwd = tempfile::tempdir()?;
    let scenarios = crate::common::scenario_dir_arg();
    let args = [
        "run",
        "--scenario-dir",
        &scenarios,
        "--scenario",
        "baseline",
        "--seed",
        "5",
        "--out",
        "out",
    ];
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| hookstorm(&args, cwd.path()));
        let b = s.spawn(|| hookstorm(&args, cwd.path()));
        (a.join(), b.join())
    });
    let (a, b) = (a.expect("first run"), b.expect("second run"));
    assert_eq!(a.status.code(), Some(0), "{}", text(&a));
    assert_eq!(b.status.code(), Some(0), "{}", text(&b));
    let folders: Vec<std::path::PathBuf> = std::fs::read_dir(cwd.path().join("out"))?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect();
    assert_eq!(folders.len(), 2, "{folders:?}");
    for dir in &folders {
        let o = verify(dir);
        assert_eq!(o.status.code(), Some(hookstorm::exit::PASS), "{}", text(&o));
        // The digest each run printed is the one of its own folder.
        let sha = hookstorm::report::seal::sha256_file(&dir.join("report.json"))?;
        assert!(
            text(&a).contains(&sha) || text(&b).contains(&sha),
            "no run printed {sha} of {}",
            dir.display()
        );
    }
    Ok(())
}

#[test]
fn a_seal_naming_files_outside_the_folder_links_or_devices_fails_verify_naming_each() -> TestResult
{
    let dir = copy_of(green_report(), "outside-the-folder");
    // An outsider's file with its true digest, under four disguises.
    let outside = dir.parent().expect("a parent").join("outside.txt");
    std::fs::write(&outside, b"not the run's")?;
    let sha = hookstorm::report::seal::sha256_file(&outside)?;
    std::os::unix::fs::symlink(&outside, dir.join("linked.txt"))?;
    let mut sums = std::fs::read_to_string(dir.join("SHA256SUMS"))?;
    for name in [
        "../outside.txt".to_string(),
        outside.display().to_string(),
        "linked.txt".into(),
        "/dev/zero".into(),
    ] {
        sums.push_str(&format!("{sha}  {name}\n"));
    }
    std::fs::write(dir.join("SHA256SUMS"), sums)?;
    let o = verify(&dir);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(hookstorm::exit::FAIL), "{out}");
    assert!(
        out.contains("../outside.txt: sealed but unreadable: outside the report folder"),
        "{out}"
    );
    assert!(
        out.contains("/dev/zero: sealed but unreadable: outside the report folder"),
        "{out}"
    );
    assert!(
        out.contains("linked.txt: sealed but unreadable: a symbolic link"),
        "{out}"
    );
    assert!(out.contains("not verified: 4 mismatches"), "{out}");
    Ok(())
}

#[test]
fn a_forged_verdict_or_an_edited_report_fails_verify_even_with_the_seal_rebuilt() -> TestResult {
    // The failing run's verdict and exit code turned to a pass.
    let dir = copy_of(faulted_report(), "forged-verdict");
    let path = dir.join("report.json");
    let mut report: serde_json::Value = serde_json::from_slice(&std::fs::read(&path)?)?;
    assert_eq!(report["verdict"], "fail");
    report["verdict"] = "pass".into();
    report["exit_code"] = 0.into();
    for s in report["scenarios"].as_array_mut().ok_or("scenarios")? {
        s["verdict"] = "pass".into();
    }
    std::fs::write(&path, serde_json::to_vec_pretty(&report)?)?;
    reseal_by_hand(&dir)?;
    assert_not_verified(
        &dir,
        "report.json: at /exit_code it says 0; its own results give 1",
    );
    // A summary handed over with another verdict in it.
    let dir = copy_of(faulted_report(), "forged-summary");
    let summary = std::fs::read_to_string(dir.join("summary.md"))?;
    std::fs::write(
        dir.join("summary.md"),
        format!("{summary}\nEvery scenario passed.\n"),
    )?;
    reseal_by_hand(&dir)?;
    assert_not_verified(&dir, "summary.md: not the report report.json renders");
    Ok(())
}

/// `verify` of `dir` fails, saying `says`.
fn assert_not_verified(dir: &Path, says: &str) {
    let o = verify(dir);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(hookstorm::exit::FAIL), "{out}");
    assert!(out.contains(says), "{out}");
}
