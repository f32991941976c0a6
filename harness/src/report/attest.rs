//! A signed report folder: `report.dsse.json`, a DSSE envelope
//! ([`super::dsse`]) holding an in-toto Statement v1 whose subjects are
//! the folder's sealed files with their SHA-256 (`report.json` first, then
//! `SHA256SUMS` itself and every file it lists, and `shard.json` for a
//! shard), and whose predicate says what was signed: the verdict, the exit
//! code, the run id and the hookstorm version.
//!
//! Why: the seal shows a folder is consistent, the signature shows who
//! made it. `run`, `sink`, `merge`, `bench` and `check --partition` sign
//! when a key is in the environment ([`KEY_ENV`], [`KEY_FILE_ENV`]); `verify --key`,
//! `merge --key` and `check --key` check it ([`check_folder`]). The
//! envelope is not in `SHA256SUMS` (it signs the seal) and is read like a
//! sealed file: a regular file of the folder's own, within a byte budget.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::dsse::{Envelope, KeyError, PublicKey, SigningKey};
use super::seal::{self, FileDigest, REPORT_JSON, SUMS};

/// The envelope's file in a signed folder.
pub const ENVELOPE_FILE: &str = "report.dsse.json";
/// The envelope's payload type: an in-toto statement.
pub const PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";
/// The statement's `_type`.
pub const STATEMENT_TYPE: &str = "https://in-toto.io/Statement/v1";
/// The statement's `predicateType`: hookstorm's own.
pub const PREDICATE_TYPE: &str = "https://hookstorm.dev/attestation/report/v1";
/// The variable holding the private key (PKCS#8, PEM or base64).
pub const KEY_ENV: &str = "HOOKSTORM_SIGNING_KEY";
/// The variable naming a file holding the private key instead.
pub const KEY_FILE_ENV: &str = "HOOKSTORM_SIGNING_KEY_FILE";
/// Files outside `SHA256SUMS` a signature also covers when they are there:
/// a shard's manifest (`shard::MANIFEST`, named here because the shard
/// stage comes after the reports; a test of `merge` holds them equal).
pub const ALSO_SIGNED: [&str; 1] = ["shard.json"];

/// One subject of the statement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Subject {
    /// The file, as `SHA256SUMS` names it.
    pub name: String,
    /// `{"sha256": HEX}`.
    pub digest: BTreeMap<String, String>,
}

/// What was signed, beyond the files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Predicate {
    /// `run`, `sink`, `merge`, `bench` or `check-partition`.
    pub kind: String,
    /// The run id (the folder's name when it was written).
    pub run_id: String,
    /// The verdict (`pass`, `fail`, `unknown`; none for a partition).
    pub verdict: Option<String>,
    /// The exit code the command ended with (none for a partition).
    pub exit_code: Option<i32>,
    /// The hookstorm version that signed.
    pub hookstorm_version: String,
}

/// An in-toto Statement v1.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Statement {
    /// [`STATEMENT_TYPE`].
    #[serde(rename = "_type")]
    pub statement_type: String,
    /// The files signed.
    pub subject: Vec<Subject>,
    /// [`PREDICATE_TYPE`].
    #[serde(rename = "predicateType")]
    pub predicate_type: String,
    /// What was signed.
    pub predicate: Predicate,
}

