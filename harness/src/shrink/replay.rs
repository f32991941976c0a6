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

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::fault::tamper::{self, Keys, SignRequest};
use crate::history::Intent;
use crate::lifecycle::shell_quote;
use crate::plan::{signing_name, Plan, PlannedDelivery, Redelivery};
use crate::profile::envelope;
use crate::profile::signature::{Scheme, Secret};
use crate::profile::{BodyShape, Freshness, Profile};
use crate::scenario::fault_spec::{Forgery, Signing};

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

struct Writer<'a> {
    profile: &'a Profile,
    max_body: usize,
    out: String,
    files: Vec<(PathBuf, Vec<u8>)>,
}

/// How one request is signed at run time.
struct Signer<'a> {
    env: &'a str,
    id: &'a str,
    forge: Option<Forgery>,
    signing: Signing,
    /// The file whose bytes are signed (the body, except for a tampered one).
    file: &'a str,
}

impl Writer<'_> {
    fn header(
        &mut self,
        plan: &Plan,
        url: &str,
        accounts: &[&str],
        secret_envs: &[(String, String)],
    ) -> Result<(), ReplayError> {
        let env_of = |account: &str| env_for(secret_envs, account);
        let p = self.profile;
        let o = &mut self.out;
        let _ = writeln!(o, "#!/usr/bin/env bash");
        let _ = writeln!(
            o,
            "# Replays scenario {} (seed {}): {} planned deliveries, with curl.",
            one_line(&plan.scenario),
            plan.seed,
            plan.deliveries.len()
        );
        let _ = writeln!(
            o,
            "# Every request is signed when it is sent, by `hookstorm sign --profile {}`,",
            one_line(&p.name)
        );
        let _ = writeln!(
            o,
            "# from the secrets (comma separated) in these environment variables;"
        );
        let _ = writeln!(o, "# this script and its files hold no secret:");
        for a in accounts {
            let _ = writeln!(o, "#   account {}: {}", one_line(a), env_of(a)?);
        }
        let _ = writeln!(
            o,
            "# HOOKSTORM names the hookstorm binary (default: hookstorm on PATH), REPLAY_URL"
        );
        let _ = writeln!(
            o,
            "# the target ({{account}} is replaced), HOOKSTORM_PROFILE the profile (a built-in"
        );
        let _ = writeln!(
            o,
            "# name or a .toml file). Each line printed is a request and its answer."
        );
        let _ = writeln!(
            o,
            "# Not replayed: each request goes out once, without the retry schedule"
        );
        let _ = writeln!(
            o,
            "# (a replay or fresh-id copy goes out even if the first request was not"
        );
        let _ = writeln!(
            o,
            "# acknowledged), and no process, database or front fault is made."
        );
        let runtime = super::run_time_faults(plan);
        if !runtime.is_empty() {
            let _ = writeln!(
                o,
                "# The run also did: {}; make those by hand to see the same failure.",
                runtime.join(", ")
            );
        }
        let profile_default = if crate::profile::Profile::builtin(&p.name).as_ref() == Some(p) {
            shell_quote(&p.name)
        } else {
            String::new()
        };
        let _ = write!(
            o,
            r#"set -euo pipefail
here=$(cd "$(dirname "${{BASH_SOURCE[0]}}")" && pwd)
hookstorm=${{HOOKSTORM:-hookstorm}}
profile=${{HOOKSTORM_PROFILE:-{profile_default}}}
target=${{REPLAY_URL:-{url}}}
fail() {{ echo "{SCRIPT_NAME}: $*" >&2; exit 2; }}
command -v "$hookstorm" >/dev/null || fail "$hookstorm not found (hint: set HOOKSTORM to the hookstorm binary)"
command -v curl >/dev/null || fail "curl not found (hint: install curl)"
[[ -n $profile ]] || fail "profile {name} is not built in (hint: set HOOKSTORM_PROFILE to its .toml file)"
need() {{ [[ -n ${{!1:-}} ]] || fail "set $1 to the signing secret(s) of account $2 (comma separated)"; }}
"#,
            url = shell_quote(url),
            name = p.name.replace(
                |c: char| !(c.is_ascii_alphanumeric() || "-_.".contains(c)),
                "?"
            ),
        );
        for a in accounts {
            let _ = writeln!(o, "need {} {}", env_of(a)?, shell_quote(a));
        }
        let _ = write!(
            o,
            r#"# sign ARGS... < FILE: the signature headers for FILE's bytes.
sign() {{ "$hookstorm" sign --profile "$profile" --signature-only "$@"; }}
# post LABEL ACCOUNT BODY SIGNATURE HEADER...: one request, and its answer.
post() {{
  local label=$1 account=$2 body=$3 sig=$4 line code
  shift 4
  local args=(-H 'Expect:')
  for line in "$@"; do args+=(-H "$line"); done
  while IFS= read -r line; do [[ -z $line ]] || args+=(-H "$line"); done <<< "$sig"
  code=$(curl -sS -o /dev/null -w '%{{http_code}}' --max-time {CURL_MAX_TIME} -X POST "${{args[@]}}" \
    --data-binary "@$here/$body" "${{target//'{{account}}'/"$account"}}") || code="no answer (curl exit $?)"
  echo "$label: $code"
}}
"#
        );
        Ok(())
    }

    /// The delivery as the profile's provider sends it: its delivery id and body.
    fn as_sent(&self, d: &PlannedDelivery) -> (String, Vec<u8>) {
        let p = self.profile;
        if p.body == BodyShape::Answerline && p.body_template.is_none() {
            return (d.id.clone(), d.bytes.clone());
        }
        let bytes = match &p.body_template {
            Some(t) => envelope::fill_template(t, p.body, &d.body),
            None => envelope::render(p.body, &d.body, d.raw_note),
        };
        (envelope::delivery_id(p.body, &d.id), bytes)
    }

    fn file(&mut self, d: &PlannedDelivery, suffix: &str, bytes: Vec<u8>) -> String {
        let rel = format!("{BODY_DIR}/d{}{suffix}.json", d.index);
        self.files.push((PathBuf::from(&rel), bytes));
        rel
    }

    /// The headers the profile sends besides the signature's.
    fn plain_headers(&self, d: &PlannedDelivery, id: &str, attempt: u32) -> Vec<String> {
        let signed = probe_signature(&self.profile.scheme, id);
        let names: Vec<String> = signed.iter().map(|(k, _)| k.to_ascii_lowercase()).collect();
        crate::sender::request_headers(self.profile, &d.body, id, attempt, &signed)
            .into_iter()
            .filter(|(k, _)| !names.contains(&k.to_ascii_lowercase()))
            .map(|(k, v)| format!("{k}: {v}"))
            .collect()
    }

    fn sign_line(&mut self, var: &str, s: &Signer) {
        let mut args = vec![
            "--secret-env".to_string(),
            s.env.to_string(),
            "--id".to_string(),
            shell_quote(s.id),
        ];
        if let Some(f) = s.forge {
            args.push("--forge".into());
            args.push(f.as_str().into());
        }
        if s.signing != Signing::Current {
            args.push("--signing".into());
            args.push(shell_quote(signing_name(s.signing)));
        }
        let _ = writeln!(
            self.out,
            "{var}=$(sign {} < \"$here/{}\")",
            args.join(" "),
            s.file
        );
    }

    fn post_line(
        &mut self,
        label: &str,
        d: &PlannedDelivery,
        body: &str,
        sig: &str,
        headers: &[String],
        background: bool,
    ) {
        let hs: Vec<String> = headers.iter().map(|h| shell_quote(h)).collect();
        let _ = writeln!(
            self.out,
            "post {} {} {} \"${sig}\" {}{}",
            shell_quote(label),
            shell_quote(&d.account),
            shell_quote(body),
            hs.join(" "),
            if background { " &" } else { "" }
        );
    }

    /// Why the sender would not send this forgery under the profile, if it would not.
    fn skipped(&self, d: &PlannedDelivery, forge: Option<Forgery>) -> Option<String> {
        let p = self.profile;
        let sem = &p.semantics;
        match forge {
            Some(Forgery::FutureTimestamp) if !sem.refuses_future() => {
                return Some(format!(
                    "future-timestamp: under profile {} the provider's own verifier accepts a future timestamp",
                    p.name
                ))
            }
            Some(f @ (Forgery::StaleTimestamp | Forgery::ExpiredReplay))
                if sem.freshness == Freshness::None =>
            {
                return Some(format!(
                    "{}: under profile {} no timestamp is checked",
                    f.as_str(),
                    p.name
                ))
            }
            _ => {}
        }
        let keys = probe_keys();
        tamper::sign(
            &p.scheme,
            &keys,
            SignRequest {
                id: &d.id,
                body: &d.bytes,
                forgery: forge,
                signing: d.signing,
                now: 0,
                tolerance: p.tolerance_secs(),
                max_body: self.max_body,
            },
        )
        .err()
    }

    /// The delivery's first send (its concurrent copies included); false
    /// when it is not sent at all.
    fn first_round(&mut self, d: &PlannedDelivery, env: &str, other_env: Option<&str>) -> bool {
        let (id, bytes) = self.as_sent(d);
        let _ = writeln!(self.out, "\n# d{}: {}", d.index, one_line(&describe(d)));
        // Cross-account: a genuine signature with the other account's secret.
        let (forge, env) = match d.forgery {
            Some(Forgery::CrossAccount) => match other_env {
                Some(o) => (None, o),
                None => {
                    let _ = writeln!(self.out, "# skipped: cross-account needs a second account");
                    return false;
                }
            },
            // Oversized: a genuine signature over a body past the limit.
            Some(Forgery::Oversized) => (None, env),
            f => (f, env),
        };
        if let Some(why) = self.skipped(d, d.forgery.filter(|f| *f != Forgery::CrossAccount)) {
            let _ = writeln!(
                self.out,
                "# skipped, as the run skipped it: {}",
                one_line(&why)
            );
            return false;
        }
        let body = self.file(d, "", bytes.clone());
        let (sent, signed_file) = match d.forgery {
            Some(f @ (Forgery::TamperedBody | Forgery::Oversized)) => {
                let changed = tamper::sign(
                    &self.profile.scheme,
                    &probe_keys(),
                    SignRequest {
                        id: &id,
                        body: &bytes,
                        forgery: Some(f),
                        signing: Signing::Current,
                        now: 0,
                        tolerance: self.profile.tolerance_secs(),
                        max_body: self.max_body,
                    },
                )
                .map(|s| s.body)
                .unwrap_or_default();
                let suffix = if f == Forgery::Oversized {
                    ".oversized"
                } else {
                    ".tampered"
                };
                let changed = self.file(d, suffix, changed);
                // Tampered: sign the real body, send the changed one;
                // oversized: sign and send the big one.
                if f == Forgery::Oversized {
                    (changed.clone(), changed)
                } else {
                    (changed, body.clone())
                }
            }
            _ => (body.clone(), body.clone()),
        };
        let var = format!("sig_d{}", d.index);
        let attempt = d.hold_attempts + 1;
        if d.hold_attempts > 0 {
            let _ = writeln!(
                self.out,
                "# its first {} attempt(s) were held back (not sent) in the run",
                d.hold_attempts
            );
        }
        self.sign_line(
            &var,
            &Signer {
                env,
                id: &id,
                forge: forge.filter(|f| *f != Forgery::TamperedBody),
                signing: d.signing,
                file: &signed_file,
            },
        );
        let headers = self.plain_headers(d, &id, attempt);
        let copies = d.copies.max(1);
        if copies > 1 {
            for k in 1..=copies {
                let label = format!("d{} {id} copy {k}/{copies}", d.index);
                self.post_line(&label, d, &sent, &var, &headers, true);
            }
            let _ = writeln!(self.out, "wait");
        } else {
            let label = format!("d{} {id}", d.index);
            self.post_line(&label, d, &sent, &var, &headers, false);
        }
        true
    }

    /// What follows a delivery's first send: resends after discarded acks,
    /// then its replays, fresh-id copies and redeliveries, in plan order.
    fn after_first(&mut self, d: &PlannedDelivery, env: &str) {
        let (id, _) = self.as_sent(d);
        let body = format!("{BODY_DIR}/d{}.json", d.index);
        let var = format!("sig_d{}", d.index);
        let genuine = Signer {
            env,
            id: &id,
            forge: None,
            signing: d.signing,
            file: &body,
        };
        if d.intent == Intent::Genuine && !d.single_attempt {
            for n in 1..=d.drop_acks {
                let attempt = d.hold_attempts + 1 + n;
                let _ = writeln!(
                    self.out,
                    "# d{}: the run discarded the 2xx and retried (attempt {attempt}), signed afresh",
                    d.index
                );
                self.sign_line(&var, &genuine);
                let headers = self.plain_headers(d, &id, attempt);
                self.post_line(
                    &format!("d{} {id} attempt {attempt}", d.index),
                    d,
                    &body,
                    &var,
                    &headers,
                    false,
                );
            }
        }
        for (r, redelivery) in d.redeliveries.iter().enumerate() {
            let round = r + 1;
            match redelivery {
                Redelivery::Replay => {
                    let _ = writeln!(
                        self.out,
                        "# d{}: the acknowledged request again, byte for byte",
                        d.index
                    );
                    let headers = self.plain_headers(d, &id, 1);
                    self.post_line(
                        &format!("d{} {id} replay", d.index),
                        d,
                        &body,
                        &var,
                        &headers,
                        false,
                    );
                }
                Redelivery::FreshId(new) => {
                    let new = envelope::delivery_id(self.profile.body, new);
                    let _ = writeln!(
                        self.out,
                        "# d{}: the acknowledged request under a fresh delivery id",
                        d.index
                    );
                    let sig = if matches!(self.profile.scheme, Scheme::StandardWebhooks { .. }) {
                        // The id is signed under this scheme: sign again with the new id.
                        let v = format!("sig_d{}_r{round}", d.index);
                        self.sign_line(
                            &v,
                            &Signer {
                                id: &new,
                                ..genuine
                            },
                        );
                        v
                    } else {
                        var.clone()
                    };
                    let headers = self.plain_headers(d, &new, 1);
                    self.post_line(
                        &format!("d{} {new} fresh id", d.index),
                        d,
                        &body,
                        &sig,
                        &headers,
                        false,
                    );
                }
                Redelivery::Redeliver => {
                    let _ = writeln!(
                        self.out,
                        "# d{}: a dashboard redelivery, signed afresh",
                        d.index
                    );
                    let v = format!("sig_d{}_r{round}", d.index);
                    self.sign_line(&v, &genuine);
                    let headers = self.plain_headers(d, &id, 1);
                    self.post_line(
                        &format!("d{} {id} redelivery", d.index),
                        d,
                        &body,
                        &v,
                        &headers,
                        false,
                    );
                }
                Redelivery::ExpiredReplay => {
                    if let Some(why) = self.skipped(d, Some(Forgery::ExpiredReplay)) {
                        let _ = writeln!(
                            self.out,
                            "# d{}: expired replay skipped, as the run skipped it: {}",
                            d.index,
                            one_line(&why)
                        );
                        continue;
                    }
                    let _ = writeln!(
                        self.out,
                        "# d{}: replayed with a timestamp past the tolerance",
                        d.index
                    );
                    let v = format!("sig_d{}_r{round}", d.index);
                    self.sign_line(
                        &v,
                        &Signer {
                            forge: Some(Forgery::ExpiredReplay),
                            signing: Signing::Current,
                            ..genuine
                        },
                    );
                    let headers = self.plain_headers(d, &id, 1);
                    self.post_line(
                        &format!("d{} {id} expired replay", d.index),
                        d,
                        &body,
                        &v,
                        &headers,
                        false,
                    );
                }
            }
        }
    }
}

