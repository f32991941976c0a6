//! What a fault excuses: the one model of how the harness's own faults
//! bear on each invariant, under each kind of provider.
//!
//! A fault the harness injects on purpose changes what a receiver can be
//! blamed for. Its front answering 503 is not the receiver refusing a
//! delivery; an attempt cut off because the harness killed the receiver is
//! not the receiver dropping a connection; an answer that takes 20 s while
//! the harness holds the receiver's database silent is worth reporting,
//! but it is not a broken contract. And a fault that met no traffic proved
//! nothing, so the scenario's passes are not passes.
//!
//! Every such decision is a row of [`RULES`] (per attempt tag and
//! invariant) or [`EXERCISED`] (per scenario fault: when it counts as
//! having met the receiver). The checker asks [`excused`], the run asks
//! [`EXERCISED`]'s rule through `fault::nemesis::not_exercised`, the
//! redelivery after kills asks [`Recovery::of`], and `docs/invariants.md`
//! shows [`markdown`]; a test keeps the document and this table equal.
//! Nothing else decides what a fault excuses.

use crate::invariant::InvariantId;
use crate::profile::Profile;
use crate::tag::FaultTag;

/// Which providers a rule holds under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profiles {
    /// Every profile.
    All,
    /// Profiles that retry a failed attempt on a schedule.
    Retrying,
    /// Profiles that make one attempt and leave recovery to a redelivery
    /// (GitHub: redelivery through its API, which teams script).
    SingleAttempt,
}

impl Profiles {
    fn label(self) -> &'static str {
        match self {
            Profiles::All => "all",
            Profiles::Retrying => "retrying",
            Profiles::SingleAttempt => "single attempt",
        }
    }
}

/// What a fault does to an invariant's judgement of an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// The attempt does not count against the invariant.
    Excuses,
    /// The attempt does not count against the invariant, and what it shows
    /// is reported as an observation, graded below a failure.
    Informational,
    /// The fault makes the invariant demand something of the attempt.
    Expects,
}

impl Effect {
    fn label(self) -> &'static str {
        match self {
            Effect::Excuses => "excuses",
            Effect::Informational => "informational",
            Effect::Expects => "expects",
        }
    }
}

/// One decision: what an attempt tag means to one invariant.
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    /// The tag as the history writes it ([`FaultTag::pattern`]).
    pub tag: &'static str,
    /// The invariant.
    pub invariant: InvariantId,
    /// Under which providers.
    pub profiles: Profiles,
    /// What it does.
    pub effect: Effect,
    /// Why, in the words reports and docs use.
    pub why: &'static str,
}

/// When a scenario's fault counts as having met the receiver.
#[derive(Debug, Clone, Copy)]
pub struct Exercised {
    /// The fault's kind, as scenario files name it.
    pub fault: &'static str,
    /// What must have happened, in words.
    pub when: &'static str,
    /// What is reported, graded below a failure, when it met the receiver
    /// in the way named here.
    pub informational: &'static str,
    /// What the code measures for it (`fault::nemesis::not_exercised`).
    pub met: Met,
}

/// What a scenario fault must have met, as the nemesis measures it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Met {
    /// An attempt sent during a database cut was answered while it held, or
    /// got no answer in time.
    CutAttempt,
    /// Every kill of the receiver the fault asks for interrupted work (or,
    /// with crash points, one fired).
    EveryKillInterrupted,
    /// Every pause held a request in flight.
    EveryPauseHeldRequest,
    /// Every kill of the worker met it ready and holding work (or, with
    /// crash points, one fired in it).
    EveryWorkerKillHeldWork,
}

/// How soon before a kill of the receiver an answer must have been read
/// for the kill to count as landing on it: the receiver may still be doing
/// that request's work (a write queued after its answer).
pub const JUST_ANSWERED: std::time::Duration = std::time::Duration::from_millis(10);

/// Kills that interrupted no work are placed again, at most this many more
/// per kill the fault asks for, while the stream lasts.
pub const MISSED_KILL_RETRIES: u32 = 2;

impl Exercised {
    /// The row that says when `fault` counts as exercised, if it needs to.
    pub fn of(fault: &crate::fault_spec::FaultSpec) -> Option<&'static Exercised> {
        use crate::fault_spec::{FaultSpec, KillSignal};
        let met = match fault {
            FaultSpec::CutDatabase(_) => Met::CutAttempt,
            FaultSpec::Kill(k) if k.signal == KillSignal::Stop => Met::EveryPauseHeldRequest,
            FaultSpec::Kill(_) => Met::EveryKillInterrupted,
            FaultSpec::KillWorker(_) => Met::EveryWorkerKillHeldWork,
            _ => return None,
        };
        EXERCISED.iter().find(|e| e.met == met)
    }
}

