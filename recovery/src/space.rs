//! The space governor: when to defragment which member, and how to bring
//! a cluster back from etcd's `NOSPACE` alarm. Pure.
//!
//! etcd's backend (bbolt) never gives pages back to the file system by
//! itself: after compactions and deletions a member's database file holds
//! free pages (its size minus its size in use). Defragmenting a member
//! rewrites its file without them, and blocks that member (reads and
//! writes wait) while it runs; defragmenting every member at once stalls
//! the cluster. At the quota (`--quota-backend-bytes`) etcd raises
//! `NOSPACE` and refuses writes until the space is reclaimed and the alarm
//! disarmed.
//!
//! The rules (one [`SpaceStep`] per pass, taken by the instance beside the
//! raft leader only, so at most one defragmentation runs in the cluster):
//!
//! - only while every member answered its Status probe (healthy or, under
//!   `NOSPACE`, answering), and never a learner's turn before the voters';
//! - **`NOSPACE`**: compact to the current revision (once per episode; a
//!   second compaction to the same revision is etcd's "already compacted",
//!   harmless), then defragment every member once, followers first and
//!   the leader last, then disarm the alarm. Once each, not "each that
//!   still holds reclaimable space": a follower applies the compaction
//!   after the leader answers it (etcd 3.5.30 here: the followers' Status
//!   still showed their whole file in use a pass later), so its sizes
//!   cannot say it is done. The episode (compacted, who was
//!   defragmented) is the daemon's memory; an eco restarted in the middle
//!   compacts and defragments again from the start — harmless, and bounded
//!   by the member count;
//! - **otherwise**, a member whose reclaimable space passes both the ratio
//!   and the floor of the [`SpacePolicy`], and whose size in use has
//!   **settled** (it fell by at most [`SETTLED_FALL`] of its database
//!   from the highest the governor has seen of it for at least
//!   [`SETTLE_WINDOW_MS`]: [`InUseSeen`], kept by the daemon with
//!   [`remember_in_use`]), is defragmented, the one with the most
//!   reclaimable space first, followers before the leader. A member still
//!   compacting frees pages pass after pass (etcd compacts in batches, in
//!   the background on every member; at 8 GiB for minutes, some 30 MiB a
//!   second): defragmented in the middle, it was stalled for tens of
//!   seconds to give back only what was free so far, and what the
//!   compaction freed afterwards stayed in the file, under the ratio
//!   (measured at 8 GiB: each member defragmented from 8.3 GiB to 4.2 GiB,
//!   3.3 GiB in use once the compaction ended). A window, not the previous
//!   pass: passes 300 ms apart each saw the compaction free less than 1 %.
//!   What it cannot see: a compaction that began in the last moments (its
//!   first 1 % freed) when the member is due already. And the
//!   leader's turn is a **leadership handover** first, to a voter that
//!   answered (the one with the least reclaimable space): the leader's
//!   stall would be the cluster's (its applies wait; at 8 GiB a
//!   defragmentation takes tens of seconds), a follower's is only its own
//!   clients'. The instance beside the new leader then governs and
//!   defragments the old leader as a follower. A leader with no voter to
//!   hand over to (a cluster of one) is defragmented as it is. Under
//!   `NOSPACE` the leader keeps its turn last without a handover: writes
//!   are refused until the alarm is disarmed anyway, and the episode's
//!   memory is this instance's.
//!
//! What it does not do: compact for space outside `NOSPACE` (etcd's own
//! `--auto-compaction-*` does), or defragment while any member is
//! unhealthy (a defragmentation stalls the member it runs on: with one
//! member down that could be the quorum).

use serde::{Deserialize, Serialize};

/// One member's space, as its Status answered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberSpace {
    pub id: u64,
    pub name: String,
    pub is_learner: bool,
    pub is_leader: bool,
    /// Answered its Status probe this pass.
    pub answered: bool,
    /// The backend file's size.
    pub db_size: u64,
    /// The part of it in use.
    pub db_size_in_use: u64,
    /// What the governor remembers of its size in use (`None`: nothing
    /// yet).
    pub in_use_before: Option<InUseSeen>,
}

