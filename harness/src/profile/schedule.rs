//! Retry schedules: when each attempt of one delivery is sent.
//!
//! A schedule is a pure function of its parameters and a seed: it never
//! sleeps. The sender drives it with real time divided by the time scale,
//! tests drive it with nothing at all, and `hookstorm schedule` prints it.
//! That is why the jitter is drawn from an RNG the caller hands in.

use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// How the random part of each wait is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "mode", content = "fraction")]
pub enum Jitter {
    /// Every wait is exactly its base.
    None,
    /// Uniform in `[base/2, base]`: shortened by up to half (answerline).
    ShortenUpToHalf,
    /// Uniform in `[0, base]` ("full jitter").
    Full,
    /// Uniform in `[base*(1-f), base*(1+f)]`.
    PlusMinus(f64),
}

impl Jitter {
    /// The range a wait with this base can take.
    pub fn range(&self, base: Duration) -> (Duration, Duration) {
        match *self {
            Jitter::None => (base, base),
            Jitter::ShortenUpToHalf => (base / 2, base),
            Jitter::Full => (Duration::ZERO, base),
            Jitter::PlusMinus(f) => {
                let f = f.clamp(0.0, 1.0);
                (base.mul_f64(1.0 - f), base.mul_f64(1.0 + f))
            }
        }
    }

    /// Draws one wait for `base`.
    pub fn draw<R: Rng + ?Sized>(&self, base: Duration, rng: &mut R) -> Duration {
        let (lo, hi) = self.range(base);
        if hi <= lo {
            return lo;
        }
        let span = (hi - lo).as_secs_f64();
        lo + Duration::from_secs_f64(rng.gen::<f64>() * span)
    }
}

/// Where the base waits come from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Waits {
    /// Before attempt n (n >= 2): `min(base * factor^(n-2), cap)`.
    Exponential {
        /// The base wait before attempt 2.
        base: Duration,
        /// Growth per attempt.
        factor: f64,
        /// Upper bound on one base wait.
        cap: Option<Duration>,
    },
    /// Explicit base waits: entry i is the wait before attempt i+2.
    List(Vec<Duration>),
}

/// A retry schedule: how many attempts, and the wait before each.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Schedule {
    /// Attempts in all, the first included; after the last failure the delivery is dead.
    pub max_attempts: u32,
    /// The base waits.
    pub waits: Waits,
    /// The random part of each wait.
    pub jitter: Jitter,
}

/// One row of a planned schedule.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PlannedAttempt {
    /// 1-based attempt number.
    pub attempt: u32,
    /// The base wait before this attempt.
    pub base: Duration,
    /// The wait actually drawn before this attempt.
    pub wait: Duration,
    /// Sum of the drawn waits up to this attempt.
    pub cumulative: Duration,
    /// The shortest wait this attempt can have.
    pub min_wait: Duration,
    /// The longest wait this attempt can have.
    pub max_wait: Duration,
    /// Cumulative minimum over all seeds.
    pub cumulative_min: Duration,
    /// Cumulative maximum over all seeds.
    pub cumulative_max: Duration,
}

impl Schedule {
    /// The base wait before `attempt` (1-based); zero for attempt 1 and `None`
    /// past the last attempt.
    pub fn base_wait(&self, attempt: u32) -> Option<Duration> {
        if attempt == 0 || attempt > self.max_attempts {
            return None;
        }
        if attempt == 1 {
            return Some(Duration::ZERO);
        }
        let idx = attempt - 2;
        match &self.waits {
            Waits::Exponential { base, factor, cap } => {
                let secs = base.as_secs_f64() * factor.powi(idx as i32);
                let mut wait = Duration::from_secs_f64(secs.clamp(0.0, 1e12));
                if let Some(cap) = cap {
                    wait = wait.min(*cap);
                }
                Some(wait)
            }
            Waits::List(list) => Some(
                list.get(idx as usize)
                    .or(list.last())
                    .copied()
                    .unwrap_or_default(),
            ),
        }
    }

    /// Draws the wait before `attempt` with the caller's RNG; `None` past the
    /// last attempt.
    pub fn draw_wait<R: Rng + ?Sized>(&self, attempt: u32, rng: &mut R) -> Option<Duration> {
        let base = self.base_wait(attempt)?;
        if attempt == 1 {
            return Some(Duration::ZERO);
        }
        Some(self.jitter.draw(base, rng))
    }

