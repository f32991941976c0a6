//! The seal of a report folder: the SHA-256 of every file a run wrote, so a
//! reader can check later that a folder is the one the run wrote.
//!
//! `report.json` lists the digests of the histories and states (its
//! `conformance.files`); `summary.md`, `report.html` and the console name
//! the digest of `report.json` itself (a file cannot hold its own); and
//! `SHA256SUMS` holds them all, `report.json` and the other reports
//! included, in the format `sha256sum -c SHA256SUMS` reads, so any tool
//! can check a folder. `hookstorm verify` reads it ([`super::verify`]).

use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::RunReport;

/// The file that lists every digest.
pub const SUMS: &str = "SHA256SUMS";

/// The report whose digest the other reports name.
pub const REPORT_JSON: &str = "report.json";

/// One file and its SHA-256.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileDigest {
    /// The file, relative to the report folder (absolute when it lies
    /// outside, as a merged report's histories do).
    pub path: String,
    /// Its SHA-256, in lowercase hex.
    pub sha256: String,
}

/// The digests of a written report.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Seal {
    /// Every history and state file of the run's scenarios.
    pub files: Vec<FileDigest>,
    /// `report.json`'s own digest, once it is written.
    pub report_json: Option<String>,
}

/// The SHA-256 of `bytes`, in lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The SHA-256 of the file at `path`, read in blocks.
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex::encode(hasher.finalize()))
}

/// Where `path` (as a report records it) lies, seen from `dir`.
pub fn resolve(dir: &Path, path: &str) -> PathBuf {
    dir.join(path)
}

/// The digest of the file a seal names `name` in `dir`, as `verify` reads
/// it: only a regular file of the folder's own counts. A name that climbs
/// out (`../x`) or starts at the root (`/etc/hostname`), a symbolic link
/// (it may point anywhere) and a device or a pipe (`/dev/zero` never
/// ends) are refused, with why, before a byte is read.
pub fn sealed_file_digest(dir: &Path, name: &str) -> Result<String, String> {
    use std::path::Component;
    let inside = !name.is_empty()
        && Path::new(name)
            .components()
            .all(|c| matches!(c, Component::Normal(_)));
    if !inside {
        return Err("outside the report folder: a seal names only the folder's own files".into());
    }
    let path = resolve(dir, name);
    let meta = std::fs::symlink_metadata(&path).map_err(|e| e.to_string())?;
    if meta.file_type().is_symlink() {
        return Err("a symbolic link: a sealed file is the folder's own, not a pointer".into());
    }
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    sha256_file(&path).map_err(|e| e.to_string())
}

/// The bytes of `name` in `dir` when it is there (`None`: absent), read
/// as [`sealed_file_digest`] reads: only a regular file of the folder's
/// own, refused past `cap` bytes.
pub fn read_own_file(dir: &Path, name: &str, cap: usize) -> Result<Option<Vec<u8>>, String> {
    let path = resolve(dir, name);
    let meta = match std::fs::symlink_metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    if meta.file_type().is_symlink() {
        return Err("a symbolic link: a folder's file is its own, not a pointer".into());
    }
    crate::limits::budget::read_file(&path, cap)
        .map(Some)
        .map_err(|e| e.to_string())
}

/// The history and state files of `report`'s scenarios that exist in
/// `dir`, each with its digest, in run order.
pub fn data_files(report: &RunReport, dir: &Path) -> Vec<FileDigest> {
    let mut out = Vec::new();
    for s in report.scenarios.iter().filter(|s| s.skipped.is_none()) {
        let paths = std::iter::once(s.history.as_str()).chain(s.state.as_deref());
        for path in paths.filter(|p| !p.is_empty()) {
            if out.iter().any(|d: &FileDigest| d.path == path) {
                continue;
            }
            if let Ok(sha256) = sha256_file(&resolve(dir, path)) {
                out.push(FileDigest {
                    path: path.to_string(),
                    sha256,
                });
            }
        }
    }
    out
}

/// Writes `digests` to `path` as `sha256sum` does: `HEX  PATH` a line.
pub fn write_sums(path: &Path, digests: &[FileDigest]) -> std::io::Result<()> {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    for d in digests {
        writeln!(out, "{}  {}", d.sha256, d.path)?;
    }
    out.flush()
}

