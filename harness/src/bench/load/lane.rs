//! One connection of a worker and the exchange on it: the request written,
//! the answer's head timed, its body read past, within the profile's
//! timeout and the phase's hard end, past which a request is cut and
//! recorded as unanswered, not waited for.

use std::net::SocketAddr;
use std::pin::Pin;
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::wire::Wire;
use crate::history::Failure;
use crate::profile::Profile;
use crate::sender::exchange::Answer;

/// The error text of a request cut at the end of a phase.
pub const CUT_AT_END: &str = "no answer before the bench ended";

/// At most this much of a refusal's body is kept.
pub const KEPT_BODY: usize = 512;

/// A connection of a worker and its alarm. One timer per connection, armed
/// at a request's time limit only when it goes off before that limit, in
/// place of a timer set and cancelled for every request: limits never move
/// back, so an alarm set for an earlier request can only ring early.
pub(super) struct Lane {
    conn: Option<Wire>,
    alarm: Pin<Box<tokio::time::Sleep>>,
}

impl Lane {
    pub(super) fn new() -> Lane {
        Lane {
            conn: None,
            alarm: Box::pin(tokio::time::sleep_until(Instant::now().into())),
        }
    }
}

/// Sends one copy (`request`, encoded) on the lane's connection,
/// connecting first when there is none or the peer closed it while idle;
/// gives up at the profile's `timeout` or at `hard_end`, whichever comes
/// first. The latency is taken when the answer head is in; the body is
/// then read past (an error there keeps the status, and drops the
/// connection), or, with `keep` and a status that is no success under
/// that profile, read into the answer (at most [`KEPT_BODY`] bytes): what
/// a receiver said when it refused a delivery.
pub(super) async fn exchange(
    lane: &mut Lane,
    addr: SocketAddr,
    request: &[u8],
    timeout: Duration,
    sent: Instant,
    hard_end: Instant,
    keep: Option<&Profile>,
) -> Answer {
    let cut = hard_end.saturating_duration_since(sent) < timeout;
    let timeout = timeout.min(hard_end.saturating_duration_since(sent));
    let limit = sent + timeout;
    let ms = |s: Instant| s.elapsed().as_secs_f64() * 1000.0;
    let Lane { conn, alarm } = lane;
    let fut = async {
        if conn.as_mut().is_none_or(|c| c.stale()) {
            *conn = Some(Box::pin(Wire::connect(addr)).await?);
        }
        let c = conn.as_mut().expect("connected above");
        let head = c.send(request).await?;
        let latency = ms(sent);
        let mut body = Vec::new();
        let reusable = match keep {
            Some(p) if !p.is_success(head.status) => {
                c.finish_into(&head, &mut body, KEPT_BODY).await
            }
            _ => c.finish(&head).await,
        };
        if !reusable.unwrap_or(false) {
            *conn = None;
        }
        Ok::<_, Failure>((head.status, latency, body))
    };
    let answered = async {
        tokio::pin!(fut);
        loop {
            tokio::select! {
                biased;
                out = &mut fut => return Ok(out),
                () = alarm.as_mut() => {
                    if Instant::now() >= limit {
                        return Err(());
                    }
                    alarm.as_mut().reset(limit.into());
                }
            }
        }
    };
    match answered.await {
        Ok(Ok((status, latency, body))) => Answer {
            location: None,
            body: Bytes::from(body),
            status: Some(status),
            latency_ms: latency,
            failure: None,
        },
        Ok(Err(failure)) => {
            *conn = None;
            Answer::failed(failure, ms(sent))
        }
        Err(_) => {
            *conn = None;
            let failure = if cut {
                Failure::other(CUT_AT_END)
            } else {
                Failure::timeout(timeout)
            };
            Answer::failed(failure, ms(sent))
        }
    }
}
