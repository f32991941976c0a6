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
//!
//! Here: the steps in order. `finding` types and words what they find,
//! `deliver` sends the preflight's own deliveries and types their answers,
//! `limits` holds its waits and tries.

use std::time::{Duration, Instant};

use crate::findings::coverage::TargetFacts;
use crate::state::probe::{Probe, ProbeError, DRAIN_POLL};
use crate::target::Target;

mod deliver;
mod finding;
mod limits;

pub use finding::{Finding, Outcome, Problem, Step, Words};
pub use limits::{APPEAR_LIMIT, CALL_LIMIT, KEY_PREFIX, TRIES, TRY_PAUSE};

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

    let Some(can_reset) = reset_step(target, &probe, out).await else {
        return;
    };
    let Some((keys, timed_out)) = delivery_steps(target, out).await else {
        return;
    };
    if !stored_steps(target, &probe, out, &keys).await {
        return;
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

/// Adds `f` to the findings; whether it is a problem that ends the preflight.
fn push(out: &mut Preflight, f: Finding) -> bool {
    let stop = f.is_problem();
    out.findings.push(f);
    stop
}

/// Step 2; `None` ends the preflight, else whether the state can be reset.
async fn reset_step(target: &Target, probe: &Probe, out: &mut Preflight) -> Option<bool> {
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
                return None;
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
    Some(can_reset)
}

/// Steps 3 and 4; `None` ends the preflight, else each account's genuine
/// delivery key and whether an attempt was left unanswered.
async fn delivery_steps(
    target: &Target,
    out: &mut Preflight,
) -> Option<(Vec<(String, String)>, bool)> {
    // 3. and 4. Per account: a test delivery, then a genuine one.
    let sender = deliver::Sender::new(target);
    let mut keys = Vec::new();
    // Whether an attempt was left unanswered: the receiver may still be
    // working on it, and store its row after the cleanup's reset.
    let mut timed_out = false;
    // A provider with no test deliveries (Stripe) is not sent one.
    let has_test = target.profile.has_test_deliveries();
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
                    return None;
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
            return None;
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
            return None;
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
    Some((keys, timed_out))
}

/// Step 5; `false` ends the preflight.
async fn stored_steps(
    target: &Target,
    probe: &Probe,
    out: &mut Preflight,
    keys: &[(String, String)],
) -> bool {
    // 5. The genuine deliveries show up in the state.
    let event = crate::profile::vocabulary::Vocabulary::of(&target.profile).event;
    for (account, key) in keys {
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
            return false;
        }
    }
    true
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
        ProbeError::Shape { at, message, .. } => Problem::StateShape {
            at: at.clone(),
            message: message.clone(),
        },
        ProbeError::Timeout { .. } => Problem::StateTimeout(limit),
        ProbeError::Sql(_) => Problem::StateDatabase,
        // The preflight keeps the state it reads in memory, which cannot
        // fail to keep it; were it to, the text names the harness.
        ProbeError::Config(_) | ProbeError::NotConfigured(_) | ProbeError::Keep(_) => {
            Problem::StateConfig
        }
        ProbeError::Io(_) if target.state.sql.is_some() => Problem::StateDatabase,
        ProbeError::Io(_) if target.state.command.is_some() => Problem::StateCommand,
        ProbeError::Io(_) => Problem::StateUnreachable,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use bytes::Bytes;

    use super::deliver::Sent;
    use super::*;
    use crate::sender::exchange::Answer;

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
        let scenario_key = crate::delivery::random_id("tsk_", &mut rng);
        assert!(scenario_key[4..].bytes().all(|b| b.is_ascii_hexdigit()));
        assert!(!KEY_PREFIX[4..].bytes().all(|b| b.is_ascii_hexdigit()));
    }
}
