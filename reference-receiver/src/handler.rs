//! The webhook endpoint: `POST /webhooks/{account}` (and `POST /webhooks`).
//!
//! The order is the contract's (docs/contract.md): size limit, signature
//! on the raw bytes, parse, test deliveries answered and dropped, insert-do-nothing-on-conflict,
//! commit, and only then 204. A duplicate gets the same 204 as the first
//! delivery; an unavailable store gets 503 so the sender retries; nothing
//! here ever answers 3xx. Each defect's deviation is marked where it acts.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use hookstorm::delivery::Body;
use hookstorm::profile::signature::Secret;
use http::{header, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::Incoming;

use crate::app::App;
use crate::defect::Defect;
use crate::failpoint::Point;
use crate::store::{Inserted, NewDelivery};

/// How long the `ack-before-commit` defect waits between its answer and its commit.
pub const ACK_BEFORE_COMMIT_DELAY: Duration = Duration::from_millis(50);

/// A response with a short text body (or none).
pub fn reply(status: StatusCode, text: &str) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(text.to_string())));
    *r.status_mut() = status;
    if !text.is_empty() {
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            header::HeaderValue::from_static("text/plain; charset=utf-8"),
        );
    }
    r
}

fn no_content() -> Response<Full<Bytes>> {
    reply(StatusCode::NO_CONTENT, "")
}

