//! Signed report folders, with the real binary: `keygen` makes a pair, a
//! run with the private key in its environment signs its folder, and
//! `verify --key` holds the folder to the public key (another key fails,
//! a file edited after signing fails even with the seal rebuilt, an
//! unsigned folder says so). `merge` and `check --partition` verify what
//! they join: an edited or gutted shard and a copied partition with
//! another index are refused by their file, a truncated `join.bin` named.
//!
//! Two fixtures serve every test, each made once per test binary: a
//! signed run of one scenario, and two signed run shards of a defective
//! receiver (shard 1 fails) with the two partitions of the failing
//! scenario's check. Tests change copies only.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use crate::common::{output_text as text, reseal_by_hand, scenario_dir_arg, TestResult};

/// A folder of this test binary's own under the target directory.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("signing-{}", std::process::id()))
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch folder");
    dir
}

/// Runs `hookstorm ARGS` in `cwd` with `key` (a private key file) as the
/// signing key, or with no signing key at all.
fn hookstorm(args: &[&str], cwd: &Path, key: Option<&Path>) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_hookstorm"));
    c.args(args)
        .current_dir(cwd)
        .env("NO_COLOR", "1")
        .env_remove("HOOKSTORM_SIGNING_KEY")
        .env_remove("HOOKSTORM_SIGNING_KEY_FILE");
    if let Some(k) = key {
        c.env("HOOKSTORM_SIGNING_KEY_FILE", k);
    }
    c.output().expect("hookstorm runs")
}

/// Key pairs made with `keygen` once: `<name>.key` and `<name>.key.pub`.
fn keys() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = scratch("keys");
        for name in ["vendor", "other"] {
            let out = format!("{name}.key");
            let o = hookstorm(&["keygen", "--out", &out], &dir, None);
            assert_eq!(o.status.code(), Some(0), "{}", text(&o));
            let said = text(&o);
            assert!(said.contains("-----BEGIN PUBLIC KEY-----"), "{said}");
            let private = std::fs::read_to_string(dir.join(&out)).expect("the private key");
            let secret = private.lines().nth(1).expect("a base64 line");
            assert!(!said.contains(secret), "keygen printed its private key");
        }
        dir
    })
}

fn private(name: &str) -> PathBuf {
    keys().join(format!("{name}.key"))
}

fn public(name: &str) -> String {
    keys().join(format!("{name}.key.pub")).display().to_string()
}

/// The real folders under `dir` (not `latest`), sorted.
fn folders(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("a folder")
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect();
    out.sort();
    out
}

/// A run of `baseline`, signed by the vendor's key: its folder.
fn signed_run() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = scratch("signed-run");
        let scenarios = scenario_dir_arg();
        let args = [
            "run",
            "--scenario-dir",
            &scenarios,
            "--scenario",
            "baseline",
            "--seed",
            "3",
            "--out",
            "out",
        ];
        let o = hookstorm(&args, &dir, Some(&private("vendor")));
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        assert!(text(&o).contains("signed: "), "{}", text(&o));
        folders(&dir.join("out")).remove(0)
    })
}

/// Two run shards of a receiver with a duplicate bug, signed by the
/// vendor's key (shard 0 ran `baseline` and passed, shard 1
/// `concurrent-duplicates` and failed), and the two partitions of the
/// failing scenario's check: the folder holding `shards/` and `parts/`.
fn sharded() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = scratch("sharded");
        let scenarios = scenario_dir_arg();
        let key = private("vendor");
        for (i, code) in [(0, 0), (1, 1)] {
            let shard = format!("{i}/2");
            let args = [
                "run",
                "--scenario-dir",
                &scenarios,
                "--defect",
                "check-then-insert",
                "--scenario",
                "baseline",
                "--scenario",
                "concurrent-duplicates",
                "--seed",
                "8",
                "--shard",
                &shard,
                "--out",
                "shards",
            ];
            let o = hookstorm(&args, &dir, Some(&key));
            assert_eq!(o.status.code(), Some(code), "{}", text(&o));
        }
        let failing = shard_folders(&dir)[1].join("concurrent-duplicates");
        let history = failing.join("history.jsonl").display().to_string();
        let state = failing.join("state.json").display().to_string();
        for p in ["0/2", "1/2"] {
            let args = [
                "check",
                "--partition",
                p,
                "--out",
                "parts",
                &history,
                &state,
            ];
            let o = hookstorm(&args, &dir, Some(&key));
            assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        }
        dir
    })
}

