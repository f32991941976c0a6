//! What a session leaves behind, in its report folder
//! (`<out>/explore-<time>-<seed>/`):
//!
//! - the `run` reports of every replayed regression and every plan
//!   (`report.json`, `junit.xml`, `report.html`, each plan's folder with its
//!   history and state), written by [`crate::report::write_reports`];
//! - `explore.json`: the session for tools: the space and what was left
//!   out of it, the coverage of fault kinds and pairs, every failure with
//!   its reproduce command and minimal plan;
//! - `summary.md`: the same in words, before the run's summary;
//! - `shrink/<plan>/`: each shrink's outputs ([`crate::shrink::output`]).
//!
//! It also words what a person reads: a plan in one line
//! ([`describe`]) and the comments a regression file starts with.

use std::fmt::Write as _;

use serde::Serialize;

use super::coverage::Count;
use super::strategy::Draw;
use super::{io, Ended, ExploreError, Explored, Failure};
use crate::fault_spec::{DuplicateMode, FaultSpec, KillSignal, ReorderMode};
use crate::plan::Plan;
use crate::shrink::FailureRate;

/// The version of `explore.json`; bumped on incompatible changes.
pub const FORMAT_VERSION: u32 = 1;

/// One fault in a few words: its kind and what sets it apart.
pub fn fault_label(f: &FaultSpec) -> String {
    match f {
        FaultSpec::Duplicate(d) => match d.mode {
            DuplicateMode::Concurrent => format!(
                "duplicate (concurrent, {}-{} copies)",
                d.copies[0], d.copies[1]
            ),
            DuplicateMode::Sequential => "duplicate (sequential)".into(),
        },
        FaultSpec::Reorder(r) => match r.mode {
            ReorderMode::Shuffle => "reorder (shuffle)".into(),
            ReorderMode::Reverse => "reorder (reverse)".into(),
            ReorderMode::HoldBack => "reorder (hold-back)".into(),
        },
        FaultSpec::DropAck(d) => format!("drop-ack (x{})", d.times),
        FaultSpec::Tamper(t) => {
            let mut parts: Vec<&str> = t.forgeries.iter().map(|f| f.as_str()).collect();
            if !t.rotation.is_empty() {
                parts.push("rotation");
            }
            format!("tamper ({})", parts.join(", "))
        }
        FaultSpec::Front(x) => match (x.redirect, x.delay, x.stall_body) {
            (Some(code), _, _) => format!("front (redirect {code})"),
            (_, _, true) => "front (stall-body)".into(),
            (_, Some(_), _) => "front (delay)".into(),
            _ => format!("front ({} x{})", x.status, x.fail_first),
        },
        FaultSpec::Kill(k) => match (k.signal, &k.failpoint) {
            (KillSignal::Kill, Some(_)) => "kill (crash points)".into(),
            (KillSignal::Kill, None) => format!("kill (x{})", k.count),
            (KillSignal::Term, _) => format!("kill (term x{})", k.count),
            (KillSignal::Stop, _) => format!("kill (stop x{})", k.count),
        },
        FaultSpec::KillWorker(k) => match &k.failpoint {
            Some(_) => "kill-worker (crash points)".into(),
            None => format!("kill-worker (x{})", k.count),
        },
        FaultSpec::CutDatabase(c) => {
            format!("cut-database ({})", super::space::cut_mode_name(c.mode))
        }
        other => other.name().to_string(),
    }
}

/// A plan in one line: its faults, then its workload.
pub fn describe(d: &Draw) -> String {
    let faults = if d.faults.is_empty() {
        "no fault".to_string()
    } else {
        d.faults
            .iter()
            .map(fault_label)
            .collect::<Vec<_>>()
            .join(" + ")
    };
    let w = &d.workload;
    let mut load = format!("{} job{}", w.jobs, if w.jobs == 1 { "" } else { "s" });
    if w.tasks_per_job > 1 {
        load.push_str(&format!(" x {} tasks", w.tasks_per_job));
    }
    for (n, what) in [(w.test_deliveries, "test"), (w.poison, "poison")] {
        if n > 0 {
            load.push_str(&format!(", {n} {what}"));
        }
    }
    if let Some(s) = &w.sequenced {
        load.push_str(&format!(", {}x{} sequenced", s.resources, s.events));
    }
    if w.raw_note {
        load.push_str(", raw bodies");
    }
    if d.accounts.len() > 1 {
        load.push_str(&format!(", {} accounts", d.accounts.len()));
    }
    format!("{faults} · {load}")
}

