//! Human-friendly durations (`15s`, `500ms`, `5m`, `2h`, `1.5s`) for CLI flags
//! and TOML files.
//!
//! Profiles and scenarios talk about waits that range from milliseconds to
//! days; writing them as bare integers invites unit mistakes, so every
//! duration in hookstorm's files is a string with a unit, parsed here once.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serializer};

/// A duration string could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("expected DURATION like 30s, 500ms, 5m or 2h, got {0:?}")]
pub struct DurationParseError(pub String);

/// Parses `"<number><unit>"` with units `ms`, `s`, `m`, `h`, `d`.
pub fn parse_duration(text: &str) -> Result<Duration, DurationParseError> {
    let t = text.trim();
    let err = || DurationParseError(text.to_string());
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(err)?;
    let (num, unit) = t.split_at(split);
    let value: f64 = num.parse().map_err(|_| err())?;
    let secs = match unit.trim() {
        "ms" => value / 1000.0,
        "s" | "sec" => value,
        "m" | "min" => value * 60.0,
        "h" => value * 3600.0,
        "d" => value * 86400.0,
        _ => return Err(err()),
    };
    if !secs.is_finite() || !(0.0..=1e10).contains(&secs) {
        return Err(err());
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Formats a duration the way people read schedules: `2.5s`, `21m 17.5s`, `10h`.
pub fn format_duration(d: Duration) -> String {
    let total = d.as_secs_f64();
    if total < 1.0 && total > 0.0 {
        return format!("{}ms", trim_float(total * 1000.0));
    }
    let hours = (total / 3600.0).floor();
    let minutes = ((total - hours * 3600.0) / 60.0).floor();
    let seconds = total - hours * 3600.0 - minutes * 60.0;
    let mut out = Vec::new();
    if hours > 0.0 {
        out.push(format!("{hours}h"));
    }
    if minutes > 0.0 {
        out.push(format!("{minutes}m"));
    }
    if seconds > 0.0005 || out.is_empty() {
        out.push(format!("{}s", trim_float(seconds)));
    }
    out.join(" ")
}

fn trim_float(v: f64) -> String {
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

/// A `Duration` that (de)serializes as a human string; used in TOML files.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct HumanDuration(pub Duration);

impl fmt::Debug for HumanDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_duration(self.0))
    }
}

impl fmt::Display for HumanDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_duration(self.0))
    }
}

impl std::str::FromStr for HumanDuration {
    type Err = DurationParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_duration(s).map(HumanDuration)
    }
}

impl<'de> Deserialize<'de> for HumanDuration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        parse_duration(&s)
            .map(HumanDuration)
            .map_err(serde::de::Error::custom)
    }
}

impl serde::Serialize for HumanDuration {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_duration(self.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_every_unit() {
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("15s").unwrap(), Duration::from_secs(15));
        assert_eq!(parse_duration("2.5s").unwrap(), Duration::from_millis(2500));
        assert_eq!(parse_duration("5m").unwrap(), Duration::from_secs(300));
        assert_eq!(parse_duration("2h").unwrap(), Duration::from_secs(7200));
        assert_eq!(parse_duration("3d").unwrap(), Duration::from_secs(259200));
    }

    #[test]
    fn durations_without_unit_are_rejected_with_the_expected_syntax() {
        let e = parse_duration("15").unwrap_err();
        assert!(e.to_string().contains("expected DURATION like 30s"));
        assert!(parse_duration("").is_err());
        assert!(parse_duration("-1s").is_err());
        assert!(parse_duration("1y").is_err());
    }

    #[test]
    fn durations_format_like_a_schedule_table() {
        assert_eq!(
            format_duration(Duration::from_millis(1_277_500)),
            "21m 17.5s"
        );
        assert_eq!(format_duration(Duration::from_secs(2555)), "42m 35s");
        assert_eq!(format_duration(Duration::ZERO), "0s");
        assert_eq!(format_duration(Duration::from_secs(36000)), "10h");
    }
}