/// The fixture's two shard folders (`shards/shardIof2/<run id>`).
fn shard_folders(dir: &Path) -> Vec<PathBuf> {
    folders(&dir.join("shards"))
        .iter()
        .map(|s| folders(s).remove(0))
        .collect()
}

/// A copy of folder `from` (its files, links followed) as `name`.
fn copy_of(from: &Path, name: &str) -> PathBuf {
    let to = scratch(name);
    crate::common::copy_tree(from, &to);
    to
}

/// Turns a failing report.json's verdicts into a pass.
fn forge_a_pass(dir: &Path) -> TestResult {
    let path = dir.join("report.json");
    let mut report: serde_json::Value = serde_json::from_slice(&std::fs::read(&path)?)?;
    assert_eq!(report["verdict"], "fail", "the fixture fails");
    report["verdict"] = "pass".into();
    report["exit_code"] = 0.into();
    for s in report["scenarios"].as_array_mut().ok_or("scenarios")? {
        s["verdict"] = "pass".into();
    }
    std::fs::write(&path, serde_json::to_vec_pretty(&report)?)?;
    Ok(())
}

fn verify(dir: &Path, key: Option<&str>) -> (Option<i32>, String) {
    let d = dir.display().to_string();
    let args: Vec<&str> = match key {
        Some(k) => vec!["verify", "--key", k, &d],
        None => vec!["verify", &d],
    };
    let o = hookstorm(&args, dir, None);
    (o.status.code(), text(&o))
}

#[test]
fn a_signed_folder_verifies_with_its_key_and_fails_with_another() {
    let dir = signed_run();
    assert!(dir.join("report.dsse.json").is_file());
    let (code, out) = verify(dir, Some(&public("vendor")));
    assert_eq!(code, Some(hookstorm::exit::PASS), "{out}");
    assert!(out.contains("signature holds: signed by key "), "{out}");

    let (code, out) = verify(dir, Some(&public("other")));
    assert_eq!(code, Some(hookstorm::exit::FAIL), "{out}");
    assert!(
        out.contains("MISMATCH report.dsse.json: signature: no signature holds for the key given"),
        "{out}"
    );

    let (code, out) = verify(dir, None);
    assert_eq!(code, Some(hookstorm::exit::PASS), "{out}");
    assert!(out.contains("signature not checked"), "{out}");
    // The envelope is what in-toto tooling reads.
    let env: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("report.dsse.json")).unwrap()).unwrap();
    assert_eq!(env["payloadType"], "application/vnd.in-toto+json");
    use base64::Engine as _;
    let payload = base64::engine::general_purpose::STANDARD
        .decode(env["payload"].as_str().unwrap())
        .unwrap();
    let st: serde_json::Value = serde_json::from_slice(&payload).unwrap();
    assert_eq!(st["_type"], "https://in-toto.io/Statement/v1");
    assert_eq!(st["subject"][0]["name"], "report.json");
    let sha = hookstorm::report::seal::sha256_file(&dir.join("report.json")).unwrap();
    assert_eq!(st["subject"][0]["digest"]["sha256"], sha.as_str());
    assert_eq!(st["predicate"]["verdict"], "pass");
}

