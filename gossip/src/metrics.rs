//! Counters the daemon can export. Plain atomics: no metrics library here.

use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug, Default)]
pub struct GossipMetrics {
    pub datagrams_sent: AtomicU64,
    pub datagrams_received: AtomicU64,
    /// Datagrams that did not open with any key (or did not decode).
    pub datagrams_rejected: AtomicU64,
    /// Messages whose claimed sender is not the gossip member at the
    /// datagram's source address (a keyholder speaking for another).
    pub messages_rejected: AtomicU64,
    /// PeerState broadcasts refused: a version no honest instance can have
    /// (dated too far ahead), or a claim about this instance itself newer
    /// than its own (it refutes it by publishing above it).
    pub states_refused: AtomicU64,
    /// PeerState broadcasts that did not decode (dropped).
    pub states_undecodable: AtomicU64,
    /// PeerState broadcasts written in a format this instance does not read
    /// (a later release's, after the group finalized it): dropped.
    pub states_future: AtomicU64,
    /// Keyrings installed while running ([`crate::Gossip::set_keys`]).
    pub keyring_changes: AtomicU64,
    pub bytes_sent: AtomicU64,
    pub bytes_received: AtomicU64,
    pub members_up: AtomicU64,
}

impl GossipMetrics {
    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }

    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn set(counter: &AtomicU64, n: u64) {
        counter.store(n, Ordering::Relaxed);
    }
}
