//! What each attempt came to, in its own words: accepted, rejected as
//! required, accepted wrongly, rejected wrongly, deferred, no answer,
//! failed by design, dead by design, dead.
//!
//! The history's `outcome` (`ok`, `fail`, `info`) is the sender's view:
//! did the attempt land. A reader needs the receiver's view: was its answer
//! the one the contract asks for? A 401 to a forged delivery did not land
//! and is exactly right; a 503 the harness's own front gave was no answer
//! of the receiver's at all. This module decides that once, from the
//! attempt's intent, status and fault tags and from the one table of what
//! a fault excuses ([`crate::grading::excuse`]): the checker counts with it, the
//! timeline colours with it, and every reporter prints the words of
//! [`TABLE`]. Only the outcomes marked [`Drawn::Wrong`] are drawn red.
//!
//! A death is judged per key, as I9 judges it: the delivery's last attempt
//! failed, and it is *dead by design* when every attempt of its key that
//! the receiver did not acknowledge was made to fail by the harness, and
//! *dead* when the receiver itself refused or missed one of them
//! ([`receiver_missed`]). So a caller first asks [`judge`] about an
//! attempt, and settles a [`Judged::Died`] with [`of_death`] once it has
//! read every attempt of the key.

use serde::{Deserialize, Serialize};

use crate::history::{Attempt, Intent, Outcome};
use crate::tag::FaultTag;

/// What one attempt came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AttemptOutcome {
    /// A 2xx to a delivery the receiver must take.
    Accepted,
    /// A 4xx to a delivery the receiver must refuse.
    RejectedAsRequired,
    /// A 2xx to a delivery the receiver must refuse.
    AcceptedWrongly,
    /// A delivery the receiver must take answered 3xx or 4xx (or a 2xx
    /// without what the provider checks for); a 3xx to one it must refuse.
    RejectedWrongly,
    /// A 5xx: the receiver asked for a retry.
    Deferred,
    /// No status came back.
    NoAnswer,
    /// The harness made the attempt fail on purpose.
    FailedByDesign,
    /// The delivery died, and the harness's faults explain every attempt
    /// of its key the receiver did not acknowledge.
    DeadByDesign,
    /// The delivery died, and the receiver itself refused or missed an
    /// attempt of its key.
    Dead,
}

/// How an outcome is drawn: only a wrong one is red.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Drawn {
    /// The answer the contract asks for (green).
    Right,
    /// An answer the contract forbids, or a death the receiver caused (red).
    Wrong,
    /// Allowed, but worth a look: a retry was asked for or nothing came (amber).
    Unsettled,
    /// The harness's own doing (grey).
    ByDesign,
}

/// One outcome as every report words it.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct OutcomeRow {
    /// The outcome.
    pub outcome: AttemptOutcome,
    /// Its words.
    pub word: &'static str,
    /// How it is drawn.
    pub drawn: Drawn,
    /// When an attempt gets it.
    pub meaning: &'static str,
}

use AttemptOutcome as O;

/// Every outcome, in the order reports list them.
pub const TABLE: &[OutcomeRow] = &[
    OutcomeRow {
        outcome: O::Accepted,
        word: "accepted",
        drawn: Drawn::Right,
        meaning: "the receiver answered 2xx to a delivery it must take (genuine, test or poison), including a 2xx the harness then discarded on purpose (`drop-ack`)",
    },
    OutcomeRow {
        outcome: O::RejectedAsRequired,
        word: "rejected as required",
        drawn: Drawn::Right,
        meaning: "a 4xx to a delivery it must refuse (forged, signed for another account, oversized, an expired replay)",
    },
    OutcomeRow {
        outcome: O::AcceptedWrongly,
        word: "accepted wrongly",
        drawn: Drawn::Wrong,
        meaning: "a 2xx to a delivery it must refuse",
    },
    OutcomeRow {
        outcome: O::RejectedWrongly,
        word: "rejected wrongly",
        drawn: Drawn::Wrong,
        meaning: "a 3xx or 4xx of the receiver's own to a delivery it must take, a 2xx without what the provider checks for (Slack's challenge), or a 3xx to a delivery it must refuse",
    },
    OutcomeRow {
        outcome: O::Deferred,
        word: "deferred",
        drawn: Drawn::Unsettled,
        meaning: "a 5xx of the receiver's own: it asked for a retry, which the contract allows",
    },
    OutcomeRow {
        outcome: O::NoAnswer,
        word: "no answer",
        drawn: Drawn::Unsettled,
        meaning: "no status came back (a timeout, a reset or refused connection, a malformed answer) and no fault of the harness explains it",
    },
    OutcomeRow {
        outcome: O::FailedByDesign,
        word: "failed by design",
        drawn: Drawn::ByDesign,
        meaning: "the harness made the attempt fail on purpose: its front answered it, it was held back, or it ran while the harness had the database cut or the receiver down (the attempt tags that excuse I9)",
    },
    OutcomeRow {
        outcome: O::DeadByDesign,
        word: "dead by design",
        drawn: Drawn::ByDesign,
        meaning: "the delivery's last attempt failed, and the harness's faults explain every attempt of its key the receiver did not acknowledge: the scenario kills it on purpose",
    },
    OutcomeRow {
        outcome: O::Dead,
        word: "dead",
        drawn: Drawn::Wrong,
        meaning: "the delivery's last attempt failed, and the receiver itself refused or missed an attempt of its key",
    },
];

