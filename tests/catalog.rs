//! The catalog scenarios that need the harness's own servers (the fault
//! front and the provider API) against the reference receiver: what they
//! report, and that a broken reconciliation is caught.

use std::process::Command;

use hookstorm::check::{InvariantId, Verdict};
use hookstorm::profile::signature::Secret;
use hookstorm::provider::Provider;
use hookstorm::run::RunOutcome;

use crate::common::*;

fn notes(outcome: &RunOutcome, scenario: &str) -> Vec<String> {
    outcome
        .report
        .scenarios
        .iter()
        .find(|s| s.name == scenario)
        .expect("scenario ran")
        .said()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconciliation_recovers_every_dead_letter_of_a_long_outage() -> TestResult {
    let out = tempfile::tempdir()?;
    let (receiver, target) = hookstorm_cli::builtin::start(None, None).await?;
    let outcome = hookstorm::run::run(
        &target,
        &scenarios(&["long-outage-reconcile"]),
        &options(21, out.path(), false),
        &mut |_| {},
    )
    .await?;
    receiver.shutdown().await;
    assert!(
        non_passing(&outcome.report).is_empty(),
        "{:?}",
        non_passing(&outcome.report)
    );
    let s = &outcome.report.scenarios[0];
    assert_eq!(s.check.counts.dead, 20, "every delivery died in the outage");
    assert!(s.check.dead_letters.iter().all(|d| d.recovered));
    assert!(notes(&outcome, "long-outage-reconcile")
        .iter()
        .any(|n| n.contains("reconciliation after the outage: 20 final tasks")));
    // The provider's API key never reaches a report or a history.
    let key = target
        .provider
        .as_ref()
        .expect("provider")
        .key()
        .expose()
        .to_string();
    let mut stack = vec![outcome.dir.clone()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir)?.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let text = std::fs::read_to_string(&p)?;
                assert!(
                    !text.contains(&key),
                    "the provider key leaked into {}",
                    p.display()
                );
            }
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconciliation_that_reaches_no_provider_is_caught_by_no_loss() -> TestResult {
    let out = tempfile::tempdir()?;
    let (receiver, mut target) = hookstorm_cli::builtin::start(None, None).await?;
    // The receiver keeps the URL of a provider that is gone; the harness serves another.
    target.provider = Some(Provider::bind("127.0.0.1:0", Secret::new("elsewhere"))?);
    let outcome = hookstorm::run::run(
        &target,
        &scenarios(&["long-outage-reconcile"]),
        &options(22, out.path(), false),
        &mut |_| {},
    )
    .await?;
    receiver.shutdown().await;
    assert_eq!(
        verdict(&outcome.report, "long-outage-reconcile", InvariantId::I1),
        Some(Verdict::Fail)
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_without_a_provider_api_skips_reconciliation_naming_the_need() -> TestResult {
    let out = tempfile::tempdir()?;
    let (receiver, mut target) = hookstorm_cli::builtin::start(None, None).await?;
    target.provider = None;
    let outcome = hookstorm::run::run(
        &target,
        &scenarios(&["long-outage-reconcile"]),
        &options(23, out.path(), false),
        &mut |_| {},
    )
    .await?;
    receiver.shutdown().await;
    let s = &outcome.report.scenarios[0];
    let skip = s.skipped.as_ref().expect("skipped, not run");
    assert_eq!(
        skip.need,
        Some(hookstorm::findings::coverage::Need::Provider)
    );
    assert!(skip.reason.contains("[provider] listen"), "{skip:?}");
    assert!(s.check.results.is_empty());
    assert_eq!(s.verdict(false), None);
    assert_eq!(
        outcome.report.exit_code(),
        hookstorm::exit::UNKNOWN,
        "nothing ran"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn front_scenarios_report_redirects_redeliveries_and_retry_gaps() -> TestResult {
    let names = ["redirect", "manual-redelivery", "retry-schedule"];
    let (outcome, _dir) = run_embedded(None, None, &names, 24, false).await;
    assert!(
        non_passing(&outcome.report).is_empty(),
        "{:?}",
        non_passing(&outcome.report)
    );

    // The 3xx came from the harness's own front: the note says so and
    // asks the user to register nothing (that URL does not exist).
    let redirect = notes(&outcome, "redirect");
    assert!(
        redirect
            .iter()
            .any(|n| n.starts_with("redirect by design:") && n.contains("did not follow")),
        "{redirect:?}"
    );
    assert!(
        !redirect
            .iter()
            .any(|n| n.to_lowercase().contains("register")),
        "{redirect:?}"
    );

    let manual = outcome
        .report
        .scenarios
        .iter()
        .find(|s| s.name == "manual-redelivery")
        .expect("ran");
    assert!(manual.check.counts.dead > 0);
    assert!(manual.check.dead_letters.iter().all(|d| d.recovered));
    let line = manual
        .said()
        .into_iter()
        .find(|n| n.starts_with("dashboard redeliveries"))
        .expect("redelivery note");
    assert!(line.contains("12 sent"), "{line}");
    assert!(!line.contains(" 0 refused while pending"), "{line}");
    assert!(!line.contains(" 0 waited for the hourly limit"), "{line}");

    let gaps = notes(&outcome, "retry-schedule")
        .iter()
        .find(|n| n.starts_with("retry gaps"))
        .expect("gap note")
        .clone();
    assert!(gaps.starts_with("retry gaps: 30 of 30 within"), "{gaps}");
    Ok(())
}

#[test]
fn the_provider_command_dumps_a_scenario_task_book() {
    let dir = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_hookstorm"))
        .args([
            "provider",
            "--scenario",
            "long-outage-reconcile",
            "--seed",
            "3",
            "--dump",
        ])
        .args(["--scenario-dir", &scenario_dir().display().to_string()])
        .current_dir(dir.path())
        .output()
        .expect("hookstorm runs");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let book: hookstorm::provider::TaskBook = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(book.tasks.len(), 23, "20 tasks, 2 pending, 1 expired");
    assert!(book.tasks.iter().any(|t| t.expired));
}

#[test]
fn the_provider_command_needs_its_key_in_the_environment() {
    let o = Command::new(env!("CARGO_BIN_EXE_hookstorm"))
        .args([
            "provider",
            "--listen",
            "127.0.0.1:0",
            "--scenario",
            "baseline",
        ])
        .args(["--key-env", "HOOKSTORM_TEST_NO_SUCH_KEY"])
        .args(["--scenario-dir", &scenario_dir().display().to_string()])
        .output()
        .expect("hookstorm runs");
    assert_eq!(o.status.code(), Some(hookstorm::exit::USAGE));
    assert!(String::from_utf8_lossy(&o.stderr).contains("HOOKSTORM_TEST_NO_SUCH_KEY is not set"));
}
