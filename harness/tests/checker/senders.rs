//! The sender invariants S1–S9 on hand-made sink histories: each holds on
//! what a correct sender does and fails on the one thing it forbids, with
//! evidence naming the event and its history lines; an invariant whose
//! answers never came into play is unknown, never pass.

use std::time::Duration;

use hookstorm::check::sender::{judge, SenderRules};
use hookstorm::check::{InvariantId, ScenarioCheck, Verdict};
use hookstorm::history::{Attempt, Emitted, Event, Outcome, Received};
use hookstorm::state::outbox::Outbox;

const S: &str = "s";

fn rules(ids: &[InvariantId]) -> SenderRules {
    SenderRules {
        invariants: ids.to_vec(),
        profile: hookstorm::sink::reference_profile(),
        time_scale: 1000.0,
        timeout: Duration::from_millis(250),
    }
}

fn emit(key: &str) -> Event {
    emit_seq(key, None)
}

fn emit_seq(key: &str, seq: Option<(&str, u64)>) -> Event {
    Event::Emit(Emitted {
        scenario: S.into(),
        at: "2026-12-01T00:00:00Z".into(),
        account: "acct_a".into(),
        key: key.into(),
        job: None,
        resource: seq.map(|(r, _)| r.to_string()),
        sequence: seq.map(|(_, n)| n),
        script: vec!["200".into()],
    })
}

/// An attempt at `at_ms` that ended `took_ms` later with `answer`.
fn attempt(key: &str, answer: &str, at_ms: f64, took_ms: f64) -> Received {
    Received {
        answer: answer.into(),
        at_ms,
        end_ms: at_ms + took_ms,
        followed: false,
        delivery_id: Some(format!("whd_{key}")),
        body_sha256: format!("sha-{key}"),
        signature_error: None,
        signed_at: Some(1_700_000_000),
        arrived_unix: 1_700_000_000.0 + at_ms / 1000.0,
        retry_after_s: answer
            .split_whitespace()
            .nth(2)
            .and_then(|s| s.trim_end_matches('s').parse().ok()),
        closed_early: false,
        generation: 0,
        window_ms: None,
        foreign: false,
        resent: false,
        body_change: None,
    }
}

fn line(key: &str, n: u32, got: Received) -> Event {
    let status = got
        .answer
        .split_whitespace()
        .next()
        .and_then(|s| s.parse::<u16>().ok());
    let outcome = match status {
        Some(s) if (200..300).contains(&s) && !got.closed_early => Outcome::Ok,
        Some(_) => Outcome::Fail,
        None => Outcome::Info,
    };
    let mut a = Attempt::new(S, &format!("whd_{key}"), key, "acct_a");
    a.attempt = n;
    a.status = status;
    a.outcome = outcome;
    a.sink = Some(Box::new(got));
    Event::Attempt(a)
}

fn outbox(rows: &[(&str, &str)]) -> Outbox {
    let v: Vec<serde_json::Value> = rows
        .iter()
        .map(|(k, st)| serde_json::json!({"key": k, "account": "acct_a", "status": st}))
        .collect();
    Outbox::parse(serde_json::to_string(&v).unwrap().as_bytes()).unwrap()
}

fn check(events: Vec<Event>, outbox: Result<&Outbox, &str>, ids: &[InvariantId]) -> ScenarioCheck {
    let numbered: Vec<(u64, Event)> = events
        .into_iter()
        .enumerate()
        .map(|(i, e)| (i as u64 + 1, e))
        .collect();
    judge(&numbered, S, outbox, &rules(ids))
}

fn verdict(c: &ScenarioCheck, id: InvariantId) -> Verdict {
    c.result(id).map(|r| r.verdict).unwrap()
}

fn what(c: &ScenarioCheck, id: InvariantId) -> String {
    let r = c.result(id).unwrap();
    format!(
        "{} | {:?}",
        r.summary,
        r.evidence.iter().map(|e| &e.what).collect::<Vec<_>>()
    )
}

use InvariantId::*;

/// An event answered 503 `n` times at the schedule's widest waits (at
/// 1000x: attempt k waits up to 5 * 2^(k-2) ms), then 200.
fn retried(key: &str, waits_ms: &[f64]) -> Vec<Event> {
    let mut out = vec![emit(key)];
    let mut t = 0.0;
    for (i, w) in waits_ms.iter().enumerate() {
        t += w;
        out.push(line(key, i as u32 + 1, attempt(key, "503", t, 1.0)));
        t += 1.0;
    }
    out.push(line(
        key,
        waits_ms.len() as u32 + 1,
        attempt(key, "200", t + 4.0, 1.0),
    ));
    out
}

