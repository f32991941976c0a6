//! A receiver built the way the receiver guide tells integrators to, on
//! SQLite, in the shape many teams ship: a thread-pool web app that verifies
//! the signature, then either inserts into `webhook_inbox` or puts the
//! delivery on a durable queue whose consumer inserts it 100–300 ms later;
//! a worker that fills `answers` and, for a row it cannot process, records
//! the error and leaves `processed_at` empty; and a reconciliation job that
//! stops its pass at the provider's first 429 and resumes on its next run.
//! hookstorm reads its state with the SQL probe's default queries, exactly
//! as a user would point it at such a database.
//!
//! Every one of those traits is correct, and each used to earn a false
//! failure (the state read before the queue delivered, failed poison rows
//! counted as unprocessed, a single reconcile call). The twin passes the
//! whole HTTP catalog on five seeds; a variant that acknowledges queued
//! deliveries and then drops some is caught by I1, so the waiting never
//! hides a loss.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hookstorm::check::{InvariantId, Verdict};
use rusqlite::{params, Connection, OptionalExtension};

use super::{
    http_get, run_hookstorm_watching, secret_for, verify_answerline, Reply, Request, Server,
};

/// The HTTP scenarios such a receiver can be judged on: all but the process
/// scenarios (no lifecycle here) and sequenced resources (it keeps none).
const CATALOG: &[&str] = &[
    "baseline",
    "account-isolation",
    "ack-loss",
    "bad-signature",
    "concurrent-duplicates",
    "delayed-older",
    "key-rotation",
    "long-outage-reconcile",
    "manual-redelivery",
    "oversized-body",
    "poison-event",
    "raw-body",
    "redirect",
    "replay-window",
    "retry-schedule",
    "reverse-order",
    "sequential-duplicates",
    "test-delivery",
    "timeout-before-commit",
];

const PROVIDER_KEY: &str = "foreign-provider-key";

/// How this copy of the receiver behaves.
#[derive(Clone, Copy, Default)]
struct Traits {
    /// Acknowledge after a durable enqueue; insert 100–300 ms later.
    queue: bool,
    /// Broken: acknowledge every n-th queued delivery and then drop it.
    drop_every: Option<u64>,
    /// Broken: answers 401 to a bad signature, but a job replays rejected
    /// deliveries into the inbox 1.5 s later.
    replays_rejected: bool,
    /// At-least-once queue: it hands every message to the consumer again
    /// this many ms after its first hand-over, once per entry.
    again: &'static [u64],
    /// Broken: the inbox has no unique key and the consumer inserts every
    /// message it is handed.
    keyless: bool,
}

struct Guide {
    webhooks: Server,
    admin: Server,
    db: PathBuf,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl Drop for Guide {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

fn open(db: &Path) -> Connection {
    let c = Connection::open(db).expect("open the receiver's database");
    c.busy_timeout(Duration::from_secs(5))
        .expect("busy timeout");
    c.pragma_update(None, "journal_mode", "WAL").expect("wal");
    c
}

fn schema(db: &Path, keyless: bool) {
    let key = if keyless {
        ""
    } else {
        ", primary key (account, task_id)"
    };
    open(db)
        .execute_batch(&format!(
            "create table if not exists webhook_inbox (
                 task_id text not null,
                 account text not null,
                 body text not null,
                 received_at text not null default current_timestamp,
                 processed_at text,
                 error text{key});
             create table if not exists answers (
                 task_id text not null,
                 account text not null,
                 job_key text,
                 status text not null,
                 created_at text,
                 primary key (account, task_id));"
        ))
        .expect("schema");
}

fn insert(db: &Connection, account: &str, key: &str, body: &str) -> rusqlite::Result<()> {
    db.execute(
        "insert into webhook_inbox (task_id, account, body) values (?1, ?2, ?3)
         on conflict (account, task_id) do nothing",
        params![key, account, body],
    )
    .map(|_| ())
}

/// The broken consumer's insert: no key to conflict on.
fn insert_keyless(db: &Connection, account: &str, key: &str, body: &str) -> rusqlite::Result<()> {
    db.execute(
        "insert into webhook_inbox (task_id, account, body) values (?1, ?2, ?3)",
        params![key, account, body],
    )
    .map(|_| ())
}

struct Queued {
    due: Instant,
    account: String,
    key: String,
    body: String,
}

/// The provider API's URL, once hookstorm has said where it listens.
type ProviderUrl = Arc<OnceLock<String>>;

/// Waits up to 10 s for hookstorm to announce its provider API.
fn provider_url(cell: &ProviderUrl) -> Option<String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(url) = cell.get() {
            return Some(url.clone());
        }
        if Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn start(traits: Traits, dir: &Path, provider: ProviderUrl) -> Guide {
    let db = dir.join("receiver.db");
    schema(&db, traits.keyless);
    let stop = Arc::new(AtomicBool::new(false));
    let queue: Arc<Mutex<Vec<Queued>>> = Arc::default();
    let journal = Arc::new(Mutex::new(
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("queue.log"))
            .expect("queue journal"),
    ));
    let enqueued = Arc::new(AtomicU64::new(0));

