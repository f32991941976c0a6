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

/// Writes the regression `text(name)` gives into `dir` without ever
/// overwriting one: the file of `name` when it is free, the one already
/// there when it holds the same plan (its scenario lines, comments aside,
/// are the same: the failure is one the folder knows), else a new file
/// and scenario name, `name-2`, `name-3`, … (the folder is loaded as one
/// catalog, so names stay unique). Its path.
pub fn keep(dir: &Path, name: &str, text: impl Fn(&str) -> String) -> std::io::Result<PathBuf> {
    fn plan_lines(text: &str) -> Vec<&str> {
        text.lines()
            .filter(|l| !l.trim_start().starts_with('#'))
            .collect()
    }
    for n in 1..=1000u32 {
        let name = if n == 1 {
            name.to_string()
        } else {
            format!("{name}-{n}")
        };
        let path = file(dir, &name);
        let body = text(&name);
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(mut f) => {
                std::io::Write::write_all(&mut f, body.as_bytes())?;
                return Ok(path);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let there =
                    crate::limits::budget::read_text(&path, crate::limits::budget::CONFIG_FILE)?;
                if plan_lines(&there) == plan_lines(&body) {
                    return Ok(path);
                }
            }
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::AlreadyExists,
        format!(
            "{}: 1000 regressions named {name}… already exist",
            dir.display()
        ),
    ))
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

    #[test]
    fn a_regression_never_overwrites_another_and_a_known_plan_is_not_written_twice() {
        let dir = tempfile::tempdir().unwrap();
        let plan = |delivery: &'static str| {
            move |name: &str| {
                format!("# found at {name}\nname = \"{name}\"\ndelivery = \"{delivery}\"\n")
            }
        };
        let first = keep(dir.path(), "explore-s7-0003", plan("a")).unwrap();
        assert_eq!(first, file(dir.path(), "explore-s7-0003"));
        // The same plan again (another session of the same seed): known.
        let again = keep(dir.path(), "explore-s7-0003", plan("a")).unwrap();
        assert_eq!(again, first);
        // Another plan under the same name: a file and a name of its own.
        let other = keep(dir.path(), "explore-s7-0003", plan("b")).unwrap();
        assert_eq!(other, file(dir.path(), "explore-s7-0003-2"));
        let text = std::fs::read_to_string(&other).unwrap();
        assert!(text.contains("name = \"explore-s7-0003-2\""), "{text}");
        assert!(std::fs::read_to_string(&first).unwrap().contains("\"a\""));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
    }
}
