//! The human account of a failing run: a few sentences per failing
//! invariant, in the profile's words.
//!
//! A minimal counterexample is only useful if a person can read it at a
//! glance: "two deliveries of one task, sent concurrently; both answered
//! 204; the inbox holds the task twice". [`account`] builds that from the
//! plan (what was meant), the history (what was sent and answered, and what
//! the harness did to the processes in between) and the check (what the
//! state showed). For each failing invariant it tells the deliveries behind
//! its evidence in the order things happened: each delivery with its
//! identity, status and order field, how it went out (concurrent copies,
//! retries, replays, redeliveries), each answer (a status, or the transport
//! failure, and fault tags such as a discarded ack or a database cut), the
//! process and database faults that fell between them, then what was found
//! and what was expected.
//!
//! The output depends only on its inputs (no clock, no map iteration
//! order), so a shrink's report is the same every time. Larger plans are
//! capped: at most [`MAX_KEYS`] evidence items per invariant and
//! [`MAX_DELIVERIES`] deliveries per item are told, and the rest counted.

use std::fmt::Write as _;

use chrono::{DateTime, FixedOffset};

use crate::check::{Evidence, InvariantId, InvariantResult, ScenarioCheck, Verdict};
use crate::delivery::TaskStatus;
use crate::history::{Attempt, Event, FaultEvent, Intent};
use crate::plan::Plan;
use crate::profile::vocabulary::Vocabulary;
use crate::tag::{FaultName, FaultTag};

/// At most this many evidence items are told per failing invariant.
pub const MAX_KEYS: usize = 3;
/// At most this many deliveries are told per evidence item.
pub const MAX_DELIVERIES: usize = 4;
/// At most this many sends of one delivery are told on one line.
const MAX_SENDS: usize = 4;
/// At most this many process or database faults are told per evidence item.
const MAX_FAULTS: usize = 4;

/// The account of `check`'s failing invariants for the run of `plan` that
/// wrote `events` (events of other scenarios are ignored), in `words`.
/// One line of overview, then one group of lines per failing invariant.
pub fn account(plan: &Plan, events: &[Event], check: &ScenarioCheck, words: &Vocabulary) -> String {
    let attempts: Vec<&Attempt> = events
        .iter()
        .filter_map(|e| match e {
            Event::Attempt(a) if a.scenario == check.scenario => Some(a),
            _ => None,
        })
        .collect();
    let faults: Vec<&FaultEvent> = events
        .iter()
        .filter_map(|e| match e {
            Event::Fault(f) if f.scenario == check.scenario && acts_on_processes(&f.fault) => {
                Some(f)
            }
            _ => None,
        })
        .collect();
    let mut out = overview(plan);
    let failing: Vec<&InvariantResult> = check
        .results
        .iter()
        .filter(|r| r.verdict == Verdict::Fail)
        .collect();
    if failing.is_empty() {
        out.push_str("No invariant failed.\n");
        return out;
    }
    for r in failing {
        let _ = writeln!(out, "{} failed: {}", r.id, r.summary);
        for ev in r.evidence.iter().take(MAX_KEYS) {
            tell_evidence(&mut out, ev, &attempts, &faults, words);
        }
        let told = r.evidence.len().min(MAX_KEYS);
        let total = r.evidence_total.max(r.evidence.len());
        if total > told {
            let _ = writeln!(out, "  … and {} more (see the report)", total - told);
        }
        let _ = writeln!(out, "  expected: {}.", expectation(r.id, words));
    }
    out
}

