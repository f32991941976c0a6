//! Every deliberately broken receiver variant is caught where
//! `Defect::exposed_by` says: on each scenario it names, that invariant gets
//! that verdict. The list is the receiver's; this is the test that holds it
//! true for its scenario rows (`tests/explore.rs` for its explore rows, and
//! `tests/docs.rs` holds the README's table to it).

use hookstorm::check::{InvariantId, Verdict};
use hookstorm_receiver::defect::Exposure;
use hookstorm_receiver::Defect;

use crate::common::*;

/// Whether the scenario needs process or database control (a kill, a cut
/// database): those run against the receiver as a child process.
fn needs_process_control(scenario: &str) -> bool {
    scenarios(&[scenario])
        .iter()
        .any(|s| hookstorm::fault::nemesis::applies(&s.faults))
}

/// Every (defect, scenario) of the list with the exposures it names there,
/// split by whether the scenario needs process control.
fn exposures(process: bool) -> Vec<(Defect, Vec<Exposure>)> {
    let mut out: Vec<(Defect, Vec<Exposure>)> = Vec::new();
    for d in Defect::ALL {
        for e in d.exposed_by() {
            let Some(scenario) = e.scenario() else {
                continue;
            };
            if needs_process_control(scenario) != process {
                continue;
            }
            match out
                .iter_mut()
                .find(|(od, list)| *od == d && list[0].scenario() == Some(scenario))
            {
                Some((_, list)) => list.push(*e),
                None => out.push((d, vec![*e])),
            }
        }
    }
    out
}

fn assert_caught(d: Defect, list: &[Exposure], outcome: &hookstorm::run::RunOutcome) {
    for e in list {
        assert_exposed(d, e, outcome);
    }
}

fn assert_exposed(d: Defect, e: &Exposure, outcome: &hookstorm::run::RunOutcome) {
    let scenario = e.scenario().expect("a scenario row");
    let got = verdict(&outcome.report, scenario, e.invariant);
    assert_eq!(
        got,
        Some(e.verdict),
        "defect {d} on {scenario}: expected {} {:?}, got {got:?}; all non-passing: {:#?}",
        e.invariant,
        e.verdict,
        non_passing(&outcome.report)
    );
    eprintln!(
        "defect {d}: {scenario} {} {:?} (non-passing: {:?})",
        e.invariant,
        e.verdict,
        non_passing(&outcome.report)
    );
    let code = outcome.report.exit_code();
    match e.verdict {
        Verdict::NonStrict => assert_eq!(
            code,
            hookstorm::exit::PASS,
            "non-strict alone does not fail a lenient run"
        ),
        _ => assert_eq!(code, hookstorm::exit::FAIL),
    }
}

/// The scenario of a list of exposures on one scenario.
fn scenario_of(list: &[Exposure]) -> &'static str {
    list[0].scenario().expect("a scenario row")
}

async fn caught_in_process(d: Defect, list: &[Exposure], db: Option<&str>) {
    // At 1000x a delivery that never succeeds (a redirecting receiver) runs
    // its whole 10-attempt schedule in under 3 s.
    let (outcome, _dir) =
        run_embedded_scaled(Some(d), db, &[scenario_of(list)], 5, false, Some(1000.0)).await;
    assert_caught(d, list, &outcome);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_broken_variant_is_caught_by_its_invariant_on_sqlite() {
    for (d, list) in exposures(false) {
        caught_in_process(d, &list, None).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_broken_variant_is_caught_by_its_invariant_on_postgres() {
    let Some(pg) = hookstorm_receiver::pgtest::PgServer::start_or_skip() else {
        return;
    };
    for (d, list) in exposures(false) {
        // Some variants change the inbox's key: each gets its own database.
        let db = pg.fresh_database().await.expect("fresh database");
        caught_in_process(d, &list, Some(&db)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_variant_a_fault_below_http_exposes_is_caught_as_a_child_process() {
    let list = exposures(true);
    assert!(
        !list.is_empty(),
        "some variant needs a kill or a cut database"
    );
    for (d, list) in list {
        let c = child(Some(d), None, true);
        let (outcome, _out) = run_on(&c.target, &scenarios(&[scenario_of(&list)]), 14).await;
        assert_caught(d, &list, &outcome);
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
fn every_variant_is_exposed_by_a_shipped_scenario_or_by_explore() {
    let shipped: Vec<String> = scenarios(&[])
        .into_iter()
        .chain(
            hookstorm::scenario::Scenario::load_dir(&scenario_dir())
                .expect("scenarios load")
                .into_iter()
                .filter(|s| hookstorm::fault::nemesis::applies(&s.faults)),
        )
        .map(|s| s.name)
        .collect();
    for d in Defect::ALL {
        assert!(
            !d.exposed_by().is_empty(),
            "defect {d} is exposed by nothing"
        );
        for e in d.exposed_by() {
            if let Some(scenario) = e.scenario() {
                assert!(
                    shipped.iter().any(|s| s == scenario),
                    "defect {d}: no shipped scenario {scenario}"
                );
            }
            assert_ne!(
                e.verdict,
                Verdict::Pass,
                "defect {d}: a pass catches nothing"
            );
        }
    }
}
