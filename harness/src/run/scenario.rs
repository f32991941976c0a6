//! One scenario's pipeline, from the reset to its report: plan it, send it
//! with its run-time faults acting, stream its history once through every
//! consumer, wait for the state to settle, judge it, and say what happened
//! as typed notes. A scenario whose rows land after its state was read is
//! judged again with them once the run is over ([`Recheck`]).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::{
    notes, reproduce_command, scenario_seed, write_error, RunError, RunOptions, TargetError,
};
use crate::check::{self, CheckOptions, ScenarioCheck};
use crate::findings::coverage;
use crate::findings::note::Note;
use crate::history::{self, Event, HistorySink, RunHeader};
use crate::lifecycle::Supervisor;
use crate::plan::Plan;
use crate::report::{GradedWith, ScenarioReport};
use crate::run::actor::{self, Scene};
use crate::scenario::Scenario;
use crate::sender::SendConfig;
use crate::state::late::Owners;
use crate::state::probe::{Probe, ProbeError, Settled};
use crate::state::State;
use crate::target::Target;

#[allow(clippy::too_many_arguments)]
pub(super) async fn run_scenario(
    target: &Target,
    probe: &Probe,
    scenario: &Scenario,
    opts: &RunOptions,
    run_dir: &Path,
    run_id: &str,
    mut supervisor: Option<&mut Supervisor>,
    (index, owners): (usize, &mut Owners),
) -> Result<(ScenarioReport, Option<Recheck>), RunError> {
    let started = Instant::now();
    let time_scale = target.profile.time_scale(
        opts.time_scale,
        scenario.time_scale,
        opts.default_time_scale,
    );
    let dir = run_dir.join(&scenario.name);
    std::fs::create_dir_all(&dir).map_err(write_error(&dir))?;
    let history_path = dir.join("history.jsonl");
    let state_path = dir.join("state.json");
    let mut notes = Vec::new();

    let reproduce = reproduce_command(opts, scenario);

    if let Err(e) = probe.reset().await {
        notes.push(Note::ResetFailed {
            error: e.to_string(),
        });
    }
    let before: HashSet<(Option<String>, String)> = match probe.read_state().await {
        Ok(s) => s.inbox.into_iter().map(|r| (r.account, r.key)).collect(),
        Err(_) => HashSet::new(),
    };

    // Planned once: the sender, the provider book and the faults all read
    // this plan. An explicit scenario brings its own seed, which then
    // drives everything below instead of the run's.
    let plan: Plan = crate::workload::plan(scenario, scenario_seed(opts.seed, &scenario.name));
    // A large run's state may be larger than the budget's floor.
    let probe = &probe.holding(plan.deliveries.len());
    let sink = HistorySink::create(&history_path)?;
    let header = Event::Run(RunHeader {
        run_id: run_id.to_string(),
        seed: plan.seed,
        profile: target.profile.name.clone(),
        time_scale,
        started_at: history::now_rfc3339(),
        version: env!("CARGO_PKG_VERSION").to_string(),
    });
    sink.write(header)?;
    if let Some(sup) = supervisor.as_deref_mut() {
        if let Err(e) = sup.ensure_up().await {
            return Err(TargetError::from(e).into());
        }
    }
    let scene = Scene {
        plan: &plan,
        target,
        probe,
        sink: &sink,
        time_scale,
        dir: &dir,
    };
    let mut faults = actor::cast(&plan, target, supervisor);
    let cfg = SendConfig::for_target(target, &plan, time_scale, opts.concurrency);
    let sent = actor::send(&mut faults, &scene, cfg)
        .await
        .map_err(TargetError::from)?;
    let ground_truth = faults.iter().any(|f| f.ground_truth());
    sink.finish()?;
    let summary = sent?;

    // One streaming pass over the history feeds every consumer: the keys
    // this scenario owns, the checker's fold (which also says which keys
    // the state must hold), the retry gaps and what the faults measure.
    let mut agg = check::Aggregator::new(target.profile.timeout);
    let mut gaps = crate::grading::gaps::Gaps::default();
    {
        let mut claimer = owners.claimer(index);
        let mut folds: Vec<&mut dyn history::Fold> = vec![&mut claimer, &mut agg, &mut gaps];
        folds.extend(faults.iter_mut().filter_map(|f| f.fold()));
        history::fold(&history_path, &mut folds)?;
    }
    let expect = agg.keys_to_store(ground_truth);

    let drain = scenario.drain.unwrap_or(opts.drain);
    let (state, settled) = match probe.wait_settled(&expect, opts.settle, drain).await {
        Ok((s, how)) => (Ok(s), Some(how)),
        // The harness could not keep what it read: its own failure, never
        // graded as the receiver's state.
        Err(ProbeError::Keep(why)) => {
            return Err(write_error(&state_path)(std::io::Error::other(why)));
        }
        Err(e) => (Err(e), None),
    };
    let drained = match settled {
        Some(Settled::Complete | Settled::Stable) => true,
        _ => state.as_ref().is_ok_and(State::drained),
    };
    let mut state = state.map(|s| without_earlier_rows(s, &before));
    if let Ok(s) = &mut state {
        let rows = owners.take_late(index, s);
        if rows > 0 {
            notes.push(Note::EarlierRows { rows });
        }
        if settled == Some(Settled::Stable) {
            let missing = s.missing(expect.iter().map(|(a, k)| (a.as_str(), k.as_str())));
            notes.push(Note::ReadAsItWas {
                still_for: opts.settle,
                missing,
            });
        }
        let json = serde_json::to_vec_pretty(s).unwrap_or_default();
        std::fs::write(&state_path, json).map_err(write_error(&state_path))?;
    }
    let probe_error = state.as_ref().err().map(|e| e.to_string());
    let found = actor::findings(&mut faults, &plan, state.as_ref().ok());
    drop(faults);
    notes.extend(found.notes);
    let state_ref = match &state {
        Ok(s) => Ok(s),
        Err(_) => Err(probe_error.as_deref().unwrap_or("probe failed")),
    };
    let check_opts = CheckOptions {
        reconciled: ground_truth,
        ..check_options(scenario, opts, target, drained)
    };
    let mut check: ScenarioCheck = agg.finish(&scenario.name, state_ref, &check_opts);
    if let Some(reason) = &found.not_exercised {
        check.not_exercised(reason);
        notes.push(Note::NotExercised {
            reason: reason.clone(),
        });
    }
    // A scenario that sent nothing decided nothing, as `check` of its
    // files says too.
    if summary.attempts == 0 {
        check.nothing_sent();
        notes.push(Note::NothingSent {
            planned: summary.deliveries,
            skipped: summary.skipped,
        });
    }
    notes.extend(found.observations.iter().cloned().map(Note::Informational));
    check.observations = found.observations.clone();
    let graded_with = GradedWith::of(&check_opts, found.not_exercised.clone());
    let recheck = state.is_ok().then(|| Recheck {
        history: history_path.clone(),
        state: state_path.clone(),
        opts: check_opts,
        not_exercised: found.not_exercised,
        observations: found.observations,
        deliveries: plan.deliveries.len(),
    });
    if !drained {
        notes.push(Note::NotSettled { drain });
    }
    notes.push(Note::Sent {
        deliveries: summary.deliveries,
        attempts: summary.attempts,
        ok: summary.ok,
        took: summary.duration,
        time_scale,
    });
    notes.extend(notes::send_notes(
        &plan, target, &summary, &check, time_scale, gaps,
    ));
    Ok((
        ScenarioReport {
            name: scenario.name.clone(),
            description: scenario.description.clone(),
            when_it_fails: scenario.when_it_fails.clone(),
            check,
            reproduce,
            duration_s: started.elapsed().as_secs_f64(),
            history: format!("{}/history.jsonl", scenario.name),
            state: state
                .is_ok()
                .then(|| format!("{}/state.json", scenario.name)),
            notes,
            skipped: None,
            graded_with: Some(graded_with),
            gap_slack_ms: Some(crate::grading::gaps::slack(plan.front()).as_secs_f64() * 1000.0),
        },
        recheck,
    ))
}

