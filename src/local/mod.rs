//! This machine's own side of an instance, above the config: the durable
//! local state (`eco-state.json`), the etcd data directory (inspected,
//! moved aside, never deleted), the lock that keeps one eco per data
//! directory, the checks made before etcd starts, and the log setup.
//!
//! Nothing here talks to another machine: no store, no etcd client, no
//! provider.

pub mod data_dir;
pub mod instance_lock;
pub mod logging;
pub mod preflight;
pub mod state_file;