#[test]
fn a_retry_inside_its_window_holds_and_one_too_soon_fails_s1() {
    // Attempt 2 is due 2.5-5 ms after attempt 1 ends, attempt 3 5-10 ms.
    let good = retried("k1", &[0.0, 4.0]);
    let o = outbox(&[("k1", "delivered")]);
    let c = check(good, Ok(&o), &[S1]);
    assert_eq!(verdict(&c, S1), Verdict::Pass, "{}", what(&c, S1));
    // Attempt 4 at once after attempt 3 ended: before its window of
    // 10-20 ms (closer windows are within the 5 ms allowed early).
    let mut bad = retried("k1", &[0.0, 4.0, 8.0]);
    bad.pop();
    bad.push(line("k1", 4, attempt("k1", "200", 16.0, 1.0)));
    let c = check(bad, Ok(&o), &[S1]);
    assert_eq!(verdict(&c, S1), Verdict::Fail);
    assert!(
        what(&c, S1).contains("before its window"),
        "{}",
        what(&c, S1)
    );
}

#[test]
fn a_dead_letter_before_the_profiles_attempts_ran_out_fails_s1() {
    let mut h = vec![emit("k1")];
    let mut t = 0.0;
    for n in 1..=3u32 {
        h.push(line("k1", n, attempt("k1", "503", t, 1.0)));
        t += 1.0 + 5.0 * 2f64.powi(n as i32 - 1) * 0.75;
    }
    let c = check(h.clone(), Ok(&outbox(&[("k1", "dead")])), &[S1]);
    assert_eq!(verdict(&c, S1), Verdict::Fail);
    assert!(
        what(&c, S1).contains("dead-lettered after 3 attempt(s)"),
        "{}",
        what(&c, S1)
    );
    // Still pending: the count is not judged (S8 says it never settled).
    let c = check(h, Ok(&outbox(&[("k1", "pending")])), &[S1]);
    assert_eq!(verdict(&c, S1), Verdict::Pass, "{}", what(&c, S1));
}

#[test]
fn waits_always_at_the_top_of_their_range_are_no_jitter_s1() {
    // Ten 503s each after the whole base wait: attempts 7-10 have ranges of
    // 80 ms and more, two events give eight such waits.
    let mut h = Vec::new();
    for key in ["k1", "k2"] {
        h.push(emit(key));
        let mut t = 0.0;
        for n in 1..=10u32 {
            if n > 1 {
                t += 5.0 * 2f64.powi(n as i32 - 2);
            }
            h.push(line(key, n, attempt(key, "503", t, 0.5)));
            t += 0.5;
        }
    }
    let o = outbox(&[("k1", "dead"), ("k2", "dead")]);
    let c = check(h, Ok(&o), &[S1]);
    assert_eq!(verdict(&c, S1), Verdict::Fail, "{}", what(&c, S1));
    assert!(what(&c, S1).contains("no jitter"), "{}", what(&c, S1));
}

#[test]
fn nothing_is_sent_again_after_a_final_answer_unless_the_sender_restarted_s2() {
    let mut h = vec![emit("k1"), line("k1", 1, attempt("k1", "410", 0.0, 1.0))];
    h.push(line("k1", 2, attempt("k1", "410", 10.0, 1.0)));
    let c = check(h, Ok(&outbox(&[("k1", "dead")])), &[S2]);
    assert_eq!(verdict(&c, S2), Verdict::Fail);
    assert!(
        what(&c, S2).contains("answered 410, a final answer"),
        "{}",
        what(&c, S2)
    );
    // After a restart the re-send of an acknowledged event is allowed.
    let again = attempt("k1", "200", 30.0, 1.0);
    let kill = Event::Fault(hookstorm::history::FaultEvent {
        scenario: S.into(),
        at: "2023-11-14T22:13:20.010Z".into(), // unix 1_700_000_000.010
        fault: hookstorm::tag::FaultName::Kill,
        action: "SIGKILL sender (pid 1)".into(),
        detail: None,
    });
    let h = vec![
        emit("k1"),
        line("k1", 1, attempt("k1", "200", 0.0, 1.0)),
        kill,
        line("k1", 2, again),
    ];
    let c = check(h, Ok(&outbox(&[("k1", "delivered")])), &[S2]);
    assert_eq!(verdict(&c, S2), Verdict::Pass, "{}", what(&c, S2));
    assert!(what(&c, S2).contains("after the harness restarted"));
    // No final answer at all: not exercised.
    let h = vec![emit("k1"), line("k1", 1, attempt("k1", "503", 0.0, 1.0))];
    let c = check(h, Ok(&outbox(&[("k1", "pending")])), &[S2]);
    assert_eq!(verdict(&c, S2), Verdict::Unknown);
}

