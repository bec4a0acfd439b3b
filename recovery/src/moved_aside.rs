//! Which moved-aside data directories may be deleted. eco never deletes a
//! live data directory: one that must go is renamed aside, so a human can
//! still recover from it. Copies accumulate; this decides which ones may
//! go, and it must not be exhaustible by a loop — a crash loop or a
//! membership fight that moves data aside every second must never delete
//! the copy that held the real data a minute ago.
//!
//! A copy is deleted only when all of these hold:
//! - it is older than `min_age` (by the time in its name): age, not a
//!   count, protects recent copies;
//! - it is not among the newest `keep`;
//! - it is not the newest copy that holds etcd data (that one may be the
//!   only copy of data that was a member's);
//! - the live data directory holds etcd data again (this instance has data
//!   of its own; while it has none, every copy is kept).
//!
//! And one directory is never moved aside at all ([`disposal`]): etcd's own
//! leftover of a start that never joined — its `member/` skeleton with a
//! fresh backend and no WAL, all a failed join leaves. It holds nothing
//! (no WAL: it never took part in any cluster), so it is removed instead:
//! a join that keeps failing must not pile up a copy per attempt.
//!
//! Pure: the listing in, the names to delete with their reasons out.

use serde::{Deserialize, Serialize};

/// One moved-aside copy.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Copy {
    pub name: String,
    /// Milliseconds since it was moved aside.
    pub age_ms: u64,
    /// It holds etcd data (a WAL).
    pub holds_data: bool,
}

/// How long and how many copies are kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Retention {
    /// The newest this many are always kept.
    pub keep: usize,
    /// Nothing younger than this is deleted.
    pub min_age_ms: u64,
}

/// What a data directory holds, as far as disposing of it goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Contents {
    /// A WAL: it took part in a cluster.
    Wal,
    /// Only etcd's skeleton of a start that never joined (`member/`,
    /// `member/snap/db`, an empty `member/wal/`): nothing of value.
    UnjoinedSkeleton,
    /// Anything else (files eco cannot account for).
    Other,
}

/// What to do with a data directory that must go.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Disposal {
    /// Rename it aside (kept for a human; [`to_delete`] decides later).
    MoveAside,
    /// Remove it: it holds nothing.
    Remove,
}

/// A data directory that must go is moved aside unless it holds nothing
/// at all (a start that never joined).
pub fn disposal(contents: Contents) -> Disposal {
    match contents {
        Contents::UnjoinedSkeleton => Disposal::Remove,
        Contents::Wal | Contents::Other => Disposal::MoveAside,
    }
}

/// The copies to delete, with why. `copies` in any order.
pub fn to_delete(
    copies: &[Copy],
    retention: Retention,
    live_holds_data: bool,
) -> Vec<(String, String)> {
    if !live_holds_data {
        return Vec::new();
    }
    let mut newest_first: Vec<&Copy> = copies.iter().collect();
    newest_first.sort_by_key(|c| c.age_ms);
    let newest_with_data = newest_first
        .iter()
        .find(|c| c.holds_data)
        .map(|c| c.name.clone());
    newest_first
        .iter()
        .skip(retention.keep.max(1))
        .filter(|c| c.age_ms >= retention.min_age_ms)
        .filter(|c| Some(&c.name) != newest_with_data.as_ref())
        .map(|c| {
            (
                c.name.clone(),
                format!(
                    "moved aside {} h ago (kept at least {} h), beyond the newest {}, and this instance holds data again",
                    c.age_ms / 3_600_000,
                    retention.min_age_ms / 3_600_000,
                    retention.keep.max(1)
                ),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_start_that_never_joined_is_removed() {
        assert_eq!(disposal(Contents::UnjoinedSkeleton), Disposal::Remove);
        assert_eq!(disposal(Contents::Wal), Disposal::MoveAside);
        assert_eq!(disposal(Contents::Other), Disposal::MoveAside);
    }

    const H: u64 = 3_600_000;
    const R: Retention = Retention {
        keep: 3,
        min_age_ms: 7 * 24 * H,
    };

    fn copy(name: &str, age_ms: u64, holds_data: bool) -> Copy {
        Copy {
            name: name.into(),
            age_ms,
            holds_data,
        }
    }

    fn names(v: Vec<(String, String)>) -> Vec<String> {
        v.into_iter().map(|(n, _)| n).collect()
    }

    #[test]
    fn a_loop_cannot_exhaust_the_copies() {
        // 17 moves in ten seconds: the first held the real data.
        let mut copies = vec![copy("real", 10_000, true)];
        for i in 0..16 {
            copies.push(copy(&format!("empty-{i}"), 9_000 - i * 500, false));
        }
        assert!(
            to_delete(&copies, R, true).is_empty(),
            "all younger than a week"
        );
        assert!(to_delete(&copies, R, false).is_empty());
    }

    #[test]
    fn old_copies_beyond_the_newest_go_but_never_the_last_data() {
        let copies = vec![
            copy("a", 30 * 24 * H, true),
            copy("b", 20 * 24 * H, true),
            copy("c", 10 * 24 * H, false),
            copy("d", 9 * 24 * H, false),
            copy("e", 8 * 24 * H, false),
            copy("f", 1, false),
        ];
        // Newest three: f, e, d. Of the rest, b is the newest with data.
        assert_eq!(names(to_delete(&copies, R, true)), ["c", "a"]);
        assert!(
            to_delete(&copies, R, false).is_empty(),
            "no data of its own: everything stays"
        );
        let reasons = to_delete(&copies, R, true);
        assert!(reasons[0].1.contains("240 h ago"), "{reasons:?}");
    }
}
