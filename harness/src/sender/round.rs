//! One delivery's rounds: the automatic delivery with the profile's retry
//! schedule, then its redeliveries (replays, fresh ids, dashboard
//! redeliveries, an expired replay), each attempt signed afresh, sent,
//! graded and written to the history through the send's context.

use rand_chacha::ChaCha8Rng;

use super::exchange::classify;
use super::exchange::Answer;
use super::{request, Ctx, Met, Record};
use crate::fault::redeliver::{Refusal, Standing};
use crate::history::{now_rfc3339, Event, FaultEvent, Intent, Outcome};
use crate::plan::{PlannedDelivery, Redelivery};
use crate::profile::signature::Scheme;
use crate::scenario::{Forgery, Signing};
use crate::tag::{FaultName, FaultTag};
use std::time::Duration;

/// How many attempts a round makes: one for a single-attempt delivery
/// (test and must-reject deliveries, to keep runs short), else the
/// schedule's, and never none.
fn attempts(single_attempt: bool, max_attempts: u32) -> u32 {
    if single_attempt {
        1
    } else {
        max_attempts.max(1)
    }
}

/// Whether a delivery of this intent should have landed, so running out
/// of attempts makes it dead (must-reject deliveries are meant to fail).
fn should_land(intent: Intent) -> bool {
    matches!(intent, Intent::Genuine | Intent::Test)
}

