//! Rules about this instance's own etcd.

use super::action::{Action, Step, WaitReason};
use super::observation::{DataState, MemberFacts, Observation};
use super::snapshot_first::snapshot_first;
use crate::quorum::{quorum, removal_keeps_quorum};

pub(super) fn plan_local(o: &Observation) -> Vec<Step> {
    let l = &o.local;
    if !o.in_group() {
        return leaving(o);
    }
    let Some(members) = &o.members else {
        // No member answers. With our data we restart etcd: we may be the
        // member the others wait for. Without it there is nothing to join.
        if l.data == DataState::Present && l.recorded_member_id.is_some() && !l.etcd_running {
            return vec![Step::new(
                Action::StartEtcd {
                    initial_cluster: vec![(l.instance_id.clone(), l.peer_url.clone())],
                },
                "no member answers and this instance holds its member's data: restart etcd on it (rejoin)",
            )];
        }
        if l.etcd_running {
            return Vec::new();
        }
        return vec![Step::new(
            Action::Wait {
                on: WaitReason::MemberListUnknown,
            },
            "no member of the cluster answers; nothing to join yet",
        )];
    };

    match o.my_member() {
        Some(m) if m.never_started() => start_added_member(o, members, m),
        Some(m) => existing_member(o, members, m),
        // Absent from the latest read and no longer a member: the cluster
        // removed it (its departure confirmed there first). It leaves as a
        // removed instance does, and moves no data aside to join again
        // unless the group lists it again.
        None if o.absent_unconfirmed => leaving(o),
        None => not_a_member(o, members),
    }
}

fn initial_cluster(
    o: &Observation,
    members: &[MemberFacts],
    me: &MemberFacts,
) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for m in members {
        let name = if m.id == me.id {
            o.local.instance_id.clone()
        } else {
            m.name.clone()
        };
        if name.is_empty() {
            continue;
        }
        for url in &m.peer_urls {
            out.push((name.clone(), url.clone()));
        }
    }
    out.sort();
    out
}

/// Our member was added (as a learner) but has not published its name:
/// either etcd never started (the crash point between "add" and "start":
/// start it), or it started moments ago and the member list is older than
/// its first publication. Data beside a recorded member id of this very
/// member is that member's own — etcd created it when it started for the
/// member (a join moves older data aside before adding the member) — and
/// is never moved aside: the leader may promote the member any moment,
/// and moving a voter's data aside costs the quorum.
fn start_added_member(o: &Observation, members: &[MemberFacts], me: &MemberFacts) -> Vec<Step> {
    let l = &o.local;
    // Data beside this very member's recorded id is etcd's own for it — a
    // WAL, or (`Unusable`) the skeleton a start that never joined leaves:
    // restarted on, never moved aside (a join that keeps failing would
    // otherwise move a directory aside at every attempt; etcd's restarts
    // back off in the supervisor instead).
    if l.recorded_member_id == Some(me.id) && l.data != DataState::Empty {
        if l.etcd_running {
            return vec![Step::new(
                Action::Wait {
                    on: WaitReason::MemberNotNamedYet,
                },
                format!(
                    "member {:x} was added for this instance and etcd runs on its data: waiting for it to publish its name",
                    me.id
                ),
            )];
        }
        return vec![Step::new(
            Action::StartEtcd {
                initial_cluster: initial_cluster(o, members, me),
            },
            format!(
                "member {:x} was added for this instance and etcd stopped before publishing its name: restart it on its data",
                me.id
            ),
        )];
    }
    let mut steps = Vec::new();
    if l.recorded_member_id != Some(me.id) {
        steps.push(Step::new(
            Action::RecordMemberId { member_id: me.id },
            format!(
                "member {:x} was added for this instance; record it before starting etcd",
                me.id
            ),
        ));
    }
    if l.data != DataState::Empty {
        steps.push(Step::new(
            Action::MoveDataAside { why: "stale-before-join".into() },
            "this instance joins as a new member but its data directory holds older data: move it aside",
        ));
    }
    if !l.etcd_running {
        steps.push(Step::new(
            Action::StartEtcd {
                initial_cluster: initial_cluster(o, members, me),
            },
            format!(
                "member {:x} was added for this instance but etcd never started: start it to join",
                me.id
            ),
        ));
    }
    steps
}