impl AttemptOutcome {
    /// Every outcome, in [`TABLE`]'s order.
    pub fn all() -> impl Iterator<Item = AttemptOutcome> {
        TABLE.iter().map(|r| r.outcome)
    }

    /// Its row of [`TABLE`].
    pub fn row(self) -> &'static OutcomeRow {
        TABLE
            .iter()
            .find(|r| r.outcome == self)
            .expect("every outcome has a row")
    }

    /// Its words (`rejected as required`).
    pub fn word(self) -> &'static str {
        self.row().word
    }

    /// Whether it is drawn red.
    pub fn is_wrong(self) -> bool {
        self.row().drawn == Drawn::Wrong
    }

    /// Its position in [`TABLE`] (how the page's data refers to it).
    pub fn index(self) -> usize {
        TABLE
            .iter()
            .position(|r| r.outcome == self)
            .expect("every outcome has a row")
    }
}

/// What [`judge`] reads of an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Facts {
    /// What the delivery was meant to be.
    pub intent: Intent,
    /// The answer's status.
    pub status: Option<u16>,
    /// The sender's outcome.
    pub outcome: Outcome,
    /// A fault the harness injected on purpose explains that the attempt
    /// was not acknowledged (the excuse table's I9 rules: its front
    /// answered, it was held back, the database was cut, the receiver down).
    pub excused: bool,
    /// The harness discarded the attempt's answer (`drop-ack`).
    pub drop_ack: bool,
    /// It was the delivery's last attempt and it failed.
    pub dead: bool,
}

impl From<&Attempt> for Facts {
    fn from(a: &Attempt) -> Self {
        Facts {
            intent: a.intent,
            status: a.status,
            outcome: a.outcome,
            excused: a
                .faults
                .iter()
                .any(crate::grading::excuse::explains_missing_ack),
            drop_ack: a.faults.contains(&FaultTag::DropAck),
            dead: a.dead,
        }
    }
}

/// An attempt's outcome, or a death that its key settles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Judged {
    /// Decided by the attempt alone.
    Now(AttemptOutcome),
    /// A genuine delivery died on this attempt: [`of_death`] decides, once
    /// every attempt of its key is read, whether by design.
    Died,
}

fn is_2xx(s: Option<u16>) -> bool {
    matches!(s, Some(200..=299))
}

/// Whether the receiver itself saw this genuine attempt and did not
/// acknowledge it: no 2xx (taken or discarded by the harness), and no
/// fault the harness injected on purpose explains it. What I9 counts, and
/// what makes a death the receiver's.
pub fn receiver_missed(f: &Facts) -> bool {
    f.intent == Intent::Genuine
        && f.outcome != Outcome::Ok
        && !(is_2xx(f.status) && f.drop_ack)
        && !f.excused
}

/// What an attempt came to (see [`TABLE`]).
pub fn judge(f: &Facts) -> Judged {
    if f.intent.must_reject() {
        return Judged::Now(match f.status {
            s if is_2xx(s) => O::AcceptedWrongly,
            Some(400..=499) => O::RejectedAsRequired,
            _ => unanswered(f),
        });
    }
    if f.dead && f.intent == Intent::Genuine {
        return Judged::Died;
    }
    if is_2xx(f.status) {
        let taken = f.outcome == Outcome::Ok || f.drop_ack;
        return Judged::Now(if taken {
            O::Accepted
        } else {
            O::RejectedWrongly
        });
    }
    Judged::Now(unanswered(f))
}

/// An attempt without an acceptable answer: the harness's doing, or what
/// the receiver answered.
fn unanswered(f: &Facts) -> AttemptOutcome {
    if f.excused {
        return O::FailedByDesign;
    }
    match f.status {
        None => O::NoAnswer,
        Some(500..=599) => O::Deferred,
        Some(_) => O::RejectedWrongly,
    }
}

