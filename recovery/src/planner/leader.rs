//! Rules applied by the instance next to the etcd raft leader: the single
//! actor for cluster-wide changes. At most one change per plan.

use super::action::{Action, Step, WaitReason};
use super::observation::{MemberFacts, Observation};
use super::snapshot_first::snapshot_first;
use crate::quorum::{quorum, removal_keeps_quorum};

/// The step that removes `m`, a snapshot first or not
/// ([`snapshot_first`]) and why, after `reason`.
fn removal(voters: usize, healthy: usize, m: &MemberFacts, reason: String) -> Step {
    let first = snapshot_first(voters, healthy, m);
    Step::new(
        Action::RemoveMember {
            member_id: m.id,
            name: m.name.clone(),
            snapshot_first: first.take,
        },
        format!("{reason} ({})", first.why),
    )
}

fn label(m: &MemberFacts) -> String {
    if m.name.is_empty() {
        format!("{:x}", m.id)
    } else {
        format!("{} ({:x})", m.name, m.id)
    }
}

pub(super) fn plan_leader(o: &Observation) -> Option<Step> {
    if !o.local.is_leader {
        return None;
    }
    let members = o.members.as_ref()?;
    let voters = members.iter().filter(|m| !m.is_learner).count();
    let healthy = members
        .iter()
        .filter(|m| !m.is_learner && m.healthy)
        .count();
    let now = o.now_ms;

    // 1. Departed instances: members no instance of the group owns. Others
    //    before ourselves.
    let mut departed: Vec<&MemberFacts> =
        members.iter().filter(|m| o.owner_of(m).is_none()).collect();
    departed.sort_by_key(|m| (m.name == o.local.instance_id, m.id));
    if let Some(m) = departed.first() {
        if !o.absences_confirmed {
            return Some(Step::new(
                Action::Wait {
                    on: WaitReason::DepartureUnconfirmed,
                },
                format!(
                    "member {} belongs to no instance of the group, but eco has not read the group long enough since it started to confirm a departure: waiting",
                    label(m)
                ),
            ));
        }
        if m.name == o.local.instance_id && !m.is_learner {
            // Only this instance departs and it leads: hand leadership to a
            // healthy voter first; that one's instance removes this member
            // with a stable leader (a leader removing itself steps down
            // only once the removal commits, and the cluster elects blind).
            if let Some(to) = heir(m.id, members) {
                return Some(Step::new(
                    Action::TransferLeadership {
                        member_id: to.id,
                        name: to.name.clone(),
                    },
                    format!(
                        "this instance is leaving and its member {} leads: hand leadership to {} first; its instance then removes this member",
                        label(m),
                        label(to)
                    ),
                ));
            }
        }
        let young = m
            .learner_since_ms
            .is_none_or(|since| now.saturating_sub(since) < o.config.group_lag_ms);
        if m.is_learner && young {
            return Some(Step::new(
                Action::Wait {
                    on: WaitReason::LearnerOwnerUnknown,
                },
                format!(
                    "learner {} belongs to no instance of the group as this instance read it; \
                     the instance that added it may have read a newer group: removing it only \
                     if it is still nobody's after {} ms",
                    label(m),
                    o.config.group_lag_ms
                ),
            ));
        }
        if m.is_learner {
            return Some(removal(
                voters,
                healthy,
                m,
                format!(
                    "learner {} belongs to no instance of the group: remove it",
                    label(m)
                ),
            ));
        }
        if removal_keeps_quorum(voters, healthy, m.healthy) {
            return Some(removal(
                voters,
                healthy,
                m,
                format!(
                    "member {} belongs to no instance of the group (departed): remove it",
                    label(m)
                ),
            ));
        }
        return Some(Step::new(
            Action::Wait {
                on: WaitReason::RemovalWouldLoseQuorum,
            },
            format!(
                "member {} has departed, but removing it would leave fewer than {} healthy voters: waiting",
                label(m),
                quorum(voters.saturating_sub(1))
            ),
        ));
    }

    // 2. Learners: promote a started, healthy one; evict one that stalls.
    for m in members.iter().filter(|m| m.is_learner) {
        let stalled = m
            .learner_since_ms
            .is_some_and(|since| now.saturating_sub(since) > o.config.learner_timeout_ms);
        if stalled {
            return Some(removal(
                voters,
                healthy,
                m,
                format!(
                    "learner {} has not been promoted within {} ms: remove it so its instance retries",
                    label(m),
                    o.config.learner_timeout_ms
                ),
            ));
        }
        // Once it started (it has published its name), ask: etcd itself
        // refuses to promote a learner that has not caught up ("not in
        // sync", a wait), which it knows better and sooner than a probe.
        if !m.never_started() {
            return Some(Step::new(
                Action::Promote {
                    member_id: m.id,
                    name: m.name.clone(),
                },
                format!(
                    "learner {} has started: promote it once it has caught up (etcd says when)",
                    label(m)
                ),
            ));
        }
    }

    // 3. Unhealthy voters on live instances, past the TTL, one at a time.
    //    An instance gossip cannot hear (crashed, or cut off by a
    //    partition) keeps its member: removing it would not help it rejoin,
    //    and etcd stalls its leader while it tears down the connections of
    //    a peer it cannot reach. The TTL runs only while the instance is
    //    alive — from the later of "unhealthy since" and "alive since" — so
    //    a healed instance whose etcd is still reconnecting gets the whole
    //    TTL. Without gossip, liveness is unknown and the TTL alone decides.
    //    A voter promoted since it turned unhealthy counts from its
    //    promotion: etcd promotes a learner while it still restores the
    //    database it was sent (tens of seconds at gigabytes), and counting
    //    its learner time would remove it the moment it became a voter, to
    //    fetch the whole database again.
    for m in members
        .iter()
        .filter(|m| !m.is_learner && !m.healthy && m.name != o.local.instance_id)
    {
        let Some(unhealthy_since) = m.unhealthy_since_ms else {
            continue;
        };
        let unhealthy_since = unhealthy_since.max(m.promoted_at_ms.unwrap_or(0));
        let since = match (&o.live, o.owner_of(m)) {
            (None, _) => unhealthy_since,
            (Some(live), Some(owner)) => match live.get(owner) {
                Some(alive_since) => unhealthy_since.max(*alive_since),
                None => continue,
            },
            (Some(_), None) => continue,
        };
        if now.saturating_sub(since) <= o.config.unhealthy_member_ttl_ms {
            continue;
        }
        if removal_keeps_quorum(voters, healthy, false) {
            return Some(removal(
                voters,
                healthy,
                m,
                format!(
                    "member {} has been unhealthy for {} ms while its instance was alive (ttl {} ms): remove it so its instance rejoins clean",
                    label(m),
                    now.saturating_sub(since),
                    o.config.unhealthy_member_ttl_ms
                ),
            ));
        }
    }
    None
}

/// Who takes over from the leading member `local_member_id`: a healthy
/// voter that has started (a learner cannot lead), the lowest member id
/// first. One rule for every handover — a leaving leader here, a planned
/// stop (`crate::handover`) — so two instances never disagree on the heir.
pub fn heir(local_member_id: u64, members: &[MemberFacts]) -> Option<&MemberFacts> {
    members
        .iter()
        .filter(|m| m.id != local_member_id && !m.is_learner && m.healthy && !m.never_started())
        .min_by_key(|m| m.id)
}