/// The comment lines a regression file starts with; `seed` is the
/// session's.
pub fn regression_header(
    f: &Failure,
    seed: u64,
    original: &Plan,
    minimal: Option<&Plan>,
    rate: Option<FailureRate>,
) -> Vec<String> {
    let mut out = vec![
        format!(
            "Found by hookstorm explore: plan {} of seed {seed} ({}).",
            f.plan, f.reproduce
        ),
        format!("{} {}: {}.", f.invariant, f.verdict, f.faults.join(" + ")),
    ];
    match (minimal, rate) {
        (Some(m), Some(r)) => out.push(format!(
            "Minimal plan: {} (from {}); it {r}.",
            crate::shrink::output::deliveries(m.deliveries.len()),
            original.deliveries.len()
        )),
        _ => out.push(format!(
            "The plan as it ran ({}): {}.",
            crate::shrink::output::deliveries(original.deliveries.len()),
            f.note.as_deref().unwrap_or("not shrunk")
        )),
    }
    out.push(
        "hookstorm run and hookstorm explore replay this folder first; delete this file once it passes for good.".into(),
    );
    out
}

#[derive(Serialize)]
struct KindRow<'a> {
    kind: &'a str,
    #[serde(flatten)]
    count: Count,
}

#[derive(Serialize)]
struct PairRow<'a> {
    kinds: [&'a str; 2],
    #[serde(flatten)]
    count: Count,
}

#[derive(Serialize)]
struct ShrunkRow {
    deliveries: usize,
    failed: u32,
    confirm_runs: u32,
    runs: usize,
    dir: String,
}

#[derive(Serialize)]
struct FailureRow<'a> {
    plan: u64,
    scenario: &'a str,
    invariant: &'static str,
    invariant_name: &'static str,
    verdict: String,
    failed: Vec<String>,
    faults: &'a [&'static str],
    deliveries: usize,
    at_s: f64,
    reproduce: &'a str,
    like: Option<&'a str>,
    shrunk: Option<ShrunkRow>,
    regression: Option<String>,
    replay: Option<&'a str>,
    note: Option<&'a str>,
}

#[derive(Serialize)]
struct Summary<'a> {
    format_version: u32,
    run_id: &'a str,
    seed: u64,
    profile: &'a str,
    target: &'a str,
    budget_s: f64,
    elapsed_s: f64,
    ended: &'static str,
    plans: u64,
    first_failure_s: Option<f64>,
    undecided: usize,
    exit_code: i32,
    space: SpaceRow<'a>,
    coverage: CoverageRow<'a>,
    regressions: Option<RegressionsRow>,
    failures: Vec<FailureRow<'a>>,
}

#[derive(Serialize)]
struct SpaceRow<'a> {
    kinds: &'a [&'static str],
    accounts: usize,
    test_deliveries: bool,
    sequenced: bool,
    pairs: usize,
    left_out: &'a [super::space::LeftOut],
}

#[derive(Serialize)]
struct CoverageRow<'a> {
    kinds: Vec<KindRow<'a>>,
    pairs: Vec<PairRow<'a>>,
    kinds_met: usize,
    pairs_met: usize,
}

#[derive(Serialize)]
struct RegressionsRow {
    dir: String,
    replayed: usize,
}

/// How `explore.json` names why the session stopped.
pub fn ended_name(e: Ended) -> &'static str {
    match e {
        Ended::Budget => "budget",
        Ended::Runs => "runs",
        Ended::Failures => "max-failures",
        Ended::Plan => "plan",
        Ended::Interrupted => "interrupted",
    }
}

