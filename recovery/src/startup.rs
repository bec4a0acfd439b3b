//! What a starting instance does with what it finds on disk, in the store
//! and in the quorum-loss protocol's state: one pure decision, table-tested.
//!
//! The rules, safest first:
//! - eco never starts etcd for an incarnation older than the newest the
//!   store records: that data belongs to a cluster that was reseeded; it is
//!   moved aside (with its state file) and the instance joins;
//! - an instance the quorum-loss protocol holds (frozen by a promise, or the
//!   pending seeder of a new incarnation) never starts the etcd of its old
//!   incarnation: the protocol decides what happens to that data;
//! - eco never creates a cluster over data it cannot account for, and never
//!   seeds an empty cluster where its state says data existed;
//! - a bootstrap that crashed before etcd confirmed it (state written,
//!   member id unknown) is retried with the same token;
//! - an instance with its state and its data resumes the same cluster.

use crate::planner::DataState;
use serde::{Deserialize, Serialize};

/// What the state file says, as far as starting is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateSummary {
    /// The incarnation this instance's data belongs to.
    pub incarnation: u64,
    /// Its etcd member id, once etcd confirmed it.
    pub member_id: Option<u64>,
}

/// Everything the start decision reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StartFacts {
    /// The state file, `None` when there is none.
    pub state: Option<StateSummary>,
    pub data: DataState,
    /// How many instances the group has.
    pub group_size: usize,
    /// The quorum-loss protocol holds this instance (frozen by a promise,
    /// or the pending seeder of a new incarnation).
    pub held: bool,
    /// What the store records.
    pub recorded: Recorded,
}

/// What the store says of incarnations, at start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recorded {
    /// Not asked: no store, no state, or held by the protocol.
    NotAsked,
    /// The newest incarnation recorded (`None`: no record).
    Newest(Option<u64>),
    /// The store's records could not be read (no answer, or a record that
    /// is not this cluster's): whether a newer incarnation exists is
    /// unknown — never read as "none".
    Unanswered,
}

impl Recorded {
    fn newest(self) -> Option<u64> {
        match self {
            Recorded::Newest(n) => n,
            Recorded::NotAsked | Recorded::Unanswered => None,
        }
    }
}

/// The decision, with its reason.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum StartDecision {
    /// The data belongs to an incarnation older than the newest recorded:
    /// move the data directory and the state file aside, then decide again.
    DiscardStale { reason: String },
    /// Create incarnation 1 as a one-member cluster.
    Bootstrap { reason: String },
    /// Start etcd on the existing data.
    Resume { reason: String },
    /// The quorum-loss protocol holds this instance: do not start etcd of
    /// the old incarnation; the protocol's pass decides.
    Hold { reason: String },
    /// Do not start etcd yet: the steady-state planner joins this instance
    /// to the group's cluster (as a learner), or clears its stale identity.
    Join { reason: String },
    /// Do not start etcd; a human must act.
    Refuse { reason: String },
}

impl StartDecision {
    pub fn reason(&self) -> &str {
        match self {
            StartDecision::DiscardStale { reason }
            | StartDecision::Bootstrap { reason }
            | StartDecision::Resume { reason }
            | StartDecision::Hold { reason }
            | StartDecision::Join { reason }
            | StartDecision::Refuse { reason } => reason,
        }
    }
}

