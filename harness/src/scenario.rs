//! Scenarios: one TOML file per way a provider can misbehave.
//!
//! A scenario names the invariants it checks, says what a passing receiver
//! does and what a failure usually means, and describes its workload and
//! faults as data. Everything random in it is drawn later from the run's
//! seed ([`crate::workload::plan`]), so a scenario file plus a seed is a
//! complete, repeatable description of what was sent. Files are parsed with
//! `deny_unknown_fields`, so a typo is an error naming file and line rather
//! than a silently ignored key.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{read_toml, ConfigError};
use crate::units::HumanDuration;

/// The invariant ids a scenario may check.
pub const INVARIANT_IDS: [&str; 9] = ["I1", "I2", "I3", "I4", "I5", "I6", "I7", "I8", "I9"];

/// A parsed, validated scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// Unique name (also the history's `scenario` field).
    pub name: String,
    /// What the scenario does.
    pub description: String,
    /// What a correct receiver does.
    pub expect: String,
    /// What a failure usually means and how receivers fix it.
    pub when_it_fails: String,
    /// Invariant ids checked (`I1`..`I9`).
    pub check: Vec<String>,
    /// Tags for selecting scenarios (`process`, `signatures`, `ordering`, …).
    pub tags: Vec<String>,
    /// Time scale for this scenario; `None` means the run's.
    pub time_scale: Option<f64>,
    /// How long the receiver may take to drain its inbox; `None` means the run's.
    pub drain: Option<Duration>,
    /// Accounts the workload is sent to (the `{account}` of the URL).
    pub accounts: Vec<String>,
    /// The deliveries to generate.
    pub workload: Workload,
    /// Faults applied to the delivery stream, in order.
    pub faults: Vec<FaultSpec>,
    /// The file it came from.
    pub path: PathBuf,
}

/// What to generate: every count here is turned into deliveries by
/// [`crate::workload::plan`] with the run's seed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Workload {
    /// Number of jobs (idempotency keys without suffix).
    pub jobs: usize,
    /// Tasks per job: 1 is the original, more add resubmissions `-r1`, `-r2`, ….
    pub tasks_per_job: usize,
    /// Share of tasks that end FAILED rather than COMPLETED (0..=1).
    pub failed_share: f64,
    /// Dashboard test deliveries (`"test": true`), each on a fresh task id.
    pub test_deliveries: usize,
    /// Poison events: signed, well formed, `createdAt` not a valid date.
    pub poison: usize,
    /// A sequenced workload (per-resource sequence numbers), if any.
    pub sequenced: Option<Sequenced>,
}

impl Default for Workload {
    fn default() -> Self {
        Workload {
            jobs: 10,
            tasks_per_job: 1,
            failed_share: 0.0,
            test_deliveries: 0,
            poison: 0,
            sequenced: None,
        }
    }
}

/// Per-resource sequenced events, delivered shuffled and with gaps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sequenced {
    /// Number of resources.
    pub resources: usize,
    /// Events per resource.
    pub events: usize,
    /// Largest step between two sequence numbers (1 = no gaps).
    #[serde(default = "default_max_gap")]
    pub max_gap: u64,
}

fn default_max_gap() -> u64 {
    3
}

/// One fault applied to the delivery stream (`[[fault]]` with a `kind`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum FaultSpec {
    /// Send deliveries more than once.
    Duplicate(DuplicateSpec),
    /// Change the order deliveries are sent in.
    Reorder(ReorderSpec),
    /// Discard 2xx answers so the sender retries.
    DropAck(DropAckSpec),
    /// Add forged, test, oversized and rotated-key deliveries.
    Tamper(TamperSpec),
    /// Signal the receiver process (SIGKILL by default) under load and restart it.
    Kill(KillSpec),
    /// Cut the receiver's database for a while under load.
    CutDatabase(CutDatabaseSpec),
    /// Kill the separate worker process mid-batch and restart it.
    KillWorker(KillWorkerSpec),
    /// Put the fault front (an HTTP proxy) before the receiver.
    Front(FrontSpec),
    /// Dashboard redelivery rules: hourly limit, refused pending requests.
    Redeliver(RedeliverSpec),
    /// Reconcile against the harness's provider API after sending.
    Reconcile(ReconcileSpec),
}

