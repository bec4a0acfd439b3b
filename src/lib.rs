//! eco: an etcd cloud operator.
//!
//! `eco` runs on every machine of a group (a static list, an AWS
//! auto-scaling group or a Kubernetes StatefulSet, behind one provider
//! port) in place of the etcd binary. It supervises the local etcd
//! and, with its peers, keeps one etcd cluster alive.
//!
//! This library is the daemon's I/O side. Decisions are pure functions in
//! the `recovery` crate (the start, every pass's decider and readiness,
//! formation, the planner, the fenced seeding protocol, seeding steps, the
//! upkeep of `V_n`, snapshot schedule and retention); the code here
//! gathers their facts and carries out what they return:
//!
//! - ports, each dyn-safe and built by one factory from the config:
//!   [`provider`] (identity, the group, the instances certified gone) and
//!   [`store`] (snapshots and the record of truth); nothing else names a
//!   concrete provider or store;
//! - [`etcd`]: the one way to build an etcd client ([`etcd::access`]),
//!   every etcd command line ([`etcd::flags`]), the supervisor, probes,
//!   membership calls, the WAL reader;
//! - [`daemon`]: `eco run`, split by job (start, pass, observe, execute,
//!   seeding, the quorum-loss host, publish);
//! - [`quorum_loss`]: the driver of the fenced protocol, generic over its
//!   host, so the daemon and the simulations run the same driver;
//! - durable state ([`state_file`], [`atomic_file`], [`data_dir`]), the
//!   store's records ([`store::record`]), [`snapshot`]s, the HTTP API ([`api`],
//!   [`status`], [`metrics`]), the one-shot commands ([`commands`]);
//! - [`auth`]: authentication inside etcd — eco's own identity, and the
//!   users and roles of `[auth]` kept by the instance beside the leader;
//!   [`pki`]: the generated CA and certificates;
//! - [`systemd_notify`]: readiness and a status line for a `Type=notify`
//!   systemd unit.
//!
//! What it does not do (yet): rotate the generated CA, turn TLS off for a
//! running cluster. See docs/architecture.md, docs/security.md,
//! docs/kubernetes.md and docs/runbook.md.

pub mod api;
pub mod api_address;
pub mod api_budget;
pub mod api_tls;
pub mod atomic_file;
pub mod auth;
pub mod commands;
pub mod config;
pub mod daemon;
pub mod data_dir;
pub mod error_report;
pub mod etcd;
pub mod events;
pub mod file_stamp;
pub mod instance_lock;
pub mod logging;
pub mod metrics;
pub mod names;
pub mod pki;
pub mod preflight;
pub mod printable;
pub mod provider;
pub mod quorum_loss;
pub mod secret_file;
pub mod snapshot;
pub mod state_file;
pub mod status;
pub mod status_client;
pub mod store;
pub mod systemd_notify;
pub mod version;
pub mod wall_clock;
