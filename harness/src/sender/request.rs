//! What a request carries, decided from the profile alone: the delivery
//! as the provider sends it (its envelope and kind of ids), its headers,
//! the history's key and job for it, which forgeries the provider's own
//! verifier would refuse (the others are skipped, not sent), and where a
//! redirect points. Pure functions, so each rule has a unit test.

use std::borrow::Cow;

use crate::fault::front::REQUEST_HEADER;
use crate::plan::{PlannedDelivery, Redelivery};
use crate::profile::envelope;
use crate::profile::{BodyShape, Freshness, Identity, Profile, Semantics};
use crate::scenario::Forgery;

/// The delivery as `profile`'s provider sends it: its envelope, its kind
/// of delivery ids (fresh ids of redeliveries too). Answerline deliveries
/// stay as planned.
pub(super) fn localize<'d>(profile: &Profile, d: &'d PlannedDelivery) -> Cow<'d, PlannedDelivery> {
    let shape = profile.body;
    if shape == BodyShape::Answerline && profile.body_template.is_none() {
        return Cow::Borrowed(d);
    }
    let mut l = d.clone();
    l.id = envelope::delivery_id(shape, &d.id);
    l.bytes = profile.render(&d.body, d.raw_note);
    for r in l.redeliveries.iter_mut() {
        if let Redelivery::FreshId(id) = r {
            *id = envelope::delivery_id(shape, id);
        }
    }
    Cow::Owned(l)
}

/// Why a timestamp forgery is not sent under `profile`, if it is not: only
/// the directions the provider's own verifier enforces are required of a
/// receiver (a future timestamp where it accepts one, a stale one where no
/// timestamp is checked).
pub(super) fn refusal(profile: &Profile, forgery: Forgery) -> Option<String> {
    let sem = &profile.semantics;
    match forgery {
        Forgery::FutureTimestamp if !sem.refuses_future() => Some(format!(
            "future-timestamp: under profile {} the provider's own verifier accepts a future timestamp, so refusing it is not required",
            profile.name
        )),
        f @ (Forgery::StaleTimestamp | Forgery::ExpiredReplay)
            if sem.freshness == Freshness::None =>
        {
            Some(format!(
                "{}: under profile {} no timestamp is checked, so replays cannot be refused by age",
                f.as_str(),
                profile.name
            ))
        }
        _ => None,
    }
}

/// A redirect's `Location`, a relative one resolved against the URL the
/// request was sent to.
pub(super) fn resolve_location(location: &str, sent_to: Option<&http::Uri>) -> String {
    match (location.starts_with('/'), sent_to) {
        (true, Some(u)) => format!(
            "{}://{}{location}",
            u.scheme_str().unwrap_or("http"),
            u.authority().map(|a| a.as_str()).unwrap_or_default()
        ),
        _ => location.to_string(),
    }
}

/// An acknowledged request's headers with its delivery id (header `idh`)
/// replaced by `new_id`: a redelivery under a fresh id, for schemes that
/// do not sign the id.
pub(super) fn with_fresh_id(
    headers: &[(String, String)],
    idh: &str,
    new_id: &str,
) -> Vec<(String, String)> {
    headers
        .iter()
        .map(|(k, v)| {
            if k.eq_ignore_ascii_case(idh) {
                (k.clone(), new_id.to_string())
            } else {
                (k.clone(), v.clone())
            }
        })
        .collect()
}

/// `headers` plus the front's request ticket.
pub(super) fn with_ticket(headers: &[(String, String)], ticket: u64) -> Vec<(String, String)> {
    let mut h = headers.to_vec();
    h.push((REQUEST_HEADER.to_string(), ticket.to_string()));
    h
}

