//! `hookstorm explore` against the reference receiver: against the correct
//! receiver it finds nothing and says what of the fault space it covered
//! and what the target left out; against a broken one it finds the
//! failure, shrinks it into the regression folder, and `run` replays that
//! folder first; and the defect no catalog scenario exposes (it needs a
//! delivery repeated around a database cut) passes the catalog's cut
//! scenarios, while explore alone finds it.
//!
//! The budgets here are small (a few plans each); the long measurements
//! (5-minute sessions, time to the first failure of every defect over
//! five seeds) are in docs/explore.md with the commands that make them.

use std::path::Path;
use std::time::Duration;

use hookstorm::check::{InvariantId, Verdict};
use hookstorm::explore::{ExploreOptions, Explored};
use hookstorm::run::interrupt::Stop;
use hookstorm::shrink::ShrinkOptions;
use hookstorm_receiver::Defect;

use crate::common::*;

/// A seed whose first plan holds concurrent copies and no kill or cut
/// against the built-in receiver's space (plans are drawn from the seed
/// alone, so this stays true until the strategies change; the test says
/// so when it does not).
const COPIES_FIRST: u64 = 231;

/// Seeds whose plans are searched for the first that repeats deliveries
/// (copies, replays, dropped acknowledgements) during a database cut,
/// against the built-in receiver as a child process.
const SEEDS_WITH_A_REPEAT_IN_A_CUT: [u64; 3] = [31, 5, 1];

fn explore_options(runs: u64, out: &Path) -> ExploreOptions {
    ExploreOptions {
        budget: Duration::from_secs(120),
        runs: Some(runs),
        plan: None,
        max_failures: Some(1),
        regressions: None,
        preflight: false,
        shrink: ShrinkOptions {
            max_runs: 1,
            tries: 1,
            confirm: 0,
            ..ShrinkOptions::new(out)
        },
        reproduce: "hookstorm explore".into(),
    }
}

async fn explore_on(
    target: &hookstorm::target::Target,
    seed: u64,
    opts: &ExploreOptions,
    out: &Path,
) -> Explored {
    let mut run = options(seed, out, false);
    run.drain = Duration::from_secs(3);
    run.settle = Duration::from_millis(500);
    hookstorm::explore::explore(target, &run, opts, &mut |_| {}, &Stop::never())
        .await
        .expect("explore completes")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explore_leaves_out_what_the_in_process_receiver_cannot_run_and_finds_nothing() {
    let (receiver, target) = hookstorm_cli::builtin::start(None, None)
        .await
        .expect("receiver starts");
    let out = tempfile::tempdir().expect("tempdir");
    let x = explore_on(&target, 11, &explore_options(5, out.path()), out.path()).await;
    receiver.shutdown().await;
    assert_eq!(x.plans, 5);
    assert!(x.failures.is_empty(), "{:?}", x.failures);
    assert_eq!(
        x.report.exit_code(),
        hookstorm::exit::PASS,
        "{:?}",
        non_passing(&x.report)
    );
    // No [lifecycle], no [database]: kills and cuts are out, and said to be.
    for (kind, need) in [
        ("kill", "[lifecycle]"),
        ("kill-worker", "[lifecycle]"),
        ("cut-database", "[database]"),
    ] {
        assert!(!x.space.kinds.contains(&kind), "{kind} drawn");
        assert!(
            x.space
                .left_out
                .iter()
                .any(|l| l.what == kind && l.need == need),
            "{kind}: {:?}",
            x.space.left_out
        );
    }
    assert_eq!(x.coverage.plans, 5);
    assert!(x.coverage.kinds_met() > 0, "{:?}", x.coverage);
    // Every plan runs alone by its reproduce command.
    for (i, s) in x.report.scenarios.iter().enumerate() {
        let n = i + 1;
        assert_eq!(s.name, format!("explore-s11-{n:04}"));
        assert!(
            s.reproduce.ends_with(&format!("--seed 11 --plan {n}")),
            "{}",
            s.reproduce
        );
        assert!(x.dir.join(&s.history).exists(), "{}", s.history);
    }
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(x.dir.join("explore.json")).unwrap()).unwrap();
    assert_eq!(json["plans"], 5);
    assert_eq!(json["ended"], "runs");
    assert_eq!(
        json["coverage"]["kinds"].as_array().unwrap().len(),
        x.space.kinds.len()
    );
    let summary = std::fs::read_to_string(x.dir.join("summary.md")).unwrap();
    assert!(
        summary.starts_with("# hookstorm explore: ✅ pass · 5 plans, 0 failing"),
        "{summary}"
    );
    assert!(
        summary.contains("## Every plan and regression\n"),
        "{summary}"
    );
    assert!(
        summary.contains("left out: kill (need [lifecycle])"),
        "{summary}"
    );
    assert!(x.dir.join("report.json").exists() && x.dir.join("report.html").exists());
    // The session's folder stays sealed, explore.json and its summary too.
    let v = hookstorm::report::verify::verify(&x.dir).expect("the folder verifies");
    assert!(v.mismatches.is_empty(), "{:?}", v.mismatches);
    for f in ["summary.md", "explore.json"] {
        assert!(v.files_ok.iter().any(|ok| ok == f), "{f}: {:?}", v.files_ok);
    }
}

