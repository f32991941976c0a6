//! Errors of the harness library.
//!
//! Errors tied to a file carry its path and a kind, and print the line and
//! column where TOML parsing stopped, so a user can jump straight to it.
//! Per-request failures of the receiver under test are *not* errors: they
//! are data in the history.

use std::path::PathBuf;

/// A configuration file (profile, scenario, target) could not be used.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {kind}")]
pub struct ConfigError {
    /// The file, or a pseudo-path such as `<builtin:answerline>`.
    pub path: PathBuf,
    /// What went wrong.
    pub kind: ConfigErrorKind,
}

/// What went wrong with a configuration file.
#[derive(Debug, thiserror::Error)]
pub enum ConfigErrorKind {
    /// The file could not be read.
    #[error("cannot read: {0}")]
    Io(#[from] std::io::Error),
    /// The TOML did not parse or did not match the expected shape.
    #[error("{message}")]
    Parse {
        /// 1-based line, when known.
        line: Option<usize>,
        /// The parser's message, with the line and what was expected.
        message: String,
    },
    /// The file parsed but a value is not allowed.
    #[error("{0}")]
    Invalid(String),
}

impl ConfigError {
    /// Builds an error for `path`.
    pub fn new(path: impl Into<PathBuf>, kind: ConfigErrorKind) -> Self {
        ConfigError {
            path: path.into(),
            kind,
        }
    }

    /// Builds an `Invalid` error for `path`.
    pub fn invalid(path: impl Into<PathBuf>, msg: impl Into<String>) -> Self {
        Self::new(path, ConfigErrorKind::Invalid(msg.into()))
    }
}

/// Parses TOML text into `T`, turning serde/toml errors into a
/// [`ConfigError`] that names the file, line and what was expected.
pub fn parse_toml<T: serde::de::DeserializeOwned>(
    path: &std::path::Path,
    text: &str,
) -> Result<T, ConfigError> {
    toml::from_str(text).map_err(|e| {
        let line = e
            .span()
            .map(|span| text[..span.start.min(text.len())].matches('\n').count() + 1);
        let detail = e.message().trim().to_string();
        let message = match line {
            Some(l) => format!("line {l}: {detail}"),
            None => detail,
        };
        ConfigError::new(path, ConfigErrorKind::Parse { line, message })
    })
}

/// Reads and parses a TOML file.
pub fn read_toml<T: serde::de::DeserializeOwned>(path: &std::path::Path) -> Result<T, ConfigError> {
    let text = crate::limits::budget::read_text(path, crate::limits::budget::CONFIG_FILE)
        .map_err(|e| ConfigError::new(path, std::io::Error::from(e).into()))?;
    parse_toml(path, &text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Demo {
        name: String,
        count: u32,
    }

    #[test]
    fn parse_errors_name_the_file_and_line() {
        let text = "name = \"x\"\n\ncount = \"three\"\n";
        let e = parse_toml::<Demo>(std::path::Path::new("demo.toml"), text).unwrap_err();
        let msg = e.to_string();
        assert!(msg.starts_with("demo.toml: line 3:"), "{msg}");
        assert!(
            msg.contains("expected u32") || msg.contains("invalid type"),
            "{msg}"
        );
    }

    #[test]
    fn unknown_fields_are_rejected_with_the_expected_ones() {
        let text = "name = \"x\"\ncount = 1\ncolour = 2\n";
        let e = parse_toml::<Demo>(std::path::Path::new("d.toml"), text).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("line 3") && msg.contains("unknown field `colour`"),
            "{msg}"
        );
    }
}
