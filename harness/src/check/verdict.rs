//! The checker's answer as data: verdicts, evidence, per-invariant
//! results, the counts and dead letters of a scenario, the options a check
//! runs with, and why a check could not read its inputs. A leaf of the
//! checker: every invariant module and the file readers build these.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::grading::outcome::AttemptOutcome;
use crate::invariant::InvariantId;
use crate::profile::vocabulary::Vocabulary;

/// The summary of every invariant of a history with nothing to check.
pub const EMPTY_HISTORY: &str = "not decided: the history holds no attempt (an empty file, a run that sent nothing, or a file cut before its first attempt)";

/// At most this many evidence items are kept per invariant.
pub const MAX_EVIDENCE: usize = 10;
/// At most this many dead letters are kept per scenario (`Counts::dead` has the total).
pub const MAX_DEAD_LETTERS: usize = 1000;

/// The grade of one invariant (or of a scenario, or a run).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// The invariant holds.
    Pass,
    /// The invariant is violated; the evidence says where.
    Fail,
    /// A status-code deviation that left the state intact: fails only under `--strict`.
    NonStrict,
    /// Could not be decided (section missing, probe failed, checker error).
    Unknown,
}

impl Verdict {
    /// The wire name (`pass`, `fail`, `non-strict`, `unknown`).
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::NonStrict => "non-strict",
            Verdict::Unknown => "unknown",
        }
    }

    fn rank(self) -> u8 {
        match self {
            Verdict::Pass => 0,
            Verdict::NonStrict => 1,
            Verdict::Unknown => 2,
            Verdict::Fail => 3,
        }
    }

    /// The documented exit code of a run, check, bench or merge graded
    /// `self`: 0 pass, 1 fail, 2 unknown; non-strict is 0, or 1 under
    /// `strict`. The one place this rule lives.
    pub fn exit_code(self, strict: bool) -> i32 {
        match self {
            Verdict::Fail => crate::exit::FAIL,
            Verdict::Unknown => crate::exit::UNKNOWN,
            Verdict::NonStrict if strict => crate::exit::FAIL,
            Verdict::NonStrict | Verdict::Pass => crate::exit::PASS,
        }
    }

    /// Whether a scenario graded `self` counts as failing (toward
    /// `--max-fail`): a fail, or non-strict under `strict`.
    pub fn is_failing(self, strict: bool) -> bool {
        self.exit_code(strict) == crate::exit::FAIL
    }

    /// The worse of two verdicts: fail > unknown > non-strict > pass.
    pub fn worst(self, other: Verdict) -> Verdict {
        if other.rank() > self.rank() {
            other
        } else {
            self
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a scenario or an invariant reads, as Autobahn grades its cases:
/// its [`Verdict`], with a pass that came with something worth knowing
/// (an observation the excuse table grades informational) told apart.
/// Informational is graded below non-strict: it changes no exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Grade {
    /// It holds.
    Pass,
    /// It holds, and the scenario showed something worth knowing.
    Informational,
    /// A status-code deviation that left the state intact.
    NonStrict,
    /// Not decided.
    Unknown,
    /// Violated.
    Fail,
}

impl Grade {
    /// The grade of `verdict`; `informational` when the pass came with an
    /// observation.
    pub fn of(verdict: Verdict, informational: bool) -> Grade {
        match verdict {
            Verdict::Pass if informational => Grade::Informational,
            Verdict::Pass => Grade::Pass,
            Verdict::NonStrict => Grade::NonStrict,
            Verdict::Unknown => Grade::Unknown,
            Verdict::Fail => Grade::Fail,
        }
    }

    /// The wire name (`pass`, `informational`, `non-strict`, `unknown`, `fail`).
    pub fn as_str(self) -> &'static str {
        match self {
            Grade::Pass => "pass",
            Grade::Informational => "informational",
            Grade::NonStrict => "non-strict",
            Grade::Unknown => "unknown",
            Grade::Fail => "fail",
        }
    }
}

impl fmt::Display for Grade {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The smallest evidence of a violation: one key and the history lines involved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    /// The key (task id), job key or resource concerned.
    pub key: String,
    /// The account, when known.
    pub account: Option<String>,
    /// What is wrong, in one sentence.
    pub what: String,
    /// 1-based history line numbers of the relevant attempts (bounded).
    pub lines: Vec<u64>,
    /// How many relevant lines there were in all (at least `lines.len()`;
    /// 0 in reports written before it was counted).
    #[serde(default)]
    pub lines_total: usize,
}

impl Evidence {
    /// Evidence about `key` citing every one of `lines`.
    pub fn new(
        key: impl Into<String>,
        account: Option<String>,
        what: impl Into<String>,
        lines: Vec<u64>,
    ) -> Self {
        Evidence {
            key: key.into(),
            account,
            what: what.into(),
            lines_total: lines.len(),
            lines,
        }
    }

