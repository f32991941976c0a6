//! The live progress line: rate, p99 and errors once a second, on stderr,
//! only when stderr is a terminal (so logs and CI output stay clean),
//! redrawn with a carriage return and padding, never an escape code.
//!
//! And, terminal or not, the refusal warning: once a phase has refused
//! more than [`WARN_REFUSED`] of its deliveries (at least
//! [`WARN_AFTER`] sent), one line on stderr says so, with the first
//! refusal's status and body, while the bench runs: a receiver that
//! refuses what the bench sends is found in a second, not at the end.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::load::{Live, Refusal};

/// The share of refused deliveries past which the bench warns while it runs.
pub const WARN_REFUSED: f64 = 0.05;

/// Deliveries a phase sends before its share of refusals is judged.
pub const WARN_AFTER: u64 = 20;

/// The refusal warning, when `refused` of `sent` deliveries is past
/// [`WARN_REFUSED`] (and `sent` at least [`WARN_AFTER`]).
pub fn refusal_warning(sent: u64, refused: u64, first: Option<&Refusal>) -> Option<String> {
    if sent < WARN_AFTER || refused as f64 <= WARN_REFUSED * sent as f64 {
        return None;
    }
    let first = first.map_or_else(String::new, |r| {
        let body: String = r.body.trim().chars().take(160).collect();
        format!(
            "; the first was answered {}{}",
            r.status,
            if body.is_empty() {
                " with an empty body".to_string()
            } else {
                format!(" {body:?}")
            }
        )
    });
    Some(format!(
        "warning: the receiver refused {refused} of {sent} deliveries so far ({:.0}%){first} \
         (hint: do the profile and secrets match the receiver's? `hookstorm run` on the same target says more)",
        refused as f64 * 100.0 / sent as f64
    ))
}

/// A ticking progress line; attach each phase's live view as it starts.
pub struct Progress {
    live: Arc<Mutex<Option<Live>>>,
    task: Option<tokio::task::JoinHandle<()>>,
    /// The progress line is drawn.
    line: bool,
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
    /// Starts ticking: the progress line when `enabled`, the refusal
    /// warning always.
    pub fn start(enabled: bool) -> Progress {
        let live: Arc<Mutex<Option<Live>>> = Arc::new(Mutex::new(None));
        let task = {
            let live = live.clone();
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(Duration::from_secs(1));
                tick.tick().await;
                let mut last = Instant::now();
                let mut errors = 0u64;
                // The phase (by its start) the warning was given for.
                let mut warned: Option<Instant> = None;
                loop {
                    tick.tick().await;
                    let view = live.lock().unwrap_or_else(|p| p.into_inner()).clone();
                    let Some(view) = view else { continue };
                    if warned != Some(view.start) {
                        let (sent, refused) = view.refused();
                        if let Some(w) = refusal_warning(sent, refused, view.refusals.first()) {
                            warned = Some(view.start);
                            let mut err = std::io::stderr().lock();
                            let pad = if enabled { "\r" } else { "" };
                            let _ = writeln!(err, "{pad}{w:<LINE_WIDTH$}");
                        }
                    }
                    if !enabled {
                        continue;
                    }
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
        };
        Progress {
            live,
            task: Some(task),
            line: enabled,
        }
    }

    /// Shows this phase from now on.
    pub fn attach(&self, live: Live) {
        *self.live.lock().unwrap_or_else(|p| p.into_inner()) = Some(live);
    }

    /// Stops ticking and ends the line.
    pub fn stop(mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
            if self.line {
                eprintln!();
            }
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

    #[test]
    fn a_bench_warns_once_its_refusals_pass_the_share() {
        let first = Refusal {
            status: 400,
            body: "{\"detail\":\"bad envelope\"}\n".into(),
            delivery: "msg_1".into(),
            key: "msg_1".into(),
            account: "acct_a".into(),
        };
        // Too few sent, or few enough refused: no warning.
        assert_eq!(refusal_warning(WARN_AFTER - 1, WARN_AFTER - 1, None), None);
        assert_eq!(refusal_warning(1000, 50, Some(&first)), None);
        let w = refusal_warning(1000, 51, Some(&first)).expect("a warning");
        assert!(w.contains("refused 51 of 1000 deliveries"), "{w}");
        assert!(
            w.contains(r#"answered 400 "{\"detail\":\"bad envelope\"}""#),
            "{w}"
        );
        let w = refusal_warning(40, 40, None).expect("a warning");
        assert!(w.contains("(100%)") && !w.contains("first"), "{w}");
    }
}
