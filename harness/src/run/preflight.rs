//! Preflight: checks a target the way a provider's dashboard checks an
//! endpoint, before the first scenario, so a configuration mistake ends a
//! run within seconds with what to fix (exit 3) instead of every scenario
//! waiting out its drain and ending `unknown`.
//!
//! In order, stopping at the first problem: the state source answers and
//! parses; the reset hook works; per account, a signed test delivery
//! (`"test": true`) gets a 2xx; per account, one genuine delivery is
//! acknowledged and then shows up in the state; the reset hook cleans it
//! away. Its task ids (`tsk_preflight_…`) can never equal a scenario's
//! (`tsk_` and 16 hex digits), so where there is no reset hook the rows it
//! leaves are excluded by key like any row present before a scenario.
//!
//! Answers that may be passing trouble (5xx, 429, a reset connection) are
//! tried [`TRIES`] times; a redirect, a 4xx or an unreachable receiver are
//! configuration, reported at once. A delivery that was not answered within
//! the profile's timeout is sent again as its provider would retry it (the
//! same identity, a fresh signature), up to [`TRIES`] attempts of the
//! timeout each: only a receiver that answered none of them is called
//! stuck. One answered late once is slow, and slow answers are what the
//! scenarios judge (I7, and I3 where the retried effect runs twice), so the
//! run goes on with a note saying so. Findings are typed ([`Problem`]);
//! [`Finding::render`] words them with [`Words`], which say how the target
//! was given (flags or a file), so each hint names the flag, file key or
//! environment variable to fix.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use rand::Rng;

use crate::fault::tamper;
use crate::history::TransportFailure;
use crate::plan::delivery::{Body, Task, TaskStatus};
use crate::run::coverage::TargetFacts;
use crate::scenario::Signing;
use crate::sender::exchange::{self, Answer, HttpClient};
use crate::state::probe::{Probe, ProbeError, DRAIN_POLL};
use crate::target::{redact_url, Target};
use crate::units::format_duration;

/// How long one state read or hook call may take here, unless `[state]`
/// sets its own `timeout`.
pub const CALL_LIMIT: Duration = Duration::from_secs(3);
/// How long an acknowledged delivery may take to show up in the state.
pub const APPEAR_LIMIT: Duration = Duration::from_secs(3);
/// Attempts at a delivery answered with a passing failure (5xx, 429, reset).
pub const TRIES: u32 = 3;
/// The pause between those attempts.
pub const TRY_PAUSE: Duration = Duration::from_millis(300);
/// The prefix of the preflight's task ids: not hex, so never a scenario's.
pub const KEY_PREFIX: &str = "tsk_preflight_";

/// How the target was given, for the hints: each field names the flag, the
/// file key or the environment variable a user would change.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Words {
    /// Per account, where its secret comes from (`the secret in MY_SECRETS`).
    pub secrets: BTreeMap<String, String>,
    /// Where the receiver URL comes from (`--url`, `url in hookstorm.toml`).
    pub url: String,
    /// Where the state source comes from (`--state-http`, `[state] http in t.toml`).
    pub state: String,
    /// Where the state's bearer token comes from, if one is configured.
    pub token: Option<String>,
}

impl Words {
    /// Words that name nothing in particular.
    pub fn generic() -> Words {
        Words {
            secrets: BTreeMap::new(),
            url: "the target's url".into(),
            state: "the target's [state]".into(),
            token: None,
        }
    }

    /// Words for a target whose origin is unknown (library callers).
    pub fn plain(target: &Target) -> Words {
        Words {
            secrets: target
                .secrets
                .keys()
                .map(|a| (a.clone(), format!("the secret configured for {a}")))
                .collect(),
            token: target
                .state
                .token_env
                .as_ref()
                .map(|v| format!("the token in {v}"))
                .or_else(|| target.state.token.as_ref().map(|_| "the token".into())),
            ..Words::generic()
        }
    }

