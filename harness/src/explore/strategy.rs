//! Plans drawn at random from the [`Space`]: proptest strategies over
//! every fault kind's settings and the workload's sizes, weighted towards
//! plans that combine faults.
//!
//! A draw is a generative scenario (accounts, `[workload]` and `[[fault]]`
//! tables, every invariant checked), so what explore runs is exactly what
//! a scenario file could say, and the plan it sends is
//! [`crate::workload::plan`] of it: the shrinker and `run` take it
//! as they take any scenario. Plan `n` of a seed is drawn by its own
//! proptest runner, seeded from the seed and `n` (ChaCha), so it depends on
//! nothing drawn before it: the same seed and target give the same plans,
//! and `--plan N` draws plan N alone. Only proptest's generation is used:
//! a failing plan is cut down by hookstorm's own shrinker, which works on
//! the deliveries the plan sent rather than on the numbers it was drawn
//! from, and writes a scenario that replays as it is.
//!
//! Half of all plans hold two faults or more: a bug that needs a
//! duplicate during a database cut, or a reordered pair across a kill, is
//! found only by a plan that holds both.

use std::time::Duration;

use proptest::prelude::*;
use proptest::sample::subsequence;
use proptest::strategy::{BoxedStrategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

use super::space::Space;
use crate::fault_spec::{
    CutDatabaseSpec, CutMode, CutVia, DropAckSpec, DuplicateMode, DuplicateSpec, FaultSpec,
    Forgery, FrontSpec, KillSignal, KillSpec, KillTrigger, KillWorkerSpec, ReconcileSpec,
    RedeliverSpec, ReorderMode, ReorderSpec, Signing, TamperSpec,
};
use crate::scenario::{Sequenced, Workload};
use crate::text::units::HumanDuration;

/// How many fault kinds a plan holds, and how often: most plans hold two
/// or three, so pairs of kinds are drawn often.
pub const FAULT_COUNT_WEIGHTS: [(u32, usize); 5] = [(1, 0), (3, 1), (4, 2), (3, 3), (1, 4)];

/// The time scale of a drawn plan without process faults: retries come
/// quickly, so a plan takes seconds.
pub const TIME_SCALE: f64 = 1000.0;
/// The time scale of a drawn plan with a kill or a database cut, as the
/// catalog's process scenarios have it: a restarting receiver or a cut
/// database then meets retries, not a burst of dead deliveries.
pub const PROCESS_TIME_SCALE: f64 = 100.0;

/// How many faults plans hold and their time scales, as the table
/// `docs/explore.md` carries between its `explore-draw` markers.
pub fn markdown() -> String {
    let total: u32 = FAULT_COUNT_WEIGHTS.iter().map(|(w, _)| w).sum();
    let mut s = String::from("| fault kinds in a plan | share of plans |\n|---|---|\n");
    for (w, n) in FAULT_COUNT_WEIGHTS {
        s.push_str(&format!("| {n} | {w}/{total} |\n"));
    }
    s.push_str(&format!(
        "\nA plan's time scale is {TIME_SCALE} (retries come {TIME_SCALE} times faster than the profile's schedule), or {PROCESS_TIME_SCALE} when it kills or cuts something (as the catalog's process scenarios have it); `--time-scale` overrides both.\n"
    ));
    s
}

/// What one draw is: a generative scenario's contents.
#[derive(Debug, Clone, PartialEq)]
pub struct Draw {
    /// The accounts its deliveries are sent to.
    pub accounts: Vec<String>,
    /// The workload.
    pub workload: Workload,
    /// The faults, at most one of each kind, in [`super::space::KINDS`] order.
    pub faults: Vec<FaultSpec>,
}

impl Draw {
    /// Whether it kills or cuts something (and so wants a steady stream).
    pub fn has_process_fault(&self) -> bool {
        self.faults.iter().any(FaultSpec::is_process_fault)
    }

    /// Its time scale ([`TIME_SCALE`] or [`PROCESS_TIME_SCALE`]).
    pub fn time_scale(&self) -> f64 {
        if self.has_process_fault() {
            PROCESS_TIME_SCALE
        } else {
            TIME_SCALE
        }
    }
}

/// Draws plan `index` of `seed` from `space`.
pub fn draw(space: &Space, seed: u64, index: u64) -> Draw {
    let mut bytes = [0u8; 32];
    for (i, chunk) in bytes.chunks_mut(8).enumerate() {
        let part = crate::plan::derive_seed(seed, "explore", "plan", index ^ ((i as u64) << 56));
        chunk.copy_from_slice(&part.to_le_bytes());
    }
    let config = Config {
        rng_algorithm: RngAlgorithm::ChaCha,
        ..Config::default()
    };
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &bytes));
    // No strategy here filters, so a tree is always made.
    plan(space)
        .new_tree(&mut runner)
        .expect("the plan strategy never rejects")
        .current()
}

