//! A webhook sender written elsewhere, judged by `hookstorm sink`: Node on
//! Express and `pg`, its messages and its queue (a `jobs` table, as
//! pg-boss keeps one) on a real Postgres, with its own delivery ids and
//! timers of whole seconds (`zoo/node/sender.js`), held to a profile of a
//! few lines (`zoo/node/sender-profile.toml`: the reference sender's with
//! `[sender] timer_resolution = "1s"`).
//!
//! Two mutants, each with a gap only a crash timed on what the harness
//! sees can hit:
//! - `save-then-enqueue` commits the messages, then their jobs in a second
//!   transaction, and takes a message it finds already saved as queued. A
//!   crash between the two commits loses the message; a kill after the
//!   emit call returned never lands there (both commits are done by then).
//!   With the sender's Postgres behind the harness's proxy
//!   (`[database] proxy`), `sender-crash-before-post` crashes it on the
//!   save's own commit, held from the sender until it is dead.
//! - `claims-before-post` marks a message `sending` before its POST and
//!   nothing frees that claim when its worker dies.
//!   `sender-crash-mid-post` holds a request the sink read, unanswered,
//!   while the sender is killed: the claim stays for good.
//!
//! Each is caught (S8) on every seed, and the twin passes both scenarios
//! on the same seeds.

use std::path::Path;
use std::process::Output;

use hookstorm_receiver::pgtest::PgServer;
use serde_json::Value;

use super::{fresh_database, installed_or_skip, zoo_dir, Family};
use crate::common::{output_text as text, scenario_dir_arg};

/// The seeds the crash scenario runs on, for the mutant and its twin.
const SEEDS: u64 = 10;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// The sender's target file in `dir`: its database reached through the
/// harness's proxy when `proxied`.
fn target(dir: &Path, database: &str, proxied: bool) -> std::path::PathBuf {
    target_with(
        dir,
        database,
        proxied,
        &zoo_dir().join("node").join("sender-profile.toml"),
    )
}

/// The same, held to `profile`.
fn target_with(dir: &Path, database: &str, proxied: bool, profile: &Path) -> std::path::PathBuf {
    let port = free_port();
    let (url, section) = if proxied {
        let proxy = free_port();
        let (head, db) = database.rsplit_once('/').expect("a database URL");
        let upstream = head.rsplit('@').next().expect("host:port");
        (
            format!("postgres://postgres@127.0.0.1:{proxy}/{db}"),
            format!(
                "\n[database]\nproxy = {{ listen = \"127.0.0.1:{proxy}\", upstream = \"{upstream}\" }}\n"
            ),
        )
    } else {
        (database.to_string(), String::new())
    };
    let file = dir.join("sender.toml");
    std::fs::write(
        &file,
        format!(
            r#"# A Node sender with an in-memory queue, judged as its team would judge it.
profile = "{profile}"

[accounts.acct_a]
secrets_env = "NODE_SENDER_SECRET_A"

[accounts.acct_b]
secrets_env = "NODE_SENDER_SECRET_B"

[hooks]
emit = "http://127.0.0.1:{port}/emit"
outbox = "http://127.0.0.1:{port}/outbox"
reset = "http://127.0.0.1:{port}/reset"

[lifecycle]
start = "cd {node} && exec node sender.js --port {port} --database {url}"
ready = {{ http = "http://127.0.0.1:{port}/healthz" }}
{section}"#,
            profile = profile.display(),
            node = zoo_dir().join("node").display(),
        ),
    )
    .expect("target file");
    file
}

fn sink(dir: &Path, target: &Path, mutant: &str, seed: u64, args: &[&str]) -> Output {
    let sd = scenario_dir_arg();
    let t = target.display().to_string();
    let seed = seed.to_string();
    let mut all = vec![
        "sink",
        "--target",
        &t,
        "--scenario-dir",
        &sd,
        "--seed",
        &seed,
        "--out",
        "out",
    ];
    all.extend_from_slice(args);
    std::process::Command::new(env!("CARGO_BIN_EXE_hookstorm"))
        .args(&all)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env("NODE_SENDER_SECRET_A", "whsec_node_sender_a")
        .env("NODE_SENDER_SECRET_B", "whsec_node_sender_b")
        .env(
            "HOOKSTORM_SENDER_ACCOUNTS",
            "acct_a=whsec_node_sender_a;acct_b=whsec_node_sender_b",
        )
        .env("SENDER_MUTANT", mutant)
        .output()
        .expect("hookstorm runs")
}