impl FaultSpec {
    /// The fault's name as the history records it.
    pub fn name(&self) -> &'static str {
        match self {
            FaultSpec::Duplicate(_) => "duplicate",
            FaultSpec::Reorder(_) => "reorder",
            FaultSpec::DropAck(_) => "drop-ack",
            FaultSpec::Tamper(_) => "tamper",
            FaultSpec::Kill(_) => "kill",
            FaultSpec::CutDatabase(_) => "cut-database",
            FaultSpec::KillWorker(_) => "kill-worker",
            FaultSpec::Front(_) => "front",
            FaultSpec::Redeliver(_) => "redeliver",
            FaultSpec::Reconcile(_) => "reconcile",
        }
    }

    /// Whether the fault acts on processes or the database (lifecycle
    /// control) rather than on the delivery stream.
    pub fn is_process_fault(&self) -> bool {
        matches!(
            self,
            FaultSpec::Kill(_) | FaultSpec::CutDatabase(_) | FaultSpec::KillWorker(_)
        )
    }

    /// How long a process fault spreads the deliveries' first attempts over
    /// (a steady stream to act on).
    pub fn spread(&self) -> Option<Duration> {
        match self {
            FaultSpec::Kill(k) => Some(k.over.0),
            FaultSpec::CutDatabase(c) => Some(c.over.0),
            FaultSpec::KillWorker(k) => Some(k.over.0),
            _ => None,
        }
    }
}

/// The signal of a `kill` fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KillSignal {
    /// SIGKILL, then restart.
    Kill,
    /// SIGTERM (graceful), then restart.
    Term,
    /// SIGSTOP for `pause`, then SIGCONT.
    Stop,
}

/// `kind = "kill"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KillSpec {
    /// The signal.
    #[serde(default = "default_signal")]
    pub signal: KillSignal,
    /// How many times, at seeded random moments within `over`.
    #[serde(default = "default_kills")]
    pub count: u32,
    /// The steady stream's length: first attempts are spread over it.
    #[serde(default = "default_over")]
    pub over: HumanDuration,
    /// SIGSTOP only: how long the process stays paused.
    #[serde(default = "default_pause")]
    pub pause: HumanDuration,
    /// A crash point the receiver fires itself (`crash-after-commit=1/8`),
    /// used instead of timed kills when the target's lifecycle says
    /// `failpoints = true`.
    #[serde(default)]
    pub failpoint: Option<String>,
}

/// `kind = "kill-worker"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KillWorkerSpec {
    /// How many SIGKILLs, at seeded random moments within `over`.
    #[serde(default = "default_kills")]
    pub count: u32,
    /// The steady stream's length.
    #[serde(default = "default_over")]
    pub over: HumanDuration,
    /// A worker crash point (`crash-in-worker=3`) used instead of timed
    /// kills when the target's lifecycle says `failpoints = true`.
    #[serde(default)]
    pub failpoint: Option<String>,
}

/// How a database is cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CutVia {
    /// The fault proxy if configured, else the stop/start commands, else a SQLite lock.
    Auto,
    /// The fault proxy.
    Proxy,
    /// The stop and start commands.
    Commands,
    /// An exclusive lock on the SQLite file.
    SqliteLock,
}

/// What the fault proxy does during the cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CutMode {
    /// Reset new connections.
    Refuse,
    /// Reset existing and new connections.
    Reset,
    /// Swallow traffic: the receiver's own timeouts must end its waits.
    Blackhole,
    /// Delay every chunk by `latency`.
    Latency,
}

