//! The text of a replay script's `#` comments: one line about a delivery
//! (account, task, job, status, what is odd about it), and any text made
//! safe to sit on one comment line.

use std::fmt::Write as _;

use crate::fault_spec::Signing;
use crate::history::Intent;
use crate::plan::{signing_name, PlannedDelivery};

/// One line about a delivery for the script's comments.
pub(super) fn describe(d: &PlannedDelivery) -> String {
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
pub(super) fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}
