//! `hookstorm bench`: a short closed-loop bench against the reference
//! receiver stays correct with duplicates mixed in and writes a complete
//! bench.json; the open loop holds its rate; a ramp reports its steps; and
//! the null receiver refuses a sender that signs wrongly.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use hookstorm::bench::{self, mix::Mix, BenchOptions, Rate};
use hookstorm::check::InvariantId;
use hookstorm::history::{self, Event};
use hookstorm::profile::signature::Secret;
use hookstorm::profile::Profile;

fn secret(purpose: &str) -> Secret {
    hookstorm::fault::tamper::derived_secret(7, purpose)
}

/// Starts the null receiver accepting `accept`; returns its URL and a stopper.
async fn null_receiver(accept: Secret) -> (String, tokio::sync::oneshot::Sender<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(bench::null::serve(
        listener,
        Profile::default_profile(),
        vec![accept],
        async {
            let _ = rx.await;
        },
    ));
    (format!("http://{addr}/webhooks/{{account}}"), tx)
}

fn options(url: String, sign_with: Secret, out: &Path) -> BenchOptions {
    BenchOptions {
        url,
        profile: Profile::default_profile(),
        accounts: vec!["acct_a".into()],
        secrets: BTreeMap::from([("acct_a".to_string(), vec![sign_with])]),
        rate: None,
        connections: 4,
        threads: 2,
        duration: Duration::from_secs(1),
        warmup: Duration::ZERO,
        requests: None,
        ramp_steps: 3,
        p99_limit: Duration::from_millis(100),
        error_limit: 0.01,
        mix: Mix::none(),
        seed: 11,
        probe: None,
        no_check_reason: "null receiver".into(),
        drain: Duration::from_secs(5),
        out_dir: out.to_path_buf(),
        progress: false,
        target_desc: "null".into(),
        shard: None,
        start_at: None,
        processes: Vec::new(),
    }
}

/// Runs `hookstorm bench` with `args` (and `--out reports`) in `dir`
/// against the built-in receiver: exit 0 expected; returns its output,
/// the run folder and its bench.json.
fn bench_cli(dir: &Path, args: &[&str]) -> (String, std::path::PathBuf, serde_json::Value) {
    let o = Command::new(env!("CARGO_BIN_EXE_hookstorm"))
        .arg("bench")
        .args(args)
        .args(["--out", "reports"])
        .current_dir(dir)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(o.status.code(), Some(0), "{text}");
    let run = dir.join("reports/latest");
    let v = serde_json::from_slice(&std::fs::read(run.join("bench.json")).unwrap()).unwrap();
    (text, run, v)
}

#[test]
fn bench_against_the_reference_receiver_passes_with_duplicates_mixed_in() {
    let dir = tempfile::tempdir().unwrap();
    let (text, run, v) = bench_cli(
        dir.path(),
        &[
            "--duration",
            "1500ms",
            "--warmup",
            "200ms",
            "--connections",
            "8",
            "--duplicates",
            "0.1",
            "--concurrent-duplicates",
            "0.05",
            "--reorder",
            "0.1",
            "--seed",
            "5",
        ],
    );
    assert!(text.contains("check     pass"), "{text}");
    assert_eq!(v["mode"], "closed");
    assert!(v["requests"].as_u64().unwrap() > 50, "{v}");
    assert!(v["achieved_rate"].as_f64().unwrap() > 0.0);
    let l = &v["latency"];
    let ms = |k: &str| l[k].as_f64().unwrap();
    assert!(ms("p50_ms") > 0.0);
    assert!(ms("p50_ms") <= ms("p90_ms") && ms("p90_ms") <= ms("p99_ms"));
    assert!(ms("p99_ms") <= ms("p999_ms") && ms("p999_ms") <= ms("max_ms"));
    assert!(v["statuses"]["204"].as_u64().unwrap() > 0, "{v}");
    assert!(!v["throughput"].as_array().unwrap().is_empty());
    assert!(v["machine"]["cores"].as_u64().unwrap() >= 1);
    assert_eq!(v["check"]["verdict"], "pass", "{v}");
    assert_eq!(
        v["check"]["check"]["results"].as_array().unwrap().len(),
        InvariantId::ALL.len()
    );
    // The receiver ran in its own process; its state was streamed into
    // state.json as one document, every row settled, every section there.
    assert!(text.contains("as a child process"), "{text}");
    let state: hookstorm::state::State =
        serde_json::from_slice(&std::fs::read(run.join("state.json")).unwrap()).unwrap();
    assert!(!state.inbox.is_empty() && state.drained());
    assert!(state.results.is_some() && state.winners.is_some() && state.effects.is_some());

    // The history holds every attempt, with the mixed-in faults named.
    let mut faults = BTreeMap::<String, usize>::new();
    let mut attempts = 0;
    for e in history::read(&run.join("history.jsonl")).unwrap() {
        if let Event::Attempt(a) = e.unwrap() {
            attempts += 1;
            for f in a.faults {
                let name = f.to_string().split(':').next().unwrap().to_string();
                *faults.entry(name).or_default() += 1;
            }
        }
    }
    let warm = v["warmup_requests"].as_u64().unwrap();
    assert_eq!(attempts as u64, v["requests"].as_u64().unwrap() + warm);
    for f in ["duplicate-replay", "duplicate-concurrent", "reorder"] {
        assert!(faults.get(f).copied().unwrap_or(0) > 0, "{f}: {faults:?}");
    }
}

