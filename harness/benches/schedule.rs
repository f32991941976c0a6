//! The retry schedule: planning all attempts of one delivery, and one
//! jittered wait (pure, seeded functions the sender calls per attempt).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use hookstorm::profile::{Profile, BUILTIN_NAMES};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("schedule");
    for name in BUILTIN_NAMES {
        let schedule = Profile::builtin(name).expect("built in").schedule;
        group.bench_function(format!("plan/{name}"), |b| {
            let mut seed = 0u64;
            b.iter(|| {
                seed += 1;
                schedule.plan(black_box(seed))
            })
        });
    }
    let schedule = Profile::default_profile().schedule;
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    group.bench_function("draw_wait/answerline", |b| {
        b.iter(|| schedule.draw_wait(black_box(4), &mut rng))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
