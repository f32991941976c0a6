//! Tables the docs carry that the code renders: each sits between
//! `<!-- NAME:begin -->` and `<!-- NAME:end -->` on its page, and a test
//! compares it with what the code renders now; with
//! `HOOKSTORM_UPDATE_DOCS=1` the test rewrites the page instead. The
//! excuse table and the sender invariants' table use it.

/// Compares the `name` block of `page` (relative to the repository) with
/// `want`; `source` names the code that renders it, for the message.
pub(crate) fn check_block(page: &str, name: &str, want: &str, source: &str) {
    let path = format!("{}/../{page}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{page}: {e}"));
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
        std::fs::write(&path, fresh).unwrap_or_else(|e| panic!("rewrite {page}: {e}"));
        return;
    }
    panic!("{page}'s {name} table differs from {source} (run with HOOKSTORM_UPDATE_DOCS=1 to rewrite it):\n{want}");
}
