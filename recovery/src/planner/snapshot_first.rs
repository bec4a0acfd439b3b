//! Whether a member's removal waits for a full snapshot into the store
//! first.
//!
//! A removal is risky when it takes away a voter that serves: one copy of
//! the data fewer, and in an odd-sized cluster one failure fewer before
//! quorum is lost (3 healthy voters of 3 can lose one; 2 of 2 none).
//! Removing a voter that is not serving never lowers how many more members
//! the cluster can lose (2 healthy of 3 can lose none, 2 of 2 none either)
//! and takes away no copy anyone reads; a learner holds no vote. Only the
//! risky ones pay for a snapshot: at 4 GiB a snapshot takes about 20
//! seconds of the pass that removes the member, and an instance back with
//! an empty disk removes its own stale member (not serving) before it can
//! join again — the snapshot delayed its return and protected nothing the
//! removal put at risk (the change archive and the periodic snapshots go
//! on regardless).

use super::observation::MemberFacts;
use crate::quorum::quorum;

/// The decision and its reason (shown with the removal's own reason).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshotFirst {
    pub take: bool,
    pub why: String,
}

/// How many more voters a cluster of `voters`, `healthy` of them healthy,
/// can lose and keep a quorum.
fn can_lose(voters: usize, healthy: usize) -> usize {
    healthy.saturating_sub(quorum(voters))
}

/// Whether removing `removed` from a cluster of `voters` voters, `healthy`
/// of them healthy, takes a snapshot first.
pub fn snapshot_first(voters: usize, healthy: usize, removed: &MemberFacts) -> SnapshotFirst {
    if removed.is_learner {
        return SnapshotFirst {
            take: false,
            why: "no snapshot first: a learner holds no vote".into(),
        };
    }
    let before = can_lose(voters, healthy);
    let after = can_lose(
        voters.saturating_sub(1),
        healthy.saturating_sub(usize::from(removed.healthy)),
    );
    if removed.healthy {
        SnapshotFirst {
            take: true,
            why: format!(
                "a snapshot first: the member serves; the cluster can lose {before} more member(s) before the removal, {after} after it"
            ),
        }
    } else {
        SnapshotFirst {
            take: false,
            why: format!(
                "no snapshot first: the member is not serving; the cluster can lose {after} more member(s) after the removal, as before it"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(is_learner: bool, healthy: bool) -> MemberFacts {
        MemberFacts {
            id: 7,
            name: "eco-7".into(),
            peer_urls: Vec::new(),
            is_learner,
            healthy,
            unhealthy_since_ms: None,
            learner_since_ms: None,
            promoted_at_ms: None,
        }
    }

    #[test]
    fn only_the_removal_of_a_serving_voter_takes_a_snapshot() {
        // (voters, healthy voters, removed is a learner, removed is healthy) → take
        let table = [
            // A stale or crashed voter: never.
            (3, 2, false, false, false),
            (5, 4, false, false, false),
            (5, 3, false, false, false),
            (4, 3, false, false, false),
            // A serving voter: always.
            (3, 3, false, true, true),
            (5, 5, false, true, true),
            (5, 4, false, true, true),
            (4, 4, false, true, true),
            (2, 2, false, true, true),
            // A learner, healthy or not: never.
            (3, 3, true, true, false),
            (3, 3, true, false, false),
        ];
        for (voters, healthy, learner, up, take) in table {
            let d = snapshot_first(voters, healthy, &member(learner, up));
            assert_eq!(
                d.take, take,
                "{voters} voters, {healthy} healthy, learner {learner}, healthy {up}: {}",
                d.why
            );
            assert!(
                d.why
                    .starts_with(if take { "a snapshot" } else { "no snapshot" })
            );
        }
    }

    #[test]
    fn the_reason_names_the_numbers() {
        assert_eq!(
            snapshot_first(3, 3, &member(false, true)).why,
            "a snapshot first: the member serves; the cluster can lose 1 more member(s) before the removal, 0 after it"
        );
        assert_eq!(
            snapshot_first(3, 2, &member(false, false)).why,
            "no snapshot first: the member is not serving; the cluster can lose 0 more member(s) after the removal, as before it"
        );
    }
}