#[test]
fn report_json_edited_after_signing_fails_with_the_right_key_even_with_the_seal_rebuilt(
) -> TestResult {
    let dir = copy_of(signed_run(), "edited-after-signing");
    let path = dir.join("report.json");
    let edited = std::fs::read_to_string(&path)?.replacen("\"seed\": 3", "\"seed\": 4", 1);
    std::fs::write(&path, edited)?;
    let (code, out) = verify(&dir, Some(&public("vendor")));
    assert_eq!(code, Some(hookstorm::exit::FAIL), "{out}");
    assert!(
        out.contains("MISMATCH report.json: signature: changed since it was signed"),
        "{out}"
    );
    reseal_by_hand(&dir)?;
    let (code, out) = verify(&dir, Some(&public("vendor")));
    assert_eq!(code, Some(hookstorm::exit::FAIL), "{out}");
    assert!(
        out.contains("MISMATCH SHA256SUMS: signature: changed since it was signed"),
        "{out}"
    );
    Ok(())
}

#[test]
fn an_unsigned_folder_says_so_and_fails_a_key() -> TestResult {
    let dir = copy_of(signed_run(), "unsigned");
    std::fs::remove_file(dir.join("report.dsse.json"))?;
    let (code, out) = verify(&dir, None);
    assert_eq!(code, Some(hookstorm::exit::PASS), "{out}");
    assert!(
        out.contains("unsigned: the folder has no report.dsse.json"),
        "{out}"
    );
    let (code, out) = verify(&dir, Some(&public("vendor")));
    assert_eq!(code, Some(hookstorm::exit::FAIL), "{out}");
    assert!(
        out.contains("the folder is unsigned, and a signature by key"),
        "{out}"
    );
    Ok(())
}

#[test]
fn a_key_that_is_no_key_is_a_usage_error_that_never_quotes_it() -> TestResult {
    let dir = scratch("no-key");
    std::fs::write(dir.join("junk.pub"), "not a key")?;
    let (code, out) = verify(
        signed_run(),
        Some(&dir.join("junk.pub").display().to_string()),
    );
    assert_eq!(code, Some(hookstorm::exit::USAGE), "{out}");
    assert!(out.contains("junk.pub: not PEM or base64"), "{out}");
    let (code, out) = verify(
        signed_run(),
        Some(&dir.join("none.pub").display().to_string()),
    );
    assert_eq!(code, Some(hookstorm::exit::USAGE), "{out}");
    // A private key given where the public one goes.
    let (code, out) = verify(signed_run(), Some(&private("vendor").display().to_string()));
    assert_eq!(code, Some(hookstorm::exit::USAGE), "{out}");
    assert!(out.contains("expected -----BEGIN PUBLIC KEY-----"), "{out}");
    let o = Command::new(env!("CARGO_BIN_EXE_hookstorm"))
        .args([
            "run",
            "--scenario-dir",
            &scenario_dir_arg(),
            "--scenario",
            "baseline",
        ])
        .current_dir(&dir)
        .env("HOOKSTORM_SIGNING_KEY", "c2VjcmV0LXZhbHVl")
        .env_remove("HOOKSTORM_SIGNING_KEY_FILE")
        .output()?;
    let out = text(&o);
    assert_eq!(o.status.code(), Some(hookstorm::exit::USAGE), "{out}");
    assert!(
        out.contains("$HOOKSTORM_SIGNING_KEY: not an Ed25519 private key"),
        "{out}"
    );
    assert!(!out.contains("c2VjcmV0LXZhbHVl"), "{out}");
    assert!(
        !dir.join("reports").exists(),
        "a run started with a bad key"
    );
    Ok(())
}