/// What each invariant asks for, in the profile's words: the "expected" of
/// every finding.
pub fn expectation(id: InvariantId, words: &Vocabulary) -> String {
    match id {
        InvariantId::I1 => format!("every acknowledged {} in the inbox", words.event),
        InvariantId::I2 => format!("each {} stored once", words.key),
        InvariantId::I3 => format!("each stored {} processed exactly once", words.event),
        InvariantId::I4 => "nothing stored for a forged, test or other must-reject delivery".into(),
        InvariantId::I5 => format!("the winner is the {}", words.winner_rule()),
        InvariantId::I6 => "each resource keeps its highest sequence".into(),
        InvariantId::I7 => {
            "a 2xx to genuine and test deliveries, a 4xx to must-reject ones, within the answer limit".into()
        }
        InvariantId::I8 => format!(
            "the poison {} marked failed and answered 2xx, blocking nothing",
            words.event
        ),
        InvariantId::I9 => "a 2xx before the retry schedule runs out".into(),
        sender => crate::check::sender::rule(sender).holds_when.into(),
    }
}

/// Whether a history fault line is something done to the receiver's
/// processes or database (told in the story), not a plan-time note.
fn acts_on_processes(f: &FaultName) -> bool {
    matches!(
        f,
        FaultName::Kill
            | FaultName::Pause
            | FaultName::Resume
            | FaultName::Terminate
            | FaultName::Restart
            | FaultName::CutDatabase
            | FaultName::RestoreDatabase
    )
}

/// The first line: what the plan sends, to whom, and its run-time faults.
fn overview(plan: &Plan) -> String {
    let n = plan.deliveries.len();
    let mut kinds: Vec<(&'static str, usize)> = Vec::new();
    for d in &plan.deliveries {
        let k = intent_noun(d.intent);
        match kinds.iter_mut().find(|(name, _)| *name == k) {
            Some((_, c)) => *c += 1,
            None => kinds.push((k, 1)),
        }
    }
    let kinds: Vec<String> = kinds.iter().map(|(k, c)| format!("{c} {k}")).collect();
    let mut s = format!(
        "{}, seed {}: {n} deliver{} ({}) for {}",
        plan.scenario,
        plan.seed,
        if n == 1 { "y" } else { "ies" },
        kinds.join(", "),
        plan.accounts.join(", ")
    );
    let waves = plan.waves();
    if waves > 1 {
        let _ = write!(s, ", in {waves} waves");
    }
    let runtime = super::run_time_faults(plan);
    if !runtime.is_empty() {
        let _ = write!(s, "; faults while sending: {}", runtime.join(", "));
    }
    s.push_str(".\n");
    s
}

fn intent_noun(i: Intent) -> &'static str {
    match i {
        Intent::Genuine => "genuine",
        Intent::Test => "test",
        Intent::Forged => "forged",
        Intent::CrossAccount => "cross-account",
        Intent::Oversized => "oversized",
        Intent::ExpiredReplay => "expired replay",
    }
}

/// One send: an attempt and its concurrent copies.
struct Send<'a> {
    delivery: usize,
    copies: Vec<&'a Attempt>,
}

/// The deliveries behind one piece of evidence, with the story of their sends.
struct Delivery<'a> {
    id: String,
    first: &'a Attempt,
}

/// The delivery id an attempt belongs to: a copy under a fresh id is told
/// with the delivery it copies.
fn origin(a: &Attempt) -> &str {
    if a.faults.contains(&FaultTag::FreshId) {
        if let Some(o) = a
            .detail
            .as_deref()
            .and_then(|d| d.strip_prefix("fresh id for "))
        {
            return o;
        }
    }
    &a.delivery
}

fn concerns(a: &Attempt, ev: &Evidence) -> bool {
    let same_account = ev.account.as_deref().is_none_or(|acc| acc == a.account);
    same_account
        && (a.key == ev.key
            || a.job.as_deref() == Some(ev.key.as_str())
            || a.resource.as_deref() == Some(ev.key.as_str()))
}

fn instant(s: &str) -> Option<DateTime<FixedOffset>> {
    DateTime::parse_from_rfc3339(s).ok()
}