/// What it takes to judge a scenario again once late rows turn up.
#[derive(Debug)]
pub(super) struct Recheck {
    history: PathBuf,
    state: PathBuf,
    opts: CheckOptions,
    /// Why the scenario's fault met no traffic, if it did not.
    not_exercised: Option<String>,
    /// What the faults showed that is no failure.
    observations: Vec<String>,
    /// How many deliveries it planned (the state a late read may hold).
    pub(super) deliveries: usize,
}

/// Judges a scenario again with the rows that landed after its state was
/// read, rewrites its state.json with them and says so in its notes.
pub(super) fn judge_late_rows(
    report: &mut ScenarioReport,
    r: &Recheck,
    rows: &[crate::state::InboxRow],
) {
    let mut state: State = match std::fs::read(&r.state)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
    {
        Some(s) => s,
        None => return,
    };
    state.inbox.extend(rows.iter().cloned());
    let events = match history::read(&r.history) {
        Ok(events) => events
            .enumerate()
            .filter_map(|(i, e)| e.ok().map(|e| (i as u64 + 1, e))),
        Err(_) => return,
    };
    let before = report.check.verdict();
    report.check = check::check(events, &report.name, Ok(&state), &r.opts);
    if let Some(reason) = &r.not_exercised {
        report.check.not_exercised(reason);
    }
    report.check.observations = r.observations.clone();
    report.notes.push(Note::JudgedAgain {
        rows: rows.len(),
        keys: rows.iter().take(5).map(|r| r.key.clone()).collect(),
        before,
        after: report.check.verdict(),
    });
    if let Ok(json) = serde_json::to_vec_pretty(&state) {
        let _ = std::fs::write(&r.state, json);
    }
}

pub(super) fn check_options(
    scenario: &Scenario,
    opts: &RunOptions,
    target: &Target,
    drained: bool,
) -> CheckOptions {
    CheckOptions {
        invariants: coverage::invariants(scenario),
        strict: opts.strict,
        answer_limit: target.profile.timeout,
        drained,
        reconciled: false,
        vocabulary: crate::profile::vocabulary::Vocabulary::of(&target.profile),
    }
}

/// Drops rows that were there before the scenario started (inbox, results,
/// winners and effects of those keys), so a receiver without a reset hook can
/// still be checked scenario by scenario.
fn without_earlier_rows(mut state: State, before: &HashSet<(Option<String>, String)>) -> State {
    if before.is_empty() {
        return state;
    }
    state.retain_keys(|account, key| {
        !before.contains(&(account.map(str::to_string), key.to_string()))
    });
    state
}
