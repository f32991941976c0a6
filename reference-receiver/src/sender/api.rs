//! The reference sender's own API, the hooks `hookstorm sink` drives it by:
//!
//! - `POST /emit` `{"events": [...]}`: commits the events to the outbox in
//!   one transaction (the business write of a real app), answers
//!   `{"accepted": n}`, and wakes the worker;
//! - `GET /outbox`: the outbox listing, `{"outbox": [{key, account,
//!   status, attempts}]}`;
//! - `POST /reset`: empties the outbox;
//! - `GET /healthz`.
//!
//! Every route but `/healthz` needs `Authorization: Bearer <token>` when a
//! token is set.

use std::sync::Arc;

use http_body_util::BodyExt;
use hyper::Method;
use tokio::sync::Notify;

use hookstorm::net::httpd::{self, Handler};
use hookstorm::profile::signature::bearer_matches;

use super::outbox::{NewEvent, Outbox};
use super::worker::new_id;

/// The largest emit body taken.
const MAX_EMIT: usize = 8 << 20;

#[derive(serde::Deserialize)]
struct Emit {
    events: Vec<NewEvent>,
}

/// The API's handler.
pub fn handler(outbox: Arc<Outbox>, wake: Arc<Notify>, token: Option<String>) -> Handler {
    Arc::new(move |req| {
        let (outbox, wake, token) = (outbox.clone(), wake.clone(), token.clone());
        Box::pin(async move {
            let path = req.uri().path().to_string();
            let method = req.method().clone();
            if path == "/healthz" {
                return Ok(httpd::text(200, "ok"));
            }
            if let Some(t) = &token {
                let auth = req
                    .headers()
                    .get(hyper::header::AUTHORIZATION)
                    .map(|v| v.as_bytes());
                if !bearer_matches(auth, t) {
                    return Ok(httpd::text(401, "unauthorized"));
                }
            }
            match (method, path.as_str()) {
                (Method::POST, "/emit") => {
                    let body = match http_body_util::Limited::new(req.into_body(), MAX_EMIT)
                        .collect()
                        .await
                    {
                        Ok(b) => b.to_bytes(),
                        Err(e) => return Ok(httpd::text(413, format!("{e}"))),
                    };
                    let emit: Emit = match serde_json::from_slice(&body) {
                        Ok(e) => e,
                        Err(e) => {
                            return Ok(httpd::text(
                                400,
                                format!("expected {{\"events\": [...]}}: {e}"),
                            ))
                        }
                    };
                    match outbox.insert(&emit.events, new_id) {
                        Ok(n) => {
                            wake.notify_one();
                            Ok(httpd::json(200, &serde_json::json!({ "accepted": n })))
                        }
                        Err(e) => Ok(httpd::text(503, format!("outbox: {e}"))),
                    }
                }
                (Method::GET, "/outbox") => match outbox.list() {
                    Ok(rows) => Ok(httpd::json(200, &serde_json::json!({ "outbox": rows }))),
                    Err(e) => Ok(httpd::text(503, format!("outbox: {e}"))),
                },
                (Method::POST, "/reset") => match outbox.clear() {
                    Ok(()) => Ok(httpd::json(200, &serde_json::json!({}))),
                    Err(e) => Ok(httpd::text(503, format!("outbox: {e}"))),
                },
                _ => Ok(httpd::text(404, "not found")),
            }
        })
    })
}
