//! Which stored snapshot is the newest: one rule for every reader (the
//! snapshot writer's schedule and verification, the quorum-loss
//! protocol's store facts).
//!
//! The newest is the one furthest along: the highest incarnation, then the
//! highest revision, both from the snapshot's name. Two snapshots of one
//! incarnation at one revision hold the same data; the later one taken
//! (its recorded creation time), then the greater name, is chosen only so
//! that every reader of one listing picks the same object, whatever order
//! the store listed them in. A creation time never outranks a position: it
//! comes from another machine's clock.
//!
//! What it does not do: read names or metadata (the caller parses them),
//! or judge whether a snapshot can be restored (verification does).

/// What ranks one stored snapshot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshotRank<'a> {
    pub incarnation: u64,
    pub revision: i64,
    /// Its recorded creation time (0 when it has none).
    pub taken_unix_ms: u64,
    pub name: &'a str,
}

/// The index in `snapshots` of the newest, or `None` when there is none.
pub fn newest(snapshots: &[SnapshotRank<'_>]) -> Option<usize> {
    snapshots
        .iter()
        .enumerate()
        .max_by_key(|(_, s)| (s.incarnation, s.revision, s.taken_unix_ms, s.name))
        .map(|(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rank(incarnation: u64, revision: i64, taken: u64, name: &str) -> SnapshotRank<'_> {
        SnapshotRank {
            incarnation,
            revision,
            taken_unix_ms: taken,
            name,
        }
    }

    #[test]
    fn the_newest_is_the_one_furthest_along_whatever_the_order() {
        // (what is listed, which is the newest, why)
        let table: Vec<(Vec<SnapshotRank>, Option<&str>, &str)> = vec![
            (vec![], None, "nothing listed"),
            (
                vec![rank(1, 10, 5, "a"), rank(1, 20, 1, "b")],
                Some("b"),
                "a higher revision wins over a later clock",
            ),
            (
                vec![rank(2, 3, 1, "new"), rank(1, 900, 9, "old")],
                Some("new"),
                "a higher incarnation wins over a higher revision (a reseed restarts revisions above the old)",
            ),
            (
                vec![
                    rank(1, 20, 7, "x"),
                    rank(1, 20, 9, "y"),
                    rank(1, 20, 8, "z"),
                ],
                Some("y"),
                "one position: the later taken",
            ),
            (
                vec![rank(1, 20, 0, "p"), rank(1, 20, 0, "q")],
                Some("q"),
                "one position, no times: the greater name",
            ),
        ];
        for (listed, want, why) in table {
            for reversed in [false, true] {
                let mut l = listed.clone();
                if reversed {
                    l.reverse();
                }
                let got = newest(&l).map(|i| l[i].name);
                assert_eq!(got, want, "{why} (listed reversed: {reversed})");
            }
        }
    }
}