    let webhooks = {
        let (db, queue, journal, enqueued) = (db.clone(), queue.clone(), journal, enqueued);
        Server::start(8, move |req: &Request| {
            if req.method != "POST" {
                return Reply::status(404);
            }
            let account = req.last_segment().to_string();
            let Some(secret) = secret_for(&account) else {
                return Reply::status(404);
            };
            if req.too_large {
                return Reply::status(413);
            }
            let Some(body) = req.json() else {
                return Reply::status(400);
            };
            if !verify_answerline(secret, req) {
                if let (true, Some(key)) = (
                    traits.replays_rejected,
                    body.pointer("/task/id").and_then(|k| k.as_str()),
                ) {
                    queue
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push(Queued {
                            due: Instant::now() + Duration::from_millis(1500),
                            account,
                            key: key.to_string(),
                            body: String::from_utf8_lossy(&req.body).into_owned(),
                        });
                }
                return Reply::status(401);
            }
            if body.get("test").and_then(|t| t.as_bool()) == Some(true) {
                return Reply::status(204);
            }
            let Some(key) = body.pointer("/task/id").and_then(|k| k.as_str()) else {
                return Reply::status(400);
            };
            let raw = String::from_utf8_lossy(&req.body).into_owned();
            if traits.queue {
                // Durable enqueue: journal line written and synced, then ack.
                {
                    let mut j = journal.lock().unwrap_or_else(|p| p.into_inner());
                    if writeln!(j, "{account} {key}")
                        .and_then(|_| j.sync_data())
                        .is_err()
                    {
                        return Reply::status(503);
                    }
                }
                let n = enqueued.fetch_add(1, Ordering::SeqCst) + 1;
                if traits.drop_every.is_some_and(|k| n % k == 0) {
                    return Reply::status(204); // the bug: acknowledged, never inserted
                }
                let delay = 100 + (n * 37 % 201);
                let first = Instant::now() + Duration::from_millis(delay);
                let mut q = queue.lock().unwrap_or_else(|p| p.into_inner());
                for after in std::iter::once(&0).chain(traits.again) {
                    q.push(Queued {
                        due: first + Duration::from_millis(*after),
                        account: account.clone(),
                        key: key.to_string(),
                        body: raw.clone(),
                    });
                }
                return Reply::status(204);
            }
            match insert(&open(&db), &account, key, &raw) {
                Ok(()) => Reply::status(204),
                Err(_) => Reply::status(503),
            }
        })
    };

