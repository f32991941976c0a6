//! Scenarios: one TOML file per way a provider can misbehave.
//!
//! A scenario names the invariants it checks, says what a passing receiver
//! does and what a failure usually means, and describes its workload and
//! faults as data. Everything random in it is drawn later from the run's
//! seed ([`crate::workload::plan`]), so a scenario file plus a seed is a
//! complete, repeatable description of what was sent. Files are parsed with
//! `deny_unknown_fields`, so a typo is an error naming file and line rather
//! than a silently ignored key. Each fault kind's spec and bounds live in
//! [`crate::fault_spec`]; this module composes them. A scenario may
//! instead list its deliveries one by one (`[[delivery]]`, the form
//! `hookstorm shrink` writes; see [`crate::scenario::explicit`]).

pub mod answer;
pub mod explicit;
mod names;
pub mod sender;
pub mod side;
pub mod write;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{read_toml, ConfigError};
use crate::fault_spec;
use crate::scenario::explicit::{DeliveryEntry, Explicit};
use crate::text::units::HumanDuration;

pub use crate::fault_spec::{
    CutDatabaseSpec, CutMode, CutVia, DropAckSpec, DuplicateMode, DuplicateSpec, FaultSpec,
    Forgery, FrontSpec, KillSignal, KillSpec, KillWorkerSpec, ReconcileSpec, RedeliverSpec,
    ReorderMode, ReorderSpec, Signing, TamperSpec,
};
use crate::invariant::InvariantId;
use names::key_line;
pub use names::{check_name, MAX_NAME};

/// A parsed, validated scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// Unique name (also the history's `scenario` field).
    pub name: String,
    /// What the scenario does.
    pub description: String,
    /// What a correct receiver does.
    pub expect: String,
    /// What a failure usually means and how receivers fix it.
    pub when_it_fails: String,
    /// The invariants checked (the file says `I1`..`I9`).
    pub check: BTreeSet<InvariantId>,
    /// Tags for selecting scenarios (`process`, `signatures`, `ordering`, …).
    pub tags: Vec<String>,
    /// Time scale for this scenario; `None` means the run's.
    pub time_scale: Option<f64>,
    /// How long the receiver may take to drain its inbox; `None` means the run's.
    pub drain: Option<Duration>,
    /// Accounts the workload is sent to (the `{account}` of the URL).
    pub accounts: Vec<String>,
    /// The deliveries to generate.
    pub workload: Workload,
    /// Faults applied to the delivery stream, in order.
    pub faults: Vec<FaultSpec>,
    /// The explicit form (`[[delivery]]` tables and a fixed seed), which
    /// replaces the workload and plan-time faults; see [`crate::scenario::explicit`].
    pub explicit: Option<Explicit>,
    /// The file it came from.
    pub path: PathBuf,
}

/// What to generate: every count here is turned into deliveries by
/// [`crate::workload::plan`] with the run's seed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Workload {
    /// Number of jobs (idempotency keys without suffix).
    pub jobs: usize,
    /// Tasks per job: 1 is the original, more add resubmissions `-r1`, `-r2`, ….
    pub tasks_per_job: usize,
    /// Share of tasks that end FAILED rather than COMPLETED (0..=1).
    pub failed_share: f64,
    /// Dashboard test deliveries (`"test": true`), each on a fresh task id.
    pub test_deliveries: usize,
    /// Poison events: signed, well formed, `createdAt` not a valid date.
    pub poison: usize,
    /// A sequenced workload (per-resource sequence numbers), if any.
    pub sequenced: Option<Sequenced>,
    /// Every genuine job body carries [`crate::profile::envelope::RAW_NOTE`]:
    /// JSON that no re-serialisation writes back byte for byte.
    pub raw_note: bool,
}

impl Default for Workload {
    fn default() -> Self {
        Workload {
            jobs: 10,
            tasks_per_job: 1,
            failed_share: 0.0,
            test_deliveries: 0,
            poison: 0,
            sequenced: None,
            raw_note: false,
        }
    }
}

/// Per-resource sequenced events, delivered shuffled and with gaps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sequenced {
    /// Number of resources.
    pub resources: usize,
    /// Events per resource.
    pub events: usize,
    /// Largest step between two sequence numbers (1 = no gaps).
    #[serde(default = "default_max_gap")]
    pub max_gap: u64,
}

fn default_max_gap() -> u64 {
    3
}