/// The strategy of a whole plan over `space`.
pub fn plan(space: &Space) -> BoxedStrategy<Draw> {
    let kinds = space.kinds.clone();
    let counts: Vec<(u32, BoxedStrategy<usize>)> = FAULT_COUNT_WEIGHTS
        .iter()
        .filter(|(_, n)| *n <= kinds.len())
        .map(|(w, n)| (*w, Just(*n).boxed()))
        .collect();
    let space = space.clone();
    proptest::strategy::Union::new_weighted(counts)
        .prop_flat_map(move |n| subsequence(kinds.clone(), n))
        .prop_flat_map(move |chosen| {
            let two = space.accounts.len() > 1;
            let accounts = if two {
                prop_oneof![3 => Just(1usize), 1 => Just(2usize)].boxed()
            } else {
                Just(1usize).boxed()
            };
            let space = space.clone();
            accounts.prop_flat_map(move |n_accounts| {
                let process = chosen
                    .iter()
                    .any(|k| matches!(*k, "kill" | "kill-worker" | "cut-database"));
                let specs: Vec<BoxedStrategy<FaultSpec>> = chosen
                    .iter()
                    .map(|k| fault(k, &space, n_accounts))
                    .collect();
                let accounts = space.accounts[..n_accounts].to_vec();
                (workload(&space, process), specs).prop_map(move |(workload, mut faults)| {
                    meet_repeats_in_the_cut(&mut faults);
                    Draw {
                        accounts: accounts.clone(),
                        workload,
                        faults,
                    }
                })
            })
        })
        .boxed()
}

/// The kinds that send a delivery the receiver has answered again while
/// the stream runs: a copy or replay, a dropped acknowledgement's retry.
/// (A dashboard redelivery comes once a delivery is acknowledged or dead,
/// too late to meet a cut.)
pub const REPEATING: [&str; 2] = ["duplicate", "drop-ack"];

/// The longest a cut waits for a repeat in a plan that repeats deliveries:
/// a SQLite receiver answers a first attempt once its busy timeout gives
/// up (5 s for the reference receiver) and the retry of that answer waits
/// as long again.
pub const CUT_MAX_WITH_REPEATS: Duration = Duration::from_secs(30);

/// A plan that cuts the database and repeats deliveries holds the cut
/// until the receiver has answered a delivery again while its database
/// was down: that is what the pair is drawn to test, and timing it on
/// the answers, not the clock, makes it happen on every run.
fn meet_repeats_in_the_cut(faults: &mut [FaultSpec]) {
    if !faults.iter().any(|f| REPEATING.contains(&f.name())) {
        return;
    }
    for f in faults {
        if let FaultSpec::CutDatabase(c) = f {
            c.seen_repeats = 1;
            c.max = HumanDuration(c.max.0.max(CUT_MAX_WITH_REPEATS));
        }
    }
}

fn share() -> BoxedStrategy<f64> {
    prop_oneof![Just(0.3), Just(0.6), Just(1.0)].boxed()
}

fn millis(range: std::ops::RangeInclusive<u64>) -> BoxedStrategy<HumanDuration> {
    range
        .prop_map(|ms| HumanDuration(Duration::from_millis(ms)))
        .boxed()
}