fn tell_evidence(
    out: &mut String,
    ev: &Evidence,
    attempts: &[&Attempt],
    faults: &[&FaultEvent],
    words: &Vocabulary,
) {
    let mine: Vec<&Attempt> = attempts
        .iter()
        .copied()
        .filter(|a| concerns(a, ev))
        .collect();
    let (deliveries, sends) = group(&mine);
    let shown = deliveries.len().min(MAX_DELIVERIES);
    let start = mine.iter().filter_map(|a| instant(&a.sent_at)).min();
    // The timeline: sends by when they went out, faults after the first send.
    enum Beat<'a, 'b> {
        Send(&'b Send<'a>),
        Fault(&'a FaultEvent),
    }
    let mut beats: Vec<(Option<DateTime<FixedOffset>>, Beat)> = sends
        .iter()
        .filter(|s| s.delivery < shown)
        .map(|s| (instant(&s.copies[0].sent_at), Beat::Send(s)))
        .collect();
    if let Some(start) = start {
        beats.extend(
            faults
                .iter()
                .filter(|f| instant(&f.at).is_some_and(|t| t >= start))
                .take(MAX_FAULTS)
                .map(|f| (instant(&f.at), Beat::Fault(f))),
        );
    }
    beats.sort_by_key(|(t, _)| *t);
    let same_day = same_day(deliveries.iter().take(shown).map(|d| d.first));
    // The delivery whose line is open and its sends so far; a delivery
    // told before (a fault line came between) gets a short heading.
    let mut line: Option<(usize, Vec<String>)> = None;
    let mut told = vec![false; deliveries.len()];
    let mut sends_on_line = 0;
    let mut fault_line: Vec<String> = Vec::new();
    let mut lines: Vec<String> = Vec::new();
    // Closes the open delivery's line.
    let flush =
        |line: &mut Option<(usize, Vec<String>)>, lines: &mut Vec<String>, told: &mut Vec<bool>| {
            if let Some((d, parts)) = line.take() {
                lines.push(render_line(
                    &deliveries[d],
                    &parts,
                    told[d],
                    words,
                    same_day,
                ));
                told[d] = true;
            }
        };
    for (_, beat) in &beats {
        match beat {
            Beat::Send(s) => {
                if !fault_line.is_empty() {
                    lines.push(format!("  then the harness did: {}", fault_line.join(", ")));
                    fault_line.clear();
                }
                let continues = matches!(&line, Some((d, _)) if *d == s.delivery);
                if !continues {
                    flush(&mut line, &mut lines, &mut told);
                    line = Some((s.delivery, Vec::new()));
                    sends_on_line = 0;
                }
                sends_on_line += 1;
                if let Some((_, parts)) = &mut line {
                    if sends_on_line <= MAX_SENDS {
                        parts.push(tell_send(s));
                    } else if sends_on_line == MAX_SENDS + 1 {
                        parts.push("…".into());
                    }
                }
            }
            Beat::Fault(f) => {
                flush(&mut line, &mut lines, &mut told);
                fault_line.push(f.action.clone());
            }
        }
    }
    flush(&mut line, &mut lines, &mut told);
    if !fault_line.is_empty() {
        lines.push(format!("  then the harness did: {}", fault_line.join(", ")));
    }
    for l in lines {
        let _ = writeln!(out, "{l}");
    }
    if deliveries.len() > shown {
        let _ = writeln!(
            out,
            "  … and {} more deliveries of it",
            deliveries.len() - shown
        );
    }
    let _ = writeln!(out, "  found: {}", ev.what);
}

/// The deliveries of `mine` in the order of their first attempt, and
/// their sends likewise, with concurrent copies (same round and attempt)
/// together, copy 1 first.
fn group<'a>(mine: &[&'a Attempt]) -> (Vec<Delivery<'a>>, Vec<Send<'a>>) {
    let mut deliveries: Vec<Delivery> = Vec::new();
    let mut sends: Vec<Send> = Vec::new();
    for &a in mine {
        let o = origin(a);
        let d = match deliveries.iter().position(|d| d.id == o) {
            Some(i) => i,
            None => {
                deliveries.push(Delivery {
                    id: o.to_string(),
                    first: a,
                });
                deliveries.len() - 1
            }
        };
        let same = |s: &Send| {
            s.delivery == d
                && s.copies[0].round == a.round
                && s.copies[0].attempt == a.attempt
                && s.copies[0].delivery == a.delivery
                && copy_of(a).is_some()
        };
        match sends.iter_mut().find(|s| same(s)) {
            Some(s) => s.copies.push(a),
            None => sends.push(Send {
                delivery: d,
                copies: vec![a],
            }),
        }
    }
    for s in &mut sends {
        s.copies
            .sort_by_key(|a| copy_of(a).map(|(k, _)| k).unwrap_or(1));
    }
    (deliveries, sends)
}

