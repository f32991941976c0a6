//! Receivers whose database goes away: a blocking thread-pool server (like
//! gunicorn sync workers or a servlet pool) over real Postgres, with a
//! hand-written connection pool that waits for a usable connection the way
//! HikariCP or psycopg_pool do (it retries connects until its wait runs
//! out), the default schema (docs/state.md) (`webhook_inbox`, `answers`) and a background
//! worker thread that processes rows. Nothing here comes from the reference
//! receiver.
//!
//! It connects through the harness's database proxy, given as `[database]
//! proxy` in a target file with no `[lifecycle]`: the user starts the
//! receiver, the harness only cuts its database. The state is read with the
//! SQL probe's default queries, straight from Postgres.
//!
//! Twins: one answers 2xx when its insert fails (the swallowed exception,
//! the classic `except: log.warning(...)`): `db-outage` must fail it on I1.
//! The other answers 503 when it gets no connection or its insert fails: it
//! must pass, with answers seen during the cut — which only happens because
//! the cut now holds until the 5 s pool wait has run out. And a pool that
//! waits longer than the cut's bound (30 s, psycopg_pool's default) sees
//! nothing of the cut: the scenario is then unknown, never a silent pass.
//! A receiver with no statement timeout at all (the default of most
//! drivers) hangs on a silent database until the provider gives up: its
//! timeouts met the cut, so it is judged after the restore, and the hang is
//! reported as an observation, below a failure.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use hookstorm::check::{InvariantId, Verdict};
use hookstorm::lifecycle::Sockets;
use hookstorm_receiver::pgtest::PgServer;
use tokio_postgres::{Client, NoTls};

use super::{
    run_hookstorm_holding, secret_for, verify_answerline, Reply, Request, Server, ACCOUNTS,
};

/// The default schema (docs/state.md).
const SCHEMA: &str = "
create table if not exists webhook_inbox (
    task_id text primary key,
    body jsonb not null,
    received_at timestamptz not null default now(),
    processed_at timestamptz
);
create table if not exists answers (
    task_id text primary key,
    job_key text not null,
    status text not null,
    created_at timestamptz not null
);";

/// The worker's batch: claim unprocessed rows, record their answers and mark
/// them processed, in one statement (one transaction).
const PROCESS_BATCH: &str = "
with claimed as (
    update webhook_inbox set processed_at = now()
    where task_id in (select task_id from webhook_inbox where processed_at is null
                      order by received_at limit 100 for update skip locked)
    returning task_id, body)
insert into answers (task_id, job_key, status, created_at)
select task_id,
       regexp_replace(coalesce(body->'task'->>'idempotencyKey', task_id), '-r[0-9]+$', ''),
       body->'task'->>'status',
       (body->'task'->>'createdAt')::timestamptz
from claimed
on conflict (task_id) do nothing";

/// How long one statement may take before the receiver gives up on it.
const STATEMENT_TIMEOUT: Duration = Duration::from_secs(5);

/// A blocking connection pool: at most `max` connections; `get` waits up to
/// `wait` for a usable one, retrying connects while the database refuses.
struct PgPool {
    url: String,
    rt: tokio::runtime::Runtime,
    max: usize,
    wait: Duration,
    state: Mutex<PoolState>,
    freed: Condvar,
    /// Set when the receiver shuts down: waiting callers give up at once.
    closed: AtomicBool,
    /// How long one statement may take; `None` waits for ever, the default
    /// of psycopg, node-postgres and most JDBC setups.
    statement_timeout: Option<Duration>,
}

struct PoolState {
    idle: Vec<Client>,
    open: usize,
}

/// A connection on loan; returned to the pool on drop unless broken.
struct Conn<'a> {
    pool: &'a PgPool,
    client: Option<Client>,
}