/// `kind = "cut-database"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CutDatabaseSpec {
    /// How.
    #[serde(default = "default_via")]
    pub via: CutVia,
    /// Proxy mode.
    #[serde(default = "default_cut_mode")]
    pub mode: CutMode,
    /// Proxy latency mode: the delay per chunk.
    #[serde(default = "default_latency")]
    pub latency: HumanDuration,
    /// When the cut starts, after sending starts.
    #[serde(default = "default_at")]
    pub at: HumanDuration,
    /// The least time the database stays cut (real time, never scaled);
    /// `min` is the same key.
    #[serde(default = "default_outage", alias = "min")]
    pub duration: HumanDuration,
    /// The cut holds until this many attempts sent during it have been
    /// answered (any status) while the database was down, so that a
    /// receiver whose connection pool waits longer than `duration` still has
    /// to answer during the outage.
    #[serde(default = "default_seen")]
    pub seen: u32,
    /// The longest the cut holds, seen or not (real time, never scaled).
    #[serde(default = "default_max_outage")]
    pub max: HumanDuration,
    /// The steady stream's length.
    #[serde(default = "default_over")]
    pub over: HumanDuration,
}

fn default_signal() -> KillSignal {
    KillSignal::Kill
}
fn default_kills() -> u32 {
    3
}
fn default_over() -> HumanDuration {
    HumanDuration(Duration::from_secs(2))
}
fn default_pause() -> HumanDuration {
    HumanDuration(Duration::from_millis(500))
}
fn default_via() -> CutVia {
    CutVia::Auto
}
fn default_cut_mode() -> CutMode {
    CutMode::Reset
}
fn default_latency() -> HumanDuration {
    HumanDuration(Duration::from_millis(200))
}
fn default_at() -> HumanDuration {
    HumanDuration(Duration::from_millis(300))
}
fn default_outage() -> HumanDuration {
    HumanDuration(Duration::from_secs(1))
}
fn default_seen() -> u32 {
    3
}
fn default_max_outage() -> HumanDuration {
    HumanDuration(Duration::from_secs(30))
}

/// How duplicates are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DuplicateMode {
    /// Copies released at the same instant on separate connections.
    Concurrent,
    /// Copies sent one after another, after the first ack.
    Sequential,
}

/// `kind = "duplicate"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DuplicateSpec {
    /// Concurrent or sequential.
    pub mode: DuplicateMode,
    /// Share of genuine deliveries affected (0..=1).
    #[serde(default = "one")]
    pub share: f64,
    /// Concurrent: fewest and most copies in all (2..=8).
    #[serde(default = "default_copies")]
    pub copies: [u32; 2],
    /// Sequential: exact replays of the acknowledged request.
    #[serde(default)]
    pub replay: u32,
    /// Sequential: replays with a fresh `Webhook-Id` (same body and signature).
    #[serde(default)]
    pub fresh_id: u32,
    /// Sequential: dashboard redeliveries (same id, signed afresh, full schedule).
    #[serde(default)]
    pub redeliver: u32,
}

fn one() -> f64 {
    1.0
}

fn default_copies() -> [u32; 2] {
    [2, 8]
}

/// How deliveries are reordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReorderMode {
    /// A seeded shuffle of the whole stream.
    Shuffle,
    /// Per job newest first, FAILED after COMPLETED, in waves.
    Reverse,
    /// Older tasks of a job held back until the newer are acknowledged;
    /// their first attempts count as failed.
    HoldBack,
}

/// `kind = "reorder"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReorderSpec {
    /// The mode.
    pub mode: ReorderMode,
    /// Hold-back: how many first attempts of a held delivery count as failed.
    #[serde(default = "default_hold")]
    pub hold_attempts: u32,
}

fn default_hold() -> u32 {
    2
}

/// `kind = "drop-ack"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DropAckSpec {
    /// Share of genuine deliveries whose acks are discarded (0..=1).
    #[serde(default = "one")]
    pub share: f64,
    /// How many 2xx answers of each are discarded before one is accepted.
    #[serde(default = "one_u32")]
    pub times: u32,
}

fn one_u32() -> u32 {
    1
}

