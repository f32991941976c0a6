//! The checker over a large history: `check_files` on 100k and 1M attempts
//! (keys × 5 attempts, four 503s then a 204, two keys per job), the path
//! `hookstorm check` and `hookstorm bench` take. Few samples: one 1M check
//! is about a second.

#[path = "../examples/synthetic/mod.rs"]
mod synthetic;

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use hookstorm::check::{check_files, CheckOptions, Verdict};

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
                assert_ne!(res[0].verdict(), Verdict::Fail);
                res
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