/// One delivery's line: its heading the first time, a short one after.
fn render_line(
    d: &Delivery,
    parts: &[String],
    again: bool,
    words: &Vocabulary,
    same_day: bool,
) -> String {
    let heading = if again {
        format!("delivery {} again", d.id)
    } else {
        format!("delivery {} ({})", d.id, describe(d.first, words, same_day))
    };
    format!("  {heading}: {}", parts.join("; then "))
}

/// Whether every shown delivery's order field falls on one day (then only
/// the time of day is told).
fn same_day<'a>(firsts: impl Iterator<Item = &'a Attempt>) -> bool {
    let days: Vec<String> = firsts
        .filter_map(|a| a.created_at.as_deref())
        .filter_map(instant)
        .map(|t| t.date_naive().to_string())
        .collect();
    days.windows(2).all(|w| w[0] == w[1])
}

/// `task tsk_1, job job-1, COMPLETED, created 10:00:01, forged: wrong-secret`.
fn describe(a: &Attempt, words: &Vocabulary, same_day: bool) -> String {
    let mut parts = vec![format!("{} {}", words.event, a.key)];
    if let Some(job) = &a.job {
        parts.push(format!("{} {job}", words.object));
    }
    if let (Some(r), Some(s)) = (&a.resource, a.sequence) {
        parts.push(format!("resource {r} #{s}"));
    }
    if let Some(st) = a.task_status {
        parts.push(match st {
            TaskStatus::Completed => words.completed.clone(),
            TaskStatus::Failed => words.failed.clone(),
            other => other.as_str().to_string(),
        });
    }
    if let Some(c) = &a.created_at {
        let shown = match instant(c) {
            Some(t) if same_day => t.format("%H:%M:%S").to_string(),
            _ => c.clone(),
        };
        parts.push(format!("{} {shown}", order_word(words)));
    }
    match a.intent {
        Intent::Genuine => {}
        Intent::Test => parts.push("a test delivery".into()),
        Intent::Forged => parts.push(format!(
            "forged: {}",
            a.detail.as_deref().unwrap_or("bad signature")
        )),
        Intent::CrossAccount => parts.push("signed with another account's secret".into()),
        Intent::Oversized => parts.push("over the body limit".into()),
        Intent::ExpiredReplay => parts.push("a replay past the tolerance".into()),
    }
    if a.poison {
        parts.push(format!("a poison {}", words.event));
    }
    if let Some(FaultTag::Rotation(m)) =
        a.faults.iter().find(|t| matches!(t, FaultTag::Rotation(_)))
    {
        parts.push(format!("signed {m}"));
    }
    parts.join(", ")
}

/// The answerline's `createdAt` reads as "created"; other profiles name their field.
fn order_word(words: &Vocabulary) -> String {
    if words.is_answerline() {
        "created".into()
    } else {
        words.order.clone()
    }
}

fn copy_of(a: &Attempt) -> Option<(u32, u32)> {
    a.faults.iter().find_map(|t| match t {
        FaultTag::ConcurrentCopy { k, n } => Some((*k, *n)),
        _ => None,
    })
}

