//! Test helper: a page under `docs/` carries a block the code makes,
//! between `<!-- NAME:begin -->` and `<!-- NAME:end -->` markers, so the
//! page and the code state one table. `HOOKSTORM_UPDATE_DOCS=1` rewrites
//! the block instead of failing.

/// Asserts that `docs/<page>` holds `want` between the `name` markers
/// (`source` names where the code makes it, for the message).
pub(crate) fn assert_block(page: &str, name: &str, want: &str, source: &str) {
    let path = format!("{}/../docs/{page}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("docs/{page}: {e}"));
    let (begin, end) = (
        format!("<!-- {name}:begin -->\n"),
        format!("<!-- {name}:end -->"),
    );
    let a = text.find(&begin).expect("begin marker") + begin.len();
    let b = text.find(&end).expect("end marker");
    if text[a..b] == *want {
        return;
    }
    if std::env::var_os("HOOKSTORM_UPDATE_DOCS").is_some() {
        let fresh = format!("{}{want}{}", &text[..a], &text[b..]);
        std::fs::write(&path, fresh).unwrap_or_else(|e| panic!("rewrite docs/{page}: {e}"));
        return;
    }
    panic!(
        "docs/{page}'s {name} block differs from {source} (run with HOOKSTORM_UPDATE_DOCS=1 to rewrite it):\n{want}"
    );
}
