//! eco: an etcd cloud operator.
//!
//! `eco` runs on every machine of a group (a static list today; AWS
//! auto-scaling groups and Kubernetes StatefulSets behind the same provider
//! trait) in place of the etcd binary. It supervises the local etcd and, with
//! its peers, keeps one etcd cluster alive.
//!
//! This library is the daemon's I/O side: configuration, providers, the
//! etcd supervisor and probes, durable local state, the HTTP API. Decisions
//! are pure functions (see [`startup`], and the `recovery` crate) that take
//! plain observations and return actions with their reasons; the code here
//! gathers the observations and executes the actions.
//!
//! What it does not do (yet): form multi-instance clusters, take snapshots,
//! recover from quorum loss, TLS. See docs/architecture.md.

pub mod api;
pub mod atomic_file;
pub mod cluster_view;
pub mod commands;
pub mod config;
pub mod daemon;
pub mod data_dir;
pub mod etcd;
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
