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
//!
//! A cut that must meet a delivery the receiver sees again (a retry, a
//! copy, a redelivery) counts *repeats* too: with
//! [`TrafficGauge::remember_deliveries`] the gauge keeps the deliveries
//! answered so far (at most [`REMEMBERED`], forgotten all at once when
//! full), and an answer inside the window to a delivery answered before is
//! a repeat ([`WindowCount::repeats`]).
//!
//! The receiver's own downtime is a second window: the nemesis marks it
//! [`TrafficGauge::receiver_down`] just before it kills the receiver and
//! [`TrafficGauge::receiver_up`] once the restarted one is ready. An
//! exchange that overlaps it and got no answer was cut off by the harness,
//! not by the receiver ([`Ticket::overlaps_down`]), and the gauge counts it
//! ([`TrafficGauge::cut_off`]) so the nemesis knows at once whether a kill
//! met anything. The last restart's moment tells the run which
//! acknowledgements came before it.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// The most deliveries the gauge remembers as answered; past it, it
/// forgets them all and starts again (a repeat of a forgotten one is then
/// missed, and a cut waiting for repeats holds a little longer).
pub const REMEMBERED: usize = 65_536;

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
    window_repeats: AtomicU64,
    /// The deliveries answered so far, when a cut counts repeats
    /// ([`TrafficGauge::remember_deliveries`]); `None` otherwise.
    answered_deliveries: Mutex<Option<HashSet<u64>>>,
    /// Even: the receiver is up; odd: the harness has it down (killed and
    /// not yet ready again). Bumped at each change.
    down: AtomicU64,
    /// Exchanges that overlapped the harness's downtime of the receiver and
    /// ended without an answer: what the kills cut off.
    cut_off: AtomicU64,
    /// The nemesis holds the stream of first attempts while it restarts a
    /// receiver it killed ([`TrafficGauge::hold`]).
    held: AtomicBool,
    /// When the receiver last became ready again after a kill.
    last_restart: Mutex<Option<Instant>>,
    /// A moving average of answer latencies, in microseconds (0: none yet).
    latency_us: AtomicU64,
    /// The latest answer latency, in microseconds (0: none yet).
    last_latency_us: AtomicU64,
    started: Notify,
    /// Woken at every acknowledgement the sender reads.
    acked: Notify,
    /// When the sender last read an acknowledgement.
    last_ack: Mutex<Option<Instant>>,
    /// The most exchanges in flight before the stream of first attempts
    /// waits (0: no limit); set for kills ([`TrafficGauge::pace`]).
    pace: AtomicU64,
}

/// What a window saw, returned when it closes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WindowCount {
    /// Exchanges started and answered (any HTTP status) inside the window.
    pub answered: u64,
    /// Of those, answers the profile counts as success (2xx).
    pub acks: u64,
    /// Of those, answers to a delivery the receiver had answered before
    /// (counted only while the gauge remembers deliveries).
    pub repeats: u64,
}

/// One exchange in progress; dropping it without [`Ticket::answered`]
/// counts it as ended without an answer.
#[derive(Debug)]
pub struct Ticket<'a> {
    gauge: &'a TrafficGauge,
    delivery: Option<u64>,
    window: u64,
    down: u64,
    answered: bool,
}

impl TrafficGauge {
    /// A gauge with every counter at zero.
    pub fn new() -> TrafficGauge {
        TrafficGauge::default()
    }

