//! Who writes snapshots and when (DESIGN §8). Pure.
//!
//! Only the instance beside the etcd leader writes, and only while it is
//! ready ([`WriterFacts::writes`]). It snapshots when the revision advanced
//! and `interval` passed since the last snapshot, and in any case once
//! `max_age` passed — so even a quiet cluster has a recent, verified
//! snapshot. When eco stops, the leader and any voter whose departure
//! leaves no healthy quorum take a final one ([`WriterFacts::final_due`]).

use serde::{Deserialize, Serialize};

/// The newest snapshot known in the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LastSnapshot {
    /// Wall-clock time it was taken (Unix ms, from its metadata): the
    /// clock of whichever instance took it.
    pub taken_unix_ms: u64,
    pub revision: i64,
    /// How long this writer has known it as the newest (its own monotonic
    /// clock).
    pub known_for_ms: u64,
}

impl LastSnapshot {
    /// Its age: the longer of what its timestamp says and how long this
    /// writer has known it. Clocks of instances differ; a snapshot dated in
    /// the future (a clock ahead) still ages on this writer's own clock, so
    /// the schedule never waits for another machine's clock to be behind.
    pub fn age_ms(&self, now_unix_ms: u64) -> u64 {
        now_unix_ms
            .saturating_sub(self.taken_unix_ms)
            .max(self.known_for_ms)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotSchedule {
    pub interval_ms: u64,
    pub max_age_ms: u64,
}

/// Why a snapshot is due now, or `None`.
pub fn snapshot_due(
    now_unix_ms: u64,
    is_writer: bool,
    current_revision: i64,
    last: Option<LastSnapshot>,
    schedule: SnapshotSchedule,
) -> Option<String> {
    if !is_writer {
        return None;
    }
    let Some(last) = last else {
        return Some("the store holds no snapshot of this cluster yet".into());
    };
    let age = last.age_ms(now_unix_ms);
    if age >= schedule.max_age_ms {
        return Some(format!(
            "the newest snapshot is {} s old (max_age {} s)",
            age / 1000,
            schedule.max_age_ms / 1000
        ));
    }
    if current_revision > last.revision && age >= schedule.interval_ms {
        return Some(format!(
            "the revision advanced from {} to {current_revision} and {} s passed (interval {} s)",
            last.revision,
            age / 1000,
            schedule.interval_ms / 1000
        ));
    }
    None
}

/// What the snapshot writer knows of its instance, from the daemon's
/// latest pass.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriterFacts {
    /// The instance is ready (`crate::pass`).
    pub ready: bool,
    /// The etcd process runs.
    pub etcd_running: bool,
    /// The own member's answer to its last probe, `None` when it did not
    /// answer.
    pub member: Option<WriterMember>,
    /// Voters in the member list.
    pub voters: usize,
    /// Voters other than this instance's that are healthy.
    pub healthy_other_voters: usize,
}

/// The own etcd member.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriterMember {
    pub is_leader: bool,
    pub is_learner: bool,
    pub revision: i64,
}

impl WriterFacts {
    /// This instance writes the periodic snapshots: it is ready and beside
    /// the etcd leader (one writer per cluster).
    pub fn writes(&self) -> bool {
        self.ready && self.member.is_some_and(|m| m.is_leader)
    }

    /// The revision a snapshot would capture (0 when not the writer).
    pub fn revision(&self) -> i64 {
        match self.member {
            Some(m) if self.ready => m.revision,
            _ => 0,
        }
    }

    /// Whether a final snapshot is due as this instance leaves its group
    /// (a termination notice), and why. Like [`Self::final_due`], but a
    /// leaving instance is never ready (it takes no new clients), so its
    /// member's leadership counts whether or not it is ready.
    pub fn final_due_leaving(&self) -> Option<String> {
        let me = self.member.filter(|_| self.etcd_running)?;
        final_snapshot_due(
            me.is_leader,
            !me.is_learner,
            self.voters,
            self.healthy_other_voters,
        )
    }

    /// Whether a final snapshot is due as eco stops, and why: only with a
    /// running, answering member ([`final_snapshot_due`] says which).
    pub fn final_due(&self) -> Option<String> {
        let me = self.member.filter(|_| self.etcd_running)?;
        final_snapshot_due(
            self.writes(),
            !me.is_learner,
            self.voters,
            self.healthy_other_voters,
        )
    }
}