impl PgPool {
    fn new(url: String, max: usize, wait: Duration) -> PgPool {
        // Drives the connections, as the sync `postgres` crate does inside.
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("pool runtime");
        PgPool {
            url,
            rt,
            max,
            wait,
            state: Mutex::new(PoolState {
                idle: Vec::new(),
                open: 0,
            }),
            freed: Condvar::new(),
            closed: AtomicBool::new(false),
            statement_timeout: Some(STATEMENT_TIMEOUT),
        }
    }

    fn get(&self) -> Result<Conn<'_>, String> {
        let deadline = Instant::now() + self.wait;
        let mut last = String::from("no connection free");
        loop {
            let mut st = self.state.lock().unwrap();
            while let Some(c) = st.idle.pop() {
                if !c.is_closed() {
                    return Ok(Conn {
                        pool: self,
                        client: Some(c),
                    });
                }
                st.open -= 1;
            }
            let now = Instant::now();
            if self.closed.load(Ordering::SeqCst) {
                return Err("pool closed".into());
            }
            if now >= deadline {
                return Err(format!(
                    "no usable connection within {:?}: {last}",
                    self.wait
                ));
            }
            if st.open < self.max {
                st.open += 1;
                drop(st);
                match self.connect(deadline - now) {
                    Ok(c) => {
                        return Ok(Conn {
                            pool: self,
                            client: Some(c),
                        })
                    }
                    Err(e) => {
                        last = e;
                        self.state.lock().unwrap().open -= 1;
                        self.freed.notify_one();
                        std::thread::sleep(Duration::from_millis(100).min(deadline - now));
                    }
                }
            } else {
                let slice = (deadline - now).min(Duration::from_millis(100));
                let _ = self.freed.wait_timeout(st, slice).unwrap();
            }
        }
    }

    fn connect(&self, within: Duration) -> Result<Client, String> {
        let within = within.min(Duration::from_secs(2));
        self.rt.block_on(async {
            match tokio::time::timeout(within, tokio_postgres::connect(&self.url, NoTls)).await {
                Err(_) => Err("connect timed out".to_string()),
                Ok(Err(e)) => Err(e.to_string()),
                Ok(Ok((client, conn))) => {
                    tokio::spawn(async move {
                        let _ = conn.await;
                    });
                    Ok(client)
                }
            }
        })
    }

    /// Runs one statement with the receiver's own time limit.
    fn execute(
        &self,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<u64, String> {
        let mut conn = self.get()?;
        let client = conn.client.as_ref().expect("present until drop");
        let limit = self.statement_timeout.unwrap_or(Duration::MAX);
        let r = self
            .rt
            .block_on(async { tokio::time::timeout(limit, client.execute(sql, params)).await });
        match r {
            Ok(Ok(n)) => Ok(n),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => {
                // The connection is in an unknown state: never reuse it.
                conn.broken();
                Err("statement timed out".into())
            }
        }
    }
}

impl Conn<'_> {
    fn broken(&mut self) {
        if self.client.take().is_some() {
            self.pool.state.lock().unwrap().open -= 1;
            self.pool.freed.notify_one();
        }
    }
}

impl Drop for Conn<'_> {
    fn drop(&mut self) {
        if let Some(c) = self.client.take() {
            let mut st = self.pool.state.lock().unwrap();
            if c.is_closed() {
                st.open -= 1;
            } else {
                st.idle.push(c);
            }
            drop(st);
            self.pool.freed.notify_one();
        }
    }
}

/// How a twin answers when its database lets it down.
#[derive(Clone, Copy, PartialEq, Eq)]
enum OnDbError {
    /// Logs and answers 200 anyway (the bug).
    Acknowledge,
    /// Answers 503 so the provider retries (correct).
    Unavailable,
}

/// A running foreign receiver: the HTTP server and its worker thread.
struct Receiver {
    server: Server,
    pool: Arc<PgPool>,
    stop: Arc<AtomicBool>,
    worker: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        self.pool.closed.store(true, Ordering::SeqCst);
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
    }
}