/// Seals `dir` with a new `SHA256SUMS` of those of `names` that are
/// regular files there, as they are now: for a folder without a
/// `report.json` (a bench's, a partition's of a check).
pub fn seal_files(dir: &Path, names: &[&str]) -> Result<(), SealError> {
    let mut digests = Vec::new();
    for name in names {
        let file = dir.join(name);
        if !std::fs::symlink_metadata(&file).is_ok_and(|m| m.is_file()) {
            continue;
        }
        let sha256 = sha256_file(&file).map_err(|source| SealError::Io { path: file, source })?;
        digests.push(FileDigest {
            path: name.to_string(),
            sha256,
        });
    }
    let path = dir.join(SUMS);
    write_sums(&path, &digests).map_err(|source| SealError::Io { path, source })
}

/// Records in `dir`'s `SHA256SUMS` the digests of `names` as they are now
/// (replacing their lines, or adding them): for a command that adds to a
/// sealed folder, as `explore` adds `explore.json` and its own summary.
pub fn reseal(dir: &Path, names: &[&str]) -> Result<(), SealError> {
    let path = dir.join(SUMS);
    let mut sums = read_sums(&path)?;
    for name in names {
        let file = dir.join(name);
        let sha256 = sha256_file(&file).map_err(|source| SealError::Io { path: file, source })?;
        match sums.iter_mut().find(|d| d.path == *name) {
            Some(d) => d.sha256 = sha256,
            None => sums.push(FileDigest {
                path: name.to_string(),
                sha256,
            }),
        }
    }
    write_sums(&path, &sums).map_err(|source| SealError::Io { path, source })
}

/// `SHA256SUMS` could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SealError {
    /// The file is not there (a report written before folders were sealed).
    #[error("{path}: no such file: the folder was written before reports were sealed, or the file was removed")]
    Missing {
        /// The file.
        path: PathBuf,
    },
    /// I/O on the file.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A line is not `HEX  PATH`.
    #[error("{path}: line {line}: expected a 64-digit SHA-256, two spaces and a file name")]
    Line {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
    },
}

/// Reads a `SHA256SUMS` file.
pub fn read_sums(path: &Path) -> Result<Vec<FileDigest>, SealError> {
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(SealError::Missing { path: path.into() })
        }
        Err(source) => {
            return Err(SealError::Io {
                path: path.into(),
                source,
            })
        }
    };
    let mut out = Vec::new();
    // A sums file is a few lines a scenario; the budget keeps a hostile one small.
    let reader = std::io::BufReader::new(file.take(crate::limits::budget::REPORT_FILE as u64));
    for (n, line) in reader.lines().enumerate() {
        let line = line.map_err(|source| SealError::Io {
            path: path.into(),
            source,
        })?;
        if line.is_empty() {
            continue;
        }
        let bad = || SealError::Line {
            path: path.into(),
            line: n + 1,
        };
        let (hex, name) = line.split_once("  ").ok_or_else(bad)?;
        let name = name.strip_prefix('*').unwrap_or(name);
        if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) || name.is_empty() {
            return Err(bad());
        }
        out.push(FileDigest {
            path: name.to_string(),
            sha256: hex.to_ascii_lowercase(),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_digest_is_the_sha256_of_the_bytes() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, b"abc").unwrap();
        assert_eq!(sha256_file(&p).unwrap(), sha256_hex(b"abc"));
    }

    #[test]
    fn sums_read_back_as_written_and_a_bad_line_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(SUMS);
        let digests = vec![FileDigest {
            path: "baseline/history.jsonl".into(),
            sha256: sha256_hex(b"x"),
        }];
        write_sums(&p, &digests).unwrap();
        assert_eq!(read_sums(&p).unwrap(), digests);
        std::fs::write(&p, "not a digest\n").unwrap();
        let e = read_sums(&p).unwrap_err().to_string();
        assert!(
            e.ends_with("line 1: expected a 64-digit SHA-256, two spaces and a file name"),
            "{e}"
        );
        let gone = read_sums(&dir.path().join("none")).unwrap_err();
        assert!(matches!(gone, SealError::Missing { .. }));
    }
}
