//! The documented exit codes of every hookstorm command (see
//! `docs/invariants.md`): one place, so the CLI, the docs and CI gates agree.

/// Every invariant passed.
pub const PASS: i32 = 0;
/// Some invariant failed.
pub const FAIL: i32 = 1;
/// Some invariant could not be decided (unknown), none failed.
pub const UNKNOWN: i32 = 2;
/// The target was unusable: unreachable, or its configuration is bad.
pub const TARGET_UNUSABLE: i32 = 3;
/// The command line itself was wrong.
pub const USAGE: i32 = 254;
/// Stopped by Ctrl-C or SIGTERM (128 + SIGINT, as shells report it); the
/// reports of what finished were written.
pub const INTERRUPTED: i32 = 130;

/// One exit code and what it means: the help text, the README and
/// `docs/invariants.md` are rendered from [`CODES`] or held to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Code {
    /// The code.
    pub code: i32,
    /// In a sentence of the help text and the README.
    pub short: &'static str,
    /// In the table of `docs/invariants.md`.
    pub long: &'static str,
}

/// Every exit code a command ends with, in numeric order.
pub const CODES: [Code; 6] = [
    Code {
        code: PASS,
        short: "all pass",
        long: "every checked invariant passed (non-strict deviations allowed unless `--strict`)",
    },
    Code {
        code: FAIL,
        short: "some invariant failed",
        long: "some invariant failed (or a non-strict deviation under `--strict`)",
    },
    Code {
        code: UNKNOWN,
        short: "unknown (could not decide)",
        long: "unknown: something could not be decided, nothing failed",
    },
    Code {
        code: TARGET_UNUSABLE,
        short: "the target was unusable (unreachable, bad configuration)",
        long: "the target was unusable: unreachable, or its configuration is wrong",
    },
    Code {
        code: INTERRUPTED,
        short: "interrupted (the reports of what finished are written)",
        long: "interrupted (Ctrl-C or SIGTERM); the reports of what finished were written, marked `interrupted`",
    },
    Code {
        code: USAGE,
        short: "usage error",
        long: "usage error: a wrong flag or value",
    },
];

/// The help text's line: `Exit codes: 0 all pass, 1 …, 254 usage error.`
pub fn help() -> String {
    let list: Vec<String> = CODES
        .iter()
        .map(|c| format!("{} {}", c.code, c.short))
        .collect();
    format!("Exit codes: {}.", list.join(", "))
}

/// The Markdown table of `docs/invariants.md`.
pub fn markdown() -> String {
    let mut s = String::from("| code | meaning |\n|---|---|\n");
    for c in CODES {
        s.push_str(&format!("| {} | {} |\n", c.code, c.long));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_exit_code_is_in_the_table_once_in_numeric_order() {
        let codes: Vec<i32> = CODES.iter().map(|c| c.code).collect();
        assert_eq!(
            codes,
            [PASS, FAIL, UNKNOWN, TARGET_UNUSABLE, INTERRUPTED, USAGE]
        );
        assert!(codes.windows(2).all(|w| w[0] < w[1]));
        assert!(help().contains("130 interrupted"), "{}", help());
    }

    /// `docs/invariants.md` carries [`markdown`] between its markers; the
    /// README's, docs/README.md's and docs/commands.md's sentences name every code with its
    /// short meaning.
    #[test]
    fn the_docs_state_the_exit_codes_of_the_code() {
        crate::docs_table::assert_section(
            concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/invariants.md"),
            "exit-codes",
            &markdown(),
        );
        for doc in ["README.md", "docs/README.md", "docs/commands.md"] {
            let path = format!("{}/../{doc}", env!("CARGO_MANIFEST_DIR"));
            let text = std::fs::read_to_string(&path).expect("the doc reads");
            let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
            for c in CODES {
                let said = format!("`{}` {}", c.code, c.short);
                assert!(flat.contains(&said), "{doc} does not say {said:?}");
            }
        }
    }
}
