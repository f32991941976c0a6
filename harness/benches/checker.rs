//! The checker over a large history: `check_files` on 100k and 1M attempts
//! (keys × 5 attempts, four 503s then a 204, two keys per job), the path
//! `hookstorm check` and `hookstorm bench` take. Few samples: one 1M check
//! is about a second.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use hookstorm::check::{check_files, CheckOptions, Verdict};
use hookstorm::delivery::TaskStatus;
use hookstorm::history::{Attempt, Event, Intent, Outcome};
use hookstorm::state::{InboxRow, State};

/// Writes a history of `keys` × 5 attempts and its correct state.
fn write_history(dir: &Path, keys: usize) -> (std::path::PathBuf, std::path::PathBuf) {
    let path = dir.join(format!("history-{keys}.jsonl"));
    let mut out = std::io::BufWriter::new(std::fs::File::create(&path).expect("create"));
    let mut state = State::default();
    for k in 0..keys {
        let key = format!("tsk_{k:07}");
        for n in 1..=5u32 {
            let last = n == 5;
            let a = Attempt {
                scenario: "load".into(),
                delivery: format!("whd_{k:07}"),
                key: key.clone(),
                job: Some(format!("job-{}", k / 2)),
                account: "acct_a".into(),
                attempt: n,
                round: 0,
                faults: vec![],
                sent_at: "2026-11-29T10:00:00.000Z".into(),
                status: Some(if last { 204 } else { 503 }),
                latency_ms: Some(2.5),
                error: None,
                outcome: if last { Outcome::Ok } else { Outcome::Info },
                intent: Intent::Genuine,
                detail: None,
                task_status: Some(TaskStatus::Completed),
                created_at: Some("2026-11-29T09:00:00Z".into()),
                resource: None,
                sequence: None,
                poison: false,
                dead: false,
            };
            serde_json::to_writer(&mut out, &Event::Attempt(a)).expect("json");
            out.write_all(b"\n").expect("write");
        }
        state.inbox.push(InboxRow {
            key,
            account: Some("acct_a".into()),
            processed: true,
            error: None,
        });
    }
    out.flush().expect("flush");
    let state_path = dir.join(format!("state-{keys}.json"));
    std::fs::write(&state_path, serde_json::to_string(&state).expect("json")).expect("write");
    (path, state_path)
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut group = c.benchmark_group("check_files");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(100))
        .measurement_time(Duration::from_secs(10));
    for keys in [20_000usize, 200_000] {
        let (history, state) = write_history(dir.path(), keys);
        group.throughput(Throughput::Elements(keys as u64 * 5));
        group.bench_function(format!("{}-attempts", keys * 5), |b| {
            b.iter(|| {
                let res =
                    check_files(&history, &state, None, &CheckOptions::default()).expect("checks");
                assert_eq!(res[0].counts.attempts, keys * 5);
                assert_ne!(res[0].verdict(), Verdict::Fail);
                res
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