/// Signing failed, or the key in the environment is not one.
#[derive(Debug, thiserror::Error)]
pub enum SignError {
    /// The key could not be read.
    #[error(transparent)]
    Key(#[from] KeyError),
    /// Both variables set.
    #[error("both ${KEY_ENV} and ${KEY_FILE_ENV} are set (hint: set one)")]
    Both,
    /// The key file could not be read.
    #[error("${KEY_FILE_ENV}: {path}: {why}")]
    KeyFile {
        /// The file.
        path: PathBuf,
        /// Why.
        why: String,
    },
    /// The folder's seal could not be read.
    #[error(transparent)]
    Seal(#[from] seal::SealError),
    /// Writing the envelope failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// The signing key the environment holds (`lookup` reads a variable), if
/// any: `$HOOKSTORM_SIGNING_KEY` (the key) or `$HOOKSTORM_SIGNING_KEY_FILE`
/// (a file holding it). An empty variable is unset, so a pipeline whose
/// secret is absent runs unsigned.
pub fn key_from_env(
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<Option<SigningKey>, SignError> {
    let get = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
    match (get(KEY_ENV), get(KEY_FILE_ENV)) {
        (Some(_), Some(_)) => Err(SignError::Both),
        (Some(text), None) => Ok(Some(SigningKey::from_pem(&text, &format!("${KEY_ENV}"))?)),
        (None, Some(file)) => {
            let path = PathBuf::from(file.trim());
            let text = crate::limits::budget::read_text(&path, crate::limits::budget::SIGNING)
                .map_err(|e| SignError::KeyFile {
                    path: path.clone(),
                    why: e.to_string(),
                })?;
            Ok(Some(SigningKey::from_pem(
                &text,
                &path.display().to_string(),
            )?))
        }
        (None, None) => Ok(None),
    }
}

/// Reads a public key file (`verify --key`, `merge --key`).
pub fn read_public_key(path: &Path) -> Result<PublicKey, KeyError> {
    let what = path.display().to_string();
    let text =
        crate::limits::budget::read_text(path, crate::limits::budget::SIGNING).map_err(|e| {
            KeyError::Unreadable {
                what: what.clone(),
                why: e.to_string(),
            }
        })?;
    PublicKey::from_pem(&text, &what)
}

fn subject(name: &str, sha256: &str) -> Subject {
    Subject {
        name: name.to_string(),
        digest: BTreeMap::from([("sha256".to_string(), sha256.to_string())]),
    }
}

/// The subjects of `dir` as it is now: `report.json` (when sealed),
/// `SHA256SUMS`, every other file it lists, and the [`ALSO_SIGNED`] files.
fn subjects_of(dir: &Path) -> Result<Vec<Subject>, SignError> {
    let sums_path = dir.join(SUMS);
    let sums = seal::read_sums(&sums_path)?;
    let io = |path: PathBuf| move |source| SignError::Io { path, source };
    let mut out: Vec<Subject> = sums
        .iter()
        .filter(|d| d.path == REPORT_JSON)
        .map(|d| subject(&d.path, &d.sha256))
        .collect();
    out.push(subject(
        SUMS,
        &seal::sha256_file(&sums_path).map_err(io(sums_path.clone()))?,
    ));
    out.extend(
        sums.iter()
            .filter(|d| d.path != REPORT_JSON)
            .map(|d| subject(&d.path, &d.sha256)),
    );
    for name in ALSO_SIGNED {
        let path = dir.join(name);
        if path.is_file() {
            out.push(subject(name, &seal::sha256_file(&path).map_err(io(path))?));
        }
    }
    Ok(out)
}

/// Signs the sealed folder `dir`: writes `report.dsse.json` with the
/// statement of its files as they are now and `predicate`.
pub fn sign_folder(
    dir: &Path,
    key: &SigningKey,
    predicate: Predicate,
) -> Result<PathBuf, SignError> {
    let statement = Statement {
        statement_type: STATEMENT_TYPE.into(),
        subject: subjects_of(dir)?,
        predicate_type: PREDICATE_TYPE.into(),
        predicate,
    };
    let path = dir.join(ENVELOPE_FILE);
    let io = |source| SignError::Io {
        path: path.clone(),
        source,
    };
    let payload = serde_json::to_vec(&statement).map_err(|e| io(std::io::Error::other(e)))?;
    let env = key.seal(PAYLOAD_TYPE, &payload);
    let json = serde_json::to_vec_pretty(&env).map_err(|e| io(std::io::Error::other(e)))?;
    std::fs::write(&path, json).map_err(io)?;
    Ok(path)
}

/// Whether a folder is signed, and by what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signature {
    /// No `report.dsse.json`.
    Unsigned,
    /// Signed, the signature not checked (no key given): the key ids
    /// the envelope names.
    NotChecked(Vec<String>),
    /// Signed by the key given (its id), every subject as signed.
    Holds(String),
    /// A signature that does not hold (the mismatches say why).
    Broken,
}

/// What [`check_folder`] found: the signature, and what does not hold,
/// each as (file, why).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    /// Whether the folder is signed, and by what.
    pub signature: Signature,
    /// (file, why) for everything that does not hold.
    pub problems: Vec<(String, String)>,
}

/// Checks `dir`'s signature against `key` (none: only says whether it
/// is signed), and its statement's subjects against the folder: each
/// subject `SHA256SUMS` lists must have the digest listed (the seal check
/// then holds the file to it), every other subject the digest of the
/// folder's own file, and `report.json`, when there, and `SHA256SUMS` must
/// be subjects.
pub fn check_folder(dir: &Path, key: Option<&PublicKey>) -> Checked {
    match signature_of(dir, key) {
        Ok(Some(subjects)) => {
            let problems = subject_problems(dir, &subjects);
            let signature = match (problems.is_empty(), key) {
                (true, Some(k)) => Signature::Holds(k.keyid()),
                _ => Signature::Broken,
            };
            Checked {
                signature,
                problems,
            }
        }
        Ok(None) => Checked {
            signature: Signature::Unsigned,
            problems: key
                .map(|k| {
                    let why = format!(
                        "the folder is unsigned, and a signature by key {} was asked for",
                        k.keyid()
                    );
                    (ENVELOPE_FILE.to_string(), why)
                })
                .into_iter()
                .collect(),
        },
        Err(Unopened::NoKey(ids)) => Checked {
            signature: Signature::NotChecked(ids),
            problems: Vec::new(),
        },
        Err(Unopened::Broken(why)) => Checked {
            signature: Signature::Broken,
            problems: vec![(ENVELOPE_FILE.to_string(), why)],
        },
    }
}

/// Why an envelope's statement was not read.
enum Unopened {
    /// No key to check it with: the ids it names.
    NoKey(Vec<String>),
    /// It does not hold, or is no envelope.
    Broken(String),
}

/// The signed subjects of `dir` (`None`: the folder is unsigned).
fn signature_of(dir: &Path, key: Option<&PublicKey>) -> Result<Option<Vec<Subject>>, Unopened> {
    let text = match seal::read_own_file(dir, ENVELOPE_FILE, crate::limits::budget::SIGNING) {
        Ok(Some(t)) => t,
        Ok(None) => return Ok(None),
        Err(why) => return Err(Unopened::Broken(why)),
    };
    let env: Envelope = serde_json::from_slice(&text)
        .map_err(|e| Unopened::Broken(format!("not a DSSE envelope: {e}")))?;
    let Some(key) = key else {
        let ids = env.signatures.iter().map(|s| s.keyid.clone()).collect();
        return Err(Unopened::NoKey(ids));
    };
    open_statement(&env, key)
        .map(Some)
        .map_err(Unopened::Broken)
}

/// The statement's subjects, when `env` holds for `key` and is an in-toto
/// statement of hookstorm's.
fn open_statement(env: &Envelope, key: &PublicKey) -> Result<Vec<Subject>, String> {
    if env.payload_type != PAYLOAD_TYPE {
        return Err(format!(
            "payloadType {:?}, not {PAYLOAD_TYPE}",
            crate::limits::budget::quote(&env.payload_type)
        ));
    }
    let payload = key.open(env).map_err(|e| e.to_string())?;
    let st: Statement = serde_json::from_slice(&payload)
        .map_err(|e| format!("the signed payload is not an in-toto statement: {e}"))?;
    if st.statement_type != STATEMENT_TYPE || st.predicate_type != PREDICATE_TYPE {
        return Err(format!(
            "a statement of type {} with predicate {}, not hookstorm's",
            crate::limits::budget::quote(&st.statement_type),
            crate::limits::budget::quote(&st.predicate_type)
        ));
    }
    Ok(st.subject)
}

/// Each subject against the folder (see [`check_folder`]).
fn subject_problems(dir: &Path, subjects: &[Subject]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let sums: Vec<FileDigest> = seal::read_sums(&dir.join(SUMS)).unwrap_or_default();
    for s in subjects {
        let Some(signed) = s.digest.get("sha256") else {
            out.push((s.name.clone(), "signed without a SHA-256".into()));
            continue;
        };
        // The folder's own file; a merged report's histories lie in the
        // shards' folders, outside it: held to the seal's listing, which
        // the seal check holds to them.
        let listed = sums.iter().find(|d| d.path == s.name && s.name != SUMS);
        let found = match (seal::sealed_file_digest(dir, &s.name), listed) {
            (Err(_), Some(d)) if Path::new(&s.name).is_absolute() => Ok(d.sha256.clone()),
            (found, _) => found,
        };
        match found {
            Ok(f) if &f == signed => {}
            Ok(f) => out.push((
                s.name.clone(),
                format!("changed since it was signed (SHA-256 {f}, signed {signed})"),
            )),
            Err(why) => out.push((s.name.clone(), format!("signed but unreadable: {why}"))),
        }
    }
    let present = |name: &str| dir.join(name).exists();
    for must in [REPORT_JSON, SUMS].into_iter().filter(|n| present(n)) {
        if !subjects.iter().any(|s| s.name == must) {
            out.push((must.to_string(), "not among the files signed".into()));
        }
    }
    for d in &sums {
        if !subjects.iter().any(|s| s.name == d.path) {
            out.push((
                d.path.clone(),
                format!("{SUMS} lists it, the signature does not"),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_comes_from_one_variable_or_a_file_and_an_empty_one_is_unset() {
        let (key, pem) = SigningKey::generate().unwrap();
        let none = key_from_env(|_| Some(" ".into())).unwrap();
        assert!(none.is_none());
        let k = key_from_env(|v| (v == KEY_ENV).then(|| pem.clone()))
            .unwrap()
            .unwrap();
        assert_eq!(k.public(), key.public());
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("k.pem");
        std::fs::write(&file, &pem).unwrap();
        let f = file.display().to_string();
        let k = key_from_env(|v| (v == KEY_FILE_ENV).then(|| f.clone()))
            .unwrap()
            .unwrap();
        assert_eq!(k.public(), key.public());
        let both = key_from_env(|_| Some(pem.clone())).unwrap_err();
        assert!(matches!(both, SignError::Both));
        let bad = key_from_env(|v| (v == KEY_ENV).then(|| "c2VjcmV0".into())).unwrap_err();
        let said = bad.to_string();
        assert!(
            said.starts_with("$HOOKSTORM_SIGNING_KEY: not an Ed25519 private key"),
            "{said}"
        );
    }

    #[test]
    fn a_signed_folder_checks_with_its_key_and_names_a_file_edited_after() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("partition.json"), b"{}").unwrap();
        std::fs::write(dir.path().join("join.bin"), b"records").unwrap();
        std::fs::write(dir.path().join(SUMS), b"").unwrap();
        seal::reseal(dir.path(), &["partition.json", "join.bin"]).unwrap();
        let (key, _) = SigningKey::generate().unwrap();
        let predicate = Predicate {
            kind: "check-partition".into(),
            run_id: "p".into(),
            verdict: None,
            exit_code: None,
            hookstorm_version: "0".into(),
        };
        sign_folder(dir.path(), &key, predicate).unwrap();
        let ok = check_folder(dir.path(), Some(&key.public()));
        assert_eq!(
            ok.signature,
            Signature::Holds(key.public().keyid()),
            "{ok:?}"
        );
        let (other, _) = SigningKey::generate().unwrap();
        let no = check_folder(dir.path(), Some(&other.public()));
        assert_eq!(no.signature, Signature::Broken);
        assert!(
            no.problems[0]
                .1
                .contains("no signature holds for the key given"),
            "{no:?}"
        );
        // A file edited, its seal rebuilt: the signature names SHA256SUMS.
        std::fs::write(dir.path().join("join.bin"), b"other").unwrap();
        seal::reseal(dir.path(), &["join.bin"]).unwrap();
        let edited = check_folder(dir.path(), Some(&key.public()));
        let files: Vec<&str> = edited.problems.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(files, [SUMS, "join.bin"], "{edited:?}");
        let unchecked = check_folder(dir.path(), None);
        assert_eq!(
            unchecked.signature,
            Signature::NotChecked(vec![key.public().keyid()])
        );
    }
}
