//! A sink's history as the sender invariants read it: per event, what the
//! harness asked the sender to emit and every request that arrived for it,
//! in arrival order, with the answer the sink gave; and the rules of the
//! profile the sender is judged by, at the run's time scale. A sink's
//! history is small (hundreds of lines), so it is held whole.

use std::collections::HashMap;
use std::time::Duration;

use super::rules::{RESTART_MARGIN_S, STALL_MARGIN_S};
use crate::check::verdict::Evidence;
use crate::history::{Attempt, Emitted, Event, Outcome, Received};
use crate::invariant::InvariantId;
use crate::profile::Profile;
use crate::scenario::answer::Answer;
use crate::tag::FaultName;

/// What the sender is judged by.
#[derive(Debug, Clone)]
pub struct SenderRules {
    /// The invariants to grade.
    pub invariants: Vec<InvariantId>,
    /// The profile the sender documents.
    pub profile: Profile,
    /// Real waits were divided by this.
    pub time_scale: f64,
    /// The timeout the sender was told to keep (the profile's, compressed).
    pub timeout: Duration,
}

impl SenderRules {
    /// A base wait (or `Retry-After`) of the contract, in milliseconds at
    /// the run's time scale.
    pub fn scaled_ms(&self, d: Duration) -> f64 {
        let scale = if self.time_scale > 0.0 {
            self.time_scale
        } else {
            1.0
        };
        d.as_secs_f64() * 1000.0 / scale
    }

    /// The timeout in milliseconds.
    pub fn timeout_ms(&self) -> f64 {
        self.timeout.as_secs_f64() * 1000.0
    }

    /// The window attempt `n` (2..) must arrive in, in milliseconds after
    /// the end of the attempt before it: the schedule's jitter range for
    /// its base wait, moved up to a `Retry-After` of `retry_after` seconds
    /// (as the profile's `[sender]` says it treats one), and to the
    /// profile's least wait after a timeout when the attempt before timed
    /// out; widened by the sender's timer resolution. `None` past the
    /// profile's last attempt.
    pub fn window(
        &self,
        n: u32,
        retry_after: Option<u64>,
        after_timeout: bool,
    ) -> Option<(f64, f64)> {
        let schedule = &self.profile.schedule;
        let timing = &self.profile.sender;
        let base = schedule.base_wait(n)?;
        let (lo, hi) = schedule.jitter.range(base);
        let (mut lo, mut hi) = (self.scaled_ms(lo), self.scaled_ms(hi));
        let asked = retry_after.and_then(|r| timing.retry_after.wait(Duration::from_secs(r), base));
        if let Some(r) = asked {
            let (rlo, rhi) = match timing.retry_after {
                // A capped wait is jittered as the schedule is.
                crate::profile::RetryAfter::Capped(_) => schedule.jitter.range(r),
                _ => (r, r),
            };
            lo = lo.max(self.scaled_ms(rlo));
            hi = hi.max(self.scaled_ms(rhi));
        }
        if let (true, Some(min)) = (after_timeout, timing.min_wait_after_timeout) {
            let min = self.scaled_ms(min);
            if min > lo {
                hi = hi.max(min + (hi - lo));
                lo = min;
            }
        }
        if let Some(res) = timing.timer_resolution {
            let res = res.as_secs_f64() * 1000.0;
            lo = (lo - res).max(0.0);
            hi += res;
        }
        Some((lo, hi))
    }

    /// Whether the profile promises anything about `Retry-After` (S3).
    pub fn promises_retry_after(&self) -> bool {
        self.profile.sender.retry_after != crate::profile::RetryAfter::NotPromised
    }

    /// Whether the jitter's spread can be judged: not when the sender's
    /// timers are coarser than the window.
    pub fn judges_jitter(&self) -> bool {
        self.profile.sender.timer_resolution.is_none()
    }
}

/// One request from the sender, as the sink saw it.
#[derive(Debug, Clone, Copy)]
pub struct Seen<'a> {
    /// Its history line.
    pub line: u64,
    /// The attempt line.
    pub attempt: &'a Attempt,
    /// What the sink saw and did.
    pub got: &'a Received,
    /// The scripted answer, read back.
    pub answer: Option<Answer>,
}

impl Seen<'_> {
    /// The sink answered a 2xx that the sender took in full (it did not
    /// close before it).
    pub fn acknowledged(&self) -> bool {
        self.attempt.outcome == Outcome::Ok
    }

    /// The answer was final under the profile: acknowledged, or a status
    /// it gives up on, answered in full.
    pub fn is_final(&self, profile: &Profile) -> bool {
        self.acknowledged()
            || (!self.got.closed_early
                && self.attempt.status.is_some_and(|s| profile.gives_up_on(s)))
    }

    /// Whether the sender gave up waiting for this answer (a held or slow
    /// answer it closed before): its timeout fired.
    pub fn timed_out(&self) -> bool {
        self.got.closed_early && matches!(self.answer, Some(Answer::Hang | Answer::Slow(_)))
    }

    /// What the sink answered, in words.
    pub fn said(&self) -> String {
        match self.answer {
            Some(a) => a.to_string(),
            None => self.got.answer.clone(),
        }
    }
}

