//! The crates as `cargo package` makes them, for `cargo install
//! hookstorm-cli` from a registry: the command line's package carries its
//! sources and the whole scenario catalog, and no package compiles in a
//! file its package leaves behind (a path that climbs out of the package's
//! folder reads nothing once the crate is unpacked elsewhere). A full
//! `cargo package --workspace`, which also builds the three crates from
//! their packages, compiles every dependency again (minutes): it is a
//! release step (deploy/dist/README.md), and this test holds what it
//! needs on every run.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};
use std::process::Command;

use super::repo;
use crate::common::output_text;

/// The workspace's packages and their folders.
const PACKAGES: [(&str, &str); 3] = [
    ("hookstorm", "harness"),
    ("hookstorm-receiver", "reference-receiver"),
    ("hookstorm-cli", "."),
];

/// The files `cargo package -p NAME --list` puts in the crate, relative
/// to its package folder.
fn listed(name: &str) -> BTreeSet<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let o = Command::new(cargo)
        .args([
            "package",
            "--list",
            "--allow-dirty",
            "--offline",
            "-p",
            name,
        ])
        .current_dir(repo())
        .output()
        .expect("cargo runs");
    assert!(
        o.status.success(),
        "cargo package --list -p {name}\n{}",
        output_text(&o)
    );
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// `path` with `.` and `..` taken out, without touching the disk.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

/// The files an `include_str!`/`include_bytes!` of `text` names, before its
/// first `#[cfg(test)]` (the tests' modules, which a built crate leaves out).
fn included(text: &str) -> Vec<String> {
    let code = text.split("#[cfg(test)]").next().unwrap_or_default();
    let mut out = Vec::new();
    for mac in ["include_str!(\"", "include_bytes!(\""] {
        for (at, _) in code.match_indices(mac) {
            let rest = &code[at + mac.len()..];
            if let Some(end) = rest.find('"') {
                out.push(rest[..end].to_string());
            }
        }
    }
    out
}

/// Every file under `dir` (relative to the repository), sorted.
fn files_under(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read the folder").flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(repo()).expect("under the repository");
                out.push(rel.to_string_lossy().into_owned());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn cargo_package_ships_the_command_line_the_whole_catalog_and_every_file_a_crate_compiles_in() {
    let mut wrong = Vec::new();
    for (name, folder) in PACKAGES {
        let files = listed(name);
        for f in files.iter().filter(|f| f.ends_with(".rs")) {
            let source = repo().join(folder).join(f);
            let Ok(text) = std::fs::read_to_string(&source) else {
                continue;
            };
            for inc in included(&text) {
                let at = Path::new(f).parent().unwrap_or(Path::new("")).join(&inc);
                let at = lexical(&at).to_string_lossy().into_owned();
                if !files.contains(&at) {
                    wrong.push(format!(
                        "{name}: {f} compiles in {inc:?}, which its package does not carry"
                    ));
                }
            }
        }
        if name == "hookstorm-cli" {
            for must in ["cli/main.rs", "cli/lib.rs", "README.md", "Cargo.lock"] {
                if !files.contains(must) {
                    wrong.push(format!("{name}: {must} is not in the package"));
                }
            }
            for f in files_under(&repo().join("scenarios")) {
                if !files.contains(&f) {
                    wrong.push(format!("{name}: the catalog's {f} is not in the package"));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn an_include_climbing_out_of_its_package_is_named() {
    let text = "const A: &str = include_str!(\"../../../notes/x.txt\");\n#[cfg(test)]\nmod tests { const B: &str = include_str!(\"t.json\"); }";
    assert_eq!(included(text), vec!["../../../notes/x.txt".to_string()]);
    let at = lexical(&Path::new("src/sink").join("../../../notes/x.txt"));
    assert_eq!(at, PathBuf::from("notes/x.txt"));
}
