//! The sink's answers: what `hookstorm sink` does with one attempt of a
//! sender under test. A sender scenario gives each event a script, one
//! answer per attempt (the last repeats), written as short text:
//!
//! | text | the sink |
//! |---|---|
//! | `200`, `204`, `400`, `503`, … | answers that status at once |
//! | `429 retry-after 60s`, `503 retry-after 30s` | answers it with `Retry-After` (whole seconds, the contract's time: the sender scales it like every wait) |
//! | `301`, `302`, `303`, `307`, `308` | redirects to a URL it also serves (a sender must not follow) |
//! | `reset` | reads the request and resets the connection, no answer |
//! | `hang` | reads the request and answers nothing, until the sender gives up (past its timeout) |
//! | `slow`, `slow 503` | answers (200 by default) after part of the timeout, well inside it |
//!
//! A leaf: the scenario parses these, the sink plays them, the checker
//! reads them back from the history.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// One scripted answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Answer {
    /// This status, at once (1xx and 3xx are not statuses here).
    Status(u16),
    /// This status (429 or 503) with `Retry-After` in whole seconds.
    RetryAfter {
        /// The status.
        status: u16,
        /// The seconds the header says.
        secs: u64,
    },
    /// A redirect with this status to a URL the sink also serves.
    Redirect(u16),
    /// The request read, the connection reset.
    Reset,
    /// The request read, no answer until the sender closes.
    Hang,
    /// This status after part of the timeout.
    Slow(u16),
}

/// The redirect statuses a script may use.
pub const REDIRECTS: [u16; 5] = [301, 302, 303, 307, 308];

/// A script element could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("answer {text:?}: {reason} (hint: 200, 503, 410, \"429 retry-after 60s\", 308, reset, hang, slow or \"slow 503\")")]
pub struct AnswerError {
    /// The text given.
    pub text: String,
    /// What is wrong with it.
    pub reason: String,
}

fn status(text: &str) -> Result<u16, String> {
    let code: u16 = text
        .parse()
        .map_err(|_| format!("{text:?} is not a status"))?;
    if !(200..=599).contains(&code) {
        return Err(format!("{code} is not a status from 200 to 599"));
    }
    Ok(code)
}

impl FromStr for Answer {
    type Err = AnswerError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = |reason: String| AnswerError {
            text: s.to_string(),
            reason,
        };
        let words: Vec<&str> = s.split_whitespace().collect();
        match words.as_slice() {
            ["reset"] => Ok(Answer::Reset),
            ["hang"] => Ok(Answer::Hang),
            ["slow"] => Ok(Answer::Slow(200)),
            ["slow", code] => {
                let c = status(code).map_err(err)?;
                if (300..400).contains(&c) {
                    return Err(err("a slow answer is not a redirect".into()));
                }
                Ok(Answer::Slow(c))
            }
            [code, "retry-after", after] => {
                let c = status(code).map_err(err)?;
                if c != 429 && c != 503 {
                    return Err(err("Retry-After goes with 429 or 503".into()));
                }
                let d: crate::text::units::HumanDuration =
                    after.parse().map_err(|e| err(format!("{e}")))?;
                let d: Duration = d.0;
                if d.subsec_nanos() != 0 || d.is_zero() {
                    return Err(err("Retry-After is whole seconds, at least 1s".into()));
                }
                Ok(Answer::RetryAfter {
                    status: c,
                    secs: d.as_secs(),
                })
            }
            [code] => {
                let c = status(code).map_err(err)?;
                if (300..400).contains(&c) {
                    if REDIRECTS.contains(&c) {
                        return Ok(Answer::Redirect(c));
                    }
                    return Err(err(format!(
                        "{c} is no redirect the sink gives (301, 302, 303, 307, 308)"
                    )));
                }
                Ok(Answer::Status(c))
            }
            _ => Err(err("not an answer".into())),
        }
    }
}

impl fmt::Display for Answer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Answer::Status(c) | Answer::Redirect(c) => write!(f, "{c}"),
            Answer::RetryAfter { status, secs } => write!(f, "{status} retry-after {secs}s"),
            Answer::Reset => f.write_str("reset"),
            Answer::Hang => f.write_str("hang"),
            Answer::Slow(200) => f.write_str("slow"),
            Answer::Slow(c) => write!(f, "slow {c}"),
        }
    }
}

impl Answer {
    /// The status the sink answers with, when it answers at all.
    pub fn status(self) -> Option<u16> {
        match self {
            Answer::Status(c) | Answer::Redirect(c) | Answer::Slow(c) => Some(c),
            Answer::RetryAfter { status, .. } => Some(status),
            Answer::Reset | Answer::Hang => None,
        }
    }

    /// The `Retry-After` seconds it carries.
    pub fn retry_after(self) -> Option<u64> {
        match self {
            Answer::RetryAfter { secs, .. } => Some(secs),
            _ => None,
        }
    }

    /// Whether the sink answers a 2xx.
    pub fn acknowledges(self) -> bool {
        self.status().is_some_and(|c| (200..300).contains(&c))
    }
}

/// The answer to attempt `n` (1-based) of a script: the last repeats.
pub fn nth(script: &[Answer], n: u32) -> Answer {
    let i = (n.max(1) as usize - 1).min(script.len().saturating_sub(1));
    script.get(i).copied().unwrap_or(Answer::Status(200))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_answer_reads_back_from_what_it_writes() {
        for text in [
            "200",
            "204",
            "400",
            "410",
            "503",
            "429 retry-after 60s",
            "503 retry-after 2m",
            "308",
            "reset",
            "hang",
            "slow",
            "slow 503",
        ] {
            let a: Answer = text.parse().unwrap();
            let again: Answer = a.to_string().parse().unwrap();
            assert_eq!(a, again, "{text}");
        }
        assert_eq!(
            "503 retry-after 2m".parse::<Answer>().unwrap(),
            Answer::RetryAfter {
                status: 503,
                secs: 120
            }
        );
        assert_eq!("308".parse::<Answer>().unwrap(), Answer::Redirect(308));
    }

    #[test]
    fn a_bad_answer_says_what_a_script_takes() {
        for bad in [
            "",
            "600",
            "304",
            "slow 301",
            "200 retry-after 5s",
            "429 retry-after 1.5s",
            "wait",
        ] {
            let e = bad.parse::<Answer>().unwrap_err().to_string();
            assert!(e.contains("hint: 200, 503"), "{bad}: {e}");
        }
    }

    #[test]
    fn the_last_answer_of_a_script_repeats() {
        let s = [Answer::Status(503), Answer::Status(200)];
        assert_eq!(nth(&s, 1), Answer::Status(503));
        assert_eq!(nth(&s, 2), Answer::Status(200));
        assert_eq!(nth(&s, 9), Answer::Status(200));
        assert!(nth(&s, 9).acknowledges() && !nth(&s, 1).acknowledges());
    }
}
