//! `hookstorm sign`: the headers a real sender would send for a body, handy
//! with curl (`curl -H @headers …`).
//!
//! The same signing path the sender takes ([`hookstorm::fault::tamper::sign`]),
//! so a replay script made by `hookstorm shrink` can sign each request at run
//! time from a secret in the environment, genuinely, mid-rotation or broken
//! the way one of the harness's forgeries is, and never hold a secret itself.

use std::io::Read;

use hookstorm::fault::tamper::{self, Keys, SignRequest};
use hookstorm::fault_spec::{Forgery, Signing};
use hookstorm::profile::signature::{Secret, SignInput};
use hookstorm::profile::Profile;

/// Arguments of `hookstorm sign`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Sender profile: a built-in name or a .toml file.
    #[arg(long, default_value = hookstorm::profile::DEFAULT_PROFILE)]
    profile: String,
    /// Signing secret; repeat for a key rotation (one signature per secret).
    #[arg(long = "secret", required_unless_present = "secret_env")]
    secrets: Vec<String>,
    /// Name of an environment variable holding the secret(s), comma separated
    /// (keeps them out of the process list and shell history).
    #[arg(long)]
    secret_env: Option<String>,
    /// Delivery id (Webhook-Id); a fresh one when absent.
    #[arg(long)]
    id: Option<String>,
    /// Unix timestamp to sign with; now when absent.
    #[arg(long)]
    timestamp: Option<i64>,
    /// Print only the headers the signature scheme sets (no delivery id
    /// header of the profile's own, no Content-Type): for scripts that send
    /// those themselves.
    #[arg(long)]
    signature_only: bool,
    /// Break the signature as the harness's forgery of this kind does
    /// (wrong-secret, missing-header, malformed-header, unknown-scheme-only,
    /// stale-timestamp, future-timestamp, expired-replay, retired-secret;
    /// tampered-body signs the input, so send a changed body with it).
    #[arg(long, value_parser = parse_forgery)]
    forge: Option<Forgery>,
    /// Which secrets sign, as in a key rotation: current (every current
    /// secret), old+new (the retired ones too) or new-only (the newest).
    #[arg(long, default_value = "current", value_parser = parse_signing)]
    signing: Signing,
    /// Name of an environment variable holding the retired secret(s), for
    /// `--signing old+new` and `--forge retired-secret`; a fresh random
    /// secret when absent (one the receiver never had).
    #[arg(long)]
    retired_secret_env: Option<String>,
    /// The URL the request goes to: Twilio, Square, HubSpot and HTTP
    /// Message Signatures sign it.
    #[arg(long, default_value = "")]
    url: String,
    /// Print the public key a receiver verifies with (Ed25519 and ECDSA
    /// profiles: the key pair comes from the secret) and read no body.
    #[arg(long)]
    public_key: bool,
}

/// The forgeries `sign` can make from one secret list: a cross-account
/// forgery is a genuine signature with the other account's secret
/// (`--secret-env` of that account), an oversized one a genuine signature
/// over a larger body.
fn signable(f: Forgery) -> bool {
    !matches!(f, Forgery::CrossAccount | Forgery::Oversized)
}

fn parse_forgery(s: &str) -> Result<Forgery, String> {
    Forgery::ALL
        .into_iter()
        .filter(|&f| signable(f))
        .find(|f| f.as_str() == s)
        .ok_or_else(|| {
            let names: Vec<&str> = Forgery::ALL
                .iter()
                .filter(|&&f| signable(f))
                .map(|f| f.as_str())
                .collect();
            format!("expected FORGERY, one of {}", names.join(", "))
        })
}

fn parse_signing(s: &str) -> Result<Signing, String> {
    [Signing::Current, Signing::OldAndNew, Signing::NewOnly]
        .into_iter()
        .find(|&g| hookstorm::plan::signing_name(g) == s)
        .ok_or_else(|| "expected SIGNING, one of current, old+new, new-only".to_string())
}

/// The secrets an environment variable holds (comma separated).
fn secrets_from_env(var: &str) -> Result<Vec<Secret>, String> {
    match std::env::var(var) {
        Ok(v) => Ok(v
            .split(',')
            .filter(|s| !s.is_empty())
            .map(Secret::new)
            .collect()),
        Err(_) => Err(format!("environment variable {var} is not set")),
    }
}

/// Reads the body from stdin and prints `Name: value` header lines.
pub fn run(args: Args) -> anyhow::Result<i32> {
    let profile = match Profile::resolve(&args.profile) {
        Ok(p) => p,
        Err(e) => return Ok(super::usage_error(e)),
    };
    let mut secrets: Vec<Secret> = args.secrets.iter().map(Secret::new).collect();
    if let Some(var) = &args.secret_env {
        match secrets_from_env(var) {
            Ok(s) => secrets.extend(s),
            Err(e) => return Ok(super::usage_error(e)),
        }
    }
    if secrets.is_empty() {
        return Ok(super::usage_error(
            "no secret given (hint: --secret S or --secret-env VAR)",
        ));
    }
    if args.public_key {
        return Ok(match profile.scheme.public_key(&secrets[0]) {
            Some(k) => {
                outln!("{k}");
                hookstorm::exit::PASS
            }
            None => super::usage_error(format!(
                "profile {} signs with an HMAC: the receiver keeps the secret itself, there is no public key",
                profile.name
            )),
        });
    }
    let seed = rand_id();
    let retired = match &args.retired_secret_env {
        Some(var) => match secrets_from_env(var) {
            Ok(s) => s,
            Err(e) => return Ok(super::usage_error(e)),
        },
        None => vec![tamper::derived_secret(seed, "retired")],
    };
    let mut body = Vec::new();
    std::io::stdin().read_to_end(&mut body)?;
    let id = args.id.unwrap_or_else(|| format!("whd_{seed:016x}"));
    let timestamp = args
        .timestamp
        .unwrap_or_else(|| chrono::Utc::now().timestamp());
    let keys = Keys {
        current: secrets,
        retired,
        other_account: None,
        wrong: tamper::derived_secret(seed, "wrong"),
    };
    let signed = if args.forge.is_none() && args.signing == Signing::Current {
        // Every secret given signs (one signature each where the scheme
        // carries several), as this command always did.
        profile
            .scheme
            .sign(
                &keys.current,
                SignInput {
                    id: &id,
                    timestamp,
                    body: &body,
                    url: &args.url,
                },
            )
            .map_err(|e| format!("cannot sign: {e}"))
    } else {
        tamper::sign(
            &profile.scheme,
            &keys,
            SignRequest {
                url: &args.url,
                id: &id,
                body: &body,
                forgery: args.forge,
                signing: args.signing,
                now: timestamp,
                tolerance: profile.tolerance_secs(),
                max_body: body.len(),
            },
        )
        .map(|s| s.headers)
    };
    let signed = match signed {
        Ok(s) => s,
        Err(e) => return Ok(super::usage_error(e)),
    };
    let mut headers = Vec::new();
    if !args.signature_only {
        if let Some(h) = &profile.id_header {
            headers.push((h.clone(), id.clone()));
        }
    }
    headers.extend(signed);
    if !args.signature_only {
        headers.push(("Content-Type".into(), profile.content_type().into()));
    }
    for (k, v) in headers {
        outln!("{k}: {v}");
    }
    Ok(hookstorm::exit::PASS)
}

fn rand_id() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos(),
    );
    h.finish()
}