#[test]
fn a_retry_sooner_than_retry_after_fails_s3() {
    // 60 s of Retry-After is 60 ms at 1000x.
    let first = || line("k1", 1, attempt("k1", "429 retry-after 60s", 0.0, 1.0));
    let o = outbox(&[("k1", "delivered")]);
    let c = check(
        vec![
            emit("k1"),
            first(),
            line("k1", 2, attempt("k1", "200", 5.0, 1.0)),
        ],
        Ok(&o),
        &[S3],
    );
    assert_eq!(verdict(&c, S3), Verdict::Fail, "{}", what(&c, S3));
    let c = check(
        vec![
            emit("k1"),
            first(),
            line("k1", 2, attempt("k1", "200", 70.0, 1.0)),
        ],
        Ok(&o),
        &[S3],
    );
    assert_eq!(verdict(&c, S3), Verdict::Pass, "{}", what(&c, S3));
}

/// `events` judged for `ids` under the reference profile with `timing`.
fn judged_with(
    timing: hookstorm::profile::SenderTiming,
    events: Vec<Event>,
    ids: &[InvariantId],
) -> ScenarioCheck {
    let mut r = rules(ids);
    r.profile.sender = timing;
    let numbered: Vec<(u64, Event)> = events
        .into_iter()
        .enumerate()
        .map(|(i, e)| (i as u64 + 1, e))
        .collect();
    judge(&numbered, S, Ok(&outbox(&[("k1", "delivered")])), &r)
}

#[test]
fn a_profile_says_what_its_sender_does_after_a_timeout_with_retry_after_and_with_coarse_timers() {
    use hookstorm::profile::{RetryAfter, SenderTiming};
    let r = rules(&[S1]);
    let (lo, hi) = r.window(2, None, false).unwrap();
    // A timeout, then a retry far past the schedule's window: broken
    // jitter to the default profile, kept by one whose sender waits at
    // least this long after a timeout.
    let mut held = attempt("k1", "hang", 0.0, 260.0);
    held.closed_early = true;
    let end = 250.0; // the timeout, at 1000x
    let late = end + hi + 1000.0; // past the window and its lateness margin
    let timed_out = vec![
        emit("k1"),
        line("k1", 1, held),
        line("k1", 2, attempt("k1", "200", late, 1.0)),
    ];
    let c = judged_with(SenderTiming::default(), timed_out.clone(), &[S1]);
    assert_eq!(verdict(&c, S1), Verdict::Fail, "{}", what(&c, S1));
    let waits = SenderTiming {
        // hi + 900 ms at 1000x.
        min_wait_after_timeout: Some(Duration::from_secs_f64(hi + 900.0)),
        ..SenderTiming::default()
    };
    let c = judged_with(waits, timed_out, &[S1]);
    assert_eq!(verdict(&c, S1), Verdict::Pass, "{}", what(&c, S1));
    // A Retry-After of an hour, capped at twice the scheduled wait: the
    // retry after the cap is no S3 failure then, and is one by default.
    let asked = vec![
        emit("k1"),
        line("k1", 1, attempt("k1", "429 retry-after 3600s", 0.0, 1.0)),
        line("k1", 2, attempt("k1", "200", 1.0 + 2.0 * hi + 1.0, 1.0)),
    ];
    let c = judged_with(SenderTiming::default(), asked.clone(), &[S3]);
    assert_eq!(verdict(&c, S3), Verdict::Fail, "{}", what(&c, S3));
    let capped = SenderTiming {
        retry_after: RetryAfter::Capped(2.0),
        ..SenderTiming::default()
    };
    let c = judged_with(capped, asked, &[S3]);
    assert_eq!(verdict(&c, S3), Verdict::Pass, "{}", what(&c, S3));
    // Whole-second timers: a retry half a second early (real time) is
    // inside the widened window.
    let early = vec![
        emit("k1"),
        line("k1", 1, attempt("k1", "503", 0.0, 1.0)),
        line(
            "k1",
            2,
            attempt("k1", "200", 1.0 + (lo - 500.0).max(0.0), 1.0),
        ),
    ];
    if lo > 20.0 {
        let c = judged_with(SenderTiming::default(), early.clone(), &[S1]);
        assert_eq!(verdict(&c, S1), Verdict::Fail, "{}", what(&c, S1));
    }
    let coarse = SenderTiming {
        timer_resolution: Some(Duration::from_secs(1)),
        ..SenderTiming::default()
    };
    let c = judged_with(coarse, early, &[S1]);
    assert_eq!(verdict(&c, S1), Verdict::Pass, "{}", what(&c, S1));
}