    fn secret(&self, account: &str) -> String {
        self.secrets
            .get(account)
            .cloned()
            .unwrap_or_else(|| format!("the secret configured for {account}"))
    }
}

/// One step of the preflight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Reading the state.
    State,
    /// Calling the reset hook.
    Reset,
    /// A signed test delivery.
    TestDelivery,
    /// A signed genuine delivery.
    Delivery,
    /// The genuine delivery showing up in the state.
    Stored,
    /// Removing the preflight's rows again.
    Cleanup,
    /// A delivery answered only after attempts that timed out.
    Slow,
}

/// What is wrong with the target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// The state source answered with a non-2xx status.
    StateStatus(u16),
    /// The state source answered, but not with the state JSON.
    StateNotState,
    /// The state source did not answer in time.
    StateTimeout(Duration),
    /// The state database refused the queries or the connection.
    StateDatabase,
    /// The state command failed.
    StateCommand,
    /// Nothing answered at the state URL.
    StateUnreachable,
    /// The `[state]` configuration is wrong.
    StateConfig,
    /// A configured reset hook failed.
    ResetFailed,
    /// The receiver URL does not parse for this account.
    BadUrl,
    /// Nothing listens at the receiver URL.
    Unreachable,
    /// Deliveries were answered with a redirect.
    Redirected {
        /// The status.
        status: u16,
        /// Its `Location`.
        location: Option<String>,
        /// The test and the genuine delivery were both redirected.
        every: bool,
    },
    /// A correctly signed delivery was answered 401 or 403.
    SignatureRejected(u16),
    /// The URL answered 404 or 405.
    NotFound(u16),
    /// Another 4xx to a correctly signed delivery.
    Rejected(u16),
    /// Every try was answered with a passing failure (5xx, 429, a reset).
    Failing {
        /// The last status, if one came.
        status: Option<u16>,
        /// How many tries.
        tries: u32,
    },
    /// The receiver answered none of `tries` attempts within the profile's
    /// time limit.
    TimedOut {
        /// The profile's timeout, per attempt.
        limit: Duration,
        /// How many attempts were sent.
        tries: u32,
    },
    /// An acknowledged delivery never showed up in the state.
    NotStored {
        /// Its key (the profile's event identity).
        key: String,
        /// What the profile calls one such key (`task`, `event`, `message`).
        event: String,
    },
}

/// How one step went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// It worked.
    Passed,
    /// It did not, but the run can go on (e.g. no reset hook).
    Warning,
    /// The target is unusable.
    Problem(Problem),
}

/// One checked step and what was seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The step.
    pub step: Step,
    /// The account, for delivery steps.
    pub account: Option<String>,
    /// What was seen (URLs redacted, never a secret).
    pub detail: String,
    /// How it went.
    pub outcome: Outcome,
}

impl Finding {
    fn new(step: Step, account: Option<&str>, detail: String, outcome: Outcome) -> Finding {
        Finding {
            step,
            account: account.map(str::to_string),
            detail,
            outcome,
        }
    }

    /// Whether this finding makes the target unusable.
    pub fn is_problem(&self) -> bool {
        matches!(self.outcome, Outcome::Problem(_))
    }

