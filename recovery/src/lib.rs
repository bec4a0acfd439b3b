//! Every decision eco makes, as pure functions of plain data: no I/O, no
//! clock (time is an input), no randomness but values passed in, no async.
//! The daemon (`src/` of the `eco` package) gathers facts, calls these, and
//! executes what they return; each returned action carries the reason it
//! was chosen, which `eco status` shows. The same functions run in the
//! simulations against simulated etcd, network and clock.
//!
//! One pass of the daemon, and which module decides what:
//!
//! - [`startup`]: once, at start — resume, bootstrap a group of one, join,
//!   hold for the quorum-loss protocol, discard a stale incarnation, or
//!   refuse.
//! - [`pass`]: every pass — who decides now (the refusal, the quorum-loss
//!   protocol, formation, the planner), whether the instance is ready, and
//!   its phase: the daemon's `Ready`.
//! - [`fenced`]: the fenced seeding protocol — whether the
//!   quorum is lost, who reseeds and from which data — with what its state
//!   owes at the end of a pass ([`fenced::Owed`]: stop a frozen etcd, seed,
//!   join) and its deterministic multi-node harness (`harness` feature).
//! - [`formation`]: whether this instance may seed a brand-new cluster
//!   (incarnation 1), on positive evidence of emptiness only.
//! - [`planner`]: the steady-state rules — join as a learner, promote,
//!   rejoin with data, remove stale, departed or long-unhealthy members, one
//!   membership change at a time, never below quorum; every crash point
//!   between two steps is table-tested.
//! - [`seeding`]: the steps that seed incarnation 1 or n+1 once its record
//!   exists, from what is on disk now (a seeding resumes from any crash).
//! - [`asg`]: the AWS provider's lifecycle table — which instances of an
//!   auto-scaling group are members, leaving, or certified gone;
//!   [`termination`]: what a termination notice (the lifecycle hook) adds
//!   to a leave — the final snapshot first, heartbeats, completion;
//!   [`statefulset`]: the StatefulSet provider's members (every ordinal
//!   below the desired size) and departed pods (ordinals at or above it).
//! - [`departures`]: when a departure is confirmed — consecutive reads of
//!   the group over a span derived from the refresh interval; a read that
//!   lists nobody is never evidence.
//! - [`voters`]: keeping `V_n` in the state file and the store's record;
//!   [`live_since`]: since when each instance has been alive in gossip
//!   without a break (the planner's unhealthy-voter TTL runs only then).
//! - [`acl`]: authentication inside etcd — the steps from etcd's users,
//!   roles and permissions to the config's (root and eco's identity never
//!   removed, enabling last), and whether this instance reconciles now.
//! - [`certificates`]: generated TLS — whether an instance issues its
//!   certificate again (missing, another CA, other names, near expiry).
//! - [`peer_scheme`]: TLS turned on (or off) on the peer surface of a
//!   running cluster — each member records its new peer URL, then its
//!   listener follows, one member at a time while all are healthy.
//! - [`store_fitness`]: whether the store may hold quorum-loss recovery's
//!   record of truth (an atomic conditional create every instance sees);
//!   [`quorum_loss_switch`]: whether this instance takes part in
//!   quorum-loss recovery at all (gossip and a fit store).
//! - [`snapshot_schedule`] and [`retention`]: who writes snapshots, when,
//!   and which stored snapshots to keep; [`newest_snapshot`]: which one
//!   is the newest (one rule for every reader); [`restore_check`]: when the
//!   newest snapshot is restored into a throwaway etcd and whether the
//!   restore matches its record (revision, HashKV); [`moved_aside`]: which moved-aside
//!   data directories may go (by age, never the last copy of data);
//! - [`archive`]: the change archive — which segments continue which
//!   snapshot (chains), where its writer resumes, what a restore to a
//!   point replays, which segments retention deletes.
//! - [`quorum`]: quorum arithmetic, once for every part.
//! - [`zone_spread`]: the voters per zone and whether losing any one zone
//!   would lose quorum (reported, never acted on).
//! - [`maintenance`]: which maintenance jobs run after a settled plan,
//!   in what order (peer scheme, an upgrade step before space).
//! - [`space`]: the space governor — which member to defragment (one at a
//!   time, the leader last, only with every member answering) and how to
//!   come back from etcd's `NOSPACE` alarm (compact, defragment, disarm).
//! - [`upgrade`]: rolling etcd version upgrades — whose member restarts on
//!   the new binary now (followers in member-id order, the leader last,
//!   after handing leadership away), who waits, and which jumps are
//!   refused (more than one minor version, a minor downgrade).
//! - [`cluster_version`]: eco across its own releases — which format of
//!   its shared data every instance writes while two releases run
//!   together, when the newer one is finalized, and which releases may run
//!   against a cluster at all (the version-skew policy).
//! - [`handover`]: whom a leading member hands leadership to before eco
//!   stops it on purpose (a shutdown, a restart of its peer listener).
//! - [`etcd_advisories`]: what the etcd project says about the release the
//!   member runs (known data-loss bugs, end of life, the release a move to
//!   3.6 starts from); [`etcd_flags`]: which release accepts which flag
//!   (eco's own, and the ones etcd removed or renamed up to 3.7);
//!   [`etcd_readiness`]: which release answers etcd's own `/readyz`; all
//!   keyed by [`etcd_version`]'s `Version`.
//!
//! What this crate does not do: talk to etcd, the store, the provider or
//! the network; read files; sleep. It also does not decide anything the
//! daemon can observe only partially without saying so: inputs that may be
//! unknown are `Option`s, and "unknown" leads to waiting, never to action.

pub mod acl;
pub mod archive;
pub mod asg;
pub mod certificates;
pub mod cluster_version;
pub mod departures;
pub mod etcd_advisories;
pub mod etcd_flags;
pub mod etcd_readiness;
pub mod etcd_version;
pub mod fenced;
pub mod formation;
pub mod handover;
pub mod join_diagnosis;
pub mod live_since;
pub mod maintenance;
pub mod moved_aside;
pub mod newest_snapshot;
pub mod pass;
pub mod peer_scheme;
pub mod planner;
pub mod quorum;
pub mod quorum_loss_switch;
pub mod restore_check;
pub mod retention;
pub mod seeding;
pub mod self_replacement;
pub mod snapshot_schedule;
pub mod space;
pub mod startup;
pub mod statefulset;
pub mod store_fitness;
pub mod termination;
pub mod upgrade;
pub mod voters;
pub mod zone_spread;