use Effect::{Excuses, Expects, Informational};
use InvariantId::{I1, I7, I8, I9};
use Profiles::{All, SingleAttempt};

/// Every decision about what an attempt's fault tag means to an invariant.
pub const RULES: &[Rule] = &[
    Rule {
        tag: "front:<status>",
        invariant: I9,
        profiles: All,
        effect: Excuses,
        why: "the harness's front answered the attempt itself; the receiver never saw it",
    },
    Rule {
        tag: "front:<status>",
        invariant: I7,
        profiles: All,
        effect: Excuses,
        why: "the harness's front answered the attempt itself (a 429 too); the receiver never saw it",
    },
    Rule {
        tag: "front:<status>",
        invariant: I8,
        profiles: All,
        effect: Excuses,
        why: "the harness's front answered the attempt itself; the receiver never saw it",
    },
    Rule {
        tag: "redirect",
        invariant: I7,
        profiles: All,
        effect: Excuses,
        why: "the 3xx came from the harness's front, by design",
    },
    Rule {
        tag: "redirect",
        invariant: I9,
        profiles: All,
        effect: Excuses,
        why: "the harness's front answered the attempt itself; the receiver never saw it",
    },
    Rule {
        tag: "redirect",
        invariant: I8,
        profiles: All,
        effect: Excuses,
        why: "the 3xx came from the harness's front, by design; the receiver never saw the attempt",
    },
    Rule {
        tag: "front:delay",
        invariant: I7,
        profiles: All,
        effect: Excuses,
        why: "the harness held the request before forwarding it, so a slow answer is expected",
    },
    Rule {
        tag: "front:stall-body",
        invariant: I7,
        profiles: All,
        effect: Excuses,
        why: "the harness dribbled the body and cut the upload, so no answer in time is expected",
    },
    Rule {
        tag: "front:stall-body",
        invariant: I9,
        profiles: All,
        effect: Excuses,
        why: "the harness cut the upload; the receiver never had the whole request",
    },
    Rule {
        tag: "hold-back",
        invariant: I9,
        profiles: All,
        effect: Excuses,
        why: "the attempt was never sent (held back to reorder the stream)",
    },
    Rule {
        tag: "cut-database",
        invariant: I9,
        profiles: All,
        effect: Excuses,
        why: "the harness had the receiver's database cut: a 5xx is the right answer then",
    },
    Rule {
        tag: "cut-database",
        invariant: I8,
        profiles: All,
        effect: Excuses,
        why: "the harness had the receiver's database cut: a poison event cannot be stored, let alone marked failed, so a 5xx is the right answer then",
    },
    Rule {
        tag: "cut-database",
        invariant: I7,
        profiles: All,
        effect: Informational,
        why: "an answer past the limit, or none, while the database was silent is observed and reported (a client-side timeout would answer 503 in time; a server-side statement_timeout never fires while the network is silent), not failed",
    },
    Rule {
        tag: "receiver-down",
        invariant: I9,
        profiles: All,
        effect: Excuses,
        why: "the harness had killed or paused the receiver while the attempt ran and it got no answer",
    },
    Rule {
        tag: "receiver-down",
        invariant: I7,
        profiles: All,
        effect: Excuses,
        why: "no answer in time from a receiver the harness had killed or paused is expected",
    },
    Rule {
        tag: "receiver-down",
        invariant: I1,
        profiles: SingleAttempt,
        effect: Expects,
        why: "the provider makes no automatic retry, so the harness redelivers every delivery that died once the kills are over (as a team's redelivery script does); each must then be stored once",
    },
    Rule {
        tag: "drop-ack",
        invariant: I1,
        profiles: All,
        effect: Expects,
        why: "the 2xx was discarded by the harness, but the receiver gave it: the key must be stored",
    },
    Rule {
        tag: "drop-ack",
        invariant: I9,
        profiles: All,
        effect: Excuses,
        why: "the receiver acknowledged the attempt; the harness discarded the answer",
    },
];

/// When each scenario fault counts as having met the receiver. A fault
/// that did not is "not exercised": the scenario's passes become unknown.
pub const EXERCISED: &[Exercised] = &[
    Exercised {
        fault: "cut-database",
        when: "at least one attempt sent during the cut met it: it was answered while the cut held, or it got no answer in time (the receiver hung on the silent database)",
        informational: "no attempt answered while the database was cut, for as long as it held: the receiver waits on its database with no timeout of its own",
        met: Met::CutAttempt,
    },
    Exercised {
        fault: "kill",
        when: "every kill the fault asks for interrupted work: a request in flight that it cut off, or, for a kill placed on an answer, that answer read at most 10 ms before the signal (the receiver may not have written yet) once some kill of the fault cut a request off (the process killed is the one answering); a kill that did not is placed again, at most 2 more times per kill, while the stream lasts. With crash points: one fired",
        informational: "",
        met: Met::EveryKillInterrupted,
    },
    Exercised {
        fault: "kill (signal = \"stop\")",
        when: "every pause held a request in flight (sent before it or while it held); one that did not is placed again, as a kill is",
        informational: "",
        met: Met::EveryPauseHeldRequest,
    },
    Exercised {
        fault: "kill-worker",
        when: "every kill the fault asks for met the worker ready, working and holding work: its `busy` command exited 0, or, once it had settled a row since its start, rows were unfinished when it died (read from the state before its restart); a kill that did not is placed again, as a receiver's is. With crash points: one fired in the worker",
        informational: "",
        met: Met::EveryWorkerKillHeldWork,
    },
];

