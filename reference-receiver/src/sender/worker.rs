//! The reference sender's delivery worker: the outbox pattern's loop. It
//! picks the rows that are due, in the order they were committed, and
//! delivers each in a task of its own; a 2xx marks the row delivered, a
//! status the profile gives up on (or the last attempt) marks it dead,
//! anything else schedules the next attempt after the profile's jittered
//! wait (and no sooner than a `Retry-After`), divided by the time scale.
//! Per resource, a row is first sent only once every older row of that
//! resource has been tried, so first sends follow the sequence order.
//!
//! It sleeps until the next row is due or an emit wakes it. The crash
//! points sit where the pattern is fragile: `crash-before-post`
//! after the commit and before the POST, `crash-before-mark` after the
//! 2xx and before the row is marked.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::Rng;
use tokio::sync::{watch, Notify};

use hookstorm::profile::signature::Secret;
use hookstorm::profile::Profile;

use super::defect::SenderDefect;
use super::deliver::{self, Attempt, HttpClient, Sent};
use super::outbox::{Outbox, Row};
use crate::failpoint::{Failpoints, Point};

/// Attempts the `gives-up-early` variant makes.
const EARLY_GIVE_UP: u32 = 3;

/// The longest the worker sleeps without looking.
const IDLE: Duration = Duration::from_millis(200);

/// What the worker delivers with.
pub struct Worker {
    /// The outbox.
    pub outbox: Arc<Outbox>,
    /// The contract it keeps.
    pub profile: Profile,
    /// Per account, the secrets it signs with.
    pub secrets: BTreeMap<String, Vec<Secret>>,
    /// Waits are divided by this.
    pub time_scale: f64,
    /// One attempt may take this long.
    pub timeout: Duration,
    /// Seeds the jitter.
    pub seed: u64,
    /// A deliberately broken variant.
    pub defect: Option<SenderDefect>,
    /// Crash points.
    pub failpoints: Arc<Failpoints>,
    /// Wakes the loop (an emit, a finished attempt).
    pub wake: Arc<Notify>,
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// A fresh delivery id.
pub fn new_id() -> String {
    format!("whd_{:016x}", rand::thread_rng().gen::<u64>())
}

impl Worker {
    fn scaled(&self, d: Duration) -> Duration {
        d.div_f64(self.time_scale.max(1e-9))
    }

    /// Runs until `stop` turns true.
    pub async fn run(self: Arc<Self>, mut stop: watch::Receiver<bool>) {
        let client = deliver::client();
        let in_flight: Arc<Mutex<HashSet<i64>>> = Arc::default();
        // Rows whose attempt finished (its outcome written): they leave
        // `in_flight` only before the next read of the outbox, so a read
        // taken while an attempt ran never starts that row again.
        let finished: Arc<Mutex<Vec<i64>>> = Arc::default();
        loop {
            if *stop.borrow() {
                return;
            }
            {
                let mut done = finished.lock().unwrap_or_else(|p| p.into_inner());
                let mut flying = in_flight.lock().unwrap_or_else(|p| p.into_inner());
                for seq in done.drain(..) {
                    flying.remove(&seq);
                }
            }
            let newest_first = self.defect == Some(SenderDefect::Unordered);
            let due = self.outbox.due(now_ms(), newest_first).unwrap_or_default();
            let mut waiting = Vec::new();
            for row in due {
                if in_flight
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .contains(&row.seq)
                {
                    waiting.push(row.seq);
                    continue;
                }
                if row.attempts == 0 && !newest_first {
                    if let Some(r) = &row.resource {
                        if self.outbox.unsent_before(r, row.seq).unwrap_or(false) {
                            waiting.push(row.seq);
                            continue;
                        }
                    }
                }
                waiting.push(row.seq);
                in_flight
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(row.seq);
                if newest_first {
                    // Broken, and certain about it: one at a time, newest
                    // first, so the receiver sees the order this worker
                    // chose. Spawned side by side, the runtime once ran
                    // them oldest first and the bug went unseen.
                    let seq = row.seq;
                    self.deliver(&client, row).await;
                    finished.lock().unwrap_or_else(|p| p.into_inner()).push(seq);
                    continue;
                }
                let (me, client, finished) = (self.clone(), client.clone(), finished.clone());
                tokio::spawn(async move {
                    let seq = row.seq;
                    me.deliver(&client, row).await;
                    finished.lock().unwrap_or_else(|p| p.into_inner()).push(seq);
                    me.wake.notify_one();
                });
            }
            // What is in flight or waits on an older row wakes the loop
            // when it is done; the rest is due when it says.
            let sleep = match self.outbox.next_due(&waiting).unwrap_or(None) {
                Some(at) => {
                    Duration::from_millis((at - now_ms()).clamp(1, IDLE.as_millis() as i64) as u64)
                }
                None => IDLE,
            };
            tokio::select! {
                _ = tokio::time::sleep(sleep) => {}
                _ = self.wake.notified() => {}
                _ = stop.changed() => {}
            }
        }
    }

