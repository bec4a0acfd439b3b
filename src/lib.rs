//! eco: an etcd cloud operator.
//!
//! `eco` runs on every machine of a group (a static list today; AWS
//! auto-scaling groups and Kubernetes StatefulSets behind the same provider
//! trait) in place of the etcd binary. It supervises the local etcd and, with
//! its peers, keeps one etcd cluster alive.
//!
//! This library is the daemon's I/O side: configuration, providers, the
//! etcd supervisor, probes and membership calls, durable local state, the
//! object store and its records, snapshots, the HTTP API, the gossip node
//! (the `gossip` crate), and the I/O of quorum-loss recovery ([`fencing`]: WAL
//! replay, the protocol's state file; [`etcd::wal`]: reading a stopped
//! member's WAL). Decisions are pure functions ([`startup`], and the
//! `recovery` crate's formation, planner, fenced seeding protocol,
//! snapshot schedule and retention) that take plain observations and
//! return actions with their reasons; the code here gathers the
//! observations and executes the actions.
//!
//! A multi-instance group forms its first cluster from nothing over gossip
//! (`recovery::formation`) and recovers from quorum loss with the fenced
//! seeding protocol (`recovery::fenced`), which needs gossip keys and a
//! snapshot store.
//!
//! What it does not do (yet): TLS (`https` is refused by validation),
//! cloud providers (only the static provider), an S3 store. See
//! docs/architecture.md and docs/runbook.md.

pub mod api;
pub mod atomic_file;
pub mod cluster_view;
pub mod commands;
pub mod config;
pub mod daemon;
pub mod data_dir;
pub mod etcd;
pub mod fencing;
pub mod instance_id;
pub mod logging;
pub mod metrics;
pub mod preflight;
pub mod provider;
pub mod record;
pub mod snapshot;
pub mod startup;
pub mod state_file;
pub mod status;
pub mod status_client;
pub mod store;
pub mod version;