fn start_receiver(
    db_via_proxy: &str,
    on_error: OnDbError,
    pool_wait: Duration,
    statement_timeout: Option<Duration>,
) -> Receiver {
    let mut pool = PgPool::new(db_via_proxy.to_string(), 8, pool_wait);
    pool.statement_timeout = statement_timeout;
    let pool = Arc::new(pool);
    let handler_pool = pool.clone();
    let server = Server::start(16, move |req: &Request| {
        handle(&handler_pool, on_error, req)
    });
    let stop = Arc::new(AtomicBool::new(false));
    let (worker_pool, worker_stop) = (pool.clone(), stop.clone());
    let worker = std::thread::spawn(move || {
        while !worker_stop.load(Ordering::SeqCst) {
            // Errors (the database is away) are retried on the next tick.
            let _ = worker_pool.execute(PROCESS_BATCH, &[]);
            std::thread::sleep(Duration::from_millis(50));
        }
    });
    Receiver {
        server,
        pool,
        stop,
        worker: Some(worker),
    }
}

fn handle(pool: &PgPool, on_error: OnDbError, req: &Request) -> Reply {
    if req.method != "POST" {
        return Reply::status(404);
    }
    let Some(secret) = secret_for(req.last_segment()) else {
        return Reply::status(404);
    };
    if !verify_answerline(secret, req) {
        return Reply::status(401);
    }
    let Some(body) = req.json() else {
        return Reply::status(400);
    };
    let Some(task_id) = body["task"]["id"].as_str().map(str::to_string) else {
        return Reply::status(400);
    };
    let text = String::from_utf8_lossy(&req.body).into_owned();
    let stored = pool.execute(
        "insert into webhook_inbox (task_id, body) values ($1, $2::text::jsonb) on conflict (task_id) do nothing",
        &[&task_id, &text],
    );
    match (stored, on_error) {
        (Ok(_), _) => Reply::status(200),
        (Err(_), OnDbError::Acknowledge) => Reply::status(200),
        (Err(_), OnDbError::Unavailable) => Reply::status(503),
    }
}

/// A fresh database with the default schema (docs/state.md); returns its URL.
fn fresh_database(pg: &PgServer) -> String {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let url = pg.fresh_database().await.expect("fresh database");
        let (client, conn) = tokio_postgres::connect(&url, NoTls).await.expect("connect");
        tokio::spawn(async move {
            let _ = conn.await;
        });
        client.batch_execute(SCHEMA).await.expect("schema");
        url
    })
}

/// A target file: the receiver, the SQL probe on the real server, and the
/// harness's database proxy (no lifecycle: the test runs the receiver).
fn target_file(base: &str, db_url: &str, proxy_listen: &str, upstream: &str) -> String {
    format!(
        r#"url = "{base}/webhooks/{{account}}"
{ACCOUNTS}
[state.sql]
url = "{db_url}"
reset = ["delete from answers", "delete from webhook_inbox"]

[database]
proxy = {{ listen = "{proxy_listen}", upstream = "{upstream}" }}
"#
    )
}

/// Postgres with a fresh database on the default schema, the proxy's socket (bound here,
/// held for the whole test, handed to each hookstorm run as descriptor 3),
/// and the URL through it.
struct Setup {
    _pg: PgServer,
    db_url: String,
    via_proxy: String,
    proxy: Sockets,
    upstream: String,
}

/// A target file and the socket its fault proxy serves on.
struct CutTarget {
    toml: String,
    sockets: Sockets,
}

fn setup() -> Option<Setup> {
    let pg = PgServer::start_or_skip()?;
    let db_url = fresh_database(&pg);
    let socket = std::net::TcpListener::bind("127.0.0.1:0").expect("bind the proxy's port");
    let listen = socket.local_addr().expect("local address").to_string();
    let upstream = format!("127.0.0.1:{}", pg.port());
    let via_proxy = db_url.replace(&upstream, &listen);
    assert_ne!(
        via_proxy, db_url,
        "the receiver must connect through the proxy"
    );
    Some(Setup {
        _pg: pg,
        db_url,
        via_proxy,
        proxy: Sockets::new(vec![socket]),
        upstream,
    })
}

