//! The worker: drains the inbox in batches, in-process or as its own process.
//!
//! It polls every `worker_poll` (20 ms by default) and is woken at once by
//! the handler after an insert, so an idle receiver costs a cheap query per
//! poll and a busy one processes rows within milliseconds of their commit.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{watch, Notify};

use crate::store::{Store, WorkerRules};

/// Runs batches until `shutdown` turns true.
pub async fn run_worker(
    store: Arc<dyn Store>,
    rules: WorkerRules,
    poll: Duration,
    wake: Arc<Notify>,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut last_error: Option<String> = None;
    loop {
        if *shutdown.borrow() {
            break;
        }
        match store.process_batch(rules.clone()).await {
            Ok(o) => {
                last_error = None;
                if o.claimed > 0 && !o.rolled_back {
                    // More may be waiting: go again without sleeping.
                    continue;
                }
            }
            Err(e) => {
                let text = e.to_string();
                if last_error.as_deref() != Some(text.as_str()) {
                    eprintln!("worker: {text}");
                    last_error = Some(text);
                }
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(poll) => {}
            _ = wake.notified() => {}
            _ = crate::app::stopped(&mut shutdown) => break,
        }
    }
}
