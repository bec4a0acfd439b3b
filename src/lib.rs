//! eco: an etcd cloud operator.
//!
//! `eco` runs on every machine of a group (a static list today; AWS
//! auto-scaling groups and Kubernetes StatefulSets behind the same provider
//! trait) in place of the etcd binary. It supervises the local etcd and, with
//! its peers, keeps one etcd cluster alive.
//!
//! This library is the daemon's I/O side: configuration, providers, the
//! etcd supervisor, probes and membership calls, durable local state, the
//! object store and its records, snapshots, the HTTP API. Decisions
//! are pure functions ([`startup`], and the `recovery` crate's planner,
//! snapshot schedule and retention) that take
//! plain observations and return actions with their reasons; the code here
//! gathers the observations and executes the actions.
//!
//! What it does not do (yet): form a multi-instance cluster from nothing
//! (clusters start as a group of one and grow), recover from quorum loss,
//! gossip, TLS, cloud providers. See docs/architecture.md.

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
