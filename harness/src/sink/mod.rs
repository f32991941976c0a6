//! `hookstorm sink`: the other direction. hookstorm plays a receiver for a
//! webhook *sender* under test and judges it against the contract its
//! profile documents: retries on the schedule with jitter, bounded; no
//! retry after a final answer; `Retry-After` honoured; redirects never
//! followed; the same identity and a fresh, valid signature on every
//! retry; the timeout kept; every event acknowledged or dead-lettered, as
//! the sender's own outbox says, across crashes too; and per resource,
//! events first sent in sequence order (`docs/sink.md`).
//!
//! - [`plan`]: a sender scenario for a seed: the events to emit and the
//!   sink's script of answers for each.
//! - [`wire`]: HTTP/1.1 on the sink's sockets, by hand (resets, holds).
//! - [`server`]: the sink itself: per-account URLs, scripted answers,
//!   signature checks, one history line per request.
//! - [`target`]: the sender target file (hooks, accounts, lifecycle).
//! - [`crash`]: crashing the sender where a scenario says, and reviving it.
//! - [`run`]: the pipeline, scenario by scenario, to the reports.
//! - [`shrink`]: a failing scenario's events cut down to the fewest that
//!   still fail the same invariant.
//!
//! The sender invariants themselves are the checker's
//! ([`crate::check::sender`]); sender scenarios are scenario files tagged
//! `sender` ([`crate::scenario::sender`]).

pub mod crash;
pub mod plan;
pub mod run;
pub mod server;
pub mod shrink;
pub mod target;
mod wire;

use crate::profile::Profile;

/// The reference sender's profile file, as it ships in
/// `scenarios/profiles/reference-sender.toml`: read through the link
/// `reference-sender.toml` beside this file, so that the library's package
/// carries it (`cargo package` keeps only what lies in the package's folder).
pub const REFERENCE_PROFILE_TOML: &str = include_str!("reference-sender.toml");

/// The profile the built-in reference sender keeps (and `hookstorm sink`
/// with no target judges it by).
pub fn reference_profile() -> Profile {
    let origin = std::path::Path::new("scenarios/profiles/reference-sender.toml");
    Profile::from_toml(REFERENCE_PROFILE_TOML, origin)
        .expect("the shipped reference sender profile parses")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_sender_refuses_to_retry_a_4xx_but_a_throttle() {
        let p = reference_profile();
        assert_eq!(p.name, "reference-sender");
        assert_eq!(p.schedule, Profile::default_profile().schedule);
        for s in [400, 404, 410, 422] {
            assert!(p.gives_up_on(s), "{s}");
        }
        for s in [408, 429, 500, 503, 301] {
            assert!(!p.gives_up_on(s), "{s}");
        }
    }
}
