//! One attempt of the reference sender: sign the stored body afresh (the
//! profile's scheme, this attempt's timestamp, the account's secrets), POST
//! it with the profile's headers, and read the answer within the timeout.
//! Redirects are not followed: a 3xx is a failed attempt.
//!
//! The broken variants bend exactly one of these steps
//! ([`SenderDefect`]): the signed bytes, the timestamp, the delivery id,
//! the timeout, following a redirect.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

use hookstorm::profile::signature::{Secret, SignInput};
use hookstorm::profile::Profile;

use super::defect::SenderDefect;
use super::outbox::Row;

/// What came of one attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sent {
    /// An answer: its status and `Retry-After` (whole seconds).
    Answer {
        /// The status.
        status: u16,
        /// `Retry-After`, when given in seconds.
        retry_after: Option<u64>,
    },
    /// No answer: why.
    Failed(String),
}

/// The HTTP client every attempt shares.
pub type HttpClient = Client<HttpConnector, Full<Bytes>>;

/// A client for attempts.
pub fn client() -> HttpClient {
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    Client::builder(TokioExecutor::new()).build(connector)
}

/// What one attempt is made of.
pub struct Attempt<'a> {
    /// The row.
    pub row: &'a Row,
    /// The delivery id this attempt carries.
    pub delivery_id: &'a str,
    /// The signature's timestamp (unix seconds).
    pub timestamp: i64,
    /// The account's secrets.
    pub secrets: &'a [Secret],
}

/// The headers of an attempt, signature included.
pub fn headers(
    profile: &Profile,
    a: &Attempt<'_>,
    defect: Option<SenderDefect>,
) -> Vec<(String, String)> {
    // The bytes the signature covers: the stored body, or (broken) the
    // body parsed and written again.
    let reserialised;
    let signed: &[u8] = if defect == Some(SenderDefect::SignsReserialisedBody) {
        reserialised = serde_json::from_slice::<serde_json::Value>(&a.row.body)
            .and_then(|v| serde_json::to_vec(&v))
            .unwrap_or_else(|_| a.row.body.clone());
        &reserialised
    } else {
        &a.row.body
    };
    let mut out = vec![("Content-Type".to_string(), "application/json".to_string())];
    if let Ok(sig) = profile.scheme.sign(
        a.secrets,
        SignInput {
            id: a.delivery_id,
            timestamp: a.timestamp,
            body: signed,
            url: "",
        },
    ) {
        out.extend(sig);
    }
    if let Some(h) = profile.delivery_id_header() {
        if !out.iter().any(|(k, _)| k.eq_ignore_ascii_case(h)) {
            out.push((h.to_string(), a.delivery_id.to_string()));
        }
    }
    if let (Some(h), Some(t)) = (&profile.event_header, &a.row.event_type) {
        out.push((h.clone(), t.clone()));
    }
    if let Ok(extra) =
        serde_json::from_str::<std::collections::BTreeMap<String, String>>(&a.row.headers)
    {
        out.extend(extra);
    }
    out
}

/// Sends one attempt; with `timeout` the whole exchange is bounded.
pub async fn send(
    client: &HttpClient,
    url: &str,
    headers: &[(String, String)],
    body: &[u8],
    timeout: Option<Duration>,
    follow_redirects: bool,
) -> Sent {
    let work = async {
        let mut url = url.to_string();
        for _ in 0..5 {
            let mut req = hyper::Request::post(url.as_str());
            for (k, v) in headers {
                req = req.header(k.as_str(), v.as_str());
            }
            let req = match req.body(Full::new(Bytes::copy_from_slice(body))) {
                Ok(r) => r,
                Err(e) => return Sent::Failed(format!("cannot build the request: {e}")),
            };
            let resp = match client.request(req).await {
                Ok(r) => r,
                Err(e) => return Sent::Failed(format!("{e:?}")),
            };
            let status = resp.status().as_u16();
            let header = |name: &str| {
                resp.headers()
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string)
            };
            let retry_after = header("retry-after").and_then(|v| v.trim().parse().ok());
            let location = header("location");
            if let Err(e) = resp.into_body().collect().await {
                return Sent::Failed(format!("reading the answer: {e}"));
            }
            match location {
                Some(l) if follow_redirects && (300..400).contains(&status) => url = l,
                _ => {
                    return Sent::Answer {
                        status,
                        retry_after,
                    }
                }
            }
        }
        Sent::Failed("too many redirects".into())
    };
    match timeout {
        Some(t) => tokio::time::timeout(t, work).await.unwrap_or_else(|_| {
            Sent::Failed(format!(
                "timeout after {}",
                hookstorm::text::units::format_duration(t)
            ))
        }),
        None => work.await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(body: &str) -> Row {
        Row {
            seq: 1,
            account: "acct_a".into(),
            key: "tsk_1".into(),
            url: "http://127.0.0.1:9/hooks/acct_a".into(),
            body: body.as_bytes().to_vec(),
            event_type: Some("task.completed".into()),
            headers: "{}".into(),
            delivery_id: "whd_1".into(),
            resource: None,
            attempts: 0,
            signed_at: None,
        }
    }

    #[test]
    fn the_signature_covers_the_stored_bytes_unless_the_variant_reserialises() {
        let p = Profile::default_profile();
        let secrets = [Secret::new("whsec_x")];
        let body = "{ \"b\": 1,  \"a\": 2 }";
        let r = row(body);
        let a = Attempt {
            row: &r,
            delivery_id: "whd_1",
            timestamp: 1_700_000_000,
            secrets: &secrets,
        };
        let good = headers(&p, &a, None);
        assert!(good.iter().any(|(k, v)| k == "Webhook-Id" && v == "whd_1"));
        p.scheme
            .verify(
                &secrets,
                good.as_slice(),
                body.as_bytes(),
                1_700_000_000,
                Some(300),
            )
            .unwrap();
        let bad = headers(&p, &a, Some(SenderDefect::SignsReserialisedBody));
        assert!(p
            .scheme
            .verify(
                &secrets,
                bad.as_slice(),
                body.as_bytes(),
                1_700_000_000,
                Some(300)
            )
            .is_err());
    }
}
