//! The documented exit codes of every hookstorm command (see
//! `docs/invariants.md`): one place, so the CLI, the docs and CI gates agree.

/// Every invariant passed.
pub const PASS: i32 = 0;
/// Some invariant failed.
pub const FAIL: i32 = 1;
/// Some invariant could not be decided (unknown), none failed.
pub const UNKNOWN: i32 = 2;
/// The target was unusable: unreachable, or its configuration is bad.
pub const TARGET_UNUSABLE: i32 = 3;
/// The command line itself was wrong.
pub const USAGE: i32 = 254;
/// Stopped by Ctrl-C or SIGTERM (128 + SIGINT, as shells report it); the
/// reports of what finished were written.
pub const INTERRUPTED: i32 = 130;