impl Setup {
    /// Starts the receiver (its database through the proxy, its pool
    /// waiting at most `pool_wait`) and returns it with its target file.
    fn receiver(&self, on_error: OnDbError, pool_wait: Duration) -> (Receiver, CutTarget) {
        self.receiver_with(on_error, pool_wait, Some(STATEMENT_TIMEOUT))
    }

    /// Like [`Setup::receiver`], with the statement time limit given
    /// (`None`: statements wait for ever).
    fn receiver_with(
        &self,
        on_error: OnDbError,
        pool_wait: Duration,
        statement_timeout: Option<Duration>,
    ) -> (Receiver, CutTarget) {
        let rx = start_receiver(&self.via_proxy, on_error, pool_wait, statement_timeout);
        let toml = target_file(&rx.server.base(), &self.db_url, "fd:3", &self.upstream);
        let target = CutTarget {
            toml,
            sockets: self.proxy.clone(),
        };
        (rx, target)
    }
}

/// "N attempts answered during the cut" from the scenario's notes.
fn answered_during_cut(notes: &str) -> Option<u64> {
    crate::common::count_before(notes, "attempt(s) answered during the cut")
}

fn notes(run: &super::ForeignRun, scenario: &str) -> String {
    run.report
        .as_ref()
        .and_then(|r| r.scenarios.iter().find(|s| s.name == scenario))
        .map(|s| s.said().join(" | "))
        .unwrap_or_default()
}

/// Runs `scenario` with `seed` (`extra` flags first, a 10 s drain) and
/// prints its verdict, time and notes under `label`. Returns the run and
/// the scenario's notes.
fn run_cut(
    target: &CutTarget,
    extra: &[&str],
    scenario: &str,
    seed: u64,
    label: &str,
) -> (super::ForeignRun, String) {
    let started = Instant::now();
    let seed_text = seed.to_string();
    let mut args = extra.to_vec();
    args.extend([
        "--scenario",
        scenario,
        "--seed",
        &seed_text,
        "--drain",
        "10s",
    ]);
    let run = run_hookstorm_holding(&target.toml, &args, &[], &target.sockets);
    let notes = notes(&run, scenario);
    eprintln!(
        "{label}, seed {seed}: {:?} in {:.1}s; {notes}",
        run.scenario_verdict(scenario),
        started.elapsed().as_secs_f64()
    );
    (run, notes)
}

#[test]
fn a_receiver_that_acknowledges_when_its_insert_fails_fails_db_outage_on_no_loss() {
    let Some(s) = setup() else { return };
    let (_rx, target) = s.receiver(OnDbError::Acknowledge, Duration::from_secs(5));
    let (run, notes) = run_cut(&target, &[], "db-outage", 1, "swallowing twin");
    assert_eq!(
        run.verdict("db-outage", InvariantId::I1),
        Some(Verdict::Fail),
        "{}",
        run.explain()
    );
    assert_eq!(run.code, 1, "{}", run.explain());
    let seen = answered_during_cut(&notes).unwrap_or(0);
    assert!(seen >= 3, "the cut held until it was seen: {notes}");
    assert!(notes.contains("acknowledged)"), "{notes}");
}

#[test]
fn a_receiver_that_answers_503_without_its_database_passes_db_outage_on_five_seeds() {
    let Some(s) = setup() else { return };
    let (_rx, target) = s.receiver(OnDbError::Unavailable, Duration::from_secs(5));
    for seed in 1..=5u64 {
        let (run, notes) = run_cut(&target, &[], "db-outage", seed, "503 twin");
        assert_eq!(
            run.scenario_verdict("db-outage"),
            Some(Verdict::Pass),
            "seed {seed}: {}",
            run.explain()
        );
        assert_eq!(run.code, 0, "seed {seed}: {}", run.explain());
        let seen = answered_during_cut(&notes).unwrap_or(0);
        assert!(seen > 0, "seed {seed}: answers during the cut: {notes}");
        let history = std::fs::read_to_string(run.reports().join("db-outage/history.jsonl"))
            .expect("history");
        assert!(
            history.contains("\"status\":503"),
            "seed {seed}: the 503 path ran"
        );
        assert!(history.contains("answered while the database was cut"));
    }
}

