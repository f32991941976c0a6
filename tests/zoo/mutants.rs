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
//! should kill it. A kill is exit 1 with `Fail` on the named invariant.
//!
//! [`EXPECTED_SURVIVORS`] lists the mutants hookstorm cannot kill today and
//! why: only harness limitations belong there. The test fails when an
//! unlisted mutant survives and when a listed one dies (update the list).

use std::time::Instant;

use hookstorm::check::{InvariantId, Verdict};
use hookstorm_receiver::pgtest::PgServer;

use super::{findings, installed_or_skip, keep, run, Db, Family, Receiver, RECEIVERS};

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
}

const ALL_PROFILES: &[&str] = &[
    "answerline",
    "standard-webhooks",
    "svix",
    "stripe",
    "github",
    "shopify",
    "slack",
    "generic-hex",
];

/// One receiver per family and store, for the shared-code mutants.
const SHARED: &[&str] = &[
    "node-answerline",
    "node-standard-webhooks",
    "python-answerline",
    "python-stripe",
];

/// Every mutant, with the scenario and invariant that must kill it.
pub const MUTANTS: &[Mutant] = &[
    Mutant {
        name: "unique-dropped",
        bug: "the inbox's primary key (account, key) is left out of the schema",
        planted: Where::Receivers(SHARED),
        scenario: "sequential-duplicates",
        invariant: InvariantId::I2,
    },
    Mutant {
        name: "commit-after-ack",
        bug: "the 2xx is sent before the inbox insert (Node: res.sendStatus first; Python: insert in a thread)",
        planted: Where::Receivers(SHARED),
        scenario: "db-outage",
        invariant: InvariantId::I1,
    },
    Mutant {
        name: "memory-dedupe",
        bug: "duplicates dropped by a Set in process memory, no unique key",
        planted: Where::Receivers(SHARED),
        scenario: "sequential-duplicates",
        invariant: InvariantId::I2,
    },
    Mutant {
        name: "reserialized-body",
        bug: "the signature checked over JSON.stringify(req.body) after express.json() / json.dumps(request.json)",
        planted: Where::Profiles(ALL_PROFILES),
        scenario: "baseline",
        invariant: InvariantId::I9,
    },
    Mutant {
        name: "missing-signature-accepted",
        bug: "a delivery without its signature header is let through unverified",
        planted: Where::Profiles(ALL_PROFILES),
        scenario: "bad-signature",
        invariant: InvariantId::I4,
    },
    Mutant {
        name: "first-signature-only",
        bug: "only the first v1 signature of the header is compared (schemes with several)",
        planted: Where::Profiles(&["answerline", "standard-webhooks", "svix"]),
        scenario: "key-rotation",
        invariant: InvariantId::I9,
    },
    Mutant {
        name: "winner-by-arrival",
        bug: "the winner upsert drops its `where newer` clause: the last processed update wins",
        planted: Where::Receivers(SHARED),
        scenario: "reverse-order",
        invariant: InvariantId::I5,
    },
    Mutant {
        name: "inline-processing",
        bug: "the business effect runs inline before the insert, slow past the provider's timeout on a cold cache, not idempotent",
        planted: Where::Receivers(&["node-answerline", "python-answerline"]),
        scenario: "baseline",
        invariant: InvariantId::I3,
    },
    Mutant {
        name: "ok-on-db-error",
        bug: "a failed insert is answered 200 instead of 503",
        planted: Where::Receivers(SHARED),
        scenario: "db-outage",
        invariant: InvariantId::I1,
    },
    Mutant {
        name: "unknown-type-400",
        bug: "an event type the handler does not know (a ping, a test message) is answered 400",
        planted: Where::Profiles(&["standard-webhooks", "svix", "github"]),
        scenario: "test-delivery",
        invariant: InvariantId::I7,
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
}

/// Only harness limitations belong here, each with its reason.
pub const EXPECTED_SURVIVORS: &[Survivor] = &[];

impl Mutant {
    /// Whether the mutant is planted in `rx`.
    pub fn applies(&self, rx: &Receiver) -> bool {
        match self.planted {
            Where::Profiles(p) => p.contains(&rx.profile),
            Where::Receivers(r) => r.contains(&rx.name),
        }
    }
}

/// Runs every mutant planted in `family`'s receivers on its scenario and
/// prints the table and the score; asserts that the kills and survivors
/// are exactly those [`EXPECTED_SURVIVORS`] allows.
fn assert_family_mutants_die(family: Family, test: &str) {
    if !installed_or_skip(family, test) {
        return;
    }
    let pg = PgServer::start_or_skip();
    let mut rows = Vec::new();
    let mut wrong = Vec::new();
    let (mut killed, mut total) = (0, 0);
    for rx in super::selected(family) {
        if rx.db == Db::Postgres && pg.is_none() {
            eprintln!("{}: mutants skipped: no Postgres server", rx.name);
            continue;
        }
        for m in MUTANTS.iter().filter(|m| m.applies(rx)) {
            total += 1;
            let started = Instant::now();
            let run = run(rx, pg.as_ref(), m.name, &[m.scenario], 1);
            let died = run.code == 1 && run.verdict(m.scenario, m.invariant) == Some(Verdict::Fail);
            let listed = EXPECTED_SURVIVORS
                .iter()
                .find(|s| s.receiver == rx.name && s.mutant == m.name);
            let found = findings(&run);
            let outcome = if died {
                killed += 1;
                format!("killed by {}:{}", m.scenario, m.invariant)
            } else {
                format!(
                    "SURVIVED {}:{} (exit {}{})",
                    m.scenario,
                    m.invariant,
                    run.code,
                    listed.map(|s| format!("; {}", s.why)).unwrap_or_default()
                )
            };
            rows.push(format!(
                "{:<24} {:<28} {outcome} [{:.0}s]{}",
                rx.name,
                m.name,
                started.elapsed().as_secs_f64(),
                found
                    .iter()
                    .map(|f| format!("\n      {f}"))
                    .collect::<String>()
            ));
            match (died, listed) {
                (true, None) | (false, Some(_)) => {}
                (true, Some(_)) => wrong.push(format!(
                    "{} {}: listed as a survivor but now killed: take it off EXPECTED_SURVIVORS",
                    rx.name, m.name
                )),
                (false, None) => {
                    keep(&run, &format!("{}-{}", rx.name, m.name));
                    wrong.push(format!(
                        "{} {} ({}) survived {}:{}\n{}",
                        rx.name,
                        m.name,
                        m.bug,
                        m.scenario,
                        m.invariant,
                        run.explain()
                    ))
                }
            }
        }
    }
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