/// The workload: small, so a plan takes seconds; with a process fault,
/// enough jobs for a steady stream to kill or cut into.
fn workload(space: &Space, process: bool) -> BoxedStrategy<Workload> {
    let jobs = if process { 10usize..=40 } else { 1usize..=12 };
    let tests = if space.test_deliveries {
        prop_oneof![4 => Just(0usize), 1 => 1usize..=2].boxed()
    } else {
        Just(0usize).boxed()
    };
    let sequenced = if space.sequenced {
        prop_oneof![
            5 => Just(None),
            1 => (1usize..=3, 2usize..=5, 1u64..=3).prop_map(|(resources, events, max_gap)| Some(
                Sequenced {
                    resources,
                    events,
                    max_gap
                }
            )),
        ]
        .boxed()
    } else {
        Just(None).boxed()
    };
    (
        jobs,
        prop_oneof![3 => Just(1usize), 2 => Just(2usize), 1 => Just(3usize)],
        prop_oneof![Just(0.0), Just(0.2), Just(0.5)],
        tests,
        prop_oneof![5 => Just(0usize), 1 => Just(1usize)],
        sequenced,
        prop_oneof![5 => Just(false), 1 => Just(true)],
    )
        .prop_map(
            |(jobs, tasks_per_job, failed_share, test_deliveries, poison, sequenced, raw_note)| {
                Workload {
                    jobs,
                    tasks_per_job,
                    failed_share,
                    test_deliveries,
                    poison,
                    sequenced,
                    raw_note,
                }
            },
        )
        .boxed()
}

/// The settings of one fault of `kind`.
fn fault(kind: &str, space: &Space, accounts: usize) -> BoxedStrategy<FaultSpec> {
    match kind {
        "duplicate" => duplicate(),
        "reorder" => (
            prop_oneof![
                Just(ReorderMode::Shuffle),
                Just(ReorderMode::Reverse),
                Just(ReorderMode::HoldBack)
            ],
            1u32..=3,
        )
            .prop_map(|(mode, hold_attempts)| {
                FaultSpec::Reorder(ReorderSpec {
                    mode,
                    hold_attempts,
                })
            })
            .boxed(),
        "drop-ack" => (share(), 1u32..=3)
            .prop_map(|(share, times)| FaultSpec::DropAck(DropAckSpec { share, times }))
            .boxed(),
        "tamper" => tamper(accounts),
        "front" => front(),
        // An hourly limit paces redeliveries in scaled hours: a low one
        // with dozens of redeliveries at a process plan's scale takes
        // minutes of real time, so the limits drawn stay high.
        "redeliver" => (
            prop_oneof![3 => Just(None), 1 => (10u32..=30).prop_map(Some)],
            0u32..=1,
        )
            .prop_map(|(hourly_limit, while_pending)| {
                FaultSpec::Redeliver(RedeliverSpec {
                    hourly_limit,
                    while_pending,
                })
            })
            .boxed(),
        "reconcile" => (0usize..=2, 0usize..=1, prop_oneof![Just(0.0), Just(0.33)])
            .prop_map(|(pending, expired, throttle_share)| {
                FaultSpec::Reconcile(ReconcileSpec {
                    pending,
                    expired,
                    throttle_share,
                })
            })
            .boxed(),
        "kill" => kill(),
        "kill-worker" => (
            1u32..=3,
            millis(1000..=2000),
            prop_oneof![3 => Just(None), 1 => Just(Some("crash-in-worker=1/3".to_string()))],
        )
            .prop_map(|(count, over, failpoint)| {
                FaultSpec::KillWorker(KillWorkerSpec {
                    count,
                    over,
                    failpoint,
                })
            })
            .boxed(),
        "cut-database" => cut(space.cut_modes.clone()),
        other => unreachable!("no strategy for fault kind {other}"),
    }
}

fn duplicate() -> BoxedStrategy<FaultSpec> {
    let concurrent = (2u32..=4, 0u32..=3, share()).prop_map(|(lo, more, share)| DuplicateSpec {
        mode: DuplicateMode::Concurrent,
        share,
        copies: [lo, lo + more],
        replay: 0,
        fresh_id: 0,
        redeliver: 0,
    });
    let sequential =
        (0u32..=2, 0u32..=1, 0u32..=1, share()).prop_map(|(replay, fresh_id, redeliver, share)| {
            DuplicateSpec {
                mode: DuplicateMode::Sequential,
                share,
                copies: [2, 8],
                // A sequential duplicate must send something.
                replay: if replay + fresh_id + redeliver == 0 {
                    1
                } else {
                    replay
                },
                fresh_id,
                redeliver,
            }
        });
    prop_oneof![concurrent, sequential]
        .prop_map(FaultSpec::Duplicate)
        .boxed()
}

