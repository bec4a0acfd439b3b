//! Deterministic simulations of eco's crates on turmoil's simulated network
//! and clock, and the benchmarks built on them.
//!
//! - [`gossip_sim`]: N real `gossip` nodes on turmoil hosts, with a harness
//!   to partition, drop messages, crash and restart hosts, change states,
//!   and observe every node's view in simulated time.
//! - [`gossip_bench`]: detection time, propagation time and bandwidth per
//!   node, measured on that harness.
//!
//! The fenced seeding protocol has its own deterministic harness, pure and
//! single-threaded, in `recovery::fenced::harness`; the `simulations sim`
//! command runs it over many seeds.
//!
//! The same seed replays the same run. What it does not do (yet): simulate
//! etcd, or run the daemon's glue around the protocol.

pub mod gossip_bench;
pub mod gossip_sim;
pub mod sim_transport;
