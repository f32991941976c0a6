//! Writing the history: attempts per second through `HistorySink` (the
//! path `hookstorm run` uses) and the bench's batched `LineSink`.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use hookstorm::bench::load::LineSink;
use hookstorm::delivery::TaskStatus;
use hookstorm::history::{Attempt, Event, HistorySink, RunHeader};

const BATCH: u64 = 10_000;

fn attempt(n: u64) -> Event {
    Event::Attempt(Attempt {
        job: Some(format!("job-{n}")),
        sent_at: "2026-11-29T10:00:00.000Z".into(),
        latency_ms: Some(0.42),
        task_status: Some(TaskStatus::Completed),
        created_at: Some("2026-01-01T00:00:00Z".into()),
        ..Attempt::acknowledged("bench", "acct_a", &format!("tsk_{n:016x}"))
    })
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut group = c.benchmark_group("history");
    group
        .throughput(Throughput::Elements(BATCH))
        .sample_size(20)
        .measurement_time(Duration::from_secs(3));
    group.bench_function("history_sink/10k-attempts", |b| {
        let sink = HistorySink::create(&dir.path().join("sink.jsonl")).expect("create");
        let mut n = 0;
        b.iter(|| {
            for _ in 0..BATCH {
                n += 1;
                sink.write(attempt(n)).expect("write");
            }
            sink.flush().expect("flush");
        });
    });
    group.bench_function("line_sink/10k-attempts-prebatched", |b| {
        let header = Event::Run(RunHeader {
            run_id: "b".into(),
            seed: 0,
            profile: "answerline".into(),
            time_scale: 1.0,
            started_at: "2026-11-29T10:00:00Z".into(),
            version: "0".into(),
        });
        let sink = LineSink::create(&dir.path().join("lines.jsonl"), &header).expect("create");
        let mut buf = Vec::with_capacity(1 << 17);
        let mut n = 0;
        b.iter(|| {
            for _ in 0..BATCH {
                n += 1;
                serde_json::to_writer(&mut buf, &attempt(n)).expect("json");
                buf.push(b'\n');
                if buf.len() > 1 << 16 {
                    sink.append(&buf);
                    buf.clear();
                }
            }
        });
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
