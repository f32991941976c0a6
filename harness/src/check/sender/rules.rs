//! The sender invariants S1–S9 as one table, and the tolerances they are
//! judged with: the checker reads both, `docs/invariants.md` carries the
//! table that [`markdown`] renders (a test keeps the two equal), and the
//! sink reads its own timing numbers from here too.

use std::time::Duration;

use crate::invariant::InvariantId;

/// One sender invariant, in words.
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    /// Which invariant.
    pub id: InvariantId,
    /// When it holds.
    pub holds_when: &'static str,
    /// What a failure usually means in a sender.
    pub fails_when: &'static str,
}

/// Every sender invariant, S1 to S9.
pub const RULES: [Rule; 9] = [
    Rule {
        id: InvariantId::S1,
        holds_when: "every retry arrives inside the profile's window for its attempt (base wait, growth, cap and jitter bounds, at the run's time scale, measured from the end of the attempt before it; after a `Retry-After` the window ends no sooner than it, and waiting for it is S3's to judge); the waits spread over their jitter range as the profile's jitter does; no event gets more attempts than the profile allows, and none is dead-lettered before it had them all",
        fails_when: "retries without backoff or on a fixed interval, a wait with no random part (no jitter), a wait measured from the wrong moment, or a dead letter after fewer attempts than documented",
    },
    Rule {
        id: InvariantId::S2,
        holds_when: "nothing is sent again after a final answer: a 2xx, or a status the profile gives up on (under the reference sender's profile a 4xx other than 408 and 429), unless the harness crashed the sender before it could record the answer",
        fails_when: "the sender retries a refusal that will not change (400, 404, 410, 422), or re-sends what was acknowledged",
    },
    Rule {
        id: InvariantId::S3,
        holds_when: "after a 429 or 503 with `Retry-After`, the next attempt waits at least that long (scaled like every wait)",
        fails_when: "the sender ignores `Retry-After` and retries on its own schedule, hammering a receiver that asked it to back off",
    },
    Rule {
        id: InvariantId::S4,
        holds_when: "no request ever goes to a redirect's `Location`: a 3xx is a failed attempt, retried at the registered URL",
        fails_when: "the HTTP client follows redirects (the default of most clients): a receiver's misconfiguration or a hijacked route gets the signed event",
    },
    Rule {
        id: InvariantId::S5,
        holds_when: "every attempt of one event carries the same identity: the event id the profile names, the delivery id header (`Webhook-Id`) and the same body bytes; no attempt carries an identity the harness never emitted",
        fails_when: "a new delivery id per attempt (the receiver's deduplication by it then stores the event twice), or a body rebuilt per attempt",
    },
    Rule {
        id: InvariantId::S6,
        holds_when: "every attempt's signature verifies over the raw body with the account's secret and the profile's scheme and tolerance, and is made afresh: a retry's signed timestamp follows the clock of its own attempt, never an earlier attempt's",
        fails_when: "signing a re-serialisation of the body instead of the bytes sent, signing with the wrong secret, or signing once and re-sending the old signature (a retry after the tolerance then fails everywhere)",
    },
    Rule {
        id: InvariantId::S7,
        holds_when: "a request the receiver does not answer is abandoned after the profile's timeout (scaled), and an answer that comes inside the timeout is waited for",
        fails_when: "no client timeout (one slow receiver blocks the worker), or a timeout shorter than documented",
    },
    Rule {
        id: InvariantId::S8,
        holds_when: "every event the sender committed ends acknowledged or dead-lettered, as its own outbox says: each was sent, each it marks delivered got a 2xx, none it marks dead got one, none is left pending, including across crashes between the outbox commit and the POST and between the 2xx and marking the row",
        fails_when: "marking a row delivered before the POST (a crash or a failed POST then loses the event), losing an event the outbox committed, or a row stuck pending",
    },
    Rule {
        id: InvariantId::S9,
        holds_when: "per resource, events are first sent in the order of their sequence numbers: a newer update is never sent before an older one was (a retry of the older one may still arrive later)",
        fails_when: "a worker that picks rows in no particular order or sends one resource's events concurrently",
    },
];

/// The rule of `id` (a sender invariant).
pub fn rule(id: InvariantId) -> &'static Rule {
    RULES.iter().find(|r| r.id == id).unwrap_or(&RULES[0])
}

