//! The deliberately broken variants of the receiver (`--defect NAME`).
//!
//! Each is a small, realistic deviation from what docs/contract.md asks of
//! a receiver — the kind of thing a real receiver gets wrong — and each
//! must be caught by one invariant.
//! [`Defect::exposed_by`] is the one list of where: the scenario that
//! exposes each variant (or `hookstorm explore` alone, for a bug that needs
//! two faults at once that no catalog scenario combines), the invariant
//! that catches it there, and the verdict it gets. The end-to-end defect
//! matrix runs exactly that list (proving the harness's checks have teeth),
//! the explore tests run its explore-only rows, and the receiver's README
//! table is checked against it.

use std::fmt;
use std::str::FromStr;

use hookstorm::check::{InvariantId, Verdict};

/// What exposes a defect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finder {
    /// Running this catalog scenario.
    Scenario(&'static str),
    /// `hookstorm explore` with no scenario named: the bug needs faults
    /// together that no catalog scenario combines.
    Explore,
}

/// Where a defect is caught: running what `by` names against the variant,
/// the invariant `invariant` gets `verdict` (and the correct receiver passes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exposure {
    /// What exposes it.
    pub by: Finder,
    /// The invariant that catches it.
    pub invariant: InvariantId,
    /// The verdict that invariant gets (`Fail`, or `NonStrict` for a
    /// status-code deviation that leaves the state right).
    pub verdict: Verdict,
}

impl Exposure {
    /// The catalog scenario that exposes it, if one does.
    pub fn scenario(&self) -> Option<&'static str> {
        match self.by {
            Finder::Scenario(s) => Some(s),
            Finder::Explore => None,
        }
    }
}

/// An [`Exposure`] whose invariant fails on a scenario (a literal, so a
/// `&[…]` of them is `'static`); `explore` instead of a scenario name: it
/// fails under `hookstorm explore` alone.
macro_rules! fails {
    (explore, $invariant:ident) => {
        Exposure {
            by: Finder::Explore,
            invariant: InvariantId::$invariant,
            verdict: Verdict::Fail,
        }
    };
    ($scenario:literal, $invariant:ident) => {
        Exposure {
            by: Finder::Scenario($scenario),
            invariant: InvariantId::$invariant,
            verdict: Verdict::Fail,
        }
    };
}

/// One deliberately broken variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Defect {
    /// Answers 204, then commits in a spawned task: a crash in between loses an acknowledged delivery.
    AckBeforeCommit,
    /// Keys the inbox by the unsigned `Webhook-Id` header instead of the task id.
    DedupOnWebhookId,
    /// Selects, yields, then inserts without a unique key: concurrent duplicates are both stored.
    CheckThenInsert,
    /// The winner is the most recently received COMPLETED task, not the most recently created.
    LastArrivalWins,
    /// The winner is the most recently created task whatever its status.
    FailedOverwritesCompleted,
    /// Uses the full idempotency key (with `-rN`) as the job key.
    KeepsRetrySuffix,
    /// Stores `"test": true` deliveries like real ones.
    StoresTestDeliveries,
    /// Accepts any signature, or none.
    SkipsSignatureCheck,
    /// Accepts signatures whatever their timestamp.
    IgnoresTimestampTolerance,
    /// Answers 409 to a duplicate (state stays right).
    RejectsDuplicates409,
    /// Answers 204 when the database is unavailable, storing nothing.
    OkWhileDatabaseDown,
    /// A failing row aborts its whole batch, which is then retried forever.
    PoisonBlocksBatch,
    /// Keys by task id alone and accepts any account's secret for any account.
    IgnoresAccountScope,
    /// Answers 308 to the same path with a trailing slash.
    RedirectsToTrailingSlash,
    /// Applies every incoming sequence, even a lower one.
    StaleSequenceOverwrites,
    /// A redelivery re-enqueues its task: once processed, the row is re-opened and processed (its effect run) again.
    RequeuesDuplicates,
    /// Keeps deliveries in memory while the database is down and re-enqueues
    /// those whose row exists when it writes them back.
    RequeuesOutageBuffer,
}

