//! Every deliberately broken receiver variant is caught by the invariant
//! that names its bug, on the scenario that exposes it.

use hookstorm::check::{InvariantId, Verdict};
use hookstorm_receiver::Defect;

use crate::common::*;

/// variant → (scenario that exposes it, invariant that must catch it, verdict).
const MATRIX: &[(&str, &str, InvariantId, Verdict)] = &[
    (
        "dedup-on-webhook-id",
        "sequential-duplicates",
        InvariantId::I2,
        Verdict::Fail,
    ),
    (
        "check-then-insert",
        "concurrent-duplicates",
        InvariantId::I2,
        Verdict::Fail,
    ),
    (
        "last-arrival-wins",
        "delayed-older",
        InvariantId::I5,
        Verdict::Fail,
    ),
    (
        "failed-overwrites-completed",
        "reverse-order",
        InvariantId::I5,
        Verdict::Fail,
    ),
    (
        "keeps-retry-suffix",
        "reverse-order",
        InvariantId::I5,
        Verdict::Fail,
    ),
    (
        "stores-test-deliveries",
        "test-delivery",
        InvariantId::I4,
        Verdict::Fail,
    ),
    (
        "skips-signature-check",
        "bad-signature",
        InvariantId::I4,
        Verdict::Fail,
    ),
    (
        "ignores-timestamp-tolerance",
        "bad-signature",
        InvariantId::I4,
        Verdict::Fail,
    ),
    (
        "rejects-duplicates-409",
        "sequential-duplicates",
        InvariantId::I7,
        Verdict::NonStrict,
    ),
    (
        "poison-blocks-batch",
        "poison-event",
        InvariantId::I8,
        Verdict::Fail,
    ),
    (
        "ignores-account-scope",
        "account-isolation",
        InvariantId::I1,
        Verdict::Fail,
    ),
    (
        "redirects-to-trailing-slash",
        "redirect",
        InvariantId::I7,
        Verdict::Fail,
    ),
    (
        "stale-sequence-overwrites",
        "sequenced-resources",
        InvariantId::I6,
        Verdict::Fail,
    ),
];

async fn caught(
    defect: &str,
    scenario: &str,
    id: InvariantId,
    expected: Verdict,
    db: Option<&str>,
) {
    let d: Defect = defect.parse().expect("defect name");
    // At 1000x a delivery that never succeeds (a redirecting receiver) runs
    // its whole 10-attempt schedule in under 3 s.
    let (outcome, _dir) =
        run_embedded_scaled(Some(d), db, &[scenario], 5, false, Some(1000.0)).await;
    let got = verdict(&outcome.report, scenario, id);
    assert_eq!(
        got,
        Some(expected),
        "defect {defect} on {scenario}: expected {id} {expected:?}, got {got:?}; all non-passing: {:?}",
        non_passing(&outcome.report)
    );
    let code = outcome.report.exit_code();
    match expected {
        Verdict::NonStrict => assert_eq!(
            code,
            hookstorm::exit::PASS,
            "non-strict alone does not fail a lenient run"
        ),
        _ => assert_eq!(code, hookstorm::exit::FAIL),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_broken_variant_is_caught_by_its_invariant_on_sqlite() {
    for (defect, scenario, id, expected) in MATRIX {
        caught(defect, scenario, *id, *expected, None).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_broken_variant_is_caught_by_its_invariant_on_postgres() {
    let Some(pg) = hookstorm_receiver::pgtest::PgServer::start_or_skip() else {
        return;
    };
    for (defect, scenario, id, expected) in MATRIX {
        // Some variants change the inbox's key: each gets its own database.
        let db = pg.fresh_database().await.expect("fresh database");
        caught(defect, scenario, *id, *expected, Some(&db)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicates_answered_409_fail_only_under_strict() {
    let d: Defect = "rejects-duplicates-409".parse().unwrap();
    // The matrix's time scale: the same run, its waits compressed 1000x.
    let (outcome, _dir) = run_embedded_scaled(
        Some(d),
        None,
        &["sequential-duplicates"],
        5,
        true,
        Some(1000.0),
    )
    .await;
    let got = verdict(&outcome.report, "sequential-duplicates", InvariantId::I7);
    // Strict turns I7's non-strict deviation into the run's failure.
    assert_eq!(
        got,
        Some(Verdict::Fail),
        "{:?}",
        non_passing(&outcome.report)
    );
    assert_eq!(outcome.report.exit_code(), hookstorm::exit::FAIL);
}

#[test]
fn the_matrix_names_every_variant_the_harness_can_reach_without_process_control() {
    // ack-before-commit and ok-while-database-down need a killed process or a
    // cut database (kill-between-commit-and-ack, db-outage): tests/chaos.rs
    // proves those are caught; every other variant must be in the matrix.
    let needs_process_control = ["ack-before-commit", "ok-while-database-down"];
    for d in Defect::ALL {
        let name = d.name();
        assert!(
            MATRIX.iter().any(|(n, ..)| *n == name) || needs_process_control.contains(&name),
            "defect {name} is in no row of the matrix"
        );
    }
}