/// Answers one webhook request.
pub async fn handle(app: Arc<App>, req: Request<Incoming>) -> Response<Full<Bytes>> {
    let config = &app.config;
    let path = req.uri().path().to_string();

    // Defect redirects-to-trailing-slash: a 3xx is a failed attempt for the sender.
    if config.has(Defect::RedirectsToTrailingSlash)
        && req.method() == Method::POST
        && !path.ends_with('/')
    {
        let mut r = reply(StatusCode::PERMANENT_REDIRECT, "");
        if let Ok(v) = header::HeaderValue::from_str(&format!("{path}/")) {
            r.headers_mut().insert(header::LOCATION, v);
        }
        return r;
    }

    let trimmed = path.trim_end_matches('/');
    let account_name = match trimmed.strip_prefix("/webhooks") {
        Some("") => match config.accounts.first() {
            Some(a) => a.name.clone(),
            None => return reply(StatusCode::NOT_FOUND, "no account configured"),
        },
        Some(rest) if rest.starts_with('/') && !rest[1..].contains('/') => rest[1..].to_string(),
        _ => return reply(StatusCode::NOT_FOUND, "not found"),
    };
    if req.method() != Method::POST {
        let mut r = reply(StatusCode::METHOD_NOT_ALLOWED, "use POST");
        r.headers_mut()
            .insert(header::ALLOW, header::HeaderValue::from_static("POST"));
        return r;
    }
    let Some(account) = config.account(&account_name) else {
        return reply(StatusCode::NOT_FOUND, "unknown account");
    };

    // Size limit, first on the declared length, then while reading.
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > config.max_body as u64) {
        return reply(StatusCode::PAYLOAD_TOO_LARGE, "body too large");
    }
    let (parts, body) = req.into_parts();
    let read = tokio::time::timeout(
        crate::app::BODY_TIMEOUT,
        Limited::new(body, config.max_body).collect(),
    );
    let bytes = match read.await {
        Err(_) => return reply(StatusCode::REQUEST_TIMEOUT, "body not sent in time"),
        Ok(Ok(c)) => c.to_bytes(),
        Ok(Err(e)) if e.downcast_ref::<LengthLimitError>().is_some() => {
            return reply(StatusCode::PAYLOAD_TOO_LARGE, "body too large")
        }
        Ok(Err(_)) => return reply(StatusCode::BAD_REQUEST, "could not read body"),
    };

    // Signature over the raw bytes.
    if !config.has(Defect::SkipsSignatureCheck) {
        let secrets: Vec<Secret> = if config.has(Defect::IgnoresAccountScope) {
            // Defect ignores-account-scope: any account's secret passes for any account.
            config
                .accounts
                .iter()
                .flat_map(|a| a.secrets.iter().cloned())
                .collect()
        } else {
            account.secrets.clone()
        };
        let tolerance = if config.has(Defect::IgnoresTimestampTolerance) {
            None
        } else {
            config.profile.tolerance_secs()
        };
        let now = chrono::Utc::now().timestamp();
        // The URL as the sender addressed it: some schemes sign it.
        let url = hookstorm::profile::signature::request_url(
            &parts.headers,
            parts.uri.path_and_query().map_or("/", |p| p.as_str()),
        );
        if let Err(e) = config.profile.scheme.verify_request(
            &secrets,
            &parts.headers,
            &url,
            &bytes,
            now,
            tolerance,
        ) {
            return reply(
                StatusCode::UNAUTHORIZED,
                &format!("signature rejected: {e}"),
            );
        }
    }

    let Ok(text) = String::from_utf8(bytes.to_vec()) else {
        return reply(StatusCode::BAD_REQUEST, "body is not UTF-8");
    };
    let delivery: Body = match serde_json::from_str(&text) {
        Ok(b) => b,
        Err(e) => {
            return reply(
                StatusCode::BAD_REQUEST,
                &format!("body is not a delivery: {e}"),
            )
        }
    };
    if delivery.test && !config.has(Defect::StoresTestDeliveries) {
        return no_content();
    }
    let webhook_id = config
        .profile
        .delivery_id_header()
        .or(Some("Webhook-Id"))
        .and_then(|h| parts.headers.get(h))
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let key = (account.name.clone(), delivery.task.id.clone());
    let new = NewDelivery {
        account: account.name.clone(),
        task_id: delivery.task.id.clone(),
        webhook_id,
        body: text,
    };

    if config.has(Defect::AckBeforeCommit) {
        // Defect ack-before-commit: the answer leaves before the row is durable.
        let app2 = app.clone();
        tokio::spawn(async move {
            tokio::time::sleep(ACK_BEFORE_COMMIT_DELAY).await;
            app2.config.failpoints.hit(Point::CrashBeforeCommit);
            if let Ok(Inserted::New) = app2.store.insert(new).await {
                app2.wake.notify_one();
            }
        });
        return no_content();
    }
    config.failpoints.hit(Point::CrashBeforeCommit);

    // Defect requeues-outage-buffer: a delivery the store cannot take is kept.
    let kept = config
        .has(Defect::RequeuesOutageBuffer)
        .then(|| new.clone());
    let result = if config.has(Defect::CheckThenInsert) {
        // Defect check-then-insert: a read, a pause, then a plain insert with no unique key.
        match app
            .store
            .contains(new.account.clone(), new.task_id.clone())
            .await
        {
            Ok(true) => Ok(Inserted::Duplicate),
            Ok(false) => {
                tokio::time::sleep(Duration::from_millis(10)).await;
                app.store.insert(new).await
            }
            Err(e) => Err(e),
        }
    } else {
        app.store.insert(new).await
    };
    match result {
        Ok(Inserted::New) => {
            app.wake.notify_one();
            config.failpoints.hit(Point::CrashAfterCommit);
            no_content()
        }
        Ok(Inserted::Duplicate) if config.has(Defect::RejectsDuplicates409) => {
            // Defect rejects-duplicates-409: state stays right, the status is wrong.
            reply(StatusCode::CONFLICT, "duplicate")
        }
        Ok(Inserted::Duplicate) if config.has(Defect::RequeuesDuplicates) => {
            // Defect requeues-duplicates: a redelivery re-enqueues its task;
            // once the row is processed it is re-opened, and the worker
            // processes it (and runs its effect) again.
            tokio::spawn(crate::requeue::when_processed(app.clone(), key.0, key.1));
            no_content()
        }
        Ok(Inserted::Duplicate) => no_content(),
        // Defect ok-while-database-down: acknowledges what it could not store.
        Err(_) if config.has(Defect::OkWhileDatabaseDown) => no_content(),
        // Defect requeues-outage-buffer: acknowledges what it keeps in
        // memory until the database answers again.
        Err(_) if kept.is_some() => {
            app.outage.push(kept.expect("kept"));
            no_content()
        }
        Err(crate::StoreError::Unavailable(_)) => reply(
            StatusCode::SERVICE_UNAVAILABLE,
            "database unavailable, retry later",
        ),
        Err(_) => reply(StatusCode::INTERNAL_SERVER_ERROR, "storage error"),
    }
}
