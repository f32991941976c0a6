//! `tamper`: deliveries a receiver must refuse, and key rotation.
//!
//! At plan time it adds forged deliveries on fresh task ids that are never
//! sent genuinely (so "nothing stored" is checkable), marks replays of
//! genuine requests past the tolerance, and spreads genuine deliveries over
//! rotation signings. At send time [`sign`] builds the actual headers with
//! the wall clock, then breaks them the way each forgery says. Every
//! forgery is proven, in the tests, to fail [`Scheme::verify`].

use base64::Engine as _;
use rand::Rng;
use serde_json::json;

use crate::delivery::{task_body, TaskStatus, EPOCH};
use crate::fault_spec::{Forgery, Signing, TamperSpec};
use crate::history::Intent;
use crate::plan::{signing_name, Plan, Redelivery};
use crate::profile::signature::{Scheme, Secret, SignInput};
use crate::tag::FaultName;

/// Adds the forged deliveries and rotation signings of `spec`.
pub fn apply<R: Rng + ?Sized>(plan: &mut Plan, spec: &TamperSpec, rng: &mut R) {
    let mut added = 0;
    for account in &plan.accounts.clone() {
        for &forgery in &spec.forgeries {
            for n in 0..spec.each {
                if forgery == Forgery::ExpiredReplay {
                    let genuine: Vec<usize> = plan
                        .deliveries
                        .iter()
                        .enumerate()
                        .filter(|(_, d)| &d.account == account && d.intent == Intent::Genuine)
                        .map(|(i, _)| i)
                        .collect();
                    if genuine.is_empty() {
                        plan.note(
                            FaultName::Tamper,
                            "skip expired-replay",
                            Some(format!("no genuine delivery for {account} to replay")),
                        );
                        continue;
                    }
                    let i = genuine[rng.gen_range(0..genuine.len())];
                    plan.deliveries[i]
                        .redeliveries
                        .push(Redelivery::ExpiredReplay);
                    added += 1;
                    continue;
                }
                let key = format!("job-forged-{}-{}", forgery.as_str(), n + 1);
                let body = task_body(rng, Some(key), TaskStatus::Completed, EPOCH.into());
                let intent = match forgery {
                    Forgery::CrossAccount => Intent::CrossAccount,
                    Forgery::Oversized => Intent::Oversized,
                    _ => Intent::Forged,
                };
                let d = plan.push_new(rng, account, body, intent);
                d.forgery = Some(forgery);
                d.detail = Some(forgery.as_str().into());
                added += 1;
            }
        }
    }
    if !spec.rotation.is_empty() {
        let genuine: Vec<usize> = plan
            .deliveries
            .iter()
            .enumerate()
            .filter(|(_, d)| d.intent == Intent::Genuine)
            .map(|(i, _)| i)
            .collect();
        let n = genuine.len().max(1);
        for (k, &i) in genuine.iter().enumerate() {
            let s = spec.rotation[k * spec.rotation.len() / n];
            let d = &mut plan.deliveries[i];
            d.signing = s;
            d.detail = Some(signing_name(s).into());
        }
        let names: Vec<&str> = spec.rotation.iter().map(|&s| signing_name(s)).collect();
        plan.note(
            FaultName::Tamper,
            format!(
                "sign {} genuine deliveries in rotation phases {}",
                genuine.len(),
                names.join(", ")
            ),
            None,
        );
    }
    if added > 0 {
        let names: Vec<&str> = spec.forgeries.iter().map(|f| f.as_str()).collect();
        plan.note(
            FaultName::Tamper,
            format!("add {added} must-reject deliveries: {}", names.join(", ")),
            None,
        );
    }
}

/// The secrets the sender signs with for one account.
#[derive(Debug, Clone)]
pub struct Keys {
    /// Secrets the receiver accepts, oldest first.
    pub current: Vec<Secret>,
    /// Secrets the receiver has retired.
    pub retired: Vec<Secret>,
    /// Another account's secrets, for cross-account forgeries.
    pub other_account: Option<Vec<Secret>>,
    /// A secret the receiver never had.
    pub wrong: Secret,
}

/// A secret derived from `seed`, valid for every scheme (`whsec_` + base64).
pub fn derived_secret(seed: u64, purpose: &str) -> Secret {
    use rand::SeedableRng;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(crate::plan::derive_seed(
        seed, "secret", purpose, 0,
    ));
    let bytes: [u8; 24] = rng.gen();
    Secret::new(format!(
        "whsec_{}",
        base64::engine::general_purpose::STANDARD.encode(bytes)
    ))
}

/// A request ready to send: headers (signature, timestamp, scheme id) and body.
#[derive(Debug, Clone, PartialEq)]
pub struct Signed {
    /// Headers the scheme sets (or the forgery left).
    pub headers: Vec<(String, String)>,
    /// The exact body bytes.
    pub body: Vec<u8>,
}

