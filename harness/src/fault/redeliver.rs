//! The provider dashboard's redelivery desk: who may be redelivered, and how
//! often.
//!
//! `docs/contract.md`: only a delivered or dead delivery can be redelivered (a
//! pending one is refused), and redeliveries are limited per account per
//! hour (100 by default). The hour is scaled by the run's time scale like
//! every other wait, so a compressed run can reach the limit in seconds.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Where a delivery stands when a redelivery is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// Still being retried automatically.
    Pending,
    /// Acknowledged.
    Delivered,
    /// Ran out of attempts.
    Dead,
}

/// Why a redelivery request was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The delivery is still pending.
    #[error("the delivery is still pending; only delivered or dead deliveries can be redelivered")]
    Pending,
    /// The account used up its hourly allowance; a slot frees after `retry_in` (scaled).
    #[error("hourly redelivery limit of {limit} reached for this account")]
    HourlyLimit {
        /// The limit.
        limit: u32,
        /// How long (real, already scaled) until a slot frees.
        retry_in: Duration,
    },
}

/// The desk: one per scenario run.
#[derive(Debug)]
pub struct Desk {
    limit: u32,
    hour: Duration,
    granted: Mutex<HashMap<String, VecDeque<Instant>>>,
}

impl Desk {
    /// A desk allowing `limit` redeliveries per account per hour, with the
    /// hour divided by `time_scale`.
    pub fn new(limit: u32, time_scale: f64) -> Desk {
        let scale = if time_scale.is_finite() && time_scale > 0.0 {
            time_scale
        } else {
            1.0
        };
        Desk {
            limit: limit.max(1),
            hour: Duration::from_secs(3600).div_f64(scale),
            granted: Mutex::new(HashMap::new()),
        }
    }

    /// Asks to redeliver a delivery of `account` that stands as `standing`.
    pub fn request(&self, account: &str, standing: Standing) -> Result<(), Refusal> {
        self.request_at(account, standing, Instant::now())
    }

    fn request_at(&self, account: &str, standing: Standing, now: Instant) -> Result<(), Refusal> {
        if standing == Standing::Pending {
            return Err(Refusal::Pending);
        }
        let mut map = self.granted.lock().unwrap_or_else(|p| p.into_inner());
        let q = map.entry(account.to_string()).or_default();
        while q
            .front()
            .is_some_and(|t| now.duration_since(*t) >= self.hour)
        {
            q.pop_front();
        }
        if q.len() as u32 >= self.limit {
            let oldest = *q.front().expect("the limit is at least 1");
            return Err(Refusal::HourlyLimit {
                limit: self.limit,
                retry_in: self.hour.saturating_sub(now.duration_since(oldest)),
            });
        }
        q.push_back(now);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pending_delivery_cannot_be_redelivered() {
        let d = Desk::new(100, 1.0);
        assert_eq!(d.request("a", Standing::Pending), Err(Refusal::Pending));
        assert!(d.request("a", Standing::Dead).is_ok());
        assert!(d.request("a", Standing::Delivered).is_ok());
    }

    #[test]
    fn the_hourly_limit_is_per_account_and_frees_after_a_scaled_hour() {
        let d = Desk::new(2, 3600.0); // an hour lasts one second
        let t0 = Instant::now();
        assert!(d.request_at("a", Standing::Dead, t0).is_ok());
        assert!(d.request_at("a", Standing::Dead, t0).is_ok());
        match d.request_at("a", Standing::Dead, t0 + Duration::from_millis(400)) {
            Err(Refusal::HourlyLimit { limit: 2, retry_in }) => {
                assert_eq!(retry_in, Duration::from_millis(600))
            }
            other => panic!("{other:?}"),
        }
        assert!(d.request_at("b", Standing::Dead, t0).is_ok());
        assert!(d
            .request_at("a", Standing::Dead, t0 + Duration::from_secs(1))
            .is_ok());
    }
}
