//! Mutants of the zoo receivers: each a real bug class planted as one
//! changed line or condition behind `ZOO_MUTANT=name` in the receiver's
//! own code, and the scenario and invariant that must catch it.
//!
//! [`MUTANTS`] is the table. A mutant of the provider-specific code (the
//! verify modules) runs on every receiver whose provider it applies to; a
//! mutant of the shared code (the inbox insert, the store's schema, the
//! worker's winner, the handler's error path) runs once per family and
//! store, on the receiver named in its row, since every provider's
//! receiver goes through the same lines. Each run is only the scenario that
//! should kill it, without the preflight, so that the scenario judges. A
//! kill is exit 1 with `Fail` on the named invariant; a row marked
//! `by_preflight` is the exception (the scenario lets the bug through,
//! only the preflight refuses it: exit 3, run with the preflight).
//!
//! [`EXPECTED_SURVIVORS`] lists the mutants hookstorm cannot kill today and
//! why: only harness limitations belong there. The test fails when an
//! unlisted mutant survives and when a listed one dies (update the list).

use std::time::Instant;

use hookstorm::check::{InvariantId, Verdict};
use hookstorm_receiver::pgtest::PgServer;

use super::{findings, installed_or_skip, keep, parallel, run, Db, Family, Receiver, RECEIVERS};

/// Which receivers a mutant is planted in.
#[derive(Clone, Copy, Debug)]
pub enum Where {
    /// Every receiver of these profiles (the provider's verify module).
    Profiles(&'static [&'static str]),
    /// The named receivers (shared code, once per family and store).
    Receivers(&'static [&'static str]),
}

/// One planted bug and what must catch it.
#[derive(Clone, Copy, Debug)]
pub struct Mutant {
    /// `ZOO_MUTANT`.
    pub name: &'static str,
    /// The bug class, for the table.
    pub bug: &'static str,
    /// Where it is planted.
    pub planted: Where,
    /// The scenario that must catch it.
    pub scenario: &'static str,
    /// The invariant that must fail.
    pub invariant: InvariantId,
    /// Caught by the preflight (exit 3, a `FAIL` line) instead: the
    /// scenario itself lets it through (reported as a harness gap).
    pub by_preflight: bool,
}

/// The profiles the zoo's receivers are written for (the ones in code).
const ALL_PROFILES: &[&str] = &hookstorm::profile::CORE_NAMES;

/// The zoo's receivers of profiles written as provider files.
const PROVIDER_FILES: &[&str] = &["python-twilio", "python-discord"];

/// One receiver per family and store, for the shared-code mutants.
const SHARED: &[&str] = &[
    "node-answerline",
    "node-standard-webhooks",
    "python-answerline",
    "python-stripe",
];
/// [`SHARED`]'s Node receivers: one process, one event loop.
const NODE_SHARED: &[&str] = &["node-answerline", "node-standard-webhooks"];
/// [`SHARED`]'s Python receivers: three pre-forked gunicorn workers.
const PYTHON_SHARED: &[&str] = &["python-answerline", "python-stripe"];

