//! A check in partitions must change nothing: for random histories and
//! states, every verdict, summary, evidence item and its order, count and
//! dead letter is the check in memory's, whatever the number of
//! partitions, of reading threads, of history files, and with one state
//! or a map of states.

use std::io::Write;
use std::path::{Path, PathBuf};

use proptest::prelude::*;

use crate::check::files::check_in_parts;
use crate::check::{CheckOptions, FileCheck, Partitioning};
use crate::delivery::TaskStatus;
use crate::history::{Attempt, Event, Intent, Outcome, ProviderTask};
use crate::tag::FaultTag;

const FAULTS: &[&str] = &[
    "drop-ack",
    "duplicate-replay",
    "duplicate-concurrent:1/2",
    "redeliver",
    "front:503",
    "redirect",
    "hold-back",
    "cut-database",
    "receiver-down",
    "tamper:signature",
];

fn attempt() -> impl Strategy<Value = Attempt> {
    let intent = prop_oneof![
        8 => Just(Intent::Genuine),
        1 => Just(Intent::Test),
        1 => Just(Intent::Forged),
        1 => Just(Intent::CrossAccount),
        1 => Just(Intent::Oversized),
        1 => Just(Intent::ExpiredReplay),
    ];
    let outcome =
        proptest::sample::select(vec![Outcome::Ok, Outcome::Ok, Outcome::Fail, Outcome::Info]);
    let status = proptest::option::of(proptest::sample::select(vec![
        200u16, 204, 204, 204, 301, 400, 409, 422, 500, 503,
    ]));
    let faults = proptest::collection::vec(
        proptest::sample::select(FAULTS).prop_map(FaultTag::parse),
        0..2,
    );
    let task = proptest::option::of(proptest::sample::select(vec![
        TaskStatus::Completed,
        TaskStatus::Completed,
        TaskStatus::Failed,
        TaskStatus::Queued,
    ]));
    let created = proptest::option::of(proptest::sample::select(vec![
        "2026-11-29T09:00:00Z",
        "2026-11-29T09:00:01Z",
        "2026-11-29T09:00:02Z",
        "not a time",
    ]));
    (
        (
            proptest::sample::select(vec!["s1", "s1", "s1", "s2"]),
            0u32..60,
            proptest::sample::select(vec!["a", "a", "b"]),
            proptest::option::of(0u32..10),
        ),
        (intent, outcome, status, faults),
        (
            proptest::option::of(proptest::sample::select(vec![
                "timeout after 15s",
                "connection reset",
            ])),
            proptest::option::of(proptest::sample::select(vec![3.5f64, 20_000.0])),
            task,
            created,
        ),
        (
            proptest::option::of((0u32..5, 1u64..6)),
            proptest::bool::weighted(0.05),
            proptest::bool::weighted(0.15),
            1u32..4,
            0u32..3,
        ),
    )
        .prop_map(
            |(
                (scenario, key, account, job),
                (intent, outcome, status, faults),
                (error, latency_ms, task_status, created_at),
                (resource, poison, dead, attempt, copy),
            )| {
                let key = format!("tsk_{key}");
                Attempt {
                    job: job.map(|j| format!("job-{j}")),
                    attempt,
                    faults,
                    status,
                    latency_ms,
                    error: error.map(str::to_string),
                    outcome,
                    intent,
                    task_status,
                    created_at: created_at.map(str::to_string),
                    resource: resource.map(|(r, _)| format!("res-{r}")),
                    sequence: resource.map(|(_, s)| s),
                    poison,
                    dead,
                    ..Attempt::new(scenario, &format!("d-{key}-{copy}"), &key, account)
                }
            },
        )
}

fn event() -> impl Strategy<Value = Event> {
    let provider = (0u32..60, 0u32..10, any::<bool>()).prop_map(|(key, job, done)| {
        Event::Provider(ProviderTask {
            scenario: "s1".into(),
            account: "a".into(),
            key: format!("tsk_{key}"),
            job: Some(format!("job-{job}")),
            task_status: if done {
                TaskStatus::Completed
            } else {
                TaskStatus::Processing
            },
            created_at: "2026-11-29T09:00:03Z".into(),
        })
    });
    prop_oneof![
        15 => attempt().prop_map(Event::Attempt),
        1 => provider,
    ]
}

