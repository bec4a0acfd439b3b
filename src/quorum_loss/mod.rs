//! The daemon's side of the fenced seeding protocol (DESIGN §7): the pure
//! `recovery::fenced::Protocol` decides; this module gathers its facts and
//! holds the I/O its effects need.
//!
//! - [`facts`]: gossip, probes, the group and the store turned into the
//!   protocol's plain observations, and the store's records turned into
//!   the protocol's [`recovery::fenced::SeedRecord`]s and back.
//! - [`protocol_file`]: the protocol's durable state (`eco-recovery.state`
//!   beside the state file), written atomically before any message that
//!   depends on it is sent.
//! - [`replay`]: replaying a stopped member's WAL up to its commit index
//!   (`--force-new-cluster` on a loopback-only copy of its data directory),
//!   so committed entries that were never applied are kept when it seeds.
//!
//! The daemon (`daemon/fencing.rs`) feeds the protocol and executes its
//! effects in order: persist, send over gossip, freeze (stop etcd), read
//! the WAL, create the record in the store, seed, join.
//!
//! What it does not do: decide anything (that is the `recovery` crate), or
//! form the first cluster (`recovery::formation` does; the protocol runs
//! with `seeds_bootstrap = false`, for quorum loss of incarnation ≥ 1).

pub mod facts;
pub mod protocol_file;
pub mod replay;
