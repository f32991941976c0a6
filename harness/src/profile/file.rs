//! A custom profile file: a built-in to start from (`extends`) and what
//! differs, read with `deny_unknown_fields` and checked key by key, so a
//! mistake names its file and what was expected.

use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

use super::{
    BodyShape, Freshness, Identity, Profile, Semantics, StatusRange, BUILTIN_NAMES, DEFAULT_PROFILE,
};
use crate::error::ConfigError;
use crate::profile::schedule::{Jitter, Waits};
use crate::profile::signature::Scheme;
use crate::text::units::HumanDuration;

/// The `[schedule]` table of a custom profile.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScheduleFile {
    max_attempts: Option<u32>,
    /// Explicit waits (before attempt 2, 3, …).
    waits: Option<Vec<HumanDuration>>,
    base: Option<HumanDuration>,
    factor: Option<f64>,
    cap: Option<HumanDuration>,
    /// `none`, `shorten-up-to-half`, `full`, or `plus-minus`.
    jitter: Option<String>,
    /// The fraction for `plus-minus`.
    jitter_fraction: Option<f64>,
}

/// A custom profile file: a built-in to start from and what differs.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ProfileFile {
    name: String,
    #[serde(default)]
    extends: Option<String>,
    timeout: Option<HumanDuration>,
    connect_timeout: Option<HumanDuration>,
    tolerance: Option<HumanDuration>,
    success: Option<Vec<StatusRange>>,
    give_up_on: Option<Vec<StatusRange>>,
    id_header: Option<String>,
    event_header: Option<String>,
    schedule: Option<ScheduleFile>,
    signature: Option<Scheme>,
    /// The body envelope: a built-in shape's name.
    body: Option<BodyShape>,
    /// A JSON file with `{{placeholders}}`, relative to this file: the body.
    body_template: Option<std::path::PathBuf>,
    /// What an event is, where it differs from the body shape's rules.
    semantics: Option<SemanticsFile>,
    /// `bytes` (default) or `json`: what a sender keeps of each body.
    body_fidelity: Option<super::BodyFidelity>,
    /// What a sender does beyond its schedule.
    sender: Option<SenderFile>,
    /// The body template itself, in the file (instead of `body_template`).
    template: Option<String>,
    /// `json` (default) or `form`.
    body_format: Option<super::BodyFormat>,
    /// Headers sent on every request, as they are.
    headers: Option<std::collections::BTreeMap<String, String>>,
    /// The provider, its docs, its verifier, its handshake, the choices
    /// made where its docs are silent.
    about: Option<super::About>,
    /// The verification handshake, sent as the test delivery.
    handshake: Option<super::handshake::Handshake>,
}

/// The `[sender]` table of a profile: a sender's timing in its vendor's words.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SenderFile {
    /// `60s`: the least wait after a timeout.
    min_wait_after_timeout: Option<HumanDuration>,
    /// `honoured` (default), `capped` or `not-promised`.
    retry_after: Option<String>,
    /// With `capped`: at most this many times the scheduled wait.
    retry_after_cap: Option<f64>,
    /// `1s`: the resolution of the sender's timers.
    timer_resolution: Option<HumanDuration>,
    /// `10ms`: a re-send this soon after a reset is the same attempt.
    resend_after_reset: Option<HumanDuration>,
}

impl SenderFile {
    fn into_timing(self, path: &Path) -> Result<super::SenderTiming, ConfigError> {
        use super::RetryAfter;
        let retry_after = match (self.retry_after.as_deref(), self.retry_after_cap) {
            (None | Some("honoured"), None) => RetryAfter::Honoured,
            (Some("capped"), Some(f)) if f > 0.0 && f.is_finite() => RetryAfter::Capped(f),
            (Some("capped"), _) => {
                return Err(ConfigError::invalid(
                    path,
                    "[sender] retry_after = \"capped\" needs retry_after_cap, a positive factor of the scheduled wait (hint: retry_after_cap = 2.0)",
                ))
            }
            (Some("not-promised"), None) => RetryAfter::NotPromised,
            (_, Some(_)) => {
                return Err(ConfigError::invalid(
                    path,
                    "[sender] retry_after_cap goes with retry_after = \"capped\" only",
                ))
            }
            (Some(other), None) => {
                return Err(ConfigError::invalid(
                    path,
                    format!("[sender] retry_after = {other:?} (hint: honoured, capped or not-promised)"),
                ))
            }
        };
        Ok(super::SenderTiming {
            min_wait_after_timeout: self.min_wait_after_timeout.map(|d| d.0),
            retry_after,
            timer_resolution: self.timer_resolution.map(|d| d.0),
            resend_after_reset: self.resend_after_reset.map(|d| d.0),
        })
    }
}

