//! The checker over a large history: `check_files` on 100k and 1M attempts
//! (keys × 5 attempts, four 503s then a 204, two keys per job), the path
//! `hookstorm check` and `hookstorm bench` take (the 1M history is past the
//! size a check holds in memory: it is checked in partitions), and the same
//! 1M attempts checked in memory, in one partition, beside it. Few samples:
//! one 1M check is about a second.

#[path = "../examples/synthetic/mod.rs"]
mod synthetic;

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use hookstorm::check::{check_files, check_partitioned, CheckOptions, Partitioning, Verdict};

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut group = c.benchmark_group("check_files");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(100))
        .measurement_time(Duration::from_secs(10));
    for keys in [20_000usize, 200_000] {
        let (history, state) = synthetic::write_history(dir.path(), keys).expect("history written");
        group.throughput(Throughput::Elements(keys as u64 * 5));
        group.bench_function(format!("{}-attempts", keys * 5), |b| {
            b.iter(|| {
                let res =
                    check_files(&history, &state, None, &CheckOptions::default()).expect("checks");
                assert_eq!(res[0].counts.attempts, keys * 5);
                assert_eq!(res[0].verdict(), Verdict::Pass);
                res
            })
        });
        if keys == 200_000 {
            let whole = Partitioning {
                partitions: Some(1),
                ..Partitioning::default()
            };
            group.bench_function(format!("{}-attempts-in-memory", keys * 5), |b| {
                b.iter(|| {
                    let res = check_partitioned(
                        std::slice::from_ref(&history),
                        &state,
                        None,
                        &CheckOptions::default(),
                        &whole,
                    )
                    .expect("checks");
                    assert_eq!(res.check.checks[0].verdict(), Verdict::Pass);
                    res
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
