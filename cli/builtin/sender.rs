//! The reference sender as a supervised child process: the target that
//! `hookstorm sink` judges when no target is given, and that the crash
//! scenarios kill for real.
//!
//! [`prepare_sender`] reserves the sender's API port (a bound socket that
//! never listens, as for the reference receiver), makes a temporary
//! folder for its SQLite outbox, draws fresh secrets for [`ACCOUNTS`] and
//! an API token (passed in the environment, never on the command line),
//! and returns a [`SenderTarget`] whose `[lifecycle]` starts `COMMAND
//! sender …` with its crash points enabled. Nothing is started here: the
//! sink's supervisor starts, crashes and restarts it.

use std::collections::BTreeMap;
use std::time::Duration;

use hookstorm::lifecycle::{shell_quote, LifecycleConfig, Ready};
use hookstorm::profile::signature::Secret;
use hookstorm::sink::target::SenderTarget;
use hookstorm::state::probe::Hook;
use hookstorm::text::units::HumanDuration;
use hookstorm_receiver::config::random_token;
use hookstorm_receiver::sender::SenderDefect;

use super::accounts::{BuiltinError, ACCOUNTS};
use super::child::Reservation;

/// A prepared reference sender; keep it alive for the run (it owns the
/// outbox's folder and the port's reservation).
#[derive(Debug)]
pub struct SenderChild {
    /// The target, with `lifecycle` set.
    pub target: SenderTarget,
    _dir: tempfile::TempDir,
    _port: Reservation,
}

/// Prepares the reference sender (`command` runs the sender CLI, e.g.
/// `{hookstorm} sender`), with a deliberate bug when `defect` says.
pub fn prepare_sender(
    command: &str,
    defect: Option<SenderDefect>,
) -> Result<SenderChild, BuiltinError> {
    let dir = hookstorm::lifecycle::scratch::create()?;
    let port = Reservation::new()?;
    let addr = port.addr()?;
    let token = random_token();
    let secrets: BTreeMap<String, Vec<Secret>> = ACCOUNTS
        .iter()
        .map(|a| {
            (
                a.to_string(),
                vec![Secret::new(format!("whsec_{}", random_token()))],
            )
        })
        .collect();
    let accounts = super::accounts::env_value(&secrets);
    let db = dir.path().join("outbox.db");
    let defect = defect
        .map(|d| format!(" --defect {}", d.name()))
        .unwrap_or_default();
    let start = format!(
        "exec {command} --db {} --listen {addr} --reuse-port{defect}",
        shell_quote(&db.display().to_string())
    );
    let lifecycle = LifecycleConfig {
        start,
        dir: None,
        env: BTreeMap::from([
            ("HOOKSTORM_SENDER_ACCOUNTS".to_string(), accounts),
            ("HOOKSTORM_ADMIN_TOKEN".to_string(), token.clone()),
        ]),
        ready: Ready::Http {
            http: format!("http://{addr}/healthz"),
        },
        ready_timeout: Some(HumanDuration(Duration::from_secs(20))),
        failpoints: true,
        worker: None,
    };
    let timeout = hookstorm::state::probe::DEFAULT_TIMEOUT;
    let hook = |path: &str| {
        Hook::parse(
            &format!("http://{addr}/{path}"),
            Some(Secret::new(token.clone())),
            timeout,
        )
        .expect("a loopback URL is a hook")
    };
    let target = SenderTarget {
        profile: hookstorm::sink::reference_profile(),
        listen: "127.0.0.1:0".into(),
        secrets,
        emit: hook("emit"),
        outbox: hook("outbox"),
        reset: Some(hook("reset")),
        lifecycle: Some(lifecycle),
        database_proxy: None,
        name: format!("the built-in reference sender on {addr}"),
    };
    Ok(SenderChild {
        target,
        _dir: dir,
        _port: port,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_senders_secrets_travel_in_the_environment_not_the_command() {
        let c = prepare_sender("hookstorm sender", Some(SenderDefect::NoJitter)).unwrap();
        let life = c.target.lifecycle.as_ref().unwrap();
        for list in c.target.secrets.values() {
            for s in list {
                assert!(!life.start.contains(s.expose()));
            }
        }
        assert!(life.start.contains("--defect no-jitter"), "{}", life.start);
        assert!(life.env["HOOKSTORM_SENDER_ACCOUNTS"].contains("acct_b="));
        assert!(life.failpoints);
    }
}
