//! Counters the daemon can export. Plain atomics: no metrics library here.

use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug, Default)]
pub struct GossipMetrics {
    pub datagrams_sent: AtomicU64,
    pub datagrams_received: AtomicU64,
    /// Datagrams that did not open with any key (or did not decode).
    pub datagrams_rejected: AtomicU64,
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
