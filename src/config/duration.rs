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
}

impl fmt::Display for ConfigDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", humantime::format_duration(self.0))
    }
}

impl FromStr for ConfigDuration {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        humantime::parse_duration(s.trim())
            .map(ConfigDuration)
            .map_err(|e| {
                format!("`{s}` is not a duration ({e}); write it like `500ms`, `30s`, `5m` or `1h`")
            })
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
    fn rejects_bare_numbers_with_a_hint() {
        let err = "30".parse::<ConfigDuration>().unwrap_err();
        assert!(err.contains("write it like"), "{err}");
    }
}
