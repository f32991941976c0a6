//! `hookstorm init`: writes a commented target file, ready to run.
//!
//! The values come from flags; on a terminal, the ones not given are asked
//! for (URL, profile, accounts, how to read the state), each with its
//! default. Secrets are never written: every account reads its secrets
//! from an environment variable the file names, and the command prints
//! which variables to set. The file is checked with the real target
//! parser before it is written, so what `init` writes is what `run` reads.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;

use hookstorm::exit;

/// Arguments of `hookstorm init`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The receiver URL; `{account}` is replaced by each delivery's account.
    #[arg(long)]
    url: Option<String>,
    /// Sender profile: a built-in name or a .toml file.
    #[arg(long)]
    profile: Option<String>,
    /// An account name (repeatable); its secrets come from HOOKSTORM_SECRETS_<NAME>.
    #[arg(long = "account", value_name = "NAME")]
    accounts: Vec<String>,
    /// Read the state with a GET on this URL (see docs/state.md).
    #[arg(long, conflicts_with_all = ["state_sql", "state_command"])]
    state_http: Option<String>,
    /// Read the state from the receiver's database (postgres:// or sqlite://).
    #[arg(long, conflicts_with = "state_command")]
    state_sql: Option<String>,
    /// Read the state from a program that prints it as JSON.
    #[arg(long)]
    state_command: Option<String>,
    /// Environment variable holding the bearer token of --state-http.
    #[arg(long, default_value = "HOOKSTORM_ADMIN_TOKEN")]
    token_env: String,
    /// The file to write.
    #[arg(long, short, default_value = "hookstorm.toml")]
    out: PathBuf,
    /// Overwrite the file if it exists.
    #[arg(long)]
    force: bool,
    /// Never ask; use defaults for what the flags leave out.
    #[arg(long)]
    no_input: bool,
}

/// How the state is read.
enum State {
    Http(String),
    Sql(String),
    Command(String),
}

/// The default receiver URL.
const DEFAULT_URL: &str = "http://127.0.0.1:8080/webhooks/{account}";
/// The default state URL (the reference receiver's admin API).
const DEFAULT_STATE: &str = "http://127.0.0.1:8081/state";

/// The environment variable an account's secrets are read from.
pub fn secrets_var(account: &str) -> String {
    hookstorm::target::default_secrets_var(account)
}

fn ask(question: &str, default: &str) -> anyhow::Result<String> {
    eprint!("{question} [{default}]: ");
    std::io::stderr().flush()?;
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    let line = line.trim();
    Ok(if line.is_empty() {
        default.to_string()
    } else {
        line.to_string()
    })
}

