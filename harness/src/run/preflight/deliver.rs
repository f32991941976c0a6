//! The preflight's own deliveries: a signed test delivery or a genuine one
//! per account, sent as the profile's provider sends it, tried again as
//! the provider would (passing trouble up to [`TRIES`] times, a
//! delivery with no answer in time again with the same identity), and what
//! came of it typed as a [`Problem`], or a note when it was only slow.

use std::time::Duration;

use bytes::Bytes;
use rand::Rng;

use crate::delivery::{Body, Task, TaskStatus};
use crate::fault::tamper;
use crate::history::TransportFailure;
use crate::scenario::Signing;
use crate::sender::exchange::{self, Answer, HttpClient};
use crate::target::{redact_url, Target};
use crate::text::units::format_duration;

use super::finding::{Finding, Outcome, Problem, Step};
use super::limits::{KEY_PREFIX, TRIES, TRY_PAUSE};

/// Sends the preflight's signed deliveries.
pub(super) struct Sender<'a> {
    target: &'a Target,
    client: HttpClient,
}

/// What came of one preflight delivery.
pub(super) struct Sent {
    pub(super) url: String,
    pub(super) key: String,
    pub(super) answer: Option<Answer>,
    pub(super) tries: u32,
    /// Attempts that were not answered within the timeout.
    pub(super) timeouts: u32,
    pub(super) timeout: Duration,
    pub(super) bad_url: Option<String>,
}

impl Sent {
    pub(super) fn redirect(&self) -> Option<Problem> {
        self.problem()
            .filter(|p| matches!(p, Problem::Redirected { .. }))
    }

    pub(super) fn problem(&self) -> Option<Problem> {
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
    pub(super) fn late_note(&self, what: &str, account: &str) -> Option<Finding> {
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

    pub(super) fn detail(&self) -> String {
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
    pub(super) fn new(target: &'a Target) -> Self {
        Sender {
            target,
            client: exchange::client(&target.profile, false, &target.roots),
        }
    }

    pub(super) async fn deliver(&self, account: &str, test: bool) -> Sent {
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
                    url: &url,
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
