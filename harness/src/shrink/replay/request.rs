//! The lines of one request in a replay script: the delivery as the
//! profile's provider sends it, its body file, the headers besides the
//! signature's, the `sign` line that makes the signature at run time, the
//! `post` line; and why the sender would skip a forgery under the profile.
//! Header names and changed bodies are learnt from keys that never sign a
//! real request.

use std::fmt::Write as _;
use std::path::PathBuf;

use super::{Writer, BODY_DIR};
use crate::fault::tamper::{self, Keys, SignRequest};
use crate::fault_spec::{Forgery, Signing};
use crate::lifecycle::shell_quote;
use crate::plan::{signing_name, PlannedDelivery};
use crate::profile::envelope;
use crate::profile::signature::{Scheme, Secret};
use crate::profile::{BodyShape, Freshness};

/// How one request is signed at run time.
pub(super) struct Signer<'a> {
    pub(super) env: &'a str,
    /// The account the request goes to (its URL is signed by some schemes).
    pub(super) account: &'a str,
    pub(super) id: &'a str,
    pub(super) forge: Option<Forgery>,
    pub(super) signing: Signing,
    /// The file whose bytes are signed (the body, except for a tampered one).
    pub(super) file: &'a str,
}

impl Writer<'_> {
    /// The delivery as the profile's provider sends it: its delivery id and body.
    pub(super) fn as_sent(&self, d: &PlannedDelivery) -> (String, Vec<u8>) {
        let p = self.profile;
        if p.body == BodyShape::Answerline && p.body_template.is_none() {
            return (d.id.clone(), d.bytes.clone());
        }
        (
            envelope::delivery_id(p.body, &d.id),
            p.render(&d.body, d.raw_note),
        )
    }

    pub(super) fn file(&mut self, d: &PlannedDelivery, suffix: &str, bytes: Vec<u8>) -> String {
        let rel = format!("{BODY_DIR}/d{}{suffix}.json", d.index);
        self.files.push((PathBuf::from(&rel), bytes));
        rel
    }

    /// The headers the profile sends besides the signature's.
    pub(super) fn plain_headers(&self, d: &PlannedDelivery, id: &str, attempt: u32) -> Vec<String> {
        let signed = probe_signature(&self.profile.scheme, id);
        let names: Vec<String> = signed.iter().map(|(k, _)| k.to_ascii_lowercase()).collect();
        crate::sender::request_headers(self.profile, &d.body, id, attempt, &signed)
            .into_iter()
            .filter(|(k, _)| !names.contains(&k.to_ascii_lowercase()))
            .map(|(k, v)| format!("{k}: {v}"))
            .collect()
    }

    pub(super) fn sign_line(&mut self, var: &str, s: &Signer) {
        let mut args = vec![
            "--secret-env".to_string(),
            s.env.to_string(),
            "--id".to_string(),
            shell_quote(s.id),
        ];
        if self.profile.scheme.signs_url() {
            args.push("--url".into());
            args.push(format!(
                "\"${{target//'{{account}}'/{}}}\"",
                shell_quote(s.account)
            ));
        }
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

    pub(super) fn post_line(
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
    pub(super) fn skipped(&self, d: &PlannedDelivery, forge: Option<Forgery>) -> Option<String> {
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
                url: "",
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
}

/// Keys that never sign a real request: only used to learn header names
/// and changed bodies while writing the script.
pub(super) fn probe_keys() -> Keys {
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
                url: "",
            },
        )
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::super::tests::{add, plan, script};
    use crate::fault_spec::Forgery;
    use crate::history::Intent;

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
}
