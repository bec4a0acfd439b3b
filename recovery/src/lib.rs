//! Every decision eco makes, as pure functions of plain data: no I/O, no
//! clock (time is an input), no randomness but values passed in, no async.
//! The daemon (`src/` of the `eco` package) gathers facts, calls these, and
//! executes what they return; each returned action carries the reason it
//! was chosen, which `eco status` shows.
//!
//! - [`formation`]: whether this instance may seed a brand-new cluster
//!   (incarnation 1), on positive evidence of emptiness only.
//! - [`planner`]: the steady-state rules — join as a learner, promote,
//!   rejoin with data, remove stale, departed or long-unhealthy members, one
//!   membership change at a time, never below quorum; every crash point
//!   between two steps is table-tested.
//! - [`fenced`]: the fenced seeding protocol of DESIGN §7 — who reseeds a
//!   cluster that lost its quorum, and from which data — with its
//!   deterministic multi-node harness (`harness` feature) that checks the
//!   safety invariants on every step.
//! - [`snapshot_schedule`] and [`retention`]: when to take a snapshot and
//!   which stored snapshots to keep.
//!
//! What this crate does not do: talk to etcd, the store, the provider or
//! the network; read files; sleep. It also does not decide anything the
//! daemon can observe only partially without saying so: inputs that may be
//! unknown are `Option`s, and "unknown" leads to waiting, never to action.
//!
//! Status: the daemon drives `formation`, `planner`, `snapshot_schedule`
//! and `retention`. The `fenced` protocol is complete and simulated but not
//! yet driven by the daemon: a cluster that loses its quorum today waits
//! for its members to come back.

pub mod fenced;
pub mod formation;
pub mod planner;
pub mod retention;
pub mod snapshot_schedule;
