//! The fenced seeding protocol: deciding, with no human and no
//! etcd, how incarnation `n+1` of a cluster is seeded — after a quorum
//! loss of incarnation `n ≥ 1`. Incarnation 1 is formed by
//! `crate::formation` (the same evidence of emptiness and the same commit
//! point, the conditional create of `incarnations/1`; docs/architecture.md
//! says why a Paxos round adds nothing there).
//!
//! Pure: `Protocol::handle(now, Input) -> Vec<Effect>`. No I/O, no clock
//! (time is an input), no randomness but values passed in, no async. The
//! daemon executes the effects **in order** (a `Persist` precedes the
//! `Send` of the promise it records).
//!
//! # The design in one page
//!
//! Single-decree Paxos per incarnation over "how is `n+1` seeded", ballots
//! `(round, instance id)`, whose **acceptors are `V_n`**, the voting
//! members of incarnation `n` — never the desired capacity, never fresh
//! instances (a replacement with a lost disk is an acceptor with amnesia).
//! The **commit point** is the store's conditional create of
//! `incarnations/<n+1>`; if it finds another record, that record wins.
//!
//! 1. [`detector::lost`] with hysteresis decides that `n` lost its quorum.
//! 2. The lowest live id coordinates; others take over after no progress
//!    (`takeover_after` + random jitter, exponential back-off), jumping
//!    above the ballot a rejection carries.
//! 3. `Prepare` to `V_n`. A member promises only if its own detector says
//!    `lost(n)`; otherwise it rejects with its evidence, aborting the round.
//!    A promise is persisted before it is sent and freezes the member.
//! 4. Promise first, data report after.
//! 5. Propose only when every member of `V_n` promised and reported or is
//!    certified gone (provider, or its own "no data of `n`"). No timeout
//!    skips a live member, except `accept_loss_after` (off by default),
//!    which needs a majority of `V_n` fenced and emits [`EffectKind::DataLoss`].
//! 6. The value: an accepted value of any promiser (highest ballot), else
//!    [`ranking::rank`] of the reports and the store's newest snapshot.
//! 7. A majority accepted → `CreateRecord`; the record's seeder seeds,
//!    everyone else joins.
//!
//! # Invariants (checked by the harness on every step)
//!
//! - at most one record per incarnation; only its seeder seeds, and only
//!   what the record says;
//! - the seeded commit index ≥ the highest commit index held by a member of
//!   `V_n` whose data survives (unless `accept_loss_after` fired, recorded);
//! - every non-gone member of `V_n` reported before a value is proposed;
//! - no empty seed while any data or record exists; a store error never
//!   reads as empty;
//! - a promise is persisted before it is sent and never broken, restarts
//!   included;
//! - no two values chosen for one incarnation by acceptors that kept their
//!   disks;
//! - the old incarnation never regains quorum once a record exists.
//!
//! # What this module does not do
//!
//! Talk to anything: gossip, etcd, the store and the provider belong to the
//! daemon's driver (`eco::quorum_loss::driver`, also run by the turmoil
//! simulation), which fills [`DetectorSample`], [`LocalData`], [`StoreFacts`],
//! [`GroupFacts`] and executes [`Effect`]s, then pays what [`Owed`] says
//! the state still owes. It does not replay WALs or restore snapshots
//! ([`SeedPlan`] says what to do; `crate::seeding` lists the steps), nor
//! keep `V_n` in steady state (`crate::voters` decides that; it is fed
//! back as [`Input::Membership`]).
//! Known limit: `Prepare` goes to `V_n` only, so data held by non-members
//! (possible only after an abandoned incarnation) is not collected.

pub mod ballot;
pub mod config;
pub mod coordinator;
pub mod detector;
pub mod effects;
mod explain;
pub mod ids;
pub mod messages;
pub mod observation;
mod owed;
pub mod persisted;
pub mod protocol;
pub mod ranking;
pub mod round;
pub mod value;
mod views;
pub mod wire;

#[cfg(any(test, feature = "harness"))]
pub mod harness;

#[cfg(test)]
mod tests;

pub use ballot::Ballot;
pub use config::{
    DEFAULT_QUORUM_LOSS_TIMEOUT, Faults, ProtocolConfig, Setting, TimingProblem, WatchedTiming,
};
pub use detector::{Verdict, Window, lost};
pub use effects::{AlertKind, Effect, EffectKind, SeedPlan};
pub use explain::{Explanation, ProtocolPhase};
pub use ids::{BootId, Incarnation, InstanceId, Millis};
pub use messages::{AcceptedValue, Envelope, Message, Rejection};
pub use observation::{
    DataReport, DetectorSample, GroupFacts, LocalData, PeerFact, Probe, RecordListing,
    SnapshotFacts, SnapshotListing, StoreFacts,
};
pub use owed::Owed;
pub use persisted::{PersistError, PersistedState, decode, encode};
pub use protocol::{CreateResult, Input, Protocol, seed_plan};
pub use ranking::{RankError, rank};
pub use value::{SeedRecord, SeedSource, SeedValue};