/// A retry may arrive this much before its window opens: the sink sees a
/// sender's close a little after the sender made it.
pub const EARLY: Duration = Duration::from_millis(5);

/// A retry may arrive this much after its window closes, at least: the
/// sender's poll interval, and a loaded machine that leaves a process
/// unscheduled for a few hundred milliseconds (measured: 175 ms on two
/// shared cores with three busy loops beside it). At 1000x this is half an
/// hour of contract time, so lateness is judged coarsely; the lower
/// bound, the attempt count and the jitter are exact.
pub const LATE_MIN: Duration = Duration::from_millis(500);

/// ... or this share of the window's end, when that is more.
pub const LATE_SHARE: f64 = 0.25;

/// Waits whose jitter range is at least this wide show the jitter.
pub const JITTER_RANGE: Duration = Duration::from_millis(60);

/// The fewest such waits the jitter is judged on.
pub const JITTER_SAMPLES: usize = 6;

/// A profile with jitter fails when every such wait lies above this point
/// of its range (a sender waiting the whole base every time)...
pub const JITTER_TOP: f64 = 0.75;

/// ... or when they all lie within this share of the range of one another
/// (the same point every time).
pub const JITTER_SPREAD: f64 = 0.1;

/// The timeout the sink holds a sender to is the profile's divided by the
/// time scale, but never less than this: a request needs time to travel.
pub const TIMEOUT_FLOOR: Duration = Duration::from_millis(250);

/// A held request must be abandoned within the timeout plus this share of
/// it (at least [`TIMEOUT_LATE_MIN`]).
pub const TIMEOUT_LATE_SHARE: f64 = 0.5;

/// See [`TIMEOUT_LATE_SHARE`] (a loaded machine, as for [`LATE_MIN`]).
pub const TIMEOUT_LATE_MIN: Duration = Duration::from_millis(250);

/// A held request abandoned before this share of the timeout was given up
/// too soon.
pub const TIMEOUT_EARLY_SHARE: f64 = 0.5;

/// A `slow` answer comes at this share of the timeout.
pub const SLOW_AT: f64 = 0.4;

/// The sink lets go of a held request after this many timeouts.
pub const HANG_LIMIT: u32 = 4;

/// How far a retry's signed timestamp may fall behind its own clock, in
/// seconds beyond the one second that whole-second timestamps lose.
pub const FRESH_SKEW_S: f64 = 0.25;

/// How long before a request's arrival a crash of the sender still counts
/// as falling between it and what came after (S1, S2, S3): the request may
/// have been the old process's, read a moment after it died.
pub const RESTART_MARGIN_S: f64 = 0.05;

/// A tick of the sink's own clock this much late is a stall of the sink
/// (its process was not scheduled): written to the history as a
/// `sink-stall` line, so that no wait measured across it is judged.
pub const SINK_STALL: Duration = Duration::from_millis(30);

/// How far around a stall of the sink a time it measured is still
/// suspect (the stall's line is written when the sink runs again).
pub const STALL_MARGIN_S: f64 = 0.02;

/// The most requests of foreign traffic the sink records per scenario
/// (each a history line); past it, it answers them and records nothing,
/// so a stranger's flood cannot grow the history it is judged by.
pub const FOREIGN_RECORDED: usize = 1000;

/// The most connections the sink holds that have not yet sent a whole
/// request; past it, the oldest of them is closed. A sender writes its
/// request as soon as it connects, so this only ever closes a stranger's
/// idle or dribbling connection, and a flood of them cannot take the
/// sink's descriptors.
pub const SINK_READING: usize = 256;

/// How long the sink waits for a whole request after a connection opens;
/// a sender writes its request at once, so only a stranger's connection
/// waits this long, and is then closed without an answer.
pub const SINK_READ_DEADLINE: Duration = Duration::from_secs(10);

/// The compressed timeout of a profile's `timeout` at `time_scale`.
pub fn compressed_timeout(timeout: Duration, time_scale: f64) -> Duration {
    let scale = if time_scale > 0.0 { time_scale } else { 1.0 };
    timeout.div_f64(scale).max(TIMEOUT_FLOOR)
}

/// The slack after a window that ends at `hi_ms`.
pub fn late_ms(hi_ms: f64) -> f64 {
    (LATE_MIN.as_secs_f64() * 1000.0).max(hi_ms * LATE_SHARE)
}

