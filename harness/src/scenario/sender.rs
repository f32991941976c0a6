//! Sender scenarios: what `hookstorm sink` asks a sender under test to emit
//! and how its chaos receiver answers each attempt (`docs/sink.md`).
//!
//! A sender scenario lives beside the receiver ones and carries the tag
//! `sender` ([`super::side`]). Its `[sink]` table says how many events the
//! harness asks the sender to emit (to which accounts, over how many
//! resources, in how many emit calls), the scripts of answers the sink
//! plays (each event gets one, by share and seed; [`super::answer`]), and
//! whether the harness crashes the sender between its outbox commit and
//! its POST, or between a 2xx and marking the row delivered. It checks
//! sender invariants (S1–S9). `hookstorm sink --shrink` writes the
//! explicit form: the events listed one by one (`[[sink.event]]`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use super::answer::Answer;
use super::explicit::PlanSeed;
use super::names::{check_accounts, check_name, check_tags};
use super::side::{self, Side, SENDER_TAG};
use crate::error::{read_toml, ConfigError};
use crate::invariant::InvariantId;
use crate::text::units::HumanDuration;

/// The most events one sender scenario emits.
pub const MAX_EVENTS: usize = 200;

/// The most crashes one sender scenario asks for.
pub const MAX_CRASHES: u32 = 20;

/// Where the harness crashes the sender.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CrashPoint {
    /// After the outbox commit, before the POST: the event must still be sent.
    BeforePost,
    /// After a 2xx, before the row is marked delivered: the event is sent
    /// again, under the same identity.
    BeforeMark,
    /// With a POST in flight: the sink holds the request it read,
    /// unanswered, while the harness kills the sender; the event must be
    /// sent again after the restart.
    MidPost,
}

impl CrashPoint {
    /// The name in files and crash-point environments (`before-post`).
    pub fn name(self) -> &'static str {
        match self {
            CrashPoint::BeforePost => "before-post",
            CrashPoint::BeforeMark => "before-mark",
            CrashPoint::MidPost => "mid-post",
        }
    }

    /// Whether a sender with crash points (`failpoints = true`) crashes
    /// itself here; at `mid-post` the harness always does, since only
    /// the sink knows when a request has arrived.
    pub fn is_failpoint(self) -> bool {
        !matches!(self, CrashPoint::MidPost)
    }
}

/// `[sink.crash]`: crash the sender `count` times at `at`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Crash {
    /// Where.
    pub at: CrashPoint,
    /// How many times, at most.
    pub count: u32,
}

/// A script and the share of events that get it.
#[derive(Debug, Clone, PartialEq)]
pub struct Scripted {
    /// The share (any positive weight; normalised over the scripts).
    pub share: f64,
    /// The answers, attempt by attempt; the last repeats.
    pub script: Vec<Answer>,
}

/// One event of the explicit form: its account, resource and script.
#[derive(Debug, Clone, PartialEq)]
pub struct ListedEvent {
    /// The account.
    pub account: String,
    /// The resource, for sequenced events.
    pub resource: Option<String>,
    /// The answers.
    pub script: Vec<Answer>,
}

