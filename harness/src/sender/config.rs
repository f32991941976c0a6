//! What a send is told and what it answers: the configuration (where,
//! as which profile, with which secrets and limits, shaped by the
//! scenario's run-time faults), the errors that make a whole send
//! impossible, and the summary of what it did.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::fault::front::FrontTags;
use crate::fault::gauge::TrafficGauge;
use crate::history::HistoryError;
use crate::plan::Plan;
use crate::profile::signature::Secret;
use crate::profile::Profile;

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
    pub roots: crate::net::tls::TrustedRoots,
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
    /// The URL the receiver knows itself by, when the requests go to
    /// another (a fault front before it): schemes that sign the URL
    /// (Twilio, Square, HubSpot, RFC 9421) sign this one, as the provider
    /// signs the URL it was configured with. `None`: `url`.
    pub signed_url: Option<String>,
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
            signed_url: None,
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

    /// The URL a signature covers for one account.
    pub fn signed_url_for(&self, account: &str) -> String {
        self.signed_url
            .as_deref()
            .unwrap_or(&self.url)
            .replace("{account}", account)
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
