//! What every provider receiver in these tests shares: an in-memory store
//! kept the way a provider's docs tell integrators to keep one (one row per
//! event identity and account, and per object the update whose order field
//! is newest), its state endpoint in the shape hookstorm's HTTP probe
//! reads, and a helper that runs `hookstorm run --target` with a profile.
//!
//! Each receiver decides only what its provider decides: how a request is
//! verified, where the identity, object and order field are read from,
//! and which bodies are pings. The broken variants change one decision:
//! what they deduplicate on, or letting the last arrival win.

use std::cmp::Ordering as CmpOrdering;
use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};

use hookstorm::check::Verdict;
use serde_json::{json, Value};

use super::{run_hookstorm_with, ForeignRun, Reply, Request, Server};

/// Which update of an object a receiver keeps.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Keep {
    /// The newest by the provider's order field (what the docs advise).
    Newest,
    /// Broken: whichever arrived last.
    LastArrival,
}

/// One accepted event, as the receiver's handler hands it to the store.
pub struct Accepted {
    /// The account in the URL.
    pub account: String,
    /// The row's key: the event identity as the receiver records it.
    pub key: String,
    /// What the receiver deduplicates on (the key, unless it is broken).
    pub dedup: String,
    /// The object the update is about, if it is an update.
    pub object: Option<String>,
    /// The order field's value.
    pub order: Option<Value>,
}

#[derive(Default)]
struct Inner {
    seen: HashSet<(String, String)>,
    rows: Vec<(String, String)>,
    winners: BTreeMap<(String, String), (Value, String)>,
}

/// The receiver's store: inbox rows and the winner per object.
#[derive(Clone, Default)]
pub struct Store {
    inner: Arc<Mutex<Inner>>,
}

/// Numbers compare as numbers, anything else as text.
fn order_cmp(a: &Value, b: &Value) -> CmpOrdering {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x.partial_cmp(&y).unwrap_or(CmpOrdering::Equal),
        _ => {
            let text = |v: &Value| v.as_str().map(str::to_string).unwrap_or(v.to_string());
            text(a).cmp(&text(b))
        }
    }
}

impl Store {
    /// Stores `e` unless its dedup value was seen in its account (check and
    /// insert under one lock, like a unique index), and keeps the object's
    /// winner as `keep` says. Returns whether it was new.
    pub fn accept(&self, e: Accepted, keep: Keep) -> bool {
        let mut s = self.inner.lock().unwrap();
        if !s.seen.insert((e.account.clone(), e.dedup.clone())) {
            return false;
        }
        s.rows.push((e.account.clone(), e.key.clone()));
        if let (Some(object), Some(order)) = (e.object, e.order) {
            let slot = (e.account, object);
            let replace = match (s.winners.get(&slot), keep) {
                (None, _) | (Some(_), Keep::LastArrival) => true,
                (Some((cur, cur_key)), Keep::Newest) => match order_cmp(&order, cur) {
                    CmpOrdering::Greater => true,
                    // Two updates with one order value: the larger id, so
                    // that the choice never depends on arrival order.
                    CmpOrdering::Equal => e.key > *cur_key,
                    CmpOrdering::Less => false,
                },
            };
            if replace {
                s.winners.insert(slot, (order, e.key));
            }
        }
        true
    }

    /// The state in the probe's JSON shape.
    pub fn state(&self) -> Value {
        let s = self.inner.lock().unwrap();
        let inbox: Vec<Value> = s
            .rows
            .iter()
            .map(|(a, k)| json!({"key": k, "account": a, "processed": true}))
            .collect();
        let winners: Vec<Value> = s
            .winners
            .iter()
            .map(|((a, o), (_, k))| json!({"job_key": o, "task_id": k, "account": a}))
            .collect();
        json!({"inbox": inbox, "winners": winners})
    }

    /// Forgets everything (called before each scenario).
    pub fn reset(&self) {
        *self.inner.lock().unwrap() = Inner::default();
    }
}

/// The receiver's state endpoint: `GET /state`, `POST /reset`.
pub fn state_server(store: &Store) -> Server {
    let store = store.clone();
    Server::start(2, move |req: &Request| match req.path.as_str() {
        "/state" => Reply::json(&store.state()),
        "/reset" => {
            store.reset();
            Reply::status(204)
        }
        _ => Reply::status(404),
    })
}

/// The value at a JSON pointer of a parsed body.
pub fn at<'a>(body: &'a Value, pointer: &str) -> Option<&'a Value> {
    body.pointer(pointer).filter(|v| !v.is_null())
}

/// A value as text (numbers written out), as a receiver keys rows by it.
pub fn text(v: &Value) -> String {
    v.as_str()
        .map(str::to_string)
        .unwrap_or_else(|| v.to_string())
}

/// Runs `hookstorm run` with `args` (`--seed`, `--scenario`, …) against
/// `receiver` under `profile`, the two accounts' secrets in
/// `VENDOR_SECRET_A` / `VENDOR_SECRET_B`.
pub fn run(
    profile: &str,
    receiver: &Server,
    state: &Server,
    secrets: [&str; 2],
    args: &[&str],
) -> ForeignRun {
    let target = format!(
        r#"url = "{base}/webhooks/{{account}}"
profile = "{profile}"

[accounts.acct_a]
secrets_env = "VENDOR_SECRET_A"

[accounts.acct_b]
secrets_env = "VENDOR_SECRET_B"

[state]
http = "{state}/state"
reset = "{state}/reset"
"#,
        base = receiver.base(),
        state = state.base(),
    );
    run_hookstorm_with(
        &target,
        args,
        &[
            ("VENDOR_SECRET_A", secrets[0]),
            ("VENDOR_SECRET_B", secrets[1]),
        ],
    )
}

/// Asserts that every scenario of `run` passed with nothing to note.
pub fn assert_clean(name: &str, run: &ForeignRun, scenarios: &[&str]) {
    assert_eq!(run.code, 0, "{name}: {}", run.explain());
    let report = run.report.as_ref().expect("report.json");
    for s in scenarios {
        assert_eq!(
            run.scenario_verdict(s),
            Some(Verdict::Pass),
            "{name}: {s}: {}",
            run.explain()
        );
    }
    assert_eq!(report.scenarios.len(), scenarios.len(), "{name}");
    for s in &report.scenarios {
        let c = &s.check.counts;
        eprintln!(
            "{name}: {}: {} deliveries, {} attempts ({} ok, {} fail, {} info), {} invariants pass",
            s.name,
            c.deliveries,
            c.attempts,
            c.ok,
            c.fail,
            c.info,
            s.check.results.len()
        );
        assert!(c.ok > 0, "{name}: {}: nothing acknowledged", s.name);
        for r in &s.check.results {
            assert_eq!(
                r.verdict,
                Verdict::Pass,
                "{name}: {} {:?}: {}",
                s.name,
                r.id,
                run.explain()
            );
        }
    }
}

/// HMAC-SHA256 of `parts` under `key`, checked against `mac` in constant
/// time, as every provider's docs tell integrators to compare.
pub fn hmac_matches(key: &[u8], parts: &[&[u8]], mac: &[u8]) -> bool {
    use hmac::{Hmac, Mac};
    let mut m = Hmac::<sha2::Sha256>::new_from_slice(key).expect("any key length");
    for p in parts {
        m.update(p);
    }
    m.verify_slice(mac).is_ok()
}

/// The plain secrets of the providers that key their MAC with the text as given.
pub const PLAIN_SECRETS: [&str; 2] = [super::SECRET_A, super::SECRET_B];
