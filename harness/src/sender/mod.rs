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
use rand_chacha::ChaCha8Rng;
use tokio::sync::{RwLock, Semaphore};

use crate::fault::front::{FrontTags, REQUEST_HEADER};
use crate::fault::gauge::TrafficGauge;
use crate::fault::redeliver::{Desk, Refusal, Standing};
use crate::fault::tamper;
use crate::history::{
    now_rfc3339, Attempt, Event, FaultEvent, HistoryError, HistorySink, Intent, Outcome,
};
use crate::plan::{Plan, PlannedDelivery, Redelivery};
use crate::profile::envelope;
use crate::profile::signature::{Scheme, Secret};
use crate::profile::REDELIVERY_LIMIT_PER_HOUR;
use crate::profile::{BodyShape, Freshness, Identity, Profile, Semantics};
use crate::scenario::{Forgery, Signing};
use crate::tag::{FaultName, FaultTag};

pub mod copies;
pub mod exchange;

use exchange::{classify, Answer, HttpClient};

/// Longest the stream of first attempts waits for the nemesis to release
/// it (it always does once the restarted receiver is ready or has failed).
const HOLD_MAX: Duration = Duration::from_secs(300);

/// How to send.
#[derive(Debug, Clone)]
pub struct SendConfig {
    /// Target URL; `{account}` is replaced by each delivery's account.
    pub url: String,
    /// The sender profile.
    pub profile: Profile,
    /// Per account: the secrets the receiver accepts, oldest first.
    pub secrets: BTreeMap<String, Vec<Secret>>,
    /// Real waits are divided by this.
    pub time_scale: f64,
    /// The seed that drives the plan and the jitter.
    pub seed: u64,
    /// Most exchanges in flight at once.
    pub concurrency: usize,
    /// The receiver's body limit, in bytes (oversized bodies exceed it).
    pub max_body: usize,
    /// Per account: secrets the receiver has retired (key rotation). When an
    /// account has none, one is derived from the seed: a receiver never had
    /// it, which is what "retired" means to it.
    pub retired: BTreeMap<String, Vec<Secret>>,
    /// How long the reachability probe may take per host.
    pub probe_timeout: Duration,
    /// CA certificates trusted beyond the web roots (https targets).
    pub roots: crate::tls::TrustedRoots,
    /// Spread the deliveries' starts evenly over this (a steady stream for
    /// process faults to act on); `None` starts them all at once.
    pub spread: Option<Duration>,
    /// The fault front's action tags, when a front stands before the receiver.
    pub front: Option<FrontTags>,
    /// Live traffic counters for the nemesis, updated around every exchange.
    pub gauge: Option<Arc<TrafficGauge>>,
    /// The round the plan's deliveries start at: 0 for a scenario's stream,
    /// 1 for redeliveries sent after it (their attempts carry
    /// `duplicate-redeliver`; their own redeliveries are not sent).
    pub first_round: u32,
}

impl SendConfig {
    /// A configuration with defaults: time scale 1, seed 0, 16 in flight,
    /// 1 MiB body limit, no retired secrets.
    pub fn new(
        url: impl Into<String>,
        profile: Profile,
        secrets: BTreeMap<String, Vec<Secret>>,
    ) -> Self {
        SendConfig {
            url: url.into(),
            profile,
            secrets,
            time_scale: 1.0,
            seed: 0,
            concurrency: 16,
            max_body: 1 << 20,
            retired: BTreeMap::new(),
            probe_timeout: Duration::from_secs(2),
            roots: Default::default(),
            spread: None,
            front: None,
            gauge: None,
            first_round: 0,
        }
    }