/// The highest size in use the governor has seen of a member since it
/// last saw that size fall by more than [`SETTLED_FALL`] (or first saw
/// the member), and how long ago that was.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InUseSeen {
    pub bytes: u64,
    pub age_ms: u64,
}

/// What the governor keeps of a member's size in use after a pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InUseMemory {
    /// Keep the time; the highest size seen is now `bytes`.
    Keep { bytes: u64 },
    /// Start again from this pass's size, now (first seen, or it fell by
    /// more than [`SETTLED_FALL`]: a compaction is freeing pages).
    Restart { bytes: u64 },
}

/// What the governor keeps of `m`'s size in use after this pass.
pub fn remember_in_use(m: &MemberSpace) -> InUseMemory {
    match m.in_use_before {
        Some(seen) if !m.fell_too_far() => InUseMemory::Keep {
            bytes: seen.bytes.max(m.db_size_in_use),
        },
        _ => InUseMemory::Restart {
            bytes: m.db_size_in_use,
        },
    }
}

impl MemberSpace {
    pub fn reclaimable(&self) -> u64 {
        self.db_size.saturating_sub(self.db_size_in_use)
    }

    /// How much its size in use fell from the highest remembered (`None`:
    /// nothing remembered).
    pub fn in_use_fell_by(&self) -> Option<u64> {
        self.in_use_before
            .map(|before| before.bytes.saturating_sub(self.db_size_in_use))
    }

    fn fell_too_far(&self) -> bool {
        self.in_use_fell_by()
            .is_some_and(|fell| fell as f64 > SETTLED_FALL * self.db_size as f64)
    }

    /// Its size in use fell by at most [`SETTLED_FALL`] of its database
    /// over at least [`SETTLE_WINDOW_MS`]: no compaction is freeing pages.
    pub fn settled(&self) -> bool {
        self.in_use_before
            .is_some_and(|seen| seen.age_ms >= SETTLE_WINDOW_MS && !self.fell_too_far())
    }
}

/// The fall of a member's size in use, over its database size, under
/// which it counts as settled (ordinary writes and deletes move it less; a
/// running compaction at size moves it more within [`SETTLE_WINDOW_MS`]).
pub const SETTLED_FALL: f64 = 0.01;

/// How long a member's size in use must have stayed within
/// [`SETTLED_FALL`] before it is defragmented.
pub const SETTLE_WINDOW_MS: u64 = 10_000;

/// When a member is worth defragmenting (outside `NOSPACE`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SpacePolicy {
    /// Off: only `NOSPACE` is handled.
    pub enabled: bool,
    /// Reclaimable space over the database size at least this (0..1).
    pub min_ratio: f64,
    /// And at least this many bytes (small databases are left alone).
    pub min_bytes: u64,
}

/// The facts of one pass.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SpaceFacts {
    /// This instance's member leads (the single actor).
    pub local_is_leader: bool,
    /// Every member of the member list, with what its Status said.
    pub members: Vec<MemberSpace>,
    /// Members with an active `NOSPACE` alarm.
    pub nospace: Vec<u64>,
    /// The cluster's current revision (the leader's).
    pub revision: i64,
    /// This episode's compaction was done (this eco compacted to at least
    /// this revision since the alarm was first seen); `false` after a
    /// restart, which compacts again (harmless).
    pub compacted: bool,
    /// Members defragmented since this episode's compaction (empty after
    /// a restart).
    pub defragmented: Vec<u64>,
    pub policy: SpacePolicy,
}

/// What to do this pass, with why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SpaceStep {
    Nothing {
        reason: String,
    },
    Wait {
        reason: String,
    },
    /// Compact the key space to `revision` (physical: wait for it).
    Compact {
        revision: i64,
        reason: String,
    },
    /// Defragment this member (through its own endpoint).
    Defragment {
        member_id: u64,
        name: String,
        reason: String,
    },
    /// Hand raft leadership to voter `to` (`MoveLeader`, on this
    /// instance's member: the leader), before the leader's own
    /// defragmentation.
    HandOver {
        to: u64,
        name: String,
        reason: String,
    },
    /// Disarm the `NOSPACE` alarm of every member that has one.
    Disarm {
        members: Vec<u64>,
        reason: String,
    },
}

