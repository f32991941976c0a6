//! Crash points for fault injection, driven by `HOOKSTORM_FAILPOINTS`.
//!
//! The receiver's points are `crash-after-commit`, `crash-before-commit` and
//! `crash-in-worker`; the reference sender's (`hookstorm sender`) are
//! `crash-before-post` and `crash-before-mark`.
//!
//! `crash-after-commit=1/20,crash-in-worker=1/50` fires each point with the
//! given ratio; `=always` fires every time; `=3` fires on the third hit only.
//! Ratios are decided by a counter-based hash of (seed, point, hit number),
//! so a run with the same seed (`HOOKSTORM_FAILPOINT_SEED`, default 0)
//! crashes at the same hits. When a point fires, the process aborts on the
//! spot: that is the whole point, so tests exercise only the decision logic
//! in-process and observe real aborts in a child process.

use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A place in the code where the process may be made to crash.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Point {
    /// After the inbox commit, before the answer is written.
    CrashAfterCommit,
    /// After verification, before the insert (for `ack-before-commit`: after the answer, before the commit).
    CrashBeforeCommit,
    /// Mid-batch in the worker, before the batch commits.
    CrashInWorker,
    /// The sender: after the outbox commit, before the POST.
    CrashBeforePost,
    /// The sender: after a 2xx, before the row is marked delivered.
    CrashBeforeMark,
}

/// How many points there are.
const POINTS: usize = 5;

impl Point {
    const ALL: [Point; POINTS] = [
        Point::CrashAfterCommit,
        Point::CrashBeforeCommit,
        Point::CrashInWorker,
        Point::CrashBeforePost,
        Point::CrashBeforeMark,
    ];

    /// The name used in `HOOKSTORM_FAILPOINTS`.
    pub fn name(self) -> &'static str {
        match self {
            Point::CrashAfterCommit => "crash-after-commit",
            Point::CrashBeforeCommit => "crash-before-commit",
            Point::CrashInWorker => "crash-in-worker",
            Point::CrashBeforePost => "crash-before-post",
            Point::CrashBeforeMark => "crash-before-mark",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// When a point fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// On every hit.
    Always,
    /// On the n-th hit only (1-based).
    Nth(u64),
    /// On about `num` of every `den` hits, decided by a seeded hash.
    Ratio {
        /// Numerator.
        num: u64,
        /// Denominator.
        den: u64,
    },
}

/// A malformed failpoint specification.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad failpoint {spec:?}: {reason} (hint: like crash-after-commit=1/20, crash-in-worker=always or crash-before-commit=3)")]
pub struct FailpointError {
    /// The offending element.
    pub spec: String,
    /// What is wrong with it.
    pub reason: String,
}

impl FromStr for Trigger {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        if s == "always" {
            return Ok(Trigger::Always);
        }
        if let Some((a, b)) = s.split_once('/') {
            let num: u64 = a
                .trim()
                .parse()
                .map_err(|_| "ratio numerator is not a number".to_string())?;
            let den: u64 = b
                .trim()
                .parse()
                .map_err(|_| "ratio denominator is not a number".to_string())?;
            if den == 0 || num > den {
                return Err("ratio must be n/d with 0 <= n <= d and d > 0".into());
            }
            return Ok(Trigger::Ratio { num, den });
        }
        match s.parse::<u64>() {
            Ok(0) => Err("hit numbers start at 1".into()),
            Ok(n) => Ok(Trigger::Nth(n)),
            Err(_) => Err("expected always, N or n/d".into()),
        }
    }
}

/// The configured failpoints and their hit counters.
#[derive(Debug, Default)]
pub struct Failpoints {
    triggers: [Option<Trigger>; POINTS],
    hits: [AtomicU64; POINTS],
    seed: u64,
}

impl Clone for Failpoints {
    fn clone(&self) -> Self {
        Failpoints {
            triggers: self.triggers,
            hits: Default::default(),
            seed: self.seed,
        }
    }
}

fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Failpoints {
    /// No failpoint set.
    pub fn none() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Parses `name=trigger[,name=trigger…]`; an empty string sets none.
    pub fn parse(spec: &str, seed: u64) -> Result<Self, FailpointError> {
        let mut fp = Failpoints {
            seed,
            ..Default::default()
        };
        for element in spec.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let err = |reason: &str| FailpointError {
                spec: element.to_string(),
                reason: reason.to_string(),
            };
            let (name, trigger) = element
                .split_once('=')
                .ok_or_else(|| err("expected name=trigger"))?;
            let point = Point::ALL
                .into_iter()
                .find(|p| p.name() == name.trim())
                .ok_or_else(|| err("unknown failpoint (crash-after-commit, crash-before-commit, crash-in-worker, crash-before-post, crash-before-mark)"))?;
            fp.triggers[point.index()] = Some(trigger.parse().map_err(|r: String| err(&r))?);
        }
        Ok(fp)
    }

    /// Reads `HOOKSTORM_FAILPOINTS` and `HOOKSTORM_FAILPOINT_SEED`.
    pub fn from_env() -> Result<Self, FailpointError> {
        let spec = std::env::var("HOOKSTORM_FAILPOINTS").unwrap_or_default();
        let seed = std::env::var("HOOKSTORM_FAILPOINT_SEED")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0);
        Self::parse(&spec, seed)
    }

    /// Whether any point is set.
    pub fn is_empty(&self) -> bool {
        self.triggers.iter().all(Option::is_none)
    }

    /// The trigger of a point, if set.
    pub fn trigger(&self, point: Point) -> Option<Trigger> {
        self.triggers[point.index()]
    }

    /// Counts a hit of `point` and says whether it fires now (no side effect beyond the counter).
    pub fn decide(&self, point: Point) -> bool {
        let Some(trigger) = self.triggers[point.index()] else {
            return false;
        };
        let hit = self.hits[point.index()].fetch_add(1, Ordering::SeqCst) + 1;
        match trigger {
            Trigger::Always => true,
            Trigger::Nth(n) => hit == n,
            Trigger::Ratio { num, den } => {
                let h = splitmix64(self.seed ^ splitmix64(point.index() as u64 + 1) ^ hit);
                h % den < num
            }
        }
    }

    /// Counts a hit and aborts the process if the point fires.
    pub fn hit(&self, point: Point) {
        if self.decide(point) {
            eprintln!("failpoint {} fired: aborting", point.name());
            std::process::abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nth_fires_exactly_on_that_hit() {
        let fp = Failpoints::parse("crash-after-commit=3", 0).unwrap();
        let fired: Vec<bool> = (0..5).map(|_| fp.decide(Point::CrashAfterCommit)).collect();
        assert_eq!(fired, [false, false, true, false, false]);
        assert!(!fp.decide(Point::CrashInWorker));
    }

    #[test]
    fn always_fires_every_time() {
        let fp = Failpoints::parse("crash-in-worker=always", 0).unwrap();
        assert!((0..10).all(|_| fp.decide(Point::CrashInWorker)));
    }

    #[test]
    fn ratio_is_repeatable_for_a_seed_and_roughly_proportional() {
        let run = |seed| {
            let fp =
                Failpoints::parse("crash-after-commit=1/20,crash-in-worker=1/50", seed).unwrap();
            (0..2000)
                .map(|_| fp.decide(Point::CrashAfterCommit))
                .collect::<Vec<_>>()
        };
        assert_eq!(run(7), run(7));
        let n = run(7).iter().filter(|b| **b).count();
        assert!((50..=150).contains(&n), "fired {n} times out of 2000");
    }

    #[test]
    fn bad_specs_are_refused_with_a_hint() {
        for bad in [
            "crash-after-commit",
            "nope=1",
            "crash-in-worker=0",
            "crash-in-worker=3/2",
            "crash-in-worker=x",
        ] {
            let e = Failpoints::parse(bad, 0).unwrap_err();
            assert!(e.to_string().contains("hint"), "{e}");
        }
        assert!(Failpoints::parse("", 0).unwrap().is_empty());
    }
}
