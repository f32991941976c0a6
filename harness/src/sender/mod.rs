//! The sender: delivers a [`Plan`] over real HTTP as a profile says.
//!
//! Bounded concurrency (a semaphore held per exchange, not while waiting),
//! a keep-alive pool, a per-attempt timeout, no redirects, the profile's
//! retry schedule driven by real time divided by the time scale, and a fresh
//! wall-clock signature on every attempt. Every attempt becomes one
//! `Event::Attempt` line; a receiver's failure is data, never an error.
//! Concurrent copies of a delivery go out by hand ([`copies`]: raw
//! connections released at their last byte), one group at a time and alone:
//! a group takes a gate every other exchange holds shared, so while it is
//! out no other request (another group, a retry, a plain delivery) competes
//! for the receiver's workers. That costs a little parallelism in the
//! scenarios that have copies and nothing elsewhere. Measured against a
//! check-then-insert receiver with 8 worker threads (20 seeds, 8 copy groups
//! each): when every group went out at once through the client, 58 and 59
//! of 160 groups raced in two runs (1 to 6 of 8 per seed); released alone
//! at the last byte, 157 to 159 of 160 did (three runs).
//! [`SendError`] is only for what makes the whole run impossible.
//!
//! Here: the send's context (pool, gate, keys, stats), each exchange and
//! each attempt's record. `config` is what a send is told and answers,
//! `request` what a request carries (pure, by the profile), `round`
//! one delivery's rounds and retries, [`exchange`] one pooled exchange,
//! [`copies`] the copies released at their last byte.
//!
//! Each delivery goes out as the profile's provider sends it
//! ([`crate::profile::envelope`]: its body, its kind of delivery id, its extra
//! headers) and is recorded under the profile's rules: `key` is the event
//! identity, `job` the object, `created_at` the order field's instant.
//! Timestamp forgeries are sent only in the directions the provider's own
//! verifier enforces; the others are skipped with the reason in the
//! history. Answerline deliveries go out exactly as planned.
//!
//! Decisions: test and must-reject deliveries (forged, cross-account,
//! oversized, expired replays) get a single attempt each, to keep runs
//! short; genuine deliveries and dashboard redeliveries get the full
//! schedule. `dead` is set only on deliveries that should have landed
//! (genuine and test). Each delivery's jitter comes from its own random
//! stream (seed, scenario, delivery index), so concurrency never changes it.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::{RwLock, Semaphore};

use crate::fault::front::REQUEST_HEADER;
use crate::fault::gauge::{delivery_identity, Ticket};
use crate::fault::redeliver::Desk;
use crate::fault::tamper;
use crate::history::{
    now_rfc3339, Attempt, Event, FaultEvent, HistoryError, HistorySink, Intent, Outcome,
};
use crate::plan::{Plan, PlannedDelivery};
use crate::profile::BodyShape;
use crate::profile::REDELIVERY_LIMIT_PER_HOUR;
use crate::scenario::Forgery;
use crate::tag::{FaultName, FaultTag};

mod config;
pub mod copies;
pub mod exchange;
mod request;
mod round;

pub use config::{RedirectFinding, SendConfig, SendError, SendSummary};
pub use request::{provider_delivery, provider_request, request_headers, ProviderDelivery};

use exchange::{Answer, HttpClient};

/// Longest the stream of first attempts waits for the nemesis to release
/// it (it always does once the restarted receiver is ready or has failed).
const HOLD_MAX: Duration = Duration::from_secs(300);

#[derive(Default)]
struct Stats {
    summary: SendSummary,
    exchanges: usize,
    connect_failures: usize,
    history_error: Option<HistoryError>,
}

struct Ctx {
    scenario: String,
    cfg: SendConfig,
    pooled: HttpClient,
    sem: Semaphore,
    /// Held shared by every exchange and alone by a group of concurrent
    /// copies, so nothing else is in flight while a group is out.
    gate: RwLock<()>,
    /// TLS for copies sent by hand (https targets only).
    tls: Option<Arc<rustls::ClientConfig>>,
    uris: BTreeMap<String, http::Uri>,
    /// Per account, the URL its signatures cover (the receiver's own).
    signed_urls: BTreeMap<String, String>,
    keys: BTreeMap<String, tamper::Keys>,
    sink: HistorySink,
    stats: Mutex<Stats>,
    /// The next request ticket (only with a front).
    tickets: std::sync::atomic::AtomicU64,
    desk: Desk,
    while_pending: u32,
}

