//! The HTTP probe: GET a URL that serves the state JSON; POST to the reset,
//! setup and reconcile URLs. Plain HTTP/1.1 over hyper; the URLs are the
//! receiver's admin endpoints, normally on a private address.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;

use crate::tls::TrustedRoots;
use hyper_util::rt::TokioExecutor;

use super::{redact_url, ProbeError};
use crate::state::State;

/// Where the state is served.
#[derive(Clone)]
pub(crate) struct HttpSource {
    pub url: String,
}

/// Checks that the probe can call this URL.
pub(crate) fn check_url(url: &str) -> Result<(), ProbeError> {
    if !url.starts_with("http://") && !url.starts_with("https://") {
        return Err(ProbeError::Config(format!(
            "{}: expected an http:// or https:// URL",
            redact_url(url)
        )));
    }
    url.parse::<hyper::Uri>()
        .map(|_| ())
        .map_err(|e| ProbeError::Config(format!("{}: not a URL: {e}", redact_url(url))))
}

async fn call(
    method: hyper::Method,
    url: &str,
    token: Option<&str>,
    body: Option<serde_json::Value>,
    roots: &TrustedRoots,
) -> Result<(u16, Bytes), ProbeError> {
    check_url(url)?;
    let shown = redact_url(url);
    let client = Client::builder(TokioExecutor::new())
        .build::<_, Full<Bytes>>(crate::tls::connector(HttpConnector::new(), roots));
    let mut req = Request::builder().method(method.clone()).uri(url);
    if let Some(t) = token {
        req = req.header(hyper::header::AUTHORIZATION, format!("Bearer {t}"));
    }
    let payload = match body {
        Some(b) => {
            req = req.header(hyper::header::CONTENT_TYPE, "application/json");
            Bytes::from(b.to_string())
        }
        None => Bytes::new(),
    };
    let req = req
        .body(Full::new(payload))
        .map_err(|e| ProbeError::Config(format!("{shown}: {e}")))?;
    let resp = client
        .request(req)
        .await
        .map_err(|e| ProbeError::Io(format!("{method} {shown}: {e}")))?;
    let status = resp.status().as_u16();
    let bytes = resp
        .into_body()
        .collect()
        .await
        .map_err(|e| ProbeError::Io(format!("{method} {shown}: reading the answer: {e}")))?
        .to_bytes();
    if !(200..300).contains(&status) {
        let text = String::from_utf8_lossy(&bytes);
        let tail: String = text.chars().take(200).collect();
        return Err(ProbeError::Status {
            status,
            message: format!("{method} {shown} answered {status}: {tail}"),
        });
    }
    Ok((status, bytes))
}

impl HttpSource {
    /// GETs and parses the state.
    pub async fn read(
        &self,
        token: Option<&str>,
        roots: &TrustedRoots,
    ) -> Result<State, ProbeError> {
        let (_, bytes) = call(hyper::Method::GET, &self.url, token, None, roots).await?;
        serde_json::from_slice(&bytes).map_err(|e| {
            ProbeError::Invalid(format!(
                "GET {}: expected the state JSON {{\"inbox\": [...], ...}} of docs/state.md: {e}",
                redact_url(&self.url)
            ))
        })
    }
}

/// POSTs a JSON body to an action URL; returns its JSON answer (or text, or null).
pub(crate) async fn post(
    url: &str,
    token: Option<&str>,
    body: serde_json::Value,
    roots: &TrustedRoots,
) -> Result<serde_json::Value, ProbeError> {
    let (_, bytes) = call(hyper::Method::POST, url, token, Some(body), roots).await?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(serde_json::Value::Null);
    }
    Ok(serde_json::from_slice(&bytes).unwrap_or_else(|_| {
        serde_json::Value::String(String::from_utf8_lossy(&bytes).into_owned())
    }))
}
