//! A failing sender scenario cut down (`hookstorm sink --shrink`): the
//! fewest of its events, each with its script of answers, that still fail
//! the same invariant against the same sender, written as a scenario that
//! lists them (`[[sink.event]]`) and replays as it is with `hookstorm sink
//! --scenario FILE`.
//!
//! The search is delta debugging over the event list: remove halves, then
//! quarters, down to single events, keeping a removal when the invariant
//! still fails; bounded by a run count and a time budget. Each candidate
//! is a whole sink run (the sender started, reset, emitted to, read), so a
//! candidate is judged exactly as the written file will be.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::plan::plan;
use super::run::{run, SinkEvent, SinkOptions};
use super::target::SenderTarget;
use crate::check::Verdict;
use crate::invariant::InvariantId;
use crate::run::interrupt::Stop;
use crate::run::RunError;
use crate::scenario::sender::{ListedEvent, SenderScenario};

/// Runs the search may make, by default.
pub const DEFAULT_MAX_RUNS: usize = 24;

/// How long the search may take, by default.
pub const DEFAULT_BUDGET: Duration = Duration::from_secs(120);

/// How far the search may go.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Runs at most, the original's included.
    pub max_runs: usize,
    /// Time at most.
    pub budget: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_runs: DEFAULT_MAX_RUNS,
            budget: DEFAULT_BUDGET,
        }
    }
}

/// What the search found.
#[derive(Debug, Clone)]
pub struct Shrunk {
    /// The invariant kept failing.
    pub invariant: InvariantId,
    /// Events in the original.
    pub from: usize,
    /// Events in the smallest failing list.
    pub to: usize,
    /// Runs made.
    pub runs: usize,
    /// The scenario file written.
    pub file: PathBuf,
}

/// The explicit form of `s` as planned for `seed`.
fn listed(s: &SenderScenario, target: &SenderTarget, seed: u64) -> (Vec<ListedEvent>, u64) {
    let p = plan(s, seed, &target.profile);
    let events = p
        .events
        .iter()
        .map(|e| ListedEvent {
            account: e.account.clone(),
            resource: e.resource.clone(),
            script: e.script.clone(),
        })
        .collect();
    (events, p.seed)
}

fn with_events(
    s: &SenderScenario,
    events: Vec<ListedEvent>,
    seed: u64,
    path: &Path,
) -> SenderScenario {
    SenderScenario {
        events: events.len(),
        resources: 0,
        waves: s.waves.min(events.len() as u32).max(1),
        answers: Vec::new(),
        listed: Some(events),
        seed: Some(seed),
        path: path.to_path_buf(),
        ..s.clone()
    }
}

/// Whether `s` still fails `invariant` against the target.
async fn fails(
    target: &SenderTarget,
    s: &SenderScenario,
    invariant: InvariantId,
    opts: &SinkOptions,
    stop: &Stop,
) -> Result<bool, RunError> {
    let outcome = run(
        target,
        std::slice::from_ref(s),
        opts,
        &mut |_: SinkEvent<'_>| {},
        stop,
    )
    .await?;
    Ok(outcome
        .report
        .scenarios
        .first()
        .and_then(|r| r.check.result(invariant))
        .is_some_and(|r| r.verdict == Verdict::Fail))
}

/// Cuts `s` (which failed `invariant` with `opts.seed`) down; writes the
/// smallest failing list into `out`. `None` when the original does not
/// fail again.
pub async fn shrink(
    target: &SenderTarget,
    s: &SenderScenario,
    invariant: InvariantId,
    opts: &SinkOptions,
    out: &Path,
    limits: Limits,
    stop: &Stop,
) -> Result<Option<Shrunk>, RunError> {
    let Limits { max_runs, budget } = limits;
    std::fs::create_dir_all(out).map_err(crate::run::write_error(out))?;
    let file = out.join(format!("{}.min.toml", s.name));
    let run_opts = SinkOptions {
        out_dir: out.join("runs"),
        ..opts.clone()
    };
    let seed = crate::run::scenario_seed(opts.seed, &s.name);
    let (mut events, plan_seed) = listed(s, target, seed);
    let from = events.len();
    let began = Instant::now();
    let mut runs = 1;
    if !fails(
        target,
        &with_events(s, events.clone(), plan_seed, &file),
        invariant,
        &run_opts,
        stop,
    )
    .await?
    {
        return Ok(None);
    }
    let mut chunk = events.len().div_ceil(2);
    while chunk >= 1 && events.len() > 1 {
        let mut start = 0;
        let mut kept_any = false;
        while start < events.len() && events.len() > 1 {
            if runs >= max_runs || began.elapsed() >= budget || stop.requested() {
                break;
            }
            let end = (start + chunk).min(events.len());
            let mut candidate = events.clone();
            candidate.drain(start..end);
            if candidate.is_empty() {
                start = end;
                continue;
            }
            runs += 1;
            let c = with_events(s, candidate.clone(), plan_seed, &file);
            if fails(target, &c, invariant, &run_opts, stop).await? {
                events = candidate;
                kept_any = true;
            } else {
                start = end;
            }
        }
        if runs >= max_runs || began.elapsed() >= budget || stop.requested() {
            break;
        }
        if !kept_any {
            if chunk == 1 {
                break;
            }
            chunk = chunk.div_ceil(2);
        }
    }
    let min = with_events(s, events, plan_seed, &file);
    std::fs::write(&file, to_toml(&min, invariant)).map_err(crate::run::write_error(&file))?;
    Ok(Some(Shrunk {
        invariant,
        from,
        to: min.events,
        runs,
        file,
    }))
}

