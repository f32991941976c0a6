//! The documentation lives in the repository and every pointer to it
//! resolves: each `docs/<page>.md` named anywhere in the sources, READMEs,
//! scenarios and example files exists, every relative Markdown link lands
//! on a file, and nothing sends a reader to a folder outside the project.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every text file of the project (sources, docs, scenarios, examples),
/// without build output, version control or run output.
fn project_files() -> Vec<PathBuf> {
    const TEXT: [&str; 7] = ["rs", "md", "toml", "json", "sh", "yml", "yaml"];
    let mut out = Vec::new();
    let mut stack = vec![root()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.filter_map(Result::ok) {
            let path = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                let run_output = dir == root().join("reports") && name != "schema";
                if !(name == "target"
                    || name == "node_modules"
                    || name.starts_with('.')
                    || run_output)
                {
                    stack.push(path);
                }
            } else if path
                .extension()
                .and_then(|x| x.to_str())
                .is_some_and(|x| TEXT.contains(&x))
            {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

fn rel(p: &Path) -> String {
    p.strip_prefix(root()).unwrap_or(p).display().to_string()
}

/// `docs/<name>.md` references in a text: (the page name, its 1-based line).
fn doc_refs(text: &str) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        for (i, _) in line.match_indices("docs/") {
            let tail = &line[i + 5..];
            let name: String = tail
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
                .collect();
            if !name.is_empty() && tail[name.len()..].starts_with(".md") {
                out.push((format!("{name}.md"), n + 1));
            }
        }
    }
    out
}

#[test]
fn every_docs_page_named_anywhere_exists() {
    let mut missing = Vec::new();
    let mut seen = 0;
    for f in project_files() {
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        for (page, line) in doc_refs(&text) {
            seen += 1;
            if !root().join("docs").join(&page).is_file() {
                missing.push(format!("{}:{line}: docs/{page}", rel(&f)));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "pointers to missing pages:\n{}",
        missing.join("\n")
    );
    // The scan itself works: the sources do point at the docs.
    assert!(seen >= 10, "only {seen} docs/ references found");
}

#[test]
fn the_docs_folder_has_its_pages() {
    for page in [
        "README.md",
        "state.md",
        "history.md",
        "invariants.md",
        "hooks.md",
        "target.md",
        "contract.md",
        "sink.md",
    ] {
        let text = std::fs::read_to_string(root().join("docs").join(page))
            .unwrap_or_else(|e| panic!("docs/{page}: {e}"));
        assert!(text.starts_with("# "), "docs/{page} has no title");
    }
}

#[test]
fn every_relative_markdown_link_lands_on_a_file() {
    let mut broken = Vec::new();
    for f in project_files()
        .into_iter()
        .filter(|f| f.extension().is_some_and(|x| x == "md"))
    {
        let text = std::fs::read_to_string(&f).unwrap();
        for (n, line) in text.lines().enumerate() {
            for part in line.split("](").skip(1) {
                let Some(end) = part.find(')') else { continue };
                let target = part[..end].split('#').next().unwrap_or("");
                if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                let dir = f.parent().unwrap();
                if !dir.join(target).exists() {
                    broken.push(format!("{}:{}: {target}", rel(&f), n + 1));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn nothing_points_outside_the_project() {
    // Built at run time, so this file does not match itself.
    let outside = [["..", "shared"].join("/"), ["..", "seeds"].join("/")];
    let mut found = Vec::new();
    for f in project_files() {
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        for (n, line) in text.lines().enumerate() {
            if outside.iter().any(|o| line.contains(o.as_str())) {
                found.push(format!("{}:{}", rel(&f), n + 1));
            }
        }
    }
    assert!(
        found.is_empty(),
        "pointers outside the project:\n{}",
        found.join("\n")
    );
}

/// What a reader has is the repository: no page, example or module header
/// sends them to a guide it does not hold; a rule or a schema is written
/// in the project's own words (the default schema is in docs/state.md).
#[test]
fn nothing_names_a_guide_the_repository_does_not_hold() {
    let mut found = Vec::new();
    for f in project_files() {
        let r = rel(&f);
        if r.starts_with("tests/") || r.contains("/tests/") {
            continue; // the tests' own test receivers, not read by users
        }
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        for (n, line) in text.lines().enumerate() {
            let l = line.to_lowercase();
            if l.contains("the guide") || l.contains("guide's") {
                found.push(format!("{r}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(found.is_empty(), "a guide named:\n{}", found.join("\n"));
}

/// The contract's answer table holds the signed, well-formed delivery a
/// receiver cannot process, answered as I8 (poison-isolation) judges it:
/// 2xx, stored, its row marked failed.
#[test]
fn the_contract_answers_an_unprocessable_delivery_as_poison_isolation_requires() {
    let contract = std::fs::read_to_string(root().join("docs/contract.md")).unwrap();
    let row = contract
        .lines()
        .find(|l| l.starts_with("| a verified, well-formed delivery it cannot process"))
        .expect("docs/contract.md answers an unprocessable delivery");
    let answer = row.split('|').nth(2).unwrap_or_default().trim();
    assert!(
        answer.starts_with("2xx")
            && answer.contains("mark its row failed")
            && answer.contains("(invariants.md#i8-poison-isolation)"),
        "{row}"
    );
    let invariants = std::fs::read_to_string(root().join("docs/invariants.md")).unwrap();
    let i8 = invariants
        .split("\n### I8 poison-isolation\n")
        .nth(1)
        .and_then(|s| s.split("\n### ").next())
        .expect("docs/invariants.md has I8 poison-isolation");
    assert!(
        i8.contains("answered 2xx") && i8.contains("marked failed"),
        "{i8}"
    );
}

#[test]
fn the_reference_scan_finds_what_it_should() {
    let refs = doc_refs("see `docs/state.md`, ../docs/hooks.md and docs/; not docs/x.txt");
    let pages: Vec<&str> = refs.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(pages, ["state.md", "hooks.md"]);
}

/// Number words the scenarios README may use for its count.
fn number(word: &str) -> Option<usize> {
    let words = [
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    ];
    word.parse()
        .ok()
        .or_else(|| words.iter().position(|w| *w == word))
}

#[test]
fn the_scenarios_readme_lists_every_shipped_scenario_and_counts_them() {
    let dir = root().join("scenarios");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_suffix(".toml").map(str::to_string)
        })
        .collect();
    files.sort();
    let text = std::fs::read_to_string(dir.join("README.md")).unwrap();
    let table = text
        .split("## Shipped scenarios")
        .nth(1)
        .expect("a Shipped scenarios section");
    let mut listed: Vec<String> = table
        .lines()
        .filter_map(|l| l.strip_prefix("| "))
        .filter_map(|l| l.split(" |").next())
        .filter(|n| !n.is_empty() && *n != "scenario" && !n.starts_with("---"))
        .map(str::to_string)
        .collect();
    listed.sort();
    assert_eq!(listed, files, "the table and the folder differ");
    // "There are N scenarios": the number the text states is the real one.
    let stated = table
        .split("There are ")
        .nth(1)
        .and_then(|t| t.split_whitespace().next())
        .and_then(number)
        .expect("the README states how many scenarios there are");
    assert_eq!(stated, files.len());
}

/// The README's "caught by" cell for a defect, from `Defect::exposed_by`:
/// `I2 exactly-once on sequential-duplicates` (or `… by hookstorm explore
/// alone`), entries joined by `; `.
fn caught_by_cell(d: hookstorm_receiver::Defect) -> String {
    d.exposed_by()
        .iter()
        .map(|e| {
            let non_strict = match e.verdict {
                hookstorm::check::Verdict::NonStrict => " (non-strict)",
                _ => "",
            };
            match e.scenario() {
                Some(s) => format!("{}{non_strict} on `{s}`", e.invariant),
                None => format!("{}{non_strict} by `hookstorm explore` alone", e.invariant),
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

#[test]
fn the_receiver_readme_defect_table_matches_exposed_by() {
    use hookstorm_receiver::Defect;
    let text = std::fs::read_to_string(root().join("reference-receiver/README.md")).unwrap();
    let section = text
        .split("## Defects")
        .nth(1)
        .expect("a Defects section")
        .split("\n## ")
        .next()
        .unwrap_or_default();
    // (name, caught by) of each row: the first and the last cell.
    let rows: Vec<(String, String)> = section
        .lines()
        .filter(|l| l.starts_with("| `") && !l.starts_with("| `--defect`"))
        .map(|l| {
            let cells: Vec<&str> = l.trim_matches('|').split(" | ").map(str::trim).collect();
            (
                cells[0].trim_matches('`').to_string(),
                cells.last().unwrap_or(&"").to_string(),
            )
        })
        .collect();
    let expected: Vec<(String, String)> = Defect::ALL
        .into_iter()
        .map(|d| (d.name().to_string(), caught_by_cell(d)))
        .collect();
    let hint: String = expected
        .iter()
        .map(|(n, c)| format!("`{n}` … | {c}\n"))
        .collect();
    assert_eq!(
        rows, expected,
        "reference-receiver/README.md's defect table (name, caught by) must list Defect::ALL in order with the cells of Defect::exposed_by; expected:\n{hint}"
    );
}

const SEMANTICS_BEGIN: &str = "<!-- semantics:begin -->\n";
const SEMANTICS_END: &str = "<!-- semantics:end -->";

/// The pages that carry the per-profile rules table.
const SEMANTICS_PAGES: [&str; 2] = ["docs/state.md", "docs/invariants.md"];

/// `text` with what lies between the semantics markers replaced by
/// `table`; `None` when a marker is missing.
fn with_semantics_table(text: &str, table: &str) -> Option<String> {
    let (head, rest) = text.split_once(SEMANTICS_BEGIN)?;
    let (_, tail) = rest.split_once(SEMANTICS_END)?;
    Some(format!(
        "{head}{SEMANTICS_BEGIN}{table}{SEMANTICS_END}{tail}"
    ))
}

#[test]
fn the_per_profile_rules_in_the_docs_are_the_ones_the_checker_uses() {
    let table = hookstorm::profile::vocabulary::semantics_table();
    let update = std::env::var_os("HOOKSTORM_UPDATE_DOCS").is_some_and(|v| v == "1");
    let mut stale = Vec::new();
    for page in SEMANTICS_PAGES {
        let path = root().join(page);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{page}: {e}"));
        let fresh = with_semantics_table(&text, &table)
            .unwrap_or_else(|| panic!("{page} has no {SEMANTICS_BEGIN:?} … {SEMANTICS_END:?}"));
        if fresh != text {
            if update {
                std::fs::write(&path, &fresh).unwrap_or_else(|e| panic!("{page}: {e}"));
            } else {
                stale.push(page);
            }
        }
    }
    assert!(
        stale.is_empty(),
        "{} differ from hookstorm::profile::vocabulary::semantics_table() (hint: HOOKSTORM_UPDATE_DOCS=1 cargo test --test e2e docs:: rewrites them); the table is:\n{table}",
        stale.join(", ")
    );
}

#[test]
fn a_changed_rule_makes_the_semantics_table_stale() {
    let table = hookstorm::profile::vocabulary::semantics_table();
    let page = format!("intro\n{SEMANTICS_BEGIN}{table}{SEMANTICS_END}\nrest\n");
    assert_eq!(with_semantics_table(&page, &table).as_deref(), Some(&*page));
    let edited = page.replace("wins when it is the newest", "never wins");
    assert_ne!(edited, page, "the table states the rule the test edits");
    assert_eq!(
        with_semantics_table(&edited, &table).as_deref(),
        Some(&*page)
    );
    assert_eq!(with_semantics_table("no markers", &table), None);
}

/// The text between `<!-- NAME:begin -->` and `<!-- NAME:end -->` of a page.
fn between_markers(page: &str, name: &str) -> String {
    let text = std::fs::read_to_string(root().join(page)).unwrap();
    let (b, e) = (
        format!("<!-- {name}:begin -->\n"),
        format!("<!-- {name}:end -->"),
    );
    let start = text.find(&b).unwrap_or_else(|| panic!("{page}: no {b}")) + b.len();
    let end = text.find(&e).unwrap_or_else(|| panic!("{page}: no {e}"));
    text[start..end].to_string()
}

#[test]
fn the_sender_defect_table_is_the_one_senderdefect_lists() {
    use hookstorm_receiver::sender::SenderDefect;
    let mut want = String::from("| `--defect` | what it does wrong | caught by |\n|---|---|---|\n");
    for d in SenderDefect::ALL {
        let cell = d
            .exposed_by()
            .iter()
            .map(|e| format!("{} on `{}`", e.invariant, e.scenario().unwrap_or("explore")))
            .collect::<Vec<_>>()
            .join("; ");
        want.push_str(&format!(
            "| `{}` | {} | {cell} |\n",
            d.name(),
            d.description()
        ));
    }
    assert_eq!(
        between_markers("docs/sink.md", "sender-defects"),
        want,
        "docs/sink.md's defect table must list SenderDefect::ALL in order; it is:\n{want}"
    );
}

#[test]
fn the_sender_target_example_in_the_docs_is_a_sender_target() {
    let block = between_markers("docs/sink.md", "sender-target");
    let toml_text = block
        .trim()
        .strip_prefix("```toml\n")
        .and_then(|t| t.strip_suffix("```"))
        .expect("a toml block");
    let file: hookstorm::sink::target::SenderFile =
        toml::from_str(toml_text).expect("the example parses as a sender target file");
    let profile = root().join(file.profile.as_deref().expect("a profile"));
    hookstorm::profile::Profile::resolve(&profile.display().to_string())
        .expect("its profile loads");
    let timeout = std::time::Duration::from_secs(1);
    for hook in [
        Some(&file.hooks.emit),
        Some(&file.hooks.outbox),
        file.hooks.reset.as_ref(),
    ] {
        hookstorm::state::probe::Hook::parse(hook.unwrap(), None, timeout).expect("a hook");
    }
    assert!(file.lifecycle.is_some() && file.accounts.len() == 2);
}