/// The `[semantics]` table of a custom profile: where identity, object
/// and order live, and which timestamps the provider's verifier refuses.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SemanticsFile {
    /// `task-id`, `delivery-id`, `header:<name>` or `body:<json pointer>`.
    identity: Option<String>,
    /// `both`, `past-only` or `none`.
    freshness: Option<Freshness>,
    /// A JSON pointer to the object an update is about.
    object: Option<String>,
    /// A JSON pointer to the field that orders two updates.
    order: Option<String>,
}

fn parse_identity(s: &str) -> Option<Identity> {
    match s.trim() {
        "task-id" => Some(Identity::TaskId),
        "delivery-id" => Some(Identity::DeliveryId),
        other => {
            if let Some(h) = other.strip_prefix("header:") {
                let h = h.trim();
                (!h.is_empty()).then(|| Identity::Header(h.to_string()))
            } else if let Some(p) = other.strip_prefix("body:") {
                let p = p.trim();
                p.starts_with('/').then(|| Identity::Body(p.to_string()))
            } else {
                None
            }
        }
    }
}

impl ProfileFile {
    pub(super) fn into_profile(self, path: &Path) -> Result<Profile, ConfigError> {
        let base_name = self.extends.as_deref().unwrap_or(DEFAULT_PROFILE);
        let mut p = Profile::builtin(base_name).ok_or_else(|| {
            ConfigError::invalid(
                path,
                format!(
                    "extends = {base_name:?} is not a built-in profile (hint: {})",
                    crate::text::suggest::hint(base_name, BUILTIN_NAMES)
                ),
            )
        })?;
        p.name = self.name;
        if let Some(t) = self.timeout {
            p.timeout = t.0;
        }
        if let Some(t) = self.connect_timeout {
            p.connect_timeout = Some(t.0);
        }
        if let Some(t) = self.tolerance {
            p.tolerance = Some(t.0);
        }
        if let Some(s) = self.success {
            p.success = s;
        }
        if let Some(g) = self.give_up_on {
            p.give_up_on = g;
        }
        // An empty header name takes the base's header away.
        if let Some(h) = self.id_header {
            p.id_header = (!h.is_empty()).then_some(h);
        }
        if let Some(h) = self.event_header {
            p.event_header = (!h.is_empty()).then_some(h);
        }
        if p.tolerance.is_some_and(|t| t.is_zero()) {
            // `tolerance = "0s"`: no replay window.
            p.tolerance = None;
        }
        if let Some(f) = self.body_format {
            p.body_format = f;
        }
        if let Some(h) = self.headers {
            p.headers = h.into_iter().collect();
        }
        if let Some(a) = self.about {
            p.about = a;
        }
        if let Some(h) = self.handshake {
            crate::profile::envelope::check_template(&h.template)
                .map_err(|e| ConfigError::invalid(path, format!("[handshake] template: {e}")))?;
            p.handshake = Some(h);
        }
        if let Some(s) = self.signature {
            if let Scheme::Template(t) = &s {
                crate::profile::signature::template::check(t)
                    .map_err(|e| ConfigError::invalid(path, format!("[signature] {e}")))?;
            }
            p.scheme = s;
        }
        if let Some(f) = self.body_fidelity {
            p.body_fidelity = f;
        }
        if let Some(t) = self.sender {
            p.sender = t.into_timing(path)?;
        }
        if let Some(b) = self.body {
            p.body = b;
            p.semantics = Semantics::of(b);
        }
        if self.template.is_some() && self.body_template.is_some() {
            return Err(ConfigError::invalid(
                path,
                "give the body as `template` or as `body_template`, not both",
            ));
        }
        if let Some(text) = self.template {
            crate::profile::envelope::check_template(&text)
                .map_err(|e| ConfigError::invalid(path, format!("template: {e}")))?;
            p.body_template = Some(text);
        }
        if let Some(t) = self.body_template {
            let file = path.parent().unwrap_or(Path::new(".")).join(&t);
            let text = crate::limits::budget::read_text(&file, crate::limits::budget::CONFIG_FILE)
                .map_err(|e| {
                    ConfigError::invalid(path, format!("body_template {}: {e}", file.display()))
                })?;
            crate::profile::envelope::check_template(&text).map_err(|e| {
                ConfigError::invalid(path, format!("body_template {}: {e}", file.display()))
            })?;
            p.body_template = Some(text);
        }
        if let Some(sem) = self.semantics {
            apply_semantics(&mut p, sem, path)?;
        }
        if let Some(s) = self.schedule {
            apply_schedule(&mut p, s, path)?;
        }
        if p.schedule.max_attempts == 0 || p.schedule.max_attempts > 1000 {
            return Err(ConfigError::invalid(
                path,
                "max_attempts must be between 1 and 1000",
            ));
        }
        if p.timeout.is_zero() {
            return Err(ConfigError::invalid(path, "timeout must be more than 0s"));
        }
        Ok(p)
    }
}