    /// One sentence: what was seen and, for a problem, what to fix, in the
    /// words of how the target was given.
    pub fn render(&self, words: &Words) -> String {
        let acct = self.account.as_deref().unwrap_or("the account");
        let what = match self.step {
            Step::TestDelivery => "a correctly signed test delivery",
            _ => "a correctly signed delivery",
        };
        let d = &self.detail;
        let problem = match &self.outcome {
            Outcome::Passed | Outcome::Warning => return d.clone(),
            Outcome::Problem(p) => p,
        };
        match problem {
            Problem::StateStatus(s @ (401 | 403)) => match &words.token {
                Some(t) => format!(
                    "the state source answered {s} ({d}): is {t} the receiver's admin token?"
                ),
                None => format!(
                    "the state source answered {s} ({d}): it wants a bearer token; none is configured for {} (hint: --state-token-env VAR, or token_env = \"VAR\" in [state])",
                    words.state
                ),
            },
            Problem::StateStatus(s @ (404 | 405)) => format!(
                "the state source answered {s} ({d}): is the state URL right ({})?",
                words.state
            ),
            Problem::StateStatus(s) => format!(
                "the state source answered {s} instead of the state JSON ({d}): fix the endpoint or point {} at one that works",
                words.state
            ),
            Problem::StateNotState => format!(
                "the state source answered, but not with the state JSON {{\"inbox\": [...]}} ({d}): is {} the receiver's state endpoint?",
                words.state
            ),
            Problem::StateTimeout(limit) => format!(
                "the state source did not answer within {} ({d}): is {} right and the receiver's admin side up?",
                format_duration(*limit),
                words.state
            ),
            Problem::StateDatabase => format!(
                "the state database cannot be read ({d}): is {} the receiver's own database, with its tables?",
                words.state
            ),
            Problem::StateCommand => format!(
                "the state command failed ({d}): does {} run here and print the state JSON?",
                words.state
            ),
            Problem::StateUnreachable => format!(
                "nothing answers at the state source ({d}): is the receiver's admin side running, and is {} right?",
                words.state
            ),
            Problem::StateConfig => format!("{d} ({})", words.state),
            Problem::ResetFailed => format!(
                "the reset hook failed ({d}): fix it or remove it from {}",
                words.state
            ),
            Problem::BadUrl => format!("{d} ({})", words.url),
            Problem::Unreachable => format!(
                "nothing listens at the receiver URL ({d}): is the receiver running, and is {} right?",
                words.url
            ),
            Problem::Redirected {
                status,
                location,
                every,
            } => {
                let to = location.as_deref().unwrap_or("(no Location header)");
                if *every {
                    format!(
                        "every delivery was answered {status} to {to}: register that URL ({}); senders never follow redirects ({d})",
                        words.url
                    )
                } else {
                    format!(
                        "{what} for {acct} was answered {status} to {to}: senders never follow redirects, register that URL ({})",
                        words.url
                    )
                }
            }
            Problem::SignatureRejected(s) => format!(
                "the receiver answered {s} to {what} for {acct}: does it verify with {}?",
                words.secret(acct)
            ),
            Problem::NotFound(s) => format!(
                "the receiver answered {s} to {what} for {acct} ({d}): is the URL right ({})?",
                words.url
            ),
            Problem::Rejected(s) => format!(
                "the receiver answered {s} to {what} for {acct} ({d}): a receiver answers 2xx to every verified delivery (a test delivery stores nothing)"
            ),
            Problem::Failing {
                status: Some(s),
                tries,
            } => format!(
                "the receiver answered {s} to {tries} tries of {what} for {acct} ({d}): is it healthy, its database up?"
            ),
            Problem::Failing {
                status: None,
                tries,
            } => format!(
                "{tries} tries of {what} for {acct} got no answer ({d}): does the receiver speak HTTP at {}, and is it healthy?",
                words.url
            ),
            Problem::TimedOut { limit, tries } => format!(
                "the receiver did not answer {what} for {acct} within {} in any of {tries} tries ({} in all; {d}): is it stuck?",
                format_duration(*limit),
                format_duration(*limit * *tries)
            ),
            Problem::NotStored { key, event } => format!(
                "the receiver acknowledged a delivery for {acct} ({event} {key}), but it did not show up in the state within {}: does {} read the receiver's own state?",
                format_duration(APPEAR_LIMIT),
                words.state
            ),
        }
    }
}

/// The preflight's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preflight {
    /// Every step checked, in order; the last is the problem if there is one.
    pub findings: Vec<Finding>,
    /// What the run needs to know to skip scenarios.
    pub facts: TargetFacts,
    /// (account, key) of the genuine deliveries it sent: rows no scenario owns.
    pub keys: Vec<(String, String)>,
    /// How long it took.
    pub elapsed: Duration,
}

