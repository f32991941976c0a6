//! `hookstorm sign`: the headers a real sender would send for a body, handy
//! with curl (`curl -H @headers …`).

use std::io::Read;

use hookstorm::profile::Profile;
use hookstorm::signature::{Secret, SignInput};

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
}

/// Reads the body from stdin and prints `Name: value` header lines.
pub fn run(args: Args) -> anyhow::Result<i32> {
    let profile = match Profile::resolve(&args.profile) {
        Ok(p) => p,
        Err(e) => return Ok(super::usage_error(e)),
    };
    let mut secrets: Vec<Secret> = args.secrets.iter().map(Secret::new).collect();
    if let Some(var) = &args.secret_env {
        match std::env::var(var) {
            Ok(v) => secrets.extend(v.split(',').filter(|s| !s.is_empty()).map(Secret::new)),
            Err(_) => {
                return Ok(super::usage_error(format!(
                    "environment variable {var} is not set"
                )))
            }
        }
    }
    if secrets.is_empty() {
        return Ok(super::usage_error(
            "no secret given (hint: --secret S or --secret-env VAR)",
        ));
    }
    let mut body = Vec::new();
    std::io::stdin().read_to_end(&mut body)?;
    let id = args.id.unwrap_or_else(|| format!("whd_{:016x}", rand_id()));
    let timestamp = args
        .timestamp
        .unwrap_or_else(|| chrono::Utc::now().timestamp());
    let mut headers = Vec::new();
    if let Some(h) = &profile.id_header {
        headers.push((h.clone(), id.clone()));
    }
    match profile.scheme.sign(
        &secrets,
        SignInput {
            id: &id,
            timestamp,
            body: &body,
        },
    ) {
        Ok(h) => headers.extend(h),
        Err(e) => return Ok(super::usage_error(format!("cannot sign: {e}"))),
    }
    headers.push(("Content-Type".into(), "application/json".into()));
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