fn state() -> impl Strategy<Value = serde_json::Value> {
    let account = || proptest::option::of(proptest::sample::select(vec!["a", "b"]));
    let key = || {
        prop_oneof![
            9 => (0u32..60).prop_map(|k| format!("tsk_{k}")),
            1 => (0u32..5).prop_map(|k| format!("ghost_{k}")),
        ]
    };
    let inbox = (
        key(),
        account(),
        proptest::bool::weighted(0.85),
        proptest::bool::weighted(0.1),
    )
        .prop_map(|(key, account, processed, failed)| {
            serde_json::json!({"key": key, "account": account, "processed": processed,
                "error": failed.then_some("boom")})
        });
    let result = (key(), account()).prop_map(|(task, account)| {
        serde_json::json!({"task_id": task, "job_key": "j", "status": "COMPLETED", "account": account})
    });
    let winner = (0u32..12, key(), account()).prop_map(|(job, task, account)| {
        serde_json::json!({"job_key": format!("job-{job}"), "task_id": task, "account": account})
    });
    let effect = (key(), account(), 0u64..3).prop_map(
        |(key, account, count)| serde_json::json!({"key": key, "account": account, "count": count}),
    );
    let resource = (0u32..6, account(), 1u64..7).prop_map(|(r, account, sequence)| {
        serde_json::json!({"resource": format!("res-{r}"), "account": account, "sequence": sequence})
    });
    (
        proptest::collection::vec(inbox, 0..70),
        proptest::option::of(proptest::collection::vec(result, 0..20)),
        proptest::option::of(proptest::collection::vec(winner, 0..15)),
        proptest::option::of(proptest::collection::vec(effect, 0..30)),
        proptest::option::of(proptest::collection::vec(resource, 0..10)),
    )
        .prop_map(|(inbox, results, winners, effects, resources)| {
            let mut s = serde_json::json!({ "inbox": inbox });
            for (name, rows) in [
                ("results", results),
                ("winners", winners),
                ("effects", effects),
                ("resources", resources),
            ] {
                if let Some(rows) = rows {
                    s[name] = serde_json::Value::Array(rows);
                }
            }
            s
        })
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::File::create(&path)
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    path
}

fn lines(events: &[Event]) -> String {
    events
        .iter()
        .map(|e| serde_json::to_string(e).unwrap() + "\n")
        .collect()
}

type Checked = Result<(FileCheck, Vec<u64>), String>;

fn checked(
    histories: &[PathBuf],
    state: &Path,
    scenario: Option<&str>,
    parts: usize,
    partitions: u32,
) -> Checked {
    let how = Partitioning {
        partitions: Some(partitions),
        ..Partitioning::default()
    };
    check_in_parts(
        histories,
        state,
        scenario,
        &CheckOptions::default(),
        Some(parts),
        &how,
    )
    .map(|m| (m.check, numbered(&m.sources)))
    .map_err(|e| e.to_string())
}

