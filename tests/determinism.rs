//! The same scenario against the same receiver with the same seed gives the
//! same deliveries and the same verdicts.

use hookstorm::history::{self, Event};

use crate::common::*;

/// The parts of a history that the seed decides (not timings or latencies).
fn deliveries(path: &std::path::Path) -> Vec<String> {
    let mut out: Vec<String> = history::read(path)
        .unwrap()
        .filter_map(|e| match e.unwrap() {
            Event::Attempt(a) => Some(format!(
                "{} {} {} {} {:?} {:?} {:?} {:?} {:?}",
                a.delivery,
                a.key,
                a.account,
                a.attempt,
                a.intent,
                a.detail,
                a.faults,
                a.task_status,
                a.created_at
            )),
            _ => None,
        })
        .collect();
    out.sort();
    out
}

/// (invariant, verdict) of every check of one scenario.
fn verdicts(
    report: &hookstorm::report::RunReport,
    name: &str,
) -> Vec<(hookstorm::check::InvariantId, hookstorm::check::Verdict)> {
    let s = report
        .scenarios
        .iter()
        .find(|s| s.name == name)
        .expect("scenario ran");
    s.check.results.iter().map(|r| (r.id, r.verdict)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn same_seed_gives_identical_deliveries_and_verdicts() -> TestResult {
    let names = ["reverse-order", "ack-loss", "bad-signature"];
    let (a, _da) = run_embedded(None, None, &names, 99, false).await;
    let (b, _db) = run_embedded(None, None, &names, 99, false).await;
    for name in names {
        let ha = deliveries(&a.dir.join(name).join("history.jsonl"));
        let hb = deliveries(&b.dir.join(name).join("history.jsonl"));
        assert!(!ha.is_empty());
        assert_eq!(
            ha, hb,
            "{name}: deliveries differ between two runs with one seed"
        );
        assert_eq!(verdicts(&a.report, name), verdicts(&b.report, name));
    }
    let (c, _dc) = run_embedded(None, None, &["reverse-order"], 100, false).await;
    assert_ne!(
        deliveries(&a.dir.join("reverse-order/history.jsonl")),
        deliveries(&c.dir.join("reverse-order/history.jsonl")),
        "another seed gives other deliveries"
    );
    Ok(())
}
