//! Deterministic simulations of eco's crates on turmoil's simulated network
//! and clock, and the benchmarks built on them.
//!
//! - [`gossip_sim`]: N real `gossip` nodes on turmoil hosts, with a harness
//!   to partition, drop messages, crash and restart hosts, change states,
//!   and observe every node's view in simulated time.
//! - [`gossip_bench`]: detection time, propagation time and bandwidth per
//!   node, measured on that harness.
//! - [`fenced_turmoil`]: the fenced seeding protocol end to end: the real
//!   `recovery::fenced::Protocol` and the real `gossip` node per host,
//!   with a simulated etcd and store, under partitions, loss, crashes and
//!   replacements (`simulations sim-turmoil`).
//!
//! The fenced seeding protocol has its own deterministic harness, pure and
//! single-threaded, in `recovery::fenced::harness`; the `simulations sim`
//! command runs it over many seeds.
//!
//! The same seed replays the same run. etcd is simulated, not run (see
//! [`fenced_turmoil`] for what that model leaves out).

pub mod fenced_turmoil;
pub mod gossip_bench;
pub mod gossip_sim;
pub mod sim_transport;