/// How one send went out and what came back.
fn tell_send(s: &Send) -> String {
    let a = s.copies[0];
    let how = if a.faults.contains(&FaultTag::Replay) {
        Some("a byte-for-byte replay".to_string())
    } else if a.faults.contains(&FaultTag::FreshId) {
        Some(format!("a copy under fresh id {}", a.delivery))
    } else if a.intent == Intent::ExpiredReplay && a.round > 0 {
        Some("a replay past the tolerance".to_string())
    } else if a.faults.contains(&FaultTag::Redeliver) {
        Some("a dashboard redelivery".to_string())
    } else if a.attempt > 1 {
        Some(format!("attempt {}", a.attempt))
    } else {
        None
    };
    let answers: Vec<String> = s.copies.iter().map(|c| answer(c)).collect();
    let said = if s.copies.len() > 1 {
        let n = s.copies.len();
        let all_same = answers.windows(2).all(|w| w[0] == w[1]);
        let both = if n == 2 { "both" } else { "all" };
        if all_same {
            format!("{n} concurrent copies, {both} {}", answers[0])
        } else {
            format!("{n} concurrent copies: {}", answers.join(", "))
        }
    } else {
        answers[0].clone()
    };
    match how {
        Some(h) => format!("{h} {said}"),
        None => said,
    }
}

