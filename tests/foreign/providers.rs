//! Every provider profile against the provider's own verifier: each
//! genuine delivery hookstorm sends under the profile (its body, its
//! headers, signed for the URL it goes to, in every rotation phase) is
//! accepted by the official library a receiver calls, and every forgery
//! the scenarios send is refused by it. The libraries come from PyPI
//! (`tests/foreign/py/requirements.txt`) and npm (`tests/zoo/node`); a
//! missing one skips with a message unless `HOOKSTORM_REQUIRE_ZOO` is set.

use std::path::Path;
use std::process::{Command, Stdio};

use base64::Engine as _;
use hookstorm::profile::signature::Secret;
use hookstorm::profile::Profile;

use super::interop::{cases_at, verdict_lines, Case};

/// Where the official verifier of each profile runs.
const OFFICIAL: [(&str, Runtime); 10] = [
    ("mailgun", Runtime::Python),
    ("http-signatures-ed25519", Runtime::Python),
    ("http-signatures-es256", Runtime::Python),
    ("twilio", Runtime::Python),
    ("square", Runtime::Python),
    ("paddle", Runtime::Python),
    ("hubspot", Runtime::Python),
    ("discord", Runtime::Python),
    ("sendgrid", Runtime::Node),
    ("linear", Runtime::Node),
];

#[derive(Clone, Copy, Debug, PartialEq)]
enum Runtime {
    Python,
    Node,
}

const URL: &str = "https://hooks.example.com/webhooks/acct_a?source=hookstorm";

fn command(rt: Runtime) -> Command {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    match rt {
        Runtime::Python => {
            let mut c = Command::new("python3");
            c.arg(root.join("foreign/py/official_verifiers.py"));
            c
        }
        Runtime::Node => {
            let mut c = Command::new("node");
            c.arg(root.join("zoo/node/official-verifiers.mjs"));
            c
        }
    }
}

fn installed_or_skip(rt: Runtime) -> bool {
    let probe = match rt {
        Runtime::Python => Command::new("python3")
            .args([
                "-c",
                "import twilio, square, paddle_billing, hubspot, discord_interactions, http_message_signatures, mailgun",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status(),
        Runtime::Node => Command::new("node")
            .args([
                "-e",
                "require.resolve('@sendgrid/eventwebhook'); require.resolve('@linear/sdk')",
            ])
            .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/zoo/node"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status(),
    };
    let ok = probe.is_ok_and(|s| s.success());
    if !ok {
        assert!(
            std::env::var_os("HOOKSTORM_REQUIRE_ZOO").is_none(),
            "HOOKSTORM_REQUIRE_ZOO is set but the {rt:?} official verifiers are not installed (pip install -r tests/foreign/py/requirements.txt; cd tests/zoo/node && npm ci)"
        );
        eprintln!("official verifiers ({rt:?}): skipped: not installed");
    }
    ok
}

/// The verification key a receiver of `profile` is configured with.
fn key(profile: &Profile, secret: &str) -> String {
    profile
        .scheme
        .public_key(&Secret::new(secret))
        .unwrap_or_else(|| secret.to_string())
}

/// Each case's verdict by the official verifier of `profile`.
fn official(rt: Runtime, profile: &Profile, key: &str, cases: &[Case]) -> Vec<Result<(), String>> {
    let child = command(rt)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the verifier");
    let lines = cases.iter().map(|c| {
        serde_json::json!({
            "profile": profile.name,
            "key": key,
            "url": URL,
            "headers": c.headers,
            "body": base64::engine::general_purpose::STANDARD.encode(&c.body),
        })
    });
    verdict_lines(child, lines)
}

#[test]
fn every_provider_profiles_genuine_deliveries_pass_its_official_verifier_and_every_forgery_fails_it(
) {
    let mut checked = Vec::new();
    for (name, rt) in OFFICIAL {
        if !installed_or_skip(rt) {
            continue;
        }
        let profile = Profile::builtin(name).unwrap();
        let (a, b) = ("hookstorm-provider-secret-a", "hookstorm-provider-secret-b");
        let cases = cases_at(&profile, a, b, URL);
        let verdicts = official(rt, &profile, &key(&profile, a), &cases);
        assert_eq!(verdicts.len(), cases.len(), "{name}: one verdict per case");
        let mut refused = 0;
        for (c, v) in cases.iter().zip(&verdicts) {
            assert_eq!(
                v.is_ok(),
                c.accept,
                "{name}: {} was {} by the official verifier ({v:?})",
                c.what,
                if v.is_ok() { "accepted" } else { "refused" }
            );
            refused += usize::from(v.is_err());
        }
        assert!(refused >= 6, "{name}: only {refused} forgeries were tried");
        // A verifier that accepts everything would pass the genuine cases:
        // the forgeries prove it refuses, this proves the cases are genuine.
        assert!(
            cases.iter().filter(|c| c.accept).count() >= 3,
            "{name}: the genuine cases are there"
        );
        checked.push(format!("{name} ({} cases, {refused} refused)", cases.len()));
    }
    eprintln!("official verifiers: {}", checked.join(", "));
}
