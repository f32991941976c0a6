//! Shrinking against the reference receiver: every defect the in-process
//! matrix catches shrinks to a handful of deliveries that still fail its
//! invariant, the written minimal scenario replays as it is, the correct
//! receiver yields no counterexample, and a failure certain before
//! shrinking is certain after it.

use std::time::Duration;

use hookstorm::check::Verdict;
use hookstorm::run::interrupt::Stop;
use hookstorm::shrink::{Outcome, Report, ShrinkEvent, ShrinkOptions};
use hookstorm_receiver::Defect;

use crate::common::*;

/// Most deliveries a minimal plan of each defect may keep: "a handful".
const HANDFUL: usize = 4;

/// Defects whose failure at these seeds depends on the order two
/// deliveries of one wave arrive in: their smaller plans fail less often
/// than the original, so the shrink keeps a larger, certain one.
const RACES: &[&str] = &["last-arrival-wins"];

fn shrink_options(out: &std::path::Path) -> ShrinkOptions {
    ShrinkOptions {
        max_runs: 60,
        budget: Duration::from_secs(60),
        tries: 1,
        confirm: 2,
        ..ShrinkOptions::new(out)
    }
}

/// Shrinks `scenario` at `seed` against the built-in receiver with `defect`.
async fn shrink_embedded(
    defect: Option<Defect>,
    scenario: &str,
    seed: u64,
    opts: &ShrinkOptions,
) -> Outcome {
    shrink_embedded_watched(defect, scenario, seed, opts, &mut |_| {}).await
}

