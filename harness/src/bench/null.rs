//! The null receiver: verifies the signature and answers 204, storing
//! nothing.
//!
//! It is the fixed point for raw sender throughput: `hookstorm bench`,
//! `oha` and `wrk` all hit the same server, so their requests per second
//! compare the senders and not the receivers. A bad signature gets 401, so
//! a sender that signs wrongly cannot look fast.

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

use crate::profile::signature::Secret;
use crate::profile::Profile;

/// Largest body the null receiver reads.
pub const MAX_BODY: usize = 1 << 20;

struct Verifier {
    profile: Profile,
    secrets: Vec<Secret>,
}

async fn handle(v: Arc<Verifier>, req: Request<Incoming>) -> Response<Full<Bytes>> {
    let (parts, body) = req.into_parts();
    let status = match Limited::new(body, MAX_BODY).collect().await {
        Err(_) => StatusCode::PAYLOAD_TOO_LARGE,
        Ok(b) => {
            let body = b.to_bytes();
            // The URL as the sender addressed it: some schemes sign it.
            let url = crate::profile::signature::request_url(
                &parts.headers,
                parts.uri.path_and_query().map_or("/", |p| p.as_str()),
            );
            match v.profile.scheme.verify_request(
                &v.secrets,
                &parts.headers,
                &url,
                &body,
                chrono::Utc::now().timestamp(),
                v.profile.tolerance_secs(),
            ) {
                Ok(()) => StatusCode::NO_CONTENT,
                Err(_) => StatusCode::UNAUTHORIZED,
            }
        }
    };
    let mut resp = Response::new(Full::new(Bytes::new()));
    *resp.status_mut() = status;
    resp
}

/// Serves on `listener` until `shutdown` resolves; any of `secrets` verifies
/// (for every account: the path is ignored).
pub async fn serve(
    listener: TcpListener,
    profile: Profile,
    secrets: Vec<Secret>,
    shutdown: impl Future<Output = ()> + Send,
) {
    let v = Arc::new(Verifier { profile, secrets });
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else {
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                    continue;
                };
                let _ = stream.set_nodelay(true);
                let v = v.clone();
                tokio::spawn(async move {
                    let svc = service_fn(move |req| {
                        let v = v.clone();
                        async move { Ok::<_, Infallible>(handle(v, req).await) }
                    });
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), svc)
                        .await;
                });
            }
            _ = &mut shutdown => break,
        }
    }
}
