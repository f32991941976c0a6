//! What `merge` and `check` over shard folders read is checked first: a
//! shard's seal and a partition's, and with a key their signatures.
//!
//! A merge used to read a shard's `report.json` as it found it: a failing
//! shard edited to pass merged as a pass, and a shard whose history was
//! deleted merged with the scenario's recorded verdict. Now a run shard
//! (a folder with `report.json`) is verified as `hookstorm verify` does
//! ([`crate::report::verify`]: its digests, its verdicts graded again, its
//! reports rendered again), a bench shard's and a partition's
//! `SHA256SUMS` is held to their files, and any mismatch refuses the merge,
//! naming the folder and the file. With `--key`, each must also be signed
//! by that key ([`crate::report::attest`]).

use std::path::Path;

use super::merged::MergeError;
use crate::report::attest::{self, Signature};
use crate::report::dsse::PublicKey;
use crate::report::seal::{self, REPORT_JSON, SUMS};
use crate::report::verify::{verify_with, Verification, VerifyError};
use crate::shard::{ShardManifest, ShardStatus};

/// Mismatches named in a refusal before "and N more".
const NAMED: usize = 5;

fn refuse(dir: &Path, what: &str, problems: &[String]) -> MergeError {
    let mut named: Vec<String> = problems.iter().take(NAMED).cloned().collect();
    if problems.len() > NAMED {
        named.push(format!("and {} more", problems.len() - NAMED));
    }
    MergeError::Refused(format!(
        "{}: {what}: {} (hint: merge the folders as the shards wrote them; `hookstorm verify` names every mismatch)",
        dir.display(),
        named.join("; ")
    ))
}

/// Admits the shard folder `dir` (its manifest `m`, when readable): a run
/// shard that wrote its report must verify, a bench shard's `SHA256SUMS`
/// must hold (its `bench.json` and history listed), and with `key` either
/// must be signed by it. A folder without a seal is admitted only when no
/// key is asked for, or when its shard did not finish (it only makes the
/// verdict unknown).
pub fn shard(
    dir: &Path,
    m: Option<&ShardManifest>,
    key: Option<&PublicKey>,
) -> Result<(), MergeError> {
    if dir.join(REPORT_JSON).is_file() {
        return match verify_with(dir, key) {
            Ok(v) => held(dir, &v),
            Err(e @ VerifyError::Unsealed(_)) => Err(refuse(dir, "not sealed", &[e.to_string()])),
            Err(e) => Err(refuse(dir, "not a report folder", &[e.to_string()])),
        };
    }
    if dir.join(SUMS).is_file() {
        let history = m.map_or("history.jsonl", |m| m.history.as_str());
        return sealed(dir, &["bench.json", history], key);
    }
    let finished = m.is_some_and(|m| m.status == ShardStatus::Finished);
    if key.is_some() && finished {
        return Err(refuse(
            dir,
            "cannot be checked against --key",
            &[format!("no {SUMS}: a bench shard written before bench folders were sealed (hint: merge it without --key)")],
        ));
    }
    Ok(())
}

fn held(dir: &Path, v: &Verification) -> Result<(), MergeError> {
    if v.mismatches.is_empty() {
        return Ok(());
    }
    let problems: Vec<String> = v.mismatches.iter().map(ToString::to_string).collect();
    Err(refuse(dir, "does not verify", &problems))
}

/// Admits the partition folder `dir`: every file its `SHA256SUMS` lists
/// has the digest listed, `partition.json` and `join.bin` among them,
/// and with `key` the folder is signed by it.
pub fn partition(dir: &Path, key: Option<&PublicKey>) -> Result<(), MergeError> {
    use crate::check::spill::export::{JOIN_FILE, PARTITION_FILE};
    sealed(dir, &[PARTITION_FILE, JOIN_FILE], key)
}

/// Seals a partition's folder once `check --partition` wrote it:
/// `SHA256SUMS` of `partition.json` and `join.bin`, so a merge tells a
/// file changed after the check (a copied partition with another index, a
/// truncated `join.bin`) from a finding. A signature of an earlier check
/// in the folder is removed: it signed other files.
pub fn seal_partition(dir: &Path) -> Result<(), seal::SealError> {
    use crate::check::spill::export::{JOIN_FILE, PARTITION_FILE};
    let old = dir.join(attest::ENVELOPE_FILE);
    match std::fs::remove_file(&old) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(seal::SealError::Io {
                path: old,
                source: e,
            })
        }
        _ => {}
    }
    seal::seal_files(dir, &[PARTITION_FILE, JOIN_FILE])
}

/// Holds the folder `dir` (no `report.json`: a bench's, a partition's) to
/// its `SHA256SUMS`, which must list `required`, and with `key` to its
/// signature.
fn sealed(dir: &Path, required: &[&str], key: Option<&PublicKey>) -> Result<(), MergeError> {
    let sums = seal::read_sums(&dir.join(SUMS)).map_err(|e| {
        refuse(
            dir,
            "not sealed",
            &[format!("{e} (the command that wrote the folder seals it)")],
        )
    })?;
    let mut problems = Vec::new();
    for name in required {
        if !sums.iter().any(|d| d.path == *name) {
            problems.push(format!("{name}: {SUMS} does not list it"));
        }
    }
    for d in &sums {
        match seal::sealed_file_digest(dir, &d.path) {
            Ok(found) if found == d.sha256 => {}
            Ok(found) => problems.push(format!(
                "{}: changed since the folder was sealed (truncated, corrupt or edited: SHA-256 {found}, sealed {})",
                d.path, d.sha256
            )),
            Err(why) => problems.push(format!("{}: sealed but unreadable: {why}", d.path)),
        }
    }
    let signed = attest::check_folder(dir, key);
    problems.extend(
        signed
            .problems
            .iter()
            .map(|(file, why)| format!("{file}: signature: {why}")),
    );
    if key.is_some() && !matches!(signed.signature, Signature::Holds(_)) && problems.is_empty() {
        problems.push("the signature was not checked".into());
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(refuse(dir, "does not verify", &problems))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_signature_covers_the_shard_manifest_by_its_name() {
        assert_eq!(crate::report::attest::ALSO_SIGNED, [crate::shard::MANIFEST]);
    }
}
