//! Fault tags: what the harness did to one attempt, as a type.
//!
//! The history keeps them as the strings it always wrote (`hold-back`,
//! `duplicate-concurrent:2/5`, `front:503`, …) so the format does not
//! change; [`FaultTag::parse`] reads them back and the checker asks a tag
//! what it means instead of matching substrings. Two questions matter to
//! verdicts, and both are answered by the one table of what a fault
//! excuses ([`crate::grading::excuse::RULES`]):
//!
//! - [`FaultTag::excuses_slowness`]: the harness answering the request
//!   itself (its front), holding or stalling it, its database cut or its
//!   receiver down makes a slow answer (or none) expected. A rotation, a
//!   tamper or a concurrent copy excuses nothing.
//! - [`FaultTag::explains_missing_ack`]: the attempt never got the
//!   receiver's 2xx because the harness answered it (its front refusing or
//!   redirecting by design), never sent it (held back), had the database
//!   cut or the receiver down. Such an attempt cannot count against the
//!   receiver's acknowledgements (I9).
//!
//! [`FaultName`] does the same for the `fault` of a history's fault line
//! (an action on the stream or the processes as a whole): the verbs the
//! harness writes, read back as themselves, and any other text (from an
//! older or newer file) kept verbatim.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// One fault applied to an attempt.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum FaultTag {
    /// Copy `k` of `n` released at one instant on separate connections.
    ConcurrentCopy {
        /// 1-based copy number.
        k: u32,
        /// Copies in the group.
        n: u32,
    },
    /// An exact replay of the acknowledged request.
    Replay,
    /// A replay under a fresh delivery id.
    FreshId,
    /// A dashboard redelivery.
    Redeliver,
    /// The attempt was held back (not sent) to reorder the stream.
    HoldBack,
    /// The 2xx answer was discarded as if lost.
    DropAck,
    /// A forged request (`tamper:<kind>`).
    Tamper(String),
    /// Signed for a key rotation (`rotation:<mode>`).
    Rotation(String),
    /// The harness's front answered with a redirect.
    FrontRedirect,
    /// The front answered with this status itself (`front:503`).
    FrontStatus(u16),
    /// The front held the request before forwarding it.
    FrontDelay,
    /// The front dribbled part of the body, stalled and cut the exchange.
    FrontStall,
    /// The front could not reach the receiver.
    FrontUpstreamUnreachable,
    /// The harness had the receiver's database cut while the attempt ran.
    DatabaseCut,
    /// The harness had the receiver down (killed or paused, not yet ready
    /// again) while the attempt ran, and it got no answer.
    ReceiverDown,
    /// Both halves of a bench's reordered pair (the newer task sent first).
    Reorder,
    /// A tag this version does not know (kept verbatim).
    Other(String),
}

// The history's spelling of each tag: written and read only here.
const CONCURRENT: &str = "duplicate-concurrent";
const REPLAY: &str = "duplicate-replay";
const FRESH_ID: &str = "duplicate-fresh-id";
const REDELIVER: &str = "duplicate-redeliver";
const HOLD_BACK: &str = "hold-back";
const DROP_ACK: &str = "drop-ack";
const TAMPER: &str = "tamper:";
const ROTATION: &str = "rotation:";
const FRONT_REDIRECT: &str = "redirect";
const FRONT_STATUS: &str = "front:";
const FRONT_DELAY: &str = "front:delay";
const FRONT_STALL: &str = "front:stall-body";
const FRONT_UNREACHABLE: &str = "front:upstream-unreachable";
const DATABASE_CUT: &str = "cut-database";
const RECEIVER_DOWN: &str = "receiver-down";
const REORDER: &str = "reorder";

