//! The operating-system calls of lifecycle control, in one place: sending
//! a signal to a process group, starting a child in a group of its own
//! with inherited listening sockets, and listing the machine's processes.
//!
//! Process groups and signals are Unix (`killpg`, `setpgid`), and the
//! process list is read from Linux's `/proc`. Each call has that
//! implementation behind `cfg` and, elsewhere, a typed
//! [`LifecycleError::Unsupported`] (or an empty list) so that the harness
//! still builds and says clearly what it cannot do, instead of failing to
//! compile.

use super::config::LifecycleError;
use super::signal::Signal;

/// How many sockets a child can inherit (descriptors 3 to 10).
pub(crate) const MAX_SOCKETS: usize = 8;

/// The first descriptor an inherited socket gets (after stdin, stdout, stderr).
pub const FIRST_SOCKET_FD: i32 = 3;

/// The error for a lifecycle action this platform cannot carry out.
pub(crate) fn unsupported(what: &'static str) -> LifecycleError {
    LifecycleError::Unsupported { what }
}

#[cfg(unix)]
mod imp {
    use std::os::fd::RawFd;

    use super::{Signal, FIRST_SOCKET_FD, MAX_SOCKETS};

    fn raw(signal: Signal) -> i32 {
        match signal {
            Signal::Kill => libc::SIGKILL,
            Signal::Term => libc::SIGTERM,
            Signal::Stop => libc::SIGSTOP,
            Signal::Cont => libc::SIGCONT,
        }
    }

    /// Sends `signal` to process group `pgid`; a group that is gone is no error.
    pub(crate) fn killpg(pgid: i32, signal: Signal) -> std::io::Result<()> {
        // SAFETY: killpg only sends a signal; a stale group id fails with ESRCH.
        let rc = unsafe { libc::killpg(pgid, raw(signal)) };
        if rc != 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::ESRCH) {
                return Err(e);
            }
        }
        Ok(())
    }

    /// Hands the child `fds` as descriptors 3, 4, … (the rest of the
    /// parent's descriptors stay close-on-exec).
    pub(crate) fn pass(cmd: &mut std::process::Command, fds: Vec<RawFd>) {
        use std::os::unix::process::CommandExt;
        if fds.is_empty() {
            return;
        }
        let mut list = [-1 as RawFd; MAX_SOCKETS];
        let n = fds.len().min(MAX_SOCKETS);
        list[..n].copy_from_slice(&fds[..n]);
        // SAFETY: the closure runs between fork and exec and calls only
        // async-signal-safe functions (fcntl, dup2) on a stack array; it
        // allocates nothing.
        unsafe {
            cmd.pre_exec(move || place(&list[..n]));
        }
    }

    /// Moves `fds` to 3, 4, …: first out of the way (above the target
    /// range, close-on-exec), then into place (dup2 clears close-on-exec).
    fn place(fds: &[RawFd]) -> std::io::Result<()> {
        let n = fds.len() as RawFd;
        let mut high = [-1 as RawFd; MAX_SOCKETS];
        for (i, fd) in fds.iter().enumerate() {
            // SAFETY: duplicates a descriptor this process owns.
            let h = unsafe { libc::fcntl(*fd, libc::F_DUPFD_CLOEXEC, FIRST_SOCKET_FD + n) };
            if h < 0 {
                return Err(std::io::Error::last_os_error());
            }
            high[i] = h;
        }
        for (i, h) in high[..fds.len()].iter().enumerate() {
            // SAFETY: see above; the target number is ours to replace.
            if unsafe { libc::dup2(*h, FIRST_SOCKET_FD + i as RawFd) } < 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

#[cfg(unix)]
pub(crate) use imp::killpg;

/// Makes the child `cmd` starts die with the harness: on Linux it asks
/// for SIGKILL when its parent goes (`PR_SET_PDEATHSIG`, which survives
/// the `exec` of `sh -c 'exec …'`), so a harness that is SIGKILLed or
/// dies on an allocation leaves no receiver, worker or command behind.
/// The signal follows the thread that started the child; the harness
/// starts children from its runtime's threads, which live as long as it.
pub fn die_with_parent(cmd: &mut std::process::Command) {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt;
        let parent = std::process::id() as libc::pid_t;
        // SAFETY: the closure runs between fork and exec and calls only
        // async-signal-safe functions (prctl, getppid); it allocates nothing.
        unsafe {
            cmd.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // The parent died between fork and prctl: do not outlive it.
                if libc::getppid() != parent {
                    return Err(std::io::Error::other("the harness exited"));
                }
                Ok(())
            });
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = cmd;
}

/// Hands `sockets` to the child `cmd` will start as descriptors 3, 4, …
/// (`LISTEN_FDS` set to their number): the child serves on ports its parent
/// holds. At most eight; Unix only ([`LifecycleError::Unsupported`] elsewhere).
pub fn inherit_sockets(
    cmd: &mut std::process::Command,
    sockets: &super::config::Sockets,
) -> Result<(), LifecycleError> {
    if sockets.is_empty() {
        return Ok(());
    }
    if sockets.len() > MAX_SOCKETS {
        return Err(LifecycleError::Sockets {
            count: sockets.len(),
        });
    }
    cmd.env("LISTEN_FDS", sockets.len().to_string());
    #[cfg(unix)]
    {
        imp::pass(cmd, raw_fds(sockets));
        Ok(())
    }
    #[cfg(not(unix))]
    Err(unsupported("handing listening sockets to a child"))
}

/// Sends `signal` to process group `pgid` (not possible on this platform).
#[cfg(not(unix))]
pub(crate) fn killpg(_pgid: i32, _signal: Signal) -> std::io::Result<()> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "process groups and signals need a Unix platform",
    ))
}

