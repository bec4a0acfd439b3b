//! Durations written the way humans write them in config files: `30s`, `5m`,
//! `100ms`, `1h 30m`. Parsed with `humantime`; printed back the same way.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// A duration read from config. Wraps [`std::time::Duration`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ConfigDuration(pub std::time::Duration);

impl ConfigDuration {
    pub const fn from_millis(ms: u64) -> Self {
        Self(std::time::Duration::from_millis(ms))
    }
    pub const fn from_secs(s: u64) -> Self {
        Self(std::time::Duration::from_secs(s))
    }
    pub fn get(self) -> std::time::Duration {
        self.0
    }
    /// Whole milliseconds, saturating (a parsed duration is at most
    /// [`MAX_DURATION`], far below `u64::MAX` ms).
    pub fn millis(self) -> u64 {
        u64::try_from(self.0.as_millis()).unwrap_or(u64::MAX)
    }
}

/// The longest duration a config file may hold: ten years. Every timing
/// eco derives from a setting (multiples of it, sums of a few) stays far
/// inside `Duration` and `u64` milliseconds, so none can overflow or wrap.
pub const MAX_DURATION: std::time::Duration = std::time::Duration::from_secs(10 * 365 * 24 * 3600);

impl fmt::Display for ConfigDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", humantime::format_duration(self.0))
    }
}

impl FromStr for ConfigDuration {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let d = humantime::parse_duration(s.trim()).map_err(|e| {
            format!("`{s}` is not a duration ({e}); write it like `500ms`, `30s`, `5m` or `1h`")
        })?;
        if d > MAX_DURATION {
            return Err(format!(
                "`{s}` is too long; allowed: at most {}",
                humantime::format_duration(MAX_DURATION)
            ));
        }
        Ok(ConfigDuration(d))
    }
}

impl Serialize for ConfigDuration {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for ConfigDuration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_round_trip() {
        for (text, ms) in [
            ("30s", 30_000),
            ("5m", 300_000),
            ("100ms", 100),
            ("1h 30m", 5_400_000),
        ] {
            let d: ConfigDuration = text.parse().unwrap();
            assert_eq!(d.0.as_millis(), ms, "{text}");
            let again: ConfigDuration = d.to_string().parse().unwrap();
            assert_eq!(again, d);
        }
    }

    #[test]
    fn refuses_durations_beyond_ten_years_instead_of_overflowing() {
        for text in ["200000000000y", "11y", "18446744073709551616ms"] {
            let err = text.parse::<ConfigDuration>().unwrap_err();
            assert!(
                err.contains("too long") || err.contains("not a duration"),
                "{text}: {err}"
            );
        }
        let ten: ConfigDuration = "3650d".parse().unwrap();
        assert_eq!(ten.get(), MAX_DURATION);
        assert_eq!(ten.millis(), 315_360_000_000);
    }

    #[test]
    fn rejects_bare_numbers_with_a_hint() {
        let err = "30".parse::<ConfigDuration>().unwrap_err();
        assert!(err.contains("write it like"), "{err}");
    }
}
