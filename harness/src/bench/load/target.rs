//! Where and how a bench sends: the receiver's address, each account's
//! path and secrets, and the profile's scheme keyed once per account, all
//! resolved and parsed before the load starts, so a worker parses nothing
//! per request (beyond dressing a delivery in its provider's envelope, for
//! the profiles whose provider does not send the answerline shape).

use std::collections::BTreeMap;
use std::net::SocketAddr;

use crate::profile::signature::{Secret, Signer};
use crate::profile::{BodyShape, Profile, Semantics};

/// Where and how to send.
#[derive(Clone)]
pub struct LoadTarget {
    /// Socket address of the receiver.
    pub addr: SocketAddr,
    /// `Host` header value.
    pub authority: String,
    /// Path per account index (`{account}` substituted).
    pub paths: Vec<String>,
    /// The URL of each account's path (`http://` and the `Host`), as a
    /// receiver reconstructs it to check a signature over the URL.
    pub urls: Vec<String>,
    /// The bodies carry their send time (`{{sent_ms}}`), stamped at
    /// signing.
    pub marks_attempts: bool,
    /// The same paths, parsed.
    pub uris: Vec<http::Uri>,
    /// `Host` header value, parsed.
    pub host: http::HeaderValue,
    /// The profile's delivery id header, parsed.
    pub id_header: Option<http::HeaderName>,
    /// The profile's event header, parsed.
    pub event_header: Option<http::HeaderName>,
    /// Account names, by index.
    pub accounts: Vec<String>,
    /// Account names as JSON strings, by index (for history lines).
    pub accounts_json: Vec<String>,
    /// Secrets per account index (current first).
    pub secrets: Vec<Vec<Secret>>,
    /// The profile's scheme keyed with each account's secrets, by index.
    pub signers: Vec<Signer>,
    /// The headers the signers fill, parsed, in their order.
    pub signed_headers: Vec<http::HeaderName>,
    /// The delivery id header is one the scheme signs (set by the signer).
    pub id_signed: bool,
    /// The profile's provider sends the generated delivery as it is (the
    /// answerline body, ids and identity, no header of its own): the
    /// encoder's fast path. Otherwise each delivery is dressed first
    /// ([`crate::sender::provider_delivery`]), as a run sends it.
    pub as_planned: bool,
    /// The sender profile (scheme, timeout, success statuses, headers).
    pub profile: Profile,
}

/// A load target could not be prepared.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The URL is not usable.
    #[error("target url {url:?}: {reason}")]
    BadUrl {
        /// The URL.
        url: String,
        /// What is wrong.
        reason: String,
    },
    /// An account has no secret.
    #[error("account {0:?} has no secret (hint: the target file must define one)")]
    NoSecret(String),
    /// An account's secret cannot key the profile's signature.
    #[error("account {account:?}: cannot sign: {reason}")]
    BadSecret {
        /// The account.
        account: String,
        /// Why.
        reason: String,
    },
    /// The history could not be written.
    #[error("history {path}: {message}")]
    History {
        /// The file.
        path: String,
        /// The error.
        message: String,
    },
}

impl LoadTarget {
    /// Resolves `url` (may contain `{account}`) for `accounts`.
    pub async fn resolve(
        url: &str,
        profile: Profile,
        accounts: &[String],
        secrets: &BTreeMap<String, Vec<Secret>>,
    ) -> Result<LoadTarget, LoadError> {
        let bad = |reason: String| LoadError::BadUrl {
            url: url.to_string(),
            reason,
        };
        let mut paths = Vec::new();
        let mut authority = String::new();
        let mut sec = Vec::new();
        for a in accounts {
            let uri: http::Uri = url
                .replace("{account}", a)
                .parse()
                .map_err(|e| bad(format!("{e}")))?;
            if uri.scheme_str() != Some("http") {
                return Err(bad(
                    "expected http://HOST:PORT/PATH (bench drives raw HTTP/1 connections; for an https receiver, bench its plain-http side or use `hookstorm run`)".into(),
                ));
            }
            authority = uri
                .authority()
                .map(|a| a.to_string())
                .ok_or_else(|| bad("no host".into()))?;
            paths.push(
                uri.path_and_query()
                    .map(|p| p.to_string())
                    .unwrap_or_else(|| "/".into()),
            );
            let s = secrets
                .get(a)
                .filter(|s| !s.is_empty())
                .cloned()
                .ok_or_else(|| LoadError::NoSecret(a.clone()))?;
            sec.push(s);
        }
        let host_port = if authority.contains(':') {
            authority.clone()
        } else {
            format!("{authority}:80")
        };
        let addr = tokio::net::lookup_host(host_port.as_str())
            .await
            .map_err(|e| bad(format!("cannot resolve {host_port}: {e}")))?
            .next()
            .ok_or_else(|| bad(format!("{host_port} resolves to nothing")))?;
        let header = |name: &str| {
            http::HeaderName::from_bytes(name.as_bytes())
                .map_err(|e| bad(format!("profile header {name:?}: {e}")))
        };
        let id_header = profile.delivery_id_header().map(header).transpose()?;
        let event_header = profile.event_header.as_deref().map(header).transpose()?;
        let uris = paths
            .iter()
            .map(|p| p.parse::<http::Uri>().map_err(|e| bad(format!("{e}"))))
            .collect::<Result<_, _>>()?;
        let host = http::HeaderValue::from_str(&authority).map_err(|e| bad(format!("{e}")))?;
        let signers = accounts
            .iter()
            .zip(&sec)
            .map(|(a, s)| {
                profile.scheme.signer(s).map_err(|e| LoadError::BadSecret {
                    account: a.clone(),
                    reason: e.to_string(),
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let names: &[String] = signers.first().map(|s| s.header_names()).unwrap_or(&[]);
        let signed_headers = names
            .iter()
            .map(|n| header(n))
            .collect::<Result<Vec<_>, _>>()?;
        let id_signed = id_header
            .as_ref()
            .is_some_and(|idh| signed_headers.iter().any(|n| n == idh));
        let as_planned = profile.body == BodyShape::Answerline
            && profile.body_template.is_none()
            && profile.semantics == Semantics::answerline();
        Ok(LoadTarget {
            as_planned,
            signers,
            signed_headers,
            id_signed,
            uris,
            host,
            id_header,
            event_header,
            addr,
            marks_attempts: profile
                .body_template
                .as_deref()
                .is_some_and(crate::profile::envelope::template_marks_attempts),
            urls: paths
                .iter()
                .map(|p| format!("http://{authority}{p}"))
                .collect(),
            authority,
            paths,
            accounts: accounts.to_vec(),
            accounts_json: accounts
                .iter()
                .map(|a| serde_json::to_string(a).unwrap_or_else(|_| "\"\"".into()))
                .collect(),
            secrets: sec,
            profile,
        })
    }
}
