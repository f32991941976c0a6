//! Writes a plan back as an explicit scenario file (`[[delivery]]`
//! tables): what `hookstorm shrink` hands over, read again by
//! [`crate::scenario::explicit`].

use serde::Serialize;

use crate::fault_spec::FaultSpec;
use crate::plan::Plan;
use crate::scenario::explicit::{is_run_time, DeliveryEntry, PlanSeed};
use crate::scenario::Scenario;
use crate::text::units::HumanDuration;

/// The file shape written for a plan.
#[derive(Serialize)]
struct FileOut<'a> {
    name: &'a str,
    description: &'a str,
    expect: &'a str,
    when_it_fails: &'a str,
    check: Vec<&'static str>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    tags: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    time_scale: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    drain: Option<HumanDuration>,
    accounts: &'a [String],
    seed: PlanSeed,
    #[serde(rename = "fault", skip_serializing_if = "<[FaultSpec]>::is_empty")]
    faults: &'a [FaultSpec],
    #[serde(rename = "delivery")]
    deliveries: Vec<DeliveryEntry>,
}

/// The text of an explicit scenario file that replays `plan` as it is,
/// named `name`, with `scenario`'s words, checks and scales and `header`
/// as leading comment lines. Plan-time faults are left out (they are in
/// the deliveries); the plan's stream-wide fault notes are not carried.
pub fn to_toml(scenario: &Scenario, name: &str, plan: &Plan, header: &[String]) -> String {
    let faults: Vec<FaultSpec> = plan
        .faults
        .iter()
        .filter(|f| is_run_time(f))
        .cloned()
        .collect();
    let file = FileOut {
        name,
        description: &scenario.description,
        expect: &scenario.expect,
        when_it_fails: &scenario.when_it_fails,
        check: scenario.check.iter().map(|id| id.code()).collect(),
        tags: &scenario.tags,
        time_scale: scenario.time_scale,
        drain: scenario.drain.map(HumanDuration),
        accounts: &plan.accounts,
        seed: PlanSeed(plan.seed),
        faults: &faults,
        deliveries: plan.deliveries.iter().map(DeliveryEntry::of).collect(),
    };
    let body = toml::to_string(&file).expect("an explicit scenario always serializes");
    let mut out = String::new();
    for line in header {
        out.push_str("# ");
        out.push_str(line);
        out.push('\n');
    }
    if !header.is_empty() {
        out.push('\n');
    }
    out.push_str(&body);
    out
}