/// A forged (or otherwise must-reject) delivery kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Forgery {
    /// Signed, then the body changed.
    TamperedBody,
    /// Signed with a secret the receiver never had.
    WrongSecret,
    /// No signature header.
    MissingHeader,
    /// A signature header that does not parse.
    MalformedHeader,
    /// Only a signature version the scheme does not define (`v2=`).
    UnknownSchemeOnly,
    /// Timestamp older than the tolerance by a minute.
    StaleTimestamp,
    /// Timestamp newer than the tolerance by a minute.
    FutureTimestamp,
    /// Signed with another account's secret, sent to this account.
    CrossAccount,
    /// A body over the receiver's limit (genuinely signed).
    Oversized,
    /// A genuine, already delivered request replayed after the tolerance.
    ExpiredReplay,
    /// Signed only with a secret the receiver has retired.
    RetiredSecret,
}

impl Forgery {
    /// Every kind, in a fixed order.
    pub const ALL: [Forgery; 11] = [
        Forgery::TamperedBody,
        Forgery::WrongSecret,
        Forgery::MissingHeader,
        Forgery::MalformedHeader,
        Forgery::UnknownSchemeOnly,
        Forgery::StaleTimestamp,
        Forgery::FutureTimestamp,
        Forgery::CrossAccount,
        Forgery::Oversized,
        Forgery::ExpiredReplay,
        Forgery::RetiredSecret,
    ];

    /// The kebab-case name (the history's `detail`).
    pub fn as_str(self) -> &'static str {
        match self {
            Forgery::TamperedBody => "tampered-body",
            Forgery::WrongSecret => "wrong-secret",
            Forgery::MissingHeader => "missing-header",
            Forgery::MalformedHeader => "malformed-header",
            Forgery::UnknownSchemeOnly => "unknown-scheme-only",
            Forgery::StaleTimestamp => "stale-timestamp",
            Forgery::FutureTimestamp => "future-timestamp",
            Forgery::CrossAccount => "cross-account",
            Forgery::Oversized => "oversized",
            Forgery::ExpiredReplay => "expired-replay",
            Forgery::RetiredSecret => "retired-secret",
        }
    }
}

/// Which secrets a genuine delivery is signed with during a key rotation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Signing {
    /// Every current secret (the normal case).
    #[serde(rename = "current")]
    Current,
    /// The retired secret(s) and the current ones: a provider mid-rotation.
    #[serde(rename = "old+new")]
    OldAndNew,
    /// Only the newest current secret.
    #[serde(rename = "new-only")]
    NewOnly,
}

/// `kind = "tamper"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TamperSpec {
    /// The forgery kinds to add (default: none).
    #[serde(default)]
    pub forgeries: Vec<Forgery>,
    /// How many of each kind, per account.
    #[serde(default = "one_usize")]
    pub each: usize,
    /// Key rotation: genuine deliveries are split evenly, in order, over these signings.
    #[serde(default)]
    pub rotation: Vec<Signing>,
}

fn one_usize() -> usize {
    1
}

/// `kind = "front"`: the fault front answers, delays or stalls attempts
/// before they reach the receiver; everything else is forwarded verbatim.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FrontSpec {
    /// Share of deliveries affected (0..=1), chosen by body from the seed.
    #[serde(default = "one")]
    pub share: f64,
    /// The first k attempts of an affected delivery are answered `status`
    /// (or stalled, with `stall_body`) instead of forwarded.
    #[serde(default)]
    pub fail_first: u32,
    /// The status answered to those attempts: a 5xx or 429.
    #[serde(default = "default_front_status")]
    pub status: u16,
    /// Answer every affected attempt with this redirect (301, 302, 307, 308).
    #[serde(default)]
    pub redirect: Option<u16>,
    /// Hold every forwarded request this long (real time) first.
    #[serde(default)]
    pub delay: Option<HumanDuration>,
    /// The first `fail_first` attempts dribble part of the body to the
    /// receiver, stall, and are then cut on both sides.
    #[serde(default)]
    pub stall_body: bool,
    /// Bytes forwarded before the stall.
    #[serde(default = "default_stall_bytes")]
    pub stall_after_bytes: usize,
    /// How long the stall lasts before the cut (real time).
    #[serde(default = "default_stall_for")]
    pub stall_for: HumanDuration,
}

fn default_front_status() -> u16 {
    503
}

fn default_stall_bytes() -> usize {
    40
}

fn default_stall_for() -> HumanDuration {
    HumanDuration(Duration::from_secs(1))
}