impl Preflight {
    /// Whether the target can be tested.
    pub fn usable(&self) -> bool {
        self.problem().is_none()
    }

    /// The problem that makes the target unusable, if any.
    pub fn problem(&self) -> Option<&Finding> {
        self.findings.iter().find(|f| f.is_problem())
    }
}

/// Runs the preflight against a started target.
pub async fn check(target: &Target, probe: &Probe) -> Preflight {
    let started = Instant::now();
    let mut out = Preflight {
        findings: Vec::new(),
        facts: TargetFacts::default(),
        keys: Vec::new(),
        elapsed: Duration::ZERO,
    };
    run_steps(target, probe, &mut out).await;
    out.elapsed = started.elapsed();
    out
}

async fn run_steps(target: &Target, probe: &Probe, out: &mut Preflight) {
    let limit = target.state.timeout.map_or(CALL_LIMIT, |t| t.0);
    let probe = probe.clone().with_timeout(limit);
    let push = |out: &mut Preflight, f: Finding| {
        let stop = f.is_problem();
        out.findings.push(f);
        stop
    };

    // 1. The state source answers and parses.
    match probe.read_state().await {
        Ok(s) => {
            out.facts.state_has_resources = Some(s.resources.is_some());
            push(
                out,
                Finding::new(
                    Step::State,
                    None,
                    format!(
                        "state source {} answered and parsed ({} inbox rows)",
                        source_text(target),
                        s.inbox.len()
                    ),
                    Outcome::Passed,
                ),
            );
        }
        Err(e) => {
            let problem = state_problem(target, &e, limit);
            push(
                out,
                Finding::new(Step::State, None, e.to_string(), Outcome::Problem(problem)),
            );
            return;
        }
    }

    // 2. Reset works (a configured hook must; an implied one may be absent).
    let explicit_reset = target.state.reset.is_some()
        || target.state.sql.as_ref().is_some_and(|s| s.reset.is_some());
    let mut can_reset = false;
    if probe.can_reset() {
        match probe.reset().await {
            Ok(()) => {
                can_reset = true;
                push(
                    out,
                    Finding::new(
                        Step::Reset,
                        None,
                        "reset hook works".into(),
                        Outcome::Passed,
                    ),
                );
            }
            Err(e) if explicit_reset => {
                push(
                    out,
                    Finding::new(
                        Step::Reset,
                        None,
                        e.to_string(),
                        Outcome::Problem(Problem::ResetFailed),
                    ),
                );
                return;
            }
            Err(e) => {
                push(
                    out,
                    Finding::new(
                        Step::Reset,
                        None,
                        format!("no working reset hook ({e}); rows from earlier scenarios are excluded by key"),
                        Outcome::Warning,
                    ),
                );
            }
        }
    } else {
        push(
            out,
            Finding::new(
                Step::Reset,
                None,
                "no reset hook; rows from earlier scenarios are excluded by key".into(),
                Outcome::Warning,
            ),
        );
    }

    // 3. and 4. Per account: a test delivery, then a genuine one.
    let sender = Sender::new(target);
    let mut keys = Vec::new();
    // Whether an attempt was left unanswered: the receiver may still be
    // working on it, and store its row after the cleanup's reset.
    let mut timed_out = false;
    // A provider with no test deliveries (Stripe) is not sent one.
    let has_test = target.profile.body_template.is_some()
        || crate::excuse::TestDelivery::of(target.profile.body)
            != crate::excuse::TestDelivery::None;
    for account in target.secrets.keys() {
        let account = account.as_str();
        let mut test_redirect = None;
        let (mut test_detail, mut test_timeouts) = (String::new(), 0);
        if has_test {
            let test = sender.deliver(account, true).await;
            test_redirect = test.redirect();
            test_detail = test.detail();
            test_timeouts = test.timeouts;
            if let Some(p) = test.problem() {
                if test_redirect.is_none() {
                    push(
                        out,
                        Finding::new(
                            Step::TestDelivery,
                            Some(account),
                            test.detail(),
                            Outcome::Problem(p),
                        ),
                    );
                    return;
                }
            } else {
                push(
                    out,
                    Finding::new(
                        Step::TestDelivery,
                        Some(account),
                        format!("signed test delivery for {account}: {}", test.detail()),
                        Outcome::Passed,
                    ),
                );
                if let Some(note) = test.late_note("test delivery", account) {
                    push(out, note);
                }
            }
        }
        let real = sender.deliver(account, false).await;
        if let Some(mut p) = real.problem() {
            if let (Problem::Redirected { every, .. }, Some(Problem::Redirected { .. })) =
                (&mut p, &test_redirect)
            {
                *every = true;
            }
            push(
                out,
                Finding::new(
                    Step::Delivery,
                    Some(account),
                    real.detail(),
                    Outcome::Problem(p),
                ),
            );
            return;
        }
        if let Some(p) = test_redirect {
            push(
                out,
                Finding::new(
                    Step::TestDelivery,
                    Some(account),
                    test_detail,
                    Outcome::Problem(p),
                ),
            );
            return;
        }
        push(
            out,
            Finding::new(
                Step::Delivery,
                Some(account),
                format!("signed delivery for {account}: {}", real.detail()),
                Outcome::Passed,
            ),
        );
        if let Some(note) = real.late_note("delivery", account) {
            push(out, note);
        }
        timed_out |= real.timeouts > 0 || test_timeouts > 0;
        out.keys.push((account.to_string(), real.key.clone()));
        keys.push((account.to_string(), real.key));
    }

    // 5. The genuine deliveries show up in the state.
    let event = crate::profile::vocabulary::Vocabulary::of(&target.profile).event;
    for (account, key) in &keys {
        let account = account.as_str();
        let start = Instant::now();
        let seen = loop {
            if let Ok(s) = probe.read_state().await {
                let found = s.holds(account, key);
                if found {
                    break Some(start.elapsed());
                }
            }
            if start.elapsed() >= APPEAR_LIMIT {
                break None;
            }
            tokio::time::sleep(DRAIN_POLL).await;
        };
        // A receiver that processes from a queue writes its results and
        // winners a moment later: let it finish before the reset, so they
        // are reset away too (bounded; an unprocessed row is no problem
        // here, and the run sets the preflight's keys aside regardless).
        if seen.is_some() {
            let settling = Instant::now();
            while settling.elapsed() < APPEAR_LIMIT {
                match probe.read_state().await {
                    Ok(s) if !s.inbox.iter().any(|r| r.key == *key && !r.settled()) => break,
                    Err(_) => break,
                    Ok(_) => tokio::time::sleep(DRAIN_POLL).await,
                }
            }
        }
        let finding = match seen {
            Some(after) => Finding::new(
                Step::Stored,
                Some(account),
                format!(
                    "the delivery for {account} showed up in the state after {:.1}s",
                    after.as_secs_f64()
                ),
                Outcome::Passed,
            ),
            None => Finding::new(
                Step::Stored,
                Some(account),
                format!("{event} {key} not in the state"),
                Outcome::Problem(Problem::NotStored {
                    key: key.clone(),
                    event: event.clone(),
                }),
            ),
        };
        if push(out, finding) {
            return;
        }
    }

    // 6. Clean the preflight's rows away.
    let cleanup = if !can_reset {
        Finding::new(
            Step::Cleanup,
            None,
            format!("the preflight's rows stay; scenarios exclude them by key ({KEY_PREFIX}…)"),
            Outcome::Passed,
        )
    } else {
        match reset_away(&probe, &out.keys, timed_out).await {
            Ok(()) => Finding::new(
                Step::Cleanup,
                None,
                "the preflight's rows were reset away".into(),
                Outcome::Passed,
            ),
            Err(e) => Finding::new(
                Step::Cleanup,
                None,
                format!(
                    "reset after the preflight failed ({e}); scenarios exclude its rows by key"
                ),
                Outcome::Warning,
            ),
        }
    };
    push(out, cleanup);
}