    /// The full plan of one delivery for `seed`: every attempt, its wait and
    /// the cumulative time, with the profile's min and max columns.
    pub fn plan(&self, seed: u64) -> Vec<PlannedAttempt> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        self.plan_with(&mut rng)
    }

    /// Like [`Schedule::plan`] with the caller's RNG.
    pub fn plan_with<R: Rng + ?Sized>(&self, rng: &mut R) -> Vec<PlannedAttempt> {
        let mut rows = Vec::with_capacity(self.max_attempts as usize);
        let (mut cum, mut cmin, mut cmax) = (Duration::ZERO, Duration::ZERO, Duration::ZERO);
        for attempt in 1..=self.max_attempts {
            let base = self.base_wait(attempt).unwrap_or_default();
            let wait = self.draw_wait(attempt, rng).unwrap_or_default();
            let (lo, hi) = if attempt == 1 {
                (Duration::ZERO, Duration::ZERO)
            } else {
                self.jitter.range(base)
            };
            cum += wait;
            cmin += lo;
            cmax += hi;
            rows.push(PlannedAttempt {
                attempt,
                base,
                wait,
                cumulative: cum,
                min_wait: lo,
                max_wait: hi,
                cumulative_min: cmin,
                cumulative_max: cmax,
            });
        }
        rows
    }

    /// The shortest and longest time from the first to the last attempt.
    pub fn window(&self) -> (Duration, Duration) {
        self.plan(0)
            .last()
            .map(|r| (r.cumulative_min, r.cumulative_max))
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::Profile;
    use proptest::prelude::*;

    fn answerline() -> Schedule {
        Profile::builtin("answerline").unwrap().schedule
    }

    fn base(n: u32) -> f64 {
        5.0 * 2f64.powi(n as i32 - 2)
    }

    #[test]
    fn answerline_window_is_21_to_43_minutes() {
        let (lo, hi) = answerline().window();
        assert_eq!(lo, Duration::from_millis(1_277_500));
        assert_eq!(hi, Duration::from_secs(2555));
    }

    #[test]
    fn answerline_min_and_max_columns_match_the_contract_table() {
        let plan = answerline().plan(7);
        let expected_max = [
            0.0, 5.0, 15.0, 35.0, 75.0, 155.0, 315.0, 635.0, 1275.0, 2555.0,
        ];
        let expected_min = [0.0, 2.5, 7.5, 17.5, 37.5, 77.5, 157.5, 317.5, 637.5, 1277.5];
        assert_eq!(plan.len(), 10);
        for (i, row) in plan.iter().enumerate() {
            assert_eq!(row.cumulative_max.as_secs_f64(), expected_max[i]);
            assert_eq!(row.cumulative_min.as_secs_f64(), expected_min[i]);
        }
    }

    #[test]
    fn no_wait_past_the_last_attempt() {
        let s = answerline();
        assert!(s.base_wait(11).is_none());
        assert!(s.draw_wait(11, &mut ChaCha8Rng::seed_from_u64(1)).is_none());
    }

    #[test]
    fn mean_shortening_is_a_quarter_of_the_base() {
        // Uniform in [b/2, b] shortens by b/4 on average; a constant jitter
        // (always b/2, always b, always 3b/4 ...) fails the spread check.
        let s = answerline();
        let n = 4000;
        for attempt in 2..=10u32 {
            let b = base(attempt);
            let mut sum = 0.0;
            let (mut lo, mut hi) = (f64::MAX, 0f64);
            for seed in 0..n {
                let w = s.plan(seed)[attempt as usize - 1].wait.as_secs_f64();
                sum += b - w;
                lo = lo.min(w);
                hi = hi.max(w);
            }
            let mean_short = sum / n as f64;
            assert!(
                (mean_short / b - 0.25).abs() < 0.02,
                "attempt {attempt}: mean shortening {mean_short} of base {b}"
            );
            assert!(
                lo < b * 0.55 && hi > b * 0.95,
                "jitter does not span [b/2, b]"
            );
        }
    }

    proptest! {
        #[test]
        fn every_answerline_wait_lies_in_half_base_to_base(seed in any::<u64>()) {
            let plan = answerline().plan(seed);
            prop_assert!(plan.len() <= 10);
            prop_assert_eq!(plan[0].wait, Duration::ZERO);
            for row in &plan[1..] {
                let b = base(row.attempt);
                let w = row.wait.as_secs_f64();
                prop_assert!(w >= b / 2.0 - 1e-9 && w <= b + 1e-9, "attempt {} wait {}", row.attempt, w);
            }
            let total = plan.last().unwrap().cumulative.as_secs_f64();
            prop_assert!((1277.5 - 1e-6..=2555.0 + 1e-6).contains(&total));
        }

        #[test]
        fn the_same_seed_gives_the_same_schedule(seed in any::<u64>()) {
            prop_assert_eq!(answerline().plan(seed), answerline().plan(seed));
        }

        #[test]
        fn list_schedules_never_exceed_max_attempts(n in 1u32..20, seed in any::<u64>()) {
            let s = Schedule { max_attempts: n, waits: Waits::List(vec![Duration::from_secs(1); 3]), jitter: Jitter::Full };
            let plan = s.plan(seed);
            prop_assert_eq!(plan.len() as u32, n);
            for row in plan { prop_assert!(row.wait <= Duration::from_secs(1)); }
        }
    }
}