/// The full header list of one request as `profile` sends it: content
/// type, delivery id and event type, then the scheme's `signed` headers.
pub fn request_headers(
    profile: &Profile,
    body: &crate::delivery::Body,
    id: &str,
    attempt: u32,
    signed: &[(String, String)],
) -> Vec<(String, String)> {
    let p = profile;
    let handshake = p.handshake.as_ref().filter(|_| body.test);
    let content_type = match handshake {
        Some(_) => "application/json",
        None => p.content_type(),
    };
    let mut h = vec![("Content-Type".to_string(), content_type.to_string())];
    for (k, v) in &p.headers {
        // A handshake's own headers stand in for an event's.
        let v = handshake.and_then(|hs| hs.headers.get(k)).unwrap_or(v);
        h.push((k.clone(), v.clone()));
    }
    if let Some(idh) = p.delivery_id_header() {
        if !signed.iter().any(|(k, _)| k.eq_ignore_ascii_case(idh)) {
            h.push((idh.to_string(), id.to_string()));
        }
    }
    if let Some(ev) = &p.event_header {
        h.push((ev.clone(), envelope::event_type(p.body, body).to_string()));
    }
    h.extend(envelope::extra_headers(p.body, body, attempt));
    if let Identity::Header(name) = &p.semantics.identity {
        if !h.iter().any(|(k, _)| k.eq_ignore_ascii_case(name)) {
            h.push((name.clone(), envelope::event_id(p.body, body)));
        }
    }
    h.extend(signed.iter().cloned());
    h
}

/// One delivery as the profile's provider sends it, outside a plan (the
/// preflight): its delivery id, body bytes and the history key (the
/// profile's event identity) for a body planned as `body` under `id`.
pub fn provider_request(
    profile: &Profile,
    body: &crate::delivery::Body,
    id: &str,
) -> (String, Vec<u8>, String) {
    let d = provider_delivery(profile, body, id, None);
    (d.id, d.bytes, d.key)
}

/// One delivery as the profile's provider sends it, and as the history
/// records it: what [`provider_delivery`] gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderDelivery {
    /// The delivery id the provider puts in its id header.
    pub id: String,
    /// The body bytes, as the provider writes them.
    pub bytes: Vec<u8>,
    /// The history's key: the profile's event identity.
    pub key: String,
    /// The history's job: the object the update is about, when the
    /// delivery was planned with a job.
    pub job: Option<String>,
}

/// The delivery planned as `body` under `id` (with job `job`) as the
/// profile's provider sends it, outside a plan (the preflight, the bench):
/// the same envelope, kind of id and history identity as a run's
/// deliveries.
pub fn provider_delivery(
    profile: &Profile,
    body: &crate::delivery::Body,
    id: &str,
    job: Option<String>,
) -> ProviderDelivery {
    let shape = profile.body;
    let (id, bytes) = if shape == BodyShape::Answerline && profile.body_template.is_none() {
        (id.to_string(), serde_json::to_vec(body).unwrap_or_default())
    } else {
        (
            envelope::delivery_id(shape, id),
            profile.render(body, false),
        )
    };
    let (key, job) = identity_of(profile, body, &bytes, &id, job);
    ProviderDelivery {
        id,
        bytes,
        key,
        job,
    }
}

