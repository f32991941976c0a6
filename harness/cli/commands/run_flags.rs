//! How each run goes, beside the target: the flags `run`, `shrink` and
//! `explore` share (time scale, concurrency, drain, settle, and the
//! built-in receiver's defect and database), checked and turned into the
//! target and the run options one way.

use std::path::PathBuf;
use std::time::Duration;

use hookstorm::run::RunOptions;
use hookstorm::units::HumanDuration;

use super::resolve::{build_target, Built, DEFAULT_TIME_SCALE};
use super::target_flags::TargetFlags;

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
    /// Built-in receiver only: switch on one deliberate bug (see `hookstorm-receiver --help`).
    #[arg(long)]
    pub defect: Option<String>,
    /// Built-in receiver only: its database (default: SQLite in a temp folder).
    #[arg(long)]
    pub receiver_db: Option<String>,
}

impl RunFlags {
    /// What is wrong with these flags beside `target`, as a usage error's
    /// words.
    pub fn problem(&self, target: &TargetFlags) -> Option<String> {
        if let Some(t) = self.time_scale {
            if let Err(e) = hookstorm::scenario::check_time_scale(t) {
                return Some(format!("--time-scale {e}"));
            }
        }
        if target.given() {
            for (flag, set) in [
                ("--defect", self.defect.is_some()),
                ("--receiver-db", self.receiver_db.is_some()),
            ] {
                if set {
                    return Some(format!(
                        "{flag} configures the built-in reference receiver, which --target/--url replace (hint: drop {flag}, or drop --target and --url to test the built-in receiver)"
                    ));
                }
            }
        }
        None
    }

    /// The target `target` names, or the built-in receiver these flags
    /// configure; its reproduce command starts with `command`.
    pub fn build_target(
        &self,
        target: &TargetFlags,
        command: &str,
    ) -> anyhow::Result<Result<Built, i32>> {
        build_target(
            target,
            self.defect.as_deref(),
            self.receiver_db.as_deref(),
            command,
        )
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
