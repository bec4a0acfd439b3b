//! Snapshot object names: `<cluster>/snapshots/i<incarnation>-r<revision>-<token>.db`
//! with incarnation and revision zero-padded so names sort in time order.

use std::fmt;

/// What a snapshot's name says.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct SnapshotName {
    pub cluster: String,
    pub incarnation: u64,
    pub revision: i64,
    pub token: String,
}

impl SnapshotName {
    /// The listing prefix of a cluster's snapshots.
    pub fn prefix(cluster: &str) -> String {
        format!("{cluster}/snapshots/")
    }

    /// Parses an object name; `None` for anything that is not exactly a
    /// snapshot name of this shape.
    pub fn parse(object: &str) -> Option<Self> {
        let (cluster, rest) = object.split_once("/snapshots/")?;
        if cluster.is_empty() || cluster.contains('/') {
            return None;
        }
        let rest = rest.strip_suffix(".db")?;
        let rest = rest.strip_prefix('i')?;
        let (inc, rest) = rest.split_at_checked(10)?;
        let rest = rest.strip_prefix("-r")?;
        let (rev, rest) = rest.split_at_checked(20)?;
        let token = rest.strip_prefix('-')?;
        if !inc.bytes().all(|b| b.is_ascii_digit()) || !rev.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        if token.is_empty() || token.contains('/') {
            return None;
        }
        Some(Self {
            cluster: cluster.to_string(),
            incarnation: inc.parse().ok()?,
            revision: rev.parse().ok()?,
            token: token.to_string(),
        })
    }
}

impl fmt::Display for SnapshotName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}i{:010}-r{:020}-{}.db",
            Self::prefix(&self.cluster),
            self.incarnation,
            self.revision.max(0),
            self.token
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_order() {
        let a = SnapshotName {
            cluster: "main".into(),
            incarnation: 2,
            revision: 42,
            token: "main-2-0000abcd".into(),
        };
        let text = a.to_string();
        assert_eq!(
            text,
            "main/snapshots/i0000000002-r00000000000000000042-main-2-0000abcd.db"
        );
        assert_eq!(SnapshotName::parse(&text), Some(a.clone()));
        let b = SnapshotName {
            revision: 100,
            ..a.clone()
        };
        let c = SnapshotName {
            incarnation: 3,
            revision: 1,
            ..a.clone()
        };
        assert!(
            a.to_string() < b.to_string() && b.to_string() < c.to_string(),
            "names sort by incarnation, then revision"
        );
    }

    #[test]
    fn anything_else_is_not_a_snapshot() {
        for bad in [
            "main/snapshots/i0000000002-r00000000000000000042-t.db.tmp",
            "main/snapshots/i2-r42-t.db",
            "main/snapshots/i000000000x-r00000000000000000042-t.db",
            "main/snapshots/i0000000002-r00000000000000000042-.db",
            "main/incarnations/0000000002",
            "snapshots/i0000000002-r00000000000000000042-t.db",
            "a/b/snapshots/i0000000002-r00000000000000000042-t.db",
            "main/snapshots/notes.txt",
            "main/snapshots/é0000000002-r00000000000000000042-t.db",
        ] {
            assert_eq!(SnapshotName::parse(bad), None, "{bad}");
        }
    }
}
