//! Names a scenario file gives: its own name, its tags and its accounts,
//! checked the same way for receiver and sender scenarios; and where a key
//! is set in a file, for messages that name the line. A leaf.

use std::path::Path;

/// The longest scenario name.
pub const MAX_NAME: usize = 64;

/// The files and folders a report folder holds beside its scenarios'
/// folders: no scenario may take their names.
const REPORT_FOLDER_FILES: &[&str] = &[
    "report.json",
    "junit.xml",
    "summary.md",
    "report.html",
    "report.png",
    "SHA256SUMS",
    "receiver.log",
    "worker.log",
    "sender.log",
    "explore.json",
    "merge.json",
    "bench.json",
    "history.jsonl",
    "shard.json",
    "latency.hdr.json",
    "shrink",
    "latest",
];

/// Checks a scenario name: it names files and folders of the report
/// (`<out>/<name>/history.jsonl`), so it is a name and never a path:
/// letters, digits, `-`, `_` and `.`, not starting with `.`, at most
/// [`MAX_NAME`] characters, and none of [`REPORT_FOLDER_FILES`].
pub fn check_name(name: &str) -> Result<(), String> {
    if let Some(file) = REPORT_FOLDER_FILES
        .iter()
        .find(|f| f.eq_ignore_ascii_case(name))
    {
        return Err(format!(
            "name {name:?}: the report folder's own {file} has that name (a scenario's name is its folder in the reports)"
        ));
    }
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "name {:?}: expected 1 to {MAX_NAME} letters, digits, '-', '_' or '.', not starting with '.' (a scenario name names report folders, never a path)",
            crate::limits::budget::quote(name)
        ))
    }
}

/// Checks a scenario's tags: lowercase letters, digits and `-`, each once.
pub(crate) fn check_tags(tags: &[String]) -> Result<(), String> {
    for (i, t) in tags.iter().enumerate() {
        let ok = !t.is_empty()
            && t.len() <= 32
            && t.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if !ok {
            return Err(format!(
                "tag {t:?}: expected lowercase letters, digits or '-'"
            ));
        }
        if tags[..i].contains(t) {
            return Err(format!("tag {t:?} is listed twice"));
        }
    }
    Ok(())
}

/// Checks a scenario's accounts: letters, digits, `_` and `-`, each once,
/// at least one.
pub(crate) fn check_accounts(accounts: &[String]) -> Result<(), String> {
    if accounts.is_empty() {
        return Err("accounts is empty (hint: omit it for [\"acct_a\"])".into());
    }
    for (i, a) in accounts.iter().enumerate() {
        let ok = !a.is_empty()
            && a.len() <= 64
            && a.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !ok {
            return Err(format!(
                "account {a:?}: expected letters, digits, '_' or '-'"
            ));
        }
        if accounts[..i].contains(a) {
            return Err(format!("account {a:?} is listed twice"));
        }
    }
    Ok(())
}

/// The 1-based line where top-level `key = …` is set in a TOML file.
pub(crate) fn key_line(path: &Path, key: &str) -> Option<usize> {
    let text = crate::limits::budget::read_text(path, crate::limits::budget::CONFIG_FILE).ok()?;
    text.lines()
        .position(|l| {
            l.trim_start()
                .strip_prefix(key)
                .is_some_and(|rest| rest.trim_start().starts_with('='))
        })
        .map(|i| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scenario_cannot_take_the_name_of_a_report_folders_own_file() {
        for name in [
            "report.json",
            "SHA256SUMS",
            "receiver.log",
            "sha256sums",
            "latest",
        ] {
            let e = check_name(name).unwrap_err();
            assert!(e.contains("the report folder's own"), "{name}: {e}");
        }
        assert!(check_name("report-json").is_ok());
        assert!(check_name("baseline").is_ok());
    }
}