/// One attempt's answer: `answered 204`, `got no answer (timeout after
/// 15s)`, `held back (not sent)`, with the faults that change its meaning.
fn answer(a: &Attempt) -> String {
    let tags = &a.faults;
    let mut s = if tags.contains(&FaultTag::HoldBack) {
        "held back (not sent)".to_string()
    } else if let Some(FaultTag::FrontStatus(c)) =
        tags.iter().find(|t| matches!(t, FaultTag::FrontStatus(_)))
    {
        format!("answered {c} by the harness's front")
    } else if tags.contains(&FaultTag::FrontRedirect) {
        "redirected by the harness's front".to_string()
    } else {
        match (a.status, &a.error) {
            (Some(st), _) => format!("answered {st}"),
            (None, Some(e)) => format!("got no answer ({e})"),
            (None, None) => "got no answer".to_string(),
        }
    };
    if tags.contains(&FaultTag::DropAck) {
        s.push_str(" (ack discarded by the harness)");
    }
    if tags.contains(&FaultTag::DatabaseCut) {
        s.push_str(" during a database cut");
    }
    if tags.contains(&FaultTag::ReceiverDown) {
        s.push_str(" while the harness had the receiver down");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{Counts, Evidence, InvariantResult};
    use crate::delivery::{Body, Task};
    use crate::plan::PlannedDelivery;

    const SCENARIO: &str = "s";

    fn body(task: &str, job: &str, status: TaskStatus, created: &str) -> Body {
        Body {
            task: Task {
                id: task.into(),
                idempotency_key: Some(job.into()),
                status,
                created_at: created.into(),
            },
            credits: 1,
            response: None,
            test: false,
            resource: None,
            sequence: None,
        }
    }

    fn plan(deliveries: Vec<PlannedDelivery>) -> Plan {
        Plan {
            scenario: SCENARIO.into(),
            seed: 7,
            accounts: vec!["acct_a".into()],
            faults: Vec::new(),
            deliveries,
            notes: Vec::new(),
        }
    }

    fn planned(index: usize, id: &str, b: Body, intent: Intent) -> PlannedDelivery {
        let bytes = serde_json::to_vec(&b).unwrap();
        PlannedDelivery::plain(
            index,
            id.into(),
            "acct_a",
            b,
            bytes,
            intent,
            false,
            intent != Intent::Genuine,
        )
    }

    /// An attempt of `delivery` for `b`, sent at second `at` past 10:00:00.
    fn attempt(delivery: &str, b: &Body, at: u32, status: Option<u16>) -> Attempt {
        let mut a = Attempt::acknowledged(SCENARIO, "acct_a", &b.task.id);
        a.delivery = delivery.into();
        a.job = b.task.idempotency_key.clone();
        a.task_status = Some(b.task.status);
        a.created_at = Some(b.task.created_at.clone());
        a.sent_at = format!("2026-11-29T10:00:{at:02}.000Z");
        a.status = status;
        a
    }

    fn fault(fault: FaultName, action: &str, at: u32) -> Event {
        Event::Fault(FaultEvent {
            scenario: SCENARIO.into(),
            at: format!("2026-11-29T10:00:{at:02}.000Z"),
            fault,
            action: action.into(),
            detail: None,
        })
    }

    fn failing(id: InvariantId, summary: &str, evidence: Vec<Evidence>) -> ScenarioCheck {
        ScenarioCheck {
            scenario: SCENARIO.into(),
            results: vec![
                InvariantResult::new(InvariantId::I3, Verdict::Pass, "all processed once"),
                InvariantResult {
                    id,
                    verdict: Verdict::Fail,
                    summary: summary.into(),
                    evidence_total: evidence.len(),
                    evidence,
                },
            ],
            counts: Counts::default(),
            dead_letters: Vec::new(),
            observations: Vec::new(),
        }
    }

    fn evidence(key: &str, what: &str) -> Evidence {
        Evidence::new(key, Some("acct_a".into()), what, vec![2, 3])
    }

    #[test]
    fn concurrent_duplicates_stored_twice_are_told_as_two_copies_both_acknowledged() {
        let b = body(
            "tsk_1",
            "job-1",
            TaskStatus::Completed,
            "2026-11-29T10:00:01Z",
        );
        let mut d = planned(0, "whd_1", b.clone(), Intent::Genuine);
        d.copies = 2;
        let mut c2 = attempt("whd_1", &b, 5, Some(204));
        c2.faults = vec![FaultTag::ConcurrentCopy { k: 2, n: 2 }];
        let mut c1 = attempt("whd_1", &b, 5, Some(204));
        c1.faults = vec![FaultTag::ConcurrentCopy { k: 1, n: 2 }];
        // The sender writes copy 1 last: the account still tells them as one send.
        let events = vec![Event::Attempt(c2), Event::Attempt(c1)];
        let check = failing(
            InvariantId::I2,
            "1 keys stored more than once in the inbox, 0 tasks with several results rows",
            vec![evidence("tsk_1", "2 inbox rows for one key")],
        );
        let text = account(&plan(vec![d]), &events, &check, &Vocabulary::answerline());
        assert_eq!(
            text,
            "s, seed 7: 1 delivery (1 genuine) for acct_a.\n\
             I2 exactly-once failed: 1 keys stored more than once in the inbox, 0 tasks with several results rows\n\
             \x20 delivery whd_1 (task tsk_1, job job-1, COMPLETED, created 10:00:01): 2 concurrent copies, both answered 204\n\
             \x20 found: 2 inbox rows for one key\n\
             \x20 expected: each task id stored once.\n"
        );
    }

    #[test]
    fn a_wrong_winner_names_both_deliveries_in_the_order_they_were_answered() {
        let done = body(
            "tsk_c",
            "job-1",
            TaskStatus::Completed,
            "2026-11-29T10:00:01Z",
        );
        let failed = body("tsk_f", "job-1", TaskStatus::Failed, "2026-11-29T10:00:02Z");
        let p = plan(vec![
            planned(0, "whd_c", done.clone(), Intent::Genuine),
            planned(1, "whd_f", failed.clone(), Intent::Genuine),
        ]);
        let events = vec![
            Event::Attempt(attempt("whd_c", &done, 3, Some(204))),
            Event::Attempt(attempt("whd_f", &failed, 4, Some(204))),
        ];
        let check = failing(
            InvariantId::I5,
            "1 wrong winners among 1 jobs",
            vec![evidence(
                "job-1",
                "job job-1: expected winner tsk_c, reported tsk_f (a FAILED task)",
            )],
        );
        let text = account(&p, &events, &check, &Vocabulary::answerline());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "s, seed 7: 2 deliveries (2 genuine) for acct_a.");
        assert_eq!(
            lines[2],
            "  delivery whd_c (task tsk_c, job job-1, COMPLETED, created 10:00:01): answered 204"
        );
        assert_eq!(
            lines[3],
            "  delivery whd_f (task tsk_f, job job-1, FAILED, created 10:00:02): answered 204"
        );
        assert_eq!(
            lines[4],
            "  found: job job-1: expected winner tsk_c, reported tsk_f (a FAILED task)"
        );
        assert_eq!(
            lines[5],
            "  expected: the winner is the most recent COMPLETED; ties to the larger task id."
        );
        assert_eq!(lines.len(), 6, "{text}");
    }

    #[test]
    fn an_acknowledged_delivery_lost_across_a_kill_tells_the_kill_after_the_answer() {
        let b = body(
            "tsk_1",
            "job-1",
            TaskStatus::Completed,
            "2026-11-29T10:00:01Z",
        );
        let mut p = plan(vec![planned(0, "whd_1", b.clone(), Intent::Genuine)]);
        p.faults = vec![crate::fault_spec::FaultSpec::Kill(
            toml::from_str("").expect("every kill field has a default"),
        )];
        let events = vec![
            // A kill before the delivery's first attempt is not part of its story.
            fault(FaultName::Kill, "SIGKILL receiver (pid 40)", 1),
            Event::Attempt(attempt("whd_1", &b, 3, Some(204))),
            fault(FaultName::Kill, "SIGKILL receiver (pid 41)", 4),
            fault(FaultName::Restart, "start receiver (pid 42)", 5),
        ];
        let check = failing(
            InvariantId::I1,
            "1 of 1 acknowledged keys are missing from the inbox",
            vec![evidence(
                "tsk_1",
                "acknowledged with a 2xx but not in the inbox",
            )],
        );
        let text = account(&p, &events, &check, &Vocabulary::answerline());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "s, seed 7: 1 delivery (1 genuine) for acct_a; faults while sending: kill."
        );
        assert_eq!(
            lines[2],
            "  delivery whd_1 (task tsk_1, job job-1, COMPLETED, created 10:00:01): answered 204"
        );
        assert_eq!(
            lines[3],
            "  then the harness did: SIGKILL receiver (pid 41), start receiver (pid 42)"
        );
        assert_eq!(
            lines[4],
            "  found: acknowledged with a 2xx but not in the inbox"
        );
        assert_eq!(
            lines[5],
            "  expected: every acknowledged task in the inbox."
        );
        assert!(!text.contains("pid 40"), "{text}");
    }

    #[test]
    fn a_forged_delivery_that_was_accepted_says_how_it_was_forged() {
        let b = body(
            "tsk_x",
            "job-forged-wrong-secret-1",
            TaskStatus::Completed,
            "2026-11-29T00:00:00Z",
        );
        let mut d = planned(0, "whd_x", b.clone(), Intent::Forged);
        d.forgery = Some(crate::fault_spec::Forgery::WrongSecret);
        let mut a = attempt("whd_x", &b, 2, Some(204));
        a.intent = Intent::Forged;
        a.detail = Some("wrong-secret".into());
        a.faults = vec![FaultTag::Tamper("wrong-secret".into())];
        let check = failing(
            InvariantId::I4,
            "1 inbox rows should not exist",
            vec![evidence("tsk_x", "stored a forged delivery")],
        );
        let text = account(
            &plan(vec![d]),
            &[Event::Attempt(a)],
            &check,
            &Vocabulary::answerline(),
        );
        assert!(
            text.starts_with("s, seed 7: 1 delivery (1 forged) for acct_a.\n"),
            "{text}"
        );
        assert!(text.contains(
            "  delivery whd_x (task tsk_x, job job-forged-wrong-secret-1, COMPLETED, created 00:00:00, forged: wrong-secret): answered 204\n"
        ), "{text}");
        assert!(
            text.contains(
                "found: stored a forged delivery\n  expected: nothing stored for a forged"
            ),
            "{text}"
        );
    }

    #[test]
    fn retries_replays_and_transport_failures_are_told_in_order() {
        let b = body(
            "tsk_1",
            "job-1",
            TaskStatus::Completed,
            "2026-11-29T10:00:01Z",
        );
        let mut first = attempt("whd_1", &b, 1, None);
        first.error = Some("timeout after 15s".into());
        let mut second = attempt("whd_1", &b, 2, Some(200));
        second.attempt = 2;
        second.faults = vec![FaultTag::DropAck];
        let third = {
            let mut a = attempt("whd_1", &b, 3, Some(204));
            a.attempt = 3;
            a
        };
        let mut fresh = attempt("whd_9", &b, 4, Some(204));
        fresh.round = 1;
        fresh.faults = vec![FaultTag::FreshId];
        fresh.detail = Some("fresh id for whd_1".into());
        let events: Vec<Event> = [first, second, third, fresh]
            .into_iter()
            .map(Event::Attempt)
            .collect();
        let check = failing(
            InvariantId::I2,
            "1 keys stored more than once",
            vec![evidence("tsk_1", "2 inbox rows for one key")],
        );
        let p = plan(vec![planned(0, "whd_1", b, Intent::Genuine)]);
        let text = account(&p, &events, &check, &Vocabulary::answerline());
        assert!(text.contains(
            ": got no answer (timeout after 15s); then attempt 2 answered 200 (ack discarded by the harness); \
             then attempt 3 answered 204; then a copy under fresh id whd_9 answered 204\n"
        ), "{text}");
    }

    #[test]
    fn a_large_failure_is_capped_and_counted() {
        let mut deliveries = Vec::new();
        let mut events = Vec::new();
        let mut ev = Vec::new();
        for i in 0..20 {
            let b = body(
                &format!("tsk_{i:02}"),
                "job-1",
                TaskStatus::Completed,
                "2026-11-29T10:00:01Z",
            );
            deliveries.push(planned(
                i,
                &format!("whd_{i:02}"),
                b.clone(),
                Intent::Genuine,
            ));
            events.push(Event::Attempt(attempt(
                &format!("whd_{i:02}"),
                &b,
                1,
                Some(204),
            )));
            if i < 10 {
                ev.push(evidence(
                    &format!("tsk_{i:02}"),
                    "acknowledged with a 2xx but not in the inbox",
                ));
            }
        }
        let mut check = failing(InvariantId::I1, "20 of 20 missing", ev);
        check.results[1].evidence_total = 20;
        let text = account(
            &plan(deliveries),
            &events,
            &check,
            &Vocabulary::answerline(),
        );
        assert!(
            text.contains("  … and 17 more (see the report)\n"),
            "{text}"
        );
        assert!(text.lines().count() <= 12, "{text}");
        // One key with many deliveries is capped as well.
        let check = failing(
            InvariantId::I5,
            "wrong winner",
            vec![evidence("job-1", "job job-1: wrong")],
        );
        let p = plan(Vec::new());
        let text = account(&p, &events, &check, &Vocabulary::answerline());
        assert!(
            text.contains("  … and 16 more deliveries of it\n"),
            "{text}"
        );
        assert_eq!(
            text,
            account(&p, &events, &check, &Vocabulary::answerline())
        );
    }

    #[test]
    fn a_passing_check_says_so_and_other_profiles_use_their_words() {
        let check = ScenarioCheck {
            scenario: SCENARIO.into(),
            results: vec![InvariantResult::new(InvariantId::I1, Verdict::Pass, "ok")],
            counts: Counts::default(),
            dead_letters: Vec::new(),
            observations: Vec::new(),
        };
        let text = account(&plan(Vec::new()), &[], &check, &Vocabulary::answerline());
        assert!(text.ends_with("No invariant failed.\n"), "{text}");
        let stripe = Vocabulary::of_name("stripe");
        assert_eq!(
            expectation(InvariantId::I5, &stripe),
            "the winner is the newest successful event by created; ties to the larger event id"
        );
        let b = body(
            "evt_1",
            "obj_1",
            TaskStatus::Completed,
            "2026-11-29T10:00:01Z",
        );
        let check = failing(
            InvariantId::I2,
            "dup",
            vec![evidence("evt_1", "2 inbox rows for one key")],
        );
        let events = vec![Event::Attempt(attempt("whd_1", &b, 1, Some(200)))];
        let text = account(&plan(Vec::new()), &events, &check, &stripe);
        assert!(
            text.contains(
                "(event evt_1, object (data.object.id) obj_1, successful, created 10:00:01)"
            ),
            "{text}"
        );
    }
}
