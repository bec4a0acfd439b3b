//! eco's own membership: every instance knows every other instance's latest
//! [`PeerState`] — and who is up — whether etcd works or not.
//!
//! - **SWIM** (the `foca` crate, sans-I/O) over **one UDP socket** per
//!   instance: probes, suspicion, dissemination, graceful leave.
//! - **Sealed datagrams** ([`seal`]): XChaCha20-Poly1305 under 256-bit keys,
//!   the cluster name bound as associated data. A keyring seals with its
//!   first key and opens with any listed key, so keys rotate without
//!   downtime; [`Gossip::set_keys`] replaces a running node's keyring (no
//!   restart, no leave). Datagrams that fail to open are dropped and
//!   counted, never parsed. This protects against forged or altered gossip
//!   and against another cluster's traffic; it does not protect against
//!   **replay** of a captured datagram. Replay is acceptable because
//!   everything carried is versioned: a replayed PeerState is older than
//!   what receivers hold and is ignored; a replayed SWIM message can at
//!   worst cause one extra probe or a transient suspicion that the live
//!   member refutes. Recovery-protocol messages (sent with
//!   [`Gossip::send`]) carry their own ballots and boot ids for the same
//!   reason.
//! - **PeerState dissemination** ([`peer_state`]): each instance publishes
//!   its state as a foca custom broadcast, versioned `(boot, sequence)`: boot
//!   is taken at process start from the wall clock, so a restarted instance
//!   (sequence back to 0) still wins over its old state. States are keyed by
//!   instance id, not by foca identity (identities are renewed after
//!   partitions and restarts). The own state is re-published periodically
//!   and whenever a member comes up, so newcomers learn it.
//! - **Addressed messages**: `send(instance, bytes)` to one peer over the
//!   same sealed socket, delivered as [`Event::Message`]; best effort (the
//!   protocol above retransmits).
//! - **Re-announce loop**: foca does not recover from zero members by
//!   itself; while some seeds are not among the members, the node announces
//!   to up to three of them per round (round-robin), with back-off (200 ms
//!   doubling to 5 s), so a healed partition converges in seconds and a
//!   single dead seed costs little.
//! - **Budget**: detection, propagation and bytes per node per second are
//!   measured by `simulations gossip-bench` up to 100 nodes; the current
//!   figures are in `docs/benchmarks.md` ("Gossip").
//!
//! What it does not do: decide anything about etcd, persist anything, or
//! guarantee delivery. Runtime: tokio (its UDP and timers); the transport is
//! behind the small [`transport::Transport`] trait so a simulated network
//! can drive the same code.

pub mod broadcast;
pub mod identity;
pub mod metrics;
pub mod node;
pub mod peer_state;
pub mod seal;
pub mod transport;
pub mod wire;

pub use metrics::GossipMetrics;
pub use node::{
    DEFAULT_GOSSIP_FANOUT, DEFAULT_PROBE_PERIOD, DEFAULT_SUSPICION, Event, Gossip, GossipConfig,
    GossipError, KeysHandle, Liveness, PeerView,
};
pub use peer_state::{DataFacts, EtcdFacts, Formats, PeerState, Version};
pub use seal::{Keyring, SealError, parse_keys};
