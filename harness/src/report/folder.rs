//! A report folder of its own for every run, bench, merge, sink run and
//! exploration: made with `mkdir`'s create-new rule, never reused. Two runs
//! started in one second with one seed into one `--out` used to share a
//! folder (`create_dir_all` takes an existing one), each overwriting the
//! other's files, so the digest the second printed matched nothing on disk.
//! Now the second gets the id with `-2` (then `-3`, …) appended.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

/// Folders tried with one stem before giving up (a folder full of runs of
/// one second and one seed is someone else's problem to look at).
const TRIES: u32 = 1000;

/// Creates `out` (with its parents) and in it a new folder named `stem`,
/// or `stem-2`, `stem-3`, … when that is taken: its id and path.
pub fn create_unique(out: &Path, stem: &str) -> std::io::Result<(String, PathBuf)> {
    std::fs::create_dir_all(out)?;
    for n in 1..=TRIES {
        let id = if n == 1 {
            stem.to_string()
        } else {
            format!("{stem}-{n}")
        };
        let dir = out.join(&id);
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok((id, dir)),
            Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::new(
        ErrorKind::AlreadyExists,
        format!(
            "{}: {TRIES} folders named {stem}… already exist",
            out.display()
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_taken_folder_is_never_reused_even_by_threads_racing_for_one_name() {
        let out = tempfile::tempdir().expect("tempdir");
        let made: Vec<(String, PathBuf)> = std::thread::scope(|s| {
            let racers: Vec<_> = (0..8)
                .map(|_| s.spawn(|| create_unique(&out.path().join("reports"), "20261205-run")))
                .collect();
            racers
                .into_iter()
                .map(|r| r.join().expect("racer").expect("a folder"))
                .collect()
        });
        let mut ids: Vec<&str> = made.iter().map(|(id, _)| id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), 8, "{made:?}");
        assert!(ids.contains(&"20261205-run") && ids.contains(&"20261205-run-8"));
        assert!(made.iter().all(|(_, dir)| dir.is_dir()));
    }
}
