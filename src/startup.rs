//! What a starting instance does with what it finds on disk: a pure
//! decision, table-tested. (It moves into the `recovery` crate's planner when
//! multi-instance formation lands; until then it covers a group of one.)
//!
//! The rules, safest first:
//! - eco never creates a cluster over data it cannot account for, and never
//!   seeds an empty cluster where its state says data existed;
//! - a bootstrap that crashed before etcd confirmed it (state written,
//!   member id unknown) is retried with the same token;
//! - an instance with its state and its data resumes the same cluster.

use crate::data_dir::DataDirContents;
use crate::state_file::LocalState;
use serde::Serialize;

/// What the group looks like from this instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupShape {
    pub instances: usize,
}

/// The decision, with its reason.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum StartDecision {
    /// Create incarnation 1 as a one-member cluster.
    Bootstrap { reason: String },
    /// Start etcd on the existing data.
    Resume { reason: String },
    /// Do not start etcd; a human (or later work) must act.
    Refuse { reason: String },
}

impl StartDecision {
    pub fn reason(&self) -> &str {
        match self {
            StartDecision::Bootstrap { reason }
            | StartDecision::Resume { reason }
            | StartDecision::Refuse { reason } => reason,
        }
    }
}

pub fn decide(
    state: Option<&LocalState>,
    data: DataDirContents,
    group: GroupShape,
) -> StartDecision {
    use DataDirContents::*;
    match (state, data) {
        (Some(s), EtcdData) => StartDecision::Resume {
            reason: format!(
                "state file and etcd data of incarnation {} are present: restart etcd on its data",
                s.incarnation
            ),
        },
        (Some(s), Empty) if s.member_id.is_none() && s.incarnation == 1 && group.instances == 1 => {
            StartDecision::Bootstrap {
                reason: "a bootstrap was started but etcd never confirmed it: retry it with the same token".into(),
            }
        }
        (Some(s), Empty) => StartDecision::Refuse {
            reason: format!(
                "the state file says this instance holds data of incarnation {} (member {}), but the data directory is empty; \
                 eco will not seed an empty cluster over lost data: restore from a snapshot (eco restore) or move the state file aside",
                s.incarnation,
                s.member_id.map(|m| format!("{m:x}")).unwrap_or_else(|| "unknown".into())
            ),
        },
        (_, Other) => StartDecision::Refuse {
            reason: "the data directory holds files that are not etcd data; move them away (eco never deletes them)".into(),
        },
        (None, EtcdData) => StartDecision::Refuse {
            reason: "the data directory holds etcd data but there is no state file; eco cannot tell which cluster it \
                     belongs to: restore the state file, or move the data directory aside to start fresh"
                .into(),
        },
        (None, Empty) if group.instances == 1 => StartDecision::Bootstrap {
            reason: "no state, no data, and the group is this instance alone: create a one-member cluster".into(),
        },
        (None, Empty) => StartDecision::Refuse {
            reason: format!(
                "the group has {} instances; forming a multi-instance cluster needs the seeding protocol, which this \
                 build does not include yet",
                group.instances
            ),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use DataDirContents::*;

    fn state(member: Option<u64>) -> LocalState {
        LocalState {
            format: crate::state_file::FORMAT,
            cluster_name: "c".into(),
            instance_id: "a".into(),
            incarnation: 1,
            cluster_token: "c-1-0".into(),
            member_id: member,
            voting_members: vec!["a".into()],
            boots: 1,
        }
    }

    #[test]
    fn table() {
        let one = GroupShape { instances: 1 };
        let three = GroupShape { instances: 3 };
        let confirmed = state(Some(7));
        let pending = state(None);
        let cases: Vec<(Option<&LocalState>, DataDirContents, GroupShape, &str)> = vec![
            (Some(&confirmed), EtcdData, one, "resume"),
            (Some(&confirmed), EtcdData, three, "resume"),
            (Some(&pending), EtcdData, one, "resume"),
            (Some(&pending), Empty, one, "bootstrap"),
            (Some(&pending), Empty, three, "refuse"),
            (Some(&confirmed), Empty, one, "refuse"),
            (Some(&confirmed), Other, one, "refuse"),
            (None, Other, one, "refuse"),
            (None, EtcdData, one, "refuse"),
            (None, Empty, one, "bootstrap"),
            (None, Empty, three, "refuse"),
        ];
        for (s, d, g, want) in cases {
            let got = decide(s, d, g);
            let name = match got {
                StartDecision::Bootstrap { .. } => "bootstrap",
                StartDecision::Resume { .. } => "resume",
                StartDecision::Refuse { .. } => "refuse",
            };
            assert_eq!(
                name,
                want,
                "state={:?} data={d:?} group={g:?}: {}",
                s.map(|s| s.member_id),
                got.reason()
            );
            assert!(!got.reason().is_empty());
        }
    }
}
