//! The built-in receiver's accounts and their fresh secrets, the target
//! that points at it, and why it could not be set up: what the child and
//! the embedded receiver share.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use hookstorm::profile::signature::Secret;
use hookstorm::profile::Profile;
use hookstorm::provider::Provider;
use hookstorm::state::probe::ProbeConfig;
use hookstorm::target::{Target, DEFAULT_MAX_BODY};
use hookstorm_receiver::config::random_token;

/// The accounts the built-in receiver serves.
pub const ACCOUNTS: [&str; 2] = ["acct_a", "acct_b"];

/// The built-in receiver could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum BuiltinError {
    /// The receiver could not start (its store, its listeners).
    #[error("the built-in reference receiver: {0}")]
    Receiver(#[from] hookstorm_receiver::ReceiverError),
    /// A socket or temporary folder could not be made.
    #[error("the built-in reference receiver: {0}")]
    Io(#[from] std::io::Error),
}

fn secret() -> Secret {
    Secret::new(format!("whsec_{}", random_token()))
}

/// Fresh random secrets for [`ACCOUNTS`]: `acct_a` mid-rotation (two valid
/// secrets, plus a retired one it no longer accepts), `acct_b` with one.
pub(super) fn fresh_secrets() -> (BTreeMap<String, Vec<Secret>>, BTreeMap<String, Secret>) {
    let mut secrets = BTreeMap::new();
    secrets.insert(ACCOUNTS[0].to_string(), vec![secret(), secret()]);
    secrets.insert(ACCOUNTS[1].to_string(), vec![secret()]);
    let mut retired = BTreeMap::new();
    retired.insert(ACCOUNTS[0].to_string(), secret());
    (secrets, retired)
}

/// The built-in receiver's target: its webhooks at `web`,
/// its state at `admin` (a base URL) read with `token`, the accounts'
/// secrets (current, retired) and the provider API it was given; no
/// lifecycle or database, which the child start sets.
pub(super) fn target(
    web: SocketAddr,
    admin: &str,
    token: String,
    profile: Profile,
    (secrets, retired): (BTreeMap<String, Vec<Secret>>, BTreeMap<String, Secret>),
    provider: Provider,
) -> Target {
    Target {
        url: format!("http://{web}/webhooks/{{account}}"),
        profile,
        secrets,
        retired,
        secret_vars: Default::default(),
        max_body: DEFAULT_MAX_BODY,
        roots: Default::default(),
        state: ProbeConfig {
            http: Some(format!("{admin}/state")),
            token: Some(token),
            ..Default::default()
        },
        lifecycle: None,
        database: Default::default(),
        provider: Some(provider),
    }
}

/// Accounts and their secrets as one environment value:
/// `NAME=SECRET[,SECRET2];NAME2=…` (what the reference receiver's and
/// sender's `--account` read from the environment).
pub(super) fn env_value(secrets: &BTreeMap<String, Vec<Secret>>) -> String {
    secrets
        .iter()
        .map(|(name, list)| {
            let joined: Vec<&str> = list.iter().map(Secret::expose).collect();
            format!("{name}={}", joined.join(","))
        })
        .collect::<Vec<_>>()
        .join(";")
}