    let mut threads = Vec::new();
    // The queue's consumer.
    threads.push({
        let (db, queue, stop) = (db.clone(), queue.clone(), stop.clone());
        std::thread::spawn(move || {
            let conn = open(&db);
            while !stop.load(Ordering::SeqCst) {
                let due: Vec<Queued> = {
                    let mut q = queue.lock().unwrap_or_else(|p| p.into_inner());
                    let now = Instant::now();
                    let (due, later) = q.drain(..).partition(|i| i.due <= now);
                    *q = later;
                    due
                };
                let put = if traits.keyless {
                    insert_keyless
                } else {
                    insert
                };
                for i in due {
                    let _ = put(&conn, &i.account, &i.key, &i.body);
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        })
    });
    // The worker: answers from inbox rows; a row it cannot process gets its
    // error recorded and `processed_at` left empty, as the guide says.
    threads.push({
        let (db, stop) = (db.clone(), stop.clone());
        std::thread::spawn(move || {
            let conn = open(&db);
            while !stop.load(Ordering::SeqCst) {
                let _ = work(&conn);
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    });

    let submitted: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    let admin = {
        let (db, submitted) = (db.clone(), submitted);
        Server::start(2, move |req: &Request| match req.path.as_str() {
            "/setup" => {
                let body = req.json().unwrap_or_default();
                let account = body
                    .pointer("/params/account")
                    .and_then(|a| a.as_str())
                    .unwrap_or_default()
                    .to_string();
                let ids = body
                    .pointer("/params/task_ids")
                    .and_then(|i| i.as_array())
                    .cloned()
                    .unwrap_or_default();
                let mut s = submitted.lock().unwrap_or_else(|p| p.into_inner());
                s.retain(|(a, _)| *a != account);
                s.extend(
                    ids.iter()
                        .filter_map(|i| i.as_str())
                        .map(|i| (account.clone(), i.to_string())),
                );
                Reply::status(204)
            }
            "/reconcile" => {
                let tasks = submitted.lock().unwrap_or_else(|p| p.into_inner()).clone();
                match provider_url(&provider) {
                    Some(url) => Reply::json(&reconcile_pass(&open(&db), &url, &tasks)),
                    None => Reply::status(503),
                }
            }
            _ => Reply::status(404),
        })
    };
    Guide {
        webhooks,
        admin,
        db,
        stop,
        threads,
    }
}

fn work(conn: &Connection) -> rusqlite::Result<()> {
    let rows: Vec<(String, String, String)> = conn
        .prepare(
            "select task_id, account, body from webhook_inbox
             where processed_at is null and error is null order by received_at limit 100",
        )?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<Result<_, _>>()?;
    for (key, account, body) in rows {
        let v: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
        let created = v.pointer("/task/createdAt").and_then(|c| c.as_str());
        let valid = created.is_some_and(|c| chrono::DateTime::parse_from_rfc3339(c).is_ok());
        if !valid {
            conn.execute(
                "update webhook_inbox set error = 'createdAt is not a date' where account = ?1 and task_id = ?2",
                params![account, key],
            )?;
            continue;
        }
        let job = v
            .pointer("/task/idempotencyKey")
            .and_then(|j| j.as_str())
            .map(job_key);
        let status = v
            .pointer("/task/status")
            .and_then(|s| s.as_str())
            .unwrap_or("COMPLETED");
        let tx = conn.unchecked_transaction()?;
        tx.execute(
            "insert into answers (task_id, account, job_key, status, created_at)
             values (?1, ?2, ?3, ?4, ?5) on conflict do nothing",
            params![key, account, job, status, created],
        )?;
        tx.execute(
            "update webhook_inbox set processed_at = current_timestamp where account = ?1 and task_id = ?2",
            params![account, key],
        )?;
        tx.commit()?;
    }
    Ok(())
}

/// `job-42-r1` -> `job-42`.
fn job_key(k: &str) -> String {
    match k.rsplit_once("-r") {
        Some((base, n)) if !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()) => {
            base.to_string()
        }
        _ => k.to_string(),
    }
}

/// One pass of the reconciliation job: fetches the submitted tasks the
/// inbox lacks; a 404 is skipped; at the first 429 the pass stops and
/// leaves the rest for its next run.
fn reconcile_pass(
    conn: &Connection,
    provider: &str,
    tasks: &[(String, String)],
) -> serde_json::Value {
    let (mut missing, mut inserted, mut not_found, mut not_final) = (0, 0, 0, 0);
    let mut throttled = 0;
    for (i, (account, id)) in tasks.iter().enumerate() {
        let have: Option<i64> = conn
            .query_row(
                "select 1 from webhook_inbox where account = ?1 and task_id = ?2",
                params![account, id],
                |r| r.get(0),
            )
            .optional()
            .unwrap_or(None);
        if have.is_some() {
            continue;
        }
        missing += 1;
        match http_get(provider, &format!("/v1/async/task/{id}"), PROVIDER_KEY) {
            Some((200, body)) => {
                let v: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
                let status = v.pointer("/task/status").and_then(|s| s.as_str());
                if matches!(status, Some("COMPLETED" | "FAILED")) {
                    if insert(conn, account, id, &body).is_ok() {
                        inserted += 1;
                    }
                } else {
                    not_final += 1;
                }
            }
            Some((404, _)) => not_found += 1,
            Some((429, _)) => {
                throttled = tasks.len() - i;
                break;
            }
            _ => {}
        }
    }
    serde_json::json!({
        "missing": missing, "inserted": inserted, "not_found": not_found,
        "not_final": not_final, "throttled": throttled,
    })
}

/// Runs `scenarios` against a fresh receiver with `traits`.
fn run(traits: Traits, scenarios: &[&str], seed: u64) -> super::ForeignRun {
    let dir = tempfile::tempdir().expect("tempdir");
    // hookstorm binds its provider API on port 0 and says where; the
    // guide's reconciler reads the URL from that line.
    let provider = ProviderUrl::default();
    let guide = start(traits, dir.path(), provider.clone());
    let target = format!(
        r#"url = "{base}/webhooks/{{account}}"
{accounts}
[state]
setup = "{admin}/setup"
reconcile = "{admin}/reconcile"

[state.sql]
url = "sqlite://{db}"
reset = ["delete from webhook_inbox", "delete from answers"]

[provider]
listen = "127.0.0.1:0"
key_env = "FOREIGN_PROVIDER_KEY"
"#,
        base = guide.webhooks.base(),
        accounts = super::ACCOUNTS,
        admin = guide.admin.base(),
        db = guide.db.display(),
    );
    let seed = seed.to_string();
    let mut args = vec!["--seed", seed.as_str()];
    for s in scenarios {
        args.extend(["--scenario", s]);
    }
    let out = run_hookstorm_watching(
        &target,
        &args,
        &[("FOREIGN_PROVIDER_KEY", PROVIDER_KEY)],
        |line| {
            if let Some(url) = line.split("provider API on ").nth(1) {
                let _ = provider.set(url.trim().to_string());
            }
        },
    );
    drop(guide);
    out
}

#[test]
fn a_guide_receiver_with_a_queue_failed_poison_rows_and_a_429_shy_reconciler_passes_the_catalog() {
    let traits = Traits {
        queue: true,
        ..Traits::default()
    };
    // Two seeds at a time: each run mostly waits on its compressed
    // schedule, and five in a row took 98 s.
    let seeds = [1, 2, 3, 4, 5];
    let runs: Vec<(u64, super::ForeignRun)> = seeds
        .chunks(2)
        .flat_map(|pair| {
            std::thread::scope(|s| {
                let handles: Vec<_> = pair
                    .iter()
                    .map(|&seed| s.spawn(move || (seed, run(traits, CATALOG, seed))))
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().expect("a seed's run"))
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    for (seed, r) in runs {
        assert_eq!(r.code, 0, "seed {seed}: {}", r.explain());
        let report = r.report.as_ref().expect("report");
        assert_eq!(report.scenarios.len(), CATALOG.len());
        // The reconciler stopped at a 429 at least once and was called again.
        let notes = r.notes("long-outage-reconcile");
        assert!(
            notes.contains("every final task was stored"),
            "seed {seed}: {notes}"
        );
    }
}

#[test]
fn a_guide_receiver_inserting_directly_passes_the_catalog() {
    let traits = Traits::default();
    let r = run(traits, CATALOG, 7);
    assert_eq!(r.code, 0, "{}", r.explain());
}

#[test]
fn a_queue_that_drops_acknowledged_deliveries_is_caught_by_no_loss() {
    let traits = Traits {
        queue: true,
        drop_every: Some(4),
        ..Traits::default()
    };
    let r = run(traits, &["baseline"], 1);
    assert_eq!(r.code, 1, "{}", r.explain());
    assert_eq!(
        r.verdict("baseline", InvariantId::I1),
        Some(Verdict::Fail),
        "{}",
        r.explain()
    );
    let report = r.report.as_ref().expect("report");
    let i1 = report.scenarios[0]
        .check
        .result(InvariantId::I1)
        .expect("I1");
    assert_eq!(
        i1.evidence_total, 5,
        "20 deliveries, every 4th dropped: {i1:?}"
    );
    // Read once the state stopped changing, not after the whole drain.
    assert!(report.scenarios[0].duration_s < 20.0, "{}", r.explain());
}

#[test]
fn the_reconciler_is_called_until_nothing_is_throttled() -> Result<(), Box<dyn std::error::Error>> {
    let traits = Traits::default();
    let r = run(traits, &["long-outage-reconcile"], 2);
    assert_eq!(r.code, 0, "{}", r.explain());
    let history = std::fs::read_to_string(r.reports().join("long-outage-reconcile/history.jsonl"))?;
    let calls = history
        .lines()
        .filter(|l| l.contains("the receiver reconciled against the provider API"))
        .count();
    assert!(
        calls >= 2,
        "a third of the lookups are throttled once: {calls} call(s)"
    );
    Ok(())
}

#[test]
fn a_phantom_that_lands_after_the_read_is_charged_to_its_own_scenario_not_the_next() {
    let traits = Traits {
        replays_rejected: true,
        ..Traits::default()
    };
    // bad-signature's state is read well within 1.5 s; manual-redelivery
    // runs for seconds after it, so the replayed rows land while it runs.
    let r = run(traits, &["bad-signature", "manual-redelivery"], 4);
    let report = r.report.as_ref().expect("report");
    let names: Vec<&str> = report.scenarios.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["bad-signature", "manual-redelivery"]);
    assert_eq!(
        r.verdict("bad-signature", InvariantId::I4),
        Some(Verdict::Fail),
        "{}",
        r.explain()
    );
    assert_eq!(
        r.scenario_verdict("manual-redelivery"),
        Some(Verdict::Pass),
        "{}",
        r.explain()
    );
    let notes = r.notes("bad-signature");
    assert!(
        notes.contains("landed after this scenario's state was read"),
        "{notes}"
    );
}

#[test]
fn an_at_least_once_queue_that_writes_a_key_again_after_the_reset_is_not_charged_a_duplicate() {
    // Every message is handed over a second time 1.5 s later and inserted
    // with `on conflict do nothing`: correct. baseline is read well within
    // 1.5 s, so the second hand-overs land after the reset that began
    // manual-redelivery, into an empty inbox.
    let traits = Traits {
        queue: true,
        again: &[1500],
        ..Traits::default()
    };
    let r = run(traits, &["baseline", "manual-redelivery"], 3);
    assert_eq!(r.code, 0, "{}", r.explain());
    let notes = r.notes("baseline");
    assert!(
        notes.contains("written again after the reset"),
        "the second hand-overs were not seen: {notes}"
    );
}

#[test]
fn an_at_least_once_queue_without_a_unique_key_is_caught_by_exactly_once_even_after_the_reset() {
    // The same queue hands every message over twice more, and the inbox has
    // no key: both copies coexist in the inbox after the reset. (The
    // receiver also fails manual-redelivery on its own, rightly.)
    let traits = Traits {
        queue: true,
        again: &[1500, 1600],
        keyless: true,
        ..Traits::default()
    };
    let r = run(traits, &["baseline", "manual-redelivery"], 3);
    assert_eq!(r.code, 1, "{}", r.explain());
    assert_eq!(
        r.verdict("baseline", InvariantId::I2),
        Some(Verdict::Fail),
        "{}",
        r.explain()
    );
    // baseline's own read was clean: the rows that landed later failed it.
    let notes = r.notes("baseline");
    assert!(notes.contains("pass -> fail"), "{notes}");
}
