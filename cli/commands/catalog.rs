//! The scenario catalog a command reads, and a scenario found in it by
//! name. `run`, `doctor`, `shrink`, `list` and `provider` share it.
//!
//! Which folder: `--scenario-dir DIR` when given, else
//! `$HOOKSTORM_SCENARIO_DIR` (the container image and the GitHub Action set
//! it), else the catalog shipped with hookstorm: `scenarios/` beside the
//! `bin/` folder of the release archive, `share/hookstorm/scenarios` under
//! an install prefix, or the checkout the binary was built from. The
//! working directory plays no part: a folder that happens to be called
//! `scenarios` there (a project's own test scenarios, a copy of a few of
//! hookstorm's) never replaces the catalog unseen. When one holds scenario
//! files and is not the folder read, the command says so on stderr and
//! names the flag that reads it.

use std::path::{Path, PathBuf};

use hookstorm::scenario::Scenario;

/// `--scenario-dir`, the one definition every command that reads
/// scenarios flattens in.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct CatalogFlags {
    /// Folder the scenario files come from. Default: $HOOKSTORM_SCENARIO_DIR,
    /// else the catalog shipped with hookstorm; a ./scenarios folder is read
    /// only when named here.
    #[arg(long, value_name = "DIR")]
    pub scenario_dir: Option<PathBuf>,
}

/// The folder name the shipped catalog has wherever it is installed.
const FOLDER: &str = "scenarios";

impl CatalogFlags {
    /// The folder to read. Without `--scenario-dir`, a `./scenarios` that
    /// holds scenario files and is not that folder is named on stderr.
    pub fn dir(&self) -> PathBuf {
        if let Some(dir) = &self.scenario_dir {
            return dir.clone();
        }
        let dir = match std::env::var_os("HOOKSTORM_SCENARIO_DIR").filter(|d| !d.is_empty()) {
            Some(d) => PathBuf::from(d),
            None => shipped(
                std::env::current_exe().ok().as_deref(),
                Path::new(env!("CARGO_MANIFEST_DIR")),
            ),
        };
        if let Some(note) = unread_local(Path::new(FOLDER), &dir) {
            info!("{note}");
        }
        dir
    }
}

/// The shipped catalog for the binary at `exe`: `<prefix>/scenarios`
/// (the release archive: `bin/hookstorm` beside `scenarios/`), then
/// `<prefix>/share/hookstorm/scenarios` (an install prefix, the container
/// image), then the checkout at `manifest` the binary was built from.
fn shipped(exe: Option<&Path>, manifest: &Path) -> PathBuf {
    let prefix = exe.and_then(Path::parent).and_then(Path::parent);
    let beside_binary = prefix
        .into_iter()
        .flat_map(|p| [p.join(FOLDER), p.join("share/hookstorm").join(FOLDER)]);
    beside_binary
        .into_iter()
        .find(|d| d.join("baseline.toml").is_file())
        .unwrap_or_else(|| manifest.join(FOLDER))
}

/// The note for `local` (`./scenarios`) when it holds scenario files and
/// is not `read`, the folder the command reads.
fn unread_local(local: &Path, read: &Path) -> Option<String> {
    let files = std::fs::read_dir(local)
        .ok()?
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "toml"))
        .count();
    if files == 0 || same_folder(local, read) {
        return None;
    }
    Some(format!(
        "note: ./{FOLDER} ({files} .toml file(s)) is not read: the scenarios come from {} (hint: --scenario-dir {FOLDER} runs the ones in ./{FOLDER})",
        read.display()
    ))
}

fn same_folder(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// The file of scenario `name` in `dir`: a `.toml` path as it is, a name as
/// `<dir>/<name>.toml`. A name that is not there is an error whose hint is
/// the nearest name, or every name.
pub(crate) fn find(dir: &Path, name: &str) -> Result<PathBuf, String> {
    if name.ends_with(".toml") {
        let path = PathBuf::from(name);
        return match path.exists() {
            true => Ok(path),
            false => Err(format!("no scenario file {name}")),
        };
    }
    let path = dir.join(format!("{name}.toml"));
    if path.exists() {
        return Ok(path);
    }
    Err(format!(
        "no scenario {name:?} (hint: {})",
        hookstorm::text::suggest::hint(name, names(dir).iter().map(String::as_str))
    ))
}

/// The names of the scenarios in `dir` (none when it does not load).
pub(crate) fn names(dir: &Path) -> Vec<String> {
    Scenario::load_dir(dir)
        .map(|v| v.into_iter().map(|s| s.name).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog_at(dir: &Path) {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("baseline.toml"), "").unwrap();
    }

    #[test]
    fn the_shipped_catalog_is_found_beside_the_binary_then_under_share_then_in_the_checkout() {
        let t = tempfile::tempdir().unwrap();
        let exe = t.path().join("prefix/bin/hookstorm");
        let manifest = t.path().join("checkout");
        assert_eq!(shipped(Some(&exe), &manifest), manifest.join("scenarios"));
        catalog_at(&t.path().join("prefix/share/hookstorm/scenarios"));
        assert_eq!(
            shipped(Some(&exe), &manifest),
            t.path().join("prefix/share/hookstorm/scenarios")
        );
        catalog_at(&t.path().join("prefix/scenarios"));
        assert_eq!(
            shipped(Some(&exe), &manifest),
            t.path().join("prefix/scenarios")
        );
        assert_eq!(shipped(None, &manifest), manifest.join("scenarios"));
    }

    #[test]
    fn a_local_scenarios_folder_that_is_not_read_is_named() {
        let t = tempfile::tempdir().unwrap();
        let local = t.path().join("scenarios");
        let shipped = t.path().join("shipped");
        catalog_at(&shipped);
        assert_eq!(unread_local(&local, &shipped), None, "no folder");
        std::fs::create_dir_all(&local).unwrap();
        std::fs::write(local.join("notes.txt"), "").unwrap();
        assert_eq!(unread_local(&local, &shipped), None, "no scenario file");
        std::fs::write(local.join("mine.toml"), "").unwrap();
        let note = unread_local(&local, &shipped).unwrap();
        assert!(
            note.starts_with("note: ./scenarios (1 .toml file(s)) is not read")
                && note.contains("--scenario-dir scenarios"),
            "{note}"
        );
        assert_eq!(unread_local(&local, &local), None, "the folder read");
    }
}