    /// The configuration that sends `plan` to `target` as the run does: its
    /// URL, profile, secrets (and the retired ones), body limit, trusted
    /// roots, the plan's seed and the stream spread its faults want. A
    /// run-time fault then shapes the rest (a front, a traffic gauge).
    pub fn for_target(
        target: &crate::target::Target,
        plan: &Plan,
        time_scale: f64,
        concurrency: usize,
    ) -> Self {
        SendConfig {
            time_scale,
            seed: plan.seed,
            concurrency,
            max_body: target.max_body,
            roots: target.roots.clone(),
            retired: target
                .retired
                .iter()
                .map(|(k, v)| (k.clone(), vec![v.clone()]))
                .collect(),
            spread: plan.spread(),
            ..SendConfig::new(
                target.url.clone(),
                target.profile.clone(),
                target.secrets.clone(),
            )
        }
    }

    /// The URL for one account.
    pub fn url_for(&self, account: &str) -> String {
        self.url.replace("{account}", account)
    }
}

/// The whole run cannot go on.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    /// The target URL is not usable.
    #[error("target url {url:?}: {reason}")]
    BadUrl {
        /// The URL (after `{account}` substitution).
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The configuration does not fit the scenario.
    #[error("{0}")]
    Config(String),
    /// Nothing listens at the target.
    #[error(
        "target {url} is unreachable: {error} (hint: is the receiver running and listening there?)"
    )]
    Unreachable {
        /// The URL.
        url: String,
        /// The connect error.
        error: String,
    },
    /// The history could not be written: results would be lost.
    #[error("history: {0}")]
    History(#[from] HistoryError),
    /// A sending task crashed.
    #[error("internal error: {0}")]
    Internal(String),
}

/// What a send did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SendSummary {
    /// Deliveries planned.
    pub deliveries: usize,
    /// Attempt lines written (held-back attempts included).
    pub attempts: usize,
    /// Attempts graded `ok`.
    pub ok: usize,
    /// Attempts graded `fail`.
    pub fail: usize,
    /// Attempts graded `info`.
    pub info: usize,
    /// Deliveries that died.
    pub dead: usize,
    /// Wall time of the send.
    pub duration: Duration,
    /// Every exchange failed to connect.
    pub unreachable: bool,
    /// Deliveries skipped because their forgery does not apply to the scheme.
    pub skipped: usize,
    /// The first redirect the receiver answered, and the first the
    /// harness's own front answered (at most one of each).
    pub redirects: Vec<RedirectFinding>,
    /// Dashboard redeliveries sent.
    pub redelivered: usize,
    /// Redelivery requests refused because the delivery was pending.
    pub refused_pending: usize,
    /// Redelivery requests that hit the hourly limit and had to wait.
    pub throttled: usize,
    /// With a traffic gauge (process faults): each genuine delivery's index
    /// and when its first round was first acknowledged.
    pub acked: Vec<(usize, Instant)>,
    /// With a traffic gauge: the genuine deliveries whose first round died.
    pub died: Vec<usize>,
}

impl SendSummary {
    /// Adds a later send's counts (redeliveries after the stream).
    pub fn merge(&mut self, later: SendSummary) {
        self.attempts += later.attempts;
        self.ok += later.ok;
        self.fail += later.fail;
        self.info += later.info;
        self.dead += later.dead;
        self.duration += later.duration;
        self.skipped += later.skipped;
        self.redirects.extend(later.redirects);
        self.redelivered += later.redelivered;
        self.refused_pending += later.refused_pending;
        self.throttled += later.throttled;
    }
}

