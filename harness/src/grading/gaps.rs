//! Retry-gap evidence: do the gaps between a delivery's attempts follow the
//! profile's schedule at the run's time scale?
//!
//! Not an invariant (the schedule is the harness's own behaviour, not the
//! receiver's), but the retry-schedule scenario promises that attempts
//! follow it, so the report shows the measurement in its notes. A gap is
//! measured from the previous attempt's send; [`window`] is where the next
//! attempt is due from there, which the notes count and the report's
//! timeline draws.

use std::collections::HashMap;
use std::time::Duration;

use crate::fault_spec::FrontSpec;
use crate::history::{Event, Fold};
use crate::profile::schedule::Schedule;
use crate::tag::FaultTag;

/// What every gap may exceed its scheduled wait by without a front that
/// stalls: the attempt's own time.
pub const BASE_SLACK: Duration = Duration::from_millis(50);

/// What a gap may exceed its scheduled wait by under `front`: the
/// attempt's own time, and the front's stall when it stalls uploads.
pub fn slack(front: Option<&FrontSpec>) -> Duration {
    match front {
        Some(f) if f.stall_body => BASE_SLACK + f.stall_for.0,
        _ => BASE_SLACK,
    }
}

/// Where attempt `n` is due, in seconds after the previous attempt's
/// send: the scaled schedule's range for its wait, the end widened by
/// `slack`. `None` for a first attempt or one past the schedule.
pub fn window(schedule: &Schedule, n: u32, time_scale: f64, slack: Duration) -> Option<(f64, f64)> {
    if n < 2 {
        return None;
    }
    let base = schedule.base_wait(n)?;
    let (lo, hi) = schedule.jitter.range(base);
    let scale = if time_scale > 0.0 { time_scale } else { 1.0 };
    Some((
        lo.as_secs_f64() / scale,
        hi.as_secs_f64() / scale + slack.as_secs_f64(),
    ))
}

/// How the measured gaps compare with the scaled schedule.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct GapReport {
    /// Gaps measured (attempt n-1 to n of one delivery and round).
    pub measured: usize,
    /// Gaps inside `[min, max + slack]` of the scaled schedule.
    pub within: usize,
    /// Smallest measured gap divided by its scaled minimum.
    pub min_ratio: f64,
}

/// The send times of every delivery's attempts, folded from a history.
#[derive(Debug, Default)]
pub struct Gaps {
    sent: HashMap<(String, u32), Vec<(u32, i64)>>,
}

impl Fold for Gaps {
    fn push(&mut self, _line: u64, e: &Event) {
        let Event::Attempt(a) = e else { return };
        // A held-back attempt was never sent: it has no place in a gap.
        if a.faults.contains(&FaultTag::HoldBack) {
            return;
        }
        let Ok(t) = chrono::DateTime::parse_from_rfc3339(&a.sent_at) else {
            return;
        };
        self.sent
            .entry((a.delivery.clone(), a.round))
            .or_default()
            .push((a.attempt, t.timestamp_micros()));
    }
}

/// Measures the gaps of every delivery in `events` against `schedule`
/// divided by `time_scale`. `slack` absorbs each attempt's own duration.
pub fn measure<'a>(
    events: impl IntoIterator<Item = &'a Event>,
    schedule: &Schedule,
    time_scale: f64,
    slack: Duration,
) -> GapReport {
    let mut g = Gaps::default();
    for e in events {
        g.push(0, e);
    }
    g.report(schedule, time_scale, slack)
}

impl Gaps {
    /// The folded gaps against `schedule` divided by `time_scale`; `slack`
    /// absorbs each attempt's own duration.
    pub fn report(mut self, schedule: &Schedule, time_scale: f64, slack: Duration) -> GapReport {
        let sent = &mut self.sent;
        let mut r = GapReport {
            min_ratio: f64::INFINITY,
            ..Default::default()
        };
        for list in sent.values_mut() {
            list.sort();
            list.dedup_by_key(|(n, _)| *n);
            for w in list.windows(2) {
                let (n, t) = w[1];
                if n != w[0].0 + 1 {
                    continue;
                }
                let Some((lo, hi)) = window(schedule, n, time_scale, slack) else {
                    continue;
                };
                let gap = (t - w[0].1) as f64 / 1e6;
                r.measured += 1;
                // sent_at has second precision or better; allow a millisecond of rounding.
                if gap + 0.001 >= lo && gap <= hi {
                    r.within += 1;
                }
                if lo > 0.0 {
                    r.min_ratio = r.min_ratio.min(gap / lo);
                }
            }
        }
        if r.measured == 0 {
            r.min_ratio = 0.0;
        }
        r
    }
}
