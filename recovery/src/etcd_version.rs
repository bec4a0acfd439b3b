//! An etcd release's version, `major.minor.patch`: what the upgrade rules,
//! the flag table, the advisories and the readiness check are keyed by.
//!
//! What it does not do: read a version (eco reads `etcd --version` and
//! the members' Status).

use serde::{Deserialize, Serialize};
use std::fmt;

/// An etcd version (`major.minor.patch`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Version {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
}

impl Version {
    pub const fn new(major: u32, minor: u32, patch: u32) -> Self {
        Self {
            major,
            minor,
            patch,
        }
    }

    /// Parses `3.5.1` (a suffix such as `-rc.0` or `+git` is ignored);
    /// `None` for anything else.
    pub fn parse(text: &str) -> Option<Self> {
        let mut parts = text.trim().split(['.', '-', '+']);
        Some(Self {
            major: parts.next()?.parse().ok()?,
            minor: parts.next()?.parse().ok()?,
            patch: parts.next()?.parse().ok()?,
        })
    }

    /// `(major, minor)`: the release line.
    pub fn minor_line(self) -> (u32, u32) {
        (self.major, self.minor)
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const V34: Version = Version::new(3, 4, 23);
    const V35: Version = Version::new(3, 5, 1);

    #[test]
    fn parses_versions() {
        assert_eq!(Version::parse("3.5.1"), Some(V35));
        assert_eq!(Version::parse("3.4.23+git"), Some(V34));
        assert_eq!(Version::parse("3.6.0-rc.1"), Some(Version::new(3, 6, 0)));
        assert_eq!(Version::parse(""), None);
        assert_eq!(Version::parse("3.5"), None);
    }
}