/// Every mutant, with the scenario and invariant that must kill it.
pub const MUTANTS: &[Mutant] = &[
    Mutant {
        name: "unique-dropped",
        bug: "the inbox's primary key (account, key) is left out of the schema",
        planted: Where::Receivers(SHARED),
        scenario: "sequential-duplicates",
        invariant: InvariantId::I2,
        by_preflight: false,
    },
    Mutant {
        name: "commit-after-ack",
        bug: "the 2xx is sent before the inbox insert (Node: res.sendStatus first; Python: insert in a thread)",
        planted: Where::Receivers(SHARED),
        scenario: "db-outage",
        invariant: InvariantId::I1,
        by_preflight: false,
    },
    // In one Node process the Set sees every copy; a restart empties it,
    // and the attempts the kill interrupted come back as retries.
    Mutant {
        name: "memory-dedupe",
        bug: "duplicates dropped by a Set in process memory, no unique key",
        planted: Where::Receivers(NODE_SHARED),
        scenario: "kill-under-load",
        invariant: InvariantId::I2,
        by_preflight: false,
    },
    // Three gunicorn workers, each with its own Set: concurrent copies
    // land on different workers only sometimes, but every restart empties
    // every Set, and the events redelivered after the kills come back.
    Mutant {
        name: "memory-dedupe",
        bug: "duplicates dropped by a Set in process memory, no unique key",
        planted: Where::Receivers(PYTHON_SHARED),
        scenario: "kill-under-load",
        invariant: InvariantId::I2,
        by_preflight: false,
    },
    Mutant {
        name: "reserialized-body",
        bug: "the signature checked over JSON.stringify(req.body) after express.json() / json.dumps(request.json)",
        planted: Where::Profiles(ALL_PROFILES),
        scenario: "raw-body",
        invariant: InvariantId::I9,
        by_preflight: false,
    },
    Mutant {
        name: "missing-signature-accepted",
        bug: "a delivery without its signature header is let through unverified",
        planted: Where::Profiles(ALL_PROFILES),
        scenario: "bad-signature",
        invariant: InvariantId::I4,
        by_preflight: false,
    },
    // The receivers of the providers' files' scheme families: a form body
    // signed over the URL (Twilio) and an Ed25519 key pair (Discord).
    Mutant {
        name: "missing-signature-accepted",
        bug: "a delivery without its signature header is let through unverified",
        planted: Where::Receivers(PROVIDER_FILES),
        scenario: "bad-signature",
        invariant: InvariantId::I4,
        by_preflight: false,
    },
    Mutant {
        name: "skips-verification",
        bug: "the official verifier is never called (Twilio's RequestValidator, Discord's verify_key)",
        planted: Where::Receivers(PROVIDER_FILES),
        scenario: "bad-signature",
        invariant: InvariantId::I4,
        by_preflight: false,
    },
    Mutant {
        name: "skips-handshake",
        bug: "Discord's PING is acknowledged with a 204 instead of a PONG",
        planted: Where::Receivers(&["python-discord"]),
        scenario: "test-delivery",
        invariant: InvariantId::I7,
        by_preflight: false,
    },
    Mutant {
        name: "first-signature-only",
        bug: "only the first v1 signature of the header is compared (schemes with several)",
        planted: Where::Profiles(&["answerline", "standard-webhooks", "svix"]),
        scenario: "key-rotation",
        invariant: InvariantId::I9,
        by_preflight: false,
    },
    Mutant {
        name: "winner-by-arrival",
        bug: "the winner upsert drops its `where newer` clause: the last processed update wins",
        planted: Where::Receivers(SHARED),
        scenario: "reverse-order",
        invariant: InvariantId::I5,
        by_preflight: false,
    },
    Mutant {
        name: "sequence-by-arrival",
        bug: "the resource upsert drops its `where excluded.sequence > resources.sequence` clause: a late, lower sequence overwrites a higher one",
        planted: Where::Receivers(&["node-answerline", "python-answerline"]),
        scenario: "sequenced-resources",
        invariant: InvariantId::I6,
        by_preflight: false,
    },
    Mutant {
        name: "inline-processing",
        bug: "the business effect runs inline before the insert, slow past the provider's timeout on a cold cache, not idempotent",
        planted: Where::Receivers(&["node-answerline", "python-answerline"]),
        // 8 deliveries: each cold call holds a gunicorn worker past 15 s.
        scenario: "timeout-before-commit",
        invariant: InvariantId::I3,
        by_preflight: false,
    },
    Mutant {
        name: "ok-on-db-error",
        bug: "a failed insert is answered 200 instead of 503",
        planted: Where::Receivers(SHARED),
        scenario: "db-outage",
        invariant: InvariantId::I1,
        by_preflight: false,
    },
    Mutant {
        name: "unknown-type-400",
        bug: "an event type the handler does not know (a ping, a test message) is answered 400",
        planted: Where::Profiles(&["standard-webhooks", "svix", "github"]),
        scenario: "test-delivery",
        invariant: InvariantId::I7,
        // test-delivery's I7 passes a ping answered 400; the preflight's
        // signed test delivery refuses it.
        by_preflight: true,
    },
];

