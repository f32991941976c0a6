//! The admin API, served on its own listener and never on the webhook port.
//!
//! Every route but `GET /healthz` needs `Authorization: Bearer <token>`.
//! `GET /state` returns the `hookstorm::state::State` JSON the harness reads,
//! as JSON Lines when asked (`Accept: application/x-ndjson` or
//! `?format=jsonl`), which the harness parses row by row; either form is
//! streamed from one snapshot of the database as it is read
//! ([`crate::state_body`]);
//! `POST /reset`, `POST /setup` and `POST /reconcile` are the companions the
//! harness calls around a scenario.

use std::sync::Arc;

use bytes::Bytes;
use http::{header, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Either, Full, Limited};
use hyper::body::Incoming;
use serde::Deserialize;

use hookstorm::state::stream::JSON_LINES;
use tokio::sync::mpsc;

use crate::app::App;
use crate::handler::reply;
use crate::reconcile::reconcile;
use crate::state_body::StateBody;
use crate::store::{Feed, WinnerRule, FEED_DEPTH};

/// An admin answer: whole, or the state streamed.
pub type AdminBody = Either<Full<Bytes>, StateBody>;

fn json(status: StatusCode, value: &impl serde::Serialize) -> Response<Full<Bytes>> {
    let body = serde_json::to_vec(value).unwrap_or_default();
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    r
}

/// Whether the request asks for the state as JSON Lines.
fn wants_lines(req: &Request<Incoming>) -> bool {
    let by_query = req
        .uri()
        .query()
        .is_some_and(|q| q.split('&').any(|kv| kv == "format=jsonl"));
    let by_accept = req
        .headers()
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|item| {
            let mut parts = item.split(';').map(str::trim);
            let mime = parts.next().unwrap_or_default();
            let refused = parts.any(|p| p.replace(' ', "") == "q=0");
            mime.eq_ignore_ascii_case(JSON_LINES) && !refused
        });
    by_query || by_accept
}

/// `GET /state`: starts the store's read and answers once it has begun, so
/// a database that cannot be read is a 503, not a cut body.
async fn state(app: &App, lines: bool) -> Response<AdminBody> {
    let (tx, mut rx) = mpsc::channel(FEED_DEPTH);
    let store = app.store.clone();
    let rule = WinnerRule::for_defect(app.config.defect);
    tokio::spawn(async move {
        let outcome = store.stream_state(rule, tx.clone()).await;
        let _ = tx.send(outcome.map(|()| Feed::End)).await;
    });
    let first = match rx.recv().await {
        Some(Ok(first)) => first,
        Some(Err(e)) => {
            return reply(StatusCode::SERVICE_UNAVAILABLE, &e.to_string()).map(Either::Left)
        }
        None => {
            return reply(
                StatusCode::SERVICE_UNAVAILABLE,
                "the state read ended before it began",
            )
            .map(Either::Left)
        }
    };
    let body = match StateBody::new(first, rx, lines) {
        Ok(b) => b,
        Err(e) => {
            return reply(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()).map(Either::Left)
        }
    };
    let mut r = Response::new(Either::Right(body));
    let ct = if lines {
        JSON_LINES
    } else {
        "application/json"
    };
    r.headers_mut()
        .insert(header::CONTENT_TYPE, header::HeaderValue::from_static(ct));
    r
}

fn authorized(app: &App, req: &Request<Incoming>) -> bool {
    let given = req.headers().get(header::AUTHORIZATION);
    hookstorm::profile::signature::bearer_matches(
        given.map(|v| v.as_bytes()),
        &app.config.admin_token,
    )
}

#[derive(Deserialize)]
struct Setup {
    state: String,
    #[serde(default)]
    params: SetupParams,
}

#[derive(Deserialize, Default)]
struct SetupParams {
    #[serde(default)]
    task_ids: Vec<String>,
    #[serde(default)]
    account: Option<String>,
}

/// Answers one admin request.
pub async fn handle(app: Arc<App>, req: Request<Incoming>) -> Response<AdminBody> {
    if req.method() == Method::GET && req.uri().path() == "/state" && authorized(&app, &req) {
        return state(&app, wants_lines(&req)).await;
    }
    answer(app, req).await.map(Either::Left)
}

/// Answers every admin request but an authorized `GET /state`.
async fn answer(app: Arc<App>, req: Request<Incoming>) -> Response<Full<Bytes>> {
    let path = req.uri().path().to_string();
    let method = req.method().clone();
    if method == Method::GET && path == "/healthz" {
        return match app.store.ping().await {
            Ok(()) => reply(StatusCode::OK, "ok"),
            Err(e) => reply(StatusCode::SERVICE_UNAVAILABLE, &e.to_string()),
        };
    }
    if !authorized(&app, &req) {
        let mut r = reply(StatusCode::UNAUTHORIZED, "admin token required");
        r.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            header::HeaderValue::from_static("Bearer"),
        );
        return r;
    }
    match (method, path.as_str()) {
        (Method::POST, "/reset") => match app.store.reset().await {
            Ok(()) => {
                app.outage.take();
                reply(StatusCode::NO_CONTENT, "")
            }
            Err(e) => reply(StatusCode::SERVICE_UNAVAILABLE, &e.to_string()),
        },
        (Method::POST, "/setup") => {
            let bytes = match Limited::new(req.into_body(), 1 << 20).collect().await {
                Ok(c) => c.to_bytes(),
                Err(_) => return reply(StatusCode::PAYLOAD_TOO_LARGE, "setup body too large"),
            };
            let setup: Setup = match serde_json::from_slice(&bytes) {
                Ok(s) => s,
                Err(e) => return reply(StatusCode::BAD_REQUEST, &format!("bad setup body: {e}")),
            };
            if setup.state != "tasks-submitted" {
                return reply(
                    StatusCode::BAD_REQUEST,
                    &format!(
                        "unknown setup state {:?} (hint: tasks-submitted)",
                        setup.state
                    ),
                );
            }
            let account = match setup
                .params
                .account
                .or_else(|| app.config.accounts.first().map(|a| a.name.clone()))
            {
                Some(a) => a,
                None => return reply(StatusCode::BAD_REQUEST, "no account given or configured"),
            };
            match app.store.submit_tasks(account, setup.params.task_ids).await {
                Ok(n) => json(StatusCode::OK, &serde_json::json!({ "recorded": n })),
                Err(e) => reply(StatusCode::SERVICE_UNAVAILABLE, &e.to_string()),
            }
        }
        (Method::POST, "/reconcile") => match reconcile(&app).await {
            Ok(counts) => json(StatusCode::OK, &counts),
            Err(e) => reply(e.status(), &e.to_string()),
        },
        _ => reply(StatusCode::NOT_FOUND, "not found"),
    }
}
