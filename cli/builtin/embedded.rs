//! The reference receiver started in-process on an embedded SQLite
//! database (or a database the caller names), with fresh random secrets,
//! and the [`Target`] that tests it: what `hookstorm bench` measures, and
//! what the end-to-end tests use to prove that the correct receiver passes
//! and each broken variant is caught.
//!
//! Its listeners are bound on port 0 by the receiver itself (in this
//! process), so the target is built from the addresses it got.

use std::net::SocketAddr;

use hookstorm::profile::signature::Secret;
use hookstorm::profile::Profile;
use hookstorm::provider::Provider;
use hookstorm::target::Target;
use hookstorm_receiver::config::{random_token, Account, Config};
use hookstorm_receiver::{spawn, Defect, Spawned};

use super::accounts::BuiltinError;

/// A running built-in receiver; shut it down when the run is over.
pub struct Embedded {
    spawned: Spawned,
    _dir: Option<tempfile::TempDir>,
}

impl Embedded {
    /// Where webhooks go.
    pub fn webhook_addr(&self) -> SocketAddr {
        self.spawned.webhook_addr
    }

    /// The running receiver.
    pub fn spawned(&self) -> &Spawned {
        &self.spawned
    }

    /// Stops the receiver and removes its temporary database.
    pub async fn shutdown(self) {
        let _ = self.spawned.shutdown().await;
    }
}

/// Starts the reference receiver (optionally broken by `defect`) on `db`, or
/// on SQLite in a temporary folder, and returns it with the target that
/// tests it: two accounts, `acct_a` in the middle of a key rotation (two
/// valid secrets and a retired one), the admin API as the state probe, and
/// a provider API on 127.0.0.1 that the receiver reconciles against.
pub async fn start(
    defect: Option<Defect>,
    db: Option<&str>,
) -> Result<(Embedded, Target), BuiltinError> {
    let (dir, url) = match db {
        Some(url) => (None, url.to_string()),
        None => {
            let dir = hookstorm::lifecycle::scratch::create()?;
            let url = format!("sqlite://{}", dir.path().join("receiver.db").display());
            (Some(dir), url)
        }
    };
    let (secrets, retired) = super::accounts::fresh_secrets();
    let accounts = secrets
        .iter()
        .map(|(name, list)| Account::new(name.clone(), list.clone()))
        .collect();
    let profile = Profile::default_profile();
    // The harness's provider API: bound now, so the receiver knows its URL;
    // the run starts serving it and loads each scenario's tasks.
    let provider = Provider::bind("127.0.0.1:0", Secret::new(random_token()))?;
    let config = Config::new(accounts)
        .with_defect(defect)
        .with_profile(profile.clone())
        .with_provider(provider.url(), provider.key().clone());
    let spawned = spawn(config, &url).await?;
    let target = super::accounts::target(
        spawned.webhook_addr,
        &spawned.admin_url(),
        spawned.admin_token.clone(),
        profile,
        (secrets, retired),
        provider,
    );
    Ok((Embedded { spawned, _dir: dir }, target))
}
