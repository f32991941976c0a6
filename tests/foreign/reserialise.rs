//! Receivers that verify the signature over a re-serialisation of the
//! body, the most common receiver bug there is: Express's `express.json()`
//! parses the request, and the handler signs `JSON.stringify(req.body)`
//! instead of the bytes that came in. [`js`] does what those two calls do
//! (key order kept, every number a double, compact output, the escapes
//! `JSON.stringify` writes), so the receiver here is that Node handler in
//! all but its language.
//!
//! On answerline's compact, key-ordered ASCII bodies the bug is invisible:
//! they survive the round trip byte for byte, and `baseline` passes it.
//! The `raw-body` scenario's note (indentation, `\u00e9` next to `é`, `\/`,
//! `1.0`, `1e3`, an integer above 2^53, a trailing newline) does not, so
//! every genuine delivery is refused and I9 fails, with the cause named
//! next to the finding. Under the `stripe` profile, whose bodies are
//! pretty-printed as Stripe sends them, `baseline` already catches it.
//! The twins verify the raw bytes and pass both scenarios.

use hookstorm::check::{InvariantId, Verdict};

use super::interop::{STRIPE_SECRET_A, STRIPE_SECRET_B};
use super::provider::{self, assert_caught};
use super::vendor::{at, hmac_matches, text, Accepted, Keep, Store, PLAIN_SECRETS};
use super::{ForeignRun, Reply, Request};

/// What the signature is computed over.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Verify {
    /// The body bytes as received (what every provider's docs say).
    Raw,
    /// Broken: `JSON.stringify(JSON.parse(body))`.
    Restringified,
}

/// `t=<unix>,v1=<hex>[,v1=…]` over `"<t>.<signed>"` keyed with `secret`,
/// refusing a `t` older than 300 s (and, when `future` is set, one more
/// than 300 s ahead): answerline's scheme and Stripe's.
fn timestamped(secret: &str, header: Option<&str>, signed: &[u8], future: bool) -> bool {
    let Some(header) = header else { return false };
    let mut t = None;
    let mut macs = Vec::new();
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", v)) => t = v.parse::<i64>().ok(),
            Some(("v1", v)) => macs.extend(hex::decode(v).ok()),
            _ => {}
        }
    }
    let Some(t) = t else { return false };
    let age = chrono::Utc::now().timestamp() - t;
    if age > 300 || (future && age < -300) {
        return false;
    }
    let prefix = format!("{t}.");
    macs.iter()
        .any(|m| hmac_matches(secret.as_bytes(), &[prefix.as_bytes(), signed], m))
}

/// The bytes the receiver signs, parsing first as `express.json()` does.
fn signed_bytes(req: &Request, verify: Verify) -> Option<Vec<u8>> {
    let parsed = js::parse(&req.body)?;
    Some(match verify {
        Verify::Raw => req.body.clone(),
        Verify::Restringified => js::stringify(&parsed).into_bytes(),
    })
}

/// An answerline receiver: one row per task id, per job the newest
/// COMPLETED task.
fn answerline(
    req: &Request,
    account: String,
    secret: &str,
    store: &Store,
    verify: Verify,
) -> Reply {
    let Some(signed) = signed_bytes(req, verify) else {
        return Reply::status(400);
    };
    if !timestamped(secret, req.header("Webhook-Signature"), &signed, true) {
        return Reply::status(401);
    }
    let Some(body) = req.json() else {
        return Reply::status(400);
    };
    if body["test"] == true {
        return Reply::status(204);
    }
    let completed = body["task"]["status"] == "COMPLETED";
    let key = body["task"]["idempotencyKey"].as_str().map(|k| {
        let job = hookstorm::delivery::job_key(k);
        job.to_string()
    });
    store.accept(
        Accepted {
            account,
            key: at(&body, "/task/id").map(text).unwrap_or_default(),
            dedup: at(&body, "/task/id").map(text).unwrap_or_default(),
            object: key.filter(|_| completed),
            order: at(&body, "/task/createdAt").cloned(),
        },
        Keep::Newest,
    );
    Reply::status(204)
}