/// The signed request a round ended with, when it was acknowledged.
struct Delivered {
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

pub(super) async fn run_delivery(ctx: &Ctx, d: &PlannedDelivery) {
    let local = ctx.localize(d);
    let d: &PlannedDelivery = &local;
    let mut rng = crate::plan::rng_for(ctx.cfg.seed, &ctx.scenario, "delivery", d.index as u64);
    let first = ctx.cfg.first_round;
    let drops = if first == 0 { d.drop_acks } else { 0 };
    let Some(delivered) = run_round(ctx, d, &mut rng, first, drops).await else {
        return;
    };
    if first > 0 {
        return;
    }
    for (r, redelivery) in d.redeliveries.iter().enumerate() {
        let round = r as u32 + 1;
        match redelivery {
            Redelivery::Replay | Redelivery::FreshId(_) => {
                replay(ctx, d, redelivery, delivered.as_ref(), round).await;
            }
            Redelivery::Redeliver => {
                let standing = if delivered.is_some() {
                    Standing::Delivered
                } else {
                    Standing::Dead
                };
                wait_for_desk(ctx, d, standing).await;
                ctx.tally(|s| s.redelivered += 1);
                let mut rd = d.clone();
                rd.hold_attempts = 0;
                rd.copies = 1;
                rd.single_attempt = false;
                run_round(ctx, &rd, &mut rng, round, 0).await;
            }
            Redelivery::ExpiredReplay => {
                let mut rd = d.clone();
                rd.intent = Intent::ExpiredReplay;
                rd.detail = Some(Forgery::ExpiredReplay.as_str().into());
                rd.forgery = Some(Forgery::ExpiredReplay);
                rd.single_attempt = true;
                rd.copies = 1;
                rd.hold_attempts = 0;
                rd.signing = Signing::Current;
                run_round(ctx, &rd, &mut rng, round, 0).await;
            }
        }
    }
}

/// Replays the request a round ended with (`Replay`), or sends it again
/// under a fresh delivery id (`FreshId`, signed again where the scheme
/// signs the id), as redelivery round `round`.
async fn replay(
    ctx: &Ctx,
    d: &PlannedDelivery,
    redelivery: &Redelivery,
    delivered: Option<&Delivered>,
    round: u32,
) {
    let Some(got) = delivered else {
        ctx.write(Event::Fault(FaultEvent {
            scenario: ctx.scenario.clone(),
            at: now_rfc3339(),
            fault: FaultName::Duplicate,
            action: format!("skip replay of {}", d.id),
            detail: Some(
                "the delivery was never acknowledged, so there is no request to replay".into(),
            ),
        }));
        return;
    };
    let (id, name, headers, detail) = match redelivery {
        Redelivery::FreshId(new_id) => {
            let headers = if matches!(ctx.cfg.profile.scheme, Scheme::StandardWebhooks { .. }) {
                // The id is signed under this scheme: sign again with the new id.
                match ctx.sign(d, new_id, None) {
                    Ok(s) => ctx.headers(d, new_id, 1, &s.headers),
                    Err(why) => {
                        ctx.skip(d, why);
                        return;
                    }
                }
            } else {
                let idh = ctx.cfg.profile.delivery_id_header().unwrap_or("Webhook-Id");
                request::with_fresh_id(&got.headers, idh, new_id)
            };
            (
                new_id.as_str(),
                FaultTag::FreshId,
                headers,
                Some(format!("fresh id for {}", d.id)),
            )
        }
        _ => (d.id.as_str(), FaultTag::Replay, got.headers.clone(), None),
    };
    let sent_at = now_rfc3339();
    let ticket = ctx.ticket();
    let (answer, met) = ctx.exchange(d, &headers, &got.body, ticket).await;
    let grade = classify(&ctx.cfg.profile, Intent::Genuine, &answer);
    let mut faults = vec![name];
    met.tag(&mut faults);
    ctx.claim(d, ticket, &answer, &mut faults);
    ctx.record(Record {
        d,
        id,
        attempt: 1,
        round,
        faults,
        sent_at,
        answer: Some(&answer),
        error: None,
        outcome: grade.outcome,
        intent: Intent::Genuine,
        detail,
        dead: false,
    });
}

/// Waits until the provider's redelivery desk takes a redelivery of `d`
/// (an hourly limit reached makes it wait, and says so in the history).
async fn wait_for_desk(ctx: &Ctx, d: &PlannedDelivery, standing: Standing) {
    loop {
        match ctx.desk.request(&d.account, standing) {
            Ok(()) => break,
            Err(Refusal::HourlyLimit { limit, retry_in }) => {
                ctx.tally(|s| s.throttled += 1);
                ctx.note(
                    FaultName::Redeliver,
                    format!(
                        "hourly limit of {limit} redeliveries reached for account {}; delivery {} waits {}",
                        d.account,
                        d.id,
                        crate::text::units::format_duration(retry_in)
                    ),
                    None,
                );
                tokio::time::sleep(retry_in.max(Duration::from_millis(1))).await;
            }
            Err(Refusal::Pending) => break,
        }
    }
}

/// One round of attempts (the automatic delivery, or a redelivery).
/// Returns `None` when the delivery was skipped, `Some(None)` when it died,
/// `Some(Some(request))` when it was acknowledged.
async fn run_round(
    ctx: &Ctx,
    d: &PlannedDelivery,
    rng: &mut ChaCha8Rng,
    round: u32,
    mut drops_left: u32,
) -> Option<Option<Delivered>> {
    let schedule = &ctx.cfg.profile.schedule;
    let max = attempts(d.single_attempt, schedule.max_attempts);
    let base_faults = {
        let mut f = d.faults();
        if round > 0 && d.intent == Intent::Genuine {
            f.push(FaultTag::Redeliver);
        }
        f
    };
    for n in 1..=max {
        if n > 1 {
            let wait = schedule.draw_wait(n, rng).unwrap_or_default();
            ctx.sleep_scaled(wait).await;
        }
        if round == 0 && n <= d.hold_attempts && n < max {
            hold_back(ctx, d, n, &base_faults);
            continue;
        }
        let signed = match ctx.sign(d, &d.id, d.forgery) {
            Ok(s) => s,
            Err(why) => {
                ctx.skip(d, why);
                return None;
            }
        };
        let headers = ctx.headers(d, &d.id, n, &signed.headers);
        let copies = if round == 0 && n == 1 {
            d.copies.max(1)
        } else {
            1
        };
        let (sent_at, answers, tickets) =
            send_attempt(ctx, d, &headers, &signed.body, copies).await;
        let mut main = None;
        for (k, (answer, met)) in answers.iter().enumerate() {
            let grade = classify(&ctx.cfg.profile, d.intent, answer);
            let mut faults = base_faults.clone();
            if copies > 1 {
                faults.push(FaultTag::ConcurrentCopy {
                    k: k as u32 + 1,
                    n: copies,
                });
            }
            met.tag(&mut faults);
            let ticket = tickets.as_ref().and_then(|t| t.get(k).copied());
            ctx.claim(d, ticket, answer, &mut faults);
            if k > 0 {
                ctx.record(Record {
                    d,
                    id: &d.id,
                    attempt: n,
                    round,
                    faults,
                    sent_at: sent_at.clone(),
                    answer: Some(answer),
                    error: None,
                    outcome: grade.outcome,
                    intent: d.intent,
                    detail: d.detail.clone(),
                    dead: false,
                });
                continue;
            }
            main = Some((grade, faults));
        }
        let (grade, mut faults) = main.expect("at least one copy");
        let answer = &answers[0].0;
        let mut outcome = grade.outcome;
        let mut delivered = grade.delivered;
        // Slack enables an Events URL only when its url_verification is
        // answered with the challenge: a bare 2xx ends the delivery failed.
        let mut error = None;
        let p = &ctx.cfg.profile;
        if delivered && d.intent == Intent::Test {
            let secret = ctx.keys.get(&d.account).and_then(|k| k.current.last());
            if let Some(why) = p.handshake_refusal(&d.body, &answer.body, secret) {
                outcome = Outcome::Fail;
                error = Some(why);
            }
        }
        if delivered && drops_left > 0 && !d.single_attempt {
            drops_left -= 1;
            outcome = Outcome::Info;
            delivered = false;
            faults.push(FaultTag::DropAck);
        }
        let last = n == max || grade.give_up || delivered;
        let dead = last && !delivered && should_land(d.intent);
        ctx.record(Record {
            d,
            id: &d.id,
            attempt: n,
            round,
            faults,
            sent_at,
            answer: Some(answer),
            error,
            outcome,
            intent: d.intent,
            detail: d.detail.clone(),
            dead,
        });
        if round == 0 && n == 1 && !last && !delivered && d.intent == Intent::Genuine {
            ask_while_pending(ctx, d);
        }
        if delivered {
            return Some(Some(Delivered {
                headers,
                body: signed.body,
            }));
        }
        if last {
            break;
        }
    }
    Some(None)
}

/// Records attempt `n` of `d` as held back: planned, not sent.
fn hold_back(ctx: &Ctx, d: &PlannedDelivery, n: u32, base_faults: &[FaultTag]) {
    let mut faults = base_faults.to_vec();
    faults.push(FaultTag::HoldBack);
    ctx.record(Record {
        d,
        id: &d.id,
        attempt: n,
        round: 0,
        faults,
        sent_at: now_rfc3339(),
        answer: None,
        error: Some("held back: this attempt was not sent".into()),
        outcome: Outcome::Fail,
        intent: d.intent,
        detail: d.detail.clone(),
        dead: false,
    });
}

/// One attempt's exchanges: `copies` sent at once (a concurrent
/// duplicate's first attempt) or one; when it went out, the answers with
/// what the fault front met, and the front's tickets.
async fn send_attempt(
    ctx: &Ctx,
    d: &PlannedDelivery,
    headers: &[(String, String)],
    body: &[u8],
    copies: u32,
) -> (String, Vec<(Answer, Met)>, Option<Vec<u64>>) {
    let tickets: Option<Vec<u64>> = ctx
        .cfg
        .front
        .is_some()
        .then(|| (0..copies).filter_map(|_| ctx.ticket()).collect());
    let (sent_at, answers) = if copies > 1 {
        ctx.copies(d, headers, body, copies as usize, tickets.as_deref())
            .await
    } else {
        let sent_at = now_rfc3339();
        let ticket = tickets.as_ref().map(|t| t[0]);
        (sent_at, vec![ctx.exchange(d, headers, body, ticket).await])
    };
    (sent_at, answers, tickets)
}

/// Asks for the scenario's redeliveries while `d` is still pending: the
/// provider must refuse each (counted, and noted in the history).
fn ask_while_pending(ctx: &Ctx, d: &PlannedDelivery) {
    for _ in 0..ctx.while_pending {
        if let Err(why) = ctx.desk.request(&d.account, Standing::Pending) {
            ctx.tally(|s| s.refused_pending += 1);
            ctx.note(
                FaultName::Redeliver,
                format!("refused a redelivery of {} ({})", d.id, d.body.task.id),
                Some(why.to_string()),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_single_attempt_delivery_gets_one_attempt_and_a_schedule_at_least_one() {
        assert_eq!(attempts(true, 8), 1);
        assert_eq!(attempts(false, 8), 8);
        assert_eq!(attempts(false, 0), 1);
    }

    #[test]
    fn only_deliveries_that_should_land_can_die() {
        assert!(should_land(Intent::Genuine));
        assert!(should_land(Intent::Test));
        for i in [
            Intent::Forged,
            Intent::CrossAccount,
            Intent::Oversized,
            Intent::ExpiredReplay,
        ] {
            assert!(!should_land(i), "{i:?}");
        }
    }
}
