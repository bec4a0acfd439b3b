//! What each instance tells the others about itself.

use serde::{Deserialize, Serialize};
use std::net::SocketAddr;

/// Newer wins: `(boot, sequence)` ordered lexicographically. `boot` is the
/// wall-clock time (Unix ms) at process start, so a restarted instance's
/// states win over its previous life's even though `sequence` restarts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Version {
    pub boot: u64,
    pub sequence: u64,
}

/// The local etcd, as its instance sees it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EtcdFacts {
    pub running: bool,
    pub member_id: Option<u64>,
    pub cluster_id: Option<u64>,
    pub cluster_token: Option<String>,
    pub incarnation: Option<u64>,
    pub healthy: bool,
    pub is_leader: bool,
    pub revision: i64,
    pub raft_index: u64,
    pub raft_term: u64,
    /// Its peer listener speaks `https` (meaningful while `running`).
    pub peer_https: bool,
    /// It runs with peer TLS material: it can dial `https` peers.
    pub peer_tls_ready: bool,
}

/// The local data, as its instance sees it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataFacts {
    /// A state file exists (this instance was part of a cluster).
    pub has_state: bool,
    /// The data directory holds etcd data.
    pub present: bool,
    pub incarnation: Option<u64>,
    pub revision: Option<i64>,
    /// `V_n` of `incarnation` as the state file records it (instance ids).
    pub voters: Vec<String>,
    /// The started learners of the same member list.
    pub learners: Vec<String>,
}

/// One instance's published state.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeerState {
    pub instance_id: String,
    pub gossip_addr: Option<SocketAddr>,
    pub client_url: String,
    pub peer_url: String,
    pub zone: Option<String>,
    pub etcd: EtcdFacts,
    pub data: DataFacts,
    /// The instance's phase, for humans (`running`, `frozen`, ...). Never
    /// read back by a decision: the typed facts above and below are.
    pub phase: String,
    /// Promised in a quorum-loss recovery round: its etcd is stopped and it
    /// will not rejoin its incarnation by itself (so it is not viable).
    pub frozen: bool,
    pub software_version: String,
    /// Its formats (see [`Formats`]): not part of the struct's encoding,
    /// they travel in the tail after it ([`crate::broadcast::StateItem`]).
    #[serde(skip)]
    pub formats: Formats,
}

/// The format an instance writes and the newest it reads: eco's cluster
/// version is made of these (the `recovery` crate's `cluster_version`).
/// They follow a [`PeerState`] on the wire, after its last field, where a
/// reader of the previous layout (eco 0.1.0, which knows no tail) ignores
/// them; a state without them is [`Formats::UNTAGGED`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Formats {
    /// The format the state's fields are written in.
    pub written: u16,
    /// The newest format the instance reads.
    pub reads: u16,
}

impl Formats {
    /// eco 0.1.0's: it wrote and read format 1 and sent no tail.
    pub const UNTAGGED: Formats = Formats {
        written: 1,
        reads: 1,
    };
}

impl Default for Formats {
    fn default() -> Self {
        Self::UNTAGGED
    }
}