fn existing_member(o: &Observation, members: &[MemberFacts], me: &MemberFacts) -> Vec<Step> {
    let l = &o.local;
    let data_is_ours =
        l.data == DataState::Present && l.recorded_member_id.is_none_or(|id| id == me.id);
    if data_is_ours {
        let mut steps = Vec::new();
        if l.recorded_member_id.is_none() {
            steps.push(Step::new(
                Action::RecordMemberId { member_id: me.id },
                format!("this instance is member {:x}; record it", me.id),
            ));
        }
        if !l.etcd_running {
            steps.push(Step::new(
                Action::StartEtcd { initial_cluster: initial_cluster(o, members, me) },
                format!("member {:x} is in the cluster and its data is intact: restart etcd on it (rejoin)", me.id),
            ));
        }
        return steps;
    }
    // Same identity, but the data is gone, unusable, or another member's:
    // remove the stale member; the next pass moves the data aside and joins
    // again as a learner.
    let what = match l.data {
        DataState::Empty => "its data directory is empty",
        DataState::Unusable => "its data directory is unusable",
        DataState::Present => "its data belongs to another member id",
    };
    let mut steps = Vec::new();
    if l.etcd_running {
        steps.push(Step::new(
            Action::StopEtcd,
            format!("member {:x} is stale ({what}): stop etcd", me.id),
        ));
    }
    let voters = members.iter().filter(|m| !m.is_learner).count();
    let healthy = members
        .iter()
        .filter(|m| !m.is_learner && m.healthy)
        .count();
    if me.is_learner || removal_keeps_quorum(voters, healthy, me.healthy) {
        let first = snapshot_first(voters, healthy, me);
        steps.push(Step::new(
            Action::RemoveMember { member_id: me.id, name: me.name.clone(), snapshot_first: first.take },
            format!(
                "this instance is member {:x} but {what}: remove the stale member, then move the data aside and join again as a learner ({})",
                me.id, first.why
            ),
        ));
    } else {
        steps.push(Step::new(
            Action::Wait {
                on: WaitReason::RemovalWouldLoseQuorum,
            },
            format!(
                "member {:x} is stale ({what}) but removing it would leave {} healthy of {} voters, below quorum {}: waiting",
                me.id,
                healthy.saturating_sub(usize::from(me.healthy)),
                voters - 1,
                quorum(voters - 1)
            ),
        ));
    }
    steps
}

/// This instance is not in the group (the provider no longer lists it):
/// it is leaving. It never joins again and never moves its data aside; its
/// member is the cluster's to remove (the leader's instance removes
/// departed members one at a time, keeping quorum — itself last, when it is
/// the leader), and its etcd keeps running until then, so the removals
/// never cost the quorum. Once it is no longer a member, etcd is stopped
/// and kept stopped; the data stays.
fn leaving(o: &Observation) -> Vec<Step> {
    let l = &o.local;
    let member = o.my_member();
    match (member, l.etcd_running) {
        (None, true) if o.members.is_some() => vec![
            Step::new(
                Action::StopEtcd,
                "this instance is not in the group and no longer a member of the cluster: stop etcd (its data is kept)",
            ),
            left(),
        ],
        (None, _) if o.members.is_some() => vec![left()],
        (Some(m), _) => vec![Step::new(
            Action::Wait {
                on: WaitReason::Leaving,
            },
            format!(
                "this instance is not in the group: it is leaving; member {:x} stays until the cluster removes it \
                 (the leader's instance removes departed members one at a time); it never joins again, its data is kept",
                m.id
            ),
        )],
        (None, _) => vec![Step::new(
            Action::Wait {
                on: WaitReason::Leaving,
            },
            "this instance is not in the group and no member answers: it is leaving; it never joins again, its data is kept",
        )],
    }
}

fn left() -> Step {
    Step::new(
        Action::Wait {
            on: WaitReason::Left,
        },
        "this instance is not in the group and not a member: it has left; etcd stays stopped and its data is kept \
         (add it back to the group to rejoin)",
    )
}

fn not_a_member(o: &Observation, members: &[MemberFacts]) -> Vec<Step> {
    let l = &o.local;
    let mut steps = Vec::new();
    if l.etcd_running {
        steps.push(Step::new(
            Action::StopEtcd,
            "this instance's etcd runs but it is not a member of the cluster (removed): stop it",
        ));
    }
    if l.data != DataState::Empty {
        steps.push(Step::new(
            Action::MoveDataAside { why: "not-a-member".into() },
            "this instance is not a member of the cluster; its data is stale: move it aside (never deleted)",
        ));
    }
    if let Some(learner) = members.iter().find(|m| m.is_learner) {
        let who = if learner.name.is_empty() {
            format!("{:x}", learner.id)
        } else {
            learner.name.clone()
        };
        steps.push(Step::new(
            Action::Wait {
                on: WaitReason::OneLearnerAtATime,
            },
            format!("one learner at a time: {who} is still joining"),
        ));
        return steps;
    }
    let voters = members.iter().filter(|m| !m.is_learner).count();
    let healthy = members
        .iter()
        .filter(|m| !m.is_learner && m.healthy)
        .count();
    if healthy < quorum(voters) {
        steps.push(Step::new(
            Action::Wait {
                on: WaitReason::TooFewHealthyVoters,
            },
            format!("only {healthy} of {voters} voters are healthy (quorum {}): joining now would not be safe", quorum(voters)),
        ));
        return steps;
    }
    steps.push(Step::new(
        Action::JoinAsLearner {
            peer_url: l.peer_url.clone(),
        },
        "this instance is in the group but not a member: add it as a learner and start etcd",
    ));
    steps
}