    /// The lines found that `lines` leaves out.
    pub fn lines_left_out(&self) -> usize {
        self.lines_total.saturating_sub(self.lines.len())
    }
}

/// The verdict of one invariant for one scenario.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InvariantResult {
    /// Which invariant.
    pub id: InvariantId,
    /// Its grade.
    pub verdict: Verdict,
    /// One line: what was checked and what was found.
    pub summary: String,
    /// At most [`MAX_EVIDENCE`] items.
    pub evidence: Vec<Evidence>,
    /// How many items there were in all.
    pub evidence_total: usize,
}

impl InvariantResult {
    /// A result without evidence.
    pub fn new(id: InvariantId, verdict: Verdict, summary: impl Into<String>) -> Self {
        InvariantResult {
            id,
            verdict,
            summary: summary.into(),
            evidence: Vec::new(),
            evidence_total: 0,
        }
    }
}

/// What the history contained.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Distinct delivery ids.
    pub deliveries: usize,
    /// Attempts.
    pub attempts: usize,
    /// Attempts with outcome `ok`.
    pub ok: usize,
    /// Attempts with outcome `fail`.
    pub fail: usize,
    /// Attempts with outcome `info`.
    pub info: usize,
    /// Deliveries that died (ran out of attempts).
    pub dead: usize,
    /// Attempts by what they came to ([`crate::grading::outcome`]); outcomes no
    /// attempt had are left out.
    #[serde(default)]
    pub outcomes: BTreeMap<AttemptOutcome, usize>,
}

impl Counts {
    /// Attempts that came to `o`.
    pub fn of(&self, o: AttemptOutcome) -> usize {
        self.outcomes.get(&o).copied().unwrap_or(0)
    }

    /// Counts `n` more attempts that came to `o`.
    pub(crate) fn add_outcome(&mut self, o: AttemptOutcome, n: usize) {
        if n > 0 {
            *self.outcomes.entry(o).or_default() += n;
        }
    }
}

/// A delivery that ran out of attempts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeadLetter {
    /// The delivery id.
    pub delivery: String,
    /// The key (task id).
    pub key: String,
    /// The account.
    pub account: String,
    /// Attempts made in its last round.
    pub attempts: u32,
    /// The last status the receiver answered.
    pub last_status: Option<u16>,
    /// The last transport error.
    pub last_error: Option<String>,
    /// The key is in the inbox anyway (stored by a later redelivery or reconciliation).
    pub recovered: bool,
    /// The scenario killed it on purpose ([`crate::grading::outcome`]: the
    /// harness's faults explain every attempt of its key the receiver did
    /// not acknowledge, or it had to be refused); `false` for a real dead
    /// letter, which counts against the receiver.
    #[serde(default)]
    pub by_design: bool,
}

/// What to check and how.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckOptions {
    /// Which invariants to report.
    pub invariants: Vec<InvariantId>,
    /// Grade non-strict deviations as failures.
    pub strict: bool,
    /// The profile's answer time limit (15 s by default).
    pub answer_limit: Duration,
    /// The drain finished before its deadline.
    pub drained: bool,
    /// The scenario ran a reconciliation: provider tasks must all be stored.
    pub reconciled: bool,
    /// The profile's words for key, object and order in findings.
    pub vocabulary: Vocabulary,
}

impl Default for CheckOptions {
    fn default() -> Self {
        CheckOptions {
            invariants: InvariantId::ALL.to_vec(),
            strict: false,
            answer_limit: Duration::from_secs(15),
            drained: true,
            reconciled: false,
            vocabulary: Vocabulary::answerline(),
        }
    }
}

/// The checker's answer for one scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScenarioCheck {
    /// The scenario.
    pub scenario: String,
    /// One result per requested invariant, in I1..I9 order.
    pub results: Vec<InvariantResult>,
    /// What the history contained.
    pub counts: Counts,
    /// Dead deliveries (at most [`MAX_DEAD_LETTERS`]).
    pub dead_letters: Vec<DeadLetter>,
    /// What the scenario showed that is worth knowing but is no failure
    /// (`informational` in `docs/invariants.md`): graded below a failure,
    /// they never change a verdict or the exit code.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub observations: Vec<String>,
}

impl ScenarioCheck {
    /// The check of a history that holds no attempt: every invariant unknown.
    pub fn empty(scenario: Option<&str>, opts: &CheckOptions) -> ScenarioCheck {
        ScenarioCheck {
            scenario: scenario.unwrap_or("all").to_string(),
            results: opts
                .invariants
                .iter()
                .map(|id| InvariantResult::new(*id, Verdict::Unknown, EMPTY_HISTORY))
                .collect(),
            counts: Default::default(),
            dead_letters: Vec::new(),
            observations: Vec::new(),
        }
    }

