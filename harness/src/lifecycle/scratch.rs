//! Scratch folders (the built-in receiver's database) that an abnormal
//! exit cannot leave behind for good.
//!
//! A folder is removed when its [`tempfile::TempDir`] drops, which a
//! SIGKILL or an abort never lets happen. So each folder carries a marker
//! file naming its owner (pid and the process's start time, so a reused
//! pid is not mistaken for it), and every new scratch folder first sweeps
//! the ones whose owner is gone.

use std::path::Path;
use std::time::{Duration, SystemTime};

/// The prefix of every scratch folder in the system's temporary folder.
pub const PREFIX: &str = "hookstorm-scratch-";

/// The marker file in each.
pub const MARKER: &str = "hookstorm-owner";

/// A folder without a marker this old is left by a process that died
/// between creating it and marking it.
const UNMARKED_GRACE: Duration = Duration::from_secs(60);

/// The start time of process `pid` (field 22 of `/proc/PID/stat`), if it runs.
fn start_time(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19).map(str::to_string)
}

/// This process's marker text.
fn owner() -> String {
    let pid = std::process::id();
    format!("{pid} {}\n", start_time(pid).unwrap_or_default())
}

/// Whether the owner a marker names is gone.
fn owner_gone(marker: &str) -> bool {
    let mut it = marker.split_whitespace();
    let (Some(pid), start) = (it.next().and_then(|p| p.parse().ok()), it.next()) else {
        return true;
    };
    match start_time(pid) {
        None => true,
        Some(now) => start.is_some_and(|s| s != now),
    }
}

/// Removes the scratch folders in `dir` whose owner is gone; returns how many.
pub fn sweep(dir: &Path) -> usize {
    if !cfg!(target_os = "linux") {
        return 0; // owners are looked up in /proc
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for e in entries.flatten() {
        let name = e.file_name();
        if !name.to_string_lossy().starts_with(PREFIX) {
            continue;
        }
        let path = e.path();
        let gone = match std::fs::read_to_string(path.join(MARKER)) {
            Ok(m) => owner_gone(&m),
            Err(_) => e
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| SystemTime::now().duration_since(t).ok())
                .is_some_and(|age| age > UNMARKED_GRACE),
        };
        if gone && std::fs::remove_dir_all(&path).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// A new scratch folder in the system's temporary folder, marked as this
/// process's, after sweeping those whose owner is gone.
pub fn create() -> std::io::Result<tempfile::TempDir> {
    let tmp = std::env::temp_dir();
    sweep(&tmp);
    let dir = tempfile::Builder::new().prefix(PREFIX).tempdir_in(&tmp)?;
    std::fs::write(dir.path().join(MARKER), owner())?;
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_whose_owner_is_gone_is_swept_and_a_live_ones_is_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let dead = tmp.path().join(format!("{PREFIX}dead"));
        std::fs::create_dir(&dead).unwrap();
        std::fs::write(dead.join("receiver.db"), b"x").unwrap();
        // A pid above the kernel's limit never runs.
        std::fs::write(dead.join(MARKER), "4194305 1\n").unwrap();
        let reused = tmp.path().join(format!("{PREFIX}reused"));
        std::fs::create_dir(&reused).unwrap();
        // Our pid, but another start time: a reused pid, its owner is gone.
        std::fs::write(reused.join(MARKER), format!("{} 0\n", std::process::id())).unwrap();
        let live = tmp.path().join(format!("{PREFIX}live"));
        std::fs::create_dir(&live).unwrap();
        std::fs::write(live.join(MARKER), owner()).unwrap();
        let other = tmp.path().join("not-ours");
        std::fs::create_dir(&other).unwrap();
        assert_eq!(sweep(tmp.path()), 2);
        assert!(!dead.exists() && !reused.exists());
        assert!(live.exists() && other.exists());
    }
}
