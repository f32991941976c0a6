//! The signals the harness sends and the processes it sees: a leaf the
//! process table, the platform layer and the supervisor share.

/// A signal the harness sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// SIGKILL: die now, no cleanup.
    Kill,
    /// SIGTERM: shut down gracefully.
    Term,
    /// SIGSTOP: pause.
    Stop,
    /// SIGCONT: resume.
    Cont,
}

impl Signal {
    /// The signal's name (`SIGKILL`, …).
    pub fn name(self) -> &'static str {
        match self {
            Signal::Kill => "SIGKILL",
            Signal::Term => "SIGTERM",
            Signal::Stop => "SIGSTOP",
            Signal::Cont => "SIGCONT",
        }
    }
}

/// One live (not zombie) process, as `/proc/<pid>/stat` describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcEntry {
    /// Its pid.
    pub pid: i32,
    /// Its parent's pid.
    pub ppid: i32,
    /// Its process group.
    pub pgrp: i32,
}