/// `kind = "redeliver"`: how the provider's dashboard treats redelivery requests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedeliverSpec {
    /// Redeliveries allowed per account per (scaled) hour; default: the profile's.
    #[serde(default)]
    pub hourly_limit: Option<u32>,
    /// Per delivery, redelivery requests made while it is still pending
    /// (they must be refused).
    #[serde(default)]
    pub while_pending: u32,
}

/// `kind = "reconcile"`: after sending, tell the receiver which tasks were
/// submitted and trigger its reconciliation against the provider API.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReconcileSpec {
    /// Extra submitted tasks that never finish (QUEUED or PROCESSING).
    #[serde(default)]
    pub pending: usize,
    /// Extra submitted tasks the provider no longer keeps (404).
    #[serde(default)]
    pub expired: usize,
    /// Share of task lookups answered 429 once before being served.
    #[serde(default)]
    pub throttle_share: f64,
}

/// The file shape: like [`Scenario`] with optional parts.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScenarioFile {
    name: String,
    description: String,
    expect: String,
    when_it_fails: String,
    check: Vec<String>,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    time_scale: Option<f64>,
    #[serde(default)]
    drain: Option<HumanDuration>,
    #[serde(default)]
    accounts: Option<Vec<String>>,
    #[serde(default)]
    workload: Workload,
    #[serde(default, rename = "fault")]
    faults: Vec<FaultSpec>,
}

impl Scenario {
    /// Reads and validates one scenario file.
    pub fn from_file(path: &Path) -> Result<Scenario, ConfigError> {
        let file: ScenarioFile = read_toml(path)?;
        let s = Scenario {
            name: file.name,
            description: file.description,
            expect: file.expect,
            when_it_fails: file.when_it_fails,
            check: file.check,
            tags: file.tags,
            time_scale: file.time_scale,
            drain: file.drain.map(|d| d.0),
            accounts: file.accounts.unwrap_or_else(|| vec!["acct_a".into()]),
            workload: file.workload,
            faults: file.faults,
            path: path.to_path_buf(),
        };
        s.validate().map_err(|m| ConfigError::invalid(path, m))?;
        Ok(s)
    }

    /// Reads every `*.toml` file directly in `dir`, sorted by scenario name;
    /// two files with one name are an error.
    pub fn load_dir(dir: &Path) -> Result<Vec<Scenario>, ConfigError> {
        let entries = std::fs::read_dir(dir).map_err(|e| ConfigError::new(dir, e.into()))?;
        let mut out = Vec::new();
        for entry in entries {
            let path = entry.map_err(|e| ConfigError::new(dir, e.into()))?.path();
            if path.is_file() && path.extension().is_some_and(|e| e == "toml") {
                out.push(Scenario::from_file(&path)?);
            }
        }
        out.sort_by(|a: &Scenario, b| a.name.cmp(&b.name));
        for pair in out.windows(2) {
            if pair[0].name == pair[1].name {
                return Err(ConfigError::invalid(
                    &pair[1].path,
                    format!(
                        "scenario name {:?} is also used by {} (hint: names must be unique)",
                        pair[1].name,
                        pair[0].path.display()
                    ),
                ));
            }
        }
        Ok(out)
    }

    /// How many accounts (and so secrets) the target must provide.
    pub fn needs_accounts(&self) -> usize {
        self.accounts.len()
    }

    /// The time scale to send with: the command line's when given, else the
    /// scenario's, else 1 (real time).
    pub fn effective_time_scale(&self, flag: Option<f64>) -> f64 {
        flag.or(self.time_scale).unwrap_or(1.0)
    }

    /// Whether the scenario carries tag `tag`.
    pub fn has_tag(&self, tag: &str) -> bool {
        self.tags.iter().any(|t| t == tag)
    }

    /// Whether the scenario checks invariant `id` (e.g. `"I4"`).
    pub fn checks(&self, id: &str) -> bool {
        self.check.iter().any(|c| c == id)
    }

