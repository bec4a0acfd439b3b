//! What the planner asks the daemon to do.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Action {
    /// Start the local etcd on its data, joining the existing cluster with
    /// this `--initial-cluster` (`name=peer URL`).
    StartEtcd {
        initial_cluster: Vec<(String, String)>,
    },
    /// Stop the local etcd (its member is gone or its data is stale).
    StopEtcd,
    /// Rename the local data directory aside (never delete it).
    MoveDataAside { why: String },
    /// Add this instance as a learner with its peer URL, then start etcd with
    /// the member list the add returns.
    JoinAsLearner { peer_url: String },
    /// Promote a learner to voter (leader only).
    Promote { member_id: u64, name: String },
    /// Remove a member (the leader, or an instance clearing its own stale
    /// member), with a full snapshot into the store first when
    /// `snapshot_first` (the member serves: [`super::snapshot_first`]).
    RemoveMember {
        member_id: u64,
        name: String,
        #[serde(default)]
        snapshot_first: bool,
    },
    /// Hand raft leadership to another voter (the leader's instance is
    /// leaving: the new leader's instance removes its member).
    TransferLeadership { member_id: u64, name: String },
    /// Record this member id in the state file.
    RecordMemberId { member_id: u64 },
    /// Nothing is possible now: `on` names what it waits for (a stable
    /// label for metrics), the step's reason says it in full.
    Wait { on: WaitReason },
    /// Everything is as it should be.
    Nothing,
}

/// What a wait waits for: a closed set, so it can label a metric
/// (`eco_waits_total{reason}`) where the step's free-text reason cannot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WaitReason {
    /// No member answers, so the member list is unknown.
    MemberListUnknown,
    /// A member was added for this instance and etcd runs on its data; the
    /// member has not published its name yet.
    MemberNotNamedYet,
    /// Removing a member (departed or stale) would leave too few healthy
    /// voters.
    RemovalWouldLoseQuorum,
    /// This instance is not in the group and its member is not removed
    /// yet (or no member answers to say).
    Leaving,
    /// This instance left: not in the group, not a member.
    Left,
    /// Another learner is still joining (one at a time).
    OneLearnerAtATime,
    /// A learner belongs to no instance of the group as this instance
    /// read it, but it is new: the instance that added it may have read a
    /// newer group (`PlannerConfig::group_lag_ms`).
    LearnerOwnerUnknown,
    /// A member belongs to no instance of the group, but eco has not read
    /// the group long enough since it started to confirm a departure
    /// (`Observation::absences_confirmed`).
    DepartureUnconfirmed,
    /// Too few voters are healthy to add a member safely.
    TooFewHealthyVoters,
    /// etcd refused a membership change for now (another learner, a
    /// learner not in sync, an unsafe change): set by the daemon, not the
    /// planner.
    EtcdRefusedForNow,
}

impl WaitReason {
    pub const ALL: [WaitReason; 10] = [
        WaitReason::MemberListUnknown,
        WaitReason::MemberNotNamedYet,
        WaitReason::RemovalWouldLoseQuorum,
        WaitReason::Leaving,
        WaitReason::Left,
        WaitReason::OneLearnerAtATime,
        WaitReason::LearnerOwnerUnknown,
        WaitReason::DepartureUnconfirmed,
        WaitReason::TooFewHealthyVoters,
        WaitReason::EtcdRefusedForNow,
    ];

    /// The stable name (a metric label, an event field).
    pub fn as_str(self) -> &'static str {
        match self {
            WaitReason::MemberListUnknown => "member_list_unknown",
            WaitReason::MemberNotNamedYet => "member_not_named_yet",
            WaitReason::RemovalWouldLoseQuorum => "removal_would_lose_quorum",
            WaitReason::Leaving => "leaving",
            WaitReason::Left => "left",
            WaitReason::OneLearnerAtATime => "one_learner_at_a_time",
            WaitReason::LearnerOwnerUnknown => "learner_owner_unknown",
            WaitReason::DepartureUnconfirmed => "departure_unconfirmed",
            WaitReason::TooFewHealthyVoters => "too_few_healthy_voters",
            WaitReason::EtcdRefusedForNow => "etcd_refused_for_now",
        }
    }
}

impl Action {
    /// The stable name of the action's kind (a metric label, an event
    /// field): the serde tag.
    pub fn kind(&self) -> &'static str {
        match self {
            Action::StartEtcd { .. } => "start_etcd",
            Action::StopEtcd => "stop_etcd",
            Action::MoveDataAside { .. } => "move_data_aside",
            Action::JoinAsLearner { .. } => "join_as_learner",
            Action::Promote { .. } => "promote",
            Action::RemoveMember { .. } => "remove_member",
            Action::TransferLeadership { .. } => "transfer_leadership",
            Action::RecordMemberId { .. } => "record_member_id",
            Action::Wait { .. } => "wait",
            Action::Nothing => "nothing",
        }
    }

    /// Every kind [`Self::kind`] names, in declaration order.
    pub const KINDS: [&'static str; 10] = [
        "start_etcd",
        "stop_etcd",
        "move_data_aside",
        "join_as_learner",
        "promote",
        "remove_member",
        "transfer_leadership",
        "record_member_id",
        "wait",
        "nothing",
    ];

    pub fn is_wait(&self) -> bool {
        matches!(self, Action::Wait { .. })
    }

    pub fn changes_membership(&self) -> bool {
        matches!(
            self,
            Action::JoinAsLearner { .. } | Action::Promote { .. } | Action::RemoveMember { .. }
        )
    }
}

/// An action with the reason it was chosen.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    pub action: Action,
    pub reason: String,
}

impl Step {
    pub fn new(action: Action, reason: impl Into<String>) -> Self {
        Self {
            action,
            reason: reason.into(),
        }
    }
}

/// Steps to run in order; the daemon stops at the first that fails and
/// plans again.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    pub steps: Vec<Step>,
}

impl Plan {
    /// The first step: what `eco status` shows as "next".
    pub fn next(&self) -> Option<&Step> {
        self.steps.first()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_the_serde_tags_and_all_listed() {
        let examples = [
            Action::StartEtcd {
                initial_cluster: Vec::new(),
            },
            Action::StopEtcd,
            Action::MoveDataAside { why: "x".into() },
            Action::JoinAsLearner {
                peer_url: "http://a".into(),
            },
            Action::Promote {
                member_id: 1,
                name: "a".into(),
            },
            Action::RemoveMember {
                member_id: 1,
                name: "a".into(),
                snapshot_first: true,
            },
            Action::TransferLeadership {
                member_id: 1,
                name: "a".into(),
            },
            Action::RecordMemberId { member_id: 1 },
            Action::Wait {
                on: WaitReason::Left,
            },
            Action::Nothing,
        ];
        let kinds: Vec<&str> = examples.iter().map(Action::kind).collect();
        assert_eq!(kinds, Action::KINDS);
        for a in &examples {
            let json = serde_json::to_value(a).unwrap();
            assert_eq!(json["kind"], a.kind(), "{a:?}");
        }
    }

    #[test]
    fn wait_reasons_serialize_as_their_names() {
        for r in WaitReason::ALL {
            assert_eq!(serde_json::to_value(r).unwrap(), r.as_str());
        }
        let mut names: Vec<&str> = WaitReason::ALL.iter().map(|r| r.as_str()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), WaitReason::ALL.len());
    }
}