fn tamper(accounts: usize) -> BoxedStrategy<FaultSpec> {
    let kinds: Vec<Forgery> = Forgery::ALL
        .into_iter()
        .filter(|f| *f != Forgery::CrossAccount || accounts > 1)
        .collect();
    let rotations = vec![Signing::OldAndNew, Signing::NewOnly];
    (
        subsequence(kinds, 0..=3),
        1usize..=2,
        prop_oneof![2 => Just(Vec::new()), 1 => subsequence(rotations, 1..=2)],
    )
        .prop_map(|(mut forgeries, each, rotation)| {
            if forgeries.is_empty() && rotation.is_empty() {
                forgeries.push(Forgery::WrongSecret);
            }
            FaultSpec::Tamper(TamperSpec {
                forgeries,
                each,
                rotation,
            })
        })
        .boxed()
}

fn front() -> BoxedStrategy<FaultSpec> {
    let base = FrontSpec {
        share: 1.0,
        fail_first: 0,
        status: 503,
        redirect: None,
        delay: None,
        stall_body: false,
        stall_after_bytes: 40,
        stall_for: HumanDuration(Duration::from_secs(1)),
    };
    let (b1, b2, b3, b4) = (base.clone(), base.clone(), base.clone(), base);
    let failing = (
        prop_oneof![4 => 1u32..=4, 1 => Just(10u32)],
        prop_oneof![Just(503u16), Just(500u16), Just(429u16)],
        share(),
    )
        .prop_map(move |(fail_first, status, share)| FrontSpec {
            fail_first,
            status,
            share,
            ..b1.clone()
        });
    let redirect =
        (prop_oneof![Just(307u16), Just(308u16)], share()).prop_map(move |(code, share)| {
            FrontSpec {
                redirect: Some(code),
                share,
                ..b2.clone()
            }
        });
    let delay = (millis(50..=300), share()).prop_map(move |(delay, share)| FrontSpec {
        delay: Some(delay),
        share,
        ..b3.clone()
    });
    let stall = (
        prop_oneof![Just(20usize), Just(40usize)],
        millis(200..=800),
        share(),
    )
        .prop_map(move |(stall_after_bytes, stall_for, share)| FrontSpec {
            fail_first: 1,
            stall_body: true,
            stall_after_bytes,
            stall_for,
            share,
            ..b4.clone()
        });
    prop_oneof![3 => failing, 1 => redirect, 1 => delay, 1 => stall]
        .prop_map(FaultSpec::Front)
        .boxed()
}

fn kill() -> BoxedStrategy<FaultSpec> {
    (
        prop_oneof![3 => Just(KillSignal::Kill), 1 => Just(KillSignal::Term), 1 => Just(KillSignal::Stop)],
        1u32..=3,
        millis(1000..=2000),
        millis(200..=600),
        prop_oneof![
            3 => Just(None),
            1 => Just(Some("crash-after-commit=1/6,crash-before-commit=1/6".to_string()))
        ],
        prop_oneof![
            1 => Just(vec![KillTrigger::InFlight]),
            1 => Just(vec![KillTrigger::Answer]),
            1 => Just(vec![KillTrigger::Answer, KillTrigger::InFlight]),
        ],
    )
        .prop_map(|(signal, count, over, pause, failpoint, on)| {
            // A crash point stands in for a SIGKILL only.
            let failpoint = failpoint.filter(|_| signal == KillSignal::Kill);
            FaultSpec::Kill(KillSpec {
                signal,
                count,
                over,
                pause,
                failpoint,
                on,
            })
        })
        .boxed()
}

