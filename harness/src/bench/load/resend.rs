//! A bench under faults: the traffic gauge the nemesis places its kills
//! and cuts by, and the resends of what they made fail.
//!
//! A bench sends each delivery once, but under faults (`--fault`) a
//! delivery that got no answer, a 5xx, a 408 or a 429 is sent again after
//! [`RESEND_AFTER`], up to [`MAX_RESENDS`] times, as a provider retries it
//! (sooner: a bench lasts seconds, not the provider's hours). A receiver
//! killed between its commit and its acknowledgement so meets the same
//! event again after its restart, and the check after the bench proves it
//! was processed once. Nothing is sent, first or again, while the nemesis
//! holds the stream (a killed receiver restarting): the bench measures the
//! receiver, not the harness's downtime of it.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::fault::gauge::TrafficGauge;

/// How long after a failed send a delivery is sent again.
pub const RESEND_AFTER: Duration = Duration::from_millis(250);

/// Resends of one delivery at most.
pub const MAX_RESENDS: u32 = 3;

/// What the workers of a bench under faults share with the nemesis.
#[derive(Debug)]
pub struct UnderFaults {
    /// What the sender is doing, for the nemesis.
    pub gauge: Arc<TrafficGauge>,
    /// Deliveries to send again: (slot, sends so far, due), in due order.
    queue: Mutex<VecDeque<(u64, u32, Instant)>>,
    /// How many wait in `queue`: a worker looks here, not at the lock,
    /// before every send while nothing waits.
    waiting: AtomicU64,
    /// Resends sent.
    resent: AtomicU64,
    /// Deliveries whose resends ran out unacknowledged.
    exhausted: AtomicU64,
}

impl UnderFaults {
    /// Workers that report to `gauge` and resend what failed.
    pub fn new(gauge: Arc<TrafficGauge>) -> UnderFaults {
        UnderFaults {
            gauge,
            queue: Mutex::default(),
            waiting: AtomicU64::new(0),
            resent: AtomicU64::new(0),
            exhausted: AtomicU64::new(0),
        }
    }

    /// The next delivery due to be sent again at `now`, with the sends it
    /// had before: taken off the queue.
    pub(super) fn due(&self, now: Instant) -> Option<(u64, u32)> {
        if self.waiting.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let mut q = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        match q.front() {
            Some(&(slot, sends, due)) if due <= now => {
                q.pop_front();
                self.waiting.fetch_sub(1, Ordering::Relaxed);
                self.resent.fetch_add(1, Ordering::Relaxed);
                Some((slot, sends))
            }
            _ => None,
        }
    }

    /// Slot `slot` failed on its send number `sends` (1 for the first):
    /// sent again later while resends remain.
    pub(super) fn failed(&self, slot: u64, sends: u32) {
        if sends > MAX_RESENDS {
            self.exhausted.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let due = Instant::now() + RESEND_AFTER;
        let mut q = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        q.push_back((slot, sends, due));
        self.waiting.fetch_add(1, Ordering::Relaxed);
    }

    /// What the resends did: sent, still waiting when the bench ended, and
    /// ran out unacknowledged.
    pub fn counts(&self) -> ResendCounts {
        ResendCounts {
            resent: self.resent.load(Ordering::Relaxed),
            left: self.waiting.load(Ordering::Relaxed),
            exhausted: self.exhausted.load(Ordering::Relaxed),
        }
    }
}

/// What the resends of a bench under faults did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ResendCounts {
    /// Resends sent.
    pub resent: u64,
    /// Deliveries still waiting for a resend when the bench ended.
    pub left: u64,
    /// Deliveries whose resends ran out unacknowledged.
    pub exhausted: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_delivery_comes_back_after_the_pause_until_its_resends_run_out() {
        let u = UnderFaults::new(Arc::new(TrafficGauge::new()));
        u.failed(7, 1);
        assert_eq!(u.due(Instant::now()), None, "not before RESEND_AFTER");
        assert_eq!(u.due(Instant::now() + RESEND_AFTER), Some((7, 1)));
        u.failed(7, MAX_RESENDS + 1);
        assert_eq!(
            u.counts(),
            ResendCounts {
                resent: 1,
                left: 0,
                exhausted: 1
            }
        );
    }
}
