//! A stop request that long operations (`run`, `bench`) watch, so Ctrl-C
//! or SIGTERM ends them in order: what finished is reported, what was
//! started is stopped, temporary folders are removed.
//!
//! The signal handlers are installed when [`on_signals`] is called (before
//! anything is started), so a signal that comes early is not lost and
//! never falls back to the default action, which would leave the
//! receiver's processes behind.

use tokio::sync::watch;

/// Watches for a stop request; cheap to clone, usable from any runtime.
#[derive(Debug, Clone)]
pub struct Stop {
    rx: watch::Receiver<bool>,
}

/// Requests a stop.
#[derive(Debug)]
pub struct StopHandle {
    tx: watch::Sender<bool>,
}

impl StopHandle {
    /// Asks every watcher to stop.
    pub fn stop(&self) {
        self.tx.send_replace(true);
    }
}

/// A handle and the [`Stop`] it controls.
pub fn channel() -> (StopHandle, Stop) {
    let (tx, rx) = watch::channel(false);
    (StopHandle { tx }, Stop { rx })
}

impl Stop {
    /// A stop that is never requested.
    pub fn never() -> Stop {
        let (handle, stop) = channel();
        // The sender stays alive for the life of the program: `wait` pends forever.
        std::mem::forget(handle);
        stop
    }

    /// Whether a stop was requested.
    pub fn requested(&self) -> bool {
        *self.rx.borrow()
    }

    /// Resolves once a stop is requested (never, if nobody can request one).
    pub async fn wait(&self) {
        let mut rx = self.rx.clone();
        if rx.wait_for(|v| *v).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// Installs handlers for SIGINT and SIGTERM now and returns a [`Stop`]
/// that the first of them requests. A second signal means "now": every
/// process group the harness started is killed and the process exits with
/// [`crate::exit::INTERRUPTED`] without waiting for the reports. Must be
/// called inside a tokio runtime.
/// (Without Unix signals, Ctrl-C alone.)
pub fn on_signals() -> std::io::Result<Stop> {
    #[cfg(unix)]
    let (mut int, mut term) = {
        use tokio::signal::unix::{signal, SignalKind};
        (
            signal(SignalKind::interrupt())?,
            signal(SignalKind::terminate())?,
        )
    };
    let (handle, stop) = channel();
    tokio::spawn(async move {
        for n in 0..2 {
            #[cfg(unix)]
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
            #[cfg(not(unix))]
            let _ = tokio::signal::ctrl_c().await;
            if n == 0 {
                handle.stop();
            }
        }
        crate::lifecycle::kill_all();
        std::process::exit(crate::exit::INTERRUPTED);
    });
    Ok(stop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_requested_stop_wakes_every_watcher() {
        let (handle, stop) = channel();
        let other = stop.clone();
        assert!(!stop.requested());
        let waiter = tokio::spawn(async move { other.wait().await });
        handle.stop();
        tokio::time::timeout(std::time::Duration::from_secs(5), waiter)
            .await
            .expect("woken")
            .expect("joined");
        assert!(stop.requested());
    }

    #[tokio::test]
    async fn never_does_not_resolve() {
        let stop = Stop::never();
        let r = tokio::time::timeout(std::time::Duration::from_millis(50), stop.wait()).await;
        assert!(r.is_err());
        assert!(!stop.requested());
    }
}
