//! Redaction: URLs and command lines with their secrets hidden, for every
//! message, note and report that names a state source.

const SECRET_WORDS: [&str; 7] = [
    "pass",
    "token",
    "secret",
    "key",
    "auth",
    "credential",
    "pwd",
];

fn is_secret_name(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    SECRET_WORDS.iter().any(|w| n.contains(w))
}

/// A URL without userinfo and without secret-looking query parameters.
pub fn redact_url(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return redact_text(url);
    };
    let (scheme, rest) = url.split_at(scheme_end + 3);
    let auth_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(auth_end);
    let host = match authority.rfind('@') {
        Some(i) => format!("***@{}", &authority[i + 1..]),
        None => authority.to_string(),
    };
    let tail = match tail.split_once('?') {
        None => tail.to_string(),
        Some((path, query)) => {
            let q: Vec<String> = query
                .split('&')
                .map(|kv| match kv.split_once('=') {
                    Some((k, _)) if is_secret_name(k) => format!("{k}=***"),
                    _ => kv.to_string(),
                })
                .collect();
            format!("{path}?{}", q.join("&"))
        }
    };
    format!("{scheme}{host}{tail}")
}

/// Free text (a command line, a libpq connection string) with URLs redacted,
/// `NAME=value` secrets hidden and the word after `Bearer` hidden.
pub fn redact_text(text: &str) -> String {
    let mut out = Vec::new();
    let mut hide_next = false;
    for word in text.split(' ') {
        if hide_next && !word.is_empty() {
            out.push("***".to_string());
            hide_next = false;
            continue;
        }
        if word.eq_ignore_ascii_case("bearer") || word.eq_ignore_ascii_case("bearer:") {
            hide_next = true;
            out.push(word.to_string());
            continue;
        }
        let w = word.trim_matches(|c| c == '"' || c == '\'');
        if w.contains("://") {
            out.push(word.replace(w, &redact_url(w)));
        } else if let Some((k, _)) = w.split_once('=') {
            let name = k.trim_start_matches('-');
            if is_secret_name(name) {
                out.push(format!("{k}=***"));
            } else {
                out.push(word.to_string());
            }
        } else if ["-p", "--password", "--token", "-u", "--user"].contains(&w) {
            hide_next = w != "-u" && w != "--user";
            out.push(word.to_string());
        } else {
            out.push(word.to_string());
        }
    }
    out.join(" ")
}