/// A parsed, validated sender scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct SenderScenario {
    /// Unique name (the history's `scenario`).
    pub name: String,
    /// What it does.
    pub description: String,
    /// What a correct sender does.
    pub expect: String,
    /// What a failure usually means.
    pub when_it_fails: String,
    /// The sender invariants it checks (S1–S9).
    pub check: BTreeSet<InvariantId>,
    /// Tags, `sender` among them.
    pub tags: Vec<String>,
    /// The accounts events go to.
    pub accounts: Vec<String>,
    /// Events to emit.
    pub events: usize,
    /// Resources the events update in sequence (0: each event its own,
    /// unsequenced).
    pub resources: usize,
    /// Emit calls the events are split over.
    pub waves: u32,
    /// The pause between two emit calls.
    pub spacing: Duration,
    /// How long to wait for the outbox to settle; `None` means the run's.
    pub drain: Option<Duration>,
    /// The scripts and their shares.
    pub answers: Vec<Scripted>,
    /// Crashes of the sender, if any.
    pub crash: Option<Crash>,
    /// The explicit form's events, replacing `events`, `resources`, `answers`.
    pub listed: Option<Vec<ListedEvent>>,
    /// The explicit form's seed, replacing the run's.
    pub seed: Option<u64>,
    /// The file it came from.
    pub path: PathBuf,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    name: String,
    description: String,
    expect: String,
    when_it_fails: String,
    check: Vec<String>,
    tags: Vec<String>,
    #[serde(default)]
    accounts: Option<Vec<String>>,
    sink: SinkFile,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SinkFile {
    #[serde(default)]
    events: Option<usize>,
    #[serde(default)]
    resources: usize,
    #[serde(default)]
    waves: Option<u32>,
    #[serde(default)]
    spacing: Option<HumanDuration>,
    #[serde(default)]
    drain: Option<HumanDuration>,
    #[serde(default, rename = "answer")]
    answers: Vec<AnswerFile>,
    #[serde(default)]
    crash: Option<Crash>,
    #[serde(default, rename = "event")]
    listed: Option<Vec<EventFile>>,
    #[serde(default)]
    seed: Option<PlanSeed>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AnswerFile {
    #[serde(default = "one")]
    share: f64,
    script: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EventFile {
    account: String,
    #[serde(default)]
    resource: Option<String>,
    script: Vec<String>,
}

fn one() -> f64 {
    1.0
}

fn script(texts: &[String], whose: &str) -> Result<Vec<Answer>, String> {
    if texts.is_empty() {
        return Err(format!(
            "{whose}: an empty script (hint: script = [\"503\", \"200\"])"
        ));
    }
    texts
        .iter()
        .map(|t| t.parse::<Answer>().map_err(|e| format!("{whose}: {e}")))
        .collect()
}

impl SenderScenario {
    /// Reads and validates one sender scenario file.
    pub fn from_file(path: &Path) -> Result<SenderScenario, ConfigError> {
        if side::side_of(path)? != Side::Sender {
            return Err(ConfigError::invalid(
                path,
                "a receiver scenario: `hookstorm run` runs it (a sender scenario carries the tag `sender`)",
            ));
        }
        let f: File = read_toml(path)?;
        Self::build(f, path).map_err(|m| ConfigError::invalid(path, m))
    }

    fn build(f: File, path: &Path) -> Result<SenderScenario, String> {
        check_name(&f.name)?;
        check_tags(&f.tags)?;
        let accounts = f.accounts.unwrap_or_else(|| vec!["acct_a".into()]);
        check_accounts(&accounts)?;
        let mut check = BTreeSet::new();
        for c in &f.check {
            let id = InvariantId::SENDER
                .into_iter()
                .find(|id| id.code() == c)
                .ok_or_else(|| {
                    format!("check: {c:?} is not a sender invariant (expected S1 to S9)")
                })?;
            check.insert(id);
        }
        if check.is_empty() {
            return Err("check is empty (hint: list invariants like [\"S1\", \"S8\"])".into());
        }
        let sink = f.sink;
        let answers = sink
            .answers
            .iter()
            .enumerate()
            .map(|(i, a)| {
                if !(a.share > 0.0 && a.share.is_finite()) {
                    return Err(format!("sink.answer {}: share must be more than 0", i + 1));
                }
                Ok(Scripted {
                    share: a.share,
                    script: script(&a.script, &format!("sink.answer {}", i + 1))?,
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        let listed = match sink.listed {
            None => None,
            Some(events) => {
                if !answers.is_empty() || sink.events.is_some() || sink.resources > 0 {
                    return Err("[[sink.event]] lists the events as they are: leave out events, resources and [[sink.answer]]".into());
                }
                let mut out = Vec::new();
                for (i, e) in events.iter().enumerate() {
                    if !accounts.contains(&e.account) {
                        return Err(format!(
                            "sink.event {}: account {:?} is not in accounts",
                            i + 1,
                            e.account
                        ));
                    }
                    out.push(ListedEvent {
                        account: e.account.clone(),
                        resource: e.resource.clone(),
                        script: script(&e.script, &format!("sink.event {}", i + 1))?,
                    });
                }
                Some(out)
            }
        };
        if listed.is_none() && answers.is_empty() {
            return Err("no [[sink.answer]] (hint: [[sink.answer]] script = [\"200\"])".into());
        }
        if sink.seed.is_some() && listed.is_none() {
            return Err("sink.seed is only for [[sink.event]] scenarios (hint: a generative scenario takes its seed from --seed)".into());
        }
        let events = match &listed {
            Some(l) => l.len(),
            None => sink.events.unwrap_or(10),
        };
        if events == 0 || events > MAX_EVENTS {
            return Err(format!("sink.events: expected 1 to {MAX_EVENTS}"));
        }
        if sink.resources > events {
            return Err("sink.resources: at most one resource per event".into());
        }
        let waves = sink.waves.unwrap_or(1);
        if waves == 0 || waves as usize > events {
            return Err("sink.waves: expected 1 to the number of events".into());
        }
        if let Some(c) = &sink.crash {
            if c.count == 0 || c.count > MAX_CRASHES {
                return Err(format!("sink.crash.count: expected 1 to {MAX_CRASHES}"));
            }
        }
        if !f.tags.iter().any(|t| t == SENDER_TAG) {
            return Err(format!("tags: a sender scenario carries {SENDER_TAG:?}"));
        }
        Ok(SenderScenario {
            name: f.name,
            description: f.description,
            expect: f.expect,
            when_it_fails: f.when_it_fails,
            check,
            tags: f.tags,
            accounts,
            events,
            resources: sink.resources,
            waves,
            spacing: sink
                .spacing
                .map(|d| d.0)
                .unwrap_or(Duration::from_millis(50)),
            drain: sink.drain.map(|d| d.0),
            answers,
            crash: sink.crash,
            listed,
            seed: sink.seed.map(|s| s.0),
            path: path.to_path_buf(),
        })
    }

    /// Every sender scenario directly in `dir`, sorted by name; two with
    /// one name are an error.
    pub fn load_dir(dir: &Path) -> Result<Vec<SenderScenario>, ConfigError> {
        let mut out = Vec::new();
        for path in side::files_of(dir, Side::Sender)? {
            out.push(SenderScenario::from_file(&path)?);
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
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

    /// Whether it carries tag `tag`.
    pub fn has_tag(&self, tag: &str) -> bool {
        self.tags.iter().any(|t| t == tag)
    }

    /// Whether it checks `id`.
    pub fn checks(&self, id: InvariantId) -> bool {
        self.check.contains(&id)
    }

    /// Every answer any of its scripts plays.
    pub fn answers_played(&self) -> Vec<Answer> {
        let mut out: Vec<Answer> = Vec::new();
        let scripts = self
            .answers
            .iter()
            .map(|a| &a.script)
            .chain(self.listed.iter().flatten().map(|e| &e.script));
        for s in scripts {
            for a in s {
                if !out.contains(a) {
                    out.push(*a);
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(format!("{name}.toml"));
        std::fs::write(&p, text).unwrap();
        p
    }

    const HEAD: &str = "name = \"s\"\ndescription = \"d\"\nexpect = \"e\"\nwhen_it_fails = \"w\"\ncheck = [\"S1\", \"S8\"]\ntags = [\"sender\"]\n";

    #[test]
    fn a_sender_scenario_reads_its_sink_table() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "s",
            &format!("{HEAD}accounts = [\"acct_a\", \"acct_b\"]\n[sink]\nevents = 6\nwaves = 2\n[[sink.answer]]\nshare = 2\nscript = [\"503\", \"200\"]\n[[sink.answer]]\nscript = [\"hang\", \"slow\"]\n[sink.crash]\nat = \"before-mark\"\ncount = 2\n"),
        );
        let s = SenderScenario::from_file(&p).unwrap();
        assert_eq!(s.events, 6);
        assert_eq!(
            s.answers[0].script,
            [Answer::Status(503), Answer::Status(200)]
        );
        assert_eq!(s.crash.unwrap().at, CrashPoint::BeforeMark);
        assert!(s.checks(InvariantId::S8) && !s.checks(InvariantId::S2));
        assert_eq!(s.answers_played().len(), 4);
    }

    #[test]
    fn mistakes_name_the_file_and_what_was_expected() {
        let dir = tempfile::tempdir().unwrap();
        for (body, want) in [
            (
                "[sink]\n[[sink.answer]]\nscript = [\"299 ok\"]\n",
                "hint: 200, 503",
            ),
            ("[sink]\n", "no [[sink.answer]]"),
            (
                "[sink]\nevents = 0\n[[sink.answer]]\nscript = [\"200\"]\n",
                "sink.events",
            ),
            ("[sink]\n[[sink.answer]]\nscript = []\n", "empty script"),
            ("[sink]\ncolour = 1\n", "unknown field"),
        ] {
            let p = write(dir.path(), "s", &format!("{HEAD}{body}"));
            let e = SenderScenario::from_file(&p).unwrap_err().to_string();
            assert!(e.contains(want), "{body}: {e}");
        }
        let receiver_ids = HEAD.replace("\"S1\", \"S8\"", "\"I1\"");
        let p = write(
            dir.path(),
            "s",
            &format!("{receiver_ids}[sink]\n[[sink.answer]]\nscript = [\"200\"]\n"),
        );
        let e = SenderScenario::from_file(&p).unwrap_err().to_string();
        assert!(e.contains("not a sender invariant"), "{e}");
    }

    #[test]
    fn the_explicit_form_lists_each_event_and_its_script() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "s",
            &format!("{HEAD}[sink]\nseed = 7\n[[sink.event]]\naccount = \"acct_a\"\nscript = [\"410\"]\n[[sink.event]]\naccount = \"acct_a\"\nresource = \"order-1\"\nscript = [\"200\"]\n"),
        );
        let s = SenderScenario::from_file(&p).unwrap();
        assert_eq!(s.events, 2);
        assert_eq!(s.seed, Some(7));
        assert_eq!(
            s.listed.as_ref().unwrap()[1].resource.as_deref(),
            Some("order-1")
        );
    }

    #[test]
    fn each_runner_refuses_the_other_sides_scenario_and_says_which_runs_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "s",
            &format!("{HEAD}[sink]\n[[sink.answer]]\nscript = [\"200\"]\n"),
        );
        let e = crate::scenario::Scenario::from_file(&p)
            .unwrap_err()
            .to_string();
        assert!(e.contains("hookstorm sink"), "{e}");
        assert!(crate::scenario::Scenario::load_dir(dir.path())
            .unwrap()
            .is_empty());
        assert_eq!(SenderScenario::load_dir(dir.path()).unwrap().len(), 1);
    }
}