/// A genuine delivery's death, once its key is read: by design unless the
/// receiver itself missed an attempt of the key ([`receiver_missed`]).
pub fn of_death(key_missed: bool) -> AttemptOutcome {
    if key_missed {
        O::Dead
    } else {
        O::DeadByDesign
    }
}

/// The outcomes as the markdown `reports/README.md` carries between its
/// `outcomes` markers.
pub fn markdown() -> String {
    let mut s = String::from("| outcome | drawn | when |\n|---|---|---|\n");
    for r in TABLE {
        let drawn = match r.drawn {
            Drawn::Right => "green",
            Drawn::Wrong => "red",
            Drawn::Unsettled => "amber",
            Drawn::ByDesign => "grey",
        };
        s.push_str(&format!("| {} | {drawn} | {} |\n", r.word, r.meaning));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(intent: Intent, status: Option<u16>, outcome: Outcome) -> Facts {
        Facts {
            intent,
            status,
            outcome,
            excused: false,
            drop_ack: false,
            dead: false,
        }
    }

    #[test]
    fn a_forged_delivery_answered_401_is_rejected_as_required_and_a_2xx_is_wrong() {
        let f = facts(Intent::Forged, Some(401), Outcome::Fail);
        assert_eq!(judge(&f), Judged::Now(O::RejectedAsRequired));
        assert!(!O::RejectedAsRequired.is_wrong());
        // Dead after its retries, still what the contract asks for.
        let dead = Facts { dead: true, ..f };
        assert_eq!(judge(&dead), Judged::Now(O::RejectedAsRequired));
        let took = facts(Intent::CrossAccount, Some(200), Outcome::Ok);
        assert_eq!(judge(&took), Judged::Now(O::AcceptedWrongly));
        assert!(O::AcceptedWrongly.is_wrong());
    }

    #[test]
    fn the_harnesss_own_refusals_are_by_design_and_the_receivers_are_its_own() {
        let front = Attempt {
            status: Some(503),
            outcome: Outcome::Info,
            faults: vec![FaultTag::FrontStatus(503)],
            ..Attempt::acknowledged("s", "a", "k")
        };
        let f = Facts::from(&front);
        assert!(f.excused);
        assert_eq!(judge(&f), Judged::Now(O::FailedByDesign));
        assert!(!receiver_missed(&f));
        let own = facts(Intent::Genuine, Some(503), Outcome::Info);
        assert_eq!(judge(&own), Judged::Now(O::Deferred));
        assert!(receiver_missed(&own));
        let conflict = facts(Intent::Genuine, Some(409), Outcome::Info);
        assert_eq!(judge(&conflict), Judged::Now(O::RejectedWrongly));
        let silent = facts(Intent::Genuine, None, Outcome::Info);
        assert_eq!(judge(&silent), Judged::Now(O::NoAnswer));
    }

    #[test]
    fn an_acknowledgement_the_harness_discarded_is_accepted_and_no_miss() {
        let drop = Attempt {
            outcome: Outcome::Info,
            faults: vec![FaultTag::DropAck],
            ..Attempt::acknowledged("s", "a", "k")
        };
        let f = Facts::from(&drop);
        assert_eq!(judge(&f), Judged::Now(O::Accepted));
        assert!(!receiver_missed(&f));
    }

    #[test]
    fn a_death_is_by_design_only_when_the_receiver_missed_nothing_of_its_key() {
        let f = Facts {
            excused: true,
            dead: true,
            ..facts(Intent::Genuine, Some(308), Outcome::Info)
        };
        assert_eq!(judge(&f), Judged::Died);
        assert_eq!(of_death(false), O::DeadByDesign);
        assert_eq!(of_death(true), O::Dead);
        assert!(O::Dead.is_wrong() && !O::DeadByDesign.is_wrong());
    }

    #[test]
    fn every_outcome_has_one_row_and_a_distinct_word() {
        let mut words: Vec<&str> = TABLE.iter().map(|r| r.word).collect();
        assert_eq!(words.len(), 9);
        words.sort();
        words.dedup();
        assert_eq!(words.len(), 9);
        for o in AttemptOutcome::all() {
            assert_eq!(TABLE[o.index()].outcome, o);
        }
    }
}

#[cfg(test)]
mod docs {
    /// `reports/README.md` carries [`super::markdown`] between its
    /// markers; `HOOKSTORM_UPDATE_DOCS=1` rewrites it.
    #[test]
    fn the_outcome_table_in_the_docs_is_the_one_in_the_code() {
        crate::docs_table::assert_section(
            concat!(env!("CARGO_MANIFEST_DIR"), "/../reports/README.md"),
            "outcomes",
            &super::markdown(),
        );
    }
}