fn merge(dirs: &[&Path], key: Option<&str>, cwd: &Path) -> (Option<i32>, String) {
    let mut args: Vec<String> = vec!["merge".into(), "--out".into(), "merged".into()];
    if let Some(k) = key {
        args.extend(["--key".into(), k.into()]);
    }
    args.extend(dirs.iter().map(|d| d.display().to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = hookstorm(&args, cwd, None);
    (o.status.code(), text(&o))
}

/// Copies of the fixture's two shard folders, under `name`.
fn shards_copy(name: &str) -> (PathBuf, PathBuf) {
    let shards = shard_folders(sharded());
    scratch(name);
    let a = copy_of(&shards[0], &format!("{name}/s0"));
    let b = copy_of(&shards[1], &format!("{name}/s1"));
    (a, b)
}

#[test]
fn signed_shards_merge_with_their_key_and_not_with_another() {
    let (a, b) = shards_copy("merge-signed");
    let cwd = a.parent().unwrap().to_path_buf();
    let (code, out) = merge(&[&a, &b], Some(&public("vendor")), &cwd);
    assert_eq!(
        code,
        Some(hookstorm::exit::FAIL),
        "the failing shard fails the merge: {out}"
    );
    assert!(!out.contains("refused"), "{out}");
    // The merged folder holds every history its verdicts come from, and
    // verifies as a run's folder does.
    let merged = std::fs::read_dir(cwd.join("merged"))
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.is_dir() && !p.is_symlink())
        .expect("a merged folder");
    let (code, said) = verify(&merged, None);
    assert_eq!(code, Some(0), "{said}");
    let (code, out) = merge(&[&a, &b], Some(&public("other")), &cwd);
    assert_eq!(code, Some(hookstorm::exit::FAIL), "{out}");
    assert!(out.contains("error: refused: "), "{out}");
    assert!(
        out.contains("report.dsse.json: signature: no signature holds"),
        "{out}"
    );
}

#[test]
fn merge_refuses_a_failing_shard_edited_to_pass_naming_the_file() -> TestResult {
    for rebuilt in [false, true] {
        let (a, b) = shards_copy(&format!("forged-shard-{rebuilt}"));
        forge_a_pass(&b)?;
        if rebuilt {
            reseal_by_hand(&b)?;
        }
        let (code, out) = merge(&[&a, &b], None, a.parent().unwrap());
        assert_eq!(code, Some(hookstorm::exit::FAIL), "{out}");
        assert!(
            out.contains(&format!("error: refused: {}", b.display())),
            "{out}"
        );
        let says = if rebuilt {
            "report.json: at /exit_code it says 0; its own results give 1"
        } else {
            "report.json: changed since the run sealed it"
        };
        assert!(out.contains(says), "rebuilt {rebuilt}: {out}");
        assert!(!out.contains("verdict: pass"), "{out}");
    }
    Ok(())
}

#[test]
fn merge_refuses_a_shard_whose_history_was_deleted() -> TestResult {
    let (a, b) = shards_copy("gutted-shard");
    std::fs::remove_file(b.join("concurrent-duplicates/history.jsonl"))?;
    let (code, out) = merge(&[&a, &b], None, a.parent().unwrap());
    assert_eq!(code, Some(hookstorm::exit::FAIL), "{out}");
    assert!(
        out.contains("concurrent-duplicates/history.jsonl: sealed but unreadable"),
        "{out}"
    );
    assert!(out.contains("refused"), "{out}");
    // `check --partition` over the shard folder refuses it too.
    let state = a.join("baseline/state.json").display().to_string();
    let o = hookstorm(
        &[
            "check",
            "--partition",
            "0/2",
            &b.display().to_string(),
            &state,
        ],
        a.parent().unwrap(),
        None,
    );
    assert_eq!(o.status.code(), Some(hookstorm::exit::FAIL), "{}", text(&o));
    assert!(
        text(&o).contains("history.jsonl: sealed but unreadable"),
        "{}",
        text(&o)
    );
    Ok(())
}

fn parts_copy(name: &str) -> PathBuf {
    copy_of(&sharded().join("parts"), name)
}

#[test]
fn the_partitions_of_a_check_merge_into_its_verdict_and_with_their_key() {
    let parts = parts_copy("parts-intact");
    let (code, out) = merge(&[&parts], Some(&public("vendor")), &parts);
    assert_eq!(
        code,
        Some(hookstorm::exit::FAIL),
        "the duplicate bug fails: {out}"
    );
    assert!(!out.contains("refused"), "{out}");
    let (code, out) = merge(&[&parts], Some(&public("other")), &parts);
    assert_eq!(code, Some(hookstorm::exit::FAIL), "{out}");
    assert!(
        out.contains("refused") && out.contains("check-part0of2"),
        "{out}"
    );
}

#[test]
fn a_copied_partition_with_an_edited_index_is_refused_naming_the_file() -> TestResult {
    let parts = parts_copy("parts-copied");
    let one = parts.join("check-part1of2");
    std::fs::remove_dir_all(&one)?;
    let zero = parts.join("check-part0of2");
    for f in ["partition.json", "join.bin", "SHA256SUMS"] {
        std::fs::create_dir_all(&one)?;
        std::fs::copy(zero.join(f), one.join(f))?;
    }
    let path = one.join("partition.json");
    let mut p: serde_json::Value = serde_json::from_slice(&std::fs::read(&path)?)?;
    p["partition"]["index"] = 1.into();
    std::fs::write(&path, serde_json::to_vec_pretty(&p)?)?;
    let (code, out) = merge(&[&parts], None, &parts);
    assert_eq!(code, Some(hookstorm::exit::FAIL), "{out}");
    assert!(
        out.contains(
            "check-part1of2: does not verify: partition.json: changed since the folder was sealed"
        ),
        "{out}"
    );
    assert!(!out.contains("I5"), "{out}");
    Ok(())
}

#[test]
fn a_truncated_join_file_is_named_truncated_not_a_full_disk() -> TestResult {
    let parts = parts_copy("parts-truncated");
    let join = parts.join("check-part0of2/join.bin");
    let bytes = std::fs::read(&join)?;
    assert!(bytes.len() > 8, "the fixture's join file holds records");
    std::fs::write(&join, &bytes[..bytes.len() / 2])?;
    let (code, out) = merge(&[&parts], None, &parts);
    assert_eq!(code, Some(hookstorm::exit::FAIL), "{out}");
    assert!(
        out.contains("join.bin: changed since the folder was sealed (truncated"),
        "{out}"
    );
    assert!(!out.contains("free space"), "{out}");
    Ok(())
}

#[test]
fn keygen_writes_a_private_key_for_its_owner_alone_and_never_overwrites_one() -> TestResult {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(private("vendor"))?.permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    let before = std::fs::read(private("vendor"))?;
    let o = hookstorm(&["keygen", "--out", "vendor.key"], keys(), None);
    assert_eq!(
        o.status.code(),
        Some(hookstorm::exit::USAGE),
        "{}",
        text(&o)
    );
    assert!(text(&o).contains("already exists"), "{}", text(&o));
    assert_eq!(std::fs::read(private("vendor"))?, before);
    Ok(())
}

#[test]
fn a_sink_run_signs_its_folder_and_verify_holds_it_to_the_key() {
    let dir = scratch("signed-sink");
    let scenarios = scenario_dir_arg();
    let args = [
        "sink",
        "--scenario-dir",
        &scenarios,
        "--scenario",
        "sender-baseline",
        "--seed",
        "7",
        "--out",
        "out",
    ];
    let o = hookstorm(&args, &dir, Some(&private("vendor")));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let folder = folders(&dir.join("out")).remove(0);
    let (code, out) = verify(&folder, Some(&public("vendor")));
    assert_eq!(code, Some(hookstorm::exit::PASS), "{out}");
    assert!(out.contains("signature holds"), "{out}");
    let (code, out) = verify(&folder, Some(&public("other")));
    assert_eq!(code, Some(hookstorm::exit::FAIL), "{out}");
}

#[test]
fn bench_shards_are_sealed_and_signed_and_merge_refuses_one_with_its_history_deleted() -> TestResult
{
    let dir = scratch("bench-shards");
    let r = crate::shard::start_receiver(&dir)?;
    for i in 0..2 {
        let mut args = crate::shard::bench_args(&r.target, "100", "shards");
        args.extend(["--shard".into(), format!("{i}/2")]);
        let o = crate::shard::hookstorm(&args, &dir)
            .env("HOOKSTORM_SIGNING_KEY_FILE", private("vendor"))
            .env_remove("HOOKSTORM_SIGNING_KEY")
            .output()?;
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    }
    // A bench shard's folder is `<out>/<run id>-shardIof2`.
    let shards = folders(&dir.join("shards"));
    assert_eq!(shards.len(), 2, "{shards:?}");
    for s in &shards {
        let sums = std::fs::read_to_string(s.join("SHA256SUMS"))?;
        assert!(
            sums.contains("  bench.json\n") && sums.contains("  history.jsonl\n"),
            "{sums}"
        );
        assert!(s.join("report.dsse.json").is_file());
    }
    let target = r.target.display().to_string();
    let merge_with = |key: &str| {
        let mut args = vec![
            "merge", "--target", &target, "--drain", "20s", "--out", "merged",
        ];
        args.extend(["--key", key]);
        let d: Vec<String> = shards.iter().map(|s| s.display().to_string()).collect();
        args.extend(d.iter().map(String::as_str));
        let o = hookstorm(&args, &dir, None);
        (o.status.code(), text(&o))
    };
    let (code, out) = merge_with(&public("vendor"));
    assert_eq!(code, Some(hookstorm::exit::PASS), "{out}");
    let (code, out) = merge_with(&public("other"));
    assert_eq!(code, Some(hookstorm::exit::FAIL), "{out}");
    assert!(
        out.contains("report.dsse.json: signature: no signature holds"),
        "{out}"
    );
    std::fs::remove_file(shards[1].join("history.jsonl"))?;
    let (code, out) = merge_with(&public("vendor"));
    assert_eq!(code, Some(hookstorm::exit::FAIL), "{out}");
    assert!(
        out.contains(&format!(
            "{}: does not verify: history.jsonl: sealed but unreadable",
            shards[1].display()
        )),
        "{out}"
    );
    Ok(())
}

/// The merge step of `deploy/ci/github-actions-sharded.yml`, as a user
/// copies it: its script run by `bash` in a job folder holding `shards/`
/// and, when given, the public key committed as `hookstorm-signing.key.pub`.
fn workflow_merge(name: &str, committed_key: Option<&str>) -> (Option<i32>, String) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/ci/github-actions-sharded.yml");
    let wf: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(path).expect("the workflow")).expect("YAML");
    let script = wf["jobs"]
        .as_mapping()
        .expect("jobs")
        .values()
        .flat_map(|j| j["steps"].as_sequence().cloned().unwrap_or_default())
        .find(|s| s["name"].as_str() == Some("Merge into one verdict"))
        .and_then(|s| s["run"].as_str().map(String::from))
        .expect("the merge step");
    let (a, b) = shards_copy(name);
    let job = scratch(&format!("{name}-job"));
    crate::common::copy_tree(&a, &job.join("shards/s0"));
    crate::common::copy_tree(&b, &job.join("shards/s1"));
    if let Some(k) = committed_key {
        std::fs::copy(public(k), job.join("hookstorm-signing.key.pub")).expect("the key");
    }
    let bin = Path::new(env!("CARGO_BIN_EXE_hookstorm"))
        .parent()
        .expect("a folder");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let o = Command::new("bash")
        .args(["-euo", "pipefail", "-c", &script])
        .current_dir(&job)
        .env("PATH", path)
        .env("NO_COLOR", "1")
        // GitHub sets an absent secret to the empty string.
        .env("HOOKSTORM_SIGNING_KEY", "")
        .env_remove("HOOKSTORM_SIGNING_KEY_FILE")
        .output()
        .expect("bash runs");
    (o.status.code(), text(&o))
}

#[test]
fn the_sharded_workflows_merge_step_holds_the_shards_to_the_committed_key() {
    // The vendor's key committed: the shards it signed are merged (the
    // failing one fails the verdict).
    let (code, out) = workflow_merge("workflow-vendor", Some("vendor"));
    assert_eq!(code, Some(hookstorm::exit::FAIL), "{out}");
    assert!(!out.contains("refused"), "{out}");
    // Another key committed: every shard is refused by its signature.
    let (code, out) = workflow_merge("workflow-other", Some("other"));
    assert_eq!(code, Some(hookstorm::exit::FAIL), "{out}");
    assert!(out.contains("error: refused: "), "{out}");
    // No key committed: the seals alone are checked.
    let (_, out) = workflow_merge("workflow-none", None);
    assert!(!out.contains("refused"), "{out}");
}
