//! Re-opening processed rows, the way two defects do: a duplicate that
//! re-enqueues its task (`requeues-duplicates`), and the outage buffer's
//! write-back that re-enqueues every delivery whose row already exists
//! (`requeues-outage-buffer`). Either way the worker processes the row,
//! and runs its effect, a second time.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::app::{stopped, App};
use crate::store::Inserted;

/// How long a requeue waits for its row to be processed before it re-opens it.
pub const REQUEUE_WAIT: Duration = Duration::from_secs(5);

/// How often the outage buffer is tried against the database.
pub const FLUSH_EVERY: Duration = Duration::from_millis(50);

/// Re-opens the row of (`account`, `task_id`) once the worker has processed
/// it, so the worker processes it again; gives up after [`REQUEUE_WAIT`].
pub async fn when_processed(app: Arc<App>, account: String, task_id: String) {
    let deadline = tokio::time::Instant::now() + REQUEUE_WAIT;
    while tokio::time::Instant::now() < deadline {
        if let Ok(true) = app.store.requeue(account.clone(), task_id.clone()).await {
            app.wake.notify_one();
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Writes the outage buffer back whenever the database takes it, until
/// `stop`: a delivery new to the inbox is inserted as usual; one whose row
/// is already there is taken for a delivery the worker lost during the
/// outage and re-enqueued (the defect). What the database refuses stays
/// in the buffer, in order, for the next try.
pub async fn flush_outage_buffer(app: Arc<App>, mut stop: watch::Receiver<bool>) {
    loop {
        tokio::select! {
            _ = tokio::time::sleep(FLUSH_EVERY) => {}
            _ = stopped(&mut stop) => return,
        }
        let mut pending = app.outage.take().into_iter();
        while let Some(d) = pending.next() {
            match app.store.insert(d.clone()).await {
                Ok(Inserted::New) => app.wake.notify_one(),
                Ok(Inserted::Duplicate) => {
                    tokio::spawn(when_processed(app.clone(), d.account, d.task_id));
                }
                Err(_) => {
                    app.outage.put_back(std::iter::once(d).chain(pending));
                    break;
                }
            }
        }
    }
}
