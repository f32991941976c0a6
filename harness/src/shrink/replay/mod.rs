//! The replay script: a plan as a bash script of curl requests.
//!
//! A developer fixing a receiver wants the failing run in a form they can
//! run again by hand, read and edit, without the harness's runner:
//! [`replay_script`] writes `replay.sh`, which sends the requests the plan
//! sends, in its order: wave after wave; within a wave each delivery's
//! first request in plan order (held-back deliveries last, as their first
//! attempts were not sent), concurrent copies as background jobs released
//! together and waited for; then discarded-ack resends, replays, fresh-id
//! copies and dashboard redeliveries, one after another. Each request
//! carries the profile's headers and a signature made at run time by
//! `hookstorm sign` from the secrets of an environment variable named per
//! account, so the script never holds a secret and fails with a clear
//! message when a variable is unset. Forgeries are made the same way
//! (`hookstorm sign --forge`), a cross-account one by signing with the
//! other account's variable; those the sender itself would skip under the
//! profile are left out with a comment saying why.
//!
//! Bodies are files next to the script (`bodies/`), sent with
//! `--data-binary @file`, so their bytes are exact whatever they contain.
//! What a script cannot do is said in its header: it does not kill
//! processes, cut databases or put the harness's front in the way, and it
//! sends each request once (no retry schedule).
//!
//! Here: what the script is, its errors, and the walk over the plan's
//! waves. [`preamble`] writes the script's opening (what it needs and the
//! shell functions it calls), [`rounds`] a delivery's requests in the
//! order the run sent them, [`request`] the lines of one request (its body
//! file, headers, signature made at run time, and whether the sender would
//! skip it), [`comment`] the text of the script's comments.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::fault_spec::Forgery;
use crate::plan::{Plan, PlannedDelivery};
use crate::profile::Profile;

mod comment;
mod preamble;
mod request;
mod rounds;

/// The script's file name.
pub const SCRIPT_NAME: &str = "replay.sh";
/// The folder, next to the script, that holds the bodies.
pub const BODY_DIR: &str = "bodies";
/// How long curl waits for one answer, in seconds (the sender's limit).
const CURL_MAX_TIME: u64 = 15;

/// A generated replay: the script and the files it reads.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayScript {
    /// The bash script.
    pub script: String,
    /// Body files, by path relative to the script's folder.
    pub files: Vec<(PathBuf, Vec<u8>)>,
}

/// A replay script could not be made or written.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// No variable was named for an account the plan sends to.
    #[error("no environment variable names the secrets of account {account:?} (hint: name one per account, like {account}=MY_SECRETS)")]
    NoSecretEnv {
        /// The account.
        account: String,
    },
    /// A variable name a shell cannot use.
    #[error("{name:?} is not an environment variable name (expected letters, digits and _, not starting with a digit)")]
    BadEnvName {
        /// The name given.
        name: String,
    },
    /// The target URL is not http(s).
    #[error("target url {url:?}: expected http(s)://HOST[:PORT]/PATH, with {{account}} where the account goes")]
    BadUrl {
        /// The URL given.
        url: String,
    },
    /// Writing the script or a body failed.
    #[error("cannot write {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

impl ReplayScript {
    /// Writes the script (executable) and its body files into `dir`, and
    /// returns the script's path.
    pub fn write_to(&self, dir: &Path) -> Result<PathBuf, ReplayError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| ReplayError::Io { path, source }
        };
        for (rel, bytes) in &self.files {
            let path = dir.join(rel);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(io(parent))?;
            }
            std::fs::write(&path, bytes).map_err(io(&path))?;
        }
        let path = dir.join(SCRIPT_NAME);
        std::fs::write(&path, &self.script).map_err(io(&path))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
                .map_err(io(&path))?;
        }
        Ok(path)
    }
}

fn valid_env_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// The script that replays `plan` against `target_url` (`{account}` is
/// each delivery's account) under `profile`; `secret_envs` names, per
/// account, the environment variable holding its secrets (comma separated,
/// as a target file's `secrets_env`); `max_body` is the receiver's body
/// limit (an oversized delivery's body exceeds it).
pub fn replay_script(
    plan: &Plan,
    target_url: &str,
    profile: &Profile,
    secret_envs: &[(String, String)],
    max_body: usize,
) -> Result<ReplayScript, ReplayError> {
    if !(target_url.starts_with("http://") || target_url.starts_with("https://")) {
        return Err(ReplayError::BadUrl {
            url: target_url.to_string(),
        });
    }
    for (_, name) in secret_envs {
        if !valid_env_name(name) {
            return Err(ReplayError::BadEnvName { name: name.clone() });
        }
    }
    let env_of = |account: &str| env_for(secret_envs, account);
    // The accounts whose secrets sign something: each delivery's, and the
    // other account a cross-account forgery is signed with.
    let mut accounts: Vec<&str> = Vec::new();
    for d in &plan.deliveries {
        let other = match d.forgery {
            Some(Forgery::CrossAccount) => other_account(plan, &d.account),
            _ => None,
        };
        for a in std::iter::once(d.account.as_str()).chain(other) {
            if !accounts.contains(&a) {
                accounts.push(a);
            }
        }
    }
    for a in &accounts {
        env_of(a)?;
    }
    let mut w = Writer {
        profile,
        max_body,
        out: String::new(),
        files: Vec::new(),
    };
    w.header(plan, target_url, &accounts, secret_envs)?;
    for wave in 0..plan.waves() {
        let mut members: Vec<&PlannedDelivery> =
            plan.deliveries.iter().filter(|d| d.wave == wave).collect();
        // Held-back deliveries go out after the rest: their first attempts were not sent.
        members.sort_by_key(|d| d.hold_attempts > 0);
        let _ = writeln!(w.out, "\necho '# wave {}'", wave + 1);
        let mut sent = Vec::new();
        for d in &members {
            let other = match d.forgery {
                Some(Forgery::CrossAccount) => {
                    other_account(plan, &d.account).map(env_of).transpose()?
                }
                _ => None,
            };
            if w.first_round(d, env_of(&d.account)?, other) {
                sent.push(*d);
            }
        }
        for d in sent {
            w.after_first(d, env_of(&d.account)?);
        }
    }
    w.out.push_str("\necho '# done'\n");
    Ok(ReplayScript {
        script: w.out,
        files: w.files,
    })
}