    /// An exchange starts (the request is about to be sent).
    pub fn begin(&self) -> Ticket<'_> {
        self.begin_delivery(None)
    }

    /// An exchange of the delivery `delivery` starts (its identity as
    /// [`delivery_identity`] gives it): its answer counts as a repeat when
    /// the delivery was answered before.
    pub fn begin_delivery(&self, delivery: Option<u64>) -> Ticket<'_> {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        let window = self.window.load(Ordering::SeqCst);
        let down = self.down.load(Ordering::SeqCst);
        self.started.notify_waiters();
        Ticket {
            gauge: self,
            delivery,
            window,
            down,
            answered: false,
        }
    }

    /// The harness is about to take the receiver down (a kill).
    pub fn receiver_down(&self) {
        let d = self.down.load(Ordering::SeqCst);
        if d & 1 == 0 {
            self.down.store(d + 1, Ordering::SeqCst);
        }
    }

    /// The receiver the harness took down is ready again; `restarted` when
    /// it is a new process (a kill), not a paused one resumed.
    pub fn receiver_up(&self, restarted: bool) {
        let d = self.down.load(Ordering::SeqCst);
        if d & 1 == 1 {
            self.down.store(d + 1, Ordering::SeqCst);
            if restarted {
                *self.last_restart.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
            }
        }
    }

    /// Holds (true) or releases (false) the stream of first attempts: the
    /// nemesis holds it while a receiver it killed restarts, so the kills
    /// that follow still meet traffic however slowly the receiver starts.
    /// Retries are not held: they meet the downtime as a provider's would.
    pub fn hold(&self, held: bool) {
        self.held.store(held, Ordering::SeqCst);
    }

    /// Whether the stream of first attempts is held.
    pub fn held(&self) -> bool {
        self.held.load(Ordering::SeqCst)
    }

    /// Paces the stream of first attempts: the next waits while `max`
    /// exchanges are in flight. Kills set it, so that a receiver slower
    /// than the stream (a loaded machine, a pre-forking server) does not
    /// get the whole stream queued before the kills can place themselves
    /// in it.
    pub fn pace(&self, max: u64) {
        self.pace.store(max, Ordering::SeqCst);
    }

    /// Waits while the stream is held, or paced and full, at most `max`.
    pub async fn wait_while_held(&self, max: Duration) {
        let until = Instant::now() + max;
        let full = || {
            let pace = self.pace.load(Ordering::SeqCst);
            pace > 0 && self.in_flight.load(Ordering::SeqCst) >= pace
        };
        while (self.held.load(Ordering::SeqCst) || full()) && Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    /// When a new receiver process last became ready after the harness
    /// killed the one before, if it ever did.
    pub fn last_restart(&self) -> Option<Instant> {
        *self.last_restart.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Exchanges that overlapped the receiver's downtime and ended without
    /// an answer so far: a kill met something when this rose.
    pub fn cut_off(&self) -> u64 {
        self.cut_off.load(Ordering::SeqCst)
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

    /// The shorter of the typical and the latest answer latency, if any:
    /// what an exchange starting now likely takes (a receiver fast again
    /// after a slow spell is not waited out on the average).
    pub fn recent_latency(&self) -> Option<Duration> {
        let last = self.last_latency_us.load(Ordering::Relaxed);
        match (self.typical_latency(), last) {
            (Some(t), 0) => Some(t),
            (Some(t), l) => Some(t.min(Duration::from_micros(l))),
            (None, _) => None,
        }
    }

    /// Remembers from now on which deliveries were answered, so that the
    /// windows count repeats (a cut that must meet a delivery again).
    pub fn remember_deliveries(&self) {
        let mut set = self
            .answered_deliveries
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        set.get_or_insert_with(HashSet::new);
    }

    /// Notes that `delivery` was answered; true if it had been before.
    fn answered_again(&self, delivery: u64) -> bool {
        let mut guard = self
            .answered_deliveries
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let Some(set) = guard.as_mut() else {
            return false;
        };
        if set.len() >= REMEMBERED && !set.contains(&delivery) {
            set.clear();
        }
        !set.insert(delivery)
    }

    /// Opens a window (a database cut begins); counts restart at zero.
    pub fn open_window(&self) {
        self.window_answered.store(0, Ordering::SeqCst);
        self.window_acks.store(0, Ordering::SeqCst);
        self.window_repeats.store(0, Ordering::SeqCst);
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
            repeats: self.window_repeats.load(Ordering::SeqCst),
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

    /// When the sender last read an acknowledgement, if it did.
    pub fn last_ack(&self) -> Option<Instant> {
        *self.last_ack.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits until the sender reads an acknowledgement, or `timeout`
    /// passes; true if one was read. A kill placed by it lands the moment
    /// a receiver has answered: before an answer-then-write receiver writes.
    pub async fn wait_ack(&self, timeout: Duration) -> bool {
        let notified = self.acked.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        tokio::time::timeout(timeout, notified).await.is_ok()
    }

    /// Waits until an exchange starts, or `timeout` passes; true if one started.
    pub async fn wait_start(&self, timeout: Duration) -> bool {
        let notified = self.started.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        tokio::time::timeout(timeout, notified).await.is_ok()
    }
}

/// A delivery's identity on the gauge: its account and the event it
/// carries, so a retry, a copy, a replay under a fresh delivery id and a
/// redelivery are all the same delivery.
pub fn delivery_identity(account: &str, event: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    account.hash(&mut h);
    event.hash(&mut h);
    h.finish()
}

impl Ticket<'_> {
    /// Whether a window (a database cut) was open at any time while this
    /// exchange ran: open when it started, or opened or closed since.
    pub fn overlaps_window(&self) -> bool {
        self.window & 1 == 1 || self.gauge.window.load(Ordering::SeqCst) != self.window
    }

    /// Whether the harness had the receiver down (killed, not yet ready
    /// again) at any time while this exchange ran.
    pub fn overlaps_down(&self) -> bool {
        self.down & 1 == 1 || self.gauge.down.load(Ordering::SeqCst) != self.down
    }

    /// The exchange got an HTTP answer after `latency`; `ack` when the
    /// profile counts its status as success.
    pub fn answered(mut self, ack: bool, latency: Duration) {
        self.answered = true;
        let g = self.gauge;
        g.answered.fetch_add(1, Ordering::SeqCst);
        let again = self.delivery.is_some_and(|d| g.answered_again(d));
        if ack {
            *g.last_ack.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
            g.acks.fetch_add(1, Ordering::SeqCst);
            g.acked.notify_waiters();
        }
        // Inside the window only if it opened before the exchange started
        // and is still the same window now.
        if self.window & 1 == 1 && g.window.load(Ordering::SeqCst) == self.window {
            g.window_answered.fetch_add(1, Ordering::SeqCst);
            if ack {
                g.window_acks.fetch_add(1, Ordering::SeqCst);
            }
            if again {
                g.window_repeats.fetch_add(1, Ordering::SeqCst);
            }
        }
        // An answer that waited out a restart measures the restart, not the
        // receiver: it would stretch the pause that places the next kill
        // past the end of the exchanges it is meant to land inside.
        if self.overlaps_down() {
            return;
        }
        let us = (latency.as_micros() as u64).max(1);
        g.last_latency_us.store(us, Ordering::Relaxed);
        let old = g.latency_us.load(Ordering::Relaxed);
        let new = if old == 0 { us } else { (old * 7 + us) / 8 };
        g.latency_us.store(new.max(1), Ordering::Relaxed);
        // `Drop` takes the exchange out of flight.
    }
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        if !self.answered && self.overlaps_down() {
            self.gauge.cut_off.fetch_add(1, Ordering::SeqCst);
        }
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
                acks: 0,
                repeats: 0
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

    #[test]
    fn a_window_counts_as_repeats_only_answers_to_deliveries_answered_before() {
        let g = TrafficGauge::new();
        let (a, b) = (
            Some(delivery_identity("acct_a", "t1")),
            Some(delivery_identity("acct_a", "t2")),
        );
        g.begin_delivery(a).answered(false, MS);
        g.open_window();
        g.begin_delivery(a).answered(true, MS);
        assert_eq!(g.window_count().repeats, 0, "not remembering: no repeats");
        g.remember_deliveries();
        g.begin_delivery(a).answered(true, MS);
        g.begin_delivery(b).answered(true, MS);
        assert_eq!(g.window_count().repeats, 0, "the first answers remembered");
        let again = g.begin_delivery(b);
        drop(g.begin_delivery(a));
        again.answered(false, MS);
        assert_eq!(
            g.close_window(),
            WindowCount {
                answered: 4,
                acks: 3,
                repeats: 1
            },
            "an unanswered exchange is no repeat"
        );
        assert_ne!(
            delivery_identity("acct_a", "t1"),
            delivery_identity("acct_b", "t1")
        );
    }

    #[test]
    fn only_exchanges_that_overlap_the_receivers_downtime_overlap_it() {
        let g = TrafficGauge::new();
        let before = g.begin();
        assert!(!before.overlaps_down());
        g.receiver_down();
        let during = g.begin();
        assert!(before.overlaps_down() && during.overlaps_down());
        assert!(g.last_restart().is_none());
        g.receiver_up(true);
        assert!(g.last_restart().is_some());
        let after = g.begin();
        assert!(during.overlaps_down());
        assert!(!after.overlaps_down());
    }

    #[test]
    fn only_exchanges_left_unanswered_across_the_downtime_are_cut_off() {
        let g = TrafficGauge::new();
        let answered_across = g.begin();
        let dropped_across = g.begin();
        let dropped_before = g.begin();
        drop(dropped_before);
        g.receiver_down();
        g.receiver_up(true);
        answered_across.answered(true, Duration::from_secs(3));
        assert_eq!(g.cut_off(), 0);
        assert_eq!(g.typical_latency(), None, "a restart is not an answer time");
        drop(dropped_across);
        drop(g.begin());
        assert_eq!(g.cut_off(), 1);
    }

    #[tokio::test]
    async fn a_held_stream_waits_until_it_is_released() {
        let g = std::sync::Arc::new(TrafficGauge::new());
        g.wait_while_held(Duration::from_secs(5)).await;
        g.hold(true);
        let g2 = g.clone();
        let t = tokio::spawn(async move { g2.wait_while_held(Duration::from_secs(5)).await });
        tokio::time::sleep(30 * MS).await;
        assert!(!t.is_finished());
        g.hold(false);
        tokio::time::timeout(Duration::from_secs(1), t)
            .await
            .expect("released")
            .unwrap();
    }

    #[tokio::test]
    async fn a_paced_stream_waits_while_its_limit_is_in_flight() {
        let g = std::sync::Arc::new(TrafficGauge::new());
        let first = g.begin();
        g.wait_while_held(Duration::from_secs(5)).await;
        g.pace(1);
        let g2 = g.clone();
        let t = tokio::spawn(async move { g2.wait_while_held(Duration::from_secs(5)).await });
        tokio::time::sleep(30 * MS).await;
        assert!(!t.is_finished(), "one in flight: the next waits");
        first.answered(true, MS);
        tokio::time::timeout(Duration::from_secs(1), t)
            .await
            .expect("room again")
            .unwrap();
    }

    #[tokio::test]
    async fn a_waiting_nemesis_wakes_the_moment_an_acknowledgement_is_read() {
        let g = std::sync::Arc::new(TrafficGauge::new());
        assert!(!g.wait_ack(5 * MS).await);
        assert!(g.last_ack().is_none());
        let g2 = g.clone();
        let t = tokio::spawn(async move { g2.wait_ack(Duration::from_secs(5)).await });
        tokio::time::sleep(20 * MS).await;
        g.begin().answered(false, MS);
        tokio::time::sleep(20 * MS).await;
        assert!(!t.is_finished(), "a refusal is no acknowledgement");
        g.begin().answered(true, MS);
        assert!(t.await.unwrap());
        assert!(g
            .last_ack()
            .is_some_and(|at| at.elapsed() < Duration::from_secs(1)));
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