/// One event: what was emitted and what arrived for it.
#[derive(Debug)]
pub struct EventView<'a> {
    /// The account.
    pub account: &'a str,
    /// The event's identity.
    pub key: &'a str,
    /// What the harness asked for, with its line; `None` for an identity
    /// the harness never emitted.
    pub emitted: Option<(u64, &'a Emitted)>,
    /// The requests to the registered URL, in arrival order.
    pub attempts: Vec<Seen<'a>>,
    /// The requests to a redirect's `Location`, in arrival order.
    pub followed: Vec<Seen<'a>>,
    /// Immediate re-sends after a reset that the profile counts as the
    /// attempt before ([`Received::resent`]): judged for identity and
    /// signature, not as retries.
    pub resent: Vec<Seen<'a>>,
}

impl<'a> EventView<'a> {
    /// Every request that arrived for it: its attempts, the requests
    /// that followed a redirect, and the re-sends counted as an attempt.
    pub fn requests(&self) -> impl Iterator<Item = &Seen<'a>> {
        self.attempts
            .iter()
            .chain(&self.followed)
            .chain(&self.resent)
    }

    /// When the exchange of attempt `i` (0-based) ended as the sender saw
    /// it, in milliseconds: a held request ends at the timeout at the
    /// latest (the sender's own timer), a followed redirect at the end of
    /// the request that followed it.
    pub fn end_of(&self, i: usize, rules: &SenderRules) -> f64 {
        let a = &self.attempts[i];
        let mut end = exchange_end(a.answer, a.got, rules.timeout_ms());
        let next = self.attempts.get(i + 1).map(|n| n.got.at_ms);
        for f in &self.followed {
            if f.got.at_ms >= a.got.at_ms && next.is_none_or(|n| f.got.at_ms < n) {
                end = end.max(f.got.end_ms);
            }
        }
        end
    }

    /// Its first final answer, if any: (index, the request).
    pub fn first_final(&self, profile: &Profile) -> Option<(usize, &Seen<'_>)> {
        self.attempts
            .iter()
            .enumerate()
            .find(|(_, s)| s.is_final(profile))
    }

    /// Whether any attempt was acknowledged.
    pub fn acknowledged(&self) -> bool {
        self.attempts.iter().any(Seen::acknowledged)
    }

    /// Evidence about this event: `what`, at history `lines`.
    pub fn evidence(&self, what: String, lines: Vec<u64>) -> Evidence {
        Evidence {
            key: self.key.to_string(),
            account: Some(self.account.to_string()),
            what,
            lines_total: lines.len(),
            lines,
        }
    }

    /// The lines of its attempts, at most `n`.
    pub fn lines(&self, n: usize) -> Vec<u64> {
        self.attempts.iter().take(n).map(|s| s.line).collect()
    }
}

/// Unix seconds of when an exchange ended.
pub fn unix_end(s: &Seen<'_>) -> f64 {
    s.got.arrived_unix + (s.got.end_ms - s.got.at_ms) / 1000.0
}

/// Unix seconds of an RFC 3339 time.
fn unix_of(at: &str) -> Option<f64> {
    chrono::DateTime::parse_from_rfc3339(at)
        .ok()
        .map(|t| t.timestamp_millis() as f64 / 1000.0)
}

/// The whole history, by event.
#[derive(Debug, Default)]
pub struct SinkView<'a> {
    /// When the harness killed the sender or saw it crash (unix seconds),
    /// from the history's `kill` lines.
    pub kills: Vec<f64>,
    /// When the sink itself was not scheduled: `[from, to]` in unix
    /// seconds, from the history's `sink-stall` lines.
    pub stalls: Vec<[f64; 2]>,
    /// Every event, in the order its first line came: emitted ones carry
    /// their emit line, identities never emitted none.
    pub events: Vec<EventView<'a>>,
    /// Attempt lines.
    pub attempts: usize,
    /// The lines of foreign traffic ([`Received::foreign`]): requests
    /// tied to no emitted event and signed with no account's secret,
    /// which no invariant charges to the sender.
    pub foreign: Vec<u64>,
}