/// A 3xx answer seen while sending: the URL to register instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedirectFinding {
    /// The status.
    pub status: u16,
    /// Its `Location`, if it had one.
    pub location: Option<String>,
    /// The harness's own redirecting front answered it, not the receiver.
    pub by_front: bool,
}

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
            set.spawn(async move { run_delivery(&ctx, &d).await });
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
            .then(|| Arc::new(crate::tls::client_config(&cfg.roots))),
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
                crate::units::format_duration(ctx.cfg.probe_timeout)
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
            crate::plan::delivery::TaskStatus::Completed
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
            // A relative Location is resolved against the URL sent to.
            let location = answer.location.as_ref().map(|l| {
                match (l.starts_with('/'), self.uris.get(&d.account)) {
                    (true, Some(u)) => format!(
                        "{}://{}{l}",
                        u.scheme_str().unwrap_or("http"),
                        u.authority().map(|a| a.as_str()).unwrap_or_default()
                    ),
                    _ => l.clone(),
                }
            });
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
        identity_of(&self.cfg.profile, &d.body, &d.bytes, id, d.job())
    }

    /// The delivery as the profile's provider sends it: its envelope,
    /// its kind of delivery ids. Answerline deliveries stay as planned.
    fn localize<'d>(&self, d: &'d PlannedDelivery) -> std::borrow::Cow<'d, PlannedDelivery> {
        let p = &self.cfg.profile;
        let shape = p.body;
        if shape == BodyShape::Answerline && p.body_template.is_none() {
            return std::borrow::Cow::Borrowed(d);
        }
        let mut l = d.clone();
        l.id = envelope::delivery_id(shape, &d.id);
        l.bytes = match &p.body_template {
            Some(t) => envelope::fill_template(t, shape, &d.body),
            None => envelope::render(shape, &d.body, d.raw_note),
        };
        for r in l.redeliveries.iter_mut() {
            if let Redelivery::FreshId(id) = r {
                *id = envelope::delivery_id(shape, id);
            }
        }
        std::borrow::Cow::Owned(l)
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
        request_headers(&self.cfg.profile, &d.body, id, attempt, signed)
    }

    fn sign(
        &self,
        d: &PlannedDelivery,
        id: &str,
        forgery: Option<Forgery>,
    ) -> Result<tamper::Signed, String> {
        let keys = &self.keys[&d.account];
        let sem = &self.cfg.profile.semantics;
        match forgery {
            Some(Forgery::FutureTimestamp) if !sem.refuses_future() => {
                return Err(format!(
                    "future-timestamp: under profile {} the provider's own verifier accepts a future timestamp, so refusing it is not required",
                    self.cfg.profile.name
                ))
            }
            Some(f @ (Forgery::StaleTimestamp | Forgery::ExpiredReplay))
                if sem.freshness == Freshness::None =>
            {
                return Err(format!(
                    "{}: under profile {} no timestamp is checked, so replays cannot be refused by age",
                    f.as_str(),
                    self.cfg.profile.name
                ))
            }
            _ => {}
        }
        tamper::sign(
            &self.cfg.profile.scheme,
            keys,
            tamper::SignRequest {
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
                ticketed = with_ticket(headers, t);
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
        let ticket = self.cfg.gauge.as_deref().map(TrafficGauge::begin);
        let answer = exchange::exchange(
            &self.pooled,
            &self.uris[&d.account],
            headers,
            Bytes::copy_from_slice(body),
            self.cfg.profile.timeout,
        )
        .await;
        let met = Met {
            cut: ticket.as_ref().is_some_and(|t| t.overlaps_window()),
            down: answer.status.is_none() && ticket.as_ref().is_some_and(|t| t.overlaps_down()),
        };
        if let (Some(t), Some(status)) = (ticket, answer.status) {
            let latency = Duration::from_secs_f64(answer.latency_ms.max(0.0) / 1000.0);
            t.answered(self.cfg.profile.is_success(status), latency);
        }
        (answer, met)
    }

    /// Releases `n` copies of one request together (see [`copies`]), alone:
    /// no other exchange is in flight meanwhile. Returns when they were
    /// sent and their answers.
    async fn copies(
        &self,
        d: &PlannedDelivery,
        headers: &[(String, String)],
        body: &[u8],
        n: usize,
        tickets: Option<&[u64]>,
    ) -> (String, Vec<Answer>) {
        let _alone = self.gate.write().await;
        let p = &self.cfg.profile;
        let sent_at = now_rfc3339();
        let released = copies::release(&copies::Copies {
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
        (sent_at, released.answers)
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

/// `headers` plus the front's request ticket.
fn with_ticket(headers: &[(String, String)], ticket: u64) -> Vec<(String, String)> {
    let mut h = headers.to_vec();
    h.push((REQUEST_HEADER.to_string(), ticket.to_string()));
    h
}

/// The full header list of one request as `profile` sends it: content
/// type, delivery id and event type, then the scheme's `signed` headers.
pub fn request_headers(
    profile: &Profile,
    body: &crate::plan::delivery::Body,
    id: &str,
    attempt: u32,
    signed: &[(String, String)],
) -> Vec<(String, String)> {
    let p = profile;
    let mut h = vec![("Content-Type".to_string(), "application/json".to_string())];
    if let Some(idh) = p.delivery_id_header() {
        if !signed.iter().any(|(k, _)| k.eq_ignore_ascii_case(idh)) {
            h.push((idh.to_string(), id.to_string()));
        }
    }
    if let Some(ev) = &p.event_header {
        h.push((ev.clone(), envelope::event_type(p.body, body).to_string()));
    }
    h.extend(envelope::extra_headers(p.body, body, attempt));
    if let Identity::Header(name) = &p.semantics.identity {
        if !h.iter().any(|(k, _)| k.eq_ignore_ascii_case(name)) {
            h.push((name.clone(), envelope::event_id(p.body, body)));
        }
    }
    h.extend(signed.iter().cloned());
    h
}

/// One delivery as the profile's provider sends it, outside a plan (the
/// preflight): its delivery id, body bytes and the history key (the
/// profile's event identity) for a body planned as `body` under `id`.
pub fn provider_request(
    profile: &Profile,
    body: &crate::plan::delivery::Body,
    id: &str,
) -> (String, Vec<u8>, String) {
    let shape = profile.body;
    if shape == BodyShape::Answerline && profile.body_template.is_none() {
        let bytes = serde_json::to_vec(body).unwrap_or_default();
        let (key, _) = identity_of(profile, body, &bytes, id, None);
        return (id.to_string(), bytes, key);
    }
    let id = envelope::delivery_id(shape, id);
    let bytes = match &profile.body_template {
        Some(t) => envelope::fill_template(t, shape, body),
        None => envelope::render(shape, body, false),
    };
    let (key, _) = identity_of(profile, body, &bytes, &id, None);
    (id, bytes, key)
}

/// The history's `key` and `job` of a delivery with this body (as planned
/// and as sent) under delivery id `id`: the profile's event identity and
/// the object its update is about (answerline: the task id and the job key).
fn identity_of(
    p: &Profile,
    body: &crate::plan::delivery::Body,
    bytes: &[u8],
    id: &str,
    job: Option<String>,
) -> (String, Option<String>) {
    let own_body = p.body != BodyShape::Answerline || p.body_template.is_some();
    if !own_body && p.semantics == Semantics::answerline() {
        return (body.task.id.clone(), job);
    }
    let key = match &p.semantics.identity {
        Identity::TaskId => body.task.id.clone(),
        Identity::DeliveryId => id.to_string(),
        Identity::Header(_) => envelope::event_id(p.body, body),
        Identity::Body(pointer) => crate::profile::pointer_text(bytes, pointer)
            .unwrap_or_else(|| envelope::event_id(p.body, body)),
    };
    let job = match &p.semantics.object {
        _ if job.is_none() => None,
        Some(pointer) if own_body => crate::profile::pointer_text(bytes, pointer),
        _ => job,
    };
    (key, job)
}

/// The signed request a round ended with, when it was acknowledged.
struct Delivered {
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

async fn run_delivery(ctx: &Ctx, d: &PlannedDelivery) {
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
                let Some(got) = delivered.as_ref() else {
                    ctx.write(Event::Fault(FaultEvent {
                        scenario: ctx.scenario.clone(),
                        at: now_rfc3339(),
                        fault: FaultName::Duplicate,
                        action: format!("skip replay of {}", d.id),
                        detail: Some(
                            "the delivery was never acknowledged, so there is no request to replay"
                                .into(),
                        ),
                    }));
                    continue;
                };
                let (id, name, headers, detail) = match redelivery {
                    Redelivery::FreshId(new_id) => {
                        let headers =
                            if matches!(ctx.cfg.profile.scheme, Scheme::StandardWebhooks { .. }) {
                                // The id is signed under this scheme: sign again with the new id.
                                match ctx.sign(d, new_id, None) {
                                    Ok(s) => ctx.headers(d, new_id, 1, &s.headers),
                                    Err(why) => {
                                        ctx.skip(d, why);
                                        continue;
                                    }
                                }
                            } else {
                                let idh =
                                    ctx.cfg.profile.delivery_id_header().unwrap_or("Webhook-Id");
                                got.headers
                                    .iter()
                                    .map(|(k, v)| {
                                        if k.eq_ignore_ascii_case(idh) {
                                            (k.clone(), new_id.clone())
                                        } else {
                                            (k.clone(), v.clone())
                                        }
                                    })
                                    .collect()
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
            Redelivery::Redeliver => {
                let standing = if delivered.is_some() {
                    Standing::Delivered
                } else {
                    Standing::Dead
                };
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
                                    crate::units::format_duration(retry_in)
                                ),
                                None,
                            );
                            tokio::time::sleep(retry_in.max(Duration::from_millis(1))).await;
                        }
                        Err(Refusal::Pending) => break,
                    }
                }
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
    let max = if d.single_attempt {
        1
    } else {
        schedule.max_attempts.max(1)
    };
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
            let mut faults = base_faults.clone();
            faults.push(FaultTag::HoldBack);
            ctx.record(Record {
                d,
                id: &d.id,
                attempt: n,
                round,
                faults,
                sent_at: now_rfc3339(),
                answer: None,
                error: Some("held back: this attempt was not sent".into()),
                outcome: Outcome::Fail,
                intent: d.intent,
                detail: d.detail.clone(),
                dead: false,
            });
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
        let tickets: Option<Vec<u64>> = ctx
            .cfg
            .front
            .is_some()
            .then(|| (0..copies).filter_map(|_| ctx.ticket()).collect());
        let (sent_at, answers, met) = if copies > 1 {
            let (sent_at, answers) = ctx
                .copies(
                    d,
                    &headers,
                    &signed.body,
                    copies as usize,
                    tickets.as_deref(),
                )
                .await;
            (sent_at, answers, Met::default())
        } else {
            let sent_at = now_rfc3339();
            let ticket = tickets.as_ref().map(|t| t[0]);
            let (answer, met) = ctx.exchange(d, &headers, &signed.body, ticket).await;
            (sent_at, vec![answer], met)
        };
        let mut main = None;
        for (k, answer) in answers.iter().enumerate() {
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
        let answer = &answers[0];
        let mut outcome = grade.outcome;
        let mut delivered = grade.delivered;
        // Slack enables an Events URL only when its url_verification is
        // answered with the challenge: a bare 2xx ends the delivery failed.
        let mut error = None;
        let p = &ctx.cfg.profile;
        if delivered
            && d.intent == Intent::Test
            && p.body == BodyShape::Slack
            && p.body_template.is_none()
            && !envelope::echoes_challenge(&d.body, &answer.body)
        {
            outcome = Outcome::Fail;
            error = Some("the answer did not echo the url_verification challenge".into());
        }
        if delivered && drops_left > 0 && !d.single_attempt {
            drops_left -= 1;
            outcome = Outcome::Info;
            delivered = false;
            faults.push(FaultTag::DropAck);
        }
        let last = n == max || grade.give_up || delivered;
        let dead = last && !delivered && matches!(d.intent, Intent::Genuine | Intent::Test);
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
