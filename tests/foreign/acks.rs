//! Receivers that acknowledge nothing: one answers 503 to every POST (a
//! receiver whose database never came up, or a load balancer with no
//! healthy backend), one answers bytes that are not HTTP (a TLS port, a
//! misrouted service), one closes the connection inside the status line (a
//! crashing worker). Nothing they acknowledged is lost, so I1 alone passes
//! them; I9 must fail every one, because no genuine delivery ever got a 2xx
//! before its retry schedule ran out. Their state endpoint works and
//! reports an empty inbox, so the failure is theirs, not the probe's.

use hookstorm::check::{InvariantId, Verdict};

use super::{run_hookstorm, Reply, Server, ACCOUNTS};

/// Runs `baseline` (retry schedule compressed 1000x) against a receiver
/// whose every POST gets `reply`, with a state endpoint that works.
fn baseline_against(reply: Reply) -> super::ForeignRun {
    baseline_with(reply, &["--no-preflight"])
}

/// Like [`baseline_against`] with other extra flags.
fn baseline_with(reply: Reply, extra: &[&str]) -> super::ForeignRun {
    let receiver = Server::start(4, move |_| reply.clone());
    let state = Server::start(2, |req| match req.path.as_str() {
        "/state" => Reply::json(&serde_json::json!({ "inbox": [] })),
        _ => Reply::status(204),
    });
    let target = format!(
        "url = \"{}/webhooks/{{account}}\"\n{ACCOUNTS}\n[state]\nhttp = \"{}/state\"\nreset = \"{}/reset\"\n",
        receiver.base(),
        state.base(),
        state.base()
    );
    let mut args = vec![
        "--scenario",
        "baseline",
        "--seed",
        "3",
        "--time-scale",
        "1000",
    ];
    args.extend_from_slice(extra);
    run_hookstorm(&target, &args)
}

/// Asserts that I9 failed on every delivery and that its first evidence
/// says `what` about the last answer.
fn assert_nothing_acknowledged_fails_i9(run: &super::ForeignRun, what: &str) {
    assert_eq!(run.code, 1, "{}", run.explain());
    assert_eq!(run.scenario_verdict("baseline"), Some(Verdict::Fail));
    assert_eq!(
        run.verdict("baseline", InvariantId::I9),
        Some(Verdict::Fail),
        "{}",
        run.explain()
    );
    // Nothing was acknowledged, so nothing acknowledged was lost.
    assert_eq!(
        run.verdict("baseline", InvariantId::I1),
        Some(Verdict::Pass),
        "{}",
        run.explain()
    );
    let report = run.report.as_ref().expect("report");
    let s = &report.scenarios[0];
    let i9 = s.check.result(InvariantId::I9).expect("I9 checked");
    assert_eq!(i9.evidence_total, s.check.counts.dead, "{}", run.explain());
    assert!(s.check.counts.dead > 0 && s.check.counts.ok == 0);
    assert!(i9.evidence[0].what.contains(what), "{i9:?}");
}

#[test]
fn a_receiver_answering_503_to_everything_fails_acknowledged() {
    let run = baseline_against(Reply::status(503));
    assert_nothing_acknowledged_fails_i9(&run, "answered 503");
}

#[test]
fn a_receiver_answering_garbage_instead_of_http_fails_acknowledged() {
    let run = baseline_against(Reply::Raw(
        b"220 smtp.example ESMTP ready\r\n\r\nthis is not http\r\n".to_vec(),
    ));
    assert_nothing_acknowledged_fails_i9(&run, "got no answer");
}

#[test]
fn a_receiver_closing_inside_the_status_line_fails_acknowledged() {
    // "HTTP/1.1 20" and then the connection is gone: not a 2xx.
    let run = baseline_against(Reply::Raw(b"HTTP/1.1 20".to_vec()));
    assert_nothing_acknowledged_fails_i9(&run, "got no answer");
}

#[test]
fn a_receiver_closing_before_any_byte_fails_acknowledged() {
    let run = baseline_against(Reply::Close);
    assert_nothing_acknowledged_fails_i9(&run, "got no answer");
}

#[test]
fn by_default_the_preflight_stops_an_always_503_receiver_in_seconds_with_exit_3() {
    let started = std::time::Instant::now();
    let run = baseline_with(Reply::status(503), &[]);
    assert_eq!(run.code, 3, "{}", run.explain());
    assert!(run.output.contains("answered 503"), "{}", run.output);
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
}
