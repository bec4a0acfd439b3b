//! The daemon's side of quorum-loss recovery, the fenced seeding protocol
//! (docs/concepts.md, "Fencing and promises"): the pure
//! `recovery::fenced::Protocol` decides; this module drives it and holds
//! the I/O its effects need.
//!
//! - [`driver`]: the driver, generic over a [`driver::QuorumLossHost`] (its
//!   I/O): feeds the protocol every pass and on every message, executes its
//!   effects in order, pays what the protocol's state still owes. The
//!   daemon and the turmoil simulation implement the host; both run this
//!   driver.
//! - [`facts`]: gossip's view, the own probe and the store's records as the
//!   protocol's plain facts, and its records back as store records.
//! - [`store_facts`]: reading the store's records and newest snapshot.
//! - [`protocol_file`]: the protocol's durable state (`eco-recovery.state`
//!   beside the state file), written atomically before any message that
//!   depends on it is sent.
//! - [`replay`]: replaying a stopped member's WAL up to its commit index
//!   (`--force-new-cluster` on a loopback-only copy of its data directory),
//!   so committed entries that were never applied are kept when it seeds.
//!
//! What it does not do: decide anything (that is the `recovery` crate), or
//! form the first cluster (`recovery::formation` does; the protocol
//! recovers quorum loss of incarnation ≥ 1).

pub mod driver;
pub mod facts;
pub mod protocol_file;
pub mod replay;
pub mod store_facts;
