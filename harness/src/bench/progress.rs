//! The live progress line: rate, p99 and errors once a second, on stderr,
//! only when stderr is a terminal (so logs and CI output stay clean),
//! redrawn with a carriage return and padding, never an escape code.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::load::Live;

/// A ticking progress line; attach each phase's live view as it starts.
pub struct Progress {
    live: Arc<Mutex<Option<Live>>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

/// The progress line is padded to this width, so a shorter line fully
/// covers the one before it.
const LINE_WIDTH: usize = 72;

/// Renders one progress line.
pub fn line(elapsed: Duration, warmup: bool, rate: f64, p99_ms: f64, errors: u64) -> String {
    format!(
        "  {:>5.1}s{}  {:>9.0} req/s  p99 {:>8.2} ms  errors {}",
        elapsed.as_secs_f64(),
        if warmup { " (warmup)" } else { "" },
        rate,
        p99_ms,
        errors
    )
}

impl Progress {
    /// Starts ticking when `enabled`; otherwise does nothing.
    pub fn start(enabled: bool) -> Progress {
        let live: Arc<Mutex<Option<Live>>> = Arc::new(Mutex::new(None));
        let task = enabled.then(|| {
            let live = live.clone();
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(Duration::from_secs(1));
                tick.tick().await;
                let mut last = Instant::now();
                let mut errors = 0u64;
                loop {
                    tick.tick().await;
                    let view = live.lock().unwrap_or_else(|p| p.into_inner()).clone();
                    let Some(view) = view else { continue };
                    let (n, e, p99) = view.take_recent();
                    errors += e;
                    let now = Instant::now();
                    let secs = now.duration_since(last).as_secs_f64().max(1e-3);
                    last = now;
                    let text = line(
                        now.saturating_duration_since(view.start),
                        now < view.measure_from,
                        n as f64 / secs,
                        p99,
                        errors,
                    );
                    let mut err = std::io::stderr().lock();
                    // Padded instead of an erase-line escape: no escape
                    // codes on the terminal (NO_COLOR, plain consoles).
                    let _ = write!(err, "\r{text:<LINE_WIDTH$}");
                    let _ = err.flush();
                }
            })
        });
        Progress { live, task }
    }

    /// Shows this phase from now on.
    pub fn attach(&self, live: Live) {
        *self.live.lock().unwrap_or_else(|p| p.into_inner()) = Some(live);
    }

    /// Stops ticking and ends the line.
    pub fn stop(mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
            eprintln!();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_line_shows_rate_p99_and_errors() {
        let l = line(Duration::from_millis(2500), false, 4980.4, 3.25, 7);
        assert!(l.contains("4980 req/s"), "{l}");
        assert!(l.contains("p99     3.25 ms"), "{l}");
        assert!(l.contains("errors 7"), "{l}");
        assert!(line(Duration::ZERO, true, 0.0, 0.0, 0).contains("warmup"));
    }
}
