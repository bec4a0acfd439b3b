//! Who takes raft leadership when eco stops its own member on purpose.
//!
//! etcd hands leadership away by itself when it is stopped with SIGTERM
//! (its graceful stop transfers to the most caught-up follower), but only
//! if it is given the time: a pod deleted with a short grace period, a
//! stop that reaches `etcd.stop_timeout` and ends in SIGKILL, or a restart
//! eco makes while etcd is busy cost the cluster an election (an election
//! timeout or more without writes). So before every planned stop of a
//! member that leads — eco's shutdown, a restart of the peer listener —
//! eco moves leadership first (`MoveLeader`, bounded), and only then stops
//! etcd. An upgrade step does the same through `upgrade::next_step`.
//!
//! Pure: what eco last saw of the members in, whom to hand to out. What it
//! does not do: wait for the heir to catch up (etcd's `MoveLeader` does
//! that, within its bound), or hand over when the member does not lead.

use crate::planner::MemberFacts;
use serde::{Deserialize, Serialize};

/// What to do before a planned stop of the local member.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Handover {
    /// The member does not lead: stopping it costs no election.
    NotLeading,
    /// Hand leadership to `member_id` first.
    To {
        member_id: u64,
        name: String,
        reason: String,
    },
    /// The member leads but no other voter can take over (a cluster of
    /// one, or every other voter unhealthy): stop without handing over.
    Nobody { reason: String },
}

/// Whom a leading member hands leadership to before it stops: its heir
/// ([`crate::planner::heir`], the rule the planner hands a leaving
/// leader's leadership by, so two instances never disagree on it).
pub fn before_stop(local_member_id: u64, is_leader: bool, members: &[MemberFacts]) -> Handover {
    if !is_leader {
        return Handover::NotLeading;
    }
    match crate::planner::heir(local_member_id, members) {
        Some(m) => Handover::To {
            member_id: m.id,
            name: m.name.clone(),
            reason: format!(
                "this member leads and is about to stop: {} (a healthy voter) takes over first, so the stop costs no election",
                m.name
            ),
        },
        None => {
            let voters = members.iter().filter(|m| !m.is_learner).count();
            Handover::Nobody {
                reason: if voters <= 1 {
                    "this member leads a cluster of one voter: nobody to hand over to".into()
                } else {
                    format!(
                        "this member leads but none of the other {} voters is healthy: stopping without handing over (an election follows)",
                        voters - 1
                    )
                },
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(id: u64, name: &str, learner: bool, healthy: bool) -> MemberFacts {
        MemberFacts {
            id,
            name: name.into(),
            peer_urls: vec![],
            is_learner: learner,
            healthy,
            unhealthy_since_ms: None,
            learner_since_ms: None,
            promoted_at_ms: None,
        }
    }

    fn heir(h: &Handover) -> Option<u64> {
        match h {
            Handover::To { member_id, .. } => Some(*member_id),
            _ => None,
        }
    }

    #[test]
    fn table() {
        let three = [
            m(1, "a", false, true),
            m(2, "b", false, true),
            m(3, "c", false, true),
        ];
        for (what, local, leads, members, want) in [
            ("a follower stops as it is", 2, false, three.to_vec(), None),
            (
                "the leader hands to the lowest other voter",
                1,
                true,
                three.to_vec(),
                Some(2),
            ),
            ("the leader 3 hands to 1", 3, true, three.to_vec(), Some(1)),
            (
                "an unhealthy voter is skipped",
                1,
                true,
                vec![
                    m(1, "a", false, true),
                    m(2, "b", false, false),
                    m(3, "c", false, true),
                ],
                Some(3),
            ),
            (
                "a learner never leads",
                1,
                true,
                vec![
                    m(1, "a", false, true),
                    m(2, "b", true, true),
                    m(3, "c", false, true),
                ],
                Some(3),
            ),
            (
                "a member never started is skipped",
                1,
                true,
                vec![
                    m(1, "a", false, true),
                    m(2, "", false, true),
                    m(3, "c", false, true),
                ],
                Some(3),
            ),
            (
                "a cluster of one",
                1,
                true,
                vec![m(1, "a", false, true)],
                None,
            ),
            (
                "no healthy heir",
                1,
                true,
                vec![
                    m(1, "a", false, true),
                    m(2, "b", false, false),
                    m(3, "c", true, true),
                ],
                None,
            ),
        ] {
            let h = before_stop(local, leads, &members);
            assert_eq!(heir(&h), want, "{what}: {h:?}");
            if !leads {
                assert_eq!(h, Handover::NotLeading, "{what}");
            }
        }
    }

    #[test]
    fn nobody_says_why() {
        match before_stop(1, true, &[m(1, "a", false, true)]) {
            Handover::Nobody { reason } => assert!(reason.contains("cluster of one"), "{reason}"),
            other => panic!("{other:?}"),
        }
        match before_stop(1, true, &[m(1, "a", false, true), m(2, "b", false, false)]) {
            Handover::Nobody { reason } => {
                assert!(reason.contains("none of the other 1 voters"), "{reason}")
            }
            other => panic!("{other:?}"),
        }
    }
}