/// Delivers `plan`, writing every attempt to `sink`. `cfg.seed` drives the
/// retry jitter and derived secrets; the plan's own seed fixed the rest.
pub async fn send(
    plan: &Plan,
    cfg: &SendConfig,
    sink: &HistorySink,
) -> Result<SendSummary, SendError> {
    let start = Instant::now();
    let ctx = Arc::new(prepare(plan, cfg, sink)?);
    probe(&ctx).await?;
    let p = &cfg.profile;
    if p.body != BodyShape::Answerline || p.body_template.is_some() {
        ctx.note(
            FaultName::Profile,
            format!("judged by profile {}'s rules", p.name),
            Some(p.semantics.describe()),
        );
    }
    for note in &plan.notes {
        ctx.write(Event::Fault(FaultEvent {
            scenario: ctx.scenario.clone(),
            at: now_rfc3339(),
            fault: note.fault.clone(),
            action: note.action.clone(),
            detail: note.detail.clone(),
        }));
    }
    let gap = cfg
        .spread
        .map(|s| s / plan.deliveries.len().max(1) as u32)
        .filter(|g| !g.is_zero());
    for wave in 0..plan.waves() {
        let mut set = tokio::task::JoinSet::new();
        for d in plan.deliveries.iter().filter(|d| d.wave == wave) {
            if let Some(gap) = gap {
                tokio::time::sleep(gap).await;
            }
            if let Some(g) = cfg.gauge.as_deref() {
                g.wait_while_held(HOLD_MAX).await;
            }
            let (ctx, d) = (ctx.clone(), d.clone());
            set.spawn(async move { round::run_delivery(&ctx, &d).await });
        }
        while let Some(r) = set.join_next().await {
            r.map_err(|e| SendError::Internal(e.to_string()))?;
        }
    }
    let mut st = ctx.stats.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(e) = st.history_error.take() {
        return Err(SendError::History(e));
    }
    let mut s = st.summary.clone();
    s.deliveries = plan.deliveries.len();
    s.duration = start.elapsed();
    s.unreachable = st.exchanges > 0 && st.connect_failures == st.exchanges;
    Ok(s)
}

fn prepare(plan: &Plan, cfg: &SendConfig, sink: &HistorySink) -> Result<Ctx, SendError> {
    if !(cfg.time_scale.is_finite() && cfg.time_scale > 0.0) {
        return Err(SendError::Config(format!(
            "time scale {}: expected a number above 0",
            cfg.time_scale
        )));
    }
    if cfg.concurrency == 0 {
        return Err(SendError::Config("concurrency must be 1 or more".into()));
    }
    let mut uris = BTreeMap::new();
    let mut keys = BTreeMap::new();
    for (i, account) in plan.accounts.iter().enumerate() {
        let url = cfg.url_for(account);
        let uri: http::Uri = url.parse().map_err(|e| SendError::BadUrl {
            url: url.clone(),
            reason: format!("{e}"),
        })?;
        if !matches!(uri.scheme_str(), Some("http" | "https")) || uri.host().is_none() {
            return Err(SendError::BadUrl {
                url,
                reason: "expected http(s)://HOST[:PORT]/PATH".into(),
            });
        }
        uris.insert(account.clone(), uri);
        let current = cfg.secrets.get(account).filter(|s| !s.is_empty()).cloned().ok_or_else(|| {
            SendError::Config(format!(
                "scenario {} needs a secret for account {account:?} (hint: it sends to {} account(s))",
                plan.scenario,
                plan.accounts.len()
            ))
        })?;
        // A secret the scheme cannot key with (e.g. not base64 after whsec_) is a config error.
        cfg.profile
            .scheme
            .sign(
                &current,
                crate::profile::signature::SignInput {
                    id: "whd_check",
                    timestamp: 0,
                    body: b"{}",
                    url: "",
                },
            )
            .map_err(|e| SendError::Config(format!("secret for account {account:?}: {e}")))?;
        let retired = cfg
            .retired
            .get(account)
            .filter(|s| !s.is_empty())
            .cloned()
            .unwrap_or_else(|| {
                vec![tamper::derived_secret(
                    cfg.seed,
                    &format!("retired:{account}"),
                )]
            });
        let other = plan
            .accounts
            .iter()
            .cycle()
            .skip(i + 1)
            .take(plan.accounts.len() - 1)
            .find_map(|a| cfg.secrets.get(a).cloned());
        keys.insert(
            account.clone(),
            tamper::Keys {
                current,
                retired,
                other_account: other,
                wrong: tamper::derived_secret(cfg.seed, &format!("wrong:{account}")),
            },
        );
    }
    Ok(Ctx {
        scenario: plan.scenario.clone(),
        cfg: cfg.clone(),
        pooled: exchange::client(&cfg.profile, true, &cfg.roots),
        sem: Semaphore::new(cfg.concurrency),
        gate: RwLock::new(()),
        tls: uris
            .values()
            .any(|u| u.scheme_str() == Some("https"))
            .then(|| Arc::new(crate::net::tls::client_config(&cfg.roots))),
        signed_urls: plan
            .accounts
            .iter()
            .map(|a| (a.clone(), cfg.signed_url_for(a)))
            .collect(),
        uris,
        keys,
        sink: sink.clone(),
        stats: Mutex::new(Stats::default()),
        tickets: std::sync::atomic::AtomicU64::new(1),
        desk: Desk::new(
            plan.redeliver()
                .and_then(|r| r.hourly_limit)
                .unwrap_or(REDELIVERY_LIMIT_PER_HOUR),
            cfg.time_scale,
        ),
        while_pending: plan.redeliver().map(|r| r.while_pending).unwrap_or(0),
    })
}

