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
    /// Do not start etcd yet: the steady-state planner joins this instance
    /// to the group's cluster (as a learner), or clears its stale identity.
    Join { reason: String },
    /// Do not start etcd; a human (or later work) must act.
    Refuse { reason: String },
}

impl StartDecision {
    pub fn reason(&self) -> &str {
        match self {
            StartDecision::Bootstrap { reason }
            | StartDecision::Resume { reason }
            | StartDecision::Join { reason }
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
    let alone = group.instances == 1;
    match (state, data) {
        (Some(s), EtcdData) => StartDecision::Resume {
            reason: format!(
                "state file and etcd data of incarnation {} are present: restart etcd on its data",
                s.incarnation
            ),
        },
        (Some(s), Empty) if s.member_id.is_none() && s.incarnation == 1 && alone => StartDecision::Bootstrap {
            reason: "a bootstrap was started but etcd never confirmed it: retry it with the same token".into(),
        },
        (Some(s), Empty | Other) if !alone => StartDecision::Join {
            reason: format!(
                "this instance was a member of incarnation {} but its data is {}: remove the stale member, move the \
                 data aside and join again as a learner",
                s.incarnation,
                if data == Empty { "gone" } else { "unusable" }
            ),
        },
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
        (None, Empty) if alone => StartDecision::Bootstrap {
            reason: "no state, no data, and the group is this instance alone: create a one-member cluster".into(),
        },
        (None, Empty) => StartDecision::Join {
            reason: format!("no state and no data; the group has {} instances: join its cluster as a learner", group.instances),
        },
    }
}

/// A resumable instance whose incarnation is older than the newest the
/// store records must not start etcd: its data belongs to a cluster that was
/// reseeded. Returns the reason to move the data aside and join instead.
pub fn stale_incarnation(state: &LocalState, newest_recorded: Option<u64>) -> Option<String> {
    match newest_recorded {
        Some(newest) if newest > state.incarnation => Some(format!(
            "this instance's data belongs to incarnation {}, but the store records incarnation {newest}: \
             never start an older incarnation; move the data aside and join",
            state.incarnation
        )),
        _ => None,
    }
}

/// Whether a one-instance bootstrap may create incarnation 1, given the
/// seeding records already in the store as `(incarnation, seeder, token)`.
/// Positive evidence only: any record that is not this very bootstrap means
/// a cluster existed, and eco never seeds an empty one over it.
pub fn bootstrap_allowed(
    records: &[(u64, String, String)],
    me: &str,
    token: &str,
) -> Result<(), String> {
    match records {
        [] => Ok(()),
        [(1, seeder, t)] if seeder == me && t == token => Ok(()),
        _ => Err(format!(
            "the store already holds records of this cluster ({}); a cluster existed, and eco will not seed an empty one \
             over it: restore its data (eco restore, or recovery.bootstrap_from) or use another cluster name",
            records
                .iter()
                .map(|(n, seeder, _)| format!("incarnation {n} seeded by {seeder}"))
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// What incarnation 1 is seeded from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InitialSource {
    /// A new, empty cluster.
    Empty,
    /// A snapshot of the store, by object name, with the reason.
    Snapshot { name: String, reason: String },
}

/// The seed of incarnation 1: `recovery.bootstrap_from` when set; else the
/// newest snapshot the store holds for this cluster (a cluster is being
/// seeded and no live data exists: its records were lost or the name is
/// reused — the data is worth more than an empty start); else empty.
pub fn initial_source(bootstrap_from: Option<&str>, newest_stored: Option<&str>) -> InitialSource {
    match (bootstrap_from, newest_stored) {
        (Some(name), _) => InitialSource::Snapshot {
            name: name.to_string(),
            reason: "recovery.bootstrap_from names it".into(),
        },
        (None, Some(name)) => InitialSource::Snapshot {
            name: name.to_string(),
            reason: "no cluster record exists but the store holds this cluster's snapshots: seed from the newest rather than empty".into(),
        },
        (None, None) => InitialSource::Empty,
    }
}

impl InitialSource {
    /// The record's `source` field.
    pub fn record_source(&self) -> String {
        match self {
            InitialSource::Empty => "empty".into(),
            InitialSource::Snapshot { name, .. } => format!("snapshot:{name}"),
        }
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
            (Some(&pending), Empty, three, "join"),
            (Some(&confirmed), Empty, one, "refuse"),
            (Some(&confirmed), Empty, three, "join"),
            (Some(&confirmed), Other, one, "refuse"),
            (Some(&confirmed), Other, three, "join"),
            (None, Other, one, "refuse"),
            (None, EtcdData, one, "refuse"),
            (None, Empty, one, "bootstrap"),
            (None, Empty, three, "join"),
            (None, EtcdData, three, "refuse"),
        ];
        for (s, d, g, want) in cases {
            let got = decide(s, d, g);
            let name = match got {
                StartDecision::Bootstrap { .. } => "bootstrap",
                StartDecision::Resume { .. } => "resume",
                StartDecision::Join { .. } => "join",
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

    #[test]
    fn stale_incarnations_are_never_started() {
        let s = state(Some(7));
        assert_eq!(stale_incarnation(&s, None), None);
        assert_eq!(stale_incarnation(&s, Some(1)), None);
        let why = stale_incarnation(&s, Some(2)).unwrap();
        assert!(
            why.contains("incarnation 1") && why.contains("incarnation 2"),
            "{why}"
        );
    }

    #[test]
    fn bootstrap_record_gate() {
        let ours = (1, "a".to_string(), "t".to_string());
        assert!(bootstrap_allowed(&[], "a", "t").is_ok());
        assert!(
            bootstrap_allowed(std::slice::from_ref(&ours), "a", "t").is_ok(),
            "our own retry"
        );
        assert!(bootstrap_allowed(&[(1, "b".into(), "t2".into())], "a", "t").is_err());
        assert!(bootstrap_allowed(&[(1, "a".into(), "other".into())], "a", "t").is_err());
        let e = bootstrap_allowed(&[ours, (2, "b".into(), "x".into())], "a", "t").unwrap_err();
        assert!(e.contains("incarnation 2 seeded by b"), "{e}");
    }

    #[test]
    fn the_initial_source_prefers_the_configured_snapshot_then_the_newest_stored() {
        let name = |s: InitialSource| match s {
            InitialSource::Empty => "empty".to_string(),
            InitialSource::Snapshot { name, .. } => name,
        };
        assert_eq!(name(initial_source(Some("a"), Some("b"))), "a");
        assert_eq!(name(initial_source(None, Some("b"))), "b");
        assert_eq!(name(initial_source(None, None)), "empty");
        assert_eq!(
            initial_source(Some("c/snapshots/x.db"), None).record_source(),
            "snapshot:c/snapshots/x.db"
        );
    }
}
