//! A receiver whose web framework redirects the webhook route (a
//! trailing-slash rewrite, an http-to-https or moved-route redirect): it
//! answers every delivery 308 with a `Location` one slash longer and never
//! stores anything. It stands for the common misconfiguration where the URL
//! registered with the provider is not the URL the handler lives at.
//!
//! Senders never follow redirects, so every delivery dies: the preflight
//! refuses the target (exit 3) naming the URL to register, and a run
//! without the preflight fails I7 on the receiver's own 3xx with a note
//! telling the user to register the final URL (unlike a redirect its own
//! front makes by design, where there is nothing to register).

use hookstorm::check::{InvariantId, Verdict};

use super::{run_hookstorm, Reply, Request, Server, ACCOUNTS};

fn redirecting(req: &Request) -> Reply {
    match (req.method.as_str(), req.path.as_str()) {
        ("GET", "/state") => Reply::json(&serde_json::json!({ "inbox": [] })),
        ("POST", "/reset") => Reply::status(204),
        ("POST", p) if p.starts_with("/webhooks/") => Reply::Raw(
            format!(
                "HTTP/1.1 308 Permanent Redirect\r\nLocation: {p}/\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            )
            .into_bytes(),
        ),
        _ => Reply::status(404),
    }
}

#[test]
fn a_receiver_that_redirects_its_own_route_fails_i7_and_is_told_to_register_the_final_url() {
    let server = Server::start(4, redirecting);
    let target = format!(
        "url = \"{base}/webhooks/{{account}}\"\n{ACCOUNTS}\n[state]\nhttp = \"{base}/state\"\n",
        base = server.base()
    );
    // The preflight sees it before any scenario: unusable, with the fix.
    let pre = run_hookstorm(&target, &["--scenario", "baseline", "--seed", "2"]);
    assert_eq!(pre.code, 3, "{}", pre.explain());
    assert!(pre.output.contains("register that URL"), "{}", pre.output);
    // Without the preflight the run itself fails I7 and its note says the same.
    let run = run_hookstorm(
        &target,
        &[
            "--no-preflight",
            "--scenario",
            "baseline",
            "--seed",
            "2",
            "--time-scale",
            "5000",
        ],
    );
    assert_eq!(run.code, 1, "{}", run.explain());
    assert_eq!(
        run.verdict("baseline", InvariantId::I7),
        Some(Verdict::Fail),
        "{}",
        run.explain()
    );
    assert_eq!(run.scenario_verdict("baseline"), Some(Verdict::Fail));
    let report = run.report.as_ref().expect("report.json");
    let notes = report.scenarios[0].said();
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("redirect: the receiver URL answered 308")
                && n.contains(&format!(
                    "Register the final URL instead: {}/webhooks/acct_a/",
                    server.base()
                ))),
        "{notes:?}"
    );
    // The console shows that note too: it is the user's to act on.
    assert!(
        run.output
            .contains("redirect: the receiver URL answered 308"),
        "{}",
        run.output
    );
}