#[test]
fn explore_shrinks_a_failure_into_the_regression_folder_and_run_replays_it_first() {
    let cwd = tempfile::tempdir().expect("tempdir");
    let seed = COPIES_FIRST.to_string();
    let o = run_binary(
        &[
            "explore",
            "--defect",
            "check-then-insert",
            "--seed",
            &seed,
            "--runs",
            "2",
            "--max-failures",
            "1",
            "--shrink-runs",
            "12",
            "--tries",
            "1",
            "--confirm",
            "2",
            "--drain",
            "3s",
        ],
        cwd.path(),
    );
    let text = output_text(&o);
    assert_eq!(o.status.code(), Some(hookstorm::exit::FAIL), "{text}");
    let name = format!("explore-s{seed}-0001");
    assert!(
        text.contains(&format!("FAIL plan 1 ({name}): I2 exactly-once fail")),
        "{text}"
    );
    assert!(text.contains("shrinking"), "progress on stderr: {text}");
    let file = format!("hookstorm-regressions/{name}.toml");
    assert!(
        text.contains(&format!(
            "regression: hookstorm run --defect check-then-insert --scenario {file}"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "plan:       hookstorm explore --defect check-then-insert --seed {seed} --plan 1"
        )),
        "{text}"
    );
    let written = std::fs::read_to_string(cwd.path().join(&file)).expect("regression written");
    assert!(
        written.starts_with("# Found by hookstorm explore: plan 1 of seed"),
        "{written}"
    );
    assert!(written.contains("[[delivery]]"), "{written}");
    // `run` replays the folder before the scenarios it was asked for.
    let o = run_binary(
        &[
            "run",
            "--defect",
            "check-then-insert",
            "--scenario",
            "baseline",
            "--scenario-dir",
            &scenario_dir_arg(),
            "--seed",
            "3",
            "--time-scale",
            "1000",
            "--no-preflight",
        ],
        cwd.path(),
    );
    let text = output_text(&o);
    assert_eq!(o.status.code(), Some(hookstorm::exit::FAIL), "{text}");
    assert!(
        text.contains("1 regression(s) from hookstorm-regressions first"),
        "{text}"
    );
    assert!(text.contains(&name), "{text}");
}

/// Every defect that only `hookstorm explore` exposes, with its invariant.
fn explore_only() -> Vec<(Defect, InvariantId, Verdict)> {
    Defect::ALL
        .into_iter()
        .flat_map(|d| {
            d.exposed_by()
                .iter()
                .filter(|e| e.scenario().is_none())
                .map(move |e| (d, e.invariant, e.verdict))
        })
        .collect()
}