/// Connects once to every target host, so a dead target fails the run fast.
async fn probe(ctx: &Ctx) -> Result<(), SendError> {
    let mut seen = std::collections::BTreeSet::new();
    for uri in ctx.uris.values() {
        let host = uri
            .host()
            .unwrap_or_default()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let port = uri
            .port_u16()
            .unwrap_or(if uri.scheme_str() == Some("https") {
                443
            } else {
                80
            });
        if !seen.insert((host.clone(), port)) {
            continue;
        }
        let res = tokio::time::timeout(
            ctx.cfg.probe_timeout,
            tokio::net::TcpStream::connect((host.as_str(), port)),
        )
        .await;
        let error = match res {
            Ok(Ok(_)) => continue,
            Ok(Err(e)) => e.to_string(),
            Err(_) => format!(
                "no connection within {}",
                crate::text::units::format_duration(ctx.cfg.probe_timeout)
            ),
        };
        return Err(SendError::Unreachable {
            url: uri.to_string(),
            error,
        });
    }
    Ok(())
}

/// One attempt's record, before it becomes a history line.
struct Record<'a> {
    d: &'a PlannedDelivery,
    id: &'a str,
    attempt: u32,
    round: u32,
    faults: Vec<FaultTag>,
    sent_at: String,
    answer: Option<&'a Answer>,
    error: Option<String>,
    outcome: Outcome,
    intent: Intent,
    detail: Option<String>,
    dead: bool,
}

impl Ctx {
    fn write(&self, event: Event) {
        if let Err(e) = self.sink.write(event) {
            let mut st = self.stats.lock().unwrap_or_else(|p| p.into_inner());
            st.history_error.get_or_insert(e);
        }
    }

    fn record(&self, r: Record<'_>) {
        {
            let mut st = self.stats.lock().unwrap_or_else(|p| p.into_inner());
            let s = &mut st.summary;
            s.attempts += 1;
            match r.outcome {
                Outcome::Ok => s.ok += 1,
                Outcome::Fail => s.fail += 1,
                Outcome::Info => s.info += 1,
            }
            if r.dead {
                s.dead += 1;
            }
            if self.cfg.gauge.is_some()
                && r.round == 0
                && r.intent == Intent::Genuine
                && !r.d.poison
            {
                if r.outcome == Outcome::Ok && !s.acked.iter().any(|(i, _)| *i == r.d.index) {
                    s.acked.push((r.d.index, Instant::now()));
                }
                if r.dead {
                    s.died.push(r.d.index);
                }
            }
            if let Some(a) = r.answer {
                st.exchanges += 1;
                if a.nothing_sent() {
                    st.connect_failures += 1;
                }
            }
        }
        let body = &r.d.body;
        let (key, job) = self.identity(r.d, r.id);
        // Which updates can win is the profile's rule (Profile::failed_can_win).
        let task_status = if self.cfg.profile.failed_can_win() {
            crate::delivery::TaskStatus::Completed
        } else {
            body.task.status
        };
        self.write(Event::Attempt(Attempt {
            job,
            attempt: r.attempt,
            round: r.round,
            faults: r.faults,
            sent_at: r.sent_at,
            status: r.answer.and_then(|a| a.status),
            latency_ms: r.answer.map(|a| a.latency_ms),
            error: r
                .error
                .or_else(|| r.answer.and_then(|a| a.error().map(str::to_string))),
            outcome: r.outcome,
            intent: r.intent,
            detail: r.detail,
            task_status: Some(task_status),
            created_at: Some(body.task.created_at.clone()),
            resource: body.resource.clone(),
            sequence: body.sequence,
            poison: r.d.poison,
            dead: r.dead,
            ..Attempt::new(&self.scenario, r.id, &key, &r.d.account)
        }));
    }

