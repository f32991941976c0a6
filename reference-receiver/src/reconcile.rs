//! Reconciliation: fetch from the provider API the submitted tasks whose
//! delivery never arrived, and put them in the same inbox.
//!
//! The contract's rule (docs/contract.md) for a receiver that was down
//! longer than the whole retry window. 404 (unknown or expired task) is skipped; 429 is retried a
//! few times with doubling waits and otherwise left for the next run; a task
//! that is not final (QUEUED, PROCESSING) is left alone.

use std::time::Duration;

use bytes::Bytes;
use hookstorm::delivery::Body;
use http::{header, Request, StatusCode};
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde::Serialize;

use crate::app::App;
use crate::error::StoreError;
use crate::store::{Inserted, NewDelivery};

/// How many times a throttled fetch is tried.
const THROTTLE_ATTEMPTS: u32 = 4;
/// First wait after a 429 (then doubled).
const THROTTLE_BASE: Duration = Duration::from_millis(100);

/// What one reconciliation did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ReconcileCounts {
    /// Submitted tasks with no inbox row when the run started.
    pub missing: usize,
    /// Tasks the provider returned (200).
    pub fetched: usize,
    /// Rows newly written to the inbox.
    pub inserted: usize,
    /// Tasks the provider does not know (404).
    pub not_found: usize,
    /// Fetched tasks not final yet.
    pub not_final: usize,
    /// Tasks still throttled (429) after the retries: try again later.
    pub throttled: usize,
    /// Other failures (5xx, unreadable bodies, network errors).
    pub errors: usize,
}

/// Why a reconciliation could not run.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// No provider URL or key configured.
    #[error("no provider configured (hint: --provider-url URL and --provider-key-env VAR)")]
    NotConfigured,
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl ReconcileError {
    /// The HTTP status the admin API answers with.
    pub fn status(&self) -> StatusCode {
        match self {
            ReconcileError::NotConfigured => StatusCode::BAD_REQUEST,
            ReconcileError::Store(_) => StatusCode::SERVICE_UNAVAILABLE,
        }
    }
}

enum Fetch {
    Found(String),
    NotFound,
    Throttled,
    Failed,
}

/// Runs one reconciliation pass.
pub async fn reconcile(app: &App) -> Result<ReconcileCounts, ReconcileError> {
    let (Some(base), Some(key)) = (&app.config.provider_url, &app.config.provider_key) else {
        return Err(ReconcileError::NotConfigured);
    };
    let client: Client<_, Empty<Bytes>> = Client::builder(TokioExecutor::new()).build_http();
    let missing = app.store.missing_submitted().await?;
    let mut counts = ReconcileCounts {
        missing: missing.len(),
        ..Default::default()
    };
    for (account, task_id) in missing {
        let url = format!("{}/v1/async/task/{}", base.trim_end_matches('/'), task_id);
        let mut wait = THROTTLE_BASE;
        let mut outcome = Fetch::Failed;
        for attempt in 1..=THROTTLE_ATTEMPTS {
            let req = match Request::get(&url)
                .header(header::AUTHORIZATION, format!("Bearer {}", key.expose()))
                .body(Empty::<Bytes>::new())
            {
                Ok(r) => r,
                Err(_) => break,
            };
            let resp =
                match tokio::time::timeout(Duration::from_secs(10), client.request(req)).await {
                    Ok(Ok(r)) => r,
                    _ => {
                        outcome = Fetch::Failed;
                        break;
                    }
                };
            match resp.status() {
                StatusCode::OK => {
                    outcome = match resp.into_body().collect().await {
                        Ok(b) => match String::from_utf8(b.to_bytes().to_vec()) {
                            Ok(t) => Fetch::Found(t),
                            Err(_) => Fetch::Failed,
                        },
                        Err(_) => Fetch::Failed,
                    };
                    break;
                }
                StatusCode::NOT_FOUND => {
                    outcome = Fetch::NotFound;
                    break;
                }
                StatusCode::TOO_MANY_REQUESTS => {
                    outcome = Fetch::Throttled;
                    if attempt < THROTTLE_ATTEMPTS {
                        tokio::time::sleep(wait).await;
                        wait *= 2;
                    }
                }
                _ => {
                    outcome = Fetch::Failed;
                    break;
                }
            }
        }
        match outcome {
            Fetch::Found(text) => {
                counts.fetched += 1;
                let body: Body = match serde_json::from_str(&text) {
                    Ok(b) => b,
                    Err(_) => {
                        counts.errors += 1;
                        continue;
                    }
                };
                if !body.task.status.is_final() {
                    counts.not_final += 1;
                    continue;
                }
                let new = NewDelivery {
                    account: account.clone(),
                    task_id: body.task.id.clone(),
                    webhook_id: None,
                    body: text,
                };
                if app.store.insert(new).await? == Inserted::New {
                    counts.inserted += 1;
                    app.wake.notify_one();
                }
            }
            Fetch::NotFound => counts.not_found += 1,
            Fetch::Throttled => counts.throttled += 1,
            Fetch::Failed => counts.errors += 1,
        }
    }
    Ok(counts)
}