/// The cleanup's reset. When an attempt was left unanswered, the receiver
/// may still be working on it and write its row after the reset: the state
/// is watched for [`APPEAR_LIMIT`] and reset again whenever one of `keys`
/// shows up again.
async fn reset_away(
    probe: &Probe,
    keys: &[(String, String)],
    timed_out: bool,
) -> Result<(), ProbeError> {
    probe.reset().await?;
    if !timed_out {
        return Ok(());
    }
    let start = Instant::now();
    while start.elapsed() < APPEAR_LIMIT {
        tokio::time::sleep(DRAIN_POLL).await;
        if let Ok(s) = probe.read_state().await {
            if keys.iter().any(|(a, k)| s.holds(a, k)) {
                probe.reset().await?;
            }
        }
    }
    Ok(())
}

/// The state source, redacted, in a few words.
fn source_text(target: &Target) -> String {
    let st = &target.state;
    match (&st.http, &st.sql, &st.command) {
        (Some(u), _, _) => crate::state::probe::redact_url(u),
        (_, Some(sql), _) => crate::state::probe::redact_url(&sql.url),
        (_, _, Some(c)) => format!("`{}`", crate::state::probe::redact_text(c)),
        _ => "(none)".into(),
    }
}

fn state_problem(target: &Target, e: &ProbeError, limit: Duration) -> Problem {
    match e {
        ProbeError::Status { status, .. } => Problem::StateStatus(*status),
        ProbeError::Invalid(_) => Problem::StateNotState,
        ProbeError::Timeout { .. } => Problem::StateTimeout(limit),
        ProbeError::Sql(_) => Problem::StateDatabase,
        ProbeError::Config(_) | ProbeError::NotConfigured(_) => Problem::StateConfig,
        ProbeError::Io(_) if target.state.sql.is_some() => Problem::StateDatabase,
        ProbeError::Io(_) if target.state.command.is_some() => Problem::StateCommand,
        ProbeError::Io(_) => Problem::StateUnreachable,
    }
}

