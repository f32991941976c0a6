//! A receiver in another language under process chaos: `py/receiver.py`,
//! the standard library's threading HTTP server with sqlite3, committing
//! before its 204 and taking 0.8 s to start (an interpreter importing its
//! framework). hookstorm owns it through `[lifecycle]` and SIGKILLs it
//! under load; kills placed by the traffic must interrupt attempts even
//! though every restart is slow, and nothing acknowledged may be lost.

use hookstorm::check::Verdict;

use super::{run_hookstorm, ACCOUNTS};

/// The number in front of `what` in `text` ("4 attempt(s) interrupted").
fn count_before(text: &str, what: &str) -> Option<u64> {
    let at = text.find(what)?;
    text[..at].split_whitespace().last()?.parse().ok()
}

#[test]
fn a_slow_starting_python_receiver_survives_kills_that_interrupt_its_attempts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("receiver.db");
    // The test reserves the receiver's port for the whole run (a bound
    // socket that never listens); every start of the receiver binds it
    // beside the reservation with SO_REUSEPORT.
    let reserved = hookstorm_cli::builtin::child::Reservation::new().expect("reserve a port");
    let port = reserved.addr().expect("reserved address").port();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/foreign/py/receiver.py");
    let target = format!(
        r#"url = "http://127.0.0.1:{port}/webhooks/{{account}}"
{ACCOUNTS}
[state.sql]
url = "sqlite://{db}"
results = ""
winners = ""
reset = ["delete from webhook_inbox"]

[lifecycle]
start = "exec python3 {script} reuse:{port} {db}"
ready = {{ tcp = "127.0.0.1:{port}" }}
ready_timeout = "20s"
"#,
        db = db.display()
    );
    let run = run_hookstorm(&target, &["--scenario", "kill-under-load", "--seed", "21"]);
    assert_eq!(run.code, 0, "{}", run.explain());
    assert_eq!(
        run.scenario_verdict("kill-under-load"),
        Some(Verdict::Pass),
        "{}",
        run.explain()
    );
    let report = run.report.as_ref().expect("report");
    let notes = report.scenarios[0].notes.join("\n");
    eprintln!("python receiver, kill-under-load, seed 21: {notes}");
    let interrupted = count_before(&notes, "attempt(s) interrupted").unwrap_or(0);
    assert!(
        interrupted > 0,
        "the kills must interrupt attempts: {notes}"
    );
}