/// Whether an instance that is stopping (SIGTERM) takes a final snapshot
/// of its own etcd, and why. The leader does (it holds every acknowledged
/// write). So does any voter whose departure leaves fewer than a quorum of
/// healthy voters behind: after it stops the cluster can acknowledge
/// nothing more, and if every disk is then lost (a whole group shut down
/// and replaced), the writes acknowledged since the leader's last snapshot
/// exist only on these members. A follower leaving a healthy quorum behind
/// does not (a rolling restart snapshots once, on the leader).
pub fn final_snapshot_due(
    is_leader: bool,
    is_voter: bool,
    voters: usize,
    healthy_other_voters: usize,
) -> Option<String> {
    if is_leader {
        return Some("final snapshot: eco is stopping beside the leader".into());
    }
    let quorum = voters / 2 + 1;
    if is_voter && healthy_other_voters < quorum {
        return Some(format!(
            "final snapshot: eco is stopping and leaves {healthy_other_voters} healthy voter(s) of {voters} (quorum {quorum}): nothing more can be acknowledged"
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: SnapshotSchedule = SnapshotSchedule {
        interval_ms: 60_000,
        max_age_ms: 3_600_000,
    };

    #[test]
    fn table() {
        let last = Some(LastSnapshot {
            taken_unix_ms: 1_000_000,
            revision: 10,
            known_for_ms: 0,
        });
        // Dated an hour ahead of this writer's clock (another instance's
        // clock is fast), known for 59 s, then for 60 s.
        let future = |known_for_ms| {
            Some(LastSnapshot {
                taken_unix_ms: 1_000_000 + 3_600_000,
                revision: 10,
                known_for_ms,
            })
        };
        let cases = [
            ("not the writer", 9_000_000, false, 99, last, false),
            ("no snapshot yet", 0, true, 1, None, true),
            (
                "revision advanced, interval passed",
                1_060_000,
                true,
                11,
                last,
                true,
            ),
            (
                "revision advanced, interval not passed",
                1_059_999,
                true,
                11,
                last,
                false,
            ),
            (
                "quiet cluster within max_age",
                4_599_999,
                true,
                10,
                last,
                false,
            ),
            (
                "quiet cluster past max_age",
                4_600_000,
                true,
                10,
                last,
                true,
            ),
            ("clock went backwards", 0, true, 11, last, false),
            (
                "dated in the future, known for less than the interval",
                1_000_000,
                true,
                11,
                future(59_999),
                false,
            ),
            (
                "dated in the future, known for the interval",
                1_000_000,
                true,
                11,
                future(60_000),
                true,
            ),
            (
                "dated in the future, quiet, known for max_age",
                1_000_000,
                true,
                10,
                future(3_600_000),
                true,
            ),
        ];
        for (name, now, writer, rev, last, want) in cases {
            let got = snapshot_due(now, writer, rev, last, S);
            assert_eq!(got.is_some(), want, "{name}: {got:?}");
        }
    }

    #[test]
    fn the_writer_is_the_ready_leader_and_a_final_snapshot_needs_a_running_member() {
        let leader = WriterMember {
            is_leader: true,
            is_learner: false,
            revision: 42,
        };
        let follower = WriterMember {
            is_leader: false,
            ..leader
        };
        let f = |ready, running, member, voters, others| WriterFacts {
            ready,
            etcd_running: running,
            member,
            voters,
            healthy_other_voters: others,
        };
        // (case, facts, writes, revision, final due)
        let cases = [
            (
                "the ready leader",
                f(true, true, Some(leader), 3, 2),
                true,
                42,
                true,
            ),
            (
                "a leader not ready",
                f(false, true, Some(leader), 3, 2),
                false,
                0,
                false,
            ),
            (
                "a follower, healthy quorum behind",
                f(true, true, Some(follower), 3, 2),
                false,
                42,
                false,
            ),
            (
                "a follower, the last but one",
                f(true, true, Some(follower), 3, 1),
                false,
                42,
                true,
            ),
            (
                "etcd not running",
                f(true, false, Some(leader), 3, 2),
                true,
                42,
                false,
            ),
            ("no answer", f(true, true, None, 3, 0), false, 0, false),
        ];
        for (case, facts, writes, revision, due) in cases {
            assert_eq!(facts.writes(), writes, "{case}");
            assert_eq!(facts.revision(), revision, "{case}");
            assert_eq!(facts.final_due().is_some(), due, "{case}");
        }
    }

    #[test]
    fn final_snapshot_on_the_leader_and_on_the_last_members_of_a_quorum() {
        // (leader, voter, voters, healthy others) -> due
        let cases = [
            ((true, true, 3, 2), true, "the leader always"),
            (
                (false, true, 3, 2),
                false,
                "a follower leaving a healthy quorum",
            ),
            ((false, true, 3, 1), true, "the second of three to stop"),
            ((false, true, 3, 0), true, "the last one"),
            ((false, true, 5, 3), false, "five, three healthy others"),
            ((false, true, 5, 2), true, "five, two healthy others"),
            (
                (false, false, 3, 0),
                false,
                "a learner holds nothing acknowledged",
            ),
            ((false, true, 0, 0), true, "nothing known about the others"),
        ];
        for ((leader, voter, voters, others), want, name) in cases {
            assert_eq!(
                final_snapshot_due(leader, voter, voters, others).is_some(),
                want,
                "{name}"
            );
        }
    }

    #[test]
    fn a_leaving_leader_snapshots_though_it_is_not_ready() {
        let leaving_leader = WriterFacts {
            ready: false,
            etcd_running: true,
            member: Some(WriterMember {
                is_leader: true,
                is_learner: false,
                revision: 9,
            }),
            voters: 3,
            healthy_other_voters: 2,
        };
        assert_eq!(
            leaving_leader.final_due(),
            None,
            "not ready: not the writer"
        );
        assert!(leaving_leader.final_due_leaving().is_some());
        let follower = WriterFacts {
            member: Some(WriterMember {
                is_leader: false,
                is_learner: false,
                revision: 9,
            }),
            ..leaving_leader
        };
        assert_eq!(follower.final_due_leaving(), None, "a healthy quorum stays");
        let last_quorum = WriterFacts {
            healthy_other_voters: 1,
            ..follower
        };
        assert!(last_quorum.final_due_leaving().is_some());
        let stopped = WriterFacts {
            etcd_running: false,
            ..leaving_leader
        };
        assert_eq!(stopped.final_due_leaving(), None);
    }
}