    /// The scenario's fault front, if it asks for one.
    pub fn front(&self) -> Option<&FrontSpec> {
        self.faults.iter().find_map(|f| match f {
            FaultSpec::Front(x) => Some(x),
            _ => None,
        })
    }

    /// The scenario's redelivery rules, if it sets any.
    pub fn redeliver(&self) -> Option<&RedeliverSpec> {
        self.faults.iter().find_map(|f| match f {
            FaultSpec::Redeliver(x) => Some(x),
            _ => None,
        })
    }

    /// The scenario's reconciliation step, if it has one.
    pub fn reconcile(&self) -> Option<&ReconcileSpec> {
        self.faults.iter().find_map(|f| match f {
            FaultSpec::Reconcile(x) => Some(x),
            _ => None,
        })
    }

    /// The forgeries any tamper fault adds.
    pub fn forgeries(&self) -> impl Iterator<Item = Forgery> + '_ {
        self.faults.iter().flat_map(|f| match f {
            FaultSpec::Tamper(t) => t.forgeries.clone(),
            _ => Vec::new(),
        })
    }

    fn validate(&self) -> Result<(), String> {
        if self.name.trim().is_empty() || self.name.contains(char::is_whitespace) {
            return Err(format!(
                "name {:?}: expected a non-empty name without spaces",
                self.name
            ));
        }
        if self.check.is_empty() {
            return Err("check is empty (hint: list invariants like [\"I1\", \"I2\"])".into());
        }
        for c in &self.check {
            if !INVARIANT_IDS.contains(&c.as_str()) {
                return Err(format!(
                    "check: {c:?} is not an invariant (expected I1 to I9)"
                ));
            }
        }
        for (i, t) in self.tags.iter().enumerate() {
            let ok = !t.is_empty()
                && t.len() <= 32
                && t.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
            if !ok {
                return Err(format!(
                    "tag {t:?}: expected lowercase letters, digits or '-'"
                ));
            }
            if self.tags[..i].contains(t) {
                return Err(format!("tag {t:?} is listed twice"));
            }
        }
        if let Some(t) = self.time_scale {
            if !(t.is_finite() && t > 0.0) {
                return Err(format!("time_scale = {t}: expected a number above 0"));
            }
        }
        if self.accounts.is_empty() {
            return Err("accounts is empty (hint: omit it for [\"acct_a\"])".into());
        }
        for (i, a) in self.accounts.iter().enumerate() {
            let ok = !a.is_empty()
                && a.len() <= 64
                && a.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
            if !ok {
                return Err(format!(
                    "account {a:?}: expected letters, digits, '_' or '-'"
                ));
            }
            if self.accounts[..i].contains(a) {
                return Err(format!("account {a:?} is listed twice"));
            }
        }
        let w = &self.workload;
        if !(0.0..=1.0).contains(&w.failed_share) {
            return Err("workload.failed_share: expected a share between 0 and 1".into());
        }
        if w.tasks_per_job == 0 || w.tasks_per_job > 100 {
            return Err("workload.tasks_per_job: expected 1 to 100".into());
        }
        let total = w.jobs * w.tasks_per_job
            + w.test_deliveries
            + w.poison
            + w.sequenced
                .as_ref()
                .map(|s| s.resources * s.events)
                .unwrap_or(0);
        if total > 10_000_000 {
            return Err(format!("workload has {total} deliveries: at most 10000000"));
        }
        if let Some(s) = &w.sequenced {
            if s.max_gap == 0 {
                return Err("workload.sequenced.max_gap: expected 1 or more".into());
            }
        }
        for f in &self.faults {
            match f {
                FaultSpec::Duplicate(d) => {
                    check_share("duplicate", d.share)?;
                    let [lo, hi] = d.copies;
                    if lo < 2 || hi > 8 || lo > hi {
                        return Err(format!(
                            "duplicate copies = [{lo}, {hi}]: expected 2 <= low <= high <= 8"
                        ));
                    }
                    if d.mode == DuplicateMode::Sequential
                        && d.replay + d.fresh_id + d.redeliver == 0
                    {
                        return Err("sequential duplicate sends nothing (hint: set replay, fresh_id or redeliver)".into());
                    }
                }
                FaultSpec::Reorder(r) => {
                    if r.hold_attempts > 9 {
                        return Err("reorder hold_attempts: expected 0 to 9".into());
                    }
                }
                FaultSpec::DropAck(d) => {
                    check_share("drop-ack", d.share)?;
                    if d.times == 0 || d.times > 20 {
                        return Err("drop-ack times: expected 1 to 20".into());
                    }
                }
                FaultSpec::Tamper(t) => {
                    if t.forgeries.contains(&Forgery::CrossAccount) && self.accounts.len() < 2 {
                        return Err(
                            "tamper cross-account needs two accounts (hint: accounts = [\"acct_a\", \"acct_b\"])"
                                .into(),
                        );
                    }
                    if t.each > 1000 {
                        return Err("tamper each: expected at most 1000".into());
                    }
                }
                FaultSpec::Kill(KillSpec { count, over, .. })
                | FaultSpec::KillWorker(KillWorkerSpec { count, over, .. }) => {
                    if *count > 1000 {
                        return Err(format!("{} count: expected at most 1000", f.name()));
                    }
                    if over.0 > Duration::from_secs(3600) {
                        return Err(format!("{} over: expected at most 1h", f.name()));
                    }
                }
                FaultSpec::CutDatabase(c) => {
                    if c.duration.0.is_zero() || c.duration.0 > Duration::from_secs(3600) {
                        return Err(
                            "cut-database duration: expected more than 0 and at most 1h".into()
                        );
                    }
                    if c.max.0 < c.duration.0 || c.max.0 > Duration::from_secs(3600) {
                        return Err(format!(
                            "cut-database max = {}: expected at least duration ({}) and at most 1h",
                            c.max, c.duration
                        ));
                    }
                    if c.seen == 0 || c.seen > 1000 {
                        return Err("cut-database seen: expected 1 to 1000".into());
                    }
                }
                FaultSpec::Front(f) => {
                    check_share("front", f.share)?;
                    if !(f.status == 429 || (500..=599).contains(&f.status)) {
                        return Err(format!(
                            "front status = {}: expected 429 or a 5xx",
                            f.status
                        ));
                    }
                    if let Some(r) = f.redirect {
                        if ![301, 302, 307, 308].contains(&r) {
                            return Err(format!(
                                "front redirect = {r}: expected 301, 302, 307 or 308"
                            ));
                        }
                    }
                    if f.fail_first > 100 {
                        return Err("front fail_first: expected 0 to 100".into());
                    }
                    if f.stall_body && f.fail_first == 0 {
                        return Err(
                            "front stall_body stalls the first fail_first attempts (hint: set fail_first = 1)"
                                .into(),
                        );
                    }
                }
                FaultSpec::Redeliver(r) => {
                    if r.hourly_limit == Some(0) {
                        return Err("redeliver hourly_limit: expected 1 or more".into());
                    }
                    if r.while_pending > 10 {
                        return Err("redeliver while_pending: expected 0 to 10".into());
                    }
                }
                FaultSpec::Reconcile(r) => {
                    check_share("reconcile throttle", r.throttle_share)?;
                    if r.pending + r.expired > 10_000 {
                        return Err("reconcile pending + expired: expected at most 10000".into());
                    }
                }
            }
        }
        Ok(())
    }
}