/// The file shape: like [`Scenario`] with optional parts.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScenarioFile {
    name: String,
    description: String,
    expect: String,
    when_it_fails: String,
    check: Vec<String>,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    time_scale: Option<f64>,
    #[serde(default)]
    drain: Option<HumanDuration>,
    #[serde(default)]
    accounts: Option<Vec<String>>,
    #[serde(default)]
    workload: Option<Workload>,
    #[serde(default, rename = "fault")]
    faults: Vec<FaultSpec>,
    #[serde(default)]
    seed: Option<explicit::PlanSeed>,
    #[serde(default, rename = "delivery")]
    deliveries: Option<Vec<DeliveryEntry>>,
}

impl Scenario {
    /// Reads and validates one scenario file; a sender scenario (tagged
    /// `sender`) is an error that says which command runs it.
    pub fn from_file(path: &Path) -> Result<Scenario, ConfigError> {
        if side::side_of(path)? == side::Side::Sender {
            return Err(ConfigError::invalid(
                path,
                "a sender scenario (tagged `sender`): `hookstorm sink` runs it, against a sender",
            ));
        }
        let file: ScenarioFile = read_toml(path)?;
        let accounts = file.accounts.unwrap_or_else(|| vec!["acct_a".into()]);
        let explicit = match (file.deliveries, file.seed) {
            (None, None) => None,
            (None, Some(_)) => {
                return Err(ConfigError::invalid(
                    path,
                    "seed is only for [[delivery]] scenarios (hint: a generative scenario takes its seed from --seed)",
                ))
            }
            (Some(entries), seed) => {
                if file.workload.is_some() {
                    return Err(ConfigError::invalid(
                        path,
                        "[workload] and [[delivery]] together: a scenario either generates its deliveries or lists them (hint: drop [workload])",
                    ));
                }
                if let Some(f) = file.faults.iter().find(|f| !explicit::is_run_time(f)) {
                    return Err(ConfigError::invalid(
                        path,
                        format!(
                            "fault {:?} with [[delivery]]: its effect is written into the deliveries (copies, redeliveries, drop_acks, hold_attempts, wave, forgery, signing); only run-time faults (front, redeliver, reconcile, kill, kill-worker, cut-database) may be listed",
                            f.name()
                        ),
                    ));
                }
                if entries.len() > MAX_DELIVERIES {
                    return Err(ConfigError::invalid(
                        path,
                        format!(
                            "{} [[delivery]] entries: at most {MAX_DELIVERIES}",
                            entries.len()
                        ),
                    ));
                }
                let deliveries = explicit::deliveries(&entries, &accounts)
                    .map_err(|m| ConfigError::invalid(path, m))?;
                Some(Explicit {
                    seed: seed.map(|s| s.0).unwrap_or(0),
                    deliveries,
                })
            }
        };
        let workload = match (&explicit, file.workload) {
            (Some(_), _) => Workload {
                jobs: 0,
                ..Workload::default()
            },
            (None, w) => w.unwrap_or_default(),
        };
        if let Err(message) = check_name(&file.name) {
            let line = key_line(path, "name");
            let message = match line {
                Some(l) => format!("line {l}: {message}"),
                None => message,
            };
            return Err(ConfigError::new(
                path,
                crate::error::ConfigErrorKind::Parse { line, message },
            ));
        }
        let check = parse_check(&file.check).map_err(|message| {
            let line = key_line(path, "check");
            let message = match line {
                Some(l) => format!("line {l}: {message}"),
                None => message,
            };
            ConfigError::new(path, crate::error::ConfigErrorKind::Parse { line, message })
        })?;
        let s = Scenario {
            name: file.name,
            description: file.description,
            expect: file.expect,
            when_it_fails: file.when_it_fails,
            check,
            tags: file.tags,
            time_scale: file.time_scale,
            drain: file.drain.map(|d| d.0),
            accounts,
            workload,
            faults: file.faults,
            explicit,
            path: path.to_path_buf(),
        };
        s.validate().map_err(|m| ConfigError::invalid(path, m))?;
        Ok(s)
    }

    /// Reads every receiver scenario (`*.toml` not tagged `sender`)
    /// directly in `dir`, sorted by scenario name; two files with one name
    /// are an error.
    pub fn load_dir(dir: &Path) -> Result<Vec<Scenario>, ConfigError> {
        let mut out = Vec::new();
        for path in side::files_of(dir, side::Side::Receiver)? {
            out.push(Scenario::from_file(&path)?);
        }
        out.sort_by(|a: &Scenario, b| a.name.cmp(&b.name));
        for pair in out.windows(2) {
            if pair[0].name == pair[1].name {
                return Err(ConfigError::invalid(
                    &pair[1].path,
                    format!(
                        "scenario name {:?} is also used by {} (hint: names must be unique)",
                        pair[1].name,
                        pair[0].path.display()
                    ),
                ));
            }
        }
        Ok(out)
    }