    /// One attempt of `row`, and what it leaves in the outbox.
    async fn deliver(&self, client: &HttpClient, mut row: Row) {
        let n = row.attempts + 1;
        if self.defect == Some(SenderDefect::SendsReserialisedBody) {
            // Broken: the body parsed and written again, signed and sent
            // as written (other key order and escapes than emitted).
            if let Ok(v) = serde_json::from_slice::<serde_json::Value>(&row.body) {
                row.body = serde_json::to_vec(&v).unwrap_or(row.body);
            }
        }
        let now_s = chrono::Utc::now().timestamp();
        let timestamp = match (self.defect, row.signed_at) {
            (Some(SenderDefect::ReusesTimestamp), Some(t)) => t,
            _ => now_s,
        };
        if row.signed_at.is_none() {
            let _ = self.outbox.set_signed_at(row.seq, timestamp);
        }
        let fresh;
        let delivery_id = if self.defect == Some(SenderDefect::NewIdPerRetry) && n > 1 {
            fresh = new_id();
            fresh.as_str()
        } else {
            row.delivery_id.as_str()
        };
        let no_secrets = Vec::new();
        let attempt = Attempt {
            row: &row,
            delivery_id,
            timestamp,
            secrets: self.secrets.get(&row.account).unwrap_or(&no_secrets),
        };
        let headers = deliver::headers(&self.profile, &attempt, self.defect);
        if self.defect == Some(SenderDefect::DeliveredBeforePost) {
            let _ = self.outbox.delivered(row.seq, n);
        }
        // The row is committed; the POST has not been made.
        self.failpoints.hit(Point::CrashBeforePost);
        let timeout = (self.defect != Some(SenderDefect::NoTimeout)).then_some(self.timeout);
        let follow = self.defect == Some(SenderDefect::FollowsRedirects);
        let sent = deliver::send(client, &row.url, &headers, &row.body, timeout, follow).await;
        match sent {
            Sent::Answer { status, .. } if self.profile.is_success(status) => {
                // The 2xx is in; the row is not marked yet.
                self.failpoints.hit(Point::CrashBeforeMark);
                let _ = self.outbox.delivered(row.seq, n);
            }
            Sent::Answer { status, .. }
                if self.profile.gives_up_on(status)
                    && self.defect != Some(SenderDefect::RetriesOn4xx) =>
            {
                let _ = self
                    .outbox
                    .dead(row.seq, n, &format!("HTTP {status}: final"));
            }
            other => {
                let (error, retry_after) = match other {
                    Sent::Answer {
                        status,
                        retry_after,
                    } => (format!("HTTP {status}"), retry_after),
                    Sent::Failed(e) => (e, None),
                };
                let max = match self.defect {
                    Some(SenderDefect::GivesUpEarly) => EARLY_GIVE_UP,
                    _ => self.profile.schedule.max_attempts,
                };
                if n >= max {
                    let _ = self.outbox.dead(row.seq, n, &error);
                    return;
                }
                let wait = self.wait_before(&row, n + 1, retry_after);
                let _ =
                    self.outbox
                        .retry_at(row.seq, n, now_ms() + wait.as_millis() as i64, &error);
            }
        }
    }

    /// The wait before attempt `next`: the schedule's, jittered (seeded by
    /// the event and the attempt), at least `Retry-After`, scaled.
    fn wait_before(&self, row: &Row, next: u32, retry_after: Option<u64>) -> Duration {
        let schedule = &self.profile.schedule;
        let wait = if self.defect == Some(SenderDefect::NoJitter) {
            schedule.base_wait(next).unwrap_or_default()
        } else {
            let mut rng = hookstorm::plan::rng_for(self.seed, &row.key, "jitter", u64::from(next));
            schedule.draw_wait(next, &mut rng).unwrap_or_default()
        };
        let wait = match retry_after {
            Some(s) if self.defect != Some(SenderDefect::IgnoresRetryAfter) => {
                wait.max(Duration::from_secs(s))
            }
            _ => wait,
        };
        self.scaled(wait)
    }
}
