//! Tests' helper: a document carries a table the code generates between
//! `<!-- NAME:begin -->` and `<!-- NAME:end -->` markers, and a test keeps
//! the two equal (`HOOKSTORM_UPDATE_DOCS=1` rewrites the document). One
//! helper for every such table: the excuse model, the attempt outcomes,
//! the conformance levels.

/// Panics unless `path` holds `want` between its `name` markers; with
/// `HOOKSTORM_UPDATE_DOCS` set, rewrites the section instead.
pub(crate) fn assert_section(path: &str, name: &str, want: &str) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let (begin, end) = (
        format!("<!-- {name}:begin -->\n"),
        format!("<!-- {name}:end -->"),
    );
    let a = text
        .find(&begin)
        .unwrap_or_else(|| panic!("{path}: no {begin:?} marker"))
        + begin.len();
    let b = text
        .find(&end)
        .unwrap_or_else(|| panic!("{path}: no {end:?} marker"));
    if text[a..b] == *want {
        return;
    }
    if std::env::var_os("HOOKSTORM_UPDATE_DOCS").is_some() {
        let fresh = format!("{}{want}{}", &text[..a], &text[b..]);
        std::fs::write(path, fresh).unwrap_or_else(|e| panic!("rewrite {path}: {e}"));
        return;
    }
    panic!(
        "{path}'s {name} table differs from the code (run with HOOKSTORM_UPDATE_DOCS=1 to rewrite it):\n{want}"
    );
}
