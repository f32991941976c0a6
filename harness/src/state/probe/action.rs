//! An action of a target: an `http(s)://` URL or a shell command (or, for
//! a SQL probe, statements). The probe's reset, setup and reconcile
//! actions and the sink's hooks are each one; a leaf, so both read it.

use super::redact::{redact_text, redact_url};

/// Where an action goes.
#[derive(Clone)]
pub(crate) enum Action {
    /// POST to (or GET) this URL.
    Http(String),
    /// Run this with `sh -c`.
    Command(String),
    /// Run these statements on the SQL probe's database.
    Sql(Vec<String>),
}

impl Action {
    /// A URL when the text starts with `http://` or `https://`, else a command.
    pub(crate) fn parse(text: &str) -> Action {
        let t = text.trim();
        if t.starts_with("http://") || t.starts_with("https://") {
            Action::Http(t.to_string())
        } else {
            Action::Command(t.to_string())
        }
    }

    /// What it is, for messages, with secrets redacted.
    pub(crate) fn describe(&self) -> String {
        match self {
            Action::Http(u) => redact_url(u),
            Action::Command(c) => format!("command `{}`", redact_text(c)),
            Action::Sql(s) => format!("{} sql statements", s.len()),
        }
    }
}
