//! The module graph between files has no cycles: no file names a file
//! that names it back, directly or around a loop, in any of the three
//! crates (the harness library, the command line, the reference receiver).
//!
//! A file names another when its code (outside `#[cfg(test)]` and
//! comments) holds a `crate::…` or `super::…` path into it, or when a
//! parent's `use` line takes something from one of its children
//! (`pub use child::Item`). A parent calling into its children by relative
//! paths is the module tree itself, not an import, and does not count.
//!
//! [`KNOWN`] may list a cycle allowed for a while (it is empty): a new
//! cycle fails, and so does a listed one that is gone, so the list only
//! shrinks.
//!
//! Between the top-level modules of the harness library the rule is
//! stronger: no cycle at all, and every import follows the order that the
//! `# Layout` section of `harness/src/lib.rs` states (each of its lines
//! starts with its modules, before the first colon; a module may import
//! those of its own line and of the lines before). [`ALLOWED`] lists the
//! imports that still run backwards (none is left); a new one fails, and
//! so does a listed one that is gone.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Cycles allowed for now, each as its files' module paths (sorted), per
/// crate: none is left.
const KNOWN: &[(&str, &[&str])] = &[];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file below `dir`, keyed by its module path (`""` for the
/// crate root, `check::view` for `check/view.rs`).
fn modules(dir: &Path) -> BTreeMap<String, PathBuf> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().filter_map(Result::ok) {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let rel = p.strip_prefix(dir).unwrap().with_extension("");
                let mut parts: Vec<String> = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                if parts.last().is_some_and(|l| l == "mod") {
                    parts.pop();
                }
                if parts.len() == 1 && ["lib", "main"].contains(&parts[0].as_str()) {
                    parts.clear();
                }
                out.insert(parts.join("::"), p);
            }
        }
    }
    out
}

/// The code of a file without its tests and comment lines; inside an
/// inline `mod name { … }` one `super::` is dropped from each path, since
/// there it names the file itself.
fn code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let text = text.split("#[cfg(test)]").next().unwrap_or_default();
    let code = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    flatten_inline_modules(&code)
}

/// `code` with each inline module's `super::` taken one level down.
fn flatten_inline_modules(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    loop {
        let found = rest.match_indices("mod ").find(|(i, _)| {
            let line_start = rest[..*i].rfind('\n').map_or(0, |n| n + 1);
            let before = rest[line_start..*i].trim();
            let after = &rest[i + 4..];
            let name_len = after
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (before.is_empty() || before.starts_with("pub"))
                && name_len > 0
                && after[name_len..].trim_start().starts_with('{')
        });
        let Some((i, _)) = found else {
            out.push_str(rest);
            return out;
        };
        let open = i + rest[i..].find('{').unwrap();
        let mut depth = 0;
        let mut end = rest.len();
        for (j, c) in rest[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + j + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        out.push_str(&rest[..open]);
        let inner = rest[open..end]
            .replace("super::super::", "\u{0}")
            .replace("super::", "")
            .replace('\u{0}', "super::");
        out.push_str(&inner);
        rest = &rest[end..];
    }
}

/// The `use` statements of `code`, joined (a statement may span lines).
fn use_statements(code: &str) -> String {
    let mut out = String::new();
    let mut rest = code;
    while let Some(i) = find_word(rest, "use ") {
        let line_start = rest[..i].rfind('\n').map_or(0, |n| n + 1);
        let before = rest[line_start..i].trim();
        let tail = &rest[i..];
        let end = tail.find(';').map_or(tail.len(), |e| e + 1);
        if before.is_empty() || before.starts_with("pub") {
            out.push_str(&tail[..end]);
            out.push('\n');
        }
        rest = &tail[end..];
    }
    out
}

/// Where `word` starts in `s` at a word boundary.
fn find_word(s: &str, word: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = s[from..].find(word) {
        let at = from + i;
        let ok = at == 0
            || !s.as_bytes()[at - 1].is_ascii_alphanumeric() && s.as_bytes()[at - 1] != b'_';
        if ok {
            return Some(at);
        }
        from = at + word.len();
    }
    None
}

/// The paths (`a::b::c`, groups expanded one level) that follow each
/// `prefix` (`crate::`, `super::`) in `code`.
fn paths_after(code: &str, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = code[from..].find(prefix) {
        let at = from + i;
        from = at + prefix.len();
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':')
            && prefix != "super::"
        {
            continue;
        }
        let rest = &code[from..];
        let raw: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
            .collect();
        let head = raw.trim_end_matches(':').to_string();
        let group = rest[raw.len()..].starts_with('{') && (raw.is_empty() || raw.ends_with("::"));
        if group {
            let open = from + raw.len();
            let mut depth = 0;
            let mut end = open;
            for (j, c) in code[open..].char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            end = open + j;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            let inner = &code[open + 1..end];
            let mut depth = 0;
            let mut item = String::new();
            let mut items = Vec::new();
            for c in inner.chars() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        items.push(std::mem::take(&mut item));
                        continue;
                    }
                    _ => {}
                }
                item.push(c);
            }
            items.push(item);
            for it in items {
                let name: String = it
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                    .collect();
                let name = name.trim_end_matches(':');
                let p = match (head.is_empty(), name) {
                    (_, "") => continue,
                    (true, n) => n.to_string(),
                    (false, "self") => head.clone(),
                    (false, n) => format!("{head}::{n}"),
                };
                out.push(p);
            }
        } else if !head.is_empty() {
            out.push(head);
        }
    }
    out
}