pub fn decide(f: &StartFacts) -> StartDecision {
    use DataState::*;
    if let (Some(s), false) = (f.state, f.held)
        && let Some(reason) = stale_incarnation(s.incarnation, f.recorded.newest())
    {
        return StartDecision::DiscardStale { reason };
    }
    let alone = f.group_size == 1;
    let decision = match (f.state, f.data) {
        (Some(s), Present) if f.recorded == Recorded::Unanswered => StartDecision::Resume {
            reason: format!(
                "state file and etcd data of incarnation {} are present; the store's incarnation records could not be read, so whether a newer incarnation exists is unknown: restart etcd on its data (a stale incarnation cannot join a newer cluster, whose id differs; once the store answers, a newer incarnation is joined and this data moved aside)",
                s.incarnation
            ),
        },
        (Some(s), Present) => StartDecision::Resume {
            reason: format!(
                "state file and etcd data of incarnation {} are present: restart etcd on its data",
                s.incarnation
            ),
        },
        (Some(s), Empty) if s.member_id.is_none() && s.incarnation == 1 && alone => StartDecision::Bootstrap {
            reason: "a bootstrap was started but etcd never confirmed it: retry it with the same token".into(),
        },
        (Some(s), Empty | Unusable) if !alone => StartDecision::Join {
            reason: format!(
                "this instance was a member of incarnation {} but its data is {}: remove the stale member, move the \
                 data aside and join again as a learner",
                s.incarnation,
                if f.data == Empty { "gone" } else { "unusable" }
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
        (_, Unusable) => StartDecision::Refuse {
            reason: "the data directory holds files that are not etcd data; move them away (eco never deletes them)".into(),
        },
        (None, Present) => StartDecision::Refuse {
            reason: "the data directory holds etcd data but there is no state file; eco cannot tell which cluster it \
                     belongs to: restore the state file, or move the data directory aside to start fresh"
                .into(),
        },
        (None, Empty) if alone => StartDecision::Bootstrap {
            reason: "no state, no data, and the group is this instance alone: create a one-member cluster".into(),
        },
        (None, Empty) => StartDecision::Join {
            reason: format!("no state and no data; the group has {} instances: join its cluster as a learner", f.group_size),
        },
    };
    match decision {
        StartDecision::Resume { .. } if f.held => StartDecision::Hold {
            reason: "the quorum-loss protocol holds this instance (frozen by a promise, or seeding a new incarnation): \
                     etcd of the old incarnation is not started"
                .into(),
        },
        d => d,
    }
}

/// Data of `incarnation` when the store records `newest_recorded`: the
/// reason to discard it when it is older.
pub fn stale_incarnation(incarnation: u64, newest_recorded: Option<u64>) -> Option<String> {
    match newest_recorded {
        Some(newest) if newest > incarnation => Some(format!(
            "this instance's data belongs to incarnation {incarnation}, but the store records incarnation {newest}: \
             never start an older incarnation; move the data aside and join"
        )),
        _ => None,
    }
}

/// One seeding record in the store, as far as a bootstrap is concerned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordSummary {
    pub incarnation: u64,
    pub seeder: String,
    pub token: String,
}

/// Whether a one-instance bootstrap may create incarnation 1, given every
/// seeding record the store holds. Positive evidence only: any record that
/// is not this very bootstrap means a cluster existed, and eco never seeds
/// an empty one over it.
pub fn bootstrap_allowed(records: &[RecordSummary], me: &str, token: &str) -> Result<(), String> {
    match records {
        [] => Ok(()),
        [r] if r.incarnation == 1 && r.seeder == me && r.token == token => Ok(()),
        _ => Err(format!(
            "the store already holds records of this cluster ({}); a cluster existed, and eco will not seed an empty one \
             over it: restore its data (eco restore, or recovery.bootstrap_from) or use another cluster name",
            records
                .iter()
                .map(|r| format!("incarnation {} seeded by {}", r.incarnation, r.seeder))
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// What incarnation 1 is seeded from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
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

    /// The stored snapshot to restore, if any.
    pub fn snapshot(&self) -> Option<&str> {
        match self {
            InitialSource::Empty => None,
            InitialSource::Snapshot { name, .. } => Some(name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use DataState::*;

    fn state(member: Option<u64>) -> StateSummary {
        StateSummary {
            incarnation: 1,
            member_id: member,
        }
    }

    fn name(d: &StartDecision) -> &'static str {
        match d {
            StartDecision::DiscardStale { .. } => "discard",
            StartDecision::Bootstrap { .. } => "bootstrap",
            StartDecision::Resume { .. } => "resume",
            StartDecision::Hold { .. } => "hold",
            StartDecision::Join { .. } => "join",
            StartDecision::Refuse { .. } => "refuse",
        }
    }

    #[test]
    fn table() {
        let confirmed = Some(state(Some(7)));
        let pending = Some(state(None));
        // (state, data, group size, held, newest recorded, decision)
        type Case = (
            Option<StateSummary>,
            DataState,
            usize,
            bool,
            Recorded,
            &'static str,
        );
        let none = Recorded::NotAsked;
        let newest = |n| Recorded::Newest(Some(n));
        let cases: Vec<Case> = vec![
            (confirmed, Present, 1, false, none, "resume"),
            (confirmed, Present, 3, false, none, "resume"),
            (pending, Present, 1, false, none, "resume"),
            (pending, Empty, 1, false, none, "bootstrap"),
            (pending, Empty, 3, false, none, "join"),
            (confirmed, Empty, 1, false, none, "refuse"),
            (confirmed, Empty, 3, false, none, "join"),
            (confirmed, Unusable, 1, false, none, "refuse"),
            (confirmed, Unusable, 3, false, none, "join"),
            (None, Unusable, 1, false, none, "refuse"),
            (None, Present, 1, false, none, "refuse"),
            (None, Empty, 1, false, none, "bootstrap"),
            (None, Empty, 3, false, none, "join"),
            (None, Present, 3, false, none, "refuse"),
            // The store records a newer incarnation: discard, whatever else.
            (confirmed, Present, 3, false, newest(2), "discard"),
            (confirmed, Empty, 1, false, newest(2), "discard"),
            (confirmed, Present, 3, false, newest(1), "resume"),
            // Held by the protocol: never resume the old incarnation, and
            // never discard what the protocol may seed from.
            (confirmed, Present, 3, true, none, "hold"),
            (confirmed, Present, 3, true, newest(2), "hold"),
            (confirmed, Empty, 3, true, none, "join"),
            (None, Empty, 3, true, none, "join"),
            // The store did not answer: the data restarts (a stale
            // incarnation cannot join a newer cluster; the protocol moves
            // it aside once the store answers), and the reason says so.
            (confirmed, Present, 3, false, Recorded::Unanswered, "resume"),
            (confirmed, Empty, 3, false, Recorded::Unanswered, "join"),
            (
                confirmed,
                Present,
                3,
                false,
                Recorded::Newest(None),
                "resume",
            ),
        ];
        for (s, d, size, held, newest, want) in cases {
            let got = decide(&StartFacts {
                state: s,
                data: d,
                group_size: size,
                held,
                recorded: newest,
            });
            assert_eq!(
                name(&got),
                want,
                "state={s:?} data={d:?} size={size} held={held} newest={newest:?}: {}",
                got.reason()
            );
            assert!(!got.reason().is_empty());
        }
    }

    #[test]
    fn stale_incarnations_are_never_started() {
        assert_eq!(stale_incarnation(1, None), None);
        assert_eq!(stale_incarnation(1, Some(1)), None);
        let why = stale_incarnation(1, Some(2)).unwrap();
        assert!(
            why.contains("incarnation 1") && why.contains("incarnation 2"),
            "{why}"
        );
    }

    #[test]
    fn bootstrap_record_gate() {
        let r = |n: u64, seeder: &str, token: &str| RecordSummary {
            incarnation: n,
            seeder: seeder.into(),
            token: token.into(),
        };
        assert!(bootstrap_allowed(&[], "a", "t").is_ok());
        assert!(
            bootstrap_allowed(&[r(1, "a", "t")], "a", "t").is_ok(),
            "our own retry"
        );
        assert!(bootstrap_allowed(&[r(1, "b", "t2")], "a", "t").is_err());
        assert!(bootstrap_allowed(&[r(1, "a", "other")], "a", "t").is_err());
        let e = bootstrap_allowed(&[r(1, "a", "t"), r(2, "b", "x")], "a", "t").unwrap_err();
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