/// Keys that never sign a real request: only used to learn header names
/// and changed bodies while writing the script.
fn probe_keys() -> Keys {
    let s = |p: &str| tamper::derived_secret(0, &format!("replay-probe:{p}"));
    Keys {
        current: vec![s("current")],
        retired: vec![s("retired")],
        other_account: Some(vec![s("other")]),
        wrong: s("wrong"),
    }
}

/// The scheme's headers for a throwaway secret: their names are what
/// `hookstorm sign --signature-only` prints at run time.
fn probe_signature(scheme: &Scheme, id: &str) -> Vec<(String, String)> {
    let secret: Secret = probe_keys().current.remove(0);
    scheme
        .sign(
            &[secret],
            crate::profile::signature::SignInput {
                id,
                timestamp: 0,
                body: b"{}",
            },
        )
        .unwrap_or_default()
}

/// One line about a delivery for the script's comments.
fn describe(d: &PlannedDelivery) -> String {
    let t = &d.body.task;
    let mut s = format!("{} {}", d.account, t.id);
    if let Some(job) = d.job() {
        let _ = write!(s, " (job {job})");
    }
    let _ = write!(s, " {} created {}", t.status.as_str(), t.created_at);
    match d.intent {
        Intent::Genuine => {}
        other => {
            let _ = write!(s, ", {}", d.detail.as_deref().unwrap_or(intent_word(other)));
        }
    }
    if d.signing != Signing::Current {
        let _ = write!(s, ", signed {}", signing_name(d.signing));
    }
    if d.copies > 1 {
        let _ = write!(s, ", {} concurrent copies", d.copies);
    }
    if d.poison {
        s.push_str(", poison");
    }
    s
}

