//! The regression folder: every failure explore found, shrunk to a
//! minimal explicit scenario, kept as a file that `hookstorm explore` and
//! `hookstorm run` replay before anything else, so a bug once found is
//! checked on every later run until it is fixed (proptest keeps its
//! failing cases the same way).
//!
//! The folder is `hookstorm-regressions/` beside the target file
//! (`--target`), else in the current directory; `--regressions DIR` names
//! another. It holds plain scenario files (`<name>.toml`, the explicit
//! `[[delivery]]` form), one per failure, named after the plan that found
//! it (`explore-s<seed>-<plan>`): commit them with the receiver's code, and
//! delete one once its bug is fixed and it passes.

use std::path::{Path, PathBuf};

use crate::error::ConfigError;
use crate::scenario::Scenario;

/// The folder's name.
pub const DIR_NAME: &str = "hookstorm-regressions";

/// The regression folder of a target given by `target_file` (none: the
/// built-in receiver or `--url`): beside the file, else in the current
/// directory.
pub fn default_dir(target_file: Option<&Path>) -> PathBuf {
    match target_file.and_then(Path::parent) {
        Some(dir) if !dir.as_os_str().is_empty() => dir.join(DIR_NAME),
        _ => PathBuf::from(DIR_NAME),
    }
}

/// The scenarios in `dir`, sorted by name; none when it does not exist.
pub fn load(dir: &Path) -> Result<Vec<Scenario>, ConfigError> {
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    Scenario::load_dir(dir)
}

/// The name of plan `plan` of `seed` (and of its regression file).
pub fn plan_name(seed: u64, plan: u64) -> String {
    format!("explore-s{seed}-{plan:04}")
}

/// Where the regression of `name` is written in `dir`.
pub fn file(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{name}.toml"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_folder_is_beside_the_target_file_else_here() {
        assert_eq!(
            default_dir(Some(Path::new("ci/hookstorm.toml"))),
            Path::new("ci/hookstorm-regressions")
        );
        assert_eq!(
            default_dir(Some(Path::new("hookstorm.toml"))),
            Path::new("hookstorm-regressions")
        );
        assert_eq!(default_dir(None), Path::new("hookstorm-regressions"));
    }

    #[test]
    fn a_missing_folder_holds_nothing_and_a_bad_file_says_where() {
        let dir = tempfile::tempdir().unwrap();
        assert!(load(&dir.path().join("none")).unwrap().is_empty());
        std::fs::write(dir.path().join("x.toml"), "name = 1\n").unwrap();
        let e = load(dir.path()).unwrap_err().to_string();
        assert!(e.contains("x.toml"), "{e}");
        assert_eq!(plan_name(7, 3), "explore-s7-0003");
        assert!(crate::scenario::check_name(&plan_name(u64::MAX, 99_999)).is_ok());
    }
}
