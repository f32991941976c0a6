//! One supervised process: `sh -c COMMAND` in its own process group, output
//! appended to a log file, signalled as a group.
//!
//! A process group, not a pid, is what gets signalled: `sh -c` may fork the
//! real program (or a script may start several), and a SIGKILL must reach
//! all of them. Every live group is also in a process-wide registry so that
//! [`kill_all`] (called on Ctrl-C) can end them even while their owners are
//! still borrowed elsewhere.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio::process::{Child, Command};

use super::config::{expand, LifecycleError};
use super::os;
use super::signal::{ProcEntry, Signal};

static LIVE: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

fn live() -> std::sync::MutexGuard<'static, BTreeSet<i32>> {
    LIVE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Sends SIGKILL to every process group the harness started and still owns.
pub fn kill_all() {
    for pgid in std::mem::take(&mut *live()) {
        let _ = os::killpg(pgid, Signal::Kill);
    }
}

/// The process groups the harness started and still owns.
pub fn live_groups() -> Vec<i32> {
    live().iter().copied().collect()
}

/// Every live (not zombie) process on the machine, from `/proc` (empty
/// where there is no `/proc`: Linux only).
pub fn processes() -> Vec<ProcEntry> {
    os::processes()
}

/// Pids of the live (not zombie) processes in group `pgid`.
pub fn group_members(pgid: i32) -> Vec<i32> {
    processes()
        .into_iter()
        .filter(|p| p.pgrp == pgid)
        .map(|p| p.pid)
        .collect()
}

/// How much of a log a readiness check by log line reads, at most.
pub const LOG_SCAN: u64 = 8 * 1024 * 1024;

/// A supervised process; dropping it kills its group.
#[derive(Debug)]
pub struct Process {
    name: String,
    command: String,
    /// Where it runs (`None`: hookstorm's working directory).
    dir: Option<PathBuf>,
    env: BTreeMap<String, String>,
    child: Option<Child>,
    pgid: Option<i32>,
    log: PathBuf,
    /// The log file's length when the latest start began: what the
    /// process wrote since then is after it.
    log_start: u64,
    starts: u32,
}

impl Process {
    /// A process not started yet; `name` is also its log file's stem.
    pub fn new(name: &str, command: &str, env: BTreeMap<String, String>) -> Process {
        Process {
            name: name.to_string(),
            command: command.to_string(),
            dir: None,
            env,
            child: None,
            pgid: None,
            log: PathBuf::from(format!("{name}.log")),
            log_start: 0,
            starts: 0,
        }
    }

    /// Runs it in `dir` (the folder of the target file that names it).
    pub fn in_dir(mut self, dir: Option<PathBuf>) -> Process {
        self.dir = dir;
        self
    }

    /// Where it runs (`None`: hookstorm's working directory).
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// Its name (`receiver`, `worker`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The log file of its latest start.
    pub fn log(&self) -> &Path {
        &self.log
    }

    /// The pid (= process group id) of the running process.
    pub fn pid(&self) -> Option<u32> {
        self.pgid.map(|p| p as u32)
    }

    /// Whether a line it wrote to its log since its latest start contains
    /// `text` (at most [`LOG_SCAN`] bytes of it are read).
    pub fn logged_since_start(&self, text: &str) -> bool {
        use std::io::{Read, Seek, SeekFrom};
        let Ok(mut f) = std::fs::File::open(&self.log) else {
            return false;
        };
        if f.seek(SeekFrom::Start(self.log_start)).is_err() {
            return false;
        }
        let mut buf = Vec::new();
        if f.take(LOG_SCAN).read_to_end(&mut buf).is_err() {
            return false;
        }
        memchr::memmem::find(&buf, text.as_bytes()).is_some()
    }

    /// How many times it was started.
    pub fn starts(&self) -> u32 {
        self.starts
    }