#[test]
fn an_immediate_resend_after_a_reset_is_the_same_attempt_where_the_profile_says_so() {
    // At the contract's own pace (no compression), where 3 ms is early
    // for any retry.
    let mut r = rules(&[S1, S5, S6]);
    r.time_scale = 1.0;
    r.timeout = Duration::from_secs(30);
    let (lo, hi) = r.window(2, None, false).unwrap();
    let resend = |flag: bool| {
        let mut again = attempt("k1", "reset", 3.0, 0.5);
        again.resent = flag;
        let events = vec![
            emit("k1"),
            line("k1", 1, attempt("k1", "reset", 0.0, 0.5)),
            line("k1", 1, again),
            line("k1", 2, attempt("k1", "200", 3.5 + (lo + hi) / 2.0, 1.0)),
        ];
        let numbered: Vec<(u64, Event)> = events
            .into_iter()
            .enumerate()
            .map(|(i, e)| (i as u64 + 1, e))
            .collect();
        judge(&numbered, S, Ok(&outbox(&[("k1", "delivered")])), &r)
    };
    // Counted as a retry of its own, the re-send 3 ms after the reset is
    // far before its window.
    let c = resend(false);
    assert_eq!(verdict(&c, S1), Verdict::Fail, "{}", what(&c, S1));
    let c = resend(true);
    assert_eq!(verdict(&c, S1), Verdict::Pass, "{}", what(&c, S1));
    assert_eq!(verdict(&c, S5), Verdict::Pass, "{}", what(&c, S5));
}

#[test]
fn a_request_to_a_redirects_location_fails_s4() {
    let mut followed = attempt("k1", "503", 2.0, 1.0);
    followed.followed = true;
    let h = vec![
        emit("k1"),
        line("k1", 1, attempt("k1", "308", 0.0, 1.0)),
        line("k1", 1, followed),
        line("k1", 2, attempt("k1", "200", 10.0, 1.0)),
    ];
    let c = check(h.clone(), Ok(&outbox(&[("k1", "delivered")])), &[S4]);
    assert_eq!(verdict(&c, S4), Verdict::Fail);
    assert!(what(&c, S4).contains("followed a redirect"));
    let unfollowed: Vec<Event> = h
        .into_iter()
        .filter(|e| !matches!(e, Event::Attempt(a) if a.sink.as_ref().unwrap().followed))
        .collect();
    let c = check(unfollowed, Ok(&outbox(&[("k1", "delivered")])), &[S4]);
    assert_eq!(verdict(&c, S4), Verdict::Pass, "{}", what(&c, S4));
}

#[test]
fn a_new_delivery_id_or_an_unknown_identity_fails_s5() {
    let mut second = attempt("k1", "200", 10.0, 1.0);
    second.delivery_id = Some("whd_other".into());
    let h = vec![
        emit("k1"),
        line("k1", 1, attempt("k1", "503", 0.0, 1.0)),
        line("k1", 2, second),
    ];
    let c = check(h, Ok(&outbox(&[("k1", "delivered")])), &[S5]);
    assert_eq!(verdict(&c, S5), Verdict::Fail);
    assert!(
        what(&c, S5).contains("delivery id changed"),
        "{}",
        what(&c, S5)
    );
    let h = vec![emit("k1"), line("k2", 1, attempt("k2", "400", 0.0, 1.0))];
    let c = check(h, Ok(&outbox(&[("k1", "pending")])), &[S5]);
    assert!(what(&c, S5).contains("never emitted"), "{}", what(&c, S5));
}

