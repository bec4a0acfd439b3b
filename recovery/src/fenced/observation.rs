//! The plain facts the daemon gathers and feeds in: its own etcd probes,
//! gossip about peers, the provider's group, the store, the local WAL.

use super::ids::{Incarnation, InstanceId, Millis};
use super::value::SeedRecord;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// One etcd `Status` probe of this instance's own member.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Probe {
    /// The member answered and knows a leader.
    Leader,
    /// The member answered without a leader.
    NoLeader,
    /// No answer (process down, restarting, replaying its WAL, timeout).
    Failed,
}

/// What gossip says about one instance (its own disseminated PeerState).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeerFact {
    /// Incarnation of the data it holds (0: none).
    pub incarnation: Incarnation,
    pub cluster_id: Option<u64>,
    /// Its data dir of `incarnation` is intact (whatever etcd is doing).
    pub has_data: bool,
    /// When it last saw an etcd leader (monotonic time of this instance).
    pub leader_seen_at: Option<Millis>,
    /// It promised in a recovery round: etcd stopped, it will not rejoin
    /// incarnation `n` by itself (so it is not viable).
    pub frozen: bool,
    /// When its PeerState was last refreshed (monotonic time of this instance).
    pub last_heard: Millis,
    /// `V_n` of its `incarnation` as its own state file records it (the
    /// voters of the last member list it saw as a confirmed member);
    /// empty when it records none. One of the views the protocol unites
    /// into `V_n` ([`super::Protocol`]'s `known_voters`), and the peer's
    /// own account of whether it votes: a member that does not list
    /// itself (a learner) is not viable.
    #[serde(default)]
    pub voters: Vec<InstanceId>,
    /// The started learners of its incarnation in the same view: not
    /// voters, but members a round waits for (they may hold acknowledged
    /// writes no voter survived with).
    #[serde(default)]
    pub learners: Vec<InstanceId>,
}

impl PeerFact {
    /// Holds data of incarnation `n` (whatever its etcd is doing).
    pub fn holds(&self, n: Incarnation) -> bool {
        self.has_data && self.incarnation == n
    }

    /// Counts itself a voter of its incarnation: its own view lists it
    /// (a view it does not report says nothing against it).
    pub fn votes(&self, id: &str) -> bool {
        self.voters.is_empty() || self.voters.iter().any(|v| v == id)
    }
}

/// One sample of the detector's window, taken at `at`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DetectorSample {
    pub at: Millis,
    /// The own etcd probe of this sample, if one was made.
    pub probe: Option<Probe>,
    /// Gossip facts by instance id. The daemon includes its own entry.
    pub peers: BTreeMap<InstanceId, PeerFact>,
    /// Certified gone by the provider (EC2 `terminated`, removed from the
    /// static group file). SWIM "down" is not gone.
    pub certified_gone: BTreeSet<InstanceId>,
}

/// The provider's view of the group.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupFacts {
    /// Every instance the provider knows, standby and wait states included.
    pub instances: BTreeSet<InstanceId>,
    /// Certified gone by the provider.
    pub certified_gone: BTreeSet<InstanceId>,
}

/// The newest snapshot in the store, with what it records.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotFacts {
    pub name: String,
    pub cluster_id: Option<u64>,
    pub incarnation: Incarnation,
    pub commit_index: u64,
    pub revision: u64,
}

/// The store's listing of `incarnations/`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RecordListing {
    /// A complete (paginated to the end) listing of every record.
    Complete(Vec<SeedRecord>),
    /// The listing failed: never read as empty.
    Failed(String),
}

/// The store's listing of snapshots, reduced to the newest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SnapshotListing {
    /// A complete listing: its newest snapshot, `None` when there is none.
    Complete(Option<SnapshotFacts>),
    /// The listing failed: never read as "no snapshot" (the store's
    /// snapshot may be the only copy of the newest data).
    Failed(String),
}

/// What the daemon last learned from the store.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoreFacts {
    pub records: RecordListing,
    pub snapshots: SnapshotListing,
    /// The started learners of each incarnation, as the store's record of
    /// its membership lists them beside `V_n` (empty when the listing
    /// failed or no record lists any).
    #[serde(default)]
    pub learners: BTreeMap<Incarnation, Vec<InstanceId>>,
}

/// What this instance holds on disk (read from its WAL; may take a while).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LocalData {
    pub cluster_id: Option<u64>,
    /// Incarnation of the data dir (0: no data).
    pub incarnation: Incarnation,
    pub commit_index: u64,
    pub applied_revision: u64,
    pub has_data: bool,
}

impl LocalData {
    pub fn empty() -> Self {
        LocalData {
            cluster_id: None,
            incarnation: 0,
            commit_index: 0,
            applied_revision: 0,
            has_data: false,
        }
    }
}

/// The data report a promiser sends after its promise.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataReport {
    pub data: LocalData,
    /// It holds a state file of a seeded cluster (incarnation ≥ 1).
    pub has_state: bool,
    /// `V_n` as this member's state file knows it. A coordinator whose own
    /// view is older (it was cut off while a member joined) learns the
    /// members it missed from here and waits for them too.
    #[serde(default)]
    pub voters: Vec<InstanceId>,
}

impl DataReport {
    /// Holds data of incarnation `n` (else it is certified gone for `n` by
    /// its own answer).
    pub fn holds(&self, n: Incarnation) -> bool {
        self.data.has_data && self.data.incarnation == n
    }
}
