//! Who writes snapshots and when (docs/concepts.md, "Snapshot writer"). Pure.
//!
//! Only the instance beside the etcd leader writes, and only while it is
//! ready ([`LeaderFacts::writes`]). It snapshots when the revision advanced
//! and `interval` passed since the last snapshot, and in any case once
//! `max_age` passed — so even a quiet cluster has a recent, verified
//! snapshot. When eco stops, the leader and any voter whose departure
//! leaves no healthy quorum take a final one ([`LeaderFacts::final_due`]).
//!
//! The age is measured from the last snapshot actually stored
//! ([`Followed`]): a quiet cluster's snapshots all have one name (one
//! revision), each replacing the one before, so the writer restarts its
//! clock when it stores one itself or when the store's object is another
//! one (another name, or the same name taken at another time) — never
//! from the first time it saw the name. After a max-age snapshot of an
//! unchanged revision the next is due `max_age` later.

use serde::{Deserialize, Serialize};

/// The newest snapshot known in the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LastSnapshot {
    /// Wall-clock time it was taken (Unix ms, from its metadata): the
    /// clock of whichever instance took it.
    pub taken_unix_ms: u64,
    pub revision: i64,
    /// How long ago this writer stored it or first saw it as it is now
    /// (its own monotonic clock).
    pub known_for_ms: u64,
    /// This writer stored it, `known_for_ms` ago: that is its age, whatever
    /// time the store's object carries.
    pub stored_here: bool,
}

impl LastSnapshot {
    /// Its age. One this writer stored is exactly as old as the writer's
    /// own clock says. Otherwise the longer of what its timestamp says and
    /// how long this writer has known it: clocks of instances differ, and a
    /// snapshot dated in the future (a clock ahead) still ages on this
    /// writer's own clock, so the schedule never waits for another
    /// machine's clock to be behind.
    pub fn age_ms(&self, now_unix_ms: u64) -> u64 {
        if self.stored_here {
            return self.known_for_ms;
        }
        now_unix_ms
            .saturating_sub(self.taken_unix_ms)
            .max(self.known_for_ms)
    }
}

/// The newest snapshot in the store, as a listing found it or as this
/// writer just stored it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewestSnapshot {
    /// The object's name (it says the revision; one revision, one name).
    pub name: String,
    /// When it was taken (Unix ms, from its metadata; 0 when unknown).
    pub taken_unix_ms: u64,
    pub revision: i64,
}

/// The newest snapshot as the writer follows it from pass to pass: since
/// when (the writer's monotonic clock, ms) it knows this very object, and
/// whether it stored it itself.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Followed {
    pub newest: NewestSnapshot,
    pub since_ms: u64,
    pub stored_here: bool,
}

impl Followed {
    /// What the writer follows after a listing found `found` (the newest
    /// object, `None` when the store holds none), at `now_ms`:
    /// - another name: a new snapshot, known from now;
    /// - the same name taken at the same time: the same object, its clock
    ///   runs on;
    /// - the same name, another time, one this writer stored: still the
    ///   one it stored (a store may keep the replaced object's time), its
    ///   clock runs on;
    /// - the same name, another time, not stored here: another writer
    ///   replaced it, known from now.
    pub fn after_listing(
        previous: Option<Followed>,
        found: Option<NewestSnapshot>,
        now_ms: u64,
    ) -> Option<Followed> {
        let found = found?;
        match previous {
            Some(p)
                if p.newest.name == found.name
                    && (p.newest.taken_unix_ms == found.taken_unix_ms || p.stored_here) =>
            {
                Some(p)
            }
            _ => Some(Followed {
                newest: found,
                since_ms: now_ms,
                stored_here: false,
            }),
        }
    }

    /// What the writer follows once it stored `stored` at `now_ms`: that
    /// snapshot, aged from now — also when it replaced an object of the
    /// same name.
    pub fn after_storing(stored: NewestSnapshot, now_ms: u64) -> Followed {
        Followed {
            newest: stored,
            since_ms: now_ms,
            stored_here: true,
        }
    }