fn summary(x: &Explored) -> Summary<'_> {
    let kinds = x
        .space
        .kinds
        .iter()
        .map(|k| KindRow {
            kind: k,
            count: x.coverage.kinds.get(k).copied().unwrap_or_default(),
        })
        .collect();
    let pairs = x
        .coverage
        .pairs
        .iter()
        .map(|((a, b), c)| PairRow {
            kinds: [a, b],
            count: *c,
        })
        .collect();
    let failures = x
        .failures
        .iter()
        .map(|f| FailureRow {
            plan: f.plan,
            scenario: &f.scenario,
            invariant: f.invariant.code(),
            invariant_name: f.invariant.name(),
            verdict: f.verdict.to_string(),
            failed: f
                .failed
                .iter()
                .map(|(id, v)| format!("{} {v}", id.code()))
                .collect(),
            faults: &f.faults,
            deliveries: f.deliveries,
            at_s: f.at.as_secs_f64(),
            reproduce: &f.reproduce,
            like: f.like.as_deref(),
            shrunk: f.shrunk.as_ref().map(|s| ShrunkRow {
                deliveries: s.deliveries,
                failed: s.rate.failed,
                confirm_runs: s.rate.runs,
                runs: s.runs,
                dir: s.dir.display().to_string(),
            }),
            regression: f.regression.as_ref().map(|p| p.display().to_string()),
            replay: f.replay.as_deref(),
            note: f.note.as_deref(),
        })
        .collect();
    Summary {
        format_version: FORMAT_VERSION,
        run_id: &x.report.run_id,
        seed: x.seed,
        profile: &x.report.profile,
        target: &x.report.target,
        budget_s: x.budget.as_secs_f64(),
        elapsed_s: x.elapsed.as_secs_f64(),
        ended: ended_name(x.ended),
        plans: x.plans,
        first_failure_s: x.first_failure.map(|d| d.as_secs_f64()),
        undecided: x.undecided(),
        exit_code: x.exit_code(),
        space: SpaceRow {
            kinds: &x.space.kinds,
            accounts: x.space.accounts.len(),
            test_deliveries: x.space.test_deliveries,
            sequenced: x.space.sequenced,
            pairs: x.space.pairs(),
            left_out: &x.space.left_out,
        },
        coverage: CoverageRow {
            kinds,
            pairs,
            kinds_met: x.coverage.kinds_met(),
            pairs_met: x.coverage.pairs_met(),
        },
        regressions: x.regressions.as_ref().map(|(d, n)| RegressionsRow {
            dir: d.display().to_string(),
            replayed: *n,
        }),
        failures,
    }
}

/// The session in words: what ran, the coverage table, what was left out,
/// every failure with its commands.
pub fn markdown(x: &Explored) -> String {
    let mut out = String::new();
    let v = x.verdict();
    let _ = writeln!(
        out,
        "# hookstorm explore: {} {} · {}\n",
        crate::report::summary::mark(v),
        crate::report::verdict_word(v, x.report.strict),
        tally(x)
    );
    let _ = writeln!(
        out,
        "Seed `{}` · profile `{}` · target `{}` · {:.1} s of a {:.0} s budget · stopped: {}\n",
        x.seed,
        x.report.profile,
        x.report.target,
        x.elapsed.as_secs_f64(),
        x.budget.as_secs_f64(),
        ended_name(x.ended)
    );
    if let Some((dir, n)) = &x.regressions {
        let _ = writeln!(
            out,
            "Regressions replayed first: {n} from `{}`.\n",
            dir.display()
        );
    }
    let _ = writeln!(out, "## Fault space\n\n{}\n", x.space.line());
    let _ = writeln!(out, "| fault kind | plans | met traffic |\n|---|---|---|");
    for k in &x.space.kinds {
        let c = x.coverage.kinds.get(k).copied().unwrap_or_default();
        let _ = writeln!(out, "| `{k}` | {} | {} |", c.plans, c.met);
    }
    let _ = writeln!(out, "\n{}\n", x.coverage.line(x.space.kinds.len()));
    let never: Vec<String> = pairs_of(&x.space.kinds)
        .into_iter()
        .filter(|p| x.coverage.pairs.get(p).is_none_or(|c| c.met == 0))
        .map(|(a, b)| format!("`{a}` + `{b}`"))
        .collect();
    if !never.is_empty() {
        let _ = writeln!(
            out,
            "Pairs that never met traffic together: {}.\n",
            never.join(", ")
        );
    }
    for l in &x.space.left_out {
        let _ = writeln!(
            out,
            "- left out: {} (need {}): {}",
            l.what, l.need, l.reason
        );
    }
    if !x.space.left_out.is_empty() {
        out.push('\n');
    }
    if !x.failures.is_empty() {
        let _ = writeln!(out, "## Failures\n");
        for f in &x.failures {
            let _ = writeln!(out, "- {}", failure_line(f));
            let _ = writeln!(out, "  - plan: `{}`", f.reproduce);
            if let Some(r) = &f.replay {
                let _ = writeln!(out, "  - regression: `{r}`");
            }
            if let Some(n) = &f.note {
                let _ = writeln!(out, "  - {n}");
            }
        }
        out.push('\n');
    }
    out
}

