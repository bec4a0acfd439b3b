//! What the protocol asks the daemon to do. Effects are executed in order;
//! each carries the reason it was chosen.

use super::ids::{Incarnation, InstanceId, Millis};
use super::messages::Envelope;
use super::persisted::PersistedState;
use super::value::SeedRecord;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Effect {
    pub kind: EffectKind,
    pub reason: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum EffectKind {
    /// Write the state file atomically (fsync) before the next effect.
    Persist(PersistedState),
    Send(Envelope),
    /// Stop etcd, stop snapshots and steady-state actions; never start
    /// incarnation `n` again.
    Freeze,
    /// The cluster showed itself healthy and nothing was accepted: resume.
    Unfreeze,
    /// Read the local WAL and answer with [`super::Input::LocalData`].
    ReadLocalData,
    /// Call [`super::Protocol::handle`] with a tick at or after this time.
    WakeAt(Millis),
    /// Conditionally create `incarnations/<n>` (create only if absent);
    /// answer with [`super::Input::CreateResult`].
    CreateRecord(SeedRecord),
    /// This instance seeds the new incarnation.
    Seed(SeedPlan),
    /// Another instance seeds `record.incarnation`: move the old data aside
    /// and join it as in steady state.
    Join(SeedRecord),
    Alert(AlertKind),
    /// `accept_loss_after` fired: these members were skipped and may have
    /// held the only copy of acknowledged writes.
    DataLoss {
        incarnation: Incarnation,
        skipped: Vec<InstanceId>,
    },
}

/// How the seeder seeds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SeedPlan {
    /// Replay the local WAL up to `commit_index` (`--force-new-cluster` on a
    /// loopback copy), snapshot that, restore it under the new token.
    ReplayWal {
        incarnation: Incarnation,
        commit_index: u64,
        revision: u64,
        token_suffix: u64,
    },
    /// Restore the store's snapshot `name` (sha256 verified).
    RestoreSnapshot {
        incarnation: Incarnation,
        name: String,
        token_suffix: u64,
    },
    /// Start a new, empty one-member cluster (a record whose value is
    /// [`super::SeedSource::Empty`]: only formation's incarnation 1).
    Fresh {
        incarnation: Incarnation,
        token_suffix: u64,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum AlertKind {
    /// The store failed; waiting (never proceeding on a store error).
    StoreUnavailable,
    /// Data disagree (same position, different revision; two cluster ids).
    DataConflict,
    /// A record exists but no instance holds data and the store has no
    /// snapshot: page a human; never seed empty.
    NoDataAnywhere,
}
