//! `kind = "tamper"`: the spec of forged, test, oversized and rotated-key
//! deliveries (the forgery kinds and signings), and its bounds.

use serde::{Deserialize, Serialize};

/// A forged (or otherwise must-reject) delivery kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Forgery {
    /// Signed, then the body changed.
    TamperedBody,
    /// Signed with a secret the receiver never had.
    WrongSecret,
    /// No signature header.
    MissingHeader,
    /// A signature header that does not parse.
    MalformedHeader,
    /// Only a signature version the scheme does not define (`v2=`).
    UnknownSchemeOnly,
    /// Timestamp older than the tolerance by a minute.
    StaleTimestamp,
    /// Timestamp newer than the tolerance by a minute.
    FutureTimestamp,
    /// Signed with another account's secret, sent to this account.
    CrossAccount,
    /// A body over the receiver's limit (genuinely signed).
    Oversized,
    /// A genuine, already delivered request replayed after the tolerance.
    ExpiredReplay,
    /// Signed only with a secret the receiver has retired.
    RetiredSecret,
}

impl Forgery {
    /// Every kind, in a fixed order.
    pub const ALL: [Forgery; 11] = [
        Forgery::TamperedBody,
        Forgery::WrongSecret,
        Forgery::MissingHeader,
        Forgery::MalformedHeader,
        Forgery::UnknownSchemeOnly,
        Forgery::StaleTimestamp,
        Forgery::FutureTimestamp,
        Forgery::CrossAccount,
        Forgery::Oversized,
        Forgery::ExpiredReplay,
        Forgery::RetiredSecret,
    ];

    /// The kebab-case name (the history's `detail`).
    pub fn as_str(self) -> &'static str {
        match self {
            Forgery::TamperedBody => "tampered-body",
            Forgery::WrongSecret => "wrong-secret",
            Forgery::MissingHeader => "missing-header",
            Forgery::MalformedHeader => "malformed-header",
            Forgery::UnknownSchemeOnly => "unknown-scheme-only",
            Forgery::StaleTimestamp => "stale-timestamp",
            Forgery::FutureTimestamp => "future-timestamp",
            Forgery::CrossAccount => "cross-account",
            Forgery::Oversized => "oversized",
            Forgery::ExpiredReplay => "expired-replay",
            Forgery::RetiredSecret => "retired-secret",
        }
    }
}

/// Which secrets a genuine delivery is signed with during a key rotation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Signing {
    /// Every current secret (the normal case).
    #[serde(rename = "current")]
    Current,
    /// The retired secret(s) and the current ones: a provider mid-rotation.
    #[serde(rename = "old+new")]
    OldAndNew,
    /// Only the newest current secret.
    #[serde(rename = "new-only")]
    NewOnly,
}

/// `kind = "tamper"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TamperSpec {
    /// The forgery kinds to add (default: none).
    #[serde(default)]
    pub forgeries: Vec<Forgery>,
    /// How many of each kind, per account.
    #[serde(default = "one_usize")]
    pub each: usize,
    /// Key rotation: genuine deliveries are split evenly, in order, over these signings.
    #[serde(default)]
    pub rotation: Vec<Signing>,
}

fn one_usize() -> usize {
    1
}

impl TamperSpec {
    /// Checks the spec's bounds against the scenario's `accounts` (a
    /// cross-account forgery needs a second one); the error is the message
    /// the scenario file reports.
    pub fn validate(&self, accounts: usize) -> Result<(), String> {
        if self.forgeries.contains(&Forgery::CrossAccount) && accounts < 2 {
            return Err(
                "tamper cross-account needs two accounts (hint: accounts = [\"acct_a\", \"acct_b\"])"
                    .into(),
            );
        }
        if self.each > 1000 {
            return Err("tamper each: expected at most 1000".into());
        }
        Ok(())
    }
}