impl Defect {
    /// Every variant, in documentation order.
    pub const ALL: [Defect; 17] = [
        Defect::AckBeforeCommit,
        Defect::DedupOnWebhookId,
        Defect::CheckThenInsert,
        Defect::LastArrivalWins,
        Defect::FailedOverwritesCompleted,
        Defect::KeepsRetrySuffix,
        Defect::StoresTestDeliveries,
        Defect::SkipsSignatureCheck,
        Defect::IgnoresTimestampTolerance,
        Defect::RejectsDuplicates409,
        Defect::OkWhileDatabaseDown,
        Defect::PoisonBlocksBatch,
        Defect::IgnoresAccountScope,
        Defect::RedirectsToTrailingSlash,
        Defect::StaleSequenceOverwrites,
        Defect::RequeuesDuplicates,
        Defect::RequeuesOutageBuffer,
    ];

    /// The `--defect` name.
    pub fn name(self) -> &'static str {
        match self {
            Defect::AckBeforeCommit => "ack-before-commit",
            Defect::DedupOnWebhookId => "dedup-on-webhook-id",
            Defect::CheckThenInsert => "check-then-insert",
            Defect::LastArrivalWins => "last-arrival-wins",
            Defect::FailedOverwritesCompleted => "failed-overwrites-completed",
            Defect::KeepsRetrySuffix => "keeps-retry-suffix",
            Defect::StoresTestDeliveries => "stores-test-deliveries",
            Defect::SkipsSignatureCheck => "skips-signature-check",
            Defect::IgnoresTimestampTolerance => "ignores-timestamp-tolerance",
            Defect::RejectsDuplicates409 => "rejects-duplicates-409",
            Defect::OkWhileDatabaseDown => "ok-while-database-down",
            Defect::PoisonBlocksBatch => "poison-blocks-batch",
            Defect::IgnoresAccountScope => "ignores-account-scope",
            Defect::RedirectsToTrailingSlash => "redirects-to-trailing-slash",
            Defect::StaleSequenceOverwrites => "stale-sequence-overwrites",
            Defect::RequeuesDuplicates => "requeues-duplicates",
            Defect::RequeuesOutageBuffer => "requeues-outage-buffer",
        }
    }

    /// What the variant does wrong, in one sentence.
    pub fn description(self) -> &'static str {
        match self {
            Defect::AckBeforeCommit => "answers 204, then commits in a spawned task; a crash in between loses an acknowledged delivery",
            Defect::DedupOnWebhookId => "keys the inbox by the unsigned Webhook-Id header; the same task under a new Webhook-Id is stored twice",
            Defect::CheckThenInsert => "selects, yields, then inserts with no unique key; concurrent duplicates are both stored",
            Defect::LastArrivalWins => "the winner is the most recently received COMPLETED task instead of the most recently created",
            Defect::FailedOverwritesCompleted => "the winner is the most recently created task even when it FAILED",
            Defect::KeepsRetrySuffix => "uses the whole idempotency key (with -rN) as the job key, so resubmissions form separate jobs",
            Defect::StoresTestDeliveries => "stores dashboard test deliveries like real ones",
            Defect::SkipsSignatureCheck => "accepts any signature, or none",
            Defect::IgnoresTimestampTolerance => "accepts a valid signature whatever its timestamp, so old captures replay",
            Defect::RejectsDuplicates409 => "answers 409 to a duplicate instead of 2xx (the state stays right)",
            Defect::OkWhileDatabaseDown => "answers 204 while the database is unavailable, storing nothing",
            Defect::PoisonBlocksBatch => "a failing row aborts its whole batch, which stays unprocessed and is retried forever",
            Defect::IgnoresAccountScope => "keys by task id alone and accepts any account's secret for any account",
            Defect::RedirectsToTrailingSlash => "answers 308 to every POST without a trailing slash",
            Defect::StaleSequenceOverwrites => "applies every incoming sequence, even one lower than the stored one",
            Defect::RequeuesDuplicates => "a redelivery re-enqueues its task: once the row is processed it is marked unprocessed again, so the worker processes it and runs its effect a second time",
            Defect::RequeuesOutageBuffer => "while the database is down it keeps deliveries in memory and answers 204; writing them back, it re-enqueues each one whose row already exists (taking it for one the worker lost), so a delivery that also came as a duplicate or retry around the outage is processed, and its effect run, twice",
        }
    }

    /// Where it is caught: each (scenario, invariant, verdict) that
    /// exposes it. The first entry is the one the docs name.
    pub fn exposed_by(self) -> &'static [Exposure] {
        match self {
            Defect::AckBeforeCommit => &[fails!("kill-between-commit-and-ack", I1)],
            Defect::DedupOnWebhookId => &[fails!("sequential-duplicates", I2)],
            Defect::CheckThenInsert => &[fails!("concurrent-duplicates", I2)],
            Defect::LastArrivalWins => &[fails!("delayed-older", I5)],
            Defect::FailedOverwritesCompleted => &[fails!("reverse-order", I5)],
            Defect::KeepsRetrySuffix => &[fails!("reverse-order", I5)],
            Defect::StoresTestDeliveries => &[fails!("test-delivery", I4)],
            Defect::SkipsSignatureCheck => &[fails!("bad-signature", I4)],
            Defect::IgnoresTimestampTolerance => &[fails!("bad-signature", I4)],
            Defect::RejectsDuplicates409 => &[Exposure {
                by: Finder::Scenario("sequential-duplicates"),
                invariant: InvariantId::I7,
                verdict: Verdict::NonStrict,
            }],
            Defect::OkWhileDatabaseDown => &[fails!("db-outage", I1)],
            Defect::PoisonBlocksBatch => &[fails!("poison-event", I8)],
            // Keyed by task id alone, another account's task is dropped as
            // a duplicate (lost); any secret passing, a cross-account
            // delivery is stored (a phantom).
            Defect::IgnoresAccountScope => &[
                fails!("account-isolation", I1),
                fails!("account-isolation", I4),
            ],
            Defect::RedirectsToTrailingSlash => &[fails!("redirect", I7)],
            Defect::StaleSequenceOverwrites => &[fails!("sequenced-resources", I6)],
            Defect::RequeuesDuplicates => &[fails!("sequential-duplicates", I3)],
            // A database cut alone keeps each delivery once (written back
            // as new), and duplicates alone never meet the buffer: it takes
            // a repeat of a delivery around a cut, which no catalog
            // scenario sends.
            Defect::RequeuesOutageBuffer => &[fails!(explore, I3)],
        }
    }

    /// The invariant that catches it where it is first exposed.
    pub fn caught_by(self) -> InvariantId {
        self.exposed_by()[0].invariant
    }
}