    /// The schedule's view of it at `now_ms`.
    pub fn last_snapshot(&self, now_ms: u64) -> LastSnapshot {
        LastSnapshot {
            taken_unix_ms: self.newest.taken_unix_ms,
            revision: self.newest.revision,
            known_for_ms: now_ms.saturating_sub(self.since_ms),
            stored_here: self.stored_here,
        }
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

/// What the tasks beside the daemon's loop know of their instance, from
/// its latest pass (sent one way, on a watch channel, to its named
/// subscribers: the snapshot writer and the ACL reconciler; the daemon
/// keeps its own copy for the termination handling); nothing flows back.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaderFacts {
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

impl LeaderFacts {
    /// This instance is ready and its member leads the cluster: the one
    /// instance that writes the periodic snapshots and reconciles the ACL.
    pub fn ready_leader(&self) -> bool {
        self.ready && self.member.is_some_and(|m| m.is_leader)
    }

    /// This instance writes the periodic snapshots: it is ready and beside
    /// the etcd leader (one writer per cluster).
    pub fn writes(&self) -> bool {
        self.ready_leader()
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
    let quorum = crate::quorum::quorum(voters);
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
            stored_here: false,
        });
        // Dated an hour ahead of this writer's clock (another instance's
        // clock is fast), known for 59 s, then for 60 s.
        let future = |known_for_ms| {
            Some(LastSnapshot {
                taken_unix_ms: 1_000_000 + 3_600_000,
                revision: 10,
                known_for_ms,
                stored_here: false,
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

    fn snap(name: &str, taken_unix_ms: u64) -> NewestSnapshot {
        NewestSnapshot {
            name: name.into(),
            taken_unix_ms,
            revision: 10,
        }
    }

    /// What the writer follows after a listing: (case, before, found,
    /// expected since, stored here).
    #[test]
    fn following_the_newest_snapshot() {
        let at = |since_ms, stored_here, newest| Followed {
            newest,
            since_ms,
            stored_here,
        };
        let cases = [
            (
                "first listing",
                None,
                Some(snap("a", 5)),
                Some((100, false)),
            ),
            ("empty store", Some(at(1, false, snap("a", 5))), None, None),
            (
                "the same object",
                Some(at(1, false, snap("a", 5))),
                Some(snap("a", 5)),
                Some((1, false)),
            ),
            (
                "another name",
                Some(at(1, true, snap("a", 5))),
                Some(snap("b", 6)),
                Some((100, false)),
            ),
            (
                "the same name replaced by another writer",
                Some(at(1, false, snap("a", 5))),
                Some(snap("a", 7)),
                Some((100, false)),
            ),
            (
                "the same name stored here, the store kept the old time",
                Some(at(1, true, snap("a", 5))),
                Some(snap("a", 3)),
                Some((1, true)),
            ),
        ];
        for (case, before, found, want) in cases {
            let got = Followed::after_listing(before, found, 100);
            assert_eq!(
                got.as_ref().map(|f| (f.since_ms, f.stored_here)),
                want,
                "{case}: {got:?}"
            );
        }
    }

    /// An idle cluster (one revision, so one name, each snapshot replacing
    /// the one before), checked every second for 100 s with `max_age` 10 s:
    /// one snapshot per `max_age`, whether the store dates the replaced
    /// object anew or keeps its first time; never two of the revision
    /// within `max_age`.
    #[test]
    fn an_idle_cluster_snapshots_once_per_max_age() {
        let schedule = SnapshotSchedule {
            interval_ms: 10_000,
            max_age_ms: 10_000,
        };
        // The wall clock runs a day ahead of the writer's monotonic one.
        let wall = |t: u64| t + 86_400_000;
        for store_keeps_first_time in [false, true] {
            let mut in_store: Option<NewestSnapshot> = None;
            let mut followed: Option<Followed> = None;
            let mut stored_at = Vec::new();
            for t in (0..=100_000).step_by(1_000) {
                followed = Followed::after_listing(followed, in_store.clone(), t);
                let last = followed.as_ref().map(|f| f.last_snapshot(t));
                if snapshot_due(wall(t), true, 10, last, schedule).is_none() {
                    continue;
                }
                stored_at.push(t);
                let taken = match &in_store {
                    Some(s) if store_keeps_first_time => s.taken_unix_ms,
                    _ => wall(t),
                };
                in_store = Some(snap("i1-r10", taken));
                followed = Some(Followed::after_storing(snap("i1-r10", wall(t)), t));
            }
            assert_eq!(
                stored_at,
                (0..=100_000).step_by(10_000).collect::<Vec<u64>>(),
                "the store keeps the first time: {store_keeps_first_time}"
            );
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
        let f = |ready, running, member, voters, others| LeaderFacts {
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
        let leaving_leader = LeaderFacts {
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
        let follower = LeaderFacts {
            member: Some(WriterMember {
                is_leader: false,
                is_learner: false,
                revision: 9,
            }),
            ..leaving_leader
        };
        assert_eq!(follower.final_due_leaving(), None, "a healthy quorum stays");
        let last_quorum = LeaderFacts {
            healthy_other_voters: 1,
            ..follower
        };
        assert!(last_quorum.final_due_leaving().is_some());
        let stopped = LeaderFacts {
            etcd_running: false,
            ..leaving_leader
        };
        assert_eq!(stopped.final_due_leaving(), None);
    }
}
