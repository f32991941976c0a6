//! The opening of a replay script: comments saying what it replays, which
//! environment variable holds each account's secrets and what it does not
//! replay; then the checks that stop it early with a clear message (a
//! missing `hookstorm`, curl, profile or secret variable) and the `sign`
//! and `post` shell functions every request line calls.

use std::fmt::Write as _;

use super::comment::one_line;
use super::{env_for, ReplayError, Writer, CURL_MAX_TIME, SCRIPT_NAME};
use crate::lifecycle::shell_quote;
use crate::plan::Plan;

impl Writer<'_> {
    /// Writes the opening of the script that replays `plan` against `url`;
    /// `accounts` are those whose secrets sign something.
    pub(super) fn header(
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
        let runtime = crate::shrink::run_time_faults(plan);
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
}
