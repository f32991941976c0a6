//! Notes: what a scenario's run says beyond its verdicts, as typed events.
//!
//! The run and its faults record what happened as a [`Note`] (a count, a
//! duration, what a fault did); the reporters put it into words through
//! its `Display`, which is the one place each sentence is written. A note
//! is compared by what it says, and a report file keeps the words
//! (`report.json` stays a list of strings): a note read back from a file
//! is [`Note::Said`], which every reporter shows as it was written.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::check::Verdict;
use crate::fault::front::FrontCounts;
use crate::fault::nemesis::{Actions, KillTally};
use crate::fault::reconcile::Reconciliation;
use crate::text::units::format_duration;
use crate::text::words::{agree, count};

/// One thing a scenario's run says beyond its verdicts.
#[derive(Debug, Clone)]
pub enum Note {
    /// Why the scenario was not run, or was cut short.
    Reason(String),
    /// The state's reset hook failed.
    ResetFailed {
        /// What it answered.
        error: String,
    },
    /// Rows of keys an earlier scenario sent turned up in this one's state.
    EarlierRows {
        /// How many.
        rows: usize,
    },
    /// The state stopped changing before every acknowledged key was in it.
    ReadAsItWas {
        /// How long it was still.
        still_for: Duration,
        /// Acknowledged keys not in the inbox.
        missing: usize,
    },
    /// The state did not settle within the drain time.
    NotSettled {
        /// The drain time.
        drain: Duration,
    },
    /// What the scenario's faults met nothing of.
    NotExercised {
        /// Why.
        reason: String,
    },
    /// Nothing was sent, so nothing is decided.
    NothingSent {
        /// Deliveries planned.
        planned: usize,
        /// Of those, skipped.
        skipped: usize,
    },
    /// What the faults showed that is no failure.
    Informational(String),
    /// The send's counts.
    Sent {
        /// Deliveries planned.
        deliveries: usize,
        /// Attempts made.
        attempts: usize,
        /// Acknowledged.
        ok: usize,
        /// How long the send took.
        took: Duration,
        /// Real time was divided by this.
        time_scale: f64,
    },
    /// A redirect the sender met.
    Redirect {
        /// The status answered.
        status: u16,
        /// Its `Location`, if any.
        location: Option<String>,
        /// The harness's own front answered it, by design.
        by_front: bool,
    },
    /// What the dashboard's redelivery rules did.
    Redeliveries {
        /// Redeliveries sent.
        sent: usize,
        /// Refused while the delivery was pending.
        refused: usize,
        /// Waited for the hourly limit.
        throttled: usize,
    },
    /// Deliveries that ran out of attempts.
    DeadLetters {
        /// How many.
        dead: usize,
        /// Of those listed, killed by the scenario on purpose.
        by_design: usize,
        /// Of the real ones listed, recovered later.
        recovered: usize,
    },
    /// Retry gaps measured against the scaled schedule.
    RetryGaps {
        /// Gaps at least the schedule's minimum.
        within: usize,
        /// Gaps measured.
        measured: usize,
        /// Real time was divided by this.
        time_scale: f64,
        /// The shortest gap over its minimum.
        min_ratio: f64,
    },
    /// What the fault front did.
    Front(FrontCounts),
    /// What the reconciliation after an outage did.
    Reconciled(Reconciliation),
    /// What the process and database faults did, and did to the attempts.
    Process {
        /// The nemesis's actions.
        actions: Actions,
        /// What the kills did, when the state could be read.
        tally: Option<KillTally>,
    },
    /// Rows that landed after the state was read, judged again with them.
    JudgedAgain {
        /// How many rows.
        rows: usize,
        /// The first few keys.
        keys: Vec<String>,
        /// The verdict before.
        before: Verdict,
        /// The verdict after.
        after: Verdict,
    },
    /// Rows this scenario had stored, written again after a later reset.
    WrittenAgain {
        /// How many.
        rows: usize,
    },
    /// Words read back from a report file.
    Said(String),
}

impl Note {
    /// The note asks the user to register another URL (the receiver's own
    /// redirect, not one the harness's front answered by design).
    pub fn asks_for_final_url(&self) -> bool {
        match self {
            Note::Redirect { by_front, .. } => !by_front,
            Note::Said(s) => s.starts_with("redirect:"),
            _ => false,
        }
    }

    /// The note with every secret in its words redacted.
    pub fn redacted(&self) -> Note {
        let words = self.to_string();
        let clean = crate::state::probe::redact_text(&words);
        if clean == words {
            self.clone()
        } else {
            Note::Said(clean)
        }
    }
}

