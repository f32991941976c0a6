//! One request's bytes: the delivery dressed as the profile's provider
//! sends it, signed at its send time with the account's keyed signer, its
//! HTTP/1.1 head and body encoded into the worker's reused buffer, ready
//! for one `write`. Pure, so a test can parse what a receiver would get,
//! verify its signature, and compare it with what `run` sends.
//!
//! The generator makes deliveries in the answerline shape, by hand, for
//! speed. Under a profile whose provider sends that shape as it is (the
//! answerline profile), the fast path writes its headers directly. Under
//! any other, [`dress`] first passes the delivery through the same
//! functions a run's sender uses ([`crate::sender::provider_delivery`] and
//! [`crate::sender::request_headers`]): the provider's envelope, its kind
//! of delivery id, its headers, and the history's key and job under the
//! profile's identity, so a receiver that passes `run` accepts the bench's
//! deliveries and the checker reads them as it reads a run's.

use super::target::LoadTarget;
use crate::bench::mix::Item;
use crate::delivery::Body;
use crate::profile::signature::SignInput;

/// Dresses `item` (as generated: the answerline delivery) as the profile's
/// provider sends it: its body, delivery id, history key and job, and the
/// provider's headers beyond content type, length and signature. Nothing
/// to do on the fast path ([`LoadTarget::as_planned`]). A body that does
/// not parse (never: the generator writes it) is sent as it is.
pub(super) fn dress(t: &LoadTarget, item: &mut Item) {
    if t.as_planned {
        return;
    }
    let Ok(body) = serde_json::from_slice::<Body>(&item.body) else {
        return;
    };
    let job = std::mem::take(&mut item.job);
    let d = crate::sender::provider_delivery(&t.profile, &body, &item.id, Some(job.clone()));
    let idh = t.id_header.as_ref().map(|h| h.as_str());
    item.headers = crate::sender::request_headers(&t.profile, &body, &d.id, 1, &[])
        .into_iter()
        .filter(|(k, _)| {
            // The encoder writes the content type; the signer writes an id it signs.
            let written = k.eq_ignore_ascii_case("content-type");
            let signed = t.id_signed && idh.is_some_and(|h| k.eq_ignore_ascii_case(h));
            !(written || signed)
        })
        .collect();
    item.id = d.id;
    item.body = d.bytes;
    item.key = d.key;
    item.job = d.job.unwrap_or(job);
}