impl FaultTag {
    /// Reads a tag as the history writes it; never fails.
    pub fn parse(s: &str) -> FaultTag {
        match s {
            REPLAY => return FaultTag::Replay,
            FRESH_ID => return FaultTag::FreshId,
            REDELIVER => return FaultTag::Redeliver,
            HOLD_BACK => return FaultTag::HoldBack,
            DROP_ACK => return FaultTag::DropAck,
            REORDER => return FaultTag::Reorder,
            FRONT_REDIRECT => return FaultTag::FrontRedirect,
            FRONT_DELAY => return FaultTag::FrontDelay,
            FRONT_STALL => return FaultTag::FrontStall,
            FRONT_UNREACHABLE => return FaultTag::FrontUpstreamUnreachable,
            DATABASE_CUT => return FaultTag::DatabaseCut,
            RECEIVER_DOWN => return FaultTag::ReceiverDown,
            _ => {}
        }
        if let Some(rest) = s.strip_prefix(CONCURRENT).and_then(|r| r.strip_prefix(':')) {
            if let Some((k, n)) = rest.split_once('/') {
                if let (Ok(k), Ok(n)) = (k.parse(), n.parse()) {
                    return FaultTag::ConcurrentCopy { k, n };
                }
            }
        }
        if let Some(kind) = s.strip_prefix(TAMPER) {
            return FaultTag::Tamper(kind.to_string());
        }
        if let Some(mode) = s.strip_prefix(ROTATION) {
            return FaultTag::Rotation(mode.to_string());
        }
        if let Some(code) = s.strip_prefix(FRONT_STATUS).and_then(|c| c.parse().ok()) {
            return FaultTag::FrontStatus(code);
        }
        FaultTag::Other(s.to_string())
    }

    /// The tag as the history writes it, its variable parts named
    /// (`front:<status>`): how [`crate::grading::excuse::RULES`] refers to it.
    pub fn pattern(&self) -> &'static str {
        match self {
            FaultTag::ConcurrentCopy { .. } => "duplicate-concurrent:<k>/<n>",
            FaultTag::Replay => REPLAY,
            FaultTag::FreshId => FRESH_ID,
            FaultTag::Redeliver => REDELIVER,
            FaultTag::HoldBack => HOLD_BACK,
            FaultTag::DropAck => DROP_ACK,
            FaultTag::Tamper(_) => "tamper:<kind>",
            FaultTag::Rotation(_) => "rotation:<mode>",
            FaultTag::FrontRedirect => FRONT_REDIRECT,
            FaultTag::FrontStatus(_) => "front:<status>",
            FaultTag::FrontDelay => FRONT_DELAY,
            FaultTag::FrontStall => FRONT_STALL,
            FaultTag::FrontUpstreamUnreachable => FRONT_UNREACHABLE,
            FaultTag::DatabaseCut => DATABASE_CUT,
            FaultTag::ReceiverDown => RECEIVER_DOWN,
            FaultTag::Reorder => REORDER,
            FaultTag::Other(_) => "<other>",
        }
    }

    /// One tag of every kind the harness writes.
    pub fn examples() -> Vec<FaultTag> {
        vec![
            FaultTag::ConcurrentCopy { k: 1, n: 2 },
            FaultTag::Replay,
            FaultTag::FreshId,
            FaultTag::Redeliver,
            FaultTag::HoldBack,
            FaultTag::DropAck,
            FaultTag::Tamper("bad-mac".into()),
            FaultTag::Rotation("old".into()),
            FaultTag::FrontRedirect,
            FaultTag::FrontStatus(503),
            FaultTag::FrontDelay,
            FaultTag::FrontStall,
            FaultTag::FrontUpstreamUnreachable,
            FaultTag::DatabaseCut,
            FaultTag::ReceiverDown,
            FaultTag::Reorder,
        ]
    }

    /// Whether the attempt repeats a delivery the receiver may already hold
    /// (a copy, replay or redelivery).
    pub fn is_duplicate(&self) -> bool {
        matches!(
            self,
            FaultTag::ConcurrentCopy { .. }
                | FaultTag::Replay
                | FaultTag::FreshId
                | FaultTag::Redeliver
        )
    }
}

