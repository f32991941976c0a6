//! Counts in words: `1 key`, `2 keys`, `1 delivery`, `3 deliveries`. Every
//! report, note and summary that puts a number before a noun goes through
//! [`count`], so plural agreement is decided in one place.

/// The plural of `noun`: its head word takes the plural (`delivery` →
/// `deliveries`, `acknowledged key` → `acknowledged keys`, `object
/// (data.id)` → `objects (data.id)`, `kill of the receiver` → `kills of
/// the receiver`).
pub fn plural(noun: &str) -> String {
    // The head word ends before a parenthesis or a preposition's phrase.
    let cut = [" (", " of ", " with ", " by ", " in ", " to "]
        .iter()
        .filter_map(|p| noun.find(p))
        .min()
        .unwrap_or(noun.len());
    let (head, rest) = noun.split_at(cut);
    format!("{}{rest}", plural_word(head))
}

fn plural_word(phrase: &str) -> String {
    let (before, word) = match phrase.rfind(' ') {
        Some(i) => phrase.split_at(i + 1),
        None => ("", phrase),
    };
    let irregular = match word {
        "copy" => Some("copies"),
        "entry" => Some("entries"),
        "is" => Some("are"),
        "was" => Some("were"),
        "has" => Some("have"),
        _ => None,
    };
    let word = match irregular {
        Some(w) => w.to_string(),
        None => {
            let b = word.as_bytes();
            let consonant_y = b.len() >= 2
                && b[b.len() - 1] == b'y'
                && !matches!(b[b.len() - 2], b'a' | b'e' | b'i' | b'o' | b'u');
            if consonant_y {
                format!("{}ies", &word[..word.len() - 1])
            } else if ["s", "x", "ch", "sh"].iter().any(|e| word.ends_with(e)) {
                format!("{word}es")
            } else {
                format!("{word}s")
            }
        }
    };
    format!("{before}{word}")
}

/// `n` and `noun`, in agreement: `1 key`, `0 keys`, `2 keys`.
pub fn count(n: impl TryInto<u64>, noun: &str) -> String {
    let n: u64 = n.try_into().unwrap_or(u64::MAX);
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {}", plural(noun))
    }
}

/// `noun` in agreement with `n`, without the number.
pub fn agree(n: impl TryInto<u64>, noun: &str) -> String {
    if n.try_into().ok() == Some(1) {
        noun.to_string()
    } else {
        plural(noun)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_takes_the_singular_and_every_other_count_the_plural() {
        assert_eq!(count(1, "key"), "1 key");
        assert_eq!(count(0, "key"), "0 keys");
        assert_eq!(count(7, "inbox row"), "7 inbox rows");
        assert_eq!(count(1, "delivery"), "1 delivery");
        assert_eq!(count(3, "delivery"), "3 deliveries");
        assert_eq!(count(2, "redelivery"), "2 redeliveries");
        assert_eq!(count(2, "day"), "2 days");
        assert_eq!(count(2, "fresh-id replay"), "2 fresh-id replays");
        assert_eq!(count(4, "process"), "4 processes");
        assert_eq!(count(2, "object (data.id)"), "2 objects (data.id)");
        assert_eq!(count(3, "kill of the receiver"), "3 kills of the receiver");
        assert_eq!(count(2, "copy"), "2 copies");
        assert_eq!(agree(1, "was"), "was");
        assert_eq!(agree(2, "was"), "were");
        assert_eq!(agree(2, "is"), "are");
    }
}