/// A profile file's `[semantics]` over its base's.
fn apply_semantics(p: &mut Profile, sem: SemanticsFile, path: &Path) -> Result<(), ConfigError> {
    if let Some(id) = sem.identity {
        p.semantics.identity = parse_identity(&id).ok_or_else(|| {
            ConfigError::invalid(
                path,
                format!("[semantics] identity = {id:?}: expected task-id, delivery-id, header:<name> or body:<json pointer>"),
            )
        })?;
    }
    if let Some(f) = sem.freshness {
        p.semantics.freshness = f;
    }
    for (name, value, slot) in [
        ("object", sem.object, &mut p.semantics.object),
        ("order", sem.order, &mut p.semantics.order),
    ] {
        if let Some(v) = value {
            if !v.starts_with('/') {
                return Err(ConfigError::invalid(
                    path,
                    format!(
                        "[semantics] {name} = {v:?}: expected a JSON pointer such as \"/data/id\""
                    ),
                ));
            }
            *slot = Some(v);
        }
    }
    Ok(())
}

/// A profile file's `[schedule]` over its base's.
fn apply_schedule(p: &mut Profile, s: ScheduleFile, path: &Path) -> Result<(), ConfigError> {
    if s.waits.is_some() && (s.base.is_some() || s.factor.is_some()) {
        return Err(ConfigError::invalid(
            path,
            "[schedule] takes either `waits` or `base`/`factor`/`cap`, not both",
        ));
    }
    if let Some(waits) = s.waits {
        let waits: Vec<Duration> = waits.into_iter().map(|w| w.0).collect();
        p.schedule.max_attempts = s.max_attempts.unwrap_or(waits.len() as u32 + 1);
        p.schedule.waits = Waits::List(waits);
    } else if s.base.is_some() || s.factor.is_some() || s.cap.is_some() {
        let (b0, f0, c0) = match &p.schedule.waits {
            Waits::Exponential { base, factor, cap } => (*base, *factor, *cap),
            Waits::List(_) => (Duration::from_secs(5), 2.0, None),
        };
        p.schedule.waits = Waits::Exponential {
            base: s.base.map(|b| b.0).unwrap_or(b0),
            factor: s.factor.unwrap_or(f0),
            cap: s.cap.map(|c| c.0).or(c0),
        };
    }
    if let Some(n) = s.max_attempts {
        p.schedule.max_attempts = n;
    }
    if let Some(j) = s.jitter {
        p.schedule.jitter = match j.as_str() {
            "none" => Jitter::None,
            "shorten-up-to-half" => Jitter::ShortenUpToHalf,
            "full" => Jitter::Full,
            "plus-minus" => Jitter::PlusMinus(s.jitter_fraction.unwrap_or(0.1)),
            other => {
                return Err(ConfigError::invalid(
                    path,
                    format!(
                        "jitter = {other:?}: expected none, shorten-up-to-half, full or plus-minus"
                    ),
                ))
            }
        };
    }
    Ok(())
}