#[test]
fn a_body_rewritten_on_its_way_fails_s6_naming_what_changed_unless_the_profile_promises_only_json()
{
    use hookstorm::history::BodyChange;
    use hookstorm::profile::BodyFidelity;
    let rewritten = |c: BodyChange| {
        let mut a = attempt("k1", "200", 0.0, 1.0);
        a.body_change = Some(c);
        vec![emit("k1"), line("k1", 1, a)]
    };
    let delivered = outbox(&[("k1", "delivered")]);
    let c = check(rewritten(BodyChange::KeyOrder), Ok(&delivered), &[S6]);
    assert_eq!(verdict(&c, S6), Verdict::Fail);
    assert!(
        what(&c, S6).contains("not the one emitted byte for byte: the order of object members"),
        "{}",
        what(&c, S6)
    );
    let c = check(
        vec![emit("k1"), line("k1", 1, attempt("k1", "200", 0.0, 1.0))],
        Ok(&delivered),
        &[S6],
    );
    assert_eq!(verdict(&c, S6), Verdict::Pass, "{}", what(&c, S6));
    // A profile that promises only the same JSON lets a rewrite pass, and
    // still fails other content.
    let mut json = rules(&[S6]);
    json.profile.body_fidelity = BodyFidelity::Json;
    let judged = |events: Vec<Event>| {
        let numbered: Vec<(u64, Event)> = events
            .into_iter()
            .enumerate()
            .map(|(i, e)| (i as u64 + 1, e))
            .collect();
        judge(&numbered, S, Ok(&delivered), &json)
    };
    let c = judged(rewritten(BodyChange::Whitespace));
    assert_eq!(verdict(&c, S6), Verdict::Pass, "{}", what(&c, S6));
    assert!(
        what(&c, S6).contains("the same JSON as emitted"),
        "{}",
        what(&c, S6)
    );
    let c = judged(rewritten(BodyChange::Content));
    assert_eq!(verdict(&c, S6), Verdict::Fail);
    assert!(
        what(&c, S6).contains("not even the same JSON"),
        "{}",
        what(&c, S6)
    );
}

#[test]
fn a_bad_signature_or_a_reused_timestamp_fails_s6() {
    let mut bad = attempt("k1", "200", 0.0, 1.0);
    bad.signature_error = Some("no signature matches".into());
    let c = check(
        vec![emit("k1"), line("k1", 1, bad)],
        Ok(&outbox(&[("k1", "delivered")])),
        &[S6],
    );
    assert_eq!(verdict(&c, S6), Verdict::Fail);
    // Attempt 2 arrives 1.6 s after attempt 1 but carries its timestamp.
    let reused = attempt("k1", "200", 1600.0, 1.0);
    let h = vec![
        emit("k1"),
        line("k1", 1, attempt("k1", "503", 0.0, 1.0)),
        line("k1", 2, reused.clone()),
    ];
    let c = check(h, Ok(&outbox(&[("k1", "delivered")])), &[S6]);
    assert_eq!(verdict(&c, S6), Verdict::Fail);
    assert!(
        what(&c, S6).contains("an earlier attempt's timestamp"),
        "{}",
        what(&c, S6)
    );
    let mut fresh = reused;
    fresh.signed_at = Some(1_700_000_001);
    let h = vec![
        emit("k1"),
        line("k1", 1, attempt("k1", "503", 0.0, 1.0)),
        line("k1", 2, fresh),
    ];
    let c = check(h, Ok(&outbox(&[("k1", "delivered")])), &[S6]);
    assert_eq!(verdict(&c, S6), Verdict::Pass, "{}", what(&c, S6));
}

#[test]
fn a_hold_never_abandoned_or_a_slow_answer_cut_short_fails_s7() {
    let mut never = attempt("k1", "hang", 0.0, 1000.0);
    never.closed_early = false;
    let c = check(
        vec![emit("k1"), line("k1", 1, never)],
        Ok(&outbox(&[("k1", "dead")])),
        &[S7],
    );
    assert_eq!(verdict(&c, S7), Verdict::Fail);
    assert!(what(&c, S7).contains("never abandoned"));
    let mut kept = attempt("k1", "hang", 0.0, 255.0);
    kept.closed_early = true;
    let c = check(
        vec![emit("k1"), line("k1", 1, kept)],
        Ok(&outbox(&[("k1", "dead")])),
        &[S7],
    );
    assert_eq!(verdict(&c, S7), Verdict::Pass, "{}", what(&c, S7));
    let mut cut = attempt("k1", "slow", 0.0, 20.0);
    cut.closed_early = true;
    let c = check(
        vec![emit("k1"), line("k1", 1, cut)],
        Ok(&outbox(&[("k1", "dead")])),
        &[S7],
    );
    assert_eq!(verdict(&c, S7), Verdict::Fail);
    let c = check(vec![emit("k1")], Ok(&outbox(&[("k1", "dead")])), &[S7]);
    assert_eq!(verdict(&c, S7), Verdict::Unknown);
}

