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
//! gathers their facts and carries out what they return. Its modules are
//! grouped in wings that sit on floors, each importing only from its own
//! floor or below (`scripts/check-floors.py`; docs/architecture.md,
//! "Floors"):
//!
//! - [`base`]: files written atomically, secret files, the wall clock,
//!   printable text, the events' stable names, the names eco accepts;
//! - [`config`]: the config, read and validated section by section;
//! - [`local`]: this machine's side — the durable state file, the data
//!   directory, the instance lock, preflight checks, logging;
//! - the world outside, each port dyn-safe and built by one factory from
//!   the config: [`provider`] (identity, the group, the instances
//!   certified gone) and [`store`] (snapshots, the record of truth, the
//!   pause), [`codec`] (the compression and encryption of what is stored); [`etcd`]: the one way to build an etcd client
//!   ([`etcd::access`]), every etcd command line ([`etcd::flags`]), the
//!   supervisor, probes, membership calls, the WAL reader; [`auth`]
//!   (authentication inside etcd) and [`pki`] (the generated CA);
//! - what eco does with them: [`snapshot`]s, [`metrics`], the HTTP
//!   [`api`] (server, `/status`, its client), and [`quorum_loss`], the
//!   driver of the fenced protocol, generic over its host so the daemon
//!   and the simulations run the same driver;
//! - [`daemon`]: `eco run`, split by job (start, pass, observe, execute,
//!   seeding, the quorum-loss host, publish, systemd readiness), and the
//!   one-shot [`commands`].
//!
//! What it does not do (yet): rotate the generated CA, turn TLS off for a
//! running cluster. See docs/architecture.md, docs/security.md,
//! docs/kubernetes.md and docs/runbook.md.

pub mod api;
pub mod archive;
pub mod auth;
pub mod base;
pub mod codec;
pub mod commands;
pub mod config;
pub mod daemon;
pub mod etcd;
pub mod local;
pub mod metrics;
pub mod pki;
pub mod provider;
pub mod quorum_loss;
pub mod snapshot;
pub mod store;