/// [`shrink_embedded`], every progress event handed to `on_event`.
async fn shrink_embedded_watched(
    defect: Option<Defect>,
    scenario: &str,
    seed: u64,
    opts: &ShrinkOptions,
    on_event: &mut (dyn FnMut(ShrinkEvent<'_>) + Send),
) -> Outcome {
    let runs = tempfile::tempdir().expect("tempdir");
    let (receiver, target) = hookstorm_cli::builtin::start(defect, None)
        .await
        .expect("receiver starts");
    let mut run = options(seed, runs.path(), false);
    run.time_scale = Some(1000.0);
    // A receiver that never drains (poison-blocks-batch) waits this out on every run.
    run.drain = Duration::from_secs(2);
    run.settle = Duration::from_millis(500);
    let s = &scenarios(&[scenario])[0];
    let outcome = hookstorm::shrink::shrink(&target, s, &run, opts, on_event, &Stop::never())
        .await
        .expect("shrink completes");
    receiver.shutdown().await;
    outcome
}

fn counterexample(o: Outcome, what: &str) -> Box<Report> {
    match o {
        Outcome::Counterexample(r) => r,
        Outcome::NotReproduced { runs, verdicts } => {
            panic!("{what}: did not reproduce in {runs} runs: {verdicts:?}")
        }
    }
}

/// The in-process defects (no kill or database cut) with where they are caught.
fn in_process_defects() -> Vec<(Defect, hookstorm_receiver::defect::Exposure)> {
    Defect::ALL
        .into_iter()
        .map(|d| (d, d.exposed_by()[0]))
        .filter(|(_, e)| {
            e.scenario().is_some_and(|name| {
                !scenarios(&[name])
                    .iter()
                    .any(|s| hookstorm::fault::nemesis::applies(&s.faults))
            })
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_in_process_defect_shrinks_to_a_handful_of_deliveries_failing_its_invariant() {
    let list = in_process_defects();
    assert!(list.len() >= 10, "{list:?}");
    // Each shrink has a receiver of its own, in this test's runtime, at
    // 1/1000 time: one at a time. Two at once shared the runtime's two
    // threads, and beside three other tests one shrink once kept its
    // invariant with another verdict than the defect's.
    let slots = std::sync::Arc::new(tokio::sync::Semaphore::new(1));
    let mut set = tokio::task::JoinSet::new();
    for (d, e) in list {
        let slots = slots.clone();
        set.spawn(async move {
            let _slot = slots
                .acquire_owned()
                .await
                .expect("the semaphore stays open");
            shrinks_to_a_handful(d, e).await;
        });
    }
    while let Some(done) = set.join_next().await {
        if let Err(e) = done {
            std::panic::resume_unwind(e.into_panic());
        }
    }
}

/// One defect of [`every_in_process_defect_shrinks_to_a_handful_of_deliveries_failing_its_invariant`].
async fn shrinks_to_a_handful(d: Defect, e: hookstorm_receiver::defect::Exposure) {
    let out = tempfile::tempdir().expect("tempdir");
    // Two tries per candidate: some of these are races (the order two
    // deliveries of one wave arrive in), which a single try can miss.
    let opts = ShrinkOptions {
        invariant: Some(e.invariant),
        tries: 2,
        ..shrink_options(out.path())
    };
    let r = counterexample(
        shrink_embedded(Some(d), e.scenario().expect("in process"), 5, &opts).await,
        d.name(),
    );
    eprintln!(
        "defect {d}: {} ({} runs, {:.1}s, {:?})",
        hookstorm::shrink::output::headline(&r),
        r.runs,
        r.elapsed.as_secs_f64(),
        r.steps.last()
    );
    assert_eq!(
        (r.failure.invariant, r.failure.verdict),
        (e.invariant, e.verdict),
        "defect {d}: the kept failure is the defect's"
    );
    // A race is cut only as far as its plans fail as often as the
    // original did: it may keep more than a handful.
    assert!(
        r.minimal.deliveries.len() <= HANDFUL || RACES.contains(&d.name()),
        "defect {d}: {} deliveries left: {:#?}",
        r.minimal.deliveries.len(),
        r.minimal.deliveries
    );
    assert!(
        RACES.contains(&d.name()) || !r.rate.below(&r.original_rate),
        "defect {d}: the minimal plan {} less often than the original ({})",
        r.rate,
        r.original_rate
    );
    // A race may keep its whole plan: no smaller one failed as often (on a
    // busy machine the arrival order it needs comes less often), and a
    // certain counterexample is what the shrinker promises, not a smaller
    // one. Every other defect is cut.
    assert!(
        RACES.contains(&d.name()) || r.minimal.deliveries.len() < r.original.deliveries.len(),
        "defect {d}: nothing was cut from {} deliveries",
        r.original.deliveries.len()
    );
    assert_eq!(
        r.check.result(e.invariant).map(|x| x.verdict),
        Some(e.verdict),
        "defect {d}: the kept run fails there"
    );
    assert_eq!(
        r.rate.runs, 2,
        "defect {d}: every confirmation run was made"
    );
    let text = std::fs::read_to_string(&r.files.scenario).expect("minimal scenario written");
    assert!(text.contains("[[delivery]]"), "{text}");
    assert!(r.files.history.as_ref().is_some_and(|h| h.exists()));
    assert!(
        !out.path().join("runs").exists(),
        "trial runs are cleaned up"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_written_minimal_scenario_replays_as_it_is_and_fails_the_same_invariant() {
    let d: Defect = "dedup-on-webhook-id".parse().unwrap();
    let out = tempfile::tempdir().expect("tempdir");
    let r = counterexample(
        shrink_embedded(
            Some(d),
            "sequential-duplicates",
            5,
            &shrink_options(out.path()),
        )
        .await,
        d.name(),
    );
    // Loaded from the file, run by `run` like any scenario, under another seed.
    let s = hookstorm::scenario::Scenario::from_file(&r.files.scenario).expect("minimal parses");
    assert_eq!(
        hookstorm::workload::plan(&s, 123).deliveries,
        r.minimal.deliveries
    );
    let (receiver, target) = hookstorm_cli::builtin::start(Some(d), None)
        .await
        .expect("receiver starts");
    let runs = tempfile::tempdir().expect("tempdir");
    let mut opts = options(999, runs.path(), false);
    opts.time_scale = Some(1000.0);
    let outcome = hookstorm::run::run(&target, &[s], &opts, &mut |_| {})
        .await
        .expect("run completes");
    receiver.shutdown().await;
    assert_eq!(
        verdict(
            &outcome.report,
            "sequential-duplicates",
            r.failure.invariant
        ),
        Some(Verdict::Fail),
        "{:?}",
        non_passing(&outcome.report)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_correct_receiver_yields_no_counterexample() {
    for scenario in ["concurrent-duplicates", "reverse-order"] {
        let out = tempfile::tempdir().expect("tempdir");
        let opts = ShrinkOptions {
            tries: 2,
            ..shrink_options(out.path())
        };
        match shrink_embedded(None, scenario, 5, &opts).await {
            Outcome::NotReproduced { runs, verdicts } => {
                assert_eq!(runs, 2, "{scenario}: every try was made");
                assert!(verdicts.is_empty(), "{scenario}: {verdicts:?}");
            }
            Outcome::Counterexample(r) => panic!(
                "{scenario}: a counterexample against the correct receiver: {}",
                hookstorm::shrink::output::headline(&r)
            ),
        }
        assert!(
            !out.path().join(format!("{scenario}.min.toml")).exists(),
            "nothing written"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_certain_before_shrinking_is_certain_after_and_replays_10_of_10() {
    // Last-arrival-wins picks whichever of a job's tasks arrives last;
    // delayed-older holds the older task back, so at seed 4 the plan fails
    // every run. A reduction that drops the hold-back leaves the order to
    // the network (a coin flip): it must not be kept.
    let d: Defect = "last-arrival-wins".parse().unwrap();
    let out = tempfile::tempdir().expect("tempdir");
    let opts = ShrinkOptions {
        invariant: Some(d.caught_by()),
        tries: 3,
        confirm: 10,
        max_runs: 200,
        budget: Duration::from_secs(120),
        ..shrink_options(out.path())
    };
    let mut confirmed = Vec::new();
    let r = counterexample(
        shrink_embedded_watched(Some(d), "delayed-older", 4, &opts, &mut |e| {
            if let ShrinkEvent::Confirm { failed, .. } = e {
                confirmed.push(failed);
            }
        })
        .await,
        d.name(),
    );
    let headline = hookstorm::shrink::output::headline(&r);
    eprintln!("{headline}");
    assert_eq!(
        (r.original_rate.failed, r.original_rate.runs),
        (3, 3),
        "{headline}"
    );
    assert_eq!((r.rate.failed, r.rate.runs), (10, 10), "{headline}");
    assert!(
        headline.ends_with("which fails 3 of 3 runs), fails 10 of 10 runs"),
        "{headline}"
    );
    // The rate is the last plan's confirmation runs.
    assert!(confirmed.len() >= 10);
    assert!(confirmed[confirmed.len() - 10..].iter().all(|f| *f));
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&r.files.summary).unwrap()).unwrap();
    assert_eq!(summary["failed"], 10);
    assert_eq!(summary["original_failed"], 3);
    assert_eq!(summary["invariant"], "I5");
    // The file it wrote, replayed by `run` 10 times: 10 failures.
    let s = hookstorm::scenario::Scenario::from_file(&r.files.scenario).expect("minimal parses");
    let (receiver, target) = hookstorm_cli::builtin::start(Some(d), None)
        .await
        .expect("receiver starts");
    let mut failed = 0;
    for seed in 1..=10 {
        let runs = tempfile::tempdir().expect("tempdir");
        let mut o = options(seed, runs.path(), false);
        o.time_scale = Some(1000.0);
        let outcome = hookstorm::run::run(&target, std::slice::from_ref(&s), &o, &mut |_| {})
            .await
            .expect("run completes");
        failed += usize::from(
            verdict(&outcome.report, &s.name, r.failure.invariant) == Some(Verdict::Fail),
        );
    }
    receiver.shutdown().await;
    assert_eq!(
        failed, 10,
        "the replayed minimal plan failed {failed} of 10 runs"
    );
}

/// `hookstorm shrink` against the built-in receiver, fast settings.
fn shrink_cli(args: &[&str], cwd: &std::path::Path) -> std::process::Output {
    let dir = scenario_dir_arg();
    let mut all = vec![
        "shrink",
        "--scenario-dir",
        &dir,
        "--time-scale",
        "1000",
        "--drain",
        "2s",
        "--max-runs",
        "30",
        "--confirm",
        "1",
        "--tries",
        "1",
    ];
    all.extend_from_slice(args);
    run_binary(&all, cwd)
}

#[test]
fn the_shrink_command_exits_1_with_a_scenario_that_run_replays_and_0_when_nothing_fails() {
    let cwd = tempfile::tempdir().expect("tempdir");
    let o = shrink_cli(
        &[
            "--defect",
            "stores-test-deliveries",
            "--scenario",
            "test-delivery",
            "--seed",
            "5",
            "--out",
            "out",
        ],
        cwd.path(),
    );
    let text = output_text(&o);
    assert_eq!(o.status.code(), Some(hookstorm::exit::FAIL), "{text}");
    assert!(
        text.contains("counterexample: test-delivery: I4 no-phantom fail with 1 delivery (from 10, which fails 1 of 1 runs), fails 1 of 1 runs"),
        "{text}"
    );
    assert!(text.contains("[run 1/30]"), "progress on stderr: {text}");
    // --out is the reports folder, as for `run`: the shrink makes its own folder in it.
    let out = cwd.path().join("out/shrink/test-delivery");
    for f in ["test-delivery.min.toml", "history.jsonl", "shrink.json"] {
        assert!(out.join(f).exists(), "{f}: {text}");
    }
    // The written file replays with `run` and fails again, under any seed.
    let min = out.join("test-delivery.min.toml").display().to_string();
    let o = run_binary(
        &[
            "run",
            "--defect",
            "stores-test-deliveries",
            "--scenario",
            &min,
            "--seed",
            "77",
            "--time-scale",
            "1000",
            "--no-preflight",
        ],
        cwd.path(),
    );
    let text = output_text(&o);
    assert_eq!(o.status.code(), Some(hookstorm::exit::FAIL), "{text}");
    assert!(text.contains("I4 no-phantom"), "{text}");

    // The correct receiver: nothing to shrink, and it says so.
    let o = shrink_cli(&["--scenario", "test-delivery", "--seed", "5"], cwd.path());
    let text = output_text(&o);
    assert_eq!(o.status.code(), Some(hookstorm::exit::PASS), "{text}");
    assert!(
        text.contains(
            "no counterexample: test-delivery at seed 5: no invariant failed in 1 run(s)"
        ),
        "{text}"
    );
}

#[test]
fn shrink_flags_out_of_range_are_usage_errors() {
    assert_usage_errors(
        "shrink",
        &[
            (
                &["--scenario", "baseline", "--seed", "1", "--tries", "0"][..],
                "--tries 0: expected 1 or more",
            ),
            (
                &["--scenario", "nope", "--seed", "1"][..],
                "no scenario \"nope\"",
            ),
            (
                &[
                    "--scenario",
                    "baseline",
                    "--seed",
                    "1",
                    "--invariant",
                    "I10",
                ][..],
                "expected INVARIANT like I1",
            ),
        ],
    );
}

#[test]
fn run_with_shrink_shrinks_each_failing_scenario_into_the_run_folder() {
    let cwd = tempfile::tempdir().expect("tempdir");
    let dir = scenario_dir_arg();
    let o = run_binary(
        &[
            "run",
            "--scenario-dir",
            &dir,
            "--defect",
            "stores-test-deliveries",
            "--scenario",
            "test-delivery",
            "--scenario",
            "baseline",
            "--seed",
            "5",
            "--time-scale",
            "1000",
            "--no-preflight",
            "--shrink",
        ],
        cwd.path(),
    );
    let text = output_text(&o);
    assert_eq!(o.status.code(), Some(hookstorm::exit::FAIL), "{text}");
    assert!(
        text.contains("counterexample: test-delivery: I4 no-phantom fail with 1 delivery"),
        "{text}"
    );
    assert!(!text.contains("counterexample: baseline"), "{text}");
    let latest = cwd.path().join("reports/latest/shrink");
    assert!(
        latest.join("test-delivery/test-delivery.min.toml").exists(),
        "{text}"
    );
    assert!(
        !latest.join("baseline").exists(),
        "a passing scenario is not shrunk"
    );
}
