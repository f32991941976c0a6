//! The reference receiver passes every scenario, on SQLite and on Postgres.

use crate::common::*;
use hookstorm_receiver::pgtest::PgServer;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reference_receiver_on_sqlite_passes_every_scenario() -> TestResult {
    let (outcome, _dir) = run_embedded(None, None, &[], 11, true).await;
    let bad = non_passing(&outcome.report);
    assert!(
        bad.is_empty(),
        "reference receiver failed:\n{}",
        bad.join("\n")
    );
    assert_eq!(outcome.report.exit_code(), hookstorm::exit::PASS);
    assert!(outcome.report.scenarios.len() >= 12);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reference_receiver_on_postgres_passes_every_scenario() -> TestResult {
    let Some(pg) = PgServer::start_or_skip() else {
        return Ok(());
    };
    let (outcome, _dir) = run_embedded(None, Some(&pg.url()), &[], 12, true).await;
    let bad = non_passing(&outcome.report);
    assert!(
        bad.is_empty(),
        "reference receiver on Postgres failed:\n{}",
        bad.join("\n")
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_never_appear_in_reports_histories_or_states() -> TestResult {
    let out = tempfile::tempdir()?;
    let (receiver, target) = hookstorm_cli::builtin::start(None, None).await?;
    let names = ["key-rotation", "bad-signature", "account-isolation"];
    let outcome = hookstorm::run::run(
        &target,
        &scenarios(&names),
        &options(2, out.path(), false),
        &mut |_| {},
    )
    .await?;
    receiver.shutdown().await;
    let mut secrets = target_secrets(&target);
    secrets.extend(target.state.token.clone());
    assert!(secrets.len() >= 3);
    let mut files = 0;
    for path in walk(&outcome.dir) {
        let text = std::fs::read_to_string(&path)?;
        files += 1;
        for s in &secrets {
            assert!(
                !text.contains(s.as_str()),
                "a secret leaked into {}",
                path.display()
            );
        }
    }
    assert!(files >= 6);
    let table = hookstorm::report::console::console_table(&outcome.report, false);
    assert!(secrets.iter().all(|s| !table.contains(s.as_str())));
    Ok(())
}