/// Sends the preflight's signed deliveries.
struct Sender<'a> {
    target: &'a Target,
    client: HttpClient,
}

/// What came of one preflight delivery.
struct Sent {
    url: String,
    key: String,
    answer: Option<Answer>,
    tries: u32,
    /// Attempts that were not answered within the timeout.
    timeouts: u32,
    timeout: Duration,
    bad_url: Option<String>,
}

impl Sent {
    fn redirect(&self) -> Option<Problem> {
        self.problem()
            .filter(|p| matches!(p, Problem::Redirected { .. }))
    }

    fn problem(&self) -> Option<Problem> {
        if self.bad_url.is_some() {
            return Some(Problem::BadUrl);
        }
        let a = self.answer.as_ref()?;
        match a.status {
            Some(s) if (200..300).contains(&s) => None,
            Some(s) if (300..400).contains(&s) => Some(Problem::Redirected {
                status: s,
                location: a.location.clone(),
                every: false,
            }),
            Some(s @ (401 | 403)) => Some(Problem::SignatureRejected(s)),
            Some(s @ (404 | 405)) => Some(Problem::NotFound(s)),
            Some(429) => Some(Problem::Failing {
                status: Some(429),
                tries: self.tries,
            }),
            Some(s) if (400..500).contains(&s) => Some(Problem::Rejected(s)),
            Some(s) => Some(Problem::Failing {
                status: Some(s),
                tries: self.tries,
            }),
            None if a.nothing_sent() => Some(Problem::Unreachable),
            None if is_timeout(a) => Some(Problem::TimedOut {
                limit: self.timeout,
                tries: self.tries,
            }),
            None => Some(Problem::Failing {
                status: None,
                tries: self.tries,
            }),
        }
    }