/// Whether children can be started here: in a process group of their own,
/// so that a signal reaches everything they started.
pub(crate) fn check_supported() -> Result<(), LifecycleError> {
    if cfg!(unix) {
        Ok(())
    } else {
        Err(unsupported(
            "starting the receiver in a process group of its own (lifecycle control needs a Unix platform)",
        ))
    }
}

/// The raw descriptors of `sockets`, in order.
#[cfg(unix)]
pub(crate) fn raw_fds(sockets: &super::config::Sockets) -> Vec<std::os::fd::RawFd> {
    use std::os::fd::AsRawFd;
    sockets.listeners().iter().map(|l| l.as_raw_fd()).collect()
}

/// A copy of the listening socket this process inherited as descriptor
/// `fd` (`listen = "fd:3"`); the descriptor itself stays open, so asking
/// twice is no error.
#[cfg(unix)]
pub(crate) fn inherited_listener(fd: i32) -> std::io::Result<std::net::TcpListener> {
    use std::os::fd::BorrowedFd;
    if fd < FIRST_SOCKET_FD {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("fd:{fd} is stdin, stdout or stderr, not a socket"),
        ));
    }
    // SAFETY: only duplicated; a descriptor that is not open fails with EBADF.
    let owned = unsafe { BorrowedFd::borrow_raw(fd) }.try_clone_to_owned()?;
    let listener = std::net::TcpListener::from(owned);
    listener.local_addr().map_err(|e| {
        std::io::Error::new(
            e.kind(),
            format!("fd:{fd} is not an inherited listening socket: {e}"),
        )
    })?;
    Ok(listener)
}

/// Inherited descriptors are Unix.
#[cfg(not(unix))]
pub(crate) fn inherited_listener(fd: i32) -> std::io::Result<std::net::TcpListener> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        format!("fd:{fd}: inherited sockets need a Unix platform"),
    ))
}

/// Every live (not zombie) process on the machine, from `/proc`.
#[cfg(target_os = "linux")]
pub(crate) fn processes() -> Vec<super::signal::ProcEntry> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // Fields after the parenthesised command: state, ppid, pgrp, …
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        if f.len() > 2 && f[0] != "Z" {
            if let (Ok(ppid), Ok(pgrp)) = (f[1].parse(), f[2].parse()) {
                out.push(super::signal::ProcEntry { pid, ppid, pgrp });
            }
        }
    }
    out
}

/// The process list is read from Linux's `/proc`; elsewhere it is empty.
#[cfg(not(target_os = "linux"))]
pub(crate) fn processes() -> Vec<super::signal::ProcEntry> {
    Vec::new()
}
