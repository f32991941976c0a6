//! How each run goes, beside the target: the flags `run`, `shrink` and
//! `explore` share (time scale, concurrency, drain, settle), checked and
//! turned into the run options one way. The built-in receiver's flags are
//! [`super::resolve::BuiltinFlags`].

use std::path::PathBuf;
use std::time::Duration;

use hookstorm::run::RunOptions;
use hookstorm::text::units::HumanDuration;

use super::resolve::DEFAULT_TIME_SCALE;

/// The flags of every command that runs scenarios.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct RunFlags {
    /// Divide every wait by this (overrides the scenarios' own scales and
    /// the profile's factor). Default: each scenario's own scale, times the
    /// profile's retry window over the answerline's (stripe x77).
    #[arg(long, env = "HOOKSTORM_TIME_SCALE")]
    pub time_scale: Option<f64>,
    /// Concurrent requests at most.
    #[arg(long, default_value_t = 64)]
    pub concurrency: usize,
    /// How long to wait at most, after a scenario, for the receiver's state
    /// to settle (every acknowledged key stored, every row processed or
    /// marked failed).
    #[arg(long, default_value = "30s")]
    pub drain: HumanDuration,
    /// Read a state that still misses acknowledged keys once it has not
    /// changed for this long (raise it for receivers whose queue or worker
    /// pauses longer between writes).
    #[arg(long, default_value_t = HumanDuration(hookstorm::state::probe::DEFAULT_SETTLE))]
    pub settle: HumanDuration,
}

impl RunFlags {
    /// What is wrong with these flags, as a usage error's words.
    pub fn problem(&self) -> Option<String> {
        let t = self.time_scale?;
        hookstorm::scenario::check_time_scale(t)
            .err()
            .map(|e| format!("--time-scale {e}"))
    }

    /// The options of a run with these flags: `seed`, reports under
    /// `out_dir`, `reproduce` as the command; lenient, no preflight, no stop.
    pub fn options(&self, seed: u64, out_dir: PathBuf, reproduce: String) -> RunOptions {
        RunOptions {
            seed,
            time_scale: self.time_scale,
            default_time_scale: DEFAULT_TIME_SCALE,
            strict: false,
            out_dir,
            concurrency: self.concurrency.max(1),
            drain: self.drain.0.max(Duration::from_millis(100)),
            settle: self.settle.0.max(Duration::from_millis(100)),
            reproduce,
            preflight: false,
            max_fail: None,
            timeout: None,
            require_all: false,
        }
    }
}
