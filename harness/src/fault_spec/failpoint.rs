//! The crash points a scenario names (`failpoint = "crash-after-commit=1/6"`)
//! checked when the scenario loads, in the grammar of
//! `HOOKSTORM_FAILPOINTS` (`docs/target.md`): a comma-separated list of
//! `name=trigger`, a trigger being `always`, a hit number `N` (from 1) or
//! a ratio `n/d` (0 ≤ n ≤ d, d > 0), the names those the reference
//! receiver and sender know.
//!
//! A receiver given a point it does not know refuses to start; found only
//! then, the run would say the target is unreachable, with no report. So
//! the scenario is refused at load instead, naming the point, like any
//! other value out of its range.

/// Every crash point of the protocol: the receiver's and its worker's,
/// then the reference sender's (`hookstorm sender`).
pub const POINTS: [&str; 5] = [
    "crash-after-commit",
    "crash-before-commit",
    "crash-in-worker",
    "crash-before-post",
    "crash-before-mark",
];

/// Checks a `failpoint` value; the error names the element at fault and
/// what is wrong with it.
pub fn check(spec: &str) -> Result<(), String> {
    let elements: Vec<&str> = spec
        .split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .collect();
    if elements.is_empty() {
        return Err(bad(spec, "no crash point"));
    }
    for element in elements {
        let Some((name, trigger)) = element.split_once('=') else {
            return Err(bad(element, "expected name=trigger"));
        };
        if !POINTS.contains(&name.trim()) {
            return Err(bad(
                element,
                &format!(
                    "unknown crash point `{}` (known: {})",
                    cut(name.trim()),
                    POINTS.join(", ")
                ),
            ));
        }
        trigger_ok(trigger.trim()).map_err(|why| bad(element, why))?;
    }
    Ok(())
}

fn bad(element: &str, why: &str) -> String {
    format!(
        "failpoint {:?}: {why} (hint: like crash-after-commit=1/20, crash-in-worker=always or crash-before-commit=3)",
        cut(element)
    )
}

/// A value as an error quotes it: at most 200 characters (a leaf of the
/// plan, this module does not reach `limits::budget::quote`).
fn cut(s: &str) -> String {
    match s.char_indices().nth(200) {
        None => s.to_string(),
        Some((at, _)) => format!("{}… ({} bytes in all)", &s[..at], s.len()),
    }
}

/// Whether `t` is a trigger: `always`, `N` (N ≥ 1) or `n/d` (0 ≤ n ≤ d, d > 0).
fn trigger_ok(t: &str) -> Result<(), &'static str> {
    if t == "always" {
        return Ok(());
    }
    if let Some((n, d)) = t.split_once('/') {
        let (Ok(n), Ok(d)) = (n.trim().parse::<u64>(), d.trim().parse::<u64>()) else {
            return Err("a ratio is two whole numbers, n/d");
        };
        return if d == 0 || n > d {
            Err("a ratio must be n/d with 0 <= n <= d and d > 0")
        } else {
            Ok(())
        };
    }
    match t.parse::<u64>() {
        Ok(0) => Err("hit numbers start at 1"),
        Ok(_) => Ok(()),
        Err(_) => Err("expected always, N or n/d after the ="),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_crash_points_are_accepted() {
        for ok in [
            "crash-after-commit=1/6,crash-before-commit=1/6",
            "crash-in-worker=1/3",
            "crash-before-post=always",
            " crash-before-mark = 3 ",
        ] {
            assert_eq!(check(ok), Ok(()), "{ok}");
        }
    }

    #[test]
    fn an_unknown_or_malformed_crash_point_is_named_with_what_is_wrong() {
        for (spec, says) in [
            (
                "crash-after-comit=1/6",
                "unknown crash point `crash-after-comit`",
            ),
            ("crash-after-commit", "expected name=trigger"),
            ("crash-in-worker=0", "hit numbers start at 1"),
            ("crash-in-worker=3/2", "0 <= n <= d"),
            ("crash-in-worker=often", "expected always, N or n/d"),
            ("", "no crash point"),
        ] {
            let e = check(spec).unwrap_err();
            assert!(e.contains(says), "{spec}: {e}");
        }
    }
}