/// The history's `key` and `job` of a delivery with this body (as planned
/// and as sent) under delivery id `id`: the profile's event identity and
/// the object its update is about (answerline: the task id and the job key).
pub(super) fn identity_of(
    p: &Profile,
    body: &crate::delivery::Body,
    bytes: &[u8],
    id: &str,
    job: Option<String>,
) -> (String, Option<String>) {
    let own_body = p.body != BodyShape::Answerline || p.body_template.is_some();
    if !own_body && p.semantics == Semantics::answerline() {
        return (body.task.id.clone(), job);
    }
    let key = match &p.semantics.identity {
        Identity::TaskId => body.task.id.clone(),
        Identity::DeliveryId => id.to_string(),
        Identity::Header(_) => envelope::event_id(p.body, body),
        Identity::Body(pointer) => crate::profile::pointer_text(bytes, pointer)
            .unwrap_or_else(|| envelope::event_id(p.body, body)),
    };
    let job = match &p.semantics.object {
        _ if job.is_none() => None,
        Some(pointer) if own_body => crate::profile::pointer_text(bytes, pointer),
        _ => job,
    };
    (key, job)
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;
    use crate::delivery::{task_body, TaskStatus};
    use crate::history::Intent;

    fn profile(name: &str) -> Profile {
        Profile::builtin(name).expect("a built-in profile")
    }

    fn delivery() -> PlannedDelivery {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let body = task_body(
            &mut rng,
            Some("job-1".into()),
            TaskStatus::Completed,
            "2026-12-01T00:00:00Z".into(),
        );
        let bytes = serde_json::to_vec(&body).unwrap();
        let mut d = PlannedDelivery::plain(
            0,
            "whd_0001".into(),
            "acct_a",
            body,
            bytes,
            Intent::Genuine,
            false,
            false,
        );
        d.redeliveries = vec![Redelivery::FreshId("whd_0002".into())];
        d
    }

    #[test]
    fn answerline_deliveries_go_out_as_planned_and_others_in_their_providers_envelope() {
        let d = delivery();
        assert!(matches!(
            localize(&profile("answerline"), &d),
            Cow::Borrowed(_)
        ));
        let github = localize(&profile("github"), &d);
        assert_ne!(github.bytes, d.bytes, "GitHub writes its own event body");
        assert_ne!(github.id, d.id, "GitHub's delivery ids are GUIDs");
        let Redelivery::FreshId(fresh) = &github.redeliveries[0] else {
            panic!("a fresh-id redelivery stays one");
        };
        assert_ne!(fresh, "whd_0002", "a fresh id is the provider's kind too");
        assert_eq!(github.body, d.body, "what the event says is unchanged");
    }

    #[test]
    fn only_forgeries_the_providers_own_verifier_refuses_are_sent() {
        // Stripe's library accepts a future timestamp; answerline refuses it.
        let why = refusal(&profile("stripe"), Forgery::FutureTimestamp).expect("skipped");
        assert!(why.contains("profile stripe"), "{why}");
        assert_eq!(
            refusal(&profile("answerline"), Forgery::FutureTimestamp),
            None
        );
        // GitHub signs no timestamp: nothing can be refused by age.
        for f in [Forgery::StaleTimestamp, Forgery::ExpiredReplay] {
            let why = refusal(&profile("github"), f).expect("skipped");
            assert!(why.starts_with(f.as_str()), "{why}");
            assert_eq!(refusal(&profile("answerline"), f), None);
        }
    }

    #[test]
    fn a_relative_location_is_resolved_against_the_url_sent_to() {
        let uri: http::Uri = "https://hooks.example.test:8443/webhooks/acct_a"
            .parse()
            .unwrap();
        assert_eq!(
            resolve_location("/v2/hooks", Some(&uri)),
            "https://hooks.example.test:8443/v2/hooks"
        );
        assert_eq!(
            resolve_location("http://elsewhere.test/x", Some(&uri)),
            "http://elsewhere.test/x"
        );
        assert_eq!(resolve_location("/v2/hooks", None), "/v2/hooks");
    }

    #[test]
    fn a_fresh_id_replaces_only_the_delivery_id_header_whatever_its_case() {
        let headers = vec![
            ("webhook-id".to_string(), "old".to_string()),
            ("Webhook-Signature".to_string(), "v1,abc".to_string()),
        ];
        let h = with_fresh_id(&headers, "Webhook-Id", "new");
        assert_eq!(h[0], ("webhook-id".to_string(), "new".to_string()));
        assert_eq!(h[1], headers[1]);
    }

    #[test]
    fn a_delivery_id_the_scheme_signs_is_not_sent_twice_and_the_ticket_comes_last() {
        let p = profile("standard-webhooks");
        let d = delivery();
        let idh = p.delivery_id_header().expect("an id header").to_string();
        let signed = vec![(idh.clone(), "msg_1".to_string())];
        let h = request_headers(&p, &d.body, "msg_1", 1, &signed);
        let ids = h
            .iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case(&idh))
            .count();
        assert_eq!(ids, 1, "{h:?}");
        assert_eq!(h[0].0, "Content-Type");
        let t = with_ticket(&h, 42);
        assert_eq!(
            t.last().unwrap(),
            &(REQUEST_HEADER.to_string(), "42".to_string())
        );
    }

    #[test]
    fn the_history_key_is_the_profiles_event_identity() {
        let d = delivery();
        let (key, job) = identity_of(&profile("answerline"), &d.body, &d.bytes, &d.id, d.job());
        assert_eq!(key, d.body.task.id, "answerline: the task id");
        assert_eq!(job, d.job());
        let (id, bytes, key) = provider_request(&profile("generic-hex"), &d.body, &d.id);
        assert!(!bytes.is_empty());
        assert_eq!(key, id, "generic-hex deduplicates on the delivery id");
    }
}