fn quote(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// Writes the target file and returns the exit code.
pub fn run(mut args: Args) -> anyhow::Result<i32> {
    if args.out.exists() && !args.force {
        return Ok(super::usage_error(format!(
            "{} exists (hint: --force overwrites it, --out writes another file)",
            args.out.display()
        )));
    }
    let interactive = !args.no_input && std::io::stdin().is_terminal();
    let state_given =
        args.state_http.is_some() || args.state_sql.is_some() || args.state_command.is_some();
    if interactive {
        if args.url.is_none() {
            args.url = Some(ask("receiver URL", DEFAULT_URL)?);
        }
        if args.profile.is_none() {
            args.profile = Some(ask(
                &format!(
                    "sender profile ({}, or a .toml)",
                    hookstorm::profile::BUILTIN_NAMES.join(", ")
                ),
                hookstorm::profile::DEFAULT_PROFILE,
            )?);
        }
        if args.accounts.is_empty() {
            let list = ask("accounts, comma separated", "acct_a,acct_b")?;
            args.accounts = list
                .split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect();
        }
        if !state_given {
            match ask("read the state with (http, sql, command)", "http")?.as_str() {
                "sql" => {
                    args.state_sql = Some(ask("database URL", "postgres://app@127.0.0.1:5432/app")?)
                }
                "command" => args.state_command = Some(ask("command", "./scripts/dump-state.sh")?),
                _ => args.state_http = Some(ask("state URL", DEFAULT_STATE)?),
            }
        }
    }
    let url = args.url.unwrap_or_else(|| DEFAULT_URL.to_string());
    let profile = args
        .profile
        .unwrap_or_else(|| hookstorm::profile::DEFAULT_PROFILE.to_string());
    let accounts = if args.accounts.is_empty() {
        vec!["acct_a".to_string(), "acct_b".to_string()]
    } else {
        args.accounts
    };
    if accounts.len() > 1 && !url.contains("{account}") {
        return Ok(super::usage_error(format!(
            "{url}: {} accounts but no {{account}} in the URL (hint: like https://host/webhooks/{{account}}, or one --account)",
            accounts.len()
        )));
    }
    let state = match (args.state_http, args.state_sql, args.state_command) {
        (Some(h), _, _) => State::Http(h),
        (_, Some(s), _) => State::Sql(s),
        (_, _, Some(c)) => State::Command(c),
        _ => State::Http(DEFAULT_STATE.to_string()),
    };
    let text = render(&url, &profile, &accounts, &state, &args.token_env);
    // What init writes, run reads: parse it with the target file's own type.
    if let Err(e) = toml::from_str::<hookstorm::target::TargetFile>(&text) {
        errln!("error: the target file would not parse: {e}");
        return Ok(exit::USAGE);
    }
    if let Err(m) = hookstorm::target::check_url(&url, None) {
        return Ok(super::usage_error(m));
    }
    if let Err(e) = hookstorm::profile::Profile::resolve(&profile) {
        return Ok(super::usage_error(e));
    }
    std::fs::write(&args.out, &text).map_err(|e| anyhow::anyhow!("{}: {e}", args.out.display()))?;
    outln!("wrote {}", args.out.display());
    outln!("set the secrets, then run it:");
    for a in &accounts {
        outln!(
            "  export {}=...   # {a}'s signing secret(s), comma separated, current first",
            secrets_var(a)
        );
    }
    if matches!(state, State::Http(_)) {
        outln!(
            "  export {}=...   # the state endpoint's bearer token",
            args.token_env
        );
    }
    outln!("  hookstorm doctor --target {}", args.out.display());
    outln!("  hookstorm run --target {}", args.out.display());
    Ok(exit::PASS)
}

/// The commented target file.
fn render(url: &str, profile: &str, accounts: &[String], state: &State, token_env: &str) -> String {
    let mut s = String::new();
    s.push_str("# hookstorm target file: which receiver to test and how to read its state.\n");
    s.push_str("# Written by `hookstorm init`. Check it with `hookstorm doctor --target FILE`,\n");
    s.push_str("# run it with `hookstorm run --target FILE`. Every key is in docs/target.md.\n\n");
    s.push_str("# The receiver URL. `{account}` is replaced by each delivery's account.\n");
    s.push_str(&format!("url = {}\n\n", quote(url)));
    s.push_str("# Sender profile: one of `hookstorm list --profiles`, or the path of a\n");
    s.push_str("# custom .toml profile (docs/profiles.md). Built in:\n");
    let mut line = String::from("#");
    for name in hookstorm::profile::BUILTIN_NAMES {
        if line.len() + name.len() + 2 > 76 {
            s.push_str(&line);
            s.push('\n');
            line = String::from("#");
        }
        line.push(' ');
        line.push_str(name);
    }
    s.push_str(&line);
    s.push('\n');
    s.push_str(&format!("profile = {}\n", quote(profile)));
    if hookstorm::profile::Profile::builtin(profile).is_some_and(|p| p.scheme.is_asymmetric()) {
        s.push_str("# This profile signs with a key pair made from each account's secret:\n");
        s.push_str("# give the receiver the public key that\n");
        s.push_str(&format!(
            "#   hookstorm sign --profile {profile} --secret-env VAR --public-key\n"
        ));
        s.push_str("# prints (VAR: the account's secrets_env below).\n");
    }
    s.push('\n');
    s.push_str("# Real senders refuse non-https URLs; loopback is always allowed.\n");
    s.push_str("# allow_insecure = true\n\n");
    s.push_str("# One table per account; secrets come from the environment (comma\n");
    s.push_str("# separated, current first), never from this file.\n");
    for a in accounts {
        let key = if a
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            a.clone()
        } else {
            quote(a)
        };
        s.push_str(&format!(
            "[accounts.{key}]\nsecrets_env = {}\n\n",
            quote(&secrets_var(a))
        ));
    }
    s.push_str("# How hookstorm reads the receiver's state after each scenario\n");
    s.push_str("# (docs/state.md): exactly one of `http`, `sql` or `command`.\n");
    s.push_str("[state]\n");
    match state {
        State::Http(u) => {
            s.push_str("# A GET returning the state JSON; reset, setup and reconcile default to\n");
            s.push_str("# sibling paths of this URL (docs/hooks.md).\n");
            s.push_str(&format!("http = {}\n", quote(u)));
            s.push_str(&format!("token_env = {}\n", quote(token_env)));
            s.push_str("# reset = \"http://127.0.0.1:8081/reset\"\n");
        }
        State::Sql(u) => {
            s.push_str("# Read the receiver's own database; the default queries match the\n");
            s.push_str(
                "# default schema of docs/state.md (webhook_inbox, answers). Override any.\n",
            );
            s.push_str("[state.sql]\n");
            s.push_str(&format!("url = {}\n", quote(u)));
            s.push_str("# inbox = \"select task_id as key, account, processed_at is not null as processed, error from webhook_inbox\"\n");
            s.push_str("# reset = [\"delete from webhook_inbox\", \"delete from answers\"]\n");
        }
        State::Command(c) => {
            s.push_str("# A program that prints the state JSON.\n");
            s.push_str(&format!("command = {}\n", quote(c)));
        }
    }
    s.push_str("\n# Optional sections, each unlocking scenarios that are skipped without it\n");
    s.push_str("# (`hookstorm doctor` lists them): [lifecycle] (start, kill and restart the\n");
    s.push_str("# receiver), [lifecycle.worker], [database] (cut its database), [provider]\n");
    s.push_str("# (the provider API a reconciliation job calls), [scenarios] (only, skip,\n");
    s.push_str("# tags). See docs/target.md and hookstorm.example.toml.\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_state_kind_renders_a_file_the_target_parser_reads() {
        let accounts = vec!["acct_a".to_string(), "team.b".to_string()];
        for state in [
            State::Http(DEFAULT_STATE.into()),
            State::Sql("postgres://app@127.0.0.1:5432/app".into()),
            State::Command("./dump \"state\".sh".into()),
        ] {
            let text = render(DEFAULT_URL, "stripe", &accounts, &state, "TOKEN");
            let file: hookstorm::target::TargetFile = toml::from_str(&text).unwrap();
            assert_eq!(file.url, DEFAULT_URL);
            assert_eq!(file.accounts.len(), 2);
            assert!(file.accounts.contains_key("team.b"), "{text}");
        }
    }

    #[test]
    fn secrets_variables_are_shell_names() {
        assert_eq!(secrets_var("acct_a"), "HOOKSTORM_SECRETS_ACCT_A");
        assert_eq!(secrets_var("team.b-1"), "HOOKSTORM_SECRETS_TEAM_B_1");
    }
}
