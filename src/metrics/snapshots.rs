//! The metrics of the snapshots this instance takes into the store (the
//! writer's scheduled and final ones, and the final one before a
//! termination): the size and duration of each stored snapshot, and
//! failures by reason. Counted where it happens ([`SnapshotMetrics`] is a
//! shared handle); what the store holds (count, newest, its alert) is
//! projected from `/status` in [`super::cluster`].

use crate::snapshot::take::SnapshotError;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::time::Duration;

/// Why a snapshot failed, as a label.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailureReason {
    /// The local member did not answer its status probe.
    EtcdUnreachable,
    /// The snapshot stream from etcd broke or stalled.
    Stream,
    /// The store refused or failed the upload.
    Store,
}

impl FailureReason {
    const ALL: [FailureReason; 3] = [Self::EtcdUnreachable, Self::Stream, Self::Store];

    pub fn of(e: &SnapshotError) -> Self {
        match e {
            SnapshotError::Probe(_) => Self::EtcdUnreachable,
            SnapshotError::Stream { .. } => Self::Stream,
            SnapshotError::Store(_) => Self::Store,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::EtcdUnreachable => "etcd_unreachable",
            Self::Stream => "stream",
            Self::Store => "store",
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: &'static str,
}

#[derive(Clone)]
pub struct SnapshotMetrics {
    failures: Family<ReasonLabels, Counter>,
    verifications: Family<OutcomeLabels, Counter>,
    size_bytes: Gauge,
    duration: Histogram,
}

impl Default for SnapshotMetrics {
    fn default() -> Self {
        Self {
            failures: Family::default(),
            verifications: Family::default(),
            size_bytes: Gauge::default(),
            // 0.1 s to about 7 min.
            duration: Histogram::new(exponential_buckets(0.1, 2.0, 13)),
        }
    }
}

impl SnapshotMetrics {
    pub(super) fn register(&self, registry: &mut Registry) {
        for reason in FailureReason::ALL {
            let _ = self.failures.get_or_create(&ReasonLabels {
                reason: reason.as_str(),
            });
        }
        registry.register(
            "snapshot_failures",
            "Snapshots this instance failed to take or store, by reason (etcd_unreachable, stream, store)",
            self.failures.clone(),
        );
        for outcome in ["ok", "failed"] {
            let _ = self.verifications.get_or_create(&OutcomeLabels { outcome });
        }
        registry.register(
            "snapshot_verifications",
            "Restores of the newest snapshot this instance verified, by outcome (ok, failed)",
            self.verifications.clone(),
        );
        registry.register(
            "snapshot_size_bytes",
            "Size of the last snapshot this instance stored (0 before the first)",
            self.size_bytes.clone(),
        );
        registry.register(
            "snapshot_duration_seconds",
            "Time to stream a snapshot from etcd into the store, for each snapshot stored",
            self.duration.clone(),
        );
    }

    pub fn stored(&self, size: u64, took: Duration) {
        self.size_bytes.set(i64::try_from(size).unwrap_or(i64::MAX));
        self.duration.observe(took.as_secs_f64());
    }

    pub fn verified(&self, ok: bool) {
        let outcome = if ok { "ok" } else { "failed" };
        self.verifications
            .get_or_create(&OutcomeLabels { outcome })
            .inc();
    }

    pub fn failed(&self, reason: FailureReason) {
        self.failures
            .get_or_create(&ReasonLabels {
                reason: reason.as_str(),
            })
            .inc();
    }
}