#[test]
fn the_outbox_must_account_for_every_emitted_event_s8() {
    let h = || {
        vec![
            emit("k1"),
            line("k1", 1, attempt("k1", "503", 0.0, 1.0)),
            emit("k2"),
        ]
    };
    let c = check(
        h(),
        Ok(&outbox(&[("k1", "delivered"), ("k2", "pending")])),
        &[S8],
    );
    assert_eq!(verdict(&c, S8), Verdict::Fail);
    let w = what(&c, S8);
    assert!(
        w.contains("marked delivered, but no attempt got a 2xx") && w.contains("still pending"),
        "{w}"
    );
    let c = check(h(), Ok(&outbox(&[("k1", "dead")])), &[S8]);
    assert!(
        what(&c, S8).contains("not in the outbox"),
        "{}",
        what(&c, S8)
    );
    let c = check(h(), Err("connection refused"), &[S8]);
    assert_eq!(verdict(&c, S8), Verdict::Unknown);
    let ok = vec![emit("k1"), line("k1", 1, attempt("k1", "200", 0.0, 1.0))];
    let c = check(ok, Ok(&outbox(&[("k1", "delivered")])), &[S8]);
    assert_eq!(verdict(&c, S8), Verdict::Pass, "{}", what(&c, S8));
}

#[test]
fn a_newer_update_first_sent_before_an_older_one_fails_s9() {
    let h = |t1: f64, t2: f64| {
        vec![
            emit_seq("k1", Some(("order-1", 1))),
            emit_seq("k2", Some(("order-1", 2))),
            line("k1", 1, attempt("k1", "200", t1, 1.0)),
            line("k2", 1, attempt("k2", "200", t2, 1.0)),
        ]
    };
    let o = outbox(&[("k1", "delivered"), ("k2", "delivered")]);
    let c = check(h(10.0, 5.0), Ok(&o), &[S9]);
    assert_eq!(verdict(&c, S9), Verdict::Fail);
    assert!(
        what(&c, S9).contains("sequence 2 (k2) was first sent"),
        "{}",
        what(&c, S9)
    );
    let c = check(h(5.0, 10.0), Ok(&o), &[S9]);
    assert_eq!(verdict(&c, S9), Verdict::Pass, "{}", what(&c, S9));
}

#[test]
fn a_sink_history_with_nothing_sent_of_what_was_emitted_fails_s8_and_decides_nothing_else() {
    // A sender that took an event and never sent it lost it: S8 says so
    // (a total loss is not "undecided"); the rest had no request to judge.
    let c = check(
        vec![emit("k1")],
        Ok(&outbox(&[("k1", "pending")])),
        &InvariantId::SENDER,
    );
    for r in &c.results {
        let want = if r.id == InvariantId::S8 {
            Verdict::Fail
        } else {
            Verdict::Unknown
        };
        assert_eq!(r.verdict, want, "{c:?}");
    }
}

#[test]
fn a_wait_the_sink_measured_across_its_own_stall_is_not_judged() {
    // Attempts 1-7 on the schedule; attempt 8 at once after attempt 7 (too
    // soon for its window of 160-320 ms), but the sink was not scheduled
    // from 250 to 262 ms, as attempt 7 arrived: attempt 7 may have been
    // sent long before the sink read it, so it cannot tell.
    let mut h = retried("k1", &[0.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0]);
    h.pop();
    h.push(line("k1", 8, attempt("k1", "200", 260.0, 1.0)));
    let o = outbox(&[("k1", "delivered")]);
    let c = check(h.clone(), Ok(&o), &[S1]);
    assert_eq!(verdict(&c, S1), Verdict::Fail, "{}", what(&c, S1));
    h.push(Event::Fault(hookstorm::history::FaultEvent {
        scenario: S.into(),
        at: "2023-11-14T22:13:20.262Z".into(), // unix 1_700_000_000.262
        fault: hookstorm::tag::FaultName::SinkStall,
        action: "the sink was not scheduled for 12 ms".into(),
        detail: Some("12".into()),
    }));
    let c = check(h, Ok(&o), &[S1]);
    assert_eq!(verdict(&c, S1), Verdict::Pass, "{}", what(&c, S1));
    assert!(
        what(&c, S1).contains("1 not judged: the sink itself stalled"),
        "{}",
        what(&c, S1)
    );
}