impl fmt::Display for Note {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Note::Reason(s) | Note::Said(s) => f.write_str(s),
            Note::ResetFailed { error } => write!(
                f,
                "reset failed: {error}; rows from earlier runs are ignored by key"
            ),
            Note::EarlierRows { rows } => write!(
                f,
                "{} of keys an earlier scenario sent {} in this one's state: they are not judged here (rows new to the scenario that sent them are judged with it)",
                count(*rows, "row"),
                agree(*rows, "was")
            ),
            Note::ReadAsItWas { still_for, missing } => write!(
                f,
                "the state stopped changing for {} with {} not in the inbox; it was read as it was",
                format_duration(*still_for),
                count(*missing, "acknowledged key")
            ),
            Note::NotSettled { drain } => write!(
                f,
                "the state did not settle (every acknowledged key stored, every row processed or marked failed) within {}",
                format_duration(*drain)
            ),
            Note::NotExercised { reason } => write!(f, "not exercised: {reason}"),
            Note::NothingSent { planned, skipped } => write!(
                f,
                "nothing was sent ({} planned, {skipped} skipped): nothing is decided",
                count(*planned, "delivery")
            ),
            Note::Informational(what) => write!(f, "informational: {what}"),
            Note::Sent {
                deliveries,
                attempts,
                ok,
                took,
                time_scale,
            } => write!(
                f,
                "{}, {} ({ok} answered 2xx and taken) in {:.1}s at time scale {time_scale}",
                count(*deliveries, "delivery"),
                count(*attempts, "attempt"),
                took.as_secs_f64()
            ),
            Note::Redirect {
                status,
                location,
                by_front,
            } => {
                let location = location.as_deref().unwrap_or("(no Location header)");
                if *by_front {
                    // The harness's own front invented this URL: nothing to register.
                    write!(
                        f,
                        "redirect by design: the scenario's front answered {status} (Location {location}) and the sender, like a real one, did not follow it; those deliveries were retried and died as expected, nothing to change in the receiver"
                    )
                } else {
                    write!(
                        f,
                        "redirect: the receiver URL answered {status}; redirects are never followed, so every such attempt failed. Register the final URL instead: {location}"
                    )
                }
            }
            Note::Redeliveries {
                sent,
                refused,
                throttled,
            } => write!(
                f,
                "dashboard redeliveries: {sent} sent, {refused} refused while pending, {throttled} waited for the hourly limit"
            ),
            Note::DeadLetters {
                dead,
                by_design,
                recovered,
            } => dead_letters(f, *dead, *by_design, *recovered),
            Note::RetryGaps {
                within,
                measured,
                time_scale,
                min_ratio,
            } => write!(
                f,
                "retry gaps: {within} of {measured} within the schedule at time scale {time_scale} (shortest at {min_ratio:.2}x its minimum)"
            ),
            Note::Front(c) => front(f, c),
            Note::Reconciled(r) => reconciled(f, r),
            Note::Process { actions, tally } => process(f, actions, tally.as_ref()),
            Note::JudgedAgain {
                rows,
                keys,
                before,
                after,
            } => write!(
                f,
                "{} landed after this scenario's state was read ({}{}); judged again with them: {before} -> {after}",
                count(*rows, "row"),
                keys.join(", "),
                if *rows > keys.len() { ", …" } else { "" },
            ),
            Note::WrittenAgain { rows } => write!(
                f,
                "{} of keys this scenario had already stored {} written again after the reset that began a later scenario (redeliveries the receiver still had queued); a reset empties the inbox, so they are not second rows",
                count(*rows, "row"),
                agree(*rows, "was")
            ),
        }
    }
}

fn dead_letters(
    f: &mut fmt::Formatter<'_>,
    dead: usize,
    by_design: usize,
    recovered: usize,
) -> fmt::Result {
    let real = dead.saturating_sub(by_design);
    let recovered = match recovered {
        0 => String::new(),
        n => format!(" ({n} of the real ones recovered later)"),
    };
    match (real, by_design) {
        (0, n) => write!(
            f,
            "{} died by design: the scenario's own faults killed {} on purpose, and none counts against the receiver",
            count(n, "delivery"),
            if n == 1 { "it" } else { "them" }
        ),
        (r, 0) => write!(
            f,
            "dead letters: {} ran out of attempts{recovered}; see the dead letter list",
            count(r, "delivery")
        ),
        (r, n) => write!(
            f,
            "dead letters: {} ran out of attempts{recovered}, besides {} the scenario's own faults killed by design; see the dead letter list",
            count(r, "delivery"),
            n
        ),
    }
}

fn front(f: &mut fmt::Formatter<'_>, c: &FrontCounts) -> fmt::Result {
    let parts: Vec<String> = [
        (c.failed, "answered with an error status"),
        (c.redirected, "redirected"),
        (c.delayed, "held"),
        (c.stalled, "stalled mid-upload and cut"),
        (c.unreachable, "found the receiver unreachable"),
        (c.cut_answers, "cut an answer over the byte budget"),
        (c.forwarded, "forwarded"),
    ]
    .into_iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, what)| format!("{n} {what}"))
    .collect();
    write!(f, "fault front: {}", parts.join(", "))
}

fn reconciled(f: &mut fmt::Formatter<'_>, r: &Reconciliation) -> fmt::Result {
    match r {
        Reconciliation::SetupFailed { error } => write!(
            f,
            "reconciliation not run: setup tasks-submitted failed: {error}"
        ),
        Reconciliation::Failed { error } => write!(f, "reconciliation failed: {error}"),
        Reconciliation::Done {
            finals,
            calls,
            stored_all,
            last,
        } => write!(
            f,
            "reconciliation after the outage: {} at the provider; the reconcile hook was called {}, the way a scheduler would, until {}; its last answer: {last}",
            count(*finals, "final task"),
            count(*calls, "time"),
            if *stored_all {
                "every final task was stored"
            } else {
                "it reported nothing throttled and stored nothing more"
            }
        ),
    }
}