/// The module of `mods` a path lands in: its longest prefix that is one.
fn resolve<'a>(mods: &'a BTreeMap<String, PathBuf>, path: &str) -> Option<&'a str> {
    let mut parts: Vec<&str> = path.split("::").collect();
    while !parts.is_empty() {
        let m = parts.join("::");
        if let Some((k, _)) = mods.get_key_value(&m) {
            return Some(k.as_str());
        }
        parts.pop();
    }
    None
}

/// Which files each file names.
fn edges(mods: &BTreeMap<String, PathBuf>) -> BTreeMap<&str, BTreeSet<&str>> {
    let mut out: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (m, path) in mods {
        let code = code(path);
        let own: &str = m.as_str();
        let mut to = BTreeSet::new();
        let is_dir_module = path
            .file_name()
            .is_some_and(|f| f == "mod.rs" || f == "lib.rs" || f == "main.rs");
        let parent: Vec<&str> = if own.is_empty() {
            Vec::new()
        } else {
            let mut p: Vec<&str> = own.split("::").collect();
            p.pop();
            p
        };
        let mut targets: Vec<String> = paths_after(&code, "crate::");
        for p in paths_after(&code, "super::") {
            let mut base = parent.clone();
            let mut rest = p.as_str();
            while let Some(r) = rest.strip_prefix("super::") {
                base.pop();
                rest = r;
            }
            base.push(rest);
            targets.push(base.join("::"));
        }
        // A parent's `use child::…` lines.
        let uses = use_statements(&code);
        if is_dir_module {
            for child in mods.keys().filter(|k| {
                let prefix = if own.is_empty() {
                    String::new()
                } else {
                    format!("{own}::")
                };
                k.strip_prefix(&prefix)
                    .is_some_and(|r| !r.is_empty() && !r.contains("::"))
            }) {
                let name = child.rsplit("::").next().unwrap();
                for stmt in uses.lines() {
                    let body = stmt
                        .trim_start_matches("pub ")
                        .trim_start_matches("pub(crate) ");
                    let body = body.trim_start_matches("use ").trim_start_matches("self::");
                    if body.starts_with(&format!("{name}::")) || body == format!("{name};") {
                        targets.push(child.clone());
                    }
                }
            }
        }
        for t in targets {
            if let Some(r) = resolve(mods, &t) {
                if r != own && !r.is_empty() {
                    to.insert(r);
                }
            }
        }
        out.insert(own, to);
    }
    out
}