fn intent_word(i: Intent) -> &'static str {
    match i {
        Intent::Genuine => "genuine",
        Intent::Test => "test delivery",
        Intent::Forged => "forged",
        Intent::CrossAccount => "cross-account",
        Intent::Oversized => "oversized",
        Intent::ExpiredReplay => "expired replay",
    }
}

/// Text safe inside a `#` comment: one line.
fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::delivery::{task_body, TaskStatus};

    fn envs() -> Vec<(String, String)> {
        vec![
            ("acct_a".into(), "SECRETS_A".into()),
            ("acct_b".into(), "SECRETS_B".into()),
        ]
    }

    fn plan() -> Plan {
        Plan {
            scenario: "replay-unit".into(),
            seed: 3,
            accounts: vec!["acct_a".into(), "acct_b".into()],
            faults: Vec::new(),
            deliveries: Vec::new(),
            notes: Vec::new(),
        }
    }

    fn add<'p>(p: &'p mut Plan, account: &str, intent: Intent) -> &'p mut PlannedDelivery {
        let mut rng = p.rng("test-bodies", p.deliveries.len() as u64);
        let b = task_body(
            &mut rng,
            Some("job-1".into()),
            TaskStatus::Completed,
            "2026-11-29T10:00:00Z".into(),
        );
        p.push_new(&mut rng, account, b, intent)
    }

    fn script(p: &Plan, profile: &str) -> ReplayScript {
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
    fn concurrent_copies_go_out_as_background_jobs_released_together_then_waited_for() {
        let mut p = plan();
        add(&mut p, "acct_a", Intent::Genuine).copies = 3;
        add(&mut p, "acct_b", Intent::Genuine);
        let s = script(&p, "answerline").script;
        let lines: Vec<&str> = s.lines().collect();
        let copies: Vec<usize> = (0..lines.len())
            .filter(|&i| lines[i].starts_with("post 'd0 ") && lines[i].ends_with(" &"))
            .collect();
        assert_eq!(copies.len(), 3, "{s}");
        assert_eq!(lines[copies[2] + 1], "wait", "{s}");
        // One signature for the three copies, made before they go out.
        assert_eq!(s.matches("sig_d0=$(sign").count(), 1, "{s}");
        let d1 = s.find("post 'd1 ").unwrap();
        assert!(s.find("wait").unwrap() < d1);
        assert!(!s[d1..].lines().next().unwrap().ends_with('&'));
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
    fn bodies_are_files_with_the_exact_bytes_and_a_tampered_body_is_sent_not_signed() {
        let mut p = plan();
        let d = add(&mut p, "acct_a", Intent::Genuine);
        d.bytes = b"{\"task\":{},\n \"odd\":\"\\u00e9 ' $x `y`\"}".to_vec();
        let exact = d.bytes.clone();
        let t = add(&mut p, "acct_a", Intent::Forged);
        t.forgery = Some(Forgery::TamperedBody);
        let o = add(&mut p, "acct_b", Intent::Oversized);
        o.forgery = Some(Forgery::Oversized);
        let r = script(&p, "answerline");
        let file = |name: &str| {
            r.files
                .iter()
                .find(|(f, _)| f == Path::new(name))
                .map(|(_, b)| b.clone())
                .unwrap_or_else(|| panic!("no {name}"))
        };
        assert_eq!(file("bodies/d0.json"), exact);
        assert_ne!(file("bodies/d1.tampered.json"), file("bodies/d1.json"));
        assert!(file("bodies/d2.oversized.json").len() > 1024);
        let s = &r.script;
        assert!(
            s.contains("sig_d1=$(sign --secret-env SECRETS_A --id whd_"),
            "{s}"
        );
        assert!(s.contains("< \"$here/bodies/d1.json\")"), "{s}");
        assert!(s.contains("bodies/d1.tampered.json \"$sig_d1\""), "{s}");
        assert!(s.contains("< \"$here/bodies/d2.oversized.json\")"), "{s}");
        assert!(s.contains("--data-binary \"@$here/$body\""), "{s}");
    }

    #[test]
    fn forgeries_the_run_would_skip_under_the_profile_are_left_out_with_the_reason() {
        let mut p = plan();
        add(&mut p, "acct_a", Intent::Forged).forgery = Some(Forgery::StaleTimestamp);
        add(&mut p, "acct_a", Intent::Forged).forgery = Some(Forgery::WrongSecret);
        let s = script(&p, "github").script;
        assert!(
            s.contains("# skipped, as the run skipped it: stale-timestamp: under profile github no timestamp is checked"),
            "{s}"
        );
        assert!(!s.contains("post 'd0 "), "{s}");
        assert!(s.contains("--forge wrong-secret"), "{s}");
        // Under answerline the stale timestamp is refused, so it is sent.
        let s = script(&p, "answerline").script;
        assert!(s.contains("--forge stale-timestamp"), "{s}");
    }

    #[test]
    fn redeliveries_follow_the_first_round_and_a_fresh_id_is_signed_again_where_the_id_is_signed() {
        let mut p = plan();
        let d = add(&mut p, "acct_a", Intent::Genuine);
        d.redeliveries = vec![
            Redelivery::Replay,
            Redelivery::FreshId("whd_00000000000000ff".into()),
            Redelivery::Redeliver,
            Redelivery::ExpiredReplay,
        ];
        d.drop_acks = 1;
        add(&mut p, "acct_b", Intent::Genuine);
        let s = script(&p, "standard-webhooks").script;
        let at = |needle: &str| s.find(needle).unwrap_or_else(|| panic!("{needle}:\n{s}"));
        // d1's first request goes before d0's resends: first sends, then the rest.
        assert!(at("post 'd1 ") < at(" attempt 2' "));
        assert!(at(" attempt 2' ") < at(" replay' "));
        assert!(at(" replay' ") < at(" fresh id' "));
        assert!(at(" fresh id' ") < at(" redelivery' "));
        assert!(at(" redelivery' ") < at(" expired replay' "));
        // Standard Webhooks signs the id: the fresh id gets its own signature.
        assert!(s.contains("--id msg_00000000000000ff"), "{s}");
        assert!(s.contains("--forge expired-replay"), "{s}");
        // The replay reuses the acknowledged request's signature.
        let replay = s.lines().find(|l| l.contains(" replay' ")).unwrap();
        assert!(replay.contains("\"$sig_d0\""), "{replay}");
        // Under answerline the fresh id keeps the signature, only the header changes.
        let s = script(&p, "answerline").script;
        let fresh = s.lines().find(|l| l.contains(" fresh id' ")).unwrap();
        assert!(
            fresh.contains("\"$sig_d0\"") && fresh.contains("'Webhook-Id: whd_00000000000000ff'"),
            "{fresh}"
        );
    }

    #[test]
    fn the_same_plan_gives_the_same_script() {
        let mut p = plan();
        add(&mut p, "acct_a", Intent::Genuine).copies = 2;
        add(&mut p, "acct_b", Intent::Test);
        assert_eq!(script(&p, "stripe"), script(&p, "stripe"));
    }
}
