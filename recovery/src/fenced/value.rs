//! What the protocol decides: how incarnation `n+1` is seeded, and the
//! record of it in the store (the commit point).

use super::ballot::Ballot;
use super::ids::{Incarnation, InstanceId};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Where the data of the new incarnation comes from.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum SeedSource {
    /// A member's WAL, replayed to `commit_index`.
    Member {
        holder: InstanceId,
        cluster_id: Option<u64>,
        incarnation: Incarnation,
        commit_index: u64,
        revision: u64,
    },
    /// A snapshot of the store (sha256 verified at restore).
    Store {
        name: String,
        cluster_id: Option<u64>,
        incarnation: Incarnation,
        commit_index: u64,
        revision: u64,
    },
    /// Nothing: incarnation 1 formed empty (`crate::formation`, on
    /// positive evidence of emptiness); this protocol never proposes it.
    Empty,
}

impl SeedSource {
    /// `(incarnation, commit index)` of the data, `(0, 0)` for empty.
    pub fn position(&self) -> (Incarnation, u64) {
        match self {
            SeedSource::Member {
                incarnation,
                commit_index,
                ..
            }
            | SeedSource::Store {
                incarnation,
                commit_index,
                ..
            } => (*incarnation, *commit_index),
            SeedSource::Empty => (0, 0),
        }
    }
}

impl fmt::Display for SeedSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SeedSource::Member {
                holder,
                incarnation,
                commit_index,
                revision,
                ..
            } => write!(
                f,
                "the WAL of {holder} (incarnation {incarnation}, commit index {commit_index}, revision {revision})"
            ),
            SeedSource::Store {
                name,
                incarnation,
                commit_index,
                revision,
                ..
            } => write!(
                f,
                "store snapshot {name} (incarnation {incarnation}, commit index {commit_index}, revision {revision})"
            ),
            SeedSource::Empty => write!(f, "nothing (a new, empty cluster)"),
        }
    }
}

/// The value of the single-decree Paxos round: a source and the one
/// instance that seeds from it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SeedValue {
    pub source: SeedSource,
    pub seeder: InstanceId,
}

impl fmt::Display for SeedValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} seeds from {}", self.seeder, self.source)
    }
}

/// `incarnations/<n>` in the store, created conditionally (the commit point).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeedRecord {
    pub incarnation: Incarnation,
    pub value: SeedValue,
    /// The ballot that chose it (0 for records the protocol did not write).
    pub ballot: Ballot,
    /// `V_{n}` of this incarnation; at creation `{seeder}`, rewritten by the
    /// steady-state operator afterwards.
    pub voters: Vec<InstanceId>,
    /// A random suffix of the new cluster token (an input).
    pub token_suffix: u64,
    /// `accept_loss_after` fired: members were skipped; data may be lost.
    pub data_loss: bool,
}

impl SeedRecord {
    /// Whether `other` records the same decision: the incarnation, what
    /// seeds it and who, and its token. `voters` is left out: the
    /// steady-state operator rewrites `V_n` after the decision.
    pub fn same_decision(&self, other: &SeedRecord) -> bool {
        self.incarnation == other.incarnation
            && self.value == other.value
            && self.token_suffix == other.token_suffix
    }
}