/// Encodes the request of `item` signed at `now_unix` into `out` (cleared
/// first): the HTTP/1.1 head, then the body. `values` is the worker's
/// reused buffer for the signed header values. A value that cannot be a
/// header value (a control character) is an error (what is wrong with the
/// request), as hyper's would be.
pub(super) fn encode_request(
    t: &LoadTarget,
    item: &Item,
    now_unix: i64,
    values: &mut Vec<String>,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    let input = SignInput {
        id: &item.id,
        timestamp: now_unix,
        body: &item.body,
        url: &t.urls[item.account],
    };
    // A body that carries marks of its attempt (Linear's send time,
    // Mailgun's signature) is made first, then the headers over it.
    let signed;
    let body: &[u8] = if t.marks_attempts {
        signed = t.signers[item.account].sign_body(input);
        &signed
    } else {
        &item.body
    };
    t.signers[item.account].sign_values(SignInput { body, ..input }, values);
    out.clear();
    out.extend_from_slice(b"POST ");
    out.extend_from_slice(t.paths[item.account].as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
    let mut header = |name: &str, value: &[u8]| -> Result<(), String> {
        if let Some(b) = value
            .iter()
            .find(|b| (**b < 0x20 && **b != b'\t') || **b == 0x7f)
        {
            return Err(format!("header {name} holds the control byte 0x{b:02x}"));
        }
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value);
        out.extend_from_slice(b"\r\n");
        Ok(())
    };
    header("host", t.authority.as_bytes())?;
    header("content-type", t.profile.content_type().as_bytes())?;
    if t.as_planned {
        if let Some(idh) = &t.id_header {
            if !t.id_signed {
                header(idh.as_str(), item.id.as_bytes())?;
            }
        }
        if let Some(ev) = &t.event_header {
            header(ev.as_str(), b"task.completed")?;
        }
    } else {
        for (name, v) in &item.headers {
            header(name, v.as_bytes())?;
        }
    }
    for (name, v) in t.signed_headers.iter().zip(values.iter()) {
        header(name.as_str(), v.as_bytes())?;
    }
    let mut digits = [0u8; 20];
    header(
        "content-length",
        crate::text::decimal::digits(body.len() as u64, &mut digits),
    )?;
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(body);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::mix::Generator;
    use crate::profile::signature::Secret;
    use crate::profile::Profile;

    async fn target(profile: &str, secret: &str) -> LoadTarget {
        let accounts = vec!["acct_a".to_string(), "acct_b".to_string()];
        let secrets = accounts
            .iter()
            .map(|a| (a.clone(), vec![Secret::new(secret)]))
            .collect();
        LoadTarget::resolve(
            "http://127.0.0.1:9/hooks/{account}?v=1",
            Profile::builtin(profile).unwrap(),
            &accounts,
            &secrets,
        )
        .await
        .unwrap()
    }

    #[tokio::test]
    async fn an_encoded_request_is_the_signed_delivery_a_receiver_verifies() {
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let gen = Generator::new(4, crate::bench::mix::Mix::default(), 2);
        for name in crate::profile::BUILTIN_NAMES {
            let t = target(name, secret).await;
            let (mut values, mut out) = (Vec::new(), Vec::new());
            for slot in [0, 1, 77] {
                let planned = gen.item(slot);
                let mut item = planned.clone();
                dress(&t, &mut item);
                let now = 1_795_000_000 + slot as i64;
                encode_request(&t, &item, now, &mut values, &mut out).unwrap();
                let mut h = [httparse::EMPTY_HEADER; 32];
                let mut req = httparse::Request::new(&mut h);
                let httparse::Status::Complete(n) = req.parse(&out).unwrap() else {
                    panic!("{name}: partial head")
                };
                assert_eq!(req.method, Some("POST"));
                assert_eq!(req.path, Some(t.paths[item.account].as_str()));
                let headers: Vec<(String, String)> = req
                    .headers
                    .iter()
                    .map(|h| {
                        (
                            h.name.to_string(),
                            String::from_utf8(h.value.to_vec()).unwrap(),
                        )
                    })
                    .collect();
                let get = |k: &str| {
                    headers
                        .iter()
                        .filter(|(n, _)| n.eq_ignore_ascii_case(k))
                        .map(|(_, v)| v.as_str())
                        .collect::<Vec<_>>()
                };
                assert_eq!(get("host"), ["127.0.0.1:9"], "{name}");
                assert_eq!(get("content-length"), [(out.len() - n).to_string()]);
                if !t.marks_attempts {
                    assert_eq!(&out[n..], &item.body[..], "{name}: body");
                }
                if let Some(idh) = t.profile.delivery_id_header() {
                    assert_eq!(get(idh), [item.id.as_str()], "{name}: one id header");
                }
                t.profile
                    .scheme
                    .verify_request(
                        &[Secret::new(secret)],
                        headers.as_slice(),
                        &t.urls[item.account],
                        &out[n..],
                        now,
                        Some(300),
                    )
                    .unwrap_or_else(|e| panic!("{name}: {e}"));
                // What `run` sends for the same planned delivery: the same
                // body, id and headers (signed ones included), and the
                // same history key and job.
                let body: Body = serde_json::from_slice(&planned.body).unwrap();
                let run = crate::sender::provider_delivery(
                    &t.profile,
                    &body,
                    &planned.id,
                    Some(planned.job.clone()),
                );
                assert_eq!(run.bytes, item.body, "{name}: body");
                assert_eq!(run.id, item.id, "{name}: delivery id");
                assert_eq!(run.key, item.key, "{name}: history key");
                assert_eq!(run.job.as_deref(), Some(item.job.as_str()), "{name}: job");
                let signed: Vec<(String, String)> = t
                    .signed_headers
                    .iter()
                    .zip(&values)
                    .map(|(n, v)| (n.as_str().to_string(), v.clone()))
                    .collect();
                let lower = |h: Vec<(String, String)>| {
                    let mut h: Vec<_> = h
                        .into_iter()
                        .map(|(k, v)| (k.to_ascii_lowercase(), v))
                        .collect();
                    h.sort();
                    h
                };
                let sent = lower(
                    headers
                        .iter()
                        .filter(|(k, _)| k != "host" && k != "content-length")
                        .cloned()
                        .collect(),
                );
                let by_run = lower(crate::sender::request_headers(
                    &t.profile, &body, &run.id, 1, &signed,
                ));
                assert_eq!(sent, by_run, "{name}: headers");
            }
        }
    }

    #[tokio::test]
    async fn a_header_value_with_a_control_byte_is_refused_not_sent() {
        let t = target("answerline", "k").await;
        let mut item = Generator::new(1, crate::bench::mix::Mix::none(), 2).item(3);
        item.id = "whd_\r\nx-injected: 1".into();
        let (mut values, mut out) = (Vec::new(), Vec::new());
        let e = encode_request(&t, &item, 5, &mut values, &mut out).unwrap_err();
        assert!(e.contains("control byte 0x0d"), "{e}");
    }
}