/// What one delivery needs signed.
#[derive(Debug, Clone, Copy)]
pub struct SignRequest<'a> {
    /// The delivery id.
    pub id: &'a str,
    /// The body bytes as planned.
    pub body: &'a [u8],
    /// The forgery, if any.
    pub forgery: Option<Forgery>,
    /// The rotation signing.
    pub signing: Signing,
    /// The wall clock, unix seconds.
    pub now: i64,
    /// The replay tolerance, seconds.
    pub tolerance: Option<i64>,
    /// The receiver's body limit.
    pub max_body: usize,
    /// The URL the request goes to (signed by some schemes).
    pub url: &'a str,
}

/// The header a scheme puts its signature in.
pub fn signature_header(scheme: &Scheme) -> &str {
    match scheme {
        Scheme::TimestampedHex { header } => header,
        Scheme::StandardWebhooks {
            signature_header, ..
        } => signature_header,
        Scheme::BodyHmac { header, .. } => header,
        Scheme::Slack {
            signature_header, ..
        } => signature_header,
        Scheme::Template(t) => &t.header,
        Scheme::HttpMessageSignature(_) => "Signature",
    }
}

/// The keys a genuine signature is made with: the current ones, or the
/// retired and the current during a rotation, or only the newest (and
/// only the newest where the scheme carries a single signature).
fn genuine_keys(scheme: &Scheme, keys: &Keys, signing: Signing) -> Vec<Secret> {
    let last = || keys.current.last().cloned().into_iter().collect::<Vec<_>>();
    match signing {
        Signing::Current if scheme.single_signature() => last(),
        Signing::Current => keys.current.clone(),
        Signing::OldAndNew if scheme.single_signature() => last(),
        Signing::OldAndNew => keys.retired.iter().chain(&keys.current).cloned().collect(),
        Signing::NewOnly => last(),
    }
}

/// A signature header value of the scheme's shape that does not parse.
fn garbage_signature(scheme: &Scheme) -> String {
    match scheme {
        Scheme::TimestampedHex { .. } => "t=not-a-time,v1=zz-not-hex".to_string(),
        Scheme::StandardWebhooks { .. } => "v1,***not-base64***".to_string(),
        Scheme::BodyHmac { prefix, .. } => format!("{prefix}not-an-hmac!"),
        Scheme::Slack { .. } => "v0=zz-not-hex".to_string(),
        Scheme::Template(t) => t.garbage(),
        Scheme::HttpMessageSignature(h) => format!("{}=:***not-base64***:", h.label),
    }
}

/// The genuine signature header value `v` with its scheme version
/// replaced by one the receiver must not know.
fn unknown_scheme_only(scheme: &Scheme, v: &str) -> String {
    match scheme {
        Scheme::TimestampedHex { .. } => v.replace(",v1=", ",v2="),
        Scheme::StandardWebhooks { .. } => v.replace("v1,", "v2,"),
        Scheme::BodyHmac { prefix, .. } => {
            format!("v2={}", v.strip_prefix(prefix.as_str()).unwrap_or(v))
        }
        Scheme::Slack { .. } => v.replacen("v0=", "v1=", 1),
        Scheme::Template(t) => t.unknown_version(v),
        // A signature under a label the input does not name.
        Scheme::HttpMessageSignature(h) => v.replacen(&format!("{}=", h.label), "sig9=", 1),
    }
}

