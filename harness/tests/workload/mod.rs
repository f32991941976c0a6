//! Plans: deterministic for a seed, different across seeds; shipped scenario files.

use std::path::Path;

use hookstorm::plan::rng_for;
use hookstorm::scenario::Scenario;
use hookstorm::workload::plan;

fn shipped() -> Vec<Scenario> {
    Scenario::load_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios"))
        .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn every_shipped_scenario_parses_and_is_documented() {
    let all = shipped();
    let names: Vec<&str> = all.iter().map(|s| s.name.as_str()).collect();
    for want in [
        "baseline",
        "concurrent-duplicates",
        "sequential-duplicates",
        "ack-loss",
        "reverse-order",
        "delayed-older",
        "test-delivery",
        "bad-signature",
        "poison-event",
        "sequenced-resources",
        "account-isolation",
        "replay-window",
        "key-rotation",
        "oversized-body",
    ] {
        assert!(names.contains(&want), "missing scenario {want}: {names:?}");
    }
    for s in &all {
        assert!(
            !s.description.is_empty() && !s.expect.is_empty() && !s.when_it_fails.is_empty(),
            "{}",
            s.name
        );
        let n = plan(s, 1).deliveries.len();
        assert!((1..=80).contains(&n), "{} plans {n} deliveries", s.name);
    }
}

#[test]
fn the_same_seed_gives_the_same_plan_and_jitter() {
    for s in shipped() {
        let (a, b) = (plan(&s, 42), plan(&s, 42));
        assert_eq!(a, b, "{}", s.name);
        let profile = hookstorm::profile::Profile::default_profile();
        for d in &a.deliveries {
            let draw = |_| {
                profile
                    .schedule
                    .plan_with(&mut rng_for(42, &s.name, "delivery", d.index as u64))
            };
            assert_eq!(draw(0), draw(1));
        }
    }
}

#[test]
fn different_seeds_give_different_plans() {
    for s in shipped() {
        let (a, b) = (plan(&s, 1), plan(&s, 2));
        let ids = |p: &hookstorm::plan::Plan| {
            p.deliveries
                .iter()
                .map(|d| d.id.clone())
                .collect::<Vec<_>>()
        };
        let bodies = |p: &hookstorm::plan::Plan| {
            p.deliveries
                .iter()
                .map(|d| d.bytes.clone())
                .collect::<Vec<_>>()
        };
        assert_ne!(ids(&a), ids(&b), "{}", s.name);
        assert_ne!(bodies(&a), bodies(&b), "{}", s.name);
    }
}

#[test]
fn malformed_scenario_file_names_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broken.toml");
    std::fs::write(&path, "name = \"x\"\ndescription = \"d\"\nexpect = \"e\"\nwhen_it_fails = \"w\"\ncheck = [\"I1\"]\n[[fault]]\nkind = \"explode\"\n").unwrap();
    let e = Scenario::from_file(&path).unwrap_err().to_string();
    assert!(e.contains("broken.toml") && e.contains("line 7"), "{e}");
}
