//! What every part of the receiver shares: the [`App`] handed to each
//! request handler and to the worker, the shutdown signal, and the limits
//! a client gets (head and body timeouts, connections at once).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{watch, Notify};

use crate::config::Config;
use crate::store::Store;

/// How long a client has for each request head (and, on a new connection,
/// for its first byte).
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a client has for a request body once its head arrived.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// Webhook connections served at once; more are answered 503 and closed.
pub const MAX_WEBHOOK_CONNECTIONS: usize = 512;

/// Admin connections served at once; more are answered 503 and closed.
pub const MAX_ADMIN_CONNECTIONS: usize = 64;

/// What every request handler shares.
pub struct App {
    /// The configuration.
    pub config: Config,
    /// The store.
    pub store: Arc<dyn Store>,
    /// Wakes the worker after an insert.
    pub wake: Arc<Notify>,
}

/// Resolves once `rx` holds `true` (or its sender is gone).
pub async fn stopped(rx: &mut watch::Receiver<bool>) {
    let _ = rx.wait_for(|v| *v).await;
}
