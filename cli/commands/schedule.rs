//! `hookstorm schedule`: the table people look for when they size an outage.

use hookstorm::profile::Profile;
use hookstorm::text::units::format_duration;

/// Arguments of `hookstorm schedule`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Sender profile: a built-in name or a .toml file.
    #[arg(long, default_value = hookstorm::profile::DEFAULT_PROFILE)]
    profile: String,
    /// Seed for the jitter of this delivery.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// Prints the schedule.
pub fn run(args: Args) -> anyhow::Result<i32> {
    let profile = match Profile::resolve(&args.profile) {
        Ok(p) => p,
        Err(e) => return Ok(super::usage_error(e)),
    };
    let plan = profile.schedule.plan(args.seed);
    if args.json {
        let rows: Vec<_> = plan
            .iter()
            .map(|r| {
                serde_json::json!({
                    "attempt": r.attempt,
                    "base_s": r.base.as_secs_f64(),
                    "wait_s": r.wait.as_secs_f64(),
                    "cumulative_s": r.cumulative.as_secs_f64(),
                    "min_wait_s": r.min_wait.as_secs_f64(),
                    "max_wait_s": r.max_wait.as_secs_f64(),
                    "cumulative_min_s": r.cumulative_min.as_secs_f64(),
                    "cumulative_max_s": r.cumulative_max.as_secs_f64(),
                })
            })
            .collect();
        let doc = serde_json::json!({
            "profile": profile.name,
            "seed": args.seed,
            "max_attempts": profile.schedule.max_attempts,
            "timeout_s": profile.timeout.as_secs_f64(),
            "attempts": rows,
        });
        outln!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(hookstorm::exit::PASS);
    }
    outln!(
        "profile {} · seed {} · {} attempts · {} per attempt",
        profile.name,
        args.seed,
        profile.schedule.max_attempts,
        format_duration(profile.timeout)
    );
    outln!(
        "{:>7}  {:>12}  {:>14}  {:>18}  {:>16}  {:>16}",
        "attempt",
        "wait",
        "cumulative",
        "wait range",
        "cumulative min",
        "cumulative max"
    );
    for r in &plan {
        let range = if r.min_wait == r.max_wait {
            format_duration(r.min_wait)
        } else {
            format!(
                "{}–{}",
                format_duration(r.min_wait),
                format_duration(r.max_wait)
            )
        };
        outln!(
            "{:>7}  {:>12}  {:>14}  {:>18}  {:>16}  {:>16}",
            r.attempt,
            format_duration(r.wait),
            format_duration(r.cumulative),
            range,
            format_duration(r.cumulative_min),
            format_duration(r.cumulative_max)
        );
    }
    if let Some(last) = plan.last() {
        outln!(
            "after attempt {} fails the delivery is dead: between {} and {} after the first attempt (plus up to {} per attempt)",
            last.attempt,
            format_duration(last.cumulative_min),
            format_duration(last.cumulative_max),
            format_duration(profile.timeout)
        );
    }
    Ok(hookstorm::exit::PASS)
}