    /// The scenario's grade: fail > unknown > non-strict > pass. Nothing
    /// checked (a skipped scenario) is unknown, never pass.
    pub fn verdict(&self) -> Verdict {
        if self.results.is_empty() {
            return Verdict::Unknown;
        }
        self.results
            .iter()
            .fold(Verdict::Pass, |v, r| v.worst(r.verdict))
    }

    /// The scenario's grade: its verdict, informational when it passed
    /// with observations.
    pub fn grade(&self) -> Grade {
        Grade::of(self.verdict(), !self.observations.is_empty())
    }

    /// The grade of one of its results: informational when it passed and
    /// the scenario observed what the excuse table grades informational
    /// for that invariant.
    pub fn grade_of(&self, r: &InvariantResult) -> Grade {
        let informational =
            !self.observations.is_empty() && crate::grading::excuse::graded_informational(r.id);
        Grade::of(r.verdict, informational)
    }

    /// The result of one invariant, if it was checked.
    pub fn result(&self, id: InvariantId) -> Option<&InvariantResult> {
        self.results.iter().find(|r| r.id == id)
    }

    /// The history holds no attempt: every result becomes unknown with
    /// [`EMPTY_HISTORY`], as `hookstorm check` grades such a file.
    pub fn nothing_sent(&mut self) {
        for r in &mut self.results {
            r.verdict = Verdict::Unknown;
            r.summary = EMPTY_HISTORY.to_string();
            r.evidence.clear();
            r.evidence_total = 0;
        }
    }

    /// The scenario's fault never met what it was meant to test (a database
    /// cut no attempt was answered during, kills that interrupted nothing):
    /// every pass and non-strict result becomes unknown with `reason` in
    /// its summary, since nothing was proved. A fail stays a fail: what it
    /// found is real either way.
    pub fn not_exercised(&mut self, reason: &str) {
        for r in &mut self.results {
            if matches!(r.verdict, Verdict::Pass | Verdict::NonStrict) {
                r.verdict = Verdict::Unknown;
                r.summary = format!("not exercised: {reason} (had: {})", r.summary);
            }
        }
    }
}

/// What `check_history` found.
#[derive(Debug, Clone, PartialEq)]
pub struct FileCheck {
    /// One result per scenario; an empty history gives one result whose
    /// every invariant is `unknown`, with the reason.
    pub checks: Vec<ScenarioCheck>,
    /// Things the reader had to work around (a last line cut off), for
    /// stderr and the output.
    pub warnings: Vec<String>,
}

/// One history file of several read as one, and the lines it was given.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HistorySource {
    /// The file.
    pub path: PathBuf,
    /// The number its first line got (1 for the first file).
    pub first_line: u64,
    /// Lines read from it.
    pub lines: u64,
}

/// What [`check_histories`] found, and where each line number came from.
#[derive(Debug, Clone, PartialEq)]
pub struct MultiCheck {
    /// The verdicts, as for one history.
    pub check: FileCheck,
    /// The files in the order given; evidence line numbers run on from
    /// one file to the next.
    pub sources: Vec<HistorySource>,
}

impl MultiCheck {
    /// Which source (index into `sources`) and which of its own lines a
    /// line number of the evidence is.
    pub fn locate(&self, line: u64) -> Option<(usize, u64)> {
        self.sources.iter().enumerate().find_map(|(i, s)| {
            (line >= s.first_line && line < s.first_line + s.lines)
                .then(|| (i, line - s.first_line + 1))
        })
    }
}

/// `hookstorm check` could not read its inputs.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// I/O on a file.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A history line is not an event.
    #[error("{path}: line {line}: not a history event: {message}")]
    History {
        /// The history file.
        path: PathBuf,
        /// 1-based line.
        line: u64,
        /// What was wrong.
        message: String,
    },
    /// The state file is not a state.
    #[error("{path}: not a receiver state: {message} (hint: expected {{\"inbox\": [...]}} as in docs/state.md)")]
    State {
        /// The state file.
        path: PathBuf,
        /// What was wrong.
        message: String,
    },
    /// The histories are longer than a check keeps line numbers for.
    #[error("{path}: the histories hold more than {max} lines together; check fewer at a time (or one scenario, with --scenario)")]
    TooLong {
        /// The history file that went past the limit.
        path: PathBuf,
        /// The limit.
        max: u64,
    },
    /// A partition of the check could not be spilled to disk or read back.
    #[error("cannot spill the check to disk: {source} (hint: free space under the report folder, or set TMPDIR)")]
    Spill {
        /// The error.
        source: std::io::Error,
    },
    /// The scenario filter matched nothing in the history.
    #[error("{path}: no events for scenario {scenario:?}")]
    NoScenario {
        /// The history file.
        path: PathBuf,
        /// The filter.
        scenario: String,
    },
}
