//! The deliberately broken variants of the reference sender (`hookstorm
//! sender --defect NAME`, `hookstorm sink --defect NAME`).
//!
//! Each is a small, realistic deviation from the outbox pattern's sender —
//! the kind of thing a real delivery worker gets wrong — and each is caught
//! by one sender invariant. [`SenderDefect::exposed_by`] is the one list of
//! where: the sender scenario that exposes it and the invariant that fails
//! there. The end-to-end test runs exactly that list, and the docs' table
//! is checked against it.

use std::fmt;
use std::str::FromStr;

use hookstorm::check::{InvariantId, Verdict};

use crate::defect::{Exposure, Finder};

/// The one [`Exposure`] of a variant: `scenario` fails `invariant`.
macro_rules! caught {
    ($scenario:literal, $invariant:ident) => {{
        const E: &[Exposure] = &[Exposure {
            by: Finder::Scenario($scenario),
            invariant: InvariantId::$invariant,
            verdict: Verdict::Fail,
        }];
        E
    }};
}

/// One deliberately broken sender.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SenderDefect {
    /// Retries a 4xx the profile makes final.
    RetriesOn4xx,
    /// Waits the whole base wait every time: no jitter.
    NoJitter,
    /// Makes a new delivery id for every attempt.
    NewIdPerRetry,
    /// Signs a re-serialisation of the stored body, sends the stored bytes.
    SignsReserialisedBody,
    /// Dead-letters after three attempts instead of the profile's count.
    GivesUpEarly,
    /// Follows redirects to their `Location`.
    FollowsRedirects,
    /// Marks the row delivered before the POST.
    DeliveredBeforePost,
    /// Signs every attempt with the first attempt's timestamp.
    ReusesTimestamp,
    /// Retries on its own schedule, whatever `Retry-After` says.
    IgnoresRetryAfter,
    /// Waits for an answer however long it takes.
    NoTimeout,
    /// Sends newest first, with no order per resource.
    Unordered,
    /// Sends (and signs) the body parsed and written again.
    SendsReserialisedBody,
}

impl SenderDefect {
    /// Every variant, in documentation order.
    pub const ALL: [SenderDefect; 12] = [
        SenderDefect::RetriesOn4xx,
        SenderDefect::NoJitter,
        SenderDefect::NewIdPerRetry,
        SenderDefect::SignsReserialisedBody,
        SenderDefect::GivesUpEarly,
        SenderDefect::FollowsRedirects,
        SenderDefect::DeliveredBeforePost,
        SenderDefect::ReusesTimestamp,
        SenderDefect::IgnoresRetryAfter,
        SenderDefect::NoTimeout,
        SenderDefect::Unordered,
        SenderDefect::SendsReserialisedBody,
    ];

    /// The `--defect` name.
    pub fn name(self) -> &'static str {
        match self {
            SenderDefect::RetriesOn4xx => "retries-on-4xx",
            SenderDefect::NoJitter => "no-jitter",
            SenderDefect::NewIdPerRetry => "new-id-per-retry",
            SenderDefect::SignsReserialisedBody => "signs-reserialised-body",
            SenderDefect::GivesUpEarly => "gives-up-early",
            SenderDefect::FollowsRedirects => "follows-redirects",
            SenderDefect::DeliveredBeforePost => "delivered-before-post",
            SenderDefect::ReusesTimestamp => "reuses-timestamp",
            SenderDefect::IgnoresRetryAfter => "ignores-retry-after",
            SenderDefect::NoTimeout => "no-timeout",
            SenderDefect::Unordered => "unordered",
            SenderDefect::SendsReserialisedBody => "sends-reserialised-body",
        }
    }

    /// What it does wrong, in one sentence.
    pub fn description(self) -> &'static str {
        match self {
            SenderDefect::RetriesOn4xx => "retries a 4xx the profile makes final (400, 404, 410, 422) until its attempts run out",
            SenderDefect::NoJitter => "waits the whole base wait before every retry: no random part, so retries of many events arrive together",
            SenderDefect::NewIdPerRetry => "makes a new Webhook-Id for every attempt, so a receiver deduplicating on it stores a retry twice",
            SenderDefect::SignsReserialisedBody => "signs the body parsed and written again, but sends the bytes it stored: the signature never verifies",
            SenderDefect::GivesUpEarly => "dead-letters an event after three attempts, not the profile's ten",
            SenderDefect::FollowsRedirects => "follows a redirect to its Location, sending the signed event where the registered URL points it",
            SenderDefect::DeliveredBeforePost => "marks the row delivered before the POST: a failed POST or a crash loses the event",
            SenderDefect::ReusesTimestamp => "signs every retry with the first attempt's timestamp, so a late retry is stale",
            SenderDefect::IgnoresRetryAfter => "retries on its own schedule even when the receiver asked for more time with Retry-After",
            SenderDefect::NoTimeout => "waits for an answer however long the receiver takes",
            SenderDefect::Unordered => "sends the newest events first, one at a time, with no order per resource",
            SenderDefect::SendsReserialisedBody => "sends (and signs) each body parsed and written again: the signature verifies, but the bytes are not the ones emitted (keys sorted, escapes rewritten)",
        }
    }

    /// Where it is caught: (scenario, invariant) pairs, the first the one
    /// the docs name.
    pub fn exposed_by(self) -> &'static [Exposure] {
        match self {
            SenderDefect::RetriesOn4xx => caught!("sender-refusals", S2),
            SenderDefect::NoJitter => caught!("sender-dead-letter", S1),
            SenderDefect::NewIdPerRetry => caught!("sender-retries", S5),
            SenderDefect::SignsReserialisedBody => caught!("sender-baseline", S6),
            SenderDefect::GivesUpEarly => caught!("sender-dead-letter", S1),
            SenderDefect::FollowsRedirects => caught!("sender-redirect", S4),
            SenderDefect::DeliveredBeforePost => caught!("sender-retries", S8),
            SenderDefect::ReusesTimestamp => caught!("sender-dead-letter", S6),
            SenderDefect::IgnoresRetryAfter => caught!("sender-retry-after", S3),
            SenderDefect::NoTimeout => caught!("sender-timeouts", S7),
            SenderDefect::Unordered => caught!("sender-ordering", S9),
            SenderDefect::SendsReserialisedBody => caught!("sender-baseline", S6),
        }
    }

    /// The invariant that catches it where it is first exposed.
    pub fn caught_by(self) -> InvariantId {
        self.exposed_by()[0].invariant
    }
}

impl fmt::Display for SenderDefect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An unknown sender defect name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown sender defect {name:?} (hint: one of {})", SenderDefect::ALL.map(|d| d.name()).join(", "))]
pub struct UnknownSenderDefect {
    /// The name given.
    pub name: String,
}

impl FromStr for SenderDefect {
    type Err = UnknownSenderDefect;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        SenderDefect::ALL
            .into_iter()
            .find(|d| d.name() == s.trim())
            .ok_or_else(|| UnknownSenderDefect {
                name: s.to_string(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_sender_defect_round_trips_and_names_a_sender_invariant() {
        for d in SenderDefect::ALL {
            assert_eq!(d.name().parse::<SenderDefect>().unwrap(), d);
            assert!(d.caught_by().is_sender(), "{d}");
            assert!(d.exposed_by()[0]
                .scenario()
                .is_some_and(|s| s.starts_with("sender-")));
        }
        let e = "nope".parse::<SenderDefect>().unwrap_err().to_string();
        assert!(
            e.contains("retries-on-4xx") && e.contains("unordered"),
            "{e}"
        );
    }
}