/// The slack after a timeout of `timeout_ms`.
pub fn timeout_late_ms(timeout_ms: f64) -> f64 {
    (TIMEOUT_LATE_MIN.as_secs_f64() * 1000.0).max(timeout_ms * TIMEOUT_LATE_SHARE)
}

fn ms(d: Duration) -> String {
    crate::text::units::format_duration(d)
}

/// The tables `docs/invariants.md` carries between its `senders` markers.
pub fn markdown() -> String {
    let mut s = String::from("| id | name | holds when | fails when |\n|---|---|---|---|\n");
    for r in &RULES {
        s.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            r.id.code(),
            r.id.name(),
            r.holds_when,
            r.fails_when
        ));
    }
    s.push_str("\n| tolerance | value |\n|---|---|\n");
    let pct = |f: f64| format!("{:.0}%", f * 100.0);
    let rows = [
        (
            "timeout the sender is told (`HOOKSTORM_TIMEOUT_MS`)",
            format!("the profile's timeout divided by the time scale, at least {}", ms(TIMEOUT_FLOOR)),
        ),
        (
            "a retry before its window opens (S1), or before its `Retry-After` (S3)",
            format!("at most {} early", ms(EARLY)),
        ),
        (
            "a retry after its window closes (S1)",
            format!(
                "at most {} or {} of the window's end late, whichever is more",
                ms(LATE_MIN),
                pct(LATE_SHARE)
            ),
        ),
        (
            "jitter (S1)",
            format!(
                "judged on the waits whose range is {} or wider, when there are {JITTER_SAMPLES} or more: it fails when all lie above {} of their range, or all within {} of one another",
                ms(JITTER_RANGE),
                pct(JITTER_TOP),
                pct(JITTER_SPREAD)
            ),
        ),
        (
            "a held request (`hang`, S7)",
            format!(
                "abandoned between {} and the timeout plus {} (at least {}); the sink lets go after {HANG_LIMIT} timeouts",
                format_args!("{} of the timeout", pct(TIMEOUT_EARLY_SHARE)),
                pct(TIMEOUT_LATE_SHARE),
                ms(TIMEOUT_LATE_MIN)
            ),
        ),
        (
            "a slow answer (`slow`, S7)",
            format!("comes at {} of the timeout and must be waited for", pct(SLOW_AT)),
        ),
        (
            "a restart of the sender (S1, S2, S3)",
            format!(
                "what follows a `kill` line (or comes up to {:.0} ms before it) is not held to what came before",
                RESTART_MARGIN_S * 1000.0
            ),
        ),
        (
            "a stall of the sink itself",
            format!(
                "a tick of its clock {} late is a `sink-stall` line, widened by {:.0} ms each side: it is taken out of a wait measured across it (S1 late, S6, S7); a retry that looks too soon after an attempt the sink read during one is not judged, and the summary counts it (S1, S3); an answer the sink gave after stalling for half the timeout is not final (S2)",
                ms(SINK_STALL),
                STALL_MARGIN_S * 1000.0
            ),
        ),
        (
            "a fresh signature (S6)",
            format!("a retry's timestamp is at most 1 s plus {FRESH_SKEW_S} s behind the time since the event's first attempt"),
        ),
    ];
    for (what, value) in rows {
        s.push_str(&format!("| {what} | {value} |\n"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_has_each_sender_invariant_once_in_order() {
        let ids: Vec<InvariantId> = RULES.iter().map(|r| r.id).collect();
        assert_eq!(ids, InvariantId::SENDER);
        assert_eq!(rule(InvariantId::S7).id, InvariantId::S7);
    }

    #[test]
    fn the_compressed_timeout_never_falls_below_its_floor() {
        assert_eq!(
            compressed_timeout(Duration::from_secs(15), 1000.0),
            TIMEOUT_FLOOR
        );
        assert_eq!(
            compressed_timeout(Duration::from_secs(15), 10.0),
            Duration::from_millis(1500)
        );
        assert_eq!(late_ms(100.0), 500.0);
        assert_eq!(late_ms(4000.0), 1000.0);
    }

    /// `docs/invariants.md` carries [`markdown`] between its markers;
    /// `HOOKSTORM_UPDATE_DOCS=1` rewrites it.
    #[test]
    fn the_sender_table_in_the_docs_is_the_one_in_the_code() {
        crate::docs_table::assert_section(
            concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/invariants.md"),
            "senders",
            &markdown(),
        );
    }
}
