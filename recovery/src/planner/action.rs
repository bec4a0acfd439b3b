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
    /// member).
    RemoveMember { member_id: u64, name: String },
    /// Hand raft leadership to another voter (the leader's instance is
    /// leaving: the new leader's instance removes its member).
    TransferLeadership { member_id: u64, name: String },
    /// Record this member id in the state file.
    RecordMemberId { member_id: u64 },
    /// Nothing is possible now; the reason says what it waits for.
    Wait,
    /// Everything is as it should be.
    Nothing,
}

impl Action {
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
