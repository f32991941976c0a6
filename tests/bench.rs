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