/// The lines each history was given: what the evidence's line numbers
/// are told per file by.
fn numbered(sources: &[crate::check::HistorySource]) -> Vec<u64> {
    sources
        .iter()
        .map(|s| s.first_line * 1_000_000 + s.lines)
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn a_history_checked_in_any_number_of_partitions_checks_as_in_memory(
        events in proptest::collection::vec(event(), 0..220),
        cut in 0usize..220,
        state in state(),
        other in state(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let whole = write(dir.path(), "history.jsonl", &lines(&events));
        let cut = cut.min(events.len());
        let shards = [
            write(dir.path(), "shard-0.jsonl", &lines(&events[..cut])),
            write(dir.path(), "shard-1.jsonl", &lines(&events[cut..])),
        ];
        let one = write(dir.path(), "state.json", &state.to_string());
        let many = write(
            dir.path(),
            "states.json",
            &serde_json::json!({"s1": state, "s2": other}).to_string(),
        );
        for state in [&one, &many] {
            for scenario in [None, Some("s1")] {
                let expected = checked(std::slice::from_ref(&whole), state, scenario, 1, 1);
                for (parts, partitions) in [(1, 2), (3, 7), (2, 16)] {
                    let got = checked(std::slice::from_ref(&whole), state, scenario, parts, partitions);
                    prop_assert_eq!(&got, &expected, "{} partitions, {} parts, {:?}, {:?}", partitions, parts, state, scenario);
                }
                let two = checked(&shards, state, scenario, 1, 1);
                let got = checked(&shards, state, scenario, 2, 5);
                prop_assert_eq!(&got, &two, "two histories, {:?}, {:?}", state, scenario);
                if let (Ok(two), Ok(one)) = (&two, &expected) {
                    prop_assert_eq!(&two.0, &one.0, "two histories as one, {:?}, {:?}", state, scenario);
                }
            }
        }
    }
}

#[test]
fn a_cut_last_line_and_a_bad_line_are_told_as_in_memory() {
    let dir = tempfile::tempdir().unwrap();
    let ok = |key: &str| {
        let a = Attempt {
            status: Some(204),
            outcome: Outcome::Ok,
            ..Attempt::new("s1", key, key, "a")
        };
        serde_json::to_string(&Event::Attempt(a)).unwrap()
    };
    let state = write(dir.path(), "state.json", r#"{"inbox": []}"#);
    let cut = write(
        dir.path(),
        "cut.jsonl",
        &format!("{}\n{}\n{{\"type\":\"att", ok("k1"), ok("k2")),
    );
    let bad = write(
        dir.path(),
        "bad.jsonl",
        &format!("{}\nnot json\n{}\n", ok("k1"), ok("k2")),
    );
    for h in [cut, bad] {
        let expected = checked(std::slice::from_ref(&h), &state, None, 1, 1);
        for partitions in [2, 5] {
            let got = checked(std::slice::from_ref(&h), &state, None, 2, partitions);
            assert_eq!(got, expected, "{h:?} in {partitions} partitions");
        }
    }
}

#[test]
fn the_spilled_files_are_gone_when_the_check_returns() {
    let dir = tempfile::tempdir().unwrap();
    let a = Attempt {
        status: Some(204),
        outcome: Outcome::Ok,
        ..Attempt::new("s1", "d1", "k1", "a")
    };
    let history = write(dir.path(), "history.jsonl", &lines(&[Event::Attempt(a)]));
    let state = write(
        dir.path(),
        "state.json",
        r#"{"inbox": [{"key": "k1", "account": "a", "processed": true}], "winners": []}"#,
    );
    let (got, _) = checked(std::slice::from_ref(&history), &state, None, 1, 4).unwrap();
    assert_eq!(got.checks[0].verdict(), crate::check::Verdict::Pass);
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 2, "{left:?}");
}

/// The check of `histories` cut into `count` shares, each checked apart
/// into its own folder and joined as `hookstorm merge` joins them.
fn in_shares(histories: &[PathBuf], state: &Path, scenario: Option<&str>, count: u32) -> Checked {
    let dir = tempfile::tempdir().unwrap();
    let opts = CheckOptions::default();
    let mut dirs = Vec::new();
    for index in 0..count {
        let out = dir.path().join(format!("part-{index}"));
        let how = Partitioning {
            partitions: Some(1 + index % 3),
            spill_dir: Some(dir.path().to_path_buf()),
            ..Partitioning::default()
        };
        let share = crate::check::Partition { index, count };
        crate::check::check_share(histories, state, scenario, &opts, &how, share, &out)
            .map_err(|e| e.to_string())?;
        dirs.push(out);
    }
    // The order the folders are found in does not matter.
    dirs.reverse();
    let joined = super::export::join(&dirs, dir.path()).map_err(|e| e.to_string())?;
    assert!(joined.missing.is_empty());
    Ok((joined.check.check, numbered(&joined.check.sources)))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn shares_checked_apart_and_joined_check_as_the_whole(
        events in proptest::collection::vec(event(), 1..160),
        state in state(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let history = write(dir.path(), "history.jsonl", &lines(&events));
        let state = write(dir.path(), "state.json", &state.to_string());
        let histories = std::slice::from_ref(&history);
        for scenario in [None, Some("s1")] {
            let expected = checked(histories, &state, scenario, 1, 1);
            if expected.is_err() {
                continue;
            }
            for count in [1, 2, 7, 16] {
                let got = in_shares(histories, &state, scenario, count);
                prop_assert_eq!(&got, &expected, "{} shares, {:?}", count, scenario);
            }
        }
    }
}

#[test]
fn a_missing_share_is_named_and_shares_of_other_checks_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let a = Attempt {
        status: Some(204),
        outcome: Outcome::Ok,
        ..Attempt::new("s1", "d1", "k1", "a")
    };
    let history = write(dir.path(), "history.jsonl", &lines(&[Event::Attempt(a)]));
    let state = write(dir.path(), "state.json", r#"{"inbox": []}"#);
    let opts = CheckOptions::default();
    let share = |index, count, name: &str| {
        let out = dir.path().join(name);
        crate::check::check_share(
            std::slice::from_ref(&history),
            &state,
            None,
            &opts,
            &Partitioning::default(),
            crate::check::Partition { index, count },
            &out,
        )
        .unwrap();
        out
    };
    let (p0, p2) = (share(0, 3, "p0"), share(2, 3, "p2"));
    let joined = super::export::join(&[p0.clone(), p2.clone()], dir.path()).unwrap();
    assert_eq!(joined.missing, vec![1]);
    let other = share(1, 4, "other");
    let e = super::export::join(&[p0.clone(), other], dir.path()).unwrap_err();
    assert!(
        e.to_string().contains("another number of partitions"),
        "{e}"
    );
    let e = super::export::join(&[p0.clone(), p0], dir.path()).unwrap_err();
    assert!(e.to_string().contains("twice"), "{e}");
}