fn check_share(fault: &str, share: f64) -> Result<(), String> {
    if (0.0..=1.0).contains(&share) {
        Ok(())
    } else {
        Err(format!("{fault} share = {share}: expected 0 to 1"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.toml");
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    const HEAD: &str = "name = \"x\"\ndescription = \"d\"\nexpect = \"e\"\nwhen_it_fails = \"w\"\n";

    #[test]
    fn a_minimal_scenario_gets_the_defaults() {
        let (_d, p) = write(&format!("{HEAD}check = [\"I1\"]\n"));
        let s = Scenario::from_file(&p).unwrap();
        assert_eq!(s.accounts, vec!["acct_a"]);
        assert_eq!(s.workload, Workload::default());
        assert!(s.faults.is_empty() && s.time_scale.is_none());
        assert!(s.tags.is_empty());
    }

    #[test]
    fn tags_are_read_and_checked() {
        let (_d, p) = write(&format!(
            "{HEAD}check = [\"I1\"]\ntags = [\"process\", \"ordering\"]\n"
        ));
        let s = Scenario::from_file(&p).unwrap();
        assert!(s.has_tag("process") && s.has_tag("ordering") && !s.has_tag("signatures"));
        let (_d, p) = write(&format!("{HEAD}check = [\"I1\"]\ntags = [\"Not A Tag\"]\n"));
        let e = Scenario::from_file(&p).unwrap_err().to_string();
        assert!(e.contains("lowercase"), "{e}");
    }

    #[test]
    fn malformed_scenario_names_file_and_line() {
        let (_d, p) = write(&format!(
            "{HEAD}check = [\"I1\"]\n\n[workload]\njobs = \"many\"\n"
        ));
        let e = Scenario::from_file(&p).unwrap_err().to_string();
        assert!(e.contains("s.toml") && e.contains("line 8"), "{e}");
    }

    #[test]
    fn unknown_fault_keys_are_rejected() {
        let (_d, p) = write(&format!(
            "{HEAD}check = [\"I1\"]\n[[fault]]\nkind = \"drop-ack\"\nshare = 0.5\ntimez = 2\n"
        ));
        let e = Scenario::from_file(&p).unwrap_err().to_string();
        assert!(e.contains("timez"), "{e}");
    }

    #[test]
    fn unknown_invariant_ids_are_rejected() {
        let (_d, p) = write(&format!("{HEAD}check = [\"I10\"]\n"));
        let e = Scenario::from_file(&p).unwrap_err().to_string();
        assert!(e.contains("\"I10\" is not an invariant"), "{e}");
    }

    #[test]
    fn a_cut_holds_until_seen_and_old_files_with_duration_only_still_parse() {
        let (_d, p) = write(&format!(
            "{HEAD}check = [\"I1\"]\n[[fault]]\nkind = \"cut-database\"\nduration = \"2s\"\n"
        ));
        let s = Scenario::from_file(&p).unwrap();
        let FaultSpec::CutDatabase(c) = &s.faults[0] else {
            panic!("{:?}", s.faults)
        };
        assert_eq!(
            c.duration.0,
            Duration::from_secs(2),
            "duration is the minimum"
        );
        assert_eq!((c.seen, c.max.0), (3, Duration::from_secs(30)));
        let (_d, p) = write(&format!(
            "{HEAD}check = [\"I1\"]\n[[fault]]\nkind = \"cut-database\"\nmin = \"500ms\"\nseen = 1\nmax = \"5s\"\n"
        ));
        let s = Scenario::from_file(&p).unwrap();
        let FaultSpec::CutDatabase(c) = &s.faults[0] else {
            panic!("{:?}", s.faults)
        };
        assert_eq!(c.duration.0, Duration::from_millis(500));
        assert_eq!((c.seen, c.max.0), (1, Duration::from_secs(5)));
        let (_d, p) = write(&format!(
            "{HEAD}check = [\"I1\"]\n[[fault]]\nkind = \"cut-database\"\nduration = \"5s\"\nmax = \"2s\"\n"
        ));
        let e = Scenario::from_file(&p).unwrap_err().to_string();
        assert!(e.contains("max = 2s: expected at least duration"), "{e}");
        let (_d, p) = write(&format!(
            "{HEAD}check = [\"I1\"]\n[[fault]]\nkind = \"cut-database\"\nseen = 0\n"
        ));
        let e = Scenario::from_file(&p).unwrap_err().to_string();
        assert!(e.contains("seen: expected 1 to 1000"), "{e}");
    }

    #[test]
    fn cross_account_forgery_needs_two_accounts() {
        let (_d, p) = write(&format!(
            "{HEAD}check = [\"I4\"]\n[[fault]]\nkind = \"tamper\"\nforgeries = [\"cross-account\"]\n"
        ));
        let e = Scenario::from_file(&p).unwrap_err().to_string();
        assert!(e.contains("two accounts"), "{e}");
    }
}