/// The variable that holds `account`'s secrets.
fn env_for<'e>(secret_envs: &'e [(String, String)], account: &str) -> Result<&'e str, ReplayError> {
    secret_envs
        .iter()
        .find(|(a, _)| a == account)
        .map(|(_, v)| v.as_str())
        .ok_or_else(|| ReplayError::NoSecretEnv {
            account: account.to_string(),
        })
}

/// The account whose secret a cross-account forgery for `account` is
/// signed with: the next account of the plan that is not this one, as the
/// sender picks it.
fn other_account<'p>(plan: &'p Plan, account: &str) -> Option<&'p str> {
    let i = plan.accounts.iter().position(|a| a == account)?;
    plan.accounts
        .iter()
        .cycle()
        .skip(i + 1)
        .take(plan.accounts.len().saturating_sub(1))
        .map(String::as_str)
        .next()
}

/// The script as it is written: its text so far and the body files it reads.
struct Writer<'a> {
    profile: &'a Profile,
    max_body: usize,
    out: String,
    files: Vec<(PathBuf, Vec<u8>)>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delivery::{task_body, TaskStatus};
    use crate::history::Intent;

    pub(super) fn envs() -> Vec<(String, String)> {
        vec![
            ("acct_a".into(), "SECRETS_A".into()),
            ("acct_b".into(), "SECRETS_B".into()),
        ]
    }

    pub(super) fn plan() -> Plan {
        Plan {
            scenario: "replay-unit".into(),
            seed: 3,
            accounts: vec!["acct_a".into(), "acct_b".into()],
            faults: Vec::new(),
            deliveries: Vec::new(),
            notes: Vec::new(),
        }
    }

    pub(super) fn add<'p>(
        p: &'p mut Plan,
        account: &str,
        intent: Intent,
    ) -> &'p mut PlannedDelivery {
        let mut rng = p.rng("test-bodies", p.deliveries.len() as u64);
        let b = task_body(
            &mut rng,
            Some("job-1".into()),
            TaskStatus::Completed,
            "2026-11-29T10:00:00Z".into(),
        );
        p.push_new(&mut rng, account, b, intent)
    }

    pub(super) fn script(p: &Plan, profile: &str) -> ReplayScript {
        let profile = Profile::builtin(profile).unwrap();
        replay_script(
            p,
            "http://127.0.0.1:9/hooks/{account}",
            &profile,
            &envs(),
            1024,
        )
        .unwrap()
    }

    #[test]
    fn every_account_names_its_variable_and_the_script_never_signs_with_a_literal_secret() {
        let mut p = plan();
        add(&mut p, "acct_a", Intent::Genuine);
        let cross = add(&mut p, "acct_a", Intent::CrossAccount);
        cross.forgery = Some(Forgery::CrossAccount);
        let s = script(&p, "answerline").script;
        assert!(s.contains("need SECRETS_A acct_a\n"), "{s}");
        assert!(s.contains("need SECRETS_B acct_b\n"), "{s}");
        assert!(!s.contains("--secret "), "{s}");
        assert!(s.starts_with("#!/usr/bin/env bash\n"));
        assert!(s.contains("set -euo pipefail\n"));
        // A cross-account forgery is signed with the other account's variable.
        let d1 = &s[s.find("# d1:").unwrap()..];
        assert!(d1.contains("sign --secret-env SECRETS_B "), "{d1}");
        let missing = replay_script(
            &p,
            "http://127.0.0.1:9/{account}",
            &Profile::default_profile(),
            &envs()[..1],
            1024,
        )
        .unwrap_err();
        assert!(matches!(missing, ReplayError::NoSecretEnv { ref account } if account == "acct_b"));
        assert!(
            missing.to_string().contains("acct_b=MY_SECRETS"),
            "{missing}"
        );
        // An account nothing is signed for needs no variable.
        let mut only_a = plan();
        add(&mut only_a, "acct_a", Intent::Genuine);
        let s = replay_script(
            &only_a,
            "http://127.0.0.1:9/{account}",
            &Profile::default_profile(),
            &envs()[..1],
            1024,
        )
        .unwrap()
        .script;
        assert!(!s.contains("SECRETS_B"), "{s}");
        let bad = vec![
            ("acct_a".into(), "X; rm -rf /".into()),
            ("acct_b".into(), "B".into()),
        ];
        let e = replay_script(
            &p,
            "http://h/{account}",
            &Profile::default_profile(),
            &bad,
            1,
        )
        .unwrap_err();
        assert!(matches!(e, ReplayError::BadEnvName { .. }), "{e}");
        let e = replay_script(&p, "ftp://h/", &Profile::default_profile(), &envs(), 1).unwrap_err();
        assert!(matches!(e, ReplayError::BadUrl { .. }), "{e}");
    }

    #[test]
    fn the_same_plan_gives_the_same_script() {
        let mut p = plan();
        add(&mut p, "acct_a", Intent::Genuine).copies = 2;
        add(&mut p, "acct_b", Intent::Test);
        assert_eq!(script(&p, "stripe"), script(&p, "stripe"));
    }
}
