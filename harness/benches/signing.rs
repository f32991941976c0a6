//! Signing one delivery body per built-in scheme (what the sender does on
//! every attempt), with one and with two secrets (a key rotation): keyed
//! per call (`Scheme::sign`, what `run` does) and with a `Signer` keyed
//! once, writing into reused header values (what each bench request does).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use hookstorm::bench::mix::{Generator, Mix};
use hookstorm::profile::signature::{Secret, SignInput};
use hookstorm::profile::{Profile, BUILTIN_NAMES};

fn bench(c: &mut Criterion) {
    let body = Generator::new(1, Mix::none(), 1).item(0).body;
    let secrets = [
        hookstorm::fault::tamper::derived_secret(1, "a"),
        hookstorm::fault::tamper::derived_secret(1, "b"),
    ];
    let mut group = c.benchmark_group("sign");
    group.throughput(Throughput::Elements(1));
    for name in BUILTIN_NAMES {
        let profile = Profile::builtin(name).expect("built in");
        for n in [1usize, 2] {
            let keys: Vec<Secret> = secrets[..n].to_vec();
            let signer = profile.scheme.signer(&keys).expect("keys");
            let mut values = Vec::new();
            group.bench_function(format!("{name}/{n}-secret/keyed-once"), |b| {
                b.iter(|| {
                    signer.sign_values(
                        SignInput {
                            id: "whd_0123456789abcdef",
                            timestamp: 1_795_000_000,
                            body: black_box(&body),
                            url: "",
                        },
                        &mut values,
                    );
                    black_box(&values);
                })
            });
            group.bench_function(format!("{name}/{n}-secret"), |b| {
                b.iter(|| {
                    profile
                        .scheme
                        .sign(
                            black_box(&keys),
                            SignInput {
                                id: "whd_0123456789abcdef",
                                timestamp: 1_795_000_000,
                                body: black_box(&body),
                                url: "",
                            },
                        )
                        .expect("signs")
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