#[test]
fn a_receiver_that_answers_503_without_its_database_passes_db_blackhole() {
    let Some(s) = setup() else { return };
    let (_rx, target) = s.receiver(OnDbError::Unavailable, Duration::from_secs(5));
    let (run, notes) = run_cut(&target, &[], "db-blackhole", 1, "503 twin, blackhole");
    assert_eq!(
        run.scenario_verdict("db-blackhole"),
        Some(Verdict::Pass),
        "{}",
        run.explain()
    );
    assert!(answered_during_cut(&notes).unwrap_or(0) > 0, "{notes}");
    let history =
        std::fs::read_to_string(run.reports().join("db-blackhole/history.jsonl")).expect("history");
    assert!(history.contains("-> blackhole"), "the cut was a blackhole");
}

#[test]
fn a_pool_that_waits_longer_than_the_cut_leaves_db_outage_unknown_not_passed() {
    let Some(s) = setup() else { return };
    // psycopg_pool's and HikariCP's default wait: 30 s.
    let (_rx, target) = s.receiver(OnDbError::Unavailable, Duration::from_secs(30));
    // The shipped scenario with its bound shortened to 3 s (the shipped 20 s
    // would behave the same, only slower).
    let dir = tempfile::tempdir().expect("tempdir");
    let shipped = std::fs::read_to_string(crate::common::scenario_dir().join("db-outage.toml"))
        .expect("db-outage.toml");
    assert!(shipped.contains("max = \"20s\""));
    std::fs::write(
        dir.path().join("db-outage.toml"),
        shipped.replace("max = \"20s\"", "max = \"3s\""),
    )
    .expect("write scenario");
    let scenario_dir = dir.path().display().to_string();
    let extra = ["--scenario-dir", scenario_dir.as_str()];
    let (run, notes) = run_cut(&target, &extra, "db-outage", 1, "30 s pool, max 3 s");
    assert_eq!(answered_during_cut(&notes), Some(0), "{notes}");
    assert_eq!(
        run.scenario_verdict("db-outage"),
        Some(Verdict::Unknown),
        "{}",
        run.explain()
    );
    assert_eq!(run.code, 2, "{}", run.explain());
    let i1 = run
        .report
        .as_ref()
        .and_then(|r| r.scenarios[0].check.result(InvariantId::I1).cloned())
        .expect("I1");
    assert!(i1.summary.contains("not exercised"), "{}", i1.summary);
    assert!(notes.contains("not exercised"), "{notes}");
}

#[test]
fn a_receiver_without_a_client_timeout_is_judged_on_db_blackhole_and_its_hang_reported() {
    let Some(s) = setup() else { return };
    // No statement timeout and a pool that waits a minute: every request
    // hangs while the database is silent, and none is answered in time.
    let (_rx, target) = s.receiver_with(OnDbError::Unavailable, Duration::from_secs(60), None);
    let (run, notes) = run_cut(&target, &[], "db-blackhole", 1, "no statement timeout");
    assert_eq!(answered_during_cut(&notes), Some(0), "{notes}");
    assert_eq!(
        run.scenario_verdict("db-blackhole"),
        Some(Verdict::Pass),
        "the hang met the cut, so the invariants are judged: {}",
        run.explain()
    );
    assert_eq!(run.code, 0, "{}", run.explain());
    assert!(!notes.contains("not exercised"), "{notes}");
    let observed = run
        .report
        .as_ref()
        .map(|r| r.scenarios[0].check.observations.join(" | "))
        .unwrap_or_default();
    assert!(
        observed.contains("no answer for")
            && observed.contains("give the client a timeout of its own"),
        "the hang is reported as an observation: {observed}"
    );
    let summary = std::fs::read_to_string(run.reports().join("summary.md")).expect("summary");
    assert!(summary.contains("## Informational"), "{summary}");
}
