//! What a provider sends again once a scenario's kills are over: events
//! it already had acknowledged (a lost acknowledgement, a manual resend,
//! an at-least-once queue), which a dedupe kept in process memory has
//! forgotten after a crash, and, under a provider that makes one attempt,
//! what the kills left dead, as a team's redelivery script sends it.

use crate::grading::excuse::Recovery;
use crate::plan::{FaultNote, Plan};
use crate::tag::FaultName;

/// Share of the events acknowledged before the last restart that are
/// redelivered once the kills are over (at least one, at most
/// [`MAX_REDELIVERED_AFTER_KILLS`]).
pub const REDELIVER_AFTER_KILLS_SHARE: f64 = 0.25;

/// Most events acknowledged before a kill that are redelivered after it.
pub const MAX_REDELIVERED_AFTER_KILLS: usize = 12;

/// What is sent again once a scenario's kills are over, as a plan of its
/// own (sent with `first_round = 1`, so every attempt carries
/// `duplicate-redeliver`) whose note says why; `None` when nothing is.
///
/// A real provider sends an event it already had acknowledged again (an
/// acknowledgement lost on the way, a manual resend, an at-least-once
/// queue), and a crash is when a dedupe kept in process memory forgets:
/// so a seeded share of the deliveries acknowledged before the last
/// restart is redelivered after it, and must be a no-op (I2). Under a
/// profile that makes one attempt ([`crate::grading::excuse::Recovery::Redelivery`],
/// GitHub), the deliveries the kills left dead are redelivered too, as a
/// team's redelivery script does through the provider's API: each must
/// then be stored once (I1, I9).
pub fn redeliveries(
    plan: &Plan,
    acked: &[(usize, std::time::Instant)],
    died: &[usize],
    last_restart: Option<std::time::Instant>,
    recovery: Recovery,
) -> Option<Plan> {
    let restart = last_restart?;
    let mut before: Vec<usize> = acked
        .iter()
        .filter(|(_, at)| *at < restart)
        .map(|(i, _)| *i)
        .collect();
    before.sort_unstable();
    before.dedup();
    let mut rng = plan.rng("redeliver-after-kills", 0);
    let want = ((before.len() as f64 * REDELIVER_AFTER_KILLS_SHARE).ceil() as usize)
        .clamp(usize::from(!before.is_empty()), MAX_REDELIVERED_AFTER_KILLS);
    let acked: Vec<usize> =
        rand::seq::index::sample(&mut rng, before.len(), want.min(before.len()))
            .into_iter()
            .map(|k| before[k])
            .collect();
    let dead: Vec<usize> = if recovery == Recovery::Redelivery {
        died.to_vec()
    } else {
        Vec::new()
    };
    if acked.is_empty() && dead.is_empty() {
        return None;
    }
    let mut chosen: Vec<usize> = acked.iter().chain(&dead).copied().collect();
    chosen.sort_unstable();
    chosen.dedup();
    let deliveries = plan
        .deliveries
        .iter()
        .filter(|d| chosen.binary_search(&d.index).is_ok())
        .map(|d| {
            let mut d = d.clone();
            d.redeliveries.clear();
            d.wave = 0;
            d.copies = 1;
            d.hold_attempts = 0;
            d.drop_acks = 0;
            d
        })
        .collect();
    let mut action = format!(
        "redeliver {} acknowledged before the last restart",
        crate::text::words::count(acked.len(), "event")
    );
    if !dead.is_empty() {
        action.push_str(&format!(
            " and {} the kills left dead (the provider makes no automatic retry)",
            dead.len()
        ));
    }
    Some(Plan {
        scenario: plan.scenario.clone(),
        seed: plan.seed,
        accounts: plan.accounts.clone(),
        faults: Vec::new(),
        deliveries,
        notes: vec![FaultNote {
            fault: FaultName::Redeliver,
            action,
            detail: Some("a provider sends acknowledged events again (a lost acknowledgement, a manual resend); after a crash a dedupe kept in memory has forgotten them, so each must be a no-op".into()),
        }],
    })
}