    /// A note when the delivery was answered only after attempts that
    /// timed out: the target is usable, and the scenarios judge slowness.
    fn late_note(&self, what: &str, account: &str) -> Option<Finding> {
        if self.timeouts == 0 {
            return None;
        }
        let earlier = match self.timeouts {
            1 => "the first".to_string(),
            n => format!("the first {n}"),
        };
        Some(Finding::new(
            Step::Slow,
            Some(account),
            format!(
                "the preflight's {what} for {account} was answered only on attempt {} ({earlier} took over {}); the scenarios judge slow answers (I7)",
                self.tries,
                format_duration(self.timeout)
            ),
            Outcome::Warning,
        ))
    }

    fn detail(&self) -> String {
        if let Some(why) = &self.bad_url {
            return why.clone();
        }
        match &self.answer {
            Some(Answer {
                status: Some(s), ..
            }) => format!("POST {} answered {s}", self.url),
            Some(Answer {
                failure: Some(f), ..
            }) => format!("POST {}: {f}", self.url),
            _ => format!("POST {}", self.url),
        }
    }
}

fn is_timeout(a: &Answer) -> bool {
    a.failure
        .as_ref()
        .is_some_and(|f| f.kind() == TransportFailure::Timeout)
}

fn transient(a: &Answer) -> bool {
    match a.status {
        Some(s) => s == 429 || s >= 500,
        None => !a.nothing_sent() && !is_timeout(a),
    }
}

impl<'a> Sender<'a> {
    fn new(target: &'a Target) -> Self {
        Sender {
            target,
            client: exchange::client(&target.profile, false, &target.roots),
        }
    }