    /// Starts it with `extra` environment on top of its own, output
    /// appended to `<log_dir>/<name>.log`. A running process is killed first.
    /// Needs a Unix platform (a process group of its own); elsewhere it is
    /// [`LifecycleError::Unsupported`].
    pub async fn spawn(
        &mut self,
        log_dir: &Path,
        extra: &BTreeMap<String, String>,
    ) -> Result<u32, LifecycleError> {
        self.kill().await;
        os::check_supported()?;
        let err = |source| LifecycleError::Spawn {
            name: self.name.clone(),
            command: self.command.clone(),
            source,
        };
        std::fs::create_dir_all(log_dir).map_err(err)?;
        self.log = log_dir.join(format!("{}.log", self.name));
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .map_err(err)?;
        self.log_start = out.metadata().map(|m| m.len()).unwrap_or(0);
        let errf = out.try_clone().map_err(err)?;
        let mut cmd = Command::new("sh");
        if let Some(dir) = &self.dir {
            cmd.current_dir(dir);
        }
        cmd.arg("-c")
            .arg(expand(&self.command))
            .envs(&self.env)
            .envs(extra)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(errf);
        #[cfg(unix)]
        cmd.process_group(0);
        os::die_with_parent(cmd.as_std_mut());
        let child = cmd.spawn().map_err(err)?;
        let pid = child.id().unwrap_or(0) as i32;
        live().insert(pid);
        self.child = Some(child);
        self.pgid = Some(pid);
        self.starts += 1;
        Ok(pid as u32)
    }

    /// Sends `signal` to the whole group.
    pub fn signal(&self, signal: Signal) -> Result<(), LifecycleError> {
        let Some(pgid) = self.pgid else {
            return Ok(());
        };
        os::killpg(pgid, signal).map_err(|source| LifecycleError::Signal {
            name: self.name.clone(),
            source,
        })
    }

    /// Whether it exited (reaping it); `Some(status text)` when it did.
    pub fn exited(&mut self) -> Option<String> {
        let child = self.child.as_mut()?;
        match child.try_wait() {
            Ok(Some(status)) => {
                // The leader is gone; make sure nothing else of its group lingers.
                self.forget(true);
                Some(status.to_string())
            }
            Ok(None) => None,
            Err(e) => Some(e.to_string()),
        }
    }

    /// Whether it runs.
    pub fn running(&mut self) -> bool {
        self.child.is_some() && self.exited().is_none()
    }

    /// SIGKILLs the group and reaps the leader.
    pub async fn kill(&mut self) {
        if self.child.is_none() {
            return;
        }
        let _ = self.signal(Signal::Kill);
        if let Some(child) = self.child.as_mut() {
            let _ = tokio::time::timeout(Duration::from_secs(5), child.wait()).await;
        }
        self.forget(false);
    }

    /// SIGTERM, then SIGKILL after `grace` if it is still there.
    pub async fn terminate(&mut self, grace: Duration) {
        if self.child.is_none() {
            return;
        }
        let _ = self.signal(Signal::Cont);
        let _ = self.signal(Signal::Term);
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if self.exited().is_some() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.kill().await;
    }

    fn forget(&mut self, kill_group: bool) {
        if let Some(pgid) = self.pgid.take() {
            if kill_group {
                let _ = os::killpg(pgid, Signal::Kill);
            }
            live().remove(&pgid);
        }
        self.child = None;
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            // The leader is reaped by tokio's orphan reaper.
            let _ = os::killpg(pgid, Signal::Kill);
            live().remove(&pgid);
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    fn alive(pid: u32) -> bool {
        // SAFETY: signal 0 only checks for existence.
        unsafe { libc::kill(pid as i32, 0) == 0 }
    }

    #[tokio::test]
    async fn a_dropped_process_takes_its_whole_group_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut p = Process::new("sleeper", "sleep 30 & echo started; wait", BTreeMap::new());
        let pid = p.spawn(dir.path(), &BTreeMap::new()).await.unwrap();
        assert!(alive(pid));
        assert!(live_groups().contains(&(pid as i32)));
        drop(p);
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(
            group_members(pid as i32),
            Vec::<i32>::new(),
            "the group survived its owner"
        );
        assert!(!live_groups().contains(&(pid as i32)));
    }

    #[tokio::test]
    async fn kill_stop_and_terminate_act_on_the_group() {
        let dir = tempfile::tempdir().unwrap();
        let mut p = Process::new("t", "echo hi; exec sleep 30", BTreeMap::new());
        p.spawn(dir.path(), &BTreeMap::new()).await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        p.signal(Signal::Stop).unwrap();
        p.signal(Signal::Cont).unwrap();
        assert!(p.running());
        p.terminate(Duration::from_secs(2)).await;
        assert!(!p.running());
        p.spawn(dir.path(), &BTreeMap::new()).await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        p.kill().await;
        assert!(!p.running());
        assert_eq!(p.starts(), 2);
        let log = std::fs::read_to_string(dir.path().join("t.log")).unwrap();
        assert_eq!(log.matches("hi").count(), 2);
    }
}
