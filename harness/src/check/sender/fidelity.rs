//! Body fidelity: how the body a sender sent differs from the bytes it was
//! asked to send. A sender promises the bytes (every built-in profile), or,
//! where its profile says `body_fidelity = "json"`, only the same JSON; S6
//! holds it to the promise and names what changed, so that a sender that
//! parses each body and writes it again (other spacing, key order, escapes
//! or number formatting, a trailing newline dropped) is told so, not
//! merely that the bytes differ.
//!
//! The comparison walks both bodies as JSON tokens, without building
//! either value: bodies are small (the sink reads at most 1 MiB), and the
//! tokens tell a rewrite's kind where the values alone could not.

use crate::history::BodyChange;

/// How `sent` differs from `emitted`; `None` when they are the same bytes.
pub fn body_change(sent: &[u8], emitted: &[u8]) -> Option<BodyChange> {
    if sent == emitted {
        return None;
    }
    if sent.trim_ascii_end() == emitted.trim_ascii_end() {
        return Some(BodyChange::TrailingWhitespace);
    }
    let (Some(a), Some(b)) = (tokens(sent), tokens(emitted)) else {
        return Some(BodyChange::Bytes);
    };
    let (Ok(va), Ok(vb)) = (
        serde_json::from_slice::<serde_json::Value>(sent),
        serde_json::from_slice::<serde_json::Value>(emitted),
    ) else {
        return Some(BodyChange::Bytes);
    };
    if va != vb {
        return Some(BodyChange::Content);
    }
    if a == b {
        return Some(BodyChange::Whitespace);
    }
    if a.len() == b.len() {
        // Same shape, token by token: which kind of token was rewritten.
        let mut escapes = false;
        let mut numbers = false;
        let mut other = false;
        for (x, y) in a.iter().zip(&b) {
            if x == y {
                continue;
            }
            match (x, y) {
                (Token::Str(p), Token::Str(q)) if unescape(p) == unescape(q) => escapes = true,
                (Token::Num(p), Token::Num(q)) if same_number(p, q) => numbers = true,
                _ => other = true,
            }
        }
        if !other {
            return Some(if numbers && !escapes {
                BodyChange::NumberFormat
            } else {
                BodyChange::Escapes
            });
        }
    }
    // The same value with its tokens in another order: members moved.
    Some(BodyChange::KeyOrder)
}

/// One JSON token as written (strings and numbers raw, without spacing).
#[derive(Debug, PartialEq, Eq)]
enum Token<'a> {
    Punct(u8),
    Str(&'a [u8]),
    Num(&'a [u8]),
    Word(&'a [u8]),
}

/// The tokens of a JSON text, or `None` when it is not one.
fn tokens(text: &[u8]) -> Option<Vec<Token<'_>>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < text.len() {
        let c = text[i];
        match c {
            b' ' | b'\t' | b'\n' | b'\r' => i += 1,
            b'{' | b'}' | b'[' | b']' | b':' | b',' => {
                out.push(Token::Punct(c));
                i += 1;
            }
            b'"' => {
                let start = i + 1;
                i = start;
                loop {
                    match text.get(i)? {
                        b'\\' => i += 2,
                        b'"' => break,
                        _ => i += 1,
                    }
                }
                out.push(Token::Str(&text[start..i]));
                i += 1;
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                while i < text.len()
                    && matches!(text[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                {
                    i += 1;
                }
                out.push(Token::Num(&text[start..i]));
            }
            b't' | b'f' | b'n' => {
                let start = i;
                while i < text.len() && text[i].is_ascii_alphabetic() {
                    i += 1;
                }
                out.push(Token::Word(&text[start..i]));
            }
            _ => return None,
        }
    }
    Some(out)
}

/// A string token's value.
fn unescape(raw: &[u8]) -> Option<String> {
    let mut quoted = Vec::with_capacity(raw.len() + 2);
    quoted.push(b'"');
    quoted.extend_from_slice(raw);
    quoted.push(b'"');
    serde_json::from_slice(&quoted).ok()
}

/// Whether two number tokens are the same number.
fn same_number(a: &[u8], b: &[u8]) -> bool {
    let parse = |t: &[u8]| std::str::from_utf8(t).ok()?.parse::<f64>().ok();
    matches!((parse(a), parse(b)), (Some(x), Some(y)) if x == y)
}

#[cfg(test)]
mod tests {
    use super::*;

    const EMITTED: &[u8] =
        br#"{"task":{"id":"tsk_1","note":"caf\u00e9 \/ ok","credits":1.50},"ok":true}"#;

    #[test]
    fn each_kind_of_rewrite_is_named() {
        assert_eq!(body_change(EMITTED, EMITTED), None);
        let mut newline = EMITTED.to_vec();
        newline.push(b'\n');
        assert_eq!(
            body_change(&newline, EMITTED),
            Some(BodyChange::TrailingWhitespace)
        );
        let pretty =
            br#"{"task": {"id": "tsk_1", "note": "caf\u00e9 \/ ok", "credits": 1.50}, "ok": true}"#;
        assert_eq!(body_change(pretty, EMITTED), Some(BodyChange::Whitespace));
        let escapes = r#"{"task":{"id":"tsk_1","note":"café / ok","credits":1.50},"ok":true}"#;
        assert_eq!(
            body_change(escapes.as_bytes(), EMITTED),
            Some(BodyChange::Escapes)
        );
        let numbers =
            br#"{"task":{"id":"tsk_1","note":"caf\u00e9 \/ ok","credits":1.5},"ok":true}"#;
        assert_eq!(
            body_change(numbers, EMITTED),
            Some(BodyChange::NumberFormat)
        );
        let order = br#"{"ok":true,"task":{"credits":1.50,"id":"tsk_1","note":"caf\u00e9 \/ ok"}}"#;
        assert_eq!(body_change(order, EMITTED), Some(BodyChange::KeyOrder));
        let content =
            br#"{"task":{"id":"tsk_2","note":"caf\u00e9 \/ ok","credits":1.50},"ok":true}"#;
        assert_eq!(body_change(content, EMITTED), Some(BodyChange::Content));
        assert_eq!(body_change(b"id=tsk_1", EMITTED), Some(BodyChange::Bytes));
    }

    #[test]
    fn only_content_and_other_bytes_are_not_the_same_json() {
        for c in [
            BodyChange::TrailingWhitespace,
            BodyChange::Whitespace,
            BodyChange::KeyOrder,
            BodyChange::Escapes,
            BodyChange::NumberFormat,
        ] {
            assert!(c.json_equivalent(), "{c:?}");
        }
        assert!(!BodyChange::Content.json_equivalent());
        assert!(!BodyChange::Bytes.json_equivalent());
    }
}
