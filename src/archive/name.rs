//! Segment object names:
//! `<cluster>/archive/i<incarnation>-r<first>-r<last>-<token>.seg`, the
//! numbers zero-padded so a listing sorts by incarnation, then first
//! revision, and a gap between one segment's last revision and the next
//! one's first is visible in it. Two writers of one range (a leadership
//! change) write one name; either copy is etcd's history of that range.

use std::fmt;

/// What a segment's name says.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct SegmentName {
    pub cluster: String,
    pub incarnation: u64,
    pub first: i64,
    pub last: i64,
    pub token: String,
}

impl SegmentName {
    /// The listing prefix of a cluster's segments.
    pub fn prefix(cluster: &str) -> String {
        format!("{cluster}/archive/")
    }

    /// Parses an object name; `None` for anything that is not exactly a
    /// segment name of this shape (it is not a segment, and never deleted).
    pub fn parse(object: &str) -> Option<Self> {
        let (cluster, rest) = object.split_once("/archive/")?;
        if cluster.is_empty() || cluster.contains('/') {
            return None;
        }
        let rest = rest.strip_suffix(".seg")?.strip_prefix('i')?;
        let (inc, rest) = rest.split_at_checked(10)?;
        let rest = rest.strip_prefix("-r")?;
        let (first, rest) = rest.split_at_checked(20)?;
        let rest = rest.strip_prefix("-r")?;
        let (last, rest) = rest.split_at_checked(20)?;
        let token = rest.strip_prefix('-')?;
        let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        if !digits(inc) || !digits(first) || !digits(last) {
            return None;
        }
        if token.is_empty() || token.contains('/') {
            return None;
        }
        let name = Self {
            cluster: cluster.to_string(),
            incarnation: inc.parse().ok()?,
            first: first.parse().ok()?,
            last: last.parse().ok()?,
            token: token.to_string(),
        };
        (name.first >= 1 && name.first <= name.last).then_some(name)
    }
}

impl fmt::Display for SegmentName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}i{:010}-r{:020}-r{:020}-{}.seg",
            Self::prefix(&self.cluster),
            self.incarnation,
            self.first.max(0),
            self.last.max(0),
            self.token
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_order() {
        let a = SegmentName {
            cluster: "main".into(),
            incarnation: 2,
            first: 43,
            last: 50,
            token: "main-2-0000abcd".into(),
        };
        let text = a.to_string();
        assert_eq!(
            text,
            "main/archive/i0000000002-r00000000000000000043-r00000000000000000050-main-2-0000abcd.seg"
        );
        assert_eq!(SegmentName::parse(&text), Some(a.clone()));
        let b = SegmentName {
            first: 51,
            last: 51,
            ..a.clone()
        };
        let c = SegmentName {
            incarnation: 3,
            first: 1,
            last: 2,
            ..a.clone()
        };
        assert!(a.to_string() < b.to_string() && b.to_string() < c.to_string());
    }

    #[test]
    fn anything_else_is_not_a_segment() {
        for bad in [
            "main/archive/i0000000002-r00000000000000000043-r00000000000000000050-t.seg.tmp",
            "main/archive/i2-r43-r50-t.seg",
            "main/archive/i0000000002-r00000000000000000050-r00000000000000000043-t.seg",
            "main/archive/i0000000002-r00000000000000000000-r00000000000000000043-t.seg",
            "main/archive/i0000000002-r00000000000000000043-r00000000000000000050-.seg",
            "main/snapshots/i0000000002-r00000000000000000042-t.db",
            "a/b/archive/i0000000002-r00000000000000000043-r00000000000000000050-t.seg",
            "main/archive/notes.txt",
        ] {
            assert_eq!(SegmentName::parse(bad), None, "{bad}");
        }
    }
}
