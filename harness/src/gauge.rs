//! The traffic gauge: what the sender is doing right now, for the nemesis.
//!
//! Process and database faults only test something when they meet traffic:
//! a kill must land while a request is in flight, a database cut must last
//! until the receiver has had to answer while its database was gone. The
//! sender updates this gauge around every exchange (a few atomic counters,
//! no lock) and [`crate::fault::nemesis`] reads it to place its faults. The gauge
//! decides nothing; it only counts.
//!
//! A cut is a *window*: [`TrafficGauge::open_window`] starts it and
//! [`TrafficGauge::close_window`] ends it. An exchange counts as answered
//! inside the window only when it started after the window opened and got
//! an HTTP answer before it closed, so an answer to a request the receiver
//! had already handled before the cut never counts.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

/// Counters of the sender's exchanges, shared with the nemesis.
#[derive(Debug, Default)]
pub struct TrafficGauge {
    in_flight: AtomicU64,
    answered: AtomicU64,
    acks: AtomicU64,
    /// Even: no window open; odd: a window is open. Bumped at each change.
    window: AtomicU64,
    window_answered: AtomicU64,
    window_acks: AtomicU64,
    /// A moving average of answer latencies, in microseconds (0: none yet).
    latency_us: AtomicU64,
    started: Notify,
}

/// What a window saw, returned when it closes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WindowCount {
    /// Exchanges started and answered (any HTTP status) inside the window.
    pub answered: u64,
    /// Of those, answers the profile counts as success (2xx).
    pub acks: u64,
}

/// One exchange in progress; dropping it without [`Ticket::answered`]
/// counts it as ended without an answer.
#[derive(Debug)]
pub struct Ticket<'a> {
    gauge: &'a TrafficGauge,
    window: u64,
}

impl TrafficGauge {
    /// A gauge with every counter at zero.
    pub fn new() -> TrafficGauge {
        TrafficGauge::default()
    }

    /// An exchange starts (the request is about to be sent).
    pub fn begin(&self) -> Ticket<'_> {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        let window = self.window.load(Ordering::SeqCst);
        self.started.notify_waiters();
        Ticket {
            gauge: self,
            window,
        }
    }

    /// Exchanges in flight now.
    pub fn in_flight(&self) -> u64 {
        self.in_flight.load(Ordering::SeqCst)
    }

    /// Exchanges answered with any HTTP status so far.
    pub fn answered(&self) -> u64 {
        self.answered.load(Ordering::SeqCst)
    }

    /// Exchanges answered with a success status so far.
    pub fn acks(&self) -> u64 {
        self.acks.load(Ordering::SeqCst)
    }

    /// The typical answer latency seen so far (a moving average), if any.
    pub fn typical_latency(&self) -> Option<Duration> {
        match self.latency_us.load(Ordering::Relaxed) {
            0 => None,
            us => Some(Duration::from_micros(us)),
        }
    }

    /// Opens a window (a database cut begins); counts restart at zero.
    pub fn open_window(&self) {
        self.window_answered.store(0, Ordering::SeqCst);
        self.window_acks.store(0, Ordering::SeqCst);
        let w = self.window.load(Ordering::SeqCst);
        if w & 1 == 0 {
            self.window.store(w + 1, Ordering::SeqCst);
        }
    }

    /// What the open window has seen so far.
    pub fn window_count(&self) -> WindowCount {
        WindowCount {
            answered: self.window_answered.load(Ordering::SeqCst),
            acks: self.window_acks.load(Ordering::SeqCst),
        }
    }

    /// Closes the window and returns what it saw.
    pub fn close_window(&self) -> WindowCount {
        let w = self.window.load(Ordering::SeqCst);
        if w & 1 == 1 {
            self.window.store(w + 1, Ordering::SeqCst);
        }
        self.window_count()
    }

    /// Waits until an exchange starts, or `timeout` passes; true if one started.
    pub async fn wait_start(&self, timeout: Duration) -> bool {
        let notified = self.started.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        tokio::time::timeout(timeout, notified).await.is_ok()
    }
}

impl Ticket<'_> {
    /// Whether a window (a database cut) was open at any time while this
    /// exchange ran: open when it started, or opened or closed since.
    pub fn overlaps_window(&self) -> bool {
        self.window & 1 == 1 || self.gauge.window.load(Ordering::SeqCst) != self.window
    }

    /// The exchange got an HTTP answer after `latency`; `ack` when the
    /// profile counts its status as success.
    pub fn answered(self, ack: bool, latency: Duration) {
        let g = self.gauge;
        g.answered.fetch_add(1, Ordering::SeqCst);
        if ack {
            g.acks.fetch_add(1, Ordering::SeqCst);
        }
        // Inside the window only if it opened before the exchange started
        // and is still the same window now.
        if self.window & 1 == 1 && g.window.load(Ordering::SeqCst) == self.window {
            g.window_answered.fetch_add(1, Ordering::SeqCst);
            if ack {
                g.window_acks.fetch_add(1, Ordering::SeqCst);
            }
        }
        let us = (latency.as_micros() as u64).max(1);
        let old = g.latency_us.load(Ordering::Relaxed);
        let new = if old == 0 { us } else { (old * 7 + us) / 8 };
        g.latency_us.store(new.max(1), Ordering::Relaxed);
        // `Drop` takes the exchange out of flight.
    }
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        self.gauge.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn only_exchanges_started_and_answered_inside_the_window_count() {
        let g = TrafficGauge::new();
        let before = g.begin();
        g.open_window();
        let inside = g.begin();
        let unanswered = g.begin();
        assert_eq!(g.in_flight(), 3);
        before.answered(true, MS);
        inside.answered(false, MS);
        drop(unanswered);
        assert_eq!(g.in_flight(), 0);
        let late = g.begin();
        let seen = g.close_window();
        late.answered(true, MS);
        assert_eq!(
            seen,
            WindowCount {
                answered: 1,
                acks: 0
            }
        );
        assert_eq!((g.answered(), g.acks()), (3, 2));
    }

    #[test]
    fn a_new_window_starts_from_zero_and_old_exchanges_do_not_leak_into_it() {
        let g = TrafficGauge::new();
        g.open_window();
        let first = g.begin();
        g.begin().answered(true, MS);
        assert_eq!(g.close_window().acks, 1);
        g.open_window();
        first.answered(true, MS);
        assert_eq!(g.window_count(), WindowCount::default());
    }

    #[tokio::test]
    async fn a_waiting_nemesis_wakes_when_an_exchange_starts() {
        let g = std::sync::Arc::new(TrafficGauge::new());
        assert!(!g.wait_start(5 * MS).await);
        let g2 = g.clone();
        let t = tokio::spawn(async move { g2.wait_start(Duration::from_secs(5)).await });
        tokio::time::sleep(20 * MS).await;
        let _ticket = g.begin();
        assert!(t.await.unwrap());
        assert!(g.typical_latency().is_none());
    }
}