fn cut(modes: Vec<CutMode>) -> BoxedStrategy<FaultSpec> {
    let modes = if modes.is_empty() {
        vec![CutMode::Reset]
    } else {
        modes
    };
    (
        proptest::sample::select(modes),
        millis(100..=600),
        millis(500..=1500),
        1u32..=4,
        prop_oneof![Just(10u64), Just(20u64)],
    )
        .prop_map(|(mode, at, duration, seen, max_s)| {
            FaultSpec::CutDatabase(CutDatabaseSpec {
                via: CutVia::Auto,
                mode,
                latency: HumanDuration(Duration::from_millis(200)),
                at,
                duration,
                seen,
                seen_repeats: 0,
                max: HumanDuration(Duration::from_secs(max_s)),
                over: HumanDuration(Duration::from_secs(2)),
            })
        })
        .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explore::space::KINDS;

    fn full() -> Space {
        Space {
            kinds: KINDS.to_vec(),
            accounts: vec!["acct_a".into(), "acct_b".into()],
            test_deliveries: true,
            sequenced: true,
            cut_modes: super::super::space::CUT_MODES.to_vec(),
            left_out: Vec::new(),
        }
    }

    #[test]
    fn the_same_seed_draws_the_same_plans_and_another_seed_others() {
        let s = full();
        let a: Vec<Draw> = (1..=20).map(|i| draw(&s, 7, i)).collect();
        let b: Vec<Draw> = (1..=20).map(|i| draw(&s, 7, i)).collect();
        assert_eq!(a, b);
        let c: Vec<Draw> = (1..=20).map(|i| draw(&s, 8, i)).collect();
        assert_ne!(a, c);
        // Plan 5 alone is plan 5 of the sequence.
        assert_eq!(draw(&s, 7, 5), a[4]);
    }

    #[test]
    fn every_draw_is_a_valid_scenario_mostly_of_several_faults_and_every_kind_and_pair_comes_up() {
        let s = full();
        let mut kinds = std::collections::BTreeSet::new();
        let mut pairs = std::collections::BTreeSet::new();
        let mut several = 0;
        let n = 600;
        for i in 0..n {
            let d = draw(&s, 3, i);
            for f in &d.faults {
                f.validate(d.accounts.len())
                    .unwrap_or_else(|e| panic!("plan {i}: {e}: {d:?}"));
                kinds.insert(f.name());
            }
            crate::scenario::planned_deliveries(&d.workload).unwrap();
            for (x, a) in d.faults.iter().enumerate() {
                for b in &d.faults[x + 1..] {
                    pairs.insert((a.name(), b.name()));
                }
            }
            several += usize::from(d.faults.len() >= 2);
            let mut names: Vec<&str> = d.faults.iter().map(FaultSpec::name).collect();
            names.dedup();
            assert_eq!(names.len(), d.faults.len(), "one fault per kind: {d:?}");
        }
        assert_eq!(kinds.len(), KINDS.len(), "{kinds:?}");
        assert_eq!(pairs.len(), 45, "every pair of the 10 kinds: {pairs:?}");
        assert!(
            several * 2 > n as usize,
            "{several} of {n} plans combine faults"
        );
    }

    #[test]
    fn a_cut_drawn_with_a_repeating_fault_waits_for_a_repeat_and_one_without_does_not() {
        let s = full();
        let (mut with, mut without) = (0, 0);
        for i in 0..300 {
            let d = draw(&s, 5, i);
            let repeats = d.faults.iter().any(|f| REPEATING.contains(&f.name()));
            for f in &d.faults {
                if let FaultSpec::CutDatabase(c) = f {
                    if repeats {
                        with += 1;
                        assert_eq!(c.seen_repeats, 1, "{d:?}");
                        assert!(c.max.0 >= CUT_MAX_WITH_REPEATS, "{d:?}");
                    } else {
                        without += 1;
                        assert_eq!(c.seen_repeats, 0, "{d:?}");
                    }
                    f.validate(d.accounts.len()).unwrap();
                }
            }
        }
        assert!(with > 0 && without > 0, "{with} with, {without} without");
    }

    #[test]
    fn a_space_without_a_kind_never_draws_it() {
        let mut s = full();
        s.kinds
            .retain(|k| !matches!(*k, "kill" | "kill-worker" | "cut-database"));
        s.accounts.truncate(1);
        s.test_deliveries = false;
        for i in 0..200 {
            let d = draw(&s, 11, i);
            assert!(!d.has_process_fault(), "{d:?}");
            assert_eq!(d.accounts, ["acct_a"]);
            assert_eq!(d.workload.test_deliveries, 0);
            assert_eq!(d.time_scale(), TIME_SCALE);
        }
    }
}

#[cfg(test)]
mod docs {
    /// `docs/explore.md` carries [`super::markdown`] between its markers.
    #[test]
    fn the_draw_table_in_the_docs_is_the_one_in_the_code() {
        crate::docs_table::assert_section(
            concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/explore.md"),
            "explore-draw",
            &super::markdown(),
        );
    }
}