impl fmt::Display for FaultTag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FaultTag::ConcurrentCopy { k, n } => write!(f, "{CONCURRENT}:{k}/{n}"),
            FaultTag::Replay => f.write_str(REPLAY),
            FaultTag::FreshId => f.write_str(FRESH_ID),
            FaultTag::Redeliver => f.write_str(REDELIVER),
            FaultTag::HoldBack => f.write_str(HOLD_BACK),
            FaultTag::DropAck => f.write_str(DROP_ACK),
            FaultTag::Tamper(k) => write!(f, "{TAMPER}{k}"),
            FaultTag::Rotation(m) => write!(f, "{ROTATION}{m}"),
            FaultTag::FrontRedirect => f.write_str(FRONT_REDIRECT),
            FaultTag::FrontStatus(c) => write!(f, "{FRONT_STATUS}{c}"),
            FaultTag::FrontDelay => f.write_str(FRONT_DELAY),
            FaultTag::FrontStall => f.write_str(FRONT_STALL),
            FaultTag::FrontUpstreamUnreachable => f.write_str(FRONT_UNREACHABLE),
            FaultTag::DatabaseCut => f.write_str(DATABASE_CUT),
            FaultTag::ReceiverDown => f.write_str(RECEIVER_DOWN),
            FaultTag::Reorder => f.write_str(REORDER),
            FaultTag::Other(s) => f.write_str(s),
        }
    }
}

impl From<&str> for FaultTag {
    fn from(s: &str) -> FaultTag {
        FaultTag::parse(s)
    }
}

impl Serialize for FaultTag {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for FaultTag {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<FaultTag, D::Error> {
        let s = std::borrow::Cow::<'de, str>::deserialize(d)?;
        Ok(FaultTag::parse(&s))
    }
}

/// Who acted, on a history's fault line (`Event::Fault`): a fault kind or
/// one of the supervisor's verbs.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum FaultName {
    /// Copies, replays and redeliveries (`duplicate`).
    Duplicate,
    /// The stream's order changed (`reorder`).
    Reorder,
    /// Acks discarded (`drop-ack`).
    DropAck,
    /// Forged or rotated-key deliveries (`tamper`).
    Tamper,
    /// The fault front (`front`).
    Front,
    /// The dashboard's redelivery rules (`redeliver`).
    Redeliver,
    /// Reconciliation against the provider API (`reconcile`).
    Reconcile,
    /// The profile the run is judged by (`profile`).
    Profile,
    /// SIGKILL (`kill`).
    Kill,
    /// SIGSTOP (`pause`).
    Pause,
    /// SIGCONT (`resume`).
    Resume,
    /// SIGTERM (`terminate`).
    Terminate,
    /// A process started again (`restart`).
    Restart,
    /// The database cut (`cut-database`).
    CutDatabase,
    /// The database restored (`restore-database`).
    RestoreDatabase,
    /// The sink itself was not scheduled for a while (`sink-stall`): its
    /// clock cannot judge a wait across it.
    SinkStall,
    /// Any other name, kept verbatim.
    Other(String),
}

impl FaultName {
    /// Every name the harness writes, in a fixed order.
    pub const KNOWN: [FaultName; 16] = [
        FaultName::Duplicate,
        FaultName::Reorder,
        FaultName::DropAck,
        FaultName::Tamper,
        FaultName::Front,
        FaultName::Redeliver,
        FaultName::Reconcile,
        FaultName::Profile,
        FaultName::Kill,
        FaultName::Pause,
        FaultName::Resume,
        FaultName::Terminate,
        FaultName::Restart,
        FaultName::CutDatabase,
        FaultName::RestoreDatabase,
        FaultName::SinkStall,
    ];

    /// The text the history holds.
    pub fn as_str(&self) -> &str {
        match self {
            FaultName::Duplicate => "duplicate",
            FaultName::Reorder => "reorder",
            FaultName::DropAck => "drop-ack",
            FaultName::Tamper => "tamper",
            FaultName::Front => "front",
            FaultName::Redeliver => "redeliver",
            FaultName::Reconcile => "reconcile",
            FaultName::Profile => "profile",
            FaultName::Kill => "kill",
            FaultName::Pause => "pause",
            FaultName::Resume => "resume",
            FaultName::Terminate => "terminate",
            FaultName::Restart => "restart",
            FaultName::CutDatabase => "cut-database",
            FaultName::RestoreDatabase => "restore-database",
            FaultName::SinkStall => "sink-stall",
            FaultName::Other(s) => s,
        }
    }

