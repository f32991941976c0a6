//! The state probes against real sources: a SQLite file and a Postgres
//! server with the default schema (the SQL of docs/state.md, as a reader
//! copies it), an HTTP admin endpoint on 127.0.0.1, and shell commands.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use hookstorm::state::probe::{Probe, ProbeConfig, ProbeError, SqlProbeConfig};
use http_body_util::{BodyExt, Full};
use hyper::{Request, Response};

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// The default schema as docs/state.md gives it (inbox and answers): the
/// SQL block under its "The default schema" heading, run as it is.
fn default_schema() -> String {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/state.md"))
            .expect("docs/state.md");
    let section = doc
        .split("\n## The default schema\n")
        .nth(1)
        .expect("docs/state.md has a section \"The default schema\"");
    let block = section
        .split("```sql\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("the section holds a ```sql block");
    block.to_string()
}

/// Rows: t1/t2 COMPLETED for job-1 (t2 newer), t3 FAILED newest; t4 unprocessed.
const DEFAULT_ROWS: &str = "
insert into webhook_inbox (task_id, body, processed_at) values
  ('t1', '{}', '2026-11-29 10:00:05'), ('t2', '{}', '2026-11-29 10:00:06'),
  ('t3', '{}', '2026-11-29 10:00:07'), ('t4', '{}', null);
insert into answers (task_id, job_key, status, created_at, response) values
  ('t1', 'job-1', 'COMPLETED', '2026-11-29 10:00:01', '{}'),
  ('t2', 'job-1', 'COMPLETED', '2026-11-29 10:00:02', '{}'),
  ('t3', 'job-1', 'FAILED', '2026-11-29 10:00:03', '{}'),
  ('t5', 'job-2', 'COMPLETED', '2026-11-29 10:00:00', '{}'),
  ('t6', 'job-2', 'COMPLETED', '2026-11-29 10:00:00', '{}');";

fn assert_default_state(s: &hookstorm::state::State) {
    let mut inbox: Vec<(String, bool)> = s
        .inbox
        .iter()
        .map(|r| (r.key.clone(), r.processed))
        .collect();
    inbox.sort();
    assert_eq!(
        inbox,
        vec![
            ("t1".into(), true),
            ("t2".into(), true),
            ("t3".into(), true),
            ("t4".into(), false)
        ]
    );
    let results = s.results.as_ref().expect("results");
    assert_eq!(results.len(), 5);
    let t1 = results.iter().find(|r| r.task_id == "t1").unwrap();
    assert_eq!(t1.created_at.as_deref(), Some("2026-11-29T10:00:01Z"));
    let mut winners: Vec<(String, String)> = s
        .winners
        .as_ref()
        .expect("winners")
        .iter()
        .map(|w| (w.job_key.clone(), w.task_id.clone()))
        .collect();
    winners.sort();
    // Ties on created_at go to the larger task id, as the checker expects.
    assert_eq!(
        winners,
        vec![("job-1".into(), "t2".into()), ("job-2".into(), "t6".into())]
    );
    assert!(s.effects.is_none() && s.resources.is_none());
}

fn sqlite_probe(path: &Path, extra: impl FnOnce(&mut SqlProbeConfig)) -> Result<Probe, ProbeError> {
    let mut sql = SqlProbeConfig {
        url: format!("sqlite://{}", path.display()),
        ..SqlProbeConfig::default()
    };
    extra(&mut sql);
    Probe::from_config(&ProbeConfig {
        sql: Some(sql),
        ..ProbeConfig::default()
    })
}

#[tokio::test]
async fn sqlite_probe_reads_the_documented_default_schema_with_default_queries() -> TestResult {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("receiver.db");
    let db = rusqlite::Connection::open(&path)?;
    db.execute_batch(&default_schema())?;
    db.execute_batch(DEFAULT_ROWS)?;
    drop(db);
    let probe = sqlite_probe(&path, |s| {
        s.reset = Some(vec!["delete from webhook_inbox".into()])
    })?;
    assert_default_state(&probe.read_state().await?);
    probe.reset().await?;
    assert!(probe.read_state().await?.inbox.is_empty());
    Ok(())
}

#[tokio::test]
async fn sqlite_probe_maps_the_reference_schema_by_column_name() -> TestResult {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("receiver.db");
    let db = rusqlite::Connection::open(&path)?;
    db.execute_batch(
        "create table webhook_inbox (account text, task_id text, body text, received_at text, processed_at text, error text,
           primary key (account, task_id));
         create table answers (account text, task_id text, job_key text, status text, created_at text, response text);
         create table effects (account text, task_id text, count integer);
         create table resources (account text, resource text, sequence integer);
         insert into webhook_inbox values ('acct_a', 't1', '{}', '2026-11-29T10:00:00Z', '2026-11-29T10:00:01Z', null),
                                          ('acct_a', 'tp', '{}', '2026-11-29T10:00:00Z', '2026-11-29T10:00:01Z', 'bad createdAt');
         insert into answers values ('acct_a', 't1', 'job-1', 'COMPLETED', '2026-11-29T09:00:00Z', '{}');
         insert into effects values ('acct_a', 't1', 1);
         insert into resources values ('acct_a', 'order-7', 12);",
    )?;
    drop(db);
    // The defaults fit the wider schema: they select its account and error...
    let plain = sqlite_probe(&path, |_| {})?.read_state().await?;
    assert_eq!(plain.inbox.len(), 2);
    assert!(plain
        .inbox
        .iter()
        .all(|r| r.account.as_deref() == Some("acct_a") && r.processed));
    assert_eq!(
        plain
            .inbox
            .iter()
            .filter_map(|r| r.error.as_deref())
            .collect::<Vec<_>>(),
        ["bad createdAt"]
    );
    // ...and overrides bring in accounts, errors, effects and resources.
    let probe = sqlite_probe(&path, |s| {
        s.inbox = Some("select account, task_id, processed_at, error from webhook_inbox".into());
        s.effects = Some("select account, task_id as key, count from effects".into());
        s.resources = Some("select account, resource, sequence from resources".into());
        s.winners = Some(String::new());
    })?;
    let s = probe.read_state().await?;
    let tp = s.inbox.iter().find(|r| r.key == "tp").unwrap();
    assert_eq!(tp.account.as_deref(), Some("acct_a"));
    assert_eq!(tp.error.as_deref(), Some("bad createdAt"));
    assert!(tp.processed);
    assert_eq!(s.effects.unwrap()[0].count, 1);
    assert_eq!(s.resources.unwrap()[0].sequence, 12);
    assert!(
        s.winners.is_none(),
        "an empty query switches the section off"
    );
    Ok(())
}

#[tokio::test]
async fn sqlite_probe_names_a_missing_table() -> TestResult {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("empty.db");
    rusqlite::Connection::open(&path)?;
    let e = sqlite_probe(&path, |_| {})?
        .read_state()
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("webhook_inbox"), "{e}");
    Ok(())
}

// ---- Postgres ----

struct Postgres {
    dir: tempfile::TempDir,
    port: u16,
}

impl Postgres {
    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn url(&self) -> String {
        format!(
            "postgres://hookstorm:pw-not-shown@127.0.0.1:{}/postgres",
            self.port
        )
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let _ = as_postgres(&[
            "pg_ctl",
            "-D",
            &self.data().to_string_lossy(),
            "-m",
            "immediate",
            "stop",
        ]);
    }
}

fn pg_bin(name: &str) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    if let Ok(rd) = std::fs::read_dir("/usr/lib/postgresql") {
        dirs.extend(rd.flatten().map(|e| e.path().join("bin")));
    }
    dirs.into_iter().map(|d| d.join(name)).find(|p| p.is_file())
}

fn as_postgres(args: &[&str]) -> std::io::Result<std::process::Output> {
    let bin =
        pg_bin(args[0]).ok_or_else(|| std::io::Error::other(format!("{} not found", args[0])))?;
    let running_as_root = Command::new("id")
        .arg("-u")
        .output()
        .map(|o| o.stdout.starts_with(b"0"))
        .unwrap_or(false);
    let mut cmd = if running_as_root {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(&bin);
        c
    } else {
        Command::new(&bin)
    };
    cmd.args(&args[1..]).output()
}

/// A candidate port for the throwaway server. Postgres cannot listen on
/// port 0 and report the port it got, nor take a socket bound here, so the
/// port is chosen without binding it: below the kernel's ephemeral range
/// (where `bind(":0")` hands out ports), placed by pid, walked by a
/// counter. A start that finds it taken retries on the next one.
fn candidate_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let base = std::process::id().wrapping_mul(331) % 12_000;
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    (20_000 + (base + n * 11) % 12_000) as u16
}

/// A loopback port that refuses connections while the returned socket
/// lives: bound, never listening, so no one else can listen there.
fn refusing_port() -> (tokio::net::TcpSocket, u16) {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let port = socket.local_addr().unwrap().port();
    (socket, port)
}

/// Starts a throwaway Postgres, or returns None (with a note) when its
/// binaries are missing and `HOOKSTORM_REQUIRE_POSTGRES` is not 1.
fn start_postgres() -> Option<Postgres> {
    let required = std::env::var("HOOKSTORM_REQUIRE_POSTGRES").as_deref() == Ok("1");
    if pg_bin("initdb").is_none() || pg_bin("pg_ctl").is_none() {
        assert!(
            !required,
            "HOOKSTORM_REQUIRE_POSTGRES=1 but initdb/pg_ctl are not installed"
        );
        eprintln!("note: skipping the Postgres probe test: initdb/pg_ctl not found");
        return None;
    }
    let dir = tempfile::Builder::new()
        .prefix("hookstorm-pg")
        .tempdir()
        .unwrap();
    let _ = Command::new("chown")
        .args(["-R", "postgres"])
        .arg(dir.path())
        .status();
    let mut pg = Postgres {
        port: candidate_port(),
        dir,
    };
    let data = pg.data().to_string_lossy().into_owned();
    let pwfile = pg.dir.path().join("pw");
    std::fs::write(&pwfile, "pw-not-shown\n").unwrap();
    let _ = Command::new("chown").arg("postgres").arg(&pwfile).status();
    let out = as_postgres(&[
        "initdb",
        "-D",
        &data,
        "-U",
        "hookstorm",
        "--auth=md5",
        "--pwfile",
        &pwfile.to_string_lossy(),
        "-E",
        "UTF8",
    ])
    .unwrap();
    assert!(
        out.status.success(),
        "initdb: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let log = pg.dir.path().join("log").to_string_lossy().into_owned();
    let mut attempts = 1;
    let out = loop {
        let opts = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off",
            pg.port,
            pg.dir.path().display()
        );
        let out = as_postgres(&[
            "pg_ctl", "-D", &data, "-o", &opts, "-l", &log, "-w", "-t", "30", "start",
        ])
        .unwrap();
        let taken = std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains("Address already in use");
        if out.status.success() || !taken || attempts == 20 {
            break out;
        }
        // Someone else holds the port: the next candidate.
        let _ = std::fs::remove_file(&log);
        attempts += 1;
        pg.port = candidate_port();
    };
    assert!(
        out.status.success(),
        "pg_ctl start: {} {}",
        String::from_utf8_lossy(&out.stderr),
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    Some(pg)
}

#[tokio::test]
async fn postgres_probe_reads_the_default_schema_with_default_queries() -> TestResult {
    let Some(pg) = start_postgres() else {
        return Ok(());
    };
    let (client, conn) = tokio_postgres::connect(&pg.url(), tokio_postgres::NoTls).await?;
    tokio::spawn(conn);
    client
        .batch_execute(
            "create table webhook_inbox (task_id text primary key, body jsonb not null,
               received_at timestamptz not null default now(), processed_at timestamptz);
             create table answers (task_id text primary key, job_key text, status text,
               created_at timestamptz, response jsonb);",
        )
        .await?;
    client
        .batch_execute(
            &DEFAULT_ROWS
                .replace("'{}'", "'{}'::jsonb")
                .replace(":00'", ":00+00'"),
        )
        .await?;
    let cfg = ProbeConfig {
        sql: Some(SqlProbeConfig {
            url: pg.url(),
            reset: Some(vec!["truncate webhook_inbox, answers".into()]),
            ..SqlProbeConfig::default()
        }),
        ..ProbeConfig::default()
    };
    let probe = Probe::from_config(&cfg)?;
    assert!(
        !probe.describe().contains("pw-not-shown"),
        "{}",
        probe.describe()
    );
    let state = probe.read_state().await?;
    assert_default_state(&state);
    probe.reset().await?;
    assert!(probe.read_state().await?.inbox.is_empty());
    Ok(())
}

// ---- HTTP ----

#[derive(Default)]
struct Admin {
    resets: usize,
    setups: Vec<String>,
    body: String,
}

async fn serve_admin(admin: Arc<Mutex<Admin>>) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let admin = admin.clone();
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                    let admin = admin.clone();
                    async move {
                        let authorized = req
                            .headers()
                            .get("authorization")
                            .is_some_and(|v| v == "Bearer s3cret-token");
                        let path = req.uri().path().to_string();
                        let body = req
                            .into_body()
                            .collect()
                            .await
                            .map(|b| b.to_bytes())
                            .unwrap_or_default();
                        let (status, text) = if !authorized {
                            (401, "unauthorized".to_string())
                        } else {
                            let mut a = admin.lock().unwrap();
                            match path.as_str() {
                                "/admin/state" => (200, a.body.clone()),
                                "/admin/reset" => {
                                    a.resets += 1;
                                    (204, String::new())
                                }
                                "/admin/setup" => {
                                    a.setups.push(String::from_utf8_lossy(&body).into_owned());
                                    (200, String::new())
                                }
                                "/admin/reconcile" => (200, r#"{"inserted": 3}"#.to_string()),
                                _ => (404, String::new()),
                            }
                        };
                        Ok::<_, Infallible>(
                            Response::builder()
                                .status(status)
                                .body(Full::new(Bytes::from(text)))
                                .unwrap(),
                        )
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    addr
}

#[tokio::test]
async fn http_probe_reads_state_and_posts_actions_with_the_bearer_token() -> TestResult {
    let admin = Arc::new(Mutex::new(Admin {
        body: r#"{"inbox":[{"key":"t1","account":"acct_a","processed":true,"error":null}],"winners":[]}"#.into(),
        ..Admin::default()
    }));
    let addr = serve_admin(admin.clone()).await;
    let url = format!("http://{addr}/admin/state");
    let probe = Probe::http(&url, Some("s3cret-token".into()));
    let s = probe.read_state().await?;
    assert_eq!(s.inbox[0].key, "t1");
    assert_eq!(s.winners, Some(vec![]));
    probe.reset().await?;
    probe
        .setup("kill-after-commit", serde_json::json!({"n": 1}))
        .await?;
    assert_eq!(probe.reconcile().await?, serde_json::json!({"inserted": 3}));
    let a = admin.lock().unwrap();
    assert_eq!(a.resets, 1);
    assert!(a.setups[0].contains("kill-after-commit"), "{:?}", a.setups);
    assert!(!probe.describe().contains("s3cret"));
    Ok(())
}

#[tokio::test]
async fn http_probe_errors_name_the_status_and_the_expected_json() -> TestResult {
    let admin = Arc::new(Mutex::new(Admin {
        body: "not json".into(),
        ..Admin::default()
    }));
    let addr = serve_admin(admin).await;
    let url = format!("http://{addr}/admin/state");
    let e = Probe::http(&url, None)
        .read_state()
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("401"), "{e}");
    let e = Probe::http(&url, Some("s3cret-token".into()))
        .read_state()
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("expected the state JSON"), "{e}");
    let (_held, port) = refusing_port();
    let refused = format!("http://127.0.0.1:{port}/admin/state");
    assert!(Probe::http(&refused, None).read_state().await.is_err());
    Ok(())
}

#[tokio::test]
async fn probe_config_takes_the_token_from_the_environment() -> TestResult {
    let cfg: ProbeConfig = toml::from_str(
        "http = \"http://127.0.0.1:9/state\"\ntoken_env = \"HOOKSTORM_TEST_UNSET_VAR\"",
    )?;
    let e = Probe::from_config(&cfg).unwrap_err().to_string();
    assert!(e.contains("HOOKSTORM_TEST_UNSET_VAR"), "{e}");
    let https: ProbeConfig = toml::from_str("http = \"https://example.test/state\"")?;
    assert!(
        Probe::from_config(&https).is_ok(),
        "https state URLs are supported"
    );
    let bad: ProbeConfig = toml::from_str("http = \"ftp://example.test/state\"")?;
    assert!(Probe::from_config(&bad)
        .unwrap_err()
        .to_string()
        .contains("expected an http:// or https:// URL"));
    Ok(())
}

// ---- command, drain ----

#[tokio::test]
async fn wait_drained_polls_until_every_row_is_processed() -> TestResult {
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("state.json");
    std::fs::write(&file, r#"{"inbox":[{"key":"t1","processed":false}]}"#)?;
    let cfg = ProbeConfig {
        command: Some(format!("cat {}", file.display())),
        ..ProbeConfig::default()
    };
    let probe = Probe::from_config(&cfg)?;
    let (_, drained) = probe.wait_drained(Duration::from_millis(250)).await?;
    assert!(!drained, "never processed: the deadline passes");
    let f = file.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        std::fs::write(&f, r#"{"inbox":[{"key":"t1","processed":true}]}"#).unwrap();
    });
    let (state, drained) = probe.wait_drained(Duration::from_secs(5)).await?;
    assert!(drained && state.inbox[0].processed);
    assert!(matches!(
        probe.reset().await,
        Err(ProbeError::NotConfigured("reset"))
    ));
    Ok(())
}