/// The strongly connected components of more than one file (Tarjan).
fn cycles<'a>(edges: &BTreeMap<&'a str, BTreeSet<&'a str>>) -> Vec<Vec<&'a str>> {
    struct T<'a, 'e> {
        edges: &'e BTreeMap<&'a str, BTreeSet<&'a str>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<Vec<&'a str>>,
    }
    fn visit<'a>(t: &mut T<'a, '_>, v: &'a str) {
        let n = t.index.len();
        t.index.insert(v, n);
        t.low.insert(v, n);
        t.stack.push(v);
        t.on.insert(v);
        for &w in t.edges.get(v).into_iter().flatten() {
            if !t.index.contains_key(w) {
                visit(t, w);
                let lw = t.low[w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if t.on.contains(w) {
                let iw = t.index[w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if t.low[v] == t.index[v] {
            let mut scc = Vec::new();
            while let Some(w) = t.stack.pop() {
                t.on.remove(w);
                scc.push(w);
                if w == v {
                    break;
                }
            }
            if scc.len() > 1 {
                scc.sort();
                t.out.push(scc);
            }
        }
    }
    let mut t = T {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for &v in edges.keys() {
        if !t.index.contains_key(v) {
            visit(&mut t, v);
        }
    }
    t.out.sort();
    t.out
}

const CRATES: [(&str, &str); 3] = [
    ("harness", "harness/src"),
    ("cli", "cli"),
    ("receiver", "reference-receiver/src"),
];

#[test]
fn no_file_names_a_file_that_names_it_back_beyond_the_known_cycles() {
    let mut found: BTreeSet<(String, Vec<String>)> = BTreeSet::new();
    for (name, dir) in CRATES {
        let mods = modules(&root().join(dir));
        assert!(mods.len() > 5, "{dir}: no modules found");
        for c in cycles(&edges(&mods)) {
            found.insert((name.to_string(), c.iter().map(|s| s.to_string()).collect()));
        }
    }
    let known: BTreeSet<(String, Vec<String>)> = KNOWN
        .iter()
        .map(|(c, files)| (c.to_string(), files.iter().map(|s| s.to_string()).collect()))
        .collect();
    let new: Vec<_> = found.difference(&known).collect();
    let gone: Vec<_> = known.difference(&found).collect();
    eprintln!(
        "import cycles between files: {} ({} known)",
        found.len(),
        known.len()
    );
    assert!(
        new.is_empty() && gone.is_empty(),
        "new cycles (break them): {new:#?}\nlisted cycles that are gone (take them off KNOWN): {gone:#?}"
    );
}

#[test]
fn the_cycle_finder_sees_a_parent_that_re_exports_a_child_that_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir_all(src.join("a")).unwrap();
    std::fs::write(src.join("lib.rs"), "pub mod a;\npub mod b;\n").unwrap();
    std::fs::write(
        src.join("a/mod.rs"),
        "mod kid;\npub use kid::K;\npub struct P;\n",
    )
    .unwrap();
    std::fs::write(src.join("a/kid.rs"), "use super::{P};\npub struct K(P);\n").unwrap();
    std::fs::write(
        src.join("b.rs"),
        "pub fn f() -> crate::a::P { crate::a::P }\n#[cfg(test)]\nmod t { use crate::b; }\n",
    )
    .unwrap();
    let mods = modules(src);
    let e = edges(&mods);
    assert_eq!(cycles(&e), vec![vec!["a", "a::kid"]]);
    assert!(e["b"].contains("a") && !e["a"].contains("b"));
}

/// Imports between top-level modules of the harness library that still
/// run against the order `harness/src/lib.rs` states, as (importer,
/// imported): none is left.
const ALLOWED: &[(&str, &str)] = &[];

/// The `# Layout` lines of a crate root's doc comment: each line's
/// modules (the names in backticks before its first colon), in order.
fn stated_order(lib: &str) -> Vec<Vec<String>> {
    let mut lines: Vec<String> = Vec::new();
    let mut inside = false;
    for l in lib.lines() {
        let Some(doc) = l.strip_prefix("//!") else {
            if inside {
                break;
            }
            continue;
        };
        let doc = doc.strip_prefix(' ').unwrap_or(doc);
        if doc.starts_with('#') {
            inside = doc.trim() == "# Layout";
            continue;
        }
        if !inside {
            continue;
        }
        if let Some(item) = doc.strip_prefix("- ") {
            lines.push(item.to_string());
        } else if doc.starts_with("  ") {
            if let Some(last) = lines.last_mut() {
                last.push(' ');
                last.push_str(doc.trim());
            }
        }
    }
    lines
        .iter()
        .map(|line| {
            // The head: up to the first colon that is not part of `::`.
            let b = line.as_bytes();
            let end = (0..b.len())
                .find(|&i| {
                    b[i] == b':' && b.get(i + 1) != Some(&b':') && (i == 0 || b[i - 1] != b':')
                })
                .unwrap_or(b.len());
            line[..end]
                .split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_string)
                .collect()
        })
        .collect()
}

/// The imports between the top-level modules of the crate in `src`
/// (a file's edges, each end taken to its top-level module).
fn top_level_edges(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mods = modules(src);
    let top = |m: &str| m.split("::").next().unwrap_or_default().to_string();
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for m in mods.keys().filter(|m| !m.is_empty()) {
        out.entry(top(m)).or_default();
    }
    for (from, tos) in edges(&mods) {
        if from.is_empty() {
            continue;
        }
        for to in tos {
            let (a, b) = (top(from), top(to));
            if a != b {
                out.entry(a).or_default().insert(b);
            }
        }
    }
    out
}

/// What is wrong with the top-level imports of the crate in `src` against
/// the order its `lib.rs` states and the backward imports `allowed`: one
/// message per fault, none when all is well.
fn stage_faults(src: &Path, allowed: &[(&str, &str)]) -> Vec<String> {
    let mut faults = Vec::new();
    let edges = top_level_edges(src);
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    let order = stated_order(&lib);
    let mut rank: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, line) in order.iter().enumerate() {
        for m in line {
            if !edges.contains_key(m) {
                faults.push(format!(
                    "lib.rs's layout names `{m}`, which is no top-level module"
                ));
            } else if rank.insert(m, i).is_some() {
                faults.push(format!("lib.rs's layout places `{m}` twice"));
            }
        }
    }
    for m in edges.keys() {
        if !rank.contains_key(m.as_str()) {
            faults.push(format!(
                "lib.rs's layout does not place `{m}` (start a line with it)"
            ));
        }
    }
    let borrowed: BTreeMap<&str, BTreeSet<&str>> = edges
        .iter()
        .map(|(a, bs)| (a.as_str(), bs.iter().map(String::as_str).collect()))
        .collect();
    for c in cycles(&borrowed) {
        faults.push(format!(
            "import cycle between top-level modules: {}",
            c.join(" ")
        ));
    }
    let mut backwards: BTreeSet<(&str, &str)> = BTreeSet::new();
    for (a, bs) in &borrowed {
        for b in bs {
            if let (Some(ra), Some(rb)) = (rank.get(a), rank.get(b)) {
                if rb > ra {
                    backwards.insert((a, b));
                }
            }
        }
    }
    let allowed: BTreeSet<(&str, &str)> = allowed.iter().copied().collect();
    for (a, b) in backwards.difference(&allowed) {
        faults.push(format!(
            "`{a}` imports `{b}`, which lib.rs's layout places after it (move what it needs down, or pass it in)"
        ));
    }
    for (a, b) in allowed.difference(&backwards) {
        faults.push(format!(
            "`{a}` -> `{b}` is on ALLOWED but no longer runs backwards: take it off"
        ));
    }
    faults
}

#[test]
fn the_harness_top_level_modules_import_only_the_stages_lib_rs_places_before_them() {
    let src = root().join("harness/src");
    let faults = stage_faults(&src, ALLOWED);
    eprintln!(
        "top-level modules: {}; imports between them: {}; allowed backwards: {}",
        top_level_edges(&src).len(),
        top_level_edges(&src)
            .values()
            .map(BTreeSet::len)
            .sum::<usize>(),
        ALLOWED.len()
    );
    assert!(faults.is_empty(), "{}", faults.join("\n"));
}

#[test]
fn the_stage_check_sees_a_backward_import_a_cycle_and_an_unplaced_module() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    let lib = "//! Crate.\n//!\n//! # Layout\n//! Bottom up.\n//!\n//! - [`leaf`], `quiet`: leaves.\n//! - [`early`]: uses\n//!   [`leaf`]: and more.\n//! - [`late`]: uses [`early`].\n\npub mod early;\npub mod late;\npub mod leaf;\nmod quiet;\n";
    std::fs::write(src.join("lib.rs"), lib).unwrap();
    std::fs::write(src.join("leaf.rs"), "pub struct L;\n").unwrap();
    std::fs::write(src.join("quiet.rs"), "pub struct Q(pub crate::leaf::L);\n").unwrap();
    std::fs::create_dir_all(src.join("early")).unwrap();
    std::fs::write(src.join("early/mod.rs"), "mod kid;\npub use kid::E;\n").unwrap();
    std::fs::write(
        src.join("early/kid.rs"),
        "pub struct E(pub crate::leaf::L);\n",
    )
    .unwrap();
    std::fs::write(
        src.join("late.rs"),
        "use crate::early::E;\npub struct T(pub E);\n#[cfg(test)]\nmod t { use crate::leaf; }\n",
    )
    .unwrap();
    let line = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
    assert_eq!(
        stated_order(lib),
        vec![line(&["leaf", "quiet"]), line(&["early"]), line(&["late"])]
    );
    assert!(
        stage_faults(src, &[]).is_empty(),
        "{:?}",
        stage_faults(src, &[])
    );
    // A listed backward import that is not there fails.
    assert_eq!(stage_faults(src, &[("early", "late")]).len(), 1);
    // A new backward import fails, through `super::` at the top level too.
    std::fs::write(
        src.join("early/mod.rs"),
        "mod kid;\npub use kid::E;\npub fn f() -> Option<super::late::T> { None }\n",
    )
    .unwrap();
    let faults = stage_faults(src, &[]);
    assert!(
        faults.iter().any(|f| f.contains("`early` imports `late`")),
        "{faults:?}"
    );
    assert!(faults.iter().any(|f| f.contains("cycle")), "{faults:?}");
    assert!(stage_faults(src, &[("early", "late")])
        .iter()
        .all(|f| f.contains("cycle")));
    // A module the layout does not place fails.
    std::fs::write(src.join("early/mod.rs"), "mod kid;\npub use kid::E;\n").unwrap();
    std::fs::write(src.join("stray.rs"), "pub struct S;\n").unwrap();
    let faults = stage_faults(src, &[]);
    assert_eq!(faults.len(), 1, "{faults:?}");
    assert!(faults[0].contains("`stray`"));
}