    /// Reads a name back; text the harness does not write becomes [`FaultName::Other`].
    pub fn parse(s: &str) -> FaultName {
        FaultName::KNOWN
            .into_iter()
            .find(|n| n.as_str() == s)
            .unwrap_or_else(|| FaultName::Other(s.to_string()))
    }
}

impl fmt::Display for FaultName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for FaultName {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for FaultName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<FaultName, D::Error> {
        let s = std::borrow::Cow::<'de, str>::deserialize(d)?;
        Ok(FaultName::parse(&s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tag_the_harness_writes_reads_back_as_itself() {
        let mut tags = FaultTag::examples();
        tags.push(FaultTag::Other("something-new".into()));
        for t in tags {
            assert_eq!(FaultTag::parse(&t.to_string()), t, "{t}");
            let json = serde_json::to_string(&t).unwrap();
            assert_eq!(json, format!("\"{t}\""));
            assert_eq!(serde_json::from_str::<FaultTag>(&json).unwrap(), t);
        }
    }

    #[test]
    fn only_the_harness_answering_holding_stalling_or_cutting_excuses_a_slow_answer() {
        for s in [
            "rotation:old+new",
            "tamper:bad-signature",
            "duplicate-concurrent:1/3",
            "drop-ack",
        ] {
            assert!(
                !crate::grading::excuse::excuses_slowness(&FaultTag::parse(s)),
                "{s}"
            );
        }
        // The harness's front answering itself: whatever it took is not the receiver's.
        assert!(crate::grading::excuse::excuses_slowness(&FaultTag::parse(
            "front:503"
        )));
        assert!(crate::grading::excuse::excuses_slowness(&FaultTag::parse(
            FRONT_DELAY
        )));
        assert!(crate::grading::excuse::excuses_slowness(&FaultTag::parse(
            FRONT_STALL
        )));
        assert!(crate::grading::excuse::excuses_slowness(&FaultTag::parse(
            DATABASE_CUT
        )));
        assert!(crate::grading::excuse::excuses_slowness(&FaultTag::parse(
            RECEIVER_DOWN
        )));
    }

    #[test]
    fn the_harnesss_own_answers_and_outages_are_not_the_receivers() {
        for s in [
            "front:503",
            "redirect",
            "hold-back",
            "cut-database",
            "receiver-down",
        ] {
            assert!(
                crate::grading::excuse::explains_missing_ack(&FaultTag::parse(s)),
                "{s}"
            );
        }
        assert!(!crate::grading::excuse::explains_missing_ack(
            &FaultTag::parse(FRONT_UNREACHABLE)
        ));
        assert!(!crate::grading::excuse::explains_missing_ack(
            &FaultTag::parse(FRONT_DELAY)
        ));
        assert!(!crate::grading::excuse::explains_missing_ack(
            &FaultTag::parse("duplicate-replay")
        ));
    }

    #[test]
    fn every_fault_name_the_harness_writes_reads_back_as_itself() {
        let mut names = FaultName::KNOWN.to_vec();
        names.push(FaultName::Other("something-new".into()));
        for n in names {
            assert_eq!(FaultName::parse(&n.to_string()), n, "{n}");
            let json = serde_json::to_string(&n).unwrap();
            assert_eq!(json, format!("\"{n}\""));
            assert_eq!(serde_json::from_str::<FaultName>(&json).unwrap(), n);
        }
        assert_eq!(FaultName::CutDatabase.as_str(), "cut-database");
        assert_eq!(
            FaultName::parse("redirect"),
            FaultName::Other("redirect".into())
        );
    }
}
