//! `hookstorm list`: every scenario with its description, tags, needs and
//! invariants, so a team can see what a run covers and pick with `--tag`
//! before running anything. `--json` gives the same for scripts. Receiver
//! scenarios (`hookstorm run`) come first, then the sender scenarios
//! (tagged `sender`, run by `hookstorm sink`). `--profiles` lists the
//! built-in provider profiles instead: signature, window, identity, verifier.

use hookstorm::findings::coverage::{self, Need};
use hookstorm::scenario::sender::SenderScenario;
use hookstorm::scenario::Scenario;
use serde_json::json;

/// Arguments of `hookstorm list`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    catalog: super::catalog::CatalogFlags,
    /// Only scenarios with this tag; repeatable.
    #[arg(long = "tag")]
    tags: Vec<String>,
    /// Print JSON: an array of {name, side, description, tags, needs, invariants, accounts, excuses}.
    #[arg(long)]
    json: bool,
    /// List the built-in sender profiles instead of the scenarios.
    #[arg(long)]
    profiles: bool,
}

/// Prints the built-in profiles (`--profiles`).
fn profiles(json: bool) -> anyhow::Result<i32> {
    use hookstorm::profile::{Profile, BUILTIN_NAMES};
    let all: Vec<Profile> = BUILTIN_NAMES
        .iter()
        .filter_map(|n| Profile::builtin(n))
        .collect();
    if json {
        let v: Vec<serde_json::Value> = all
            .iter()
            .map(|p| {
                json!({
                    "name": p.name,
                    "provider": p.about.provider,
                    "signature": hookstorm::profile::doc::describe_scheme(&p.scheme),
                    "asymmetric": p.scheme.is_asymmetric(),
                    "max_attempts": p.schedule.max_attempts,
                    "timeout_secs": p.timeout.as_secs(),
                    "tolerance_secs": p.tolerance_secs(),
                    "semantics": p.semantics.describe(),
                    "content_type": p.content_type(),
                    "handshake": p.about.handshake,
                    "verifier": p.about.verifier,
                })
            })
            .collect();
        outln!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(hookstorm::exit::PASS);
    }
    for p in &all {
        outln!("{}  ({})", p.name, p.about.provider);
        outln!(
            "    signature: {}",
            hookstorm::profile::doc::describe_scheme(&p.scheme)
        );
        outln!(
            "    {} attempt(s), {} s timeout; {}",
            p.schedule.max_attempts,
            p.timeout.as_secs(),
            p.semantics.describe()
        );
        if let Some(h) = &p.about.handshake {
            outln!("    handshake: {h}");
        }
        if let Some(v) = &p.about.verifier {
            outln!("    official verifier: {v}");
        }
    }
    Ok(hookstorm::exit::PASS)
}

/// Prints the scenarios.
pub fn run(args: Args) -> anyhow::Result<i32> {
    if args.profiles {
        return profiles(args.json);
    }
    let dir = args.catalog.dir();
    let mut all = match Scenario::load_dir(&dir) {
        Ok(s) => s,
        Err(e) => return Ok(super::usage_error(e)),
    };
    let mut senders = match SenderScenario::load_dir(&dir) {
        Ok(s) => s,
        Err(e) => return Ok(super::usage_error(e)),
    };
    if !args.tags.is_empty() {
        all.retain(|s| args.tags.iter().any(|t| s.has_tag(t)));
        senders.retain(|s| args.tags.iter().any(|t| s.has_tag(t)));
    }
    if args.json {
        let mut v: Vec<serde_json::Value> = all.iter().map(entry).collect();
        v.extend(senders.iter().map(sender_entry));
        outln!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(hookstorm::exit::PASS);
    }
    for s in &all {
        let needs = needs_text(&coverage::needs(s));
        outln!("{}  [{}]", s.name, s.tags.join(", "));
        outln!("    {}", s.description);
        let codes: Vec<&str> = s.check.iter().map(|id| id.code()).collect();
        outln!("    checks: {}", codes.join(" "));
        outln!("    needs: {needs}");
        for rule in hookstorm::grading::excuse::rules_for(&s.faults) {
            outln!("    excuses: {rule}");
        }
    }
    for s in &senders {
        outln!("{}  [{}]", s.name, s.tags.join(", "));
        outln!("    {}", s.description);
        let codes: Vec<&str> = s.check.iter().map(|id| id.code()).collect();
        outln!("    checks: {}", codes.join(" "));
        outln!("    needs: {}", sender_needs(s).join(", "));
    }
    outln!(
        "{} receiver scenario(s) (hookstorm run) and {} sender scenario(s) (hookstorm sink); run some with --scenario NAME or --tag TAG",
        all.len(),
        senders.len()
    );
    Ok(hookstorm::exit::PASS)
}

/// What a sender scenario needs of a sender target.
fn sender_needs(s: &SenderScenario) -> Vec<&'static str> {
    let mut needs = vec!["a sender's emit and outbox hooks"];
    if s.accounts.len() > 1 {
        needs.push("a secret per account");
    }
    if s.crash.is_some() {
        needs.push("lifecycle control of the sender");
    }
    needs
}

fn sender_entry(s: &SenderScenario) -> serde_json::Value {
    let invariants: Vec<serde_json::Value> = s
        .check
        .iter()
        .map(|i| json!({"id": i.code(), "name": i.name()}))
        .collect();
    json!({
        "name": s.name,
        "side": "sender",
        "description": s.description,
        "tags": s.tags,
        "needs": sender_needs(s).into_iter().map(|n| json!({"need": n, "label": n})).collect::<Vec<_>>(),
        "invariants": invariants,
        "accounts": s.accounts,
        "excuses": Vec::<String>::new(),
    })
}

fn needs_text(needs: &[Need]) -> String {
    if needs.is_empty() {
        return "a URL, a secret and a state source".into();
    }
    needs
        .iter()
        .map(|n| n.label())
        .collect::<Vec<_>>()
        .join(", ")
}

fn entry(s: &Scenario) -> serde_json::Value {
    let needs: Vec<serde_json::Value> = coverage::needs(s)
        .into_iter()
        .map(|n| json!({"need": n, "label": n.label()}))
        .collect();
    let invariants: Vec<serde_json::Value> = coverage::invariants(s)
        .into_iter()
        .map(|i| json!({"id": i.code(), "name": i.name()}))
        .collect();
    json!({
        "name": s.name,
        "side": "receiver",
        "description": s.description,
        "tags": s.tags,
        "needs": needs,
        "invariants": invariants,
        "accounts": s.accounts,
        "excuses": hookstorm::grading::excuse::rules_for(&s.faults),
    })
}