/// Signs one attempt: genuinely, or broken the way its forgery says.
/// `Err` names why the forgery cannot be expressed with this scheme or
/// these keys; the sender then skips the delivery and says so.
pub fn sign(scheme: &Scheme, keys: &Keys, req: SignRequest<'_>) -> Result<Signed, String> {
    // The body first (its send time stamped, a signature that travels in
    // it written), then the headers over that body.
    let do_sign = |secrets: &[Secret], ts: i64, body: &[u8]| -> Result<Signed, String> {
        let input = SignInput {
            id: req.id,
            timestamp: ts,
            body,
            url: req.url,
        };
        let body = scheme
            .sign_body(secrets, input)
            .map_err(|e| format!("cannot sign: {e}"))?;
        let headers = scheme
            .sign(
                secrets,
                SignInput {
                    body: &body,
                    ..input
                },
            )
            .map_err(|e| format!("cannot sign: {e}"))?;
        Ok(Signed { headers, body })
    };
    let genuine_keys = genuine_keys(scheme, keys, req.signing);
    let sig_header = signature_header(scheme).to_string();
    let replace = |signed: &mut Signed, f: &dyn Fn(&str) -> String| {
        for (k, v) in signed.headers.iter_mut() {
            if k.eq_ignore_ascii_case(&sig_header) {
                *v = f(v);
            }
        }
    };
    let in_body = scheme.signs_into_body();
    let Some(forgery) = req.forgery else {
        return do_sign(&genuine_keys, req.now, req.body);
    };
    let signed = match forgery {
        Forgery::TamperedBody if !scheme.signs_body() => {
            return Err(
                "tampered-body: the scheme signs no body (only a timestamp and a token), so a changed body is no forgery its signature can refuse".into(),
            )
        }
        Forgery::TamperedBody => {
            let mut s = do_sign(&genuine_keys, req.now, req.body)?;
            s.body = tamper_body(&s.body);
            s
        }
        Forgery::WrongSecret => do_sign(std::slice::from_ref(&keys.wrong), req.now, req.body)?,
        // A signature in the body: left empty, or garbage, unsigned.
        Forgery::MissingHeader if in_body => do_sign(&[], req.now, req.body)?,
        Forgery::MalformedHeader if in_body => {
            let garbage = crate::profile::envelope::replace_mark(
                req.body,
                crate::profile::envelope::SIGNATURE_MARK,
                "not-a-signature!",
            );
            do_sign(&[], req.now, &garbage)?
        }
        Forgery::UnknownSchemeOnly if in_body => {
            return Err(
                "unknown-scheme-only: a signature in the body carries no version".into(),
            )
        }
        Forgery::MissingHeader => {
            let mut s = do_sign(&genuine_keys, req.now, req.body)?;
            s.headers.retain(|(k, _)| !k.eq_ignore_ascii_case(&sig_header));
            s
        }
        Forgery::MalformedHeader => {
            let mut s = do_sign(&genuine_keys, req.now, req.body)?;
            let garbage = garbage_signature(scheme);
            replace(&mut s, &|_| garbage.clone());
            s
        }
        Forgery::UnknownSchemeOnly => {
            let mut s = do_sign(&genuine_keys, req.now, req.body)?;
            replace(&mut s, &|v| unknown_scheme_only(scheme, v));
            s
        }
        Forgery::StaleTimestamp | Forgery::ExpiredReplay | Forgery::FutureTimestamp => {
            let tol = match (scheme.has_timestamp(), req.tolerance) {
                (true, Some(t)) => t,
                _ => {
                    return Err(format!(
                        "{}: the scheme has no timestamp tolerance",
                        forgery.as_str()
                    ))
                }
            };
            let ts = if forgery == Forgery::FutureTimestamp {
                req.now + tol + 60
            } else {
                req.now - tol - 60
            };
            do_sign(&genuine_keys, ts, req.body)?
        }
        Forgery::CrossAccount => match &keys.other_account {
            Some(other) if !other.is_empty() && other != &keys.current => {
                let other: Vec<Secret> = if scheme.single_signature() {
                    other.last().cloned().into_iter().collect()
                } else {
                    other.clone()
                };
                do_sign(&other, req.now, req.body)?
            }
            _ => {
                return Err(
                    "cross-account: no other account's secret, or it equals this one's".into(),
                )
            }
        },
        Forgery::Oversized => {
            let body = oversized_body(req.body, req.max_body);
            do_sign(&genuine_keys, req.now, &body)?
        }
        Forgery::RetiredSecret => {
            if keys.retired.is_empty() {
                return Err("retired-secret: no retired secret".into());
            }
            let retired: Vec<Secret> = if scheme.single_signature() {
                keys.retired[..1].to_vec()
            } else {
                keys.retired.clone()
            };
            do_sign(&retired, req.now, req.body)?
        }
    };
    Ok(signed)
}

/// The body with one value changed after signing: the `credits` of the
/// object (or of an array's first object), else a space added at the end
/// (a form body's last parameter).
fn tamper_body(body: &[u8]) -> Vec<u8> {
    let mut v = match serde_json::from_slice::<serde_json::Value>(body) {
        Ok(v) => v,
        Err(_) => {
            let mut b = body.to_vec();
            b.push(b' ');
            return b;
        }
    };
    let target = match &mut v {
        serde_json::Value::Array(a) => a.first_mut().and_then(|x| x.as_object_mut()),
        other => other.as_object_mut(),
    };
    match target {
        Some(o) => {
            let credits = o.get("credits").and_then(|c| c.as_u64()).unwrap_or(0);
            o.insert("credits".into(), json!(credits + 1000));
            serde_json::to_vec(&v).unwrap_or_else(|_| body.to_vec())
        }
        None => {
            let mut b = body.to_vec();
            b.push(b' ');
            b
        }
    }
}

/// A well-formed body larger than `max_body` by 1 KiB of padding: an
/// object's `response`, an array's extra element, a form's extra parameter.
fn oversized_body(body: &[u8], max_body: usize) -> Vec<u8> {
    let padding = "x".repeat(max_body + 1024);
    match serde_json::from_slice::<serde_json::Value>(body) {
        Ok(serde_json::Value::Array(mut a)) => {
            a.push(json!({"padding": padding}));
            serde_json::to_vec(&a).unwrap_or_default()
        }
        Ok(serde_json::Value::Object(mut o)) => {
            o.insert("response".into(), json!({"result": {"padding": padding}}));
            serde_json::to_vec(&o).unwrap_or_default()
        }
        Err(_) if !body.is_empty() && body.iter().all(|b| b.is_ascii_graphic()) => {
            let mut b = body.to_vec();
            b.extend_from_slice(b"&padding=");
            b.extend_from_slice(padding.as_bytes());
            b
        }
        _ => serde_json::to_vec(&json!({"response": {"result": {"padding": padding}}}))
            .unwrap_or_default(),
    }
}