    /// A fresh request ticket when a front stands before the receiver: the
    /// front credits what it did to exactly this request (and copy).
    fn ticket(&self) -> Option<u64> {
        self.cfg.front.as_ref()?;
        Some(
            self.tickets
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        )
    }

    /// Adds the front's actions on the request sent under `ticket` to
    /// `faults`, and notes the first redirect.
    fn claim(
        &self,
        d: &PlannedDelivery,
        ticket: Option<u64>,
        answer: &Answer,
        faults: &mut Vec<FaultTag>,
    ) {
        let tags = match (self.cfg.front.as_ref(), ticket) {
            (Some(front), Some(t)) => front.take(t),
            _ => Vec::new(),
        };
        if let Some(status @ 300..=399) = answer.status {
            let by_front = tags.contains(&FaultTag::FrontRedirect);
            let location = answer
                .location
                .as_deref()
                .map(|l| request::resolve_location(l, self.uris.get(&d.account)));
            let mut st = self.stats.lock().unwrap_or_else(|p| p.into_inner());
            let found = &mut st.summary.redirects;
            if !found.iter().any(|r| r.by_front == by_front) {
                found.push(RedirectFinding {
                    status,
                    location,
                    by_front,
                });
            }
        }
        faults.extend(tags);
    }

    fn note(&self, fault: FaultName, action: String, detail: Option<String>) {
        self.write(Event::Fault(FaultEvent {
            scenario: self.scenario.clone(),
            at: now_rfc3339(),
            fault,
            action,
            detail,
        }));
    }

    fn tally(&self, f: impl FnOnce(&mut SendSummary)) {
        f(&mut self.stats.lock().unwrap_or_else(|p| p.into_inner()).summary);
    }

    fn skip(&self, d: &PlannedDelivery, why: String) {
        self.stats
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .summary
            .skipped += 1;
        self.write(Event::Fault(FaultEvent {
            scenario: self.scenario.clone(),
            at: now_rfc3339(),
            fault: FaultName::Tamper,
            action: format!("skip delivery {} ({})", d.id, d.body.task.id),
            detail: Some(why),
        }));
    }

    /// The history's `key` and `job` of a delivery sent under delivery id
    /// `id`: the profile's event identity and the object its update is
    /// about (answerline: the task id and the job key).
    fn identity(&self, d: &PlannedDelivery, id: &str) -> (String, Option<String>) {
        request::identity_of(&self.cfg.profile, &d.body, &d.bytes, id, d.job())
    }

