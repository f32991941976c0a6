//! The proxy's control API: small HTTP on its own port, for people who use
//! `hookstorm proxy` in their own tests.
//!
//! - `GET /mode` → `{"mode":"pass"}`
//! - `POST /mode` with `{"mode":"refuse"}`, `{"mode":"reset"}`,
//!   `{"mode":"blackhole"}`, `{"mode":"latency","latency_ms":200}` or
//!   `{"mode":"pass"}` → the new mode
//! - `GET /stats` → connection counters
//!
//! It listens on loopback by default and has no authentication: it is a
//! test tool, not a service.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

use super::{Mode, Proxy};

fn json(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    r
}

async fn route(proxy: Arc<Proxy>, req: Request<Incoming>) -> Response<Full<Bytes>> {
    let mode_json = |m: Mode| serde_json::to_string(&m).unwrap_or_default();
    match (req.method(), req.uri().path()) {
        (&Method::GET, "/mode") => json(StatusCode::OK, mode_json(proxy.mode())),
        (&Method::GET, "/stats") => json(
            StatusCode::OK,
            serde_json::to_string(&proxy.stats()).unwrap_or_default(),
        ),
        (&Method::POST, "/mode") => {
            let body = match Limited::new(req.into_body(), 4096).collect().await {
                Ok(b) => b.to_bytes(),
                Err(_) => {
                    return json(
                        StatusCode::BAD_REQUEST,
                        r#"{"error":"body too large"}"#.into(),
                    )
                }
            };
            match serde_json::from_slice::<Mode>(&body) {
                Ok(m) => {
                    proxy.set_mode(m);
                    json(StatusCode::OK, mode_json(m))
                }
                Err(e) => json(
                    StatusCode::BAD_REQUEST,
                    serde_json::json!({
                        "error": format!("{e} (hint: {{\"mode\":\"refuse\"}}; modes: pass, refuse, reset, blackhole, latency with latency_ms)")
                    })
                    .to_string(),
                ),
            }
        }
        _ => json(
            StatusCode::NOT_FOUND,
            r#"{"error":"routes: GET /mode, POST /mode, GET /stats"}"#.into(),
        ),
    }
}

/// Serves the control API for `proxy` on `listener` until the task is dropped.
pub async fn serve(proxy: Arc<Proxy>, listener: TcpListener) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let proxy = proxy.clone();
        tokio::spawn(async move {
            let svc = service_fn(move |req| {
                let proxy = proxy.clone();
                async move { Ok::<_, Infallible>(route(proxy, req).await) }
            });
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), svc)
                .await;
        });
    }
}