/// A (receiver, mutant) that hookstorm cannot kill today, and the harness
/// limitation that lets it through.
pub struct Survivor {
    /// The receiver.
    pub receiver: &'static str,
    /// The mutant.
    pub mutant: &'static str,
    /// Why it survives.
    pub why: &'static str,
    /// It survives only some runs (the kill depends on where a process
    /// kill lands): a kill is then reported, not a failure.
    pub sometimes: bool,
}

/// Only harness limitations belong here, each with its reason: none
/// today. The last one, an answer before a SQLite insert, survived while
/// the receiver's busy timeout (5 s) outlasted the database cut (1 s at
/// the shortest), so the insert after the 2xx waited and landed; the zoo's
/// receivers wait half a second ([`super::DB_WAIT_MS`]), so the insert
/// fails inside the cut and db-outage catches the loss.
pub const EXPECTED_SURVIVORS: &[Survivor] = &[];

impl Mutant {
    /// How long its run takes, in rank: a Python receiver processing
    /// inline holds each of gunicorn's three workers past the provider's
    /// answer limit (over two minutes); a 4xx to genuine deliveries plays
    /// out the whole compressed schedule (about 25 s); the rest end within
    /// seconds.
    fn expected_length(&self, rx: &Receiver) -> u8 {
        match (self.scenario, rx.family) {
            ("timeout-before-commit", Family::Python) => 2,
            ("raw-body" | "key-rotation", _) => 1,
            _ => 0,
        }
    }

    /// Whether the mutant is planted in `rx`.
    pub fn applies(&self, rx: &Receiver) -> bool {
        match self.planted {
            Where::Profiles(p) => p.contains(&rx.profile),
            Where::Receivers(r) => r.contains(&rx.name),
        }
    }
}

/// The mutants `HOOKSTORM_ZOO_MUTANTS` names (comma-separated), to measure
/// a few of them on many seeds (`HOOKSTORM_ZOO_SEEDS`); every one when unset.
fn mutants_selected() -> Vec<&'static str> {
    let names = std::env::var("HOOKSTORM_ZOO_MUTANTS").unwrap_or_default();
    MUTANTS
        .iter()
        .map(|m| m.name)
        .filter(|n| names.split(',').any(|w| w.trim() == *n))
        .collect()
}