fn report(dir: &Path) -> Value {
    let text = std::fs::read_to_string(dir.join("out/latest/report.json")).expect("report.json");
    serde_json::from_str(&text).expect("report.json is JSON")
}

/// (scenario, invariant, verdict) of every result that is not a pass.
fn not_passing(v: &Value) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for s in v["scenarios"].as_array().unwrap() {
        for r in s["check"]["results"].as_array().unwrap() {
            if r["verdict"] != "pass" {
                out.push((
                    s["name"].as_str().unwrap().to_string(),
                    r["id"].as_str().unwrap().to_string(),
                    r["verdict"].as_str().unwrap().to_string(),
                ));
            }
        }
    }
    out
}

fn postgres_or_skip() -> Option<PgServer> {
    if !installed_or_skip(Family::Node, "the Node sender") {
        return None;
    }
    PgServer::start_or_skip()
}

#[test]
fn a_node_sender_with_an_in_memory_queue_and_a_sweep_passes_every_sender_scenario() {
    let Some(pg) = postgres_or_skip() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let t = target(dir.path(), &fresh_database(&pg), true);
    let o = sink(dir.path(), &t, "", 7, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v = report(dir.path());
    assert_eq!(v["scenarios"].as_array().unwrap().len(), 11);
    assert_eq!(not_passing(&v), Vec::new());
    // The crash before the POST landed on the sender's own commits.
    let history = std::fs::read_to_string(
        dir.path()
            .join("out/latest/sender-crash-before-post/history.jsonl"),
    )
    .expect("history");
    assert_eq!(
        history
            .matches("killed the moment its database committed a save during an emit call")
            .count(),
        3,
        "{history}"
    );
}

#[test]
fn the_node_senders_whole_second_timers_fail_s1_under_a_profile_that_does_not_say_so() {
    let Some(pg) = postgres_or_skip() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let reference =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/profiles/reference-sender.toml");
    let t = target_with(dir.path(), &fresh_database(&pg), false, &reference);
    let o = sink(dir.path(), &t, "", 7, &["--scenario", "sender-dead-letter"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert_eq!(
        not_passing(&report(dir.path())),
        vec![(
            "sender-dead-letter".to_string(),
            "S1".to_string(),
            "fail".to_string()
        )],
        "{}",
        text(&o)
    );
}

#[test]
fn each_node_sender_mutant_is_caught_by_the_crash_timed_on_its_gap_on_every_seed_and_its_twin_passes(
) {
    let Some(pg) = postgres_or_skip() else { return };
    // (mutant, the scenario whose crash lands in its gap).
    let cases = [
        ("save-then-enqueue", "sender-crash-before-post"),
        ("claims-before-post", "sender-crash-mid-post"),
    ];
    for seed in 1..=SEEDS {
        for (mutant, scenario) in cases {
            // The mutant's outbox never settles: a short drain ends its
            // runs (its loss is for good); the twin's retries need a few
            // seconds of whole-second timers.
            for (who, want, drain) in [(mutant, 1, "1s"), ("", 0, "3s")] {
                let dir = tempfile::tempdir().expect("tempdir");
                let t = target(dir.path(), &fresh_database(&pg), true);
                let args = ["--scenario", scenario, "--drain", drain];
                let o = sink(dir.path(), &t, who, seed, &args);
                assert_eq!(
                    o.status.code(),
                    Some(want),
                    "seed {seed}, {scenario}, mutant {who:?}: {}",
                    text(&o)
                );
                let failing = not_passing(&report(dir.path()));
                if want == 1 {
                    // What it took is lost: S8 fails; with nothing sent,
                    // the others have nothing to judge.
                    let failed: Vec<_> = failing.into_iter().filter(|f| f.2 == "fail").collect();
                    assert_eq!(
                        failed,
                        vec![(scenario.to_string(), "S8".to_string(), "fail".to_string())],
                        "seed {seed}, {mutant}: {}",
                        text(&o)
                    );
                } else {
                    assert_eq!(failing, Vec::new(), "seed {seed}, {scenario}: {}", text(&o));
                }
            }
        }
    }
}
