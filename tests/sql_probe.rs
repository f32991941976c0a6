//! The SQL probe reads a receiver that knows nothing of hookstorm: the
//! reference receiver's database, read directly with the default queries.

use hookstorm::check::{InvariantId, Verdict};
use hookstorm::state::probe::{ProbeConfig, SqlProbeConfig};

use crate::common::*;

async fn sql_probe_run(db_url: String, probe_url: String) -> hookstorm::report::RunReport {
    let out = tempfile::tempdir().unwrap();
    let (receiver, mut target) = hookstorm_cli::builtin::start(None, Some(&db_url))
        .await
        .unwrap();
    target.state = ProbeConfig {
        sql: Some(SqlProbeConfig {
            url: probe_url,
            ..Default::default()
        }),
        ..Default::default()
    };
    let outcome = hookstorm::run::run(
        &target,
        &scenarios(&["baseline", "reverse-order"]),
        &options(21, out.path(), false),
        &mut |_| {},
    )
    .await
    .unwrap();
    receiver.shutdown().await;
    outcome.report
}

fn assert_checked(report: &hookstorm::report::RunReport) {
    let bad = non_passing(report);
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    // The default queries produce inbox, results and winners: these are
    // really checked, not unknown.
    for id in [InvariantId::I1, InvariantId::I2, InvariantId::I5] {
        assert_eq!(verdict(report, "reverse-order", id), Some(Verdict::Pass));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sql_probe_reads_the_reference_receivers_sqlite_database_with_default_queries() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("receiver.db").display());
    let report = sql_probe_run(url.clone(), url).await;
    assert_checked(&report);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sql_probe_reads_the_reference_receivers_postgres_database_with_default_queries() {
    let Some(pg) = hookstorm_receiver::pgtest::PgServer::start_or_skip() else {
        return;
    };
    let report = sql_probe_run(pg.url(), pg.url()).await;
    assert_checked(&report);
}
