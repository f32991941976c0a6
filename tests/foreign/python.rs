//! A receiver in another language under process chaos: `py/receiver.py`,
//! the standard library's threading HTTP server with sqlite3, committing
//! before its 204 and taking 0.8 s to start (an interpreter importing its
//! framework). hookstorm owns it through `[lifecycle]` and SIGKILLs it
//! under load; kills placed by the traffic must interrupt attempts even
//! though every restart is slow, and nothing acknowledged may be lost. Its
//! twin that deduplicates in process memory (no unique key, a set of seen
//! ids) is caught on I2: after the kills, events it had acknowledged
//! before a restart come again, and the emptied set stores them twice.

use hookstorm::check::Verdict;

use super::{run_hookstorm, ACCOUNTS};
use crate::common::count_before;

/// The target file for `receiver.py` on port `port` and database `db`,
/// with `env` (TOML inline-table entries) for the receiver.
fn target(port: u16, db: &std::path::Path, env: &str) -> String {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/foreign/py/receiver.py");
    format!(
        r#"url = "http://127.0.0.1:{port}/webhooks/{{account}}"
{ACCOUNTS}
[state.sql]
url = "sqlite://{db}"
results = ""
winners = ""
reset = ["delete from webhook_inbox"]

[lifecycle]
start = "exec python3 {script} reuse:{port} {db}"
env = {{ {env} }}
ready = {{ tcp = "127.0.0.1:{port}" }}
ready_timeout = "20s"
"#,
        db = db.display()
    )
}

#[test]
fn a_python_receiver_deduplicating_in_memory_is_caught_after_its_restarts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("receiver.db");
    let reserved = hookstorm_cli::builtin::child::Reservation::new().expect("reserve a port");
    let port = reserved.addr().expect("reserved address").port();
    let run = run_hookstorm(
        &target(port, &db, "DEDUPE = \"memory\""),
        &["--scenario", "kill-under-load", "--seed", "21"],
    );
    eprintln!(
        "memory dedupe, kill-under-load: {}",
        run.notes("kill-under-load")
    );
    assert_eq!(run.code, 1, "{}", run.explain());
    assert_eq!(
        run.verdict("kill-under-load", hookstorm::check::InvariantId::I2),
        Some(Verdict::Fail),
        "{}",
        run.explain()
    );
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
    let run = run_hookstorm(
        &target(port, &db, ""),
        &["--scenario", "kill-under-load", "--seed", "21"],
    );
    assert_eq!(run.code, 0, "{}", run.explain());
    assert_eq!(
        run.scenario_verdict("kill-under-load"),
        Some(Verdict::Pass),
        "{}",
        run.explain()
    );
    let report = run.report.as_ref().expect("report");
    let notes = report.scenarios[0].said().join("\n");
    eprintln!("python receiver, kill-under-load, seed 21: {notes}");
    let interrupted = count_before(&notes, "attempt(s) interrupted").unwrap_or(0);
    assert!(
        interrupted > 0,
        "the kills must interrupt attempts: {notes}"
    );
}
