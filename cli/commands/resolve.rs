//! What a run, a doctor or a shrink acts on, resolved from the command
//! line: the target the flags name, or the built-in reference receiver as
//! a child process (with the flags that configure it, one definition the
//! three commands flatten in); and the default time scale.

use anyhow::Context;
use hookstorm::exit;
use hookstorm::target::Target;
use hookstorm_receiver::Defect;

use super::target_flags::TargetFlags;

/// The time scale of scenarios that set none, before the profile's factor
/// ([`hookstorm::profile::Profile::time_scale`]).
pub(crate) const DEFAULT_TIME_SCALE: f64 = 100.0;

/// The target of a run (or a shrink): the one the flags name, or the
/// built-in reference receiver as a child process.
pub(crate) struct Built {
    /// The target.
    pub target: Target,
    /// The built-in receiver's processes, kept until the command ends.
    pub child: Option<hookstorm_cli::builtin::ChildTarget>,
    /// The command that reproduces this target, starting with `command`.
    pub reproduce: String,
}

/// The flags of the built-in reference receiver, tested when no target is
/// given.
#[derive(Debug, Clone, Default, clap::Args)]
#[command(next_help_heading = "Built-in receiver")]
pub(crate) struct BuiltinFlags {
    /// Built-in receiver only: switch on one deliberate bug, to watch the
    /// scenario that exposes it fail.
    #[arg(long, value_enum, value_name = "DEFECT")]
    pub defect: Option<Defect>,
    /// Built-in receiver only: its database (default: SQLite in a temp folder).
    #[arg(long, value_name = "URL")]
    pub receiver_db: Option<String>,
}

impl BuiltinFlags {
    /// The usage error when these are given with a target that replaces
    /// the built-in receiver.
    pub fn conflict(&self, target: &TargetFlags) -> Option<String> {
        let flag = match (target.given(), &self.defect, &self.receiver_db) {
            (false, _, _) => return None,
            (true, Some(_), _) => "--defect",
            (true, None, Some(_)) => "--receiver-db",
            (true, None, None) => return None,
        };
        Some(format!(
            "{flag} configures the built-in reference receiver, which --target/--url replace (hint: drop {flag}, or drop --target and --url to test the built-in receiver)"
        ))
    }
}

/// Resolves the target of `command`; `Ok(Err(code))` is an error already
/// printed, with its exit code.
pub(crate) fn build_target(
    flags: &TargetFlags,
    builtin: &BuiltinFlags,
    command: &str,
) -> anyhow::Result<Result<Built, i32>> {
    if let Some(e) = builtin.conflict(flags) {
        return Ok(Err(super::usage_error(e)));
    }
    let (defect, receiver_db) = (builtin.defect, builtin.receiver_db.as_deref());
    let mut reproduce = String::from(command);
    let mut child = None;
    let target: Target = match flags.given() {
        true => {
            if let Err(e) = flags.check() {
                return Ok(Err(super::usage_error(e)));
            }
            reproduce.push_str(&flags.reproduce());
            let t = match flags.resolve() {
                Ok(t) => t,
                Err(e) => {
                    errln!("error: {e}");
                    return Ok(Err(exit::TARGET_UNUSABLE));
                }
            };
            if t.secrets.len() > 1 && !t.url.contains("{account}") {
                return Ok(Err(super::usage_error(format!(
                    "the receiver URL {} has no {{account}} but {} accounts are configured ({}): every account's deliveries would go to one URL (hint: put {{account}} in the URL, like https://host/webhooks/{{account}}, or configure one account)",
                    t.describe(),
                    t.secrets.len(),
                    t.accounts().join(", ")
                ))));
            }
            t
        }
        false => {
            if let Some(d) = defect {
                reproduce.push_str(&format!(" --defect {d}"));
            }
            // The child receiver verifies and reads the default profile's deliveries.
            let profile = match &flags.profile {
                Some(name) => {
                    match builtin_profile(name, &hookstorm::profile::Profile::default_profile()) {
                        Ok(p) => {
                            reproduce.push_str(&format!(" --profile {name}"));
                            Some(p)
                        }
                        Err(e) => return Ok(Err(super::usage_error(e))),
                    }
                }
                None => None,
            };
            let mut copts = hookstorm_cli::builtin::ChildOptions::new("{hookstorm} receiver");
            copts.defect = defect;
            copts.db = receiver_db.map(str::to_string);
            let prepared = hookstorm_cli::builtin::prepare(&copts)
                .context("preparing the built-in reference receiver")?;
            info!(
                "built-in reference receiver{} as a child process on {} ({})",
                defect
                    .map(|d| format!(" with defect {d}"))
                    .unwrap_or_default(),
                hookstorm::target::redact_url(&prepared.target.url),
                if receiver_db.is_some() {
                    "the given database"
                } else {
                    "SQLite in a temp folder"
                }
            );
            let mut target = prepared.target.clone();
            child = Some(prepared);
            if let Some(p) = profile {
                target.profile = p;
            }
            target
        }
    };
    Ok(Ok(Built {
        target,
        child,
        reproduce,
    }))
}

/// `--profile` for the built-in receiver, which reads answerline bodies
/// signed the answerline's way (`receiver`, its own profile): a profile
/// that only plays another schedule or timeout is taken, one whose
/// deliveries it could not read or verify is refused with what to do.
fn builtin_profile(
    name: &str,
    receiver: &hookstorm::profile::Profile,
) -> Result<hookstorm::profile::Profile, String> {
    let p = hookstorm::profile::Profile::resolve(name).map_err(|e| format!("--profile {e}"))?;
    let readable = p.body == receiver.body
        && p.body_template.is_none()
        && p.semantics == receiver.semantics
        && p.scheme == receiver.scheme
        && p.tolerance == receiver.tolerance;
    if readable {
        Ok(p)
    } else {
        Err(format!(
            "--profile {name}: the built-in reference receiver reads answerline deliveries only, and {} sends its own provider's (hint: test a {} receiver with --target or --url; to play another provider's schedule against the built-in receiver, give a profile file with extends = \"answerline\" and that [schedule])",
            p.name, p.name
        ))
    }
}