/// What the provider does after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recovery {
    /// It retries on its schedule.
    Retries,
    /// It makes one attempt; recovery is a redelivery someone asks for.
    Redelivery,
}

impl Recovery {
    /// The recovery of a profile: one attempt means redelivery.
    pub fn of(profile: &Profile) -> Recovery {
        if profile.schedule.max_attempts <= 1 {
            Recovery::Redelivery
        } else {
            Recovery::Retries
        }
    }
}

pub use crate::profile::TestDelivery;

/// Whether `tag` makes a slow answer (or none in time) expected: the
/// table's rule for I7.
pub fn excuses_slowness(tag: &FaultTag) -> bool {
    excused(tag, InvariantId::I7)
}

/// Whether a fault the harness injected on purpose explains that an
/// attempt tagged `tag` was not acknowledged (the table's rule for I9):
/// the harness answered it itself, never sent it, had the receiver's
/// database cut or the receiver down.
pub fn explains_missing_ack(tag: &FaultTag) -> bool {
    excused(tag, InvariantId::I9)
}

/// Whether `tag` takes an attempt out of `invariant`'s judgement (an
/// excuse or an informational observation). Excuses hold under every
/// profile (a test keeps it so), so a history is graded the same whatever
/// profile is asked: what differs per provider is what the harness sends
/// ([`Recovery`], [`TestDelivery`]), not what an attempt proves.
pub fn excused(tag: &FaultTag, invariant: InvariantId) -> bool {
    let pattern = tag.pattern();
    RULES.iter().any(|r| {
        r.tag == pattern && r.invariant == invariant && matches!(r.effect, Excuses | Informational)
    })
}

/// Whether some fault's effect on `invariant` is informational: what a
/// scenario observes of it is reported, graded below a failure.
pub fn graded_informational(invariant: InvariantId) -> bool {
    RULES
        .iter()
        .any(|r| r.invariant == invariant && r.effect == Informational)
}

/// Why `tag` explains that an attempt was not acknowledged (the table's
/// I9 rule), if it does.
pub fn why_unacknowledged(tag: &str) -> Option<&'static str> {
    RULES
        .iter()
        .find(|r| r.tag == tag && r.invariant == InvariantId::I9 && r.effect != Expects)
        .map(|r| r.why)
}

/// The attempt tags a scenario fault may put on attempts (as
/// [`FaultTag::pattern`] writes them); reconcile and kill-worker tag none.
pub fn tags_of(fault: &crate::fault_spec::FaultSpec) -> &'static [&'static str] {
    use crate::fault_spec::FaultSpec;
    match fault {
        FaultSpec::Duplicate(_) => &[
            "duplicate-concurrent:<k>/<n>",
            "duplicate-replay",
            "duplicate-fresh-id",
            "duplicate-redeliver",
        ],
        FaultSpec::Tamper(_) => &["tamper:<kind>", "rotation:<mode>"],
        FaultSpec::Redeliver(_) => &["duplicate-redeliver"],
        FaultSpec::Front(_) => &[
            "front:<status>",
            "redirect",
            "front:delay",
            "front:stall-body",
        ],
        FaultSpec::Reorder(_) => &["hold-back"],
        FaultSpec::DropAck(_) => &["drop-ack"],
        FaultSpec::CutDatabase(_) => &["cut-database"],
        FaultSpec::Kill(_) => &["receiver-down"],
        _ => &[],
    }
}

/// The rules that bear on a scenario with these faults, one line each
/// (for `hookstorm list`).
pub fn rules_for(faults: &[crate::fault_spec::FaultSpec]) -> Vec<String> {
    let patterns: Vec<&str> = faults
        .iter()
        .flat_map(|f| tags_of(f).iter().copied())
        .collect();
    RULES
        .iter()
        .filter(|r| patterns.contains(&r.tag))
        .map(|r| {
            let under = match r.profiles {
                Profiles::All => String::new(),
                p => format!(" (under {} profiles)", p.label()),
            };
            format!(
                "{} {} {}{under}: {}",
                r.tag,
                r.effect.label(),
                r.invariant.code(),
                r.why
            )
        })
        .collect()
}