impl fmt::Display for Defect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An unknown defect name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown defect {name:?} (hint: one of {})", Defect::ALL.map(|d| d.name()).join(", "))]
pub struct UnknownDefect {
    /// The name given.
    pub name: String,
}

impl FromStr for Defect {
    type Err = UnknownDefect;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Defect::ALL
            .into_iter()
            .find(|d| d.name() == s.trim())
            .ok_or_else(|| UnknownDefect {
                name: s.to_string(),
            })
    }
}

/// `--defect NAME` on every command line that takes it: the names and
/// their one-sentence descriptions come from this table, so `--help` lists
/// them (`-h` the names, `--help` each with what it does wrong) and a
/// mistyped name is answered with the nearest one.
impl clap::ValueEnum for Defect {
    fn value_variants<'a>() -> &'a [Self] {
        &Defect::ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.name()).help(self.description()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_defect_round_trips_through_its_name() {
        for d in Defect::ALL {
            assert_eq!(d.name().parse::<Defect>().unwrap(), d);
            assert!(!d.description().is_empty());
            assert!(!d.exposed_by().is_empty(), "{d} is exposed by nothing");
        }
    }

    #[test]
    fn unknown_defect_error_lists_the_valid_names() {
        let e = "nope".parse::<Defect>().unwrap_err().to_string();
        assert!(e.contains("ack-before-commit") && e.contains("requeues-duplicates"));
    }

    #[test]
    fn the_command_line_offers_every_defect_with_its_description() {
        use clap::ValueEnum;
        for d in Defect::ALL {
            let v = d.to_possible_value().unwrap();
            assert_eq!(v.get_name(), d.name());
            assert_eq!(
                v.get_help().map(|h| h.to_string()).as_deref(),
                Some(d.description())
            );
            assert_eq!(<Defect as ValueEnum>::from_str(d.name(), false), Ok(d));
        }
    }
}