    /// How many accounts (and so secrets) the target must provide.
    pub fn needs_accounts(&self) -> usize {
        self.accounts.len()
    }

    /// Whether the scenario carries tag `tag`.
    pub fn has_tag(&self, tag: &str) -> bool {
        self.tags.iter().any(|t| t == tag)
    }

    /// Whether the scenario checks invariant `id`.
    pub fn checks(&self, id: InvariantId) -> bool {
        self.check.contains(&id)
    }

    /// The scenario's fault front, if it asks for one.
    pub fn front(&self) -> Option<&FrontSpec> {
        fault_spec::front(&self.faults)
    }

    /// The scenario's redelivery rules, if it sets any.
    pub fn redeliver(&self) -> Option<&RedeliverSpec> {
        fault_spec::redeliver(&self.faults)
    }

    /// The scenario's reconciliation step, if it has one.
    pub fn reconcile(&self) -> Option<&ReconcileSpec> {
        fault_spec::reconcile(&self.faults)
    }

    /// The forgeries any tamper fault adds.
    pub fn forgeries(&self) -> impl Iterator<Item = Forgery> + '_ {
        self.faults.iter().flat_map(|f| match f {
            FaultSpec::Tamper(t) => t.forgeries.clone(),
            _ => Vec::new(),
        })
    }

    fn validate(&self) -> Result<(), String> {
        check_name(&self.name)?;
        if self.check.is_empty() {
            return Err("check is empty (hint: list invariants like [\"I1\", \"I2\"])".into());
        }
        names::check_tags(&self.tags)?;
        if let Some(t) = self.time_scale {
            check_time_scale(t).map_err(|e| format!("time_scale = {e}"))?;
        }
        names::check_accounts(&self.accounts)?;
        let w = &self.workload;
        if !(0.0..=1.0).contains(&w.failed_share) {
            return Err("workload.failed_share: expected a share between 0 and 1".into());
        }
        if w.tasks_per_job == 0 || w.tasks_per_job > 100 {
            return Err("workload.tasks_per_job: expected 1 to 100".into());
        }
        planned_deliveries(w)?;
        if let Some(s) = &w.sequenced {
            if s.max_gap == 0 {
                return Err("workload.sequenced.max_gap: expected 1 or more".into());
            }
        }
        for f in &self.faults {
            f.validate(self.accounts.len())?;
        }
        Ok(())
    }
}

/// The time scales a run accepts: from a thousandth of real time to a
/// million times faster; outside it the scaled waits over- or underflow.
pub const TIME_SCALE: std::ops::RangeInclusive<f64> = 0.001..=1_000_000.0;

/// Checks a time scale (`--time-scale`, `time_scale`); the error starts
/// with the value, for the caller to put its name before.
pub fn check_time_scale(t: f64) -> Result<(), String> {
    if TIME_SCALE.contains(&t) {
        Ok(())
    } else {
        Err(format!(
            "{}: expected a number from {} to {}, like 100",
            crate::limits::budget::quote(&t.to_string()),
            TIME_SCALE.start(),
            TIME_SCALE.end()
        ))
    }
}

/// The `check` list of a scenario file as invariant ids: each an id code
/// (`I1` to `I9`), for the message otherwise.
fn parse_check(codes: &[String]) -> Result<BTreeSet<InvariantId>, String> {
    codes
        .iter()
        .map(|c| {
            InvariantId::ALL
                .into_iter()
                .find(|id| id.code() == c)
                .ok_or_else(|| format!("check: {c:?} is not an invariant (expected I1 to I9)"))
        })
        .collect()
}