/// The model as the markdown `docs/invariants.md` carries between its
/// `excuses` markers.
pub fn markdown() -> String {
    let mut s = String::from(
        "| attempt tag | invariant | profiles | effect | why |\n|---|---|---|---|---|\n",
    );
    for r in RULES {
        s.push_str(&format!(
            "| `{}` | {} {} | {} | {} | {} |\n",
            r.tag,
            r.invariant.code(),
            r.invariant.name(),
            r.profiles.label(),
            r.effect.label(),
            r.why
        ));
    }
    s.push_str("\n| scenario fault | exercised when | informational |\n|---|---|---|\n");
    for e in EXERCISED {
        s.push_str(&format!(
            "| `{}` | {} | {} |\n",
            e.fault,
            e.when,
            if e.informational.is_empty() {
                "—"
            } else {
                e.informational
            }
        ));
    }
    s.push_str("\n| profile | after a failed attempt | test delivery |\n|---|---|---|\n");
    for name in crate::profile::BUILTIN_NAMES {
        let Some(p) = Profile::builtin(name) else {
            continue;
        };
        let recovery = match Recovery::of(&p) {
            Recovery::Retries => format!("retries: {} attempts in all", p.schedule.max_attempts),
            Recovery::Redelivery => {
                "no retry: the harness redelivers what died once the kills are over".to_string()
            }
        };
        let test = match p.test_kind() {
            crate::profile::TestKind::Handshake(text) => text,
            crate::profile::TestKind::None => TestDelivery::None.describe(),
            crate::profile::TestKind::Shape(shape) => TestDelivery::of(shape).describe(),
        };
        s.push_str(&format!("| `{name}` | {recovery} | {test} |\n"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tag_a_fault_puts_on_attempts_is_one_the_history_writes() {
        let written: Vec<&str> = crate::tag::FaultTag::examples()
            .iter()
            .map(FaultTag::pattern)
            .collect();
        for kind in crate::explore::space::KINDS {
            for t in tags_of(&crate::explore::space::probe_spec(kind)) {
                assert!(written.contains(t), "{kind}: {t} is no tag pattern");
            }
        }
    }

    #[test]
    fn every_rule_names_a_tag_the_history_writes() {
        let written: Vec<&str> = crate::tag::FaultTag::examples()
            .iter()
            .map(FaultTag::pattern)
            .collect();
        for r in RULES {
            assert!(written.contains(&r.tag), "{} is no tag pattern", r.tag);
        }
    }

    #[test]
    fn the_harness_answering_excuses_acknowledgement_and_a_rotation_excuses_nothing() {
        assert!(excused(&FaultTag::FrontStatus(503), I9));
        assert!(excused(&FaultTag::ReceiverDown, I9));
        assert!(excused(&FaultTag::DatabaseCut, I7));
        assert!(excused(&FaultTag::FrontStatus(429), I7));
        assert!(!excused(&FaultTag::Rotation("old".into()), I9));
        assert!(!excused(&FaultTag::Replay, I9));
        assert!(!excused(&FaultTag::DropAck, I1));
    }

    #[test]
    fn a_kill_scenario_lists_what_its_kills_excuse() {
        let kill = crate::fault_spec::FaultSpec::Kill(
            crate::fault_spec::KillWorkerSpec {
                count: 1,
                over: crate::text::units::HumanDuration(std::time::Duration::from_secs(1)),
                failpoint: None,
            }
            .as_kill(),
        );
        let lines = rules_for(&[kill]);
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("receiver-down excuses I9")),
            "{lines:?}"
        );
        assert!(rules_for(&[]).is_empty());
    }

    #[test]
    fn excuses_hold_under_every_profile_so_a_history_grades_alike() {
        for r in RULES {
            if matches!(r.effect, Excuses | Informational) {
                assert_eq!(r.profiles, All, "{} {:?}", r.tag, r.invariant);
            }
        }
    }

    #[test]
    fn a_single_attempt_profile_redelivers_and_shows_in_the_table() {
        let github = Profile::builtin("github").unwrap();
        assert_eq!(Recovery::of(&github), Recovery::Redelivery);
        assert_eq!(
            Recovery::of(&Profile::builtin("answerline").unwrap()),
            Recovery::Retries
        );
        assert!(markdown().contains("| `github` | no retry"));
        assert!(markdown().contains("| `stripe` | retries: 7 attempts in all | none"));
    }
}

#[cfg(test)]
mod docs {
    /// `docs/invariants.md` carries [`super::markdown`] between its markers.
    #[test]
    fn the_excuse_table_in_the_docs_is_the_one_in_the_code() {
        crate::docs_table::assert_section(
            concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/invariants.md"),
            "excuses",
            &super::markdown(),
        );
    }
}