#[test]
fn a_checked_bench_of_a_counted_number_of_requests_stores_exactly_those() {
    let dir = tempfile::tempdir().unwrap();
    let (text, run, v) = bench_cli(
        dir.path(),
        &[
            "--requests",
            "400",
            "--warmup",
            "0s",
            "--connections",
            "4",
            "--duplicates",
            "0",
            "--concurrent-duplicates",
            "0",
            "--reorder",
            "0",
            "--seed",
            "9",
        ],
    );
    assert!(
        text.contains("400 requests asked: sent before the duration ran out"),
        "{text}"
    );
    assert_eq!(v["check"]["verdict"], "pass", "{v}");
    assert_eq!(v["warmup_requests"], 0, "{v}");
    assert_eq!(v["requests"], 400, "{v}");
    assert_eq!(v["requests_reached"], true, "{v}");
    // Every one of them is in the history, once, and was stored.
    let mut deliveries = std::collections::BTreeSet::new();
    for e in history::read(&run.join("history.jsonl")).unwrap() {
        if let Event::Attempt(a) = e.unwrap() {
            assert!(
                deliveries.insert(a.delivery.clone()),
                "{} twice",
                a.delivery
            );
        }
    }
    assert_eq!(deliveries.len(), 400);
    assert_eq!(v["check"]["check"]["counts"]["deliveries"], 400, "{v}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_loop_holds_its_target_rate() {
    let out = tempfile::tempdir().unwrap();
    let key = secret("open-loop-key");
    let (url, stop) = null_receiver(key.clone()).await;
    let mut opts = options(url, key, out.path());
    opts.rate = Some(Rate::Fixed(500.0));
    opts.connections = 16;
    let r = bench::run(&opts).await.unwrap().result;
    let _ = stop.send(());
    assert!(
        (450.0..=550.0).contains(&r.achieved_rate),
        "achieved {} req/s for a target of 500",
        r.achieved_rate
    );
    assert!((450..=550).contains(&r.requests), "{}", r.requests);
    assert_eq!(r.statuses.get("204").copied(), Some(r.requests));
    assert_eq!(r.mode, "open");
    assert!(r.check.is_none() && r.check_skipped.is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_count_of_requests_ends_the_bench_before_its_duration_in_every_mode() {
    let key = secret("count-key");
    let (url, stop) = null_receiver(key.clone()).await;
    for (rate, asked) in [
        (None, 700),
        (Some(Rate::Fixed(4000.0)), 300),
        (
            Some(Rate::Ramp {
                from: 2000.0,
                to: 4000.0,
            }),
            301,
        ),
    ] {
        let out = tempfile::tempdir().unwrap();
        let mut opts = options(url.clone(), key.clone(), out.path());
        opts.rate = rate;
        opts.requests = Some(asked);
        // The duration would allow far more: the count must end it.
        opts.duration = Duration::from_secs(120);
        let began = std::time::Instant::now();
        let r = bench::run(&opts).await.unwrap().result;
        assert_eq!(r.requests, asked, "{rate:?}");
        assert_eq!(r.statuses.get("204").copied(), Some(asked), "{rate:?}");
        assert_eq!(r.requests_asked, Some(asked));
        assert_eq!(r.requests_reached, Some(true), "{rate:?}");
        assert!(
            began.elapsed() < Duration::from_secs(60),
            "{rate:?} ran its duration"
        );
        if let Some(ramp) = &r.ramp {
            // The steps share the count: 101, 100, 100.
            let per: Vec<u64> = ramp.steps.iter().map(|s| s.requests).collect();
            assert_eq!(per, [101, 100, 100]);
        }
        let v: serde_json::Value = serde_json::from_slice(
            &std::fs::read(out.path().join(&r.run_id).join("bench.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(v["requests_asked"], asked, "{v}");
        assert_eq!(v["requests_reached"], true, "{v}");
    }
    let _ = stop.send(());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duration_that_runs_out_first_says_the_count_was_not_reached() {
    let out = tempfile::tempdir().unwrap();
    let key = secret("count-key");
    let (url, stop) = null_receiver(key.clone()).await;
    let mut opts = options(url, key, out.path());
    opts.rate = Some(Rate::Fixed(200.0));
    opts.duration = Duration::from_millis(500);
    opts.requests = Some(1_000_000);
    let r = bench::run(&opts).await.unwrap().result;
    let _ = stop.send(());
    assert!(r.requests < 1_000_000 && r.requests > 0, "{}", r.requests);
    assert_eq!(r.requests_reached, Some(false));
    assert!(
        r.console().contains("the duration ran out first"),
        "{}",
        r.console()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ramp_reports_every_step_and_no_break_on_a_fast_receiver() {
    let out = tempfile::tempdir().unwrap();
    let key = secret("ramp-key");
    let (url, stop) = null_receiver(key.clone()).await;
    let mut opts = options(url, key, out.path());
    opts.rate = Some(Rate::Ramp {
        from: 100.0,
        to: 300.0,
    });
    opts.duration = Duration::from_millis(1500);
    opts.connections = 8;
    let r = bench::run(&opts).await.unwrap().result;
    let _ = stop.send(());
    let ramp = r.ramp.expect("a ramp result");
    let rates: Vec<f64> = ramp.steps.iter().map(|s| s.rate).collect();
    assert_eq!(rates, vec![100.0, 200.0, 300.0]);
    for s in &ramp.steps {
        assert!(s.requests > 0 && s.error_rate == 0.0, "{s:?}");
    }
    assert_eq!(ramp.broke_at, None, "{ramp:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn null_receiver_refuses_a_sender_that_signs_wrongly() {
    let out = tempfile::tempdir().unwrap();
    let (url, stop) = null_receiver(secret("the-right-key")).await;
    let opts = options(url, secret("the-wrong-key"), out.path());
    let r = bench::run(&opts).await.unwrap().result;
    let _ = stop.send(());
    assert!(r.requests > 0);
    assert_eq!(r.statuses.get("401").copied(), Some(r.requests), "{r:?}");
    assert!((r.error_rate - 1.0).abs() < 1e-9);
}

/// Every request to a receiver that reads but never answers ends at the
/// profile's time limit, counted as a timeout: the limit holds for each
/// request in turn on a connection, not only the first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_that_never_answers_times_out_every_request_at_the_profile_limit() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let silent = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((mut s, _)) = listener.accept().await {
            held.push(tokio::spawn(async move {
                let mut sink = Vec::new();
                let _ = tokio::io::AsyncReadExt::read_to_end(&mut s, &mut sink).await;
            }));
        }
    });
    let out = tempfile::tempdir().unwrap();
    let key = secret("silent-key");
    let mut opts = options(
        format!("http://{addr}/webhooks/{{account}}"),
        key,
        out.path(),
    );
    opts.profile.timeout = Duration::from_millis(200);
    opts.connections = 2;
    opts.duration = Duration::from_millis(1100);
    let r = bench::run(&opts).await.unwrap().result;
    silent.abort();
    // 1.1 s of 200 ms limits on each of 2 connections: 5 or 6 each.
    assert!(
        (8..=14).contains(&r.requests),
        "{} requests: {r:?}",
        r.requests
    );
    assert_eq!(r.errors.get("timeout").copied(), Some(r.requests), "{r:?}");
    assert!((r.error_rate - 1.0).abs() < 1e-9, "{r:?}");
    assert!(
        (195.0..400.0).contains(&r.latency.p50_ms) && r.latency.max_ms < 400.0,
        "each request ends near its 200 ms limit: {:?}",
        r.latency
    );
}

/// A receiver that verifies nothing and refuses every delivery with a 400
/// and a JSON reason, as a receiver fed the wrong envelope does; its state
/// (`GET /state`) is an empty inbox, its reset a 204.
async fn refusing_receiver() -> hookstorm::net::httpd::Server {
    use hookstorm::net::httpd::{json, text, Server};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    Server::spawn(
        listener,
        std::sync::Arc::new(|req| {
            Box::pin(async move {
                Ok(match (req.method().as_str(), req.uri().path()) {
                    ("GET", "/state") => json(200, &serde_json::json!({ "inbox": [] })),
                    ("POST", "/reset") => text(204, ""),
                    _ => json(
                        400,
                        &serde_json::json!({ "detail": "not a standard webhook envelope" }),
                    ),
                })
            })
        }),
    )
    .unwrap()
}

/// A bench of a receiver that refuses every delivery fails its check on
/// I9 (the finding carries the first refusal's status and body), says
/// I1 is unknown, not passed (no delivery was acknowledged), and records
/// the refusals in bench.json.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_that_refuses_everything_fails_the_bench_check_on_i9() {
    let server = refusing_receiver().await;
    let addr = server.addr();
    let out = tempfile::tempdir().unwrap();
    let mut opts = options(
        format!("http://{addr}/webhooks/{{account}}"),
        secret("any"),
        out.path(),
    );
    opts.mix = Mix::default();
    opts.probe = Some(hookstorm::state::probe::Probe::http(
        &format!("http://{addr}/state"),
        None,
    ));
    opts.duration = Duration::from_millis(800);
    let r = bench::run(&opts).await.unwrap().result;
    server.stop().await;
    assert!(r.requests > 20, "{r:?}");
    assert_eq!(r.statuses.get("400").copied(), Some(r.requests), "{r:?}");
    assert!(r.refused > 20, "{r:?}");
    let first = r.first_refusal.as_ref().expect("the first refusal is kept");
    assert_eq!(first.status, 400);
    assert!(
        first.body.contains("not a standard webhook envelope"),
        "{first:?}"
    );
    let check = r.check.as_ref().expect("checked");
    assert_eq!(check.verdict, hookstorm::check::Verdict::Fail, "{check:?}");
    let i9 = check.check.result(InvariantId::I9).unwrap();
    assert_eq!(i9.verdict, hookstorm::check::Verdict::Fail, "{i9:?}");
    let what = &i9.evidence[0].what;
    assert!(
        what.contains("answered 400") && what.contains("not a standard webhook envelope"),
        "{what}"
    );
    let i1 = check.check.result(InvariantId::I1).unwrap();
    assert_eq!(i1.verdict, hookstorm::check::Verdict::Unknown, "{i1:?}");
    assert!(i1.summary.contains("acknowledged no delivery"), "{i1:?}");
    let console = r.console();
    assert!(
        console.contains("refused") && console.contains("I9 acknowledged fail"),
        "{console}"
    );
}

/// `hookstorm bench --target` on a zoo receiver (Node, one per built-in
/// profile) with a `[lifecycle]`: returns the exit code, the output and
/// bench.json. The bench starts the receiver and its worker (and the
/// database proxy of a Postgres one), sends 2 s at 150/s with the default
/// mix, checks, and stops them.
fn bench_zoo(
    rx: &crate::zoo::Receiver,
    pg: Option<&hookstorm_receiver::pgtest::PgServer>,
) -> (i32, String, serde_json::Value) {
    let work = tempfile::tempdir().unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let store = crate::zoo::Store::new(rx.db, pg, work.path(), rx.name);
    let node = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/zoo/node");
    let node = node.display();
    let env = format!("{{ ZOO_PROVIDER = \"{}\" }}", rx.profile);
    let target = crate::zoo::target_file(
        port,
        rx.profile,
        &store.state_url,
        &format!(
            "exec node {node}/server.js --db '{}' --listen fd:3",
            store.db
        ),
        &format!("exec node {node}/worker.js '{}'", store.db),
        &env,
        "",
        &store.database,
    );
    let file = work.path().join("target.toml");
    std::fs::write(&file, target).unwrap();
    let [a, b] = rx.secrets();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hookstorm"));
    cmd.arg("bench")
        .arg("--target")
        .arg(&file)
        // The same work on a fast or a loaded machine: 300 deliveries (at
        // two seconds' worth of the rate, an 88-request run once came of a
        // two-second window on a machine busy with a build).
        .args(["--rate", "150/s", "--requests", "300", "--warmup", "0s"])
        .args(["--connections", "8", "--drain", "20s", "--seed", "3"])
        .env("ZOO_SECRET_ACCT_A", a)
        .env("ZOO_SECRET_ACCT_B", b);
    let sockets = hookstorm::lifecycle::Sockets::new(vec![listener]);
    crate::zoo::bench_holding(cmd, &sockets, work.path())
}

/// A receiver written elsewhere of every built-in profile (the Node zoo,
/// on the providers' own verifiers) accepts what the bench sends as it
/// accepts what `run` sends: `bench --target` starts its `[lifecycle]`,
/// gets at least 95 % 2xx, passes the check, names the processes it ran,
/// and stops them.
#[test]
fn bench_target_starts_loads_and_passes_a_zoo_receiver_of_every_profile() {
    use crate::zoo::{installed_or_skip, parallel, Db, Family, RECEIVERS};
    let test = "bench_target_starts_loads_and_passes_a_zoo_receiver_of_every_profile";
    if !installed_or_skip(Family::Node, test) {
        return;
    }
    let pg = hookstorm_receiver::pgtest::PgServer::start_or_skip();
    let receivers: Vec<&crate::zoo::Receiver> = RECEIVERS
        .iter()
        .filter(|r| r.family == Family::Node)
        .filter(|r| {
            let ok = r.db == Db::Sqlite || pg.is_some();
            if !ok {
                eprintln!("{test}: {}: skipped: no Postgres server", r.name);
            }
            ok
        })
        .collect();
    let profiles: std::collections::BTreeSet<&str> = receivers.iter().map(|r| r.profile).collect();
    // The Node zoo holds a receiver of every profile written in code; the
    // provider files' profiles are proven against their official verifiers.
    for p in hookstorm::profile::CORE_NAMES {
        if pg.is_some() {
            assert!(profiles.contains(p), "no zoo receiver of profile {p}");
        }
    }
    let results = parallel(&receivers, |rx| (rx.name, bench_zoo(rx, pg.as_ref())));
    let mut failed = Vec::new();
    for (name, (code, text, v)) in results {
        let requests = v["requests"].as_u64().unwrap_or(0);
        let ok: u64 = v["statuses"]
            .as_object()
            .map(|m| {
                m.iter()
                    .filter(|(k, _)| k.starts_with('2'))
                    .filter_map(|(_, n)| n.as_u64())
                    .sum()
            })
            .unwrap_or(0);
        let share = ok as f64 / requests.max(1) as f64;
        let ran = v["processes"].as_array().map_or(0, Vec::len);
        eprintln!(
            "{name:<24} exit {code} · {requests} requests · {:.1}% 2xx · check {} · {ran} processes",
            share * 100.0,
            v["check"]["verdict"]
        );
        if code != 0
            || requests < 100
            || share < 0.95
            || v["check"]["verdict"] != "pass"
            || ran < 2
            || !text.contains("started receiver `")
        {
            failed.push(format!("{name}: exit {code}\n{text}"));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
}

#[test]
fn a_bench_of_the_reference_receiver_under_kills_and_a_cut_database_stays_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let (text, run, v) = bench_cli(
        dir.path(),
        &[
            "--fault",
            "kill-under-load",
            "--fault",
            "db-outage",
            "--rate",
            "300/s",
            "--duration",
            "12s",
            "--warmup",
            "1s",
            "--connections",
            "20",
            "--seed",
            "8",
        ],
    );
    assert!(text.contains("check     pass"), "{text}");
    assert_eq!(v["check"]["verdict"], "pass", "{text}");
    let f = &v["faults"];
    assert_eq!(
        f["from"],
        serde_json::json!(["kill-under-load", "db-outage"])
    );
    // Every kill interrupted work, the cut met attempts, and what they
    // made fail was sent again and acknowledged.
    assert_eq!(f["kills"], 5, "{f}");
    assert_eq!(f["kills_exercised"], 5, "{f}");
    assert_eq!(f["cuts"], 1, "{f}");
    assert!(f.get("not_exercised").is_none(), "{f}");
    assert!(f["resends"]["resent"].as_u64().unwrap() > 0, "{f}");
    // The supervisor's lines are in the bench's history, between the attempts.
    let mut lines = BTreeMap::<String, usize>::new();
    for e in history::read(&run.join("history.jsonl")).unwrap() {
        if let Event::Fault(fe) = e.unwrap() {
            *lines.entry(fe.fault.to_string()).or_default() += 1;
        }
    }
    assert_eq!(lines.get("kill"), Some(&5), "{lines:?}");
    assert!(lines.get("restart").is_some_and(|n| *n >= 5), "{lines:?}");
    assert!(
        text.contains("5 of 5 receiver kills interrupted work"),
        "{text}"
    );
}

#[test]
fn a_fault_a_bench_cannot_carry_out_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    for (args, says) in [
        (
            &["--fault", "baseline"][..],
            "has no process or database fault",
        ),
        (
            &["--fault", "kill-under-load", "--null"][..],
            "not --url or --null",
        ),
        (
            &["--fault", "kill-under-load", "--no-check"][..],
            "drop --no-check",
        ),
        (&["--fault", "no-such-scenario"][..], "no-such-scenario"),
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_hookstorm"))
            .arg("bench")
            .args(args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(
            o.status.code(),
            Some(hookstorm::exit::USAGE),
            "{args:?}: {err}"
        );
        assert!(err.contains(says), "{args:?}: {err}");
    }
}