impl<'a> SinkView<'a> {
    /// Groups a scenario's history lines by (account, key).
    pub fn of(events: &'a [(u64, Event)]) -> SinkView<'a> {
        let mut view = SinkView::default();
        let mut index: HashMap<(&str, &str), usize> = HashMap::new();
        for (line, e) in events {
            match e {
                Event::Emit(em) => {
                    // A sender may deliver before the emit call returns,
                    // so an event's first attempts can precede its line.
                    let k = (em.account.as_str(), em.key.as_str());
                    match index.get(&k) {
                        Some(&i) => {
                            if view.events[i].emitted.is_none() {
                                view.events[i].emitted = Some((*line, em));
                            }
                        }
                        None => {
                            index.insert(k, view.events.len());
                            view.events.push(EventView {
                                account: &em.account,
                                key: &em.key,
                                emitted: Some((*line, em)),
                                attempts: Vec::new(),
                                followed: Vec::new(),
                                resent: Vec::new(),
                            });
                        }
                    }
                }
                Event::Attempt(a) => {
                    let Some(got) = a.sink.as_deref() else {
                        continue;
                    };
                    if got.foreign {
                        view.foreign.push(*line);
                        continue;
                    }
                    view.attempts += 1;
                    let k = (a.account.as_str(), a.key.as_str());
                    let i = *index.entry(k).or_insert_with(|| {
                        view.events.push(EventView {
                            account: &a.account,
                            key: &a.key,
                            emitted: None,
                            attempts: Vec::new(),
                            followed: Vec::new(),
                            resent: Vec::new(),
                        });
                        view.events.len() - 1
                    });
                    let seen = Seen {
                        line: *line,
                        attempt: a,
                        got,
                        answer: got.answer.parse().ok(),
                    };
                    if got.followed {
                        view.events[i].followed.push(seen);
                    } else if got.resent {
                        view.events[i].resent.push(seen);
                    } else {
                        view.events[i].attempts.push(seen);
                    }
                }
                Event::Fault(f) if f.fault == FaultName::Kill => {
                    if let Some(t) = unix_of(&f.at) {
                        view.kills.push(t);
                    }
                }
                Event::Fault(f) if f.fault == FaultName::SinkStall => {
                    let ms = f.detail.as_deref().and_then(|d| d.parse::<f64>().ok());
                    if let (Some(t), Some(ms)) = (unix_of(&f.at), ms) {
                        view.stalls.push([t - ms / 1000.0, t]);
                    }
                }
                _ => {}
            }
        }
        for e in &mut view.events {
            e.attempts
                .sort_by(|a, b| a.got.at_ms.total_cmp(&b.got.at_ms));
            e.followed
                .sort_by(|a, b| a.got.at_ms.total_cmp(&b.got.at_ms));
        }
        view
    }

    /// Whether the sender was killed (or crashed) after `first` arrived
    /// (less [`RESTART_MARGIN_S`]) and before `then` did: what `then` did
    /// is the restarted sender's, not held to what `first` got.
    pub fn restarted_between(&self, first: &Seen<'_>, then: &Seen<'_>) -> bool {
        let (a, b) = (
            first.got.arrived_unix - RESTART_MARGIN_S,
            then.got.arrived_unix,
        );
        self.kills.iter().any(|&k| a <= k && k <= b)
    }

    /// How many milliseconds the sink stalled between unix times `from`
    /// and `to`, each stall widened by [`STALL_MARGIN_S`] (its line is
    /// written when the sink runs again). A stall delays what the sink
    /// reads after it: the arrival it records is late by up to that much.
    pub fn stall_ms(&self, from: f64, to: f64) -> f64 {
        self.stalls
            .iter()
            .map(|[a, b]| {
                let (a, b) = (a - STALL_MARGIN_S, b + STALL_MARGIN_S);
                (b.min(to) - a.max(from)).max(0.0) * 1000.0
            })
            .sum()
    }

    /// Whether the sink stalled in the `window_ms` before `s` arrived or
    /// during its exchange: `s`'s recorded arrival may be late, so a gap
    /// measured *from* it may look shorter than the sender's.
    pub fn read_late(&self, s: &Seen<'_>, window_ms: f64) -> bool {
        self.stall_ms(s.got.arrived_unix - window_ms / 1000.0, unix_end(s)) > 0.0
    }

    /// The events the harness emitted.
    pub fn emitted(&self) -> impl Iterator<Item = &EventView<'a>> {
        self.events.iter().filter(|e| e.emitted.is_some())
    }
}

/// When an exchange ended as the sender saw it: a request the sender
/// gave up on while the sink held it ended at the timeout at the latest
/// (the sender's own timer; the sink sees the close a little later); any
/// other at its end.
pub fn exchange_end(answer: Option<Answer>, got: &Received, timeout_ms: f64) -> f64 {
    if answer == Some(Answer::Hang) && got.closed_early {
        got.end_ms.min(got.at_ms + timeout_ms)
    } else {
        got.end_ms
    }
}

/// Milliseconds for findings: `12.3 ms`, `1.25 s`.
pub fn show_ms(ms: f64) -> String {
    if ms.abs() >= 1000.0 {
        format!("{:.2} s", ms / 1000.0)
    } else {
        format!("{ms:.1} ms")
    }
}
