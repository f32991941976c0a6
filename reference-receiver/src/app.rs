//! What every part of the receiver shares: the [`App`] handed to each
//! request handler and to the worker, the shutdown signal, and the limits
//! a client gets (head and body timeouts, connections at once).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{watch, Notify};

use crate::config::Config;
use crate::store::{NewDelivery, Store};

/// How long a client has for each request head (and, on a new connection,
/// for its first byte).
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a client has for a request body once its head arrived.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// Webhook connections served at once; more are answered 503 and closed.
pub const MAX_WEBHOOK_CONNECTIONS: usize = 512;

/// Admin connections served at once; more are answered 503 and closed.
pub const MAX_ADMIN_CONNECTIONS: usize = 64;

/// The share of a listener's connections one client (one peer address)
/// may hold, in quarters: three quarters of the slots, so one client that
/// floods or keeps reconnecting gets 503 while the others are still
/// served (384 of the 512 webhook slots, 48 of the 64 admin ones).
pub const CLIENT_QUARTERS: usize = 3;

/// The most connections one client may hold of a listener's `limit`.
pub fn per_client(limit: usize) -> usize {
    (limit * CLIENT_QUARTERS / 4).max(1)
}

/// What every request handler shares.
pub struct App {
    /// The configuration.
    pub config: Config,
    /// The store.
    pub store: Arc<dyn Store>,
    /// Wakes the worker after an insert.
    pub wake: Arc<Notify>,
    /// Deliveries kept in memory while the database is down (only the
    /// `requeues-outage-buffer` defect fills it).
    pub outage: OutageBuffer,
}

/// Deliveries acknowledged while the database was down, waiting to be
/// written.
#[derive(Debug, Default)]
pub struct OutageBuffer(Mutex<Vec<NewDelivery>>);

impl OutageBuffer {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<NewDelivery>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Keeps `d` at the end.
    pub fn push(&self, d: NewDelivery) {
        self.lock().push(d);
    }

    /// Everything kept, oldest first, leaving it empty.
    pub fn take(&self) -> Vec<NewDelivery> {
        std::mem::take(&mut *self.lock())
    }

    /// Puts `ds` back before what was kept since they were taken.
    pub fn put_back(&self, ds: impl IntoIterator<Item = NewDelivery>) {
        let mut kept = self.lock();
        let later = std::mem::take(&mut *kept);
        kept.extend(ds);
        kept.extend(later);
    }
}

/// Resolves once `rx` holds `true` (or its sender is gone).
pub async fn stopped(rx: &mut watch::Receiver<bool>) {
    let _ = rx.wait_for(|v| *v).await;
}
