//! Which side a scenario file tests: a receiver (`hookstorm run`) or a
//! sender (`hookstorm sink`). Both kinds live in one folder; the tag
//! [`SENDER_TAG`] tells them apart, so `hookstorm list` shows both and a
//! receiver run never picks up a sender scenario. A leaf.

use std::path::Path;

use crate::error::{parse_toml, ConfigError};

/// The tag every sender scenario carries.
pub const SENDER_TAG: &str = "sender";

/// The side a scenario tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// A receiver: `hookstorm run` plays the provider against it.
    Receiver,
    /// A sender: `hookstorm sink` receives from it.
    Sender,
}

impl Side {
    /// The word in listings.
    pub fn as_str(self) -> &'static str {
        match self {
            Side::Receiver => "receiver",
            Side::Sender => "sender",
        }
    }
}

/// The side of the scenario in `path`: sender when its `tags` list
/// [`SENDER_TAG`]. A file that is not TOML is an error naming its line.
pub fn side_of(path: &Path) -> Result<Side, ConfigError> {
    let text = crate::limits::budget::read_text(path, crate::limits::budget::CONFIG_FILE)
        .map_err(|e| ConfigError::new(path, std::io::Error::from(e).into()))?;
    let v: toml::Value = parse_toml(path, &text)?;
    let sender = v
        .get("tags")
        .and_then(toml::Value::as_array)
        .is_some_and(|tags| tags.iter().any(|t| t.as_str() == Some(SENDER_TAG)));
    Ok(if sender { Side::Sender } else { Side::Receiver })
}

/// The `*.toml` files directly in `dir` of one side, sorted by path.
pub fn files_of(dir: &Path, side: Side) -> Result<Vec<std::path::PathBuf>, ConfigError> {
    let entries = std::fs::read_dir(dir).map_err(|e| ConfigError::new(dir, e.into()))?;
    let mut out = Vec::new();
    for entry in entries {
        let path = entry.map_err(|e| ConfigError::new(dir, e.into()))?.path();
        if path.is_file()
            && path.extension().is_some_and(|e| e == "toml")
            && side_of(&path)? == side
        {
            out.push(path);
        }
    }
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sender_tag_makes_a_sender_scenario() {
        let dir = tempfile::tempdir().unwrap();
        let s = dir.path().join("s.toml");
        std::fs::write(&s, "name = \"s\"\ntags = [\"retries\", \"sender\"]\n").unwrap();
        let r = dir.path().join("r.toml");
        std::fs::write(&r, "name = \"r\"\ntags = [\"retries\"]\n").unwrap();
        assert_eq!(side_of(&s).unwrap(), Side::Sender);
        assert_eq!(side_of(&r).unwrap(), Side::Receiver);
        assert_eq!(files_of(dir.path(), Side::Sender).unwrap(), vec![s]);
        assert_eq!(files_of(dir.path(), Side::Receiver).unwrap(), vec![r]);
        let bad = dir.path().join("bad.toml");
        std::fs::write(&bad, "name = \n").unwrap();
        let e = side_of(&bad).unwrap_err().to_string();
        assert!(e.contains("line 1"), "{e}");
    }
}