#[test]
fn no_catalog_scenario_repeats_a_delivery_during_a_database_cut() {
    assert!(
        !explore_only().is_empty(),
        "the defect table lists a defect only explore exposes"
    );
    let all = hookstorm::scenario::Scenario::load_dir(&scenario_dir()).expect("catalog loads");
    let mut cuts = 0;
    for s in &all {
        let cut = s
            .faults
            .iter()
            .any(|f| matches!(f, hookstorm::scenario::FaultSpec::CutDatabase(_)));
        let plan = hookstorm::workload::plan(s, 5);
        let repeats = plan
            .deliveries
            .iter()
            .any(|d| d.copies > 1 || d.drop_acks > 0 || !d.redeliveries.is_empty());
        assert!(
            !(cut && repeats),
            "{} repeats a delivery during a cut",
            s.name
        );
        cuts += usize::from(cut);
    }
    assert!(
        cuts >= 2,
        "the catalog cuts the database in {cuts} scenarios"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_explore_only_defect_passes_every_catalog_scenario_that_cuts_the_database() {
    let d = Defect::RequeuesOutageBuffer;
    assert!(explore_only().iter().any(|(x, ..)| *x == d));
    // Without a cut its code never runs (every other scenario meets the
    // correct receiver's code); with a cut alone each kept delivery is
    // written back once, as new.
    let c = child(Some(d), None, true);
    let (outcome, _out) = run_on(&c.target, &scenarios(&["db-outage", "db-blackhole"]), 14).await;
    assert_eq!(
        outcome.report.exit_code(),
        hookstorm::exit::PASS,
        "{:?}",
        non_passing(&outcome.report)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explore_alone_finds_every_explore_only_defect_on_its_invariant_on_every_seed() {
    for (d, invariant, verdict) in explore_only() {
        let c = child(Some(d), None, true);
        let space = hookstorm::explore::space::Space::of(
            &c.target,
            &hookstorm::findings::coverage::TargetFacts::default(),
        )
        .expect("space");
        for seed in SEEDS_WITH_A_REPEAT_IN_A_CUT {
            // The seed's first plan that cuts the database while it repeats
            // deliveries, and kills nothing (a kill empties the buffer the
            // defect keeps): its cut waits for a repeat, so this plan
            // exposes the defect on every run, however busy the machine.
            let plan = (1..=50)
                .find(|n| {
                    let draw = hookstorm::explore::strategy::draw(&space, seed, *n);
                    let names: Vec<&str> = draw.faults.iter().map(|f| f.name()).collect();
                    names.contains(&"cut-database")
                        && !names.contains(&"kill")
                        && names
                            .iter()
                            .any(|k| hookstorm::explore::strategy::REPEATING.contains(k))
                })
                .unwrap_or_else(|| panic!("seed {seed}: no plan of the first 50 repeats in a cut"));
            let out = tempfile::tempdir().expect("tempdir");
            let mut opts = explore_options(1, out.path());
            opts.plan = Some(plan);
            let began = std::time::Instant::now();
            let x = explore_on(&c.target, seed, &opts, out.path()).await;
            let found: Vec<String> = x
                .failures
                .iter()
                .map(hookstorm::explore::output::failure_line)
                .collect();
            assert!(
                x.failures
                    .iter()
                    .any(|f| f.failed.contains(&(invariant, verdict))),
                "defect {d}: plan {plan} of seed {seed} did not fail {invariant} {verdict}: {found:?}"
            );
            eprintln!(
                "defect {d}, seed {seed}: {found:?} in {:?}",
                began.elapsed()
            );
        }
    }
}

#[test]
fn explore_flags_out_of_range_are_usage_errors() {
    assert_usage_errors(
        "explore",
        &[
            (&["--runs", "0"][..], "--runs 0: expected 1 or more"),
            (&["--plan", "3"][..], "--seed <SEED>"),
            (
                &["--seed", "1", "--plan", "0"][..],
                "--plan 0: expected 1 or more",
            ),
            (
                &["--time-scale", "0"][..],
                "--time-scale 0: expected a number",
            ),
            (
                &[
                    "--url",
                    "http://127.0.0.1:1/w",
                    "--defect",
                    "check-then-insert",
                ][..],
                "--defect configures the built-in reference receiver",
            ),
        ],
    );
}

/// In-process defects and a seed whose first plans expose each against the
/// in-process receiver's space (docs/explore.md measures every defect over
/// five seeds; these are the quick ones, for CI).
const QUICK: [(&str, u64); 10] = [
    ("keeps-retry-suffix", 1),
    ("requeues-duplicates", 3),
    ("check-then-insert", 4),
    ("dedup-on-webhook-id", 3),
    ("rejects-duplicates-409", 3),
    ("failed-overwrites-completed", 2),
    ("ignores-account-scope", 1),
    ("stores-test-deliveries", 2),
    ("skips-signature-check", 2),
    ("stale-sequence-overwrites", 4),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explore_alone_finds_each_quick_in_process_defect_on_the_invariant_that_names_it() {
    for (name, seed) in QUICK {
        let d: Defect = name.parse().expect("a defect");
        let e = d.exposed_by()[0];
        let (receiver, target) = hookstorm_cli::builtin::start(Some(d), None)
            .await
            .expect("receiver starts");
        let out = tempfile::tempdir().expect("tempdir");
        let x = explore_on(&target, seed, &explore_options(6, out.path()), out.path()).await;
        receiver.shutdown().await;
        let first = x.failures.first();
        assert!(
            first.is_some_and(|f| f.failed.contains(&(e.invariant, e.verdict))),
            "defect {d}, seed {seed}: the first failure is not {} {}: {:?}",
            e.invariant,
            e.verdict,
            x.failures
                .iter()
                .map(hookstorm::explore::output::failure_line)
                .collect::<Vec<_>>()
        );
    }
}
