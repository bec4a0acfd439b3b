//! The metrics of the snapshot store's calls, by operation: how long each
//! took and which failed, with the error's kind. Recorded by the
//! [`crate::store::measured::MeasuredStore`] wrapper around whichever
//! store the config chose, so every caller (the snapshot writer, the
//! quorum-loss driver's record reads and the commit point, certificate
//! provisioning) is measured alike.

use crate::store::StoreError;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::time::Duration;

/// The store's operations, as labels.
pub const OPERATIONS: [&str; 6] = ["put", "get", "head", "list", "delete", "create_if_absent"];

/// A store error's kind, as a label.
pub fn error_kind(e: &StoreError) -> &'static str {
    match e {
        StoreError::NotFound(_) => "not_found",
        StoreError::BadName(..) => "bad_name",
        StoreError::Io { .. } => "io",
        StoreError::Metadata { .. } => "metadata",
        StoreError::Unavailable(_) => "unavailable",
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OperationLabels {
    operation: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ErrorLabels {
    operation: &'static str,
    error: &'static str,
}

fn operation_histogram() -> Histogram {
    // 1 ms to about 33 s.
    Histogram::new(exponential_buckets(0.001, 2.0, 16))
}

#[derive(Clone)]
pub struct StoreMetrics {
    seconds: Family<OperationLabels, Histogram, fn() -> Histogram>,
    errors: Family<ErrorLabels, Counter>,
}

impl Default for StoreMetrics {
    fn default() -> Self {
        Self {
            seconds: Family::new_with_constructor(operation_histogram),
            errors: Family::default(),
        }
    }
}

impl StoreMetrics {
    pub(crate) fn register(&self, registry: &mut Registry) {
        for operation in OPERATIONS {
            let _ = self.seconds.get_or_create(&OperationLabels { operation });
        }
        registry.register(
            "store_operation_seconds",
            "Snapshot store calls by operation and how long each took (get: until the object starts to arrive; put: the whole upload)",
            self.seconds.clone(),
        );
        registry.register(
            "store_operation_errors",
            "Snapshot store calls that failed, by operation and error kind",
            self.errors.clone(),
        );
    }

    /// One call of `operation` took `took`, and failed with `error` if any.
    pub fn call(&self, operation: &'static str, took: Duration, error: Option<&StoreError>) {
        self.seconds
            .get_or_create(&OperationLabels { operation })
            .observe(took.as_secs_f64());
        if let Some(e) = error {
            self.errors
                .get_or_create(&ErrorLabels {
                    operation,
                    error: error_kind(e),
                })
                .inc();
        }
    }
}