/// How many deliveries a generative workload plans, by checked
/// arithmetic; past [`MAX_DELIVERIES`] (or past what a number holds) the
/// error says the cap and why.
pub fn planned_deliveries(w: &Workload) -> Result<usize, String> {
    let seq = match &w.sequenced {
        Some(s) => s.resources.checked_mul(s.events),
        None => Some(0),
    };
    let total = w
        .jobs
        .checked_mul(w.tasks_per_job)
        .and_then(|t| t.checked_add(w.test_deliveries))
        .and_then(|t| t.checked_add(w.poison))
        .and_then(|t| t.checked_add(seq?));
    match total {
        Some(t) if t <= MAX_DELIVERIES => Ok(t),
        t => Err(format!(
            "workload plans {} deliveries: at most {MAX_DELIVERIES} (a run holds about {} per planned delivery; the cap keeps a plan within {})",
            t.map_or_else(|| "more than 2^64".to_string(), |t| t.to_string()),
            crate::limits::budget::show(crate::limits::budget::DELIVERY_COST),
            crate::limits::budget::show(crate::limits::budget::PLAN_MEMORY),
        )),
    }
}

/// The most deliveries one scenario plans; see [`crate::limits::budget::PLAN_MEMORY`].
pub const MAX_DELIVERIES: usize =
    crate::limits::budget::PLAN_MEMORY / crate::limits::budget::DELIVERY_COST;

#[cfg(test)]
mod tests {
    use super::*;

