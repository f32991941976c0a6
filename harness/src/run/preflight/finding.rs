//! What the preflight found, typed, and the words for it: each step it
//! checks, each problem a target can have, and [`Finding::render`], which
//! words a finding with the [`Words`] that say how the target was given
//! (flags or a file), so each hint names what to change.

use std::collections::BTreeMap;
use std::time::Duration;

use super::limits::APPEAR_LIMIT;
use crate::target::Target;
use crate::text::units::format_duration;

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

    pub(super) fn secret(&self, account: &str) -> String {
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
    /// The state source answered the state's JSON, but a value in it is wrong.
    StateShape {
        /// The JSON path of the value (`inbox[0].key`).
        at: String,
        /// What is wrong with it.
        message: String,
    },
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
    pub(super) fn new(
        step: Step,
        account: Option<&str>,
        detail: String,
        outcome: Outcome,
    ) -> Finding {
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
            // The source answered the state: the shape is to fix, not the
            // source, and the detail would only say the path again.
            Problem::StateShape { at, message } => format!(
                "the state's shape is wrong at {at}: {message} (hint: {} reaches the state; fix that value in the receiver's state answer, as docs/state.md defines it)",
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
