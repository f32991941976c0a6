//! How long a run will take, said before its first scenario.
//!
//! A scenario lasts as long as its deliveries keep retrying: a correct
//! receiver acknowledges most first attempts at once, and only the faults
//! that make a delivery retry (a lost ack, a front that fails the first
//! attempts, a killed process, a cut database) or die (a front that never
//! lets it through, a redelivery, a reconciliation) make the run wait for
//! the profile's schedule, compressed by the scenario's time scale
//! ([`crate::profile::Profile::time_scale`]). The estimate adds, per
//! scenario, the compressed waits those faults ask for, the real-time span
//! of its process faults, and a fixed second for the reset, the reads of
//! the state and the check. It is a forecast for a receiver that answers
//! quickly, not a bound: a slow receiver takes longer, and the run's
//! `--timeout` caps it.

use std::time::Duration;

use crate::fault_spec::FaultSpec;
use crate::profile::Profile;
use crate::scenario::Scenario;
use crate::text::units::format_duration;

/// What every scenario costs besides its waits: reset, state reads, check.
pub const OVERHEAD: Duration = Duration::from_secs(1);
/// Retries a process fault (kill, kill-worker, cut-database) costs the
/// deliveries it hits, besides its own real-time span.
const PROCESS_RETRIES: u32 = 2;

/// A run's forecast.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    /// The whole run, every selected scenario.
    pub total: Duration,
    /// How many scenarios it covers.
    pub scenarios: usize,
    /// The profile's name.
    pub profile: String,
    /// The time scale the scenarios that set none are sent with.
    pub time_scale: f64,
    /// The time scale was given (`--time-scale`), not derived from the profile.
    pub given: bool,
}

impl Estimate {
    /// The forecast for `scenarios` under `profile`; `flag` is
    /// `--time-scale`, `default` the scale of scenarios that set none.
    pub fn of(profile: &Profile, scenarios: &[Scenario], flag: Option<f64>, default: f64) -> Self {
        let total = scenarios
            .iter()
            .map(|s| scenario_time(profile, s, flag, default))
            .sum();
        Estimate {
            total,
            scenarios: scenarios.len(),
            profile: profile.name.clone(),
            time_scale: profile.time_scale(flag, None, default),
            given: flag.is_some(),
        }
    }

    /// One line for the console: how long, at which scale, how to shorten.
    pub fn line(&self) -> String {
        let scale = if self.given {
            format!("--time-scale {}", self.time_scale)
        } else {
            format!(
                "the {} profile's time scale (x{} for scenarios that set none)",
                self.profile, self.time_scale
            )
        };
        format!(
            "estimated run time: about {} for {} at {scale}, against a receiver that answers at once; --scenario, --tag, --skip or a higher --time-scale shorten it",
            format_duration(round_to_seconds(self.total)),
            crate::text::words::count(self.scenarios, "scenario")
        )
    }
}

/// One scenario's forecast.
pub fn scenario_time(
    profile: &Profile,
    scenario: &Scenario,
    flag: Option<f64>,
    default: f64,
) -> Duration {
    let scale = profile.time_scale(flag, scenario.time_scale, default);
    let max = profile.schedule.max_attempts;
    // The compressed time until attempt `n` at the latest.
    let until = |n: u32| {
        let plan = profile.schedule.plan(0);
        let at = plan
            .get(n.clamp(1, max) as usize - 1)
            .map_or(Duration::ZERO, |r| r.cumulative_max);
        at.div_f64(scale)
    };
    let mut waits = Duration::ZERO;
    let mut real = Duration::ZERO;
    for f in &scenario.faults {
        let (retries, span) = match f {
            FaultSpec::DropAck(d) => (d.times, Duration::ZERO),
            FaultSpec::Front(fr) if fr.redirect.is_some() => (max, Duration::ZERO),
            FaultSpec::Front(fr) => (
                fr.fail_first,
                fr.delay.map_or(Duration::ZERO, |d| d.0)
                    + if fr.stall_body {
                        fr.stall_for.0 * fr.fail_first
                    } else {
                        Duration::ZERO
                    },
            ),
            FaultSpec::Kill(k) => (PROCESS_RETRIES, k.over.0),
            FaultSpec::KillWorker(k) => (PROCESS_RETRIES, k.over.0),
            FaultSpec::CutDatabase(c) => (PROCESS_RETRIES, c.over.0.max(c.at.0 + c.duration.0)),
            // Deliveries die, then get a fresh schedule of their own.
            FaultSpec::Redeliver(_) => (2 * max, Duration::ZERO),
            FaultSpec::Reconcile(_) => (max, Duration::ZERO),
            FaultSpec::Duplicate(_) | FaultSpec::Reorder(_) | FaultSpec::Tamper(_) => {
                (0, Duration::ZERO)
            }
        };
        let wait = if retries > max {
            until(max) * (retries / max) + until(1 + retries % max)
        } else {
            until(retries + 1)
        };
        waits = waits.max(wait);
        real = real.max(span);
    }
    waits + real + OVERHEAD
}

fn round_to_seconds(d: Duration) -> Duration {
    Duration::from_secs(d.as_secs_f64().round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn catalog() -> Vec<Scenario> {
        Scenario::load_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios")).unwrap()
    }

    #[test]
    fn a_scenario_without_retries_costs_its_overhead_only() {
        let answerline = Profile::default_profile();
        let baseline = catalog()
            .into_iter()
            .find(|s| s.name == "baseline")
            .unwrap();
        assert_eq!(scenario_time(&answerline, &baseline, None, 100.0), OVERHEAD);
    }

    #[test]
    fn the_stripe_catalog_is_forecast_in_minutes_not_hours() {
        let scenarios = catalog();
        let stripe = Profile::builtin("stripe").unwrap();
        let answerline = Profile::default_profile();
        let e = Estimate::of(&stripe, &scenarios, None, 100.0);
        let a = Estimate::of(&answerline, &scenarios, None, 100.0);
        assert!(e.total < Duration::from_secs(5 * 60), "{e:?}");
        // The same compressed windows as the answerline, give or take the
        // schedules' different shapes.
        assert!(e.total < a.total * 2, "{e:?} vs {a:?}");
        // Played at the answerline's 100x, Stripe's hours would take hours.
        let slow = Estimate::of(&stripe, &scenarios, Some(100.0), 100.0);
        assert!(slow.total > Duration::from_secs(3600), "{slow:?}");
        assert!(e.line().contains("x7700"), "{}", e.line());
        assert!(slow.line().contains("--time-scale 100"), "{}", slow.line());
    }
}