/// A Stripe receiver: one row per event id, per invoice the newest
/// `created`; Stripe's libraries refuse only old signatures.
fn stripe(req: &Request, account: String, secret: &str, store: &Store, verify: Verify) -> Reply {
    let Some(signed) = signed_bytes(req, verify) else {
        return Reply::status(400);
    };
    if !timestamped(secret, req.header("Stripe-Signature"), &signed, false) {
        return Reply::status(400);
    }
    let Some(event) = req.json() else {
        return Reply::status(400);
    };
    let id = at(&event, "/id").map(text).unwrap_or_default();
    store.accept(
        Accepted {
            account,
            key: id.clone(),
            dedup: id,
            object: at(&event, "/data/object/id").map(text),
            order: at(&event, "/created").cloned(),
        },
        Keep::Newest,
    );
    Reply::status(200)
}

/// A receiver's handler, given the account, its secret and the store.
type Handler = fn(&Request, String, &str, &Store, Verify) -> Reply;

/// Runs `scenarios` with `seed` under `profile` against a receiver that
/// signs as `verify` says; `extra` goes to `hookstorm run` as well.
fn run(profile: &str, verify: Verify, scenarios: &[&str], seed: u64, extra: &[&str]) -> ForeignRun {
    let (secrets, handler): ([&'static str; 2], Handler) = match profile {
        "stripe" => ([STRIPE_SECRET_A, STRIPE_SECRET_B], stripe),
        _ => (PLAIN_SECRETS, answerline),
    };
    let seed = seed.to_string();
    let mut args = vec!["--seed", seed.as_str()];
    for s in scenarios {
        args.extend(["--scenario", s]);
    }
    args.extend_from_slice(extra);
    provider::run_args(profile, secrets, &args, move |req, a, s, st| {
        handler(req, a, s, st, verify)
    })
}

/// The I9 block of summary.md for `scenario`: the finding and what follows it.
fn summary_block(run: &ForeignRun, scenario: &str) -> String {
    let summary = std::fs::read_to_string(run.reports().join("summary.md")).unwrap_or_default();
    let head = format!("### {scenario} · I9");
    let start = summary.find(&head).unwrap_or(summary.len());
    let rest = &summary[start..];
    let end = rest[head.len()..]
        .find("\n### ")
        .map_or(rest.len(), |e| e + head.len());
    rest[..end].to_string()
}

#[test]
fn a_receiver_verifying_a_restringified_body_refuses_raw_body_deliveries_and_is_told_why() {
    let run = run(
        "answerline",
        Verify::Restringified,
        &["baseline", "raw-body"],
        1,
        &["--time-scale", "1000"],
    );
    assert_caught(&run, "raw-body", InvariantId::I9);
    // Nothing was acknowledged in raw-body, and nothing stored.
    let s = run.report.as_ref().unwrap();
    let raw = s.scenarios.iter().find(|s| s.name == "raw-body").unwrap();
    assert_eq!(raw.check.counts.ok, 0, "{}", run.explain());
    let i9 = raw.check.result(InvariantId::I9).unwrap();
    assert_eq!(i9.evidence_total, raw.check.counts.deliveries);
    // Answerline's compact bodies survive JSON.stringify: baseline cannot see it.
    assert_eq!(
        run.scenario_verdict("baseline"),
        Some(Verdict::Pass),
        "{}",
        run.explain()
    );
    let block = summary_block(&run, "raw-body");
    assert!(
        block.contains("re-serialised body")
            && block.contains("JSON.stringify(req.body)")
            && block.contains("Verify the raw body bytes exactly as received"),
        "the I9 finding names the cause:\n{block}"
    );
}

#[test]
fn a_receiver_verifying_the_raw_bytes_passes_raw_body_and_baseline() {
    for seed in [1, 2] {
        let run = run(
            "answerline",
            Verify::Raw,
            &["baseline", "raw-body"],
            seed,
            &[],
        );
        super::vendor::assert_clean(
            &format!("raw bytes, seed {seed}"),
            &run,
            &["baseline", "raw-body"],
        );
    }
}

#[test]
fn a_stripe_receiver_verifying_a_restringified_body_fails_baseline_on_pretty_bodies() {
    // Stripe retries for 55 hours: compressed 100000x, 2 seconds. The
    // preflight would stop the run first (exit 3); the scenario is the point.
    let extra = ["--time-scale", "100000", "--no-preflight"];
    let run = run("stripe", Verify::Restringified, &["baseline"], 3, &extra);
    assert_caught(&run, "baseline", InvariantId::I9);
    let report = run.report.as_ref().unwrap();
    assert_eq!(report.scenarios[0].check.counts.ok, 0, "{}", run.explain());
}

#[test]
fn a_stripe_receiver_verifying_the_raw_bytes_passes_baseline_and_raw_body() {
    let run = run("stripe", Verify::Raw, &["baseline", "raw-body"], 3, &[]);
    super::vendor::assert_clean("stripe raw bytes", &run, &["baseline", "raw-body"]);
}

#[test]
fn the_js_round_trip_keeps_compact_json_and_changes_what_javascript_changes() {
    let same = r#"{"task":{"id":"tsk_1","n":3},"é":"café 🎉","a":[true,null,-2.5]}"#;
    assert_eq!(js::stringify(&js::parse(same.as_bytes()).unwrap()), same);
    let changed = "{\n  \"b\": 1.0, \"a\": 1e3,\n  \"big\": 9007199254740993,\n  \"s\": \"caf\\u00e9 a\\/b \\u2028\"\n}\n";
    assert_eq!(
        js::stringify(&js::parse(changed.as_bytes()).unwrap()),
        "{\"b\":1,\"a\":1000,\"big\":9007199254740992,\"s\":\"café a/b \u{2028}\"}"
    );
    assert!(js::parse(b"{\"a\":1} x").is_none());
}

/// `JSON.parse` and `JSON.stringify` as JavaScript runs them, for the
/// JSON these bodies carry: objects keep their keys in the order written
/// (none of these bodies has integer-like keys, which JavaScript would
/// move first), every number is a double, strings are UTF-16 text.
mod js {
    /// A parsed JSON value, as JavaScript holds it.
    pub enum Js {
        Null,
        Bool(bool),
        Num(f64),
        Str(String),
        Arr(Vec<Js>),
        Obj(Vec<(String, Js)>),
    }

    /// `JSON.parse(text)`; `None` where JavaScript throws.
    pub fn parse(text: &[u8]) -> Option<Js> {
        let text = std::str::from_utf8(text).ok()?;
        let mut p = Parser {
            s: text.as_bytes(),
            at: 0,
        };
        let v = p.value()?;
        p.ws();
        (p.at == p.s.len()).then_some(v)
    }

    /// `JSON.stringify(value)`: no whitespace, `"`, `\` and control
    /// characters escaped (`\n`-style where JavaScript has one), all else
    /// written as it is; integral numbers without a fraction.
    pub fn stringify(v: &Js) -> String {
        let mut out = String::new();
        write(v, &mut out);
        out
    }

    fn write(v: &Js, out: &mut String) {
        match v {
            Js::Null => out.push_str("null"),
            Js::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Js::Num(n) if !n.is_finite() => out.push_str("null"),
            // Rust writes a double's shortest round-trip digits without an
            // exponent, as JavaScript does below 1e21.
            Js::Num(n) => out.push_str(&format!("{n}")),
            Js::Str(s) => string(s, out),
            Js::Arr(a) => {
                out.push('[');
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write(x, out);
                }
                out.push(']');
            }
            Js::Obj(o) => {
                out.push('{');
                for (i, (k, x)) in o.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    string(k, out);
                    out.push(':');
                    write(x, out);
                }
                out.push('}');
            }
        }
    }

    fn string(s: &str, out: &mut String) {
        out.push('"');
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\u{8}' => out.push_str("\\b"),
                '\u{c}' => out.push_str("\\f"),
                c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
                c => out.push(c),
            }
        }
        out.push('"');
    }

    struct Parser<'a> {
        s: &'a [u8],
        at: usize,
    }

    impl Parser<'_> {
        fn ws(&mut self) {
            while self
                .s
                .get(self.at)
                .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
            {
                self.at += 1;
            }
        }

        fn eat(&mut self, b: u8) -> Option<()> {
            self.ws();
            (self.s.get(self.at) == Some(&b)).then(|| self.at += 1)
        }

        fn word(&mut self, w: &str, v: Js) -> Option<Js> {
            self.s[self.at..].starts_with(w.as_bytes()).then(|| {
                self.at += w.len();
                v
            })
        }

        fn value(&mut self) -> Option<Js> {
            self.ws();
            match *self.s.get(self.at)? {
                b'{' => {
                    self.at += 1;
                    let mut o = Vec::new();
                    if self.eat(b'}').is_some() {
                        return Some(Js::Obj(o));
                    }
                    loop {
                        self.ws();
                        let Js::Str(k) = self.string()? else {
                            return None;
                        };
                        self.eat(b':')?;
                        let v = self.value()?;
                        match o.iter_mut().find(|(x, _)| *x == k) {
                            Some(slot) => slot.1 = v,
                            None => o.push((k, v)),
                        }
                        if self.eat(b',').is_none() {
                            self.eat(b'}')?;
                            return Some(Js::Obj(o));
                        }
                    }
                }
                b'[' => {
                    self.at += 1;
                    let mut a = Vec::new();
                    if self.eat(b']').is_some() {
                        return Some(Js::Arr(a));
                    }
                    loop {
                        a.push(self.value()?);
                        if self.eat(b',').is_none() {
                            self.eat(b']')?;
                            return Some(Js::Arr(a));
                        }
                    }
                }
                b'"' => self.string(),
                b't' => self.word("true", Js::Bool(true)),
                b'f' => self.word("false", Js::Bool(false)),
                b'n' => self.word("null", Js::Null),
                _ => {
                    let start = self.at;
                    while self
                        .s
                        .get(self.at)
                        .is_some_and(|b| b"+-.eE0123456789".contains(b))
                    {
                        self.at += 1;
                    }
                    let lexeme = std::str::from_utf8(&self.s[start..self.at]).ok()?;
                    lexeme.parse::<f64>().ok().map(Js::Num)
                }
            }
        }

        fn hex4(&mut self) -> Option<u32> {
            let h = std::str::from_utf8(self.s.get(self.at..self.at + 4)?).ok()?;
            self.at += 4;
            u32::from_str_radix(h, 16).ok()
        }

        fn string(&mut self) -> Option<Js> {
            if self.s.get(self.at) != Some(&b'"') {
                return None;
            }
            self.at += 1;
            let mut out = String::new();
            loop {
                let rest = std::str::from_utf8(&self.s[self.at..]).ok()?;
                let c = rest.chars().next()?;
                self.at += c.len_utf8();
                match c {
                    '"' => return Some(Js::Str(out)),
                    '\\' => {
                        let e = *self.s.get(self.at)?;
                        self.at += 1;
                        out.push(match e {
                            b'"' => '"',
                            b'\\' => '\\',
                            b'/' => '/',
                            b'b' => '\u{8}',
                            b'f' => '\u{c}',
                            b'n' => '\n',
                            b'r' => '\r',
                            b't' => '\t',
                            b'u' => {
                                let hi = self.hex4()?;
                                let code = if (0xd800..0xdc00).contains(&hi)
                                    && self.s[self.at..].starts_with(b"\\u")
                                {
                                    self.at += 2;
                                    let lo = self.hex4()?;
                                    0x10000 + ((hi - 0xd800) << 10) + (lo.checked_sub(0xdc00)?)
                                } else {
                                    hi
                                };
                                char::from_u32(code)?
                            }
                            _ => return None,
                        });
                    }
                    c => out.push(c),
                }
            }
        }
    }
}
