//! A delivery's requests in a replay script, in the order the run sent
//! them: its first send (the concurrent copies as background jobs released
//! together and waited for; a forgery signed, tampered or swapped as the
//! sender does it), then the resends after discarded acks, and its
//! replays, fresh-id copies and redeliveries.

use std::fmt::Write as _;

use super::comment::{describe, one_line};
use super::request::{probe_keys, Signer};
use super::{Writer, BODY_DIR};
use crate::fault::tamper::{self, SignRequest};
use crate::fault_spec::{Forgery, Signing};
use crate::history::Intent;
use crate::plan::{PlannedDelivery, Redelivery};
use crate::profile::envelope;
use crate::profile::signature::Scheme;

impl Writer<'_> {
    /// The delivery's first send (its concurrent copies included); false
    /// when it is not sent at all.
    pub(super) fn first_round(
        &mut self,
        d: &PlannedDelivery,
        env: &str,
        other_env: Option<&str>,
    ) -> bool {
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
                        url: "",
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
                "# its first {} {} held back (not sent) in the run",
                crate::text::words::count(d.hold_attempts, "attempt"),
                crate::text::words::agree(d.hold_attempts, "was")
            );
        }
        self.sign_line(
            &var,
            &Signer {
                env,
                account: &d.account,
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
    pub(super) fn after_first(&mut self, d: &PlannedDelivery, env: &str) {
        let (id, _) = self.as_sent(d);
        let body = format!("{BODY_DIR}/d{}.json", d.index);
        let var = format!("sig_d{}", d.index);
        let genuine = Signer {
            env,
            account: &d.account,
            id: &id,
            forge: None,
            signing: d.signing,
            file: &body,
        };
        if d.intent == Intent::Genuine && !d.single_attempt {
            self.resends(d, &id, &genuine, &body, &var);
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
                Redelivery::FreshId(new) => self.fresh_id(d, new, round, &genuine, &body, &var),
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

    /// The resends after acknowledgements the run discarded, each signed
    /// afresh.
    fn resends(&mut self, d: &PlannedDelivery, id: &str, genuine: &Signer, body: &str, var: &str) {
        for n in 1..=d.drop_acks {
            let attempt = d.hold_attempts + 1 + n;
            let _ = writeln!(
                self.out,
                "# d{}: the run discarded the 2xx and retried (attempt {attempt}), signed afresh",
                d.index
            );
            self.sign_line(var, genuine);
            let headers = self.plain_headers(d, id, attempt);
            self.post_line(
                &format!("d{} {id} attempt {attempt}", d.index),
                d,
                body,
                var,
                &headers,
                false,
            );
        }
    }

    /// Redelivery `round` of `d`: the acknowledged request under the fresh
    /// delivery id `new` (signed again where the scheme signs the id).
    fn fresh_id(
        &mut self,
        d: &PlannedDelivery,
        new: &str,
        round: usize,
        genuine: &Signer,
        body: &str,
        var: &str,
    ) {
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
                    ..*genuine
                },
            );
            v
        } else {
            var.to_string()
        };
        let headers = self.plain_headers(d, &new, 1);
        self.post_line(
            &format!("d{} {new} fresh id", d.index),
            d,
            body,
            &sig,
            &headers,
            false,
        );
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::super::tests::{add, plan, script};
    use crate::fault_spec::Forgery;
    use crate::history::Intent;
    use crate::plan::Redelivery;

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
}