/// `61 plans, 1 failing, 3 undecided`.
pub fn tally(x: &Explored) -> String {
    let mut s = format!(
        "{} plan{}, {} failing",
        x.plans,
        if x.plans == 1 { "" } else { "s" },
        x.failures.len()
    );
    let undecided = x.undecided();
    if undecided > 0 {
        s.push_str(&format!(", {undecided} undecided"));
    }
    s
}

/// Every pair of `kinds`, in their order.
fn pairs_of(kinds: &[&'static str]) -> Vec<(&'static str, &'static str)> {
    let mut out = Vec::new();
    for (i, a) in kinds.iter().enumerate() {
        for b in &kinds[i + 1..] {
            out.push((*a, *b));
        }
    }
    out
}

/// One failure in a line: plan, invariant, faults, and what became of it.
pub fn failure_line(f: &Failure) -> String {
    let mut s = format!(
        "plan {} ({}): {} {} with {} ({})",
        f.plan,
        f.scenario,
        f.invariant,
        f.verdict,
        f.faults.join(" + "),
        crate::shrink::output::deliveries(f.deliveries)
    );
    match (&f.shrunk, &f.like) {
        (Some(m), _) => s.push_str(&format!(
            "; shrunk to {}, it {}",
            crate::shrink::output::deliveries(m.deliveries),
            m.rate
        )),
        (None, Some(like)) => {
            s.push_str(&format!("; the same failure as {like}, not shrunk again"))
        }
        _ => {}
    }
    s
}

/// Writes the session's reports into its folder.
pub fn write(x: &Explored) -> Result<(), ExploreError> {
    crate::report::write_reports(&x.dir, &x.report)
        .map_err(|e| ExploreError::Run(crate::run::RunError::Reports(e)))?;
    let json = x.dir.join("explore.json");
    let mut text = serde_json::to_string_pretty(&summary(x)).expect("the summary serializes");
    text.push('\n');
    std::fs::write(&json, text).map_err(io(&json))?;
    // The run's summary follows, its own verdict line (the worst plan,
    // unknown ones included) turned into a section heading.
    let md = x.dir.join("summary.md");
    let run = std::fs::read_to_string(&md).unwrap_or_default();
    let plans = run
        .split_once('\n')
        .map(|(_, rest)| rest)
        .unwrap_or_default();
    let text = format!(
        "{}## Every plan and regression\n{plans}",
        crate::state::probe::redact_text(&markdown(x))
    );
    std::fs::write(&md, text).map_err(io(&md))?;
    // The folder stays sealed: `hookstorm verify` checks these two too.
    crate::report::seal::reseal(&x.dir, &["summary.md", "explore.json"])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::time::Duration;

    use super::*;
    use crate::check::{InvariantId, Verdict};
    use crate::explore::coverage::{Evidence, FaultCoverage};
    use crate::explore::space::{probe_spec, LeftOut, Space, KINDS};
    use crate::explore::{Ended, Shrunk};

    fn explored() -> Explored {
        let mut coverage = FaultCoverage::default();
        let faults = [probe_spec("duplicate"), probe_spec("cut-database")];
        coverage.add(&Evidence {
            faults: &faults,
            attempts: &[],
            notes: &[],
        });
        let failure = Failure {
            plan: 3,
            scenario: "explore-s7-0003".into(),
            invariant: InvariantId::I3,
            verdict: Verdict::Fail,
            failed: vec![(InvariantId::I3, Verdict::Fail)],
            faults: vec!["duplicate", "cut-database"],
            deliveries: 24,
            at: Duration::from_millis(12_300),
            reproduce: "hookstorm explore --seed 7 --plan 3".into(),
            like: None,
            shrunk: Some(Shrunk {
                deliveries: 2,
                rate: FailureRate {
                    failed: 7,
                    runs: 10,
                },
                runs: 31,
                dir: PathBuf::from("reports/x/shrink/explore-s7-0003"),
            }),
            regression: Some(PathBuf::from("hookstorm-regressions/explore-s7-0003.toml")),
            replay: Some(
                "hookstorm run --scenario hookstorm-regressions/explore-s7-0003.toml".into(),
            ),
            note: None,
        };
        let like = Failure {
            plan: 5,
            scenario: "explore-s7-0005".into(),
            like: Some("explore-s7-0003".into()),
            shrunk: None,
            regression: None,
            replay: None,
            ..failure.clone()
        };
        Explored {
            dir: PathBuf::from("reports/x"),
            report: crate::report::RunReport {
                seal: None,
                run_id: "explore-20260101-000000-00000007".into(),
                seed: 7,
                profile: "answerline".into(),
                time_scale: 100.0,
                target: "http://127.0.0.1:1/webhooks/{account}".into(),
                started_at: "2026-01-01T00:00:00Z".into(),
                duration_s: 60.0,
                strict: false,
                require_all: false,
                hookstorm_version: "0".into(),
                scenarios: Vec::new(),
                machine: None,
                interrupted: false,
            },
            seed: 7,
            space: Space {
                kinds: KINDS[..6].to_vec(),
                accounts: vec!["acct_a".into()],
                test_deliveries: true,
                sequenced: true,
                cut_modes: Vec::new(),
                left_out: vec![LeftOut {
                    what: "kill".into(),
                    need: "[lifecycle]".into(),
                    reason: "needs lifecycle control".into(),
                }],
            },
            coverage,
            plans: 6,
            failures: vec![failure, like],
            regressions: Some((PathBuf::from("hookstorm-regressions"), 0)),
            ended: Ended::Budget,
            elapsed: Duration::from_secs(60),
            first_failure: Some(Duration::from_millis(12_300)),
            budget: Duration::from_secs(60),
        }
    }

    #[test]
    fn explore_json_meets_its_schema_and_the_schema_has_teeth() {
        let json = serde_json::to_value(summary(&explored())).unwrap();
        let schema: serde_json::Value =
            serde_json::from_str(include_str!("../../../reports/schema/explore.schema.json"))
                .unwrap();
        let v = jsonschema::draft202012::new(&schema).expect("a valid 2020-12 schema");
        let errors: Vec<String> = v.iter_errors(&json).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{errors:?}\n{json:#}");
        assert_eq!(json["failures"][0]["shrunk"]["failed"], 7);
        assert_eq!(json["failures"][1]["like"], "explore-s7-0003");
        assert_eq!(
            json["coverage"]["pairs"][0]["kinds"],
            serde_json::json!(["duplicate", "cut-database"])
        );
        let mut bad = json.clone();
        bad["failures"][0]
            .as_object_mut()
            .unwrap()
            .remove("reproduce");
        assert!(!v.is_valid(&bad));
    }

    #[test]
    fn the_summary_says_what_was_covered_left_out_and_found() {
        let md = markdown(&explored());
        assert!(
            md.starts_with("# hookstorm explore: ❔ unknown · 6 plans, 2 failing\n"),
            "{md}"
        );
        assert!(md.contains("| `duplicate` | 1 | 0 |"), "{md}");
        assert!(
            md.contains("- left out: kill (need [lifecycle]): needs lifecycle control"),
            "{md}"
        );
        assert!(
            md.contains("`duplicate` + `reorder`"),
            "pairs never met: {md}"
        );
        assert!(
            md.contains("plan 3 (explore-s7-0003): I3 processed-once fail with duplicate + cut-database (24 deliveries); shrunk to 2 deliveries, it fails 7 of 10 runs"),
            "{md}"
        );
        assert!(
            md.contains("the same failure as explore-s7-0003, not shrunk again"),
            "{md}"
        );
        assert!(md.contains("  - regression: `hookstorm run --scenario hookstorm-regressions/explore-s7-0003.toml`"), "{md}");
    }

    #[test]
    fn a_plan_reads_as_its_faults_then_its_workload() {
        let d = Draw {
            accounts: vec!["acct_a".into(), "acct_b".into()],
            workload: crate::scenario::Workload {
                jobs: 3,
                tasks_per_job: 2,
                poison: 1,
                ..Default::default()
            },
            faults: vec![probe_spec("duplicate"), probe_spec("cut-database")],
        };
        assert_eq!(
            describe(&d),
            "duplicate (concurrent, 2-8 copies) + cut-database (reset) · 3 jobs x 2 tasks, 1 poison, 2 accounts"
        );
    }
}