fn process(f: &mut fmt::Formatter<'_>, acts: &Actions, tally: Option<&KillTally>) -> fmt::Result {
    write!(
        f,
        "process faults: {} injected ({} by the harness, {} at crash points), {}, {}",
        count(acts.kills(), "kill"),
        acts.signals,
        acts.crashes,
        count(acts.restarts, "restart"),
        count(acts.cuts, "database cut")
    )?;
    for c in &acts.cut_seen {
        write!(
            f,
            "; {} answered during the cut ({} acknowledged), held {}",
            count(c.answered.answered, "attempt"),
            c.answered.acks,
            format_duration(c.held)
        )?;
    }
    if let Some(t) = tally {
        // A kill cuts an attempt off between its commit and its answer; a
        // database that went silent leaves it waiting past the limit.
        let how = if acts.kills() > 0 {
            "landed between commit and answer or by a retry"
        } else {
            "written before the database went silent, or by a retry"
        };
        write!(
            f,
            "; {} interrupted, {} of them stored ({how}); {} lost; {} stored twice",
            count(t.interrupted, "attempt"),
            t.stored_after_interruption,
            count(t.lost, "acknowledged delivery"),
            t.doubled
        )?;
    }
    if acts.kills_wanted > 0 {
        write!(f, "; {}", acts.receiver_kills_met())?;
    }
    if acts.worker_kills_wanted > 0 {
        write!(f, "; {}", acts.worker_kills_met())?;
    }
    if acts.missed > 0 {
        write!(
            f,
            "; {} interrupted no work and {} placed again",
            count(acts.missed, "kill"),
            agree(acts.missed, "was")
        )?;
    }
    if acts.redelivered > 0 {
        write!(
            f,
            "; {} acknowledged before a restart redelivered after the kills",
            count(acts.redelivered, "event")
        )?;
    }
    for e in &acts.errors {
        write!(f, "; error: {e}")?;
    }
    Ok(())
}

impl PartialEq for Note {
    fn eq(&self, other: &Note) -> bool {
        self.to_string() == other.to_string()
    }
}

impl Serialize for Note {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Note {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Note, D::Error> {
        String::deserialize(d).map(Note::Said)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_note_is_kept_as_its_words_and_read_back_the_same() {
        let n = Note::Sent {
            deliveries: 40,
            attempts: 52,
            ok: 40,
            took: Duration::from_millis(1_530),
            time_scale: 2000.0,
        };
        let json = serde_json::to_string(&n).unwrap();
        assert_eq!(
            json,
            "\"40 deliveries, 52 attempts (40 answered 2xx and taken) in 1.5s at time scale 2000\""
        );
        let back: Note = serde_json::from_str(&json).unwrap();
        assert!(matches!(back, Note::Said(_)));
        assert_eq!(back, n);
    }

    #[test]
    fn dead_letters_by_design_read_calm_and_real_ones_are_counted_apart() {
        let designed = Note::DeadLetters {
            dead: 3,
            by_design: 3,
            recovered: 0,
        };
        assert_eq!(
            designed.to_string(),
            "3 deliveries died by design: the scenario's own faults killed them on purpose, and none counts against the receiver"
        );
        let one = Note::DeadLetters {
            dead: 1,
            by_design: 0,
            recovered: 1,
        };
        assert_eq!(
            one.to_string(),
            "dead letters: 1 delivery ran out of attempts (1 of the real ones recovered later); see the dead letter list"
        );
    }

    #[test]
    fn only_the_receivers_own_redirect_asks_for_the_final_url() {
        let own = Note::Redirect {
            status: 301,
            location: Some("https://example.test/hook".into()),
            by_front: false,
        };
        let designed = Note::Redirect {
            status: 307,
            location: None,
            by_front: true,
        };
        assert!(own.asks_for_final_url());
        assert!(!designed.asks_for_final_url());
        assert!(Note::Said(own.to_string()).asks_for_final_url());
        assert!(!Note::Said(designed.to_string()).asks_for_final_url());
        assert!(designed.to_string().contains("(no Location header)"));
    }

    #[test]
    fn the_front_names_only_what_it_did() {
        let c = FrontCounts {
            forwarded: 30,
            failed: 6,
            ..FrontCounts::default()
        };
        assert_eq!(
            Note::Front(c).to_string(),
            "fault front: 6 answered with an error status, 30 forwarded"
        );
    }

    #[test]
    fn a_note_carrying_a_secret_is_redacted_to_its_words() {
        let n = Note::ResetFailed {
            error: "GET http://user:hunter2@127.0.0.1:9/reset: refused".into(),
        };
        let r = n.redacted();
        assert!(!r.to_string().contains("hunter2"), "{r}");
        let plain = Note::EarlierRows { rows: 3 };
        assert!(matches!(plain.redacted(), Note::EarlierRows { rows: 3 }));
    }
}