/// Runs every mutant planted in `family`'s receivers on its scenario and
/// prints the table and the score; asserts that the kills and survivors
/// are exactly those [`EXPECTED_SURVIVORS`] allows.
fn assert_family_mutants_die(family: Family, test: &str) {
    if !installed_or_skip(family, test) {
        return;
    }
    let pg = PgServer::start_or_skip();
    let only = mutants_selected();
    let cases: Vec<(&Receiver, &Mutant, u64)> = super::selected(family)
        .filter(|rx| {
            let ok = rx.db == Db::Sqlite || pg.is_some();
            if !ok {
                eprintln!("{}: mutants skipped: no Postgres server", rx.name);
            }
            ok
        })
        .flat_map(|rx| {
            MUTANTS
                .iter()
                .filter(|m| m.applies(rx) && (only.is_empty() || only.contains(&m.name)))
                .flat_map(move |m| super::seeds().into_iter().map(move |seed| (rx, m, seed)))
        })
        .collect();
    // The longest runs first, so the pool's other slots carry the short
    // ones beside them instead of one long run ending the test alone.
    let mut cases = cases;
    cases.sort_by_key(|(rx, m, _)| std::cmp::Reverse(m.expected_length(rx)));
    let total = cases.len();
    let outcomes = parallel(&cases, |&(rx, m, seed)| {
        let started = Instant::now();
        // The preflight would refuse some mutants before any scenario
        // (a 400 to its ping, a timeout): skipped, so the scenario judges.
        let args: &[&str] = if m.by_preflight {
            &[m.scenario]
        } else {
            &[m.scenario, "--no-preflight"]
        };
        let run = run(rx, pg.as_ref(), m.name, args, seed);
        let died = if m.by_preflight {
            run.code == 3
                && run
                    .output
                    .lines()
                    .any(|l| l.trim_start().starts_with("FAIL"))
        } else {
            run.code == 1 && run.verdict(m.scenario, m.invariant) == Some(Verdict::Fail)
        };
        let caught_by = if m.by_preflight {
            "the preflight (exit 3)".to_string()
        } else {
            format!("{}:{}", m.scenario, m.invariant)
        };
        let listed = EXPECTED_SURVIVORS
            .iter()
            .find(|s| s.receiver == rx.name && s.mutant == m.name);
        let outcome = if died {
            format!("killed by {caught_by}")
        } else {
            format!(
                "SURVIVED {}:{} (exit {}{})",
                m.scenario,
                m.invariant,
                run.code,
                listed.map(|s| format!("; {}", s.why)).unwrap_or_default()
            )
        };
        let row = format!(
            "{:<24} {:<28} seed {seed}: {outcome} [{:.0}s]{}",
            rx.name,
            m.name,
            started.elapsed().as_secs_f64(),
            findings(&run)
                .iter()
                .map(|f| format!("\n      {f}"))
                .collect::<String>()
        );
        let wrong = match (died, listed) {
            (true, None) | (false, Some(_)) => None,
            (true, Some(s)) if s.sometimes => None,
            (true, Some(_)) => Some(format!(
                "{} {}: listed as a survivor but now killed: take it off EXPECTED_SURVIVORS",
                rx.name, m.name
            )),
            (false, None) => {
                keep(&run, &format!("{}-{}-seed{seed}", rx.name, m.name));
                Some(format!(
                    "{} {} ({}) seed {seed} survived {}:{}\n{}",
                    rx.name,
                    m.name,
                    m.bug,
                    m.scenario,
                    m.invariant,
                    run.explain()
                ))
            }
        };
        (died, row, wrong)
    });
    let killed = outcomes.iter().filter(|(d, _, _)| *d).count();
    let rows: Vec<&String> = outcomes.iter().map(|(_, r, _)| r).collect();
    let wrong: Vec<&String> = outcomes.iter().filter_map(|(_, _, w)| w.as_ref()).collect();
    let rows: Vec<String> = rows.into_iter().cloned().collect();
    let wrong: Vec<String> = wrong.into_iter().cloned().collect();
    eprintln!(
        "zoo mutants ({family:?}): score {killed}/{total}\n{}",
        rows.join("\n")
    );
    assert!(total > 0 || pg.is_none(), "{test}: no mutant ran");
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}

#[test]
fn every_planted_bug_in_the_node_receivers_is_caught_by_its_invariant() {
    assert_family_mutants_die(Family::Node, "node zoo mutants");
}

#[test]
fn every_planted_bug_in_the_python_receivers_is_caught_by_its_invariant() {
    assert_family_mutants_die(Family::Python, "python zoo mutants");
}

#[test]
fn every_mutant_names_a_receiver_it_is_planted_in() {
    for m in MUTANTS {
        assert!(
            RECEIVERS.iter().any(|r| m.applies(r)),
            "{} is planted nowhere",
            m.name
        );
    }
    for s in EXPECTED_SURVIVORS {
        let m = MUTANTS.iter().find(|m| m.name == s.mutant);
        let rx = RECEIVERS.iter().find(|r| r.name == s.receiver);
        assert!(
            matches!((m, rx), (Some(m), Some(rx)) if m.applies(rx)),
            "survivor {} {} is not a planted mutant",
            s.receiver,
            s.mutant
        );
    }
}