    fn write(text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.toml");
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    const HEAD: &str = "name = \"x\"\ndescription = \"d\"\nexpect = \"e\"\nwhen_it_fails = \"w\"\n";

    #[test]
    fn a_minimal_scenario_gets_the_defaults() {
        let (_d, p) = write(&format!("{HEAD}check = [\"I1\"]\n"));
        let s = Scenario::from_file(&p).unwrap();
        assert_eq!(s.accounts, vec!["acct_a"]);
        assert_eq!(s.workload, Workload::default());
        assert!(s.faults.is_empty() && s.time_scale.is_none());
        assert!(s.tags.is_empty());
    }

    #[test]
    fn tags_are_read_and_checked() {
        let (_d, p) = write(&format!(
            "{HEAD}check = [\"I1\"]\ntags = [\"process\", \"ordering\"]\n"
        ));
        let s = Scenario::from_file(&p).unwrap();
        assert!(s.has_tag("process") && s.has_tag("ordering") && !s.has_tag("signatures"));
        let (_d, p) = write(&format!("{HEAD}check = [\"I1\"]\ntags = [\"Not A Tag\"]\n"));
        let e = Scenario::from_file(&p).unwrap_err().to_string();
        assert!(e.contains("lowercase"), "{e}");
    }

    #[test]
    fn malformed_scenario_names_file_and_line() {
        let (_d, p) = write(&format!(
            "{HEAD}check = [\"I1\"]\n\n[workload]\njobs = \"many\"\n"
        ));
        let e = Scenario::from_file(&p).unwrap_err().to_string();
        assert!(e.contains("s.toml") && e.contains("line 8"), "{e}");
    }

    #[test]
    fn a_scenario_name_that_is_a_path_is_refused_with_its_line() {
        for name in ["/abs/dir", "../../..", "a/b", ".hidden", "", "a\\b"] {
            let text = format!(
                "description = \"d\"\nname = {name:?}\nexpect = \"e\"\nwhen_it_fails = \"w\"\ncheck = [\"I1\"]\n"
            );
            let (_d, p) = write(&text);
            let e = Scenario::from_file(&p).unwrap_err().to_string();
            assert!(
                e.contains("s.toml") && e.contains("line 2") && e.contains("never a path"),
                "{name}: {e}"
            );
        }
        for name in ["baseline", "concurrent-duplicates.min", "s_1"] {
            assert!(check_name(name).is_ok(), "{name}");
        }
    }

    #[test]
    fn workload_sizes_that_overflow_are_refused_not_wrapped() {
        for workload in [
            "jobs = 4611686018427387904\ntasks_per_job = 4\n",
            "jobs = 1\n[workload.sequenced]\nresources = 4294967296\nevents = 4294967296\n",
            "jobs = 300000\n",
        ] {
            let (_d, p) = write(&format!("{HEAD}check = [\"I1\"]\n[workload]\n{workload}"));
            let e = Scenario::from_file(&p).unwrap_err().to_string();
            assert!(
                e.contains(&format!("at most {MAX_DELIVERIES}"))
                    && e.contains("per planned delivery"),
                "{workload}: {e}"
            );
        }
    }

    #[test]
    fn a_replay_count_past_its_bound_is_refused() {
        let (_d, p) = write(&format!(
            "{HEAD}check = [\"I1\"]\n[[fault]]\nkind = \"duplicate\"\nmode = \"sequential\"\nreplay = 4294967295\n"
        ));
        let e = Scenario::from_file(&p).unwrap_err().to_string();
        assert!(e.contains("replay = 4294967295: expected 0 to 100"), "{e}");
    }

    #[test]
    fn a_time_scale_outside_its_range_is_refused() {
        for t in ["1e-300", "1e300", "0.0", "-1.0"] {
            let (_d, p) = write(&format!("{HEAD}check = [\"I1\"]\ntime_scale = {t}\n"));
            let e = Scenario::from_file(&p).unwrap_err().to_string();
            assert!(
                e.contains("expected a number from 0.001 to 1000000"),
                "{t}: {e}"
            );
        }
    }

    #[test]
    fn unknown_fault_keys_are_rejected() {
        let (_d, p) = write(&format!(
            "{HEAD}check = [\"I1\"]\n[[fault]]\nkind = \"drop-ack\"\nshare = 0.5\ntimez = 2\n"
        ));
        let e = Scenario::from_file(&p).unwrap_err().to_string();
        assert!(e.contains("timez"), "{e}");
    }

    #[test]
    fn unknown_invariant_ids_are_rejected_with_their_line_and_known_ones_become_a_set() {
        let (_d, p) = write(&format!("{HEAD}check = [\"I10\"]\n"));
        let e = Scenario::from_file(&p).unwrap_err().to_string();
        assert!(e.contains("\"I10\" is not an invariant"), "{e}");
        assert!(e.contains("line 5"), "{e}");
        let (_d, p) = write(&format!("{HEAD}check = [\"I9\", \"I1\", \"I9\"]\n"));
        let s = Scenario::from_file(&p).unwrap();
        assert_eq!(s.check, [InvariantId::I1, InvariantId::I9].into());
        assert!(s.checks(InvariantId::I9) && !s.checks(InvariantId::I2));
    }

    #[test]
    fn a_cut_holds_until_seen_and_old_files_with_duration_only_still_parse() {
        let (_d, p) = write(&format!(
            "{HEAD}check = [\"I1\"]\n[[fault]]\nkind = \"cut-database\"\nduration = \"2s\"\n"
        ));
        let s = Scenario::from_file(&p).unwrap();
        let FaultSpec::CutDatabase(c) = &s.faults[0] else {
            panic!("{:?}", s.faults)
        };
        assert_eq!(
            c.duration.0,
            Duration::from_secs(2),
            "duration is the minimum"
        );
        assert_eq!((c.seen, c.max.0), (3, Duration::from_secs(30)));
        let (_d, p) = write(&format!(
            "{HEAD}check = [\"I1\"]\n[[fault]]\nkind = \"cut-database\"\nmin = \"500ms\"\nseen = 1\nmax = \"5s\"\n"
        ));
        let s = Scenario::from_file(&p).unwrap();
        let FaultSpec::CutDatabase(c) = &s.faults[0] else {
            panic!("{:?}", s.faults)
        };
        assert_eq!(c.duration.0, Duration::from_millis(500));
        assert_eq!((c.seen, c.max.0), (1, Duration::from_secs(5)));
        let (_d, p) = write(&format!(
            "{HEAD}check = [\"I1\"]\n[[fault]]\nkind = \"cut-database\"\nduration = \"5s\"\nmax = \"2s\"\n"
        ));
        let e = Scenario::from_file(&p).unwrap_err().to_string();
        assert!(e.contains("max = 2s: expected at least duration"), "{e}");
        let (_d, p) = write(&format!(
            "{HEAD}check = [\"I1\"]\n[[fault]]\nkind = \"cut-database\"\nseen = 0\n"
        ));
        let e = Scenario::from_file(&p).unwrap_err().to_string();
        assert!(e.contains("seen: expected 1 to 1000"), "{e}");
        assert_eq!(c.seen_repeats, 0, "no repeats asked for by default");
        let (_d, p) = write(&format!(
            "{HEAD}check = [\"I1\"]\n[[fault]]\nkind = \"cut-database\"\nseen = 2\nseen_repeats = 3\n"
        ));
        let e = Scenario::from_file(&p).unwrap_err().to_string();
        assert!(
            e.contains("seen_repeats = 3: expected at most seen (2)"),
            "{e}"
        );
    }

    #[test]
    fn cross_account_forgery_needs_two_accounts() {
        let (_d, p) = write(&format!(
            "{HEAD}check = [\"I4\"]\n[[fault]]\nkind = \"tamper\"\nforgeries = [\"cross-account\"]\n"
        ));
        let e = Scenario::from_file(&p).unwrap_err().to_string();
        assert!(e.contains("two accounts"), "{e}");
    }
}
