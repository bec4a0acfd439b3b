//! The metrics of the change archive this instance writes (only the
//! instance that writes snapshots archives; elsewhere they stay at zero):
//! how far behind etcd the archive is, in seconds and revisions, the
//! segments stored (their sizes and upload times), failures by reason, and
//! the chains started. Counted where it happens ([`ArchiveMetrics`] is a
//! shared handle).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::time::Duration;

/// Why archiving failed, as a label.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArchiveFailure {
    /// The watch on the local member could not be opened or broke.
    Watch,
    /// The store refused or failed a segment.
    Store,
    /// The listing the writer resumes from failed.
    Listing,
    /// The full snapshot a new chain starts with failed.
    Snapshot,
}

impl ArchiveFailure {
    const ALL: [ArchiveFailure; 4] = [Self::Watch, Self::Store, Self::Listing, Self::Snapshot];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Watch => "watch",
            Self::Store => "store",
            Self::Listing => "listing",
            Self::Snapshot => "snapshot",
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    reason: &'static str,
}

#[derive(Clone)]
pub struct ArchiveMetrics {
    revision: Gauge,
    lag_seconds: Gauge<f64, std::sync::atomic::AtomicU64>,
    lag_revisions: Gauge,
    segments: Counter,
    chains: Counter,
    failures: Family<ReasonLabels, Counter>,
    segment_bytes: Histogram,
    upload: Histogram,
}

impl Default for ArchiveMetrics {
    fn default() -> Self {
        Self {
            revision: Gauge::default(),
            lag_seconds: Gauge::default(),
            lag_revisions: Gauge::default(),
            segments: Counter::default(),
            chains: Counter::default(),
            failures: Family::default(),
            // 256 B to 64 MiB.
            segment_bytes: Histogram::new(exponential_buckets(256.0, 4.0, 10)),
            // 5 ms to about 80 s.
            upload: Histogram::new(exponential_buckets(0.005, 2.0, 15)),
        }
    }
}

impl ArchiveMetrics {
    pub(super) fn register(&self, registry: &mut Registry) {
        registry.register(
            "archive_revision",
            "The newest revision the change archive holds (0 where this instance does not archive)",
            self.revision.clone(),
        );
        registry.register(
            "archive_lag_seconds",
            "How long the change archive has been behind the newest revision this instance knows of (0 when caught up or not archiving)",
            self.lag_seconds.clone(),
        );
        registry.register(
            "archive_lag_revisions",
            "Revisions between the newest this instance knows of and the newest archived (0 where it does not archive)",
            self.lag_revisions.clone(),
        );
        registry.register(
            "archive_segments",
            "Segments of the change archive this instance stored",
            self.segments.clone(),
        );
        registry.register(
            "archive_chains_started",
            "Chains this instance started (a full snapshot taken because the archive could not continue)",
            self.chains.clone(),
        );
        for reason in ArchiveFailure::ALL {
            let _ = self.failures.get_or_create(&ReasonLabels {
                reason: reason.as_str(),
            });
        }
        registry.register(
            "archive_failures",
            "Failures of the change archive, by reason (watch, store, listing, snapshot)",
            self.failures.clone(),
        );
        registry.register(
            "archive_segment_size_bytes",
            "Size of each segment stored (compressed, as in the store)",
            self.segment_bytes.clone(),
        );
        registry.register(
            "archive_segment_upload_seconds",
            "Time to store each segment",
            self.upload.clone(),
        );
    }

    pub fn stored(&self, size: u64, took: Duration, last: i64) {
        self.segments.inc();
        self.segment_bytes.observe(size as f64);
        self.upload.observe(took.as_secs_f64());
        self.revision.set(last);
    }

    pub fn lag(&self, seconds: f64, revisions: i64) {
        self.lag_seconds.set(seconds);
        self.lag_revisions.set(revisions.max(0));
    }

    pub fn archived(&self, revision: i64) {
        self.revision.set(revision);
    }

    pub fn chain_started(&self) {
        self.chains.inc();
    }

    pub fn failed(&self, reason: ArchiveFailure) {
        self.failures
            .get_or_create(&ReasonLabels {
                reason: reason.as_str(),
            })
            .inc();
    }
}