/// The next member to defragment among `wanted`: followers (voters, then
/// learners) before the leader, the most reclaimable first.
fn next_of<'a>(wanted: impl Iterator<Item = &'a MemberSpace>) -> Option<&'a MemberSpace> {
    wanted.min_by_key(|m| {
        (
            m.is_leader,
            m.is_learner,
            std::cmp::Reverse(m.reclaimable()),
            m.id,
        )
    })
}

fn label(m: &MemberSpace) -> String {
    if m.name.is_empty() {
        format!("{:x}", m.id)
    } else {
        m.name.clone()
    }
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
}

pub fn next_step(f: &SpaceFacts) -> SpaceStep {
    if !f.local_is_leader {
        return SpaceStep::Nothing {
            reason: "the instance beside the raft leader governs space".into(),
        };
    }
    if let Some(m) = f.members.iter().find(|m| !m.answered) {
        return SpaceStep::Wait {
            reason: format!(
                "member {} does not answer: no defragmentation while a member is down (it stalls the member it runs on)",
                label(m)
            ),
        };
    }
    if !f.nospace.is_empty() {
        if !f.compacted {
            return SpaceStep::Compact {
                revision: f.revision,
                reason: format!(
                    "NOSPACE alarm on {} member(s): compact to the current revision {} first, then defragment one member at a time",
                    f.nospace.len(),
                    f.revision
                ),
            };
        }
        if let Some(m) = next_of(f.members.iter().filter(|m| !f.defragmented.contains(&m.id))) {
            return SpaceStep::Defragment {
                member_id: m.id,
                name: m.name.clone(),
                reason: format!(
                    "NOSPACE: compacted; member {} holds {} reclaimable of {}: defragment it (followers first, the leader last)",
                    label(m),
                    mib(m.reclaimable()),
                    mib(m.db_size)
                ),
            };
        }
        return SpaceStep::Disarm {
            members: f.nospace.clone(),
            reason:
                "NOSPACE: compacted and every member defragmented: disarm the alarm (writes resume)"
                    .into(),
        };
    }
    if !f.policy.enabled {
        return SpaceStep::Nothing {
            reason: "automatic defragmentation is off (etcd.defrag.enabled = false); only NOSPACE is handled".into(),
        };
    }
    let due = |m: &&MemberSpace| {
        let r = m.reclaimable();
        r >= f.policy.min_bytes && (r as f64) >= f.policy.min_ratio * m.db_size as f64
    };
    let Some(m) = next_of(f.members.iter().filter(due).filter(|m| m.settled())) else {
        if let Some(m) = next_of(f.members.iter().filter(due)) {
            return SpaceStep::Wait {
                reason: match (m.in_use_fell_by(), m.fell_too_far()) {
                    (Some(fell), true) => format!(
                        "member {} holds {} reclaimable of {}, but its size in use fell by {} (a compaction still freeing pages): defragment it once that has stopped for {} s",
                        label(m),
                        mib(m.reclaimable()),
                        mib(m.db_size),
                        mib(fell),
                        SETTLE_WINDOW_MS / 1000
                    ),
                    _ => format!(
                        "member {} holds {} reclaimable of {}: its size in use is watched for {} s first (a compaction may still be freeing pages)",
                        label(m),
                        mib(m.reclaimable()),
                        mib(m.db_size),
                        SETTLE_WINDOW_MS / 1000
                    ),
                },
            };
        }
        return SpaceStep::Nothing {
            reason: "no member holds enough reclaimable space to defragment".into(),
        };
    };
    let why = format!(
        "member {} holds {} reclaimable of {} (at least {:.0} % and {})",
        label(m),
        mib(m.reclaimable()),
        mib(m.db_size),
        f.policy.min_ratio * 100.0,
        mib(f.policy.min_bytes)
    );
    if m.is_leader {
        let heir = f
            .members
            .iter()
            .filter(|h| h.answered && !h.is_learner && !h.is_leader)
            .min_by_key(|h| (h.reclaimable(), h.id));
        if let Some(h) = heir {
            return SpaceStep::HandOver {
                to: h.id,
                name: h.name.clone(),
                reason: format!(
                    "{why} and leads: hand leadership to {} first (a defragmentation stalls its member; the leader's stall is the cluster's), then defragment it as a follower",
                    label(h)
                ),
            };
        }
    }
    SpaceStep::Defragment {
        member_id: m.id,
        name: m.name.clone(),
        reason: if m.is_leader {
            format!("{why}: defragment it (it leads, with no voter to hand leadership to)")
        } else {
            format!("{why}: defragment it, one member at a time, followers first")
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    fn member(id: u64, leader: bool, size_mib: u64, in_use_mib: u64) -> MemberSpace {
        MemberSpace {
            id,
            name: format!("m{id}"),
            is_learner: false,
            is_leader: leader,
            answered: true,
            db_size: size_mib * MIB,
            db_size_in_use: in_use_mib * MIB,
            in_use_before: Some(seen(in_use_mib, SETTLE_WINDOW_MS)),
        }
    }

    fn seen(mib: u64, age_ms: u64) -> InUseSeen {
        InUseSeen {
            bytes: mib * MIB,
            age_ms,
        }
    }

    fn facts() -> SpaceFacts {
        SpaceFacts {
            local_is_leader: true,
            members: vec![
                member(1, true, 100, 100),
                member(2, false, 100, 100),
                member(3, false, 100, 100),
            ],
            nospace: Vec::new(),
            revision: 500,
            compacted: false,
            defragmented: Vec::new(),
            policy: SpacePolicy {
                enabled: true,
                min_ratio: 0.5,
                min_bytes: 64 * MIB,
            },
        }
    }

    fn kind(s: &SpaceStep) -> String {
        match s {
            SpaceStep::Nothing { .. } => "nothing".into(),
            SpaceStep::Wait { .. } => "wait".into(),
            SpaceStep::Compact { revision, .. } => format!("compact {revision}"),
            SpaceStep::Defragment { member_id, .. } => format!("defrag {member_id}"),
            SpaceStep::Disarm { members, .. } => format!("disarm {members:?}"),
            SpaceStep::HandOver { to, .. } => format!("hand over to {to}"),
        }
    }

    #[test]
    fn table() {
        type Edit = fn(&mut SpaceFacts);
        let cases: Vec<(&str, Edit, &str)> = vec![
            ("nothing reclaimable", |_| {}, "nothing"),
            (
                "not the leader's instance",
                |f| {
                    f.local_is_leader = false;
                    f.members[1] = member(2, false, 400, 100);
                },
                "nothing",
            ),
            (
                "a follower past ratio and floor",
                |f| f.members[2] = member(3, false, 400, 100),
                "defrag 3",
            ),
            (
                "past the ratio, under the floor",
                |f| f.members[2] = member(3, false, 100, 40),
                "nothing",
            ),
            (
                "past the floor, under the ratio",
                |f| f.members[2] = member(3, false, 1000, 900),
                "nothing",
            ),
            (
                "the leader last",
                |f| {
                    f.members[0] = member(1, true, 900, 100);
                    f.members[1] = member(2, false, 400, 100);
                },
                "defrag 2",
            ),
            (
                "the leader when it alone needs it: leadership handed to a voter first",
                |f| f.members[0] = member(1, true, 900, 100),
                "hand over to 2",
            ),
            (
                "the heir is the voter with the least reclaimable space",
                |f| {
                    f.members[0] = member(1, true, 900, 100);
                    f.members[1] = member(2, false, 110, 60);
                    f.members[2] = member(3, false, 100, 95);
                },
                "hand over to 3",
            ),
            (
                "a learner is no heir: a leader beside one is defragmented as it is",
                |f| {
                    f.members[0] = member(1, true, 900, 100);
                    f.members.truncate(1);
                    let mut l = member(4, false, 100, 100);
                    l.is_learner = true;
                    f.members.push(l);
                },
                "defrag 1",
            ),
            (
                "a cluster of one: its leader defragmented as it is",
                |f| {
                    f.members[0] = member(1, true, 900, 100);
                    f.members.truncate(1);
                },
                "defrag 1",
            ),
            (
                "the most reclaimable follower first",
                |f| {
                    f.members[1] = member(2, false, 400, 100);
                    f.members[2] = member(3, false, 800, 100);
                },
                "defrag 3",
            ),
            (
                "voters before a learner",
                |f| {
                    let mut l = member(4, false, 900, 100);
                    l.is_learner = true;
                    f.members.push(l);
                    f.members[1] = member(2, false, 400, 100);
                },
                "defrag 2",
            ),
            (
                "a follower still compacting (in use fell by 100 MiB of 400): wait",
                |f| {
                    f.members[2] = member(3, false, 400, 100);
                    f.members[2].in_use_before = Some(seen(200, 60_000));
                },
                "wait",
            ),
            (
                "a follower whose in use fell by under 1 % of its database in 10 s: settled",
                |f| {
                    f.members[2] = member(3, false, 400, 100);
                    f.members[2].in_use_before = Some(seen(103, 10_000));
                },
                "defrag 3",
            ),
            (
                "in use that rose is settled",
                |f| {
                    f.members[2] = member(3, false, 400, 100);
                    f.members[2].in_use_before = Some(seen(90, 10_000));
                },
                "defrag 3",
            ),
            (
                "a follower steady for less than the window: wait",
                |f| {
                    f.members[2] = member(3, false, 400, 100);
                    f.members[2].in_use_before = Some(seen(100, 9_999));
                },
                "wait",
            ),
            (
                "a follower not seen before: wait",
                |f| {
                    f.members[2] = member(3, false, 400, 100);
                    f.members[2].in_use_before = None;
                },
                "wait",
            ),
            (
                "a settled follower before one still compacting, though that one holds more",
                |f| {
                    f.members[1] = member(2, false, 800, 100);
                    f.members[1].in_use_before = Some(seen(300, 60_000));
                    f.members[2] = member(3, false, 400, 100);
                },
                "defrag 3",
            ),
            (
                "the leader still compacting: no handover yet",
                |f| {
                    f.members[0] = member(1, true, 900, 100);
                    f.members[0].in_use_before = Some(seen(400, 60_000));
                },
                "wait",
            ),
            (
                "NOSPACE does not wait for the sizes to settle",
                |f| {
                    f.nospace = vec![1];
                    f.compacted = true;
                    f.members[2].in_use_before = None;
                },
                "defrag 2",
            ),
            (
                "a member down: wait",
                |f| {
                    f.members[2] = member(3, false, 400, 100);
                    f.members[1].answered = false;
                },
                "wait",
            ),
            (
                "off: nothing",
                |f| {
                    f.members[2] = member(3, false, 400, 100);
                    f.policy.enabled = false;
                },
                "nothing",
            ),
            (
                "NOSPACE: compact first",
                |f| f.nospace = vec![1, 2, 3],
                "compact 500",
            ),
            (
                "NOSPACE even when automatic defragmentation is off",
                |f| {
                    f.nospace = vec![2];
                    f.policy.enabled = false;
                },
                "compact 500",
            ),
            (
                "NOSPACE compacted: followers first",
                |f| {
                    f.nospace = vec![1, 2, 3];
                    f.compacted = true;
                    f.members = vec![
                        member(1, true, 100, 10),
                        member(2, false, 100, 10),
                        member(3, false, 100, 12),
                    ];
                },
                "defrag 2",
            ),
            (
                "NOSPACE: the leader last",
                |f| {
                    f.nospace = vec![1, 2, 3];
                    f.compacted = true;
                    f.defragmented = vec![2, 3];
                    f.members = vec![
                        member(1, true, 100, 10),
                        member(2, false, 11, 10),
                        member(3, false, 12, 12),
                    ];
                },
                "defrag 1",
            ),
            (
                "NOSPACE: a follower whose sizes do not show the compaction yet is defragmented all the same",
                |f| {
                    f.nospace = vec![1, 2, 3];
                    f.compacted = true;
                    f.members = vec![
                        member(1, true, 100, 10),
                        member(2, false, 100, 100),
                        member(3, false, 100, 100),
                    ];
                },
                "defrag 2",
            ),
            (
                "NOSPACE: every member defragmented once: disarm",
                |f| {
                    f.nospace = vec![1, 2, 3];
                    f.compacted = true;
                    f.defragmented = vec![1, 2, 3];
                    f.members = vec![
                        member(1, true, 12, 11),
                        member(2, false, 100, 100),
                        member(3, false, 12, 12),
                    ];
                },
                "disarm [1, 2, 3]",
            ),
            (
                "NOSPACE with a member down: wait",
                |f| {
                    f.nospace = vec![1];
                    f.members[2].answered = false;
                },
                "wait",
            ),
        ];
        for (name, edit, want) in cases {
            let mut f = facts();
            edit(&mut f);
            let got = next_step(&f);
            assert_eq!(kind(&got), want, "{name}: {got:?}");
        }
    }

    #[test]
    fn a_nospace_episode_ends_disarmed_from_any_point() {
        // Simulate: each step's effect on the facts, from every restart
        // point (compacted forgotten), in at most a bounded number of steps.
        for restart_at in 0..6 {
            let mut f = facts();
            f.nospace = vec![1, 2, 3];
            f.members = vec![
                member(1, true, 100, 100),
                member(2, false, 100, 100),
                member(3, false, 100, 100),
            ];
            let mut defrags = Vec::new();
            for step in 0..16 {
                if step == restart_at {
                    // A restart forgets the episode.
                    f.compacted = false;
                    f.defragmented.clear();
                    defrags.clear();
                }
                match next_step(&f) {
                    SpaceStep::Compact { .. } => {
                        f.compacted = true;
                        // Only the leader shows the compaction at once.
                        f.members[0].db_size_in_use = 5 * MIB;
                    }
                    SpaceStep::Defragment { member_id, .. } => {
                        defrags.push(member_id);
                        f.defragmented.push(member_id);
                        let m = f.members.iter_mut().find(|m| m.id == member_id).unwrap();
                        m.db_size = 5 * MIB;
                        m.db_size_in_use = 5 * MIB;
                    }
                    SpaceStep::Disarm { .. } => {
                        f.nospace.clear();
                    }
                    other => panic!("restart at {restart_at}: {other:?}"),
                }
                if f.nospace.is_empty() {
                    break;
                }
            }
            assert!(
                f.nospace.is_empty(),
                "restart at {restart_at}: never disarmed"
            );
            assert_eq!(
                defrags,
                vec![2, 3, 1],
                "restart at {restart_at}: every member once since the last restart, one at a time, the leader last"
            );
        }
    }

    #[test]
    fn a_roll_defragments_every_member_once_and_never_the_leader_while_it_leads() {
        // Every member due; each step's effect applied (a handover moves
        // leadership: the new leader's instance governs next), bounded.
        for first_leader in 1..=3u64 {
            let mut f = facts();
            f.members = (1..=3)
                .map(|id| member(id, id == first_leader, 400, 100))
                .collect();
            let mut defrags = Vec::new();
            let mut handovers = 0;
            for _ in 0..12 {
                match next_step(&f) {
                    SpaceStep::Defragment { member_id, .. } => {
                        let m = f.members.iter_mut().find(|m| m.id == member_id).unwrap();
                        assert!(
                            !m.is_leader,
                            "leader {member_id} defragmented while leading"
                        );
                        m.db_size = 100 * MIB;
                        defrags.push(member_id);
                    }
                    SpaceStep::HandOver { to, .. } => {
                        handovers += 1;
                        for m in &mut f.members {
                            m.is_leader = m.id == to;
                        }
                    }
                    SpaceStep::Nothing { .. } => break,
                    other => panic!("{other:?}"),
                }
            }
            defrags.sort();
            assert_eq!(
                defrags,
                vec![1, 2, 3],
                "leader {first_leader}: each member once"
            );
            assert_eq!(handovers, 1, "leader {first_leader}: one handover");
        }
    }

    #[test]
    fn a_compaction_running_for_minutes_is_waited_out_and_everything_it_frees_is_given_back() {
        // As measured at 8 GiB: three members of 8,280 MiB whose
        // compaction frees 30 MiB a second down to 3,300 MiB in use, each
        // starting at its own time (etcd compacts in the background on
        // every member), passes 300 ms apart, a defragmentation holding
        // the pass 20 s. The governor's memory is kept as the daemon
        // keeps it ([`remember_in_use`]).
        let starts_ms = [0u64, 5_000, 12_000];
        let in_use_at = |i: usize, now_ms: u64| -> u64 {
            let freed = now_ms.saturating_sub(starts_ms[i]) * 30 / 1000;
            8_280u64.saturating_sub(freed).max(3_300) * MIB
        };
        let mut f = facts();
        f.members = (1..=3)
            .map(|id| member(id, id == 1, 8_280, 8_280))
            .collect();
        let mut memory: Vec<Option<(u64, u64)>> = vec![None; 3];
        let mut defrags = Vec::new();
        let mut now_ms = 0u64;
        for _ in 0..4_000 {
            for (i, m) in f.members.iter_mut().enumerate() {
                m.db_size_in_use = in_use_at(i, now_ms).min(m.db_size);
                m.in_use_before = memory[i].map(|(bytes, since)| InUseSeen {
                    bytes,
                    age_ms: now_ms - since,
                });
            }
            let step = next_step(&f);
            for (i, m) in f.members.iter().enumerate() {
                memory[i] = Some(match remember_in_use(m) {
                    InUseMemory::Keep { bytes } => (bytes, memory[i].map_or(now_ms, |(_, s)| s)),
                    InUseMemory::Restart { bytes } => (bytes, now_ms),
                });
            }
            now_ms += 300;
            match step {
                SpaceStep::Defragment { member_id, .. } => {
                    let m = f.members.iter_mut().find(|m| m.id == member_id).unwrap();
                    assert_eq!(
                        m.db_size_in_use,
                        3_300 * MIB,
                        "at {now_ms} ms: member {member_id} defragmented while its compaction still frees pages"
                    );
                    assert!(!m.is_leader, "the leader defragmented");
                    m.db_size = m.db_size_in_use;
                    defrags.push(member_id);
                    now_ms += 20_000;
                }
                SpaceStep::HandOver { to, .. } => {
                    for m in &mut f.members {
                        m.is_leader = m.id == to;
                    }
                }
                SpaceStep::Wait { .. } => {}
                // Every compaction ends by 178 s.
                SpaceStep::Nothing { .. } if now_ms > 400_000 => break,
                SpaceStep::Nothing { .. } => {}
                other => panic!("at {now_ms} ms: {other:?}"),
            }
        }
        defrags.sort();
        assert_eq!(defrags, vec![1, 2, 3], "each member once");
        assert!(
            f.members.iter().all(|m| m.db_size == 3_300 * MIB),
            "everything the compaction freed given back: {:?}",
            f.members
        );
    }

    #[test]
    fn the_memory_keeps_the_highest_size_and_restarts_on_a_fall() {
        let mut m = member(3, false, 1000, 500);
        m.in_use_before = None;
        assert_eq!(
            remember_in_use(&m),
            InUseMemory::Restart { bytes: 500 * MIB }
        );
        m.in_use_before = Some(seen(495, 3_000));
        assert_eq!(
            remember_in_use(&m),
            InUseMemory::Keep { bytes: 500 * MIB },
            "a rise: the highest kept, the time too"
        );
        m.in_use_before = Some(seen(505, 3_000));
        assert_eq!(
            remember_in_use(&m),
            InUseMemory::Keep { bytes: 505 * MIB },
            "a fall of 0.5 %: kept"
        );
        m.in_use_before = Some(seen(520, 3_000));
        assert_eq!(
            remember_in_use(&m),
            InUseMemory::Restart { bytes: 500 * MIB },
            "a fall of 2 %: started again"
        );
    }
}