/// A seed as TOML holds it: an integer up to 2^63 - 1, digits in a string
/// above (as [`crate::scenario::explicit::PlanSeed`] reads both).
fn toml_seed(seed: u64) -> String {
    match i64::try_from(seed) {
        Ok(n) => n.to_string(),
        Err(_) => quote(&seed.to_string()),
    }
}

fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// The explicit scenario as a file.
fn to_toml(s: &SenderScenario, invariant: InvariantId) -> String {
    let list = |v: &[String]| v.iter().map(|t| quote(t)).collect::<Vec<_>>().join(", ");
    let check: Vec<String> = s.check.iter().map(|i| i.code().to_string()).collect();
    let mut out = format!(
        "# The smallest list of events of {name} found still failing {inv} against the sender\n\
         # (hookstorm sink --shrink); replay it with hookstorm sink --scenario THIS_FILE.\n\
         name = {n}\ndescription = {d}\nexpect = {e}\nwhen_it_fails = {w}\ncheck = [{c}]\ntags = [{t}]\naccounts = [{a}]\n\n[sink]\nseed = {seed}\nwaves = {waves}\n",
        name = s.name,
        inv = invariant,
        n = quote(&s.name),
        d = quote(&s.description),
        e = quote(&s.expect),
        w = quote(&s.when_it_fails),
        c = list(&check),
        t = list(&s.tags),
        a = list(&s.accounts),
        seed = toml_seed(s.seed.unwrap_or_default()),
        waves = s.waves,
    );
    if let Some(c) = s.crash {
        out.push_str(&format!(
            "\n[sink.crash]\nat = {}\ncount = {}\n",
            quote(c.at.name()),
            c.count
        ));
    }
    for e in s.listed.iter().flatten() {
        let script: Vec<String> = e.script.iter().map(ToString::to_string).collect();
        out.push_str(&format!(
            "\n[[sink.event]]\naccount = {}\n",
            quote(&e.account)
        ));
        if let Some(r) = &e.resource {
            out.push_str(&format!("resource = {}\n", quote(r)));
        }
        out.push_str(&format!("script = [{}]\n", list(&script)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::answer::Answer;

    #[test]
    fn the_written_scenario_reads_back_as_the_events_it_lists() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.min.toml");
        let s = SenderScenario {
            name: "sender-retries".into(),
            description: "d \"quoted\"".into(),
            expect: "e".into(),
            when_it_fails: "w".into(),
            check: [InvariantId::S1, InvariantId::S8].into(),
            tags: vec!["sender".into()],
            accounts: vec!["acct_a".into(), "acct_b".into()],
            events: 2,
            resources: 0,
            waves: 1,
            spacing: Duration::from_millis(50),
            drain: None,
            answers: Vec::new(),
            crash: None,
            listed: Some(vec![
                ListedEvent {
                    account: "acct_b".into(),
                    resource: Some("order-1".into()),
                    script: vec![
                        Answer::Status(503),
                        Answer::RetryAfter {
                            status: 429,
                            secs: 30,
                        },
                    ],
                },
                ListedEvent {
                    account: "acct_a".into(),
                    resource: None,
                    script: vec![Answer::Hang],
                },
            ]),
            seed: Some(u64::MAX - 7),
            path: path.clone(),
        };
        std::fs::write(&path, to_toml(&s, InvariantId::S1)).unwrap();
        let back = SenderScenario::from_file(&path).unwrap();
        assert_eq!(back.listed, s.listed);
        assert_eq!(back.seed, Some(u64::MAX - 7));
        assert_eq!(back.description, s.description);
        assert_eq!(back.check, s.check);
    }
}
