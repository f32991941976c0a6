//! Receivers that are slow, not broken: one does its work inline and takes
//! longer than the profile's timeout on its first genuine delivery only,
//! the way a cold cache or a first database connection makes one request
//! in many slow. The preflight must tell that from a receiver that never
//! answers: it sends the delivery again as the provider would (same
//! identity, fresh signature), goes on when a later attempt is answered,
//! and says so, leaving slow answers to the scenarios (I7). A receiver
//! that answers nothing still ends the run at the preflight (exit 3),
//! saying how long and how often it was tried.
//!
//! Both use a custom profile with a 1 s timeout, so the slow request costs
//! a second or two, not the answerline's 15 s.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::vendor::{self, Accepted, Keep, Store};
use super::{run_hookstorm, secret_for, verify_answerline, Reply, Request, Server, ACCOUNTS};

/// The per-attempt timeout of the tests' profile.
const TIMEOUT: Duration = Duration::from_secs(1);

/// Writes the answerline profile with a [`TIMEOUT`] timeout into `dir`.
fn short_timeout_profile(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("short-timeout.toml");
    std::fs::write(
        &path,
        "name = \"short-timeout\"\nextends = \"answerline\"\ntimeout = \"1s\"\n",
    )
    .expect("write the profile");
    path
}

/// The job key of an answerline idempotency key (`job-3-r1` → `job-3`).
fn job_of(key: &str) -> String {
    match key.rsplit_once("-r") {
        Some((job, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => job.into(),
        _ => key.into(),
    }
}

/// A correct answerline receiver that stores inline; its first genuine
/// delivery takes `first_takes` (its row is written when that work ends,
/// as a handler that keeps running after the client left would write it).
fn handle(req: &Request, store: &Store, slow_once: &AtomicBool, first_takes: Duration) -> Reply {
    if req.method != "POST" {
        return Reply::status(405);
    }
    let account = req.last_segment().to_string();
    let Some(secret) = secret_for(&account) else {
        return Reply::status(404);
    };
    if !verify_answerline(secret, req) {
        return Reply::status(401);
    }
    let Some(body) = req.json() else {
        return Reply::status(400);
    };
    if body["test"] == true {
        return Reply::status(204);
    }
    if !slow_once.swap(true, Ordering::SeqCst) {
        std::thread::sleep(first_takes);
    }
    let key = vendor::at(&body, "/task/id")
        .map(vendor::text)
        .unwrap_or_default();
    let object = vendor::at(&body, "/task/idempotencyKey").map(|v| job_of(&vendor::text(v)));
    let completed = body["task"]["status"] == "COMPLETED";
    store.accept(
        Accepted {
            account,
            dedup: key.clone(),
            key,
            object: object.filter(|_| completed),
            order: vendor::at(&body, "/task/createdAt").cloned(),
        },
        Keep::Newest,
    );
    Reply::status(204)
}

/// The target file: `receiver` judged by `profile`, its state and reset on `state`.
fn target_file(receiver: &Server, profile: &std::path::Path, state: &Server) -> String {
    format!(
        "url = \"{}/webhooks/{{account}}\"\nprofile = \"{}\"\n{ACCOUNTS}\n[state]\nhttp = \"{}/state\"\nreset = \"{}/reset\"\n",
        receiver.base(),
        profile.display(),
        state.base(),
        state.base()
    )
}

#[test]
fn a_receiver_slow_on_its_first_delivery_only_gets_past_the_preflight_to_a_verdict() {
    let profile_dir = tempfile::tempdir().expect("tempdir");
    let profile = short_timeout_profile(profile_dir.path());
    let store = Store::default();
    let (s, slow_once) = (store.clone(), Arc::new(AtomicBool::new(false)));
    let flag = slow_once.clone();
    let receiver = Server::start(8, move |req| handle(req, &s, &flag, TIMEOUT * 3 / 2));
    let state = vendor::state_server(&store);
    let target = target_file(&receiver, &profile, &state);
    let run = run_hookstorm(&target, &["--scenario", "baseline", "--seed", "3"]);
    assert!(
        slow_once.load(Ordering::SeqCst),
        "the slow request was made"
    );
    assert_ne!(run.code, 3, "the preflight gave up: {}", run.explain());
    assert!(
        run.output
            .contains("was answered only on attempt 2 (the first took over 1s); the scenarios judge slow answers (I7)"),
        "the preflight says the target was slow once: {}",
        run.output
    );
    assert!(
        run.output.contains("the preflight's rows were reset away"),
        "{}",
        run.output
    );
    // The late row of the slow attempt was reset away too: baseline's
    // state holds no preflight key.
    let state_json = std::fs::read_to_string(run.reports().join("baseline").join("state.json"))
        .expect("baseline's state.json");
    assert!(
        !state_json.contains(hookstorm::run::preflight::KEY_PREFIX),
        "{state_json}"
    );
    assert_eq!(run.code, 0, "{}", run.explain());
}

#[test]
fn a_receiver_that_never_answers_ends_at_the_preflight_saying_how_long_and_how_often() {
    let profile_dir = tempfile::tempdir().expect("tempdir");
    let profile = short_timeout_profile(profile_dir.path());
    let receiver = Server::start(8, |_| Reply::Hang(Duration::from_secs(5)));
    let state = Server::start(2, |req| match req.path.as_str() {
        "/state" => Reply::json(&serde_json::json!({ "inbox": [] })),
        _ => Reply::status(204),
    });
    let target = target_file(&receiver, &profile, &state);
    let started = Instant::now();
    let run = run_hookstorm(&target, &["--scenario", "baseline", "--seed", "3"]);
    assert_eq!(run.code, 3, "{}", run.explain());
    assert!(
        run.output.contains(
            "did not answer a correctly signed test delivery for acct_a within 1s in any of 3 tries (3s in all;"
        ) && run.output.contains("is it stuck?"),
        "{}",
        run.output
    );
    // Three tries of a second each and their pauses, not the scenarios.
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}