    async fn deliver(&self, account: &str, test: bool) -> Sent {
        let t = self.target;
        let url = t.url.replace("{account}", account);
        let shown = redact_url(&url);
        let (key, id, job) = {
            let mut rng = rand::thread_rng();
            (
                format!("{KEY_PREFIX}{:016x}", rng.gen::<u64>()),
                format!("whd_preflight_{:016x}", rng.gen::<u64>()),
                format!("hookstorm-preflight-{:016x}", rng.gen::<u64>()),
            )
        };
        let mut sent = Sent {
            url: shown.clone(),
            key: key.clone(),
            answer: None,
            tries: 0,
            timeouts: 0,
            timeout: t.profile.timeout,
            bad_url: None,
        };
        let uri: http::Uri = match url.parse() {
            Ok(u) => u,
            Err(e) => {
                sent.bad_url = Some(format!("the receiver URL {shown} does not parse: {e}"));
                return sent;
            }
        };
        let body = Body {
            task: Task {
                id: key.clone(),
                idempotency_key: Some(job),
                status: TaskStatus::Completed,
                created_at: crate::history::now_rfc3339(),
            },
            credits: 1,
            response: Some(serde_json::json!({"result": {"answer": "hookstorm preflight"}})),
            test,
            resource: None,
            sequence: None,
        };
        // As the profile's provider sends it: its envelope, its ids, and
        // the key its receiver stores (the profile's event identity).
        let (id, bytes, stored_key) = crate::sender::provider_request(&t.profile, &body, &id);
        sent.key = stored_key;
        let keys = tamper::Keys {
            current: t.secrets.get(account).cloned().unwrap_or_default(),
            retired: Vec::new(),
            other_account: None,
            wrong: tamper::derived_secret(0, "preflight"),
        };
        for attempt in 1..=TRIES {
            let signed = match tamper::sign(
                &t.profile.scheme,
                &keys,
                tamper::SignRequest {
                    id: &id,
                    body: &bytes,
                    forgery: None,
                    signing: Signing::Current,
                    now: chrono::Utc::now().timestamp(),
                    tolerance: t.profile.tolerance_secs(),
                    max_body: t.max_body,
                },
            ) {
                Ok(s) => s,
                Err(why) => {
                    sent.bad_url = Some(format!("cannot sign for {account}: {why}"));
                    return sent;
                }
            };
            let headers =
                crate::sender::request_headers(&t.profile, &body, &id, attempt, &signed.headers);
            let answer = exchange::exchange(
                &self.client,
                &uri,
                &headers,
                Bytes::from(signed.body),
                t.profile.timeout,
            )
            .await;
            sent.tries = attempt;
            let late = is_timeout(&answer);
            sent.timeouts += u32::from(late);
            let again = (late || transient(&answer)) && attempt < TRIES;
            sent.answer = Some(answer);
            if !again {
                break;
            }
            tokio::time::sleep(TRY_PAUSE).await;
        }
        sent
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words() -> Words {
        Words {
            secrets: BTreeMap::from([("acct_a".into(), "the secret in MY_SECRETS".into())]),
            url: "url in t.toml".into(),
            state: "[state] http in t.toml".into(),
            token: Some("the token in ADMIN_TOKEN".into()),
        }
    }

    #[test]
    fn a_rejected_signature_names_where_the_secret_comes_from() {
        let f = Finding::new(
            Step::TestDelivery,
            Some("acct_a"),
            "POST http://h/webhooks/acct_a answered 401".into(),
            Outcome::Problem(Problem::SignatureRejected(401)),
        );
        assert_eq!(
            f.render(&words()),
            "the receiver answered 401 to a correctly signed test delivery for acct_a: does it verify with the secret in MY_SECRETS?"
        );
    }

    #[test]
    fn an_always_redirecting_receiver_is_told_which_url_to_register() {
        let f = Finding::new(
            Step::Delivery,
            Some("acct_a"),
            "POST http://h/webhooks/acct_a answered 308".into(),
            Outcome::Problem(Problem::Redirected {
                status: 308,
                location: Some("/hooks/answers".into()),
                every: true,
            }),
        );
        let t = f.render(&words());
        assert!(
            t.starts_with("every delivery was answered 308 to /hooks/answers: register that URL"),
            "{t}"
        );
    }

    #[test]
    fn a_receiver_that_never_answers_is_told_how_long_and_how_often_it_was_tried() {
        let f = Finding::new(
            Step::Delivery,
            Some("acct_a"),
            "POST http://h/webhooks/acct_a: timeout after 15s".into(),
            Outcome::Problem(Problem::TimedOut {
                limit: Duration::from_secs(15),
                tries: TRIES,
            }),
        );
        assert_eq!(
            f.render(&words()),
            "the receiver did not answer a correctly signed delivery for acct_a within 15s in any of 3 tries (45s in all; POST http://h/webhooks/acct_a: timeout after 15s): is it stuck?"
        );
    }

    #[test]
    fn a_delivery_answered_after_a_timeout_is_a_note_not_a_problem() {
        let sent = |tries, timeouts| Sent {
            url: "http://h/webhooks/acct_a".into(),
            key: "tsk_preflight_x".into(),
            answer: Some(Answer {
                status: Some(204),
                latency_ms: 3.0,
                failure: None,
                location: None,
                body: Bytes::new(),
            }),
            tries,
            timeouts,
            timeout: Duration::from_secs(15),
            bad_url: None,
        };
        assert!(sent(1, 0).late_note("delivery", "acct_a").is_none());
        let late = sent(2, 1);
        assert_eq!(late.problem(), None);
        let note = late.late_note("delivery", "acct_a").unwrap();
        assert_eq!(note.outcome, Outcome::Warning);
        assert_eq!(
            note.render(&words()),
            "the preflight's delivery for acct_a was answered only on attempt 2 (the first took over 15s); the scenarios judge slow answers (I7)"
        );
    }

    #[test]
    fn preflight_keys_can_never_be_a_scenarios_task_id() {
        // Scenario task ids are `tsk_` and 16 hex digits (workload::random_id).
        let mut rng = rand::thread_rng();
        let scenario_key = crate::plan::delivery::random_id("tsk_", &mut rng);
        assert!(scenario_key[4..].bytes().all(|b| b.is_ascii_hexdigit()));
        assert!(!KEY_PREFIX[4..].bytes().all(|b| b.is_ascii_hexdigit()));
    }
}
