//! "Did you mean …?": the known name nearest to a mistyped one, for every
//! error that names something that does not exist (a scenario, a profile,
//! an invariant). One rule for every list, so a typo is met the same way
//! wherever it is made.
//!
//! Near means a few edits away (an optimal-string-alignment distance, so a
//! swapped pair of letters is one edit): at most one edit for every three
//! characters of the longer name, and at least one. Case does not count.
//! Ties go to the name listed first, so the answer never depends on
//! anything but the list.

/// The name in `known` nearest to `given`, when one is near enough and is
/// not `given` itself.
pub fn closest<'a>(given: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let wanted = given.trim().to_lowercase();
    let mut best: Option<(usize, &str)> = None;
    for name in known {
        let candidate = name.to_lowercase();
        if candidate == wanted {
            return None;
        }
        let d = strsim::osa_distance(&wanted, &candidate);
        let longer = wanted.chars().count().max(candidate.chars().count());
        if d <= (longer / 3).max(1) && best.is_none_or(|(b, _)| d < b) {
            best = Some((d, name));
        }
    }
    best.map(|(_, name)| name)
}

/// The words of a hint about `given`, which is none of `known`: `did you
/// mean NAME?` when one is near, else `one of A, B, C`.
pub fn hint<'a>(given: &str, known: impl IntoIterator<Item = &'a str> + Clone) -> String {
    match closest(given, known.clone()) {
        Some(name) => format!("did you mean {name}?"),
        None => format!(
            "one of {}",
            known.into_iter().collect::<Vec<_>>().join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCENARIOS: [&str; 4] = [
        "baseline",
        "bad-signature",
        "concurrent-duplicates",
        "redirect",
    ];

    #[test]
    fn a_typo_finds_the_name_it_meant() {
        assert_eq!(closest("basline", SCENARIOS), Some("baseline"));
        assert_eq!(closest("BASELNIE", SCENARIOS), Some("baseline"));
        assert_eq!(
            closest("concurent-duplicate", SCENARIOS),
            Some("concurrent-duplicates")
        );
        assert_eq!(
            closest("strpe", ["stripe", "svix", "slack"]),
            Some("stripe")
        );
        assert_eq!(closest("I22", ["I1", "I2", "I3"]), Some("I2"));
    }

    #[test]
    fn a_word_far_from_every_name_gets_no_guess() {
        assert_eq!(closest("frobnicate", SCENARIOS), None);
        assert_eq!(closest("x", ["I1", "I2"]), None);
        assert_eq!(closest("", SCENARIOS), None);
    }

    #[test]
    fn the_name_itself_is_no_suggestion_and_ties_go_to_the_first_listed() {
        assert_eq!(closest("baseline", SCENARIOS), None);
        assert_eq!(closest("I0", ["I1", "I2"]), Some("I1"));
        assert_eq!(hint("redirct", SCENARIOS), "did you mean redirect?");
        assert_eq!(hint("I0x", ["I1", "I2"]), "one of I1, I2");
    }
}