    /// The delivery as the profile's provider sends it ([`request::localize`]).
    fn localize<'d>(&self, d: &'d PlannedDelivery) -> std::borrow::Cow<'d, PlannedDelivery> {
        request::localize(&self.cfg.profile, d)
    }

    /// The full header list of one request: scheme headers plus content
    /// type, delivery id, event type and the provider's own extras
    /// (`attempt` counts from 1 within a round).
    fn headers(
        &self,
        d: &PlannedDelivery,
        id: &str,
        attempt: u32,
        signed: &[(String, String)],
    ) -> Vec<(String, String)> {
        request::request_headers(&self.cfg.profile, &d.body, id, attempt, signed)
    }

    fn sign(
        &self,
        d: &PlannedDelivery,
        id: &str,
        forgery: Option<Forgery>,
    ) -> Result<tamper::Signed, String> {
        let keys = &self.keys[&d.account];
        if let Some(why) = forgery.and_then(|f| request::refusal(&self.cfg.profile, f)) {
            return Err(why);
        }
        tamper::sign(
            &self.cfg.profile.scheme,
            keys,
            tamper::SignRequest {
                url: &self.signed_urls[&d.account],
                id,
                body: &d.bytes,
                forgery,
                signing: d.signing,
                now: chrono::Utc::now().timestamp(),
                tolerance: self.cfg.profile.tolerance_secs(),
                max_body: self.cfg.max_body,
            },
        )
    }

    /// One exchange on the keep-alive pool; also says whether it ran while
    /// a database cut was in force (the gauge's window).
    async fn exchange(
        &self,
        d: &PlannedDelivery,
        headers: &[(String, String)],
        body: &[u8],
        ticket: Option<u64>,
    ) -> (Answer, Met) {
        let ticketed;
        let headers = match ticket {
            Some(t) => {
                ticketed = request::with_ticket(headers, t);
                &ticketed[..]
            }
            None => headers,
        };
        let _shared = self.gate.read().await;
        let _permit = self
            .sem
            .acquire()
            .await
            .expect("the semaphore is never closed");
        let ticket = self.begin(d);
        let answer = exchange::exchange(
            &self.pooled,
            &self.uris[&d.account],
            headers,
            Bytes::copy_from_slice(body),
            self.cfg.profile.timeout,
        )
        .await;
        let met = self.met(ticket, &answer);
        (answer, met)
    }

    /// Releases `n` copies of one request together (see [`copies`]), alone:
    /// no other exchange is in flight meanwhile. Returns when they were
    /// sent, and each copy's answer and what of the harness's outages it
    /// met (each copy is an exchange on the traffic gauge).
    async fn copies(
        &self,
        d: &PlannedDelivery,
        headers: &[(String, String)],
        body: &[u8],
        n: usize,
        tickets: Option<&[u64]>,
    ) -> (String, Vec<(Answer, Met)>) {
        let _alone = self.gate.write().await;
        let p = &self.cfg.profile;
        let sent_at = now_rfc3339();
        let ready = copies::prepare(&copies::Copies {
            uri: &self.uris[&d.account],
            headers,
            body,
            n,
            tickets: tickets.map(|t| (REQUEST_HEADER, t)),
            timeout: p.timeout,
            connect_timeout: p.connect_timeout.unwrap_or(p.timeout),
            tls: self.tls.clone(),
        })
        .await;
        // Each copy is an exchange on the gauge, told of its answer the
        // moment it came.
        let tickets: Vec<Mutex<Option<Ticket<'_>>>> =
            (0..n).map(|_| Mutex::new(self.begin(d))).collect();
        let mets: Vec<Mutex<Met>> = (0..n).map(|_| Mutex::default()).collect();
        let released = ready
            .release_observed(&|k, answer| {
                let ticket = tickets[k].lock().unwrap_or_else(|p| p.into_inner()).take();
                *mets[k].lock().unwrap_or_else(|p| p.into_inner()) = self.met(ticket, answer);
            })
            .await;
        let answers = released
            .answers
            .into_iter()
            .zip(mets)
            .map(|(answer, met)| (answer, met.into_inner().unwrap_or_else(|p| p.into_inner())))
            .collect();
        (sent_at, answers)
    }

    /// An exchange of `d` starts on the traffic gauge, if there is one.
    fn begin(&self, d: &PlannedDelivery) -> Option<Ticket<'_>> {
        let identity = delivery_identity(&d.account, &d.body.task.id);
        self.cfg
            .gauge
            .as_deref()
            .map(|g| g.begin_delivery(Some(identity)))
    }

    /// What of the harness's outages an exchange on `ticket` met, and the
    /// gauge told of its answer.
    fn met(&self, ticket: Option<Ticket<'_>>, answer: &Answer) -> Met {
        let met = Met {
            cut: ticket.as_ref().is_some_and(|t| t.overlaps_window()),
            down: answer.status.is_none() && ticket.as_ref().is_some_and(|t| t.overlaps_down()),
        };
        if let (Some(t), Some(status)) = (ticket, answer.status) {
            let latency = Duration::from_secs_f64(answer.latency_ms.max(0.0) / 1000.0);
            t.answered(self.cfg.profile.is_success(status), latency);
        }
        met
    }

    async fn sleep_scaled(&self, wait: Duration) {
        if !wait.is_zero() {
            tokio::time::sleep(wait.div_f64(self.cfg.time_scale)).await;
        }
    }
}

/// What of the harness's own outages an exchange met, read from the
/// traffic gauge: the database cut, or the receiver down with no answer.
#[derive(Debug, Clone, Copy, Default)]
struct Met {
    cut: bool,
    down: bool,
}

impl Met {
    /// Adds the tags saying so to an attempt's faults.
    fn tag(self, faults: &mut Vec<FaultTag>) {
        if self.cut {
            faults.push(FaultTag::DatabaseCut);
        }
        if self.down {
            faults.push(FaultTag::ReceiverDown);
        }
    }
}
