//! Taking a snapshot on record: [`take`](super::take::take), timed, with
//! its size, duration or failure reason counted
//! ([`SnapshotMetrics`]) and one `snapshot.stored` or `snapshot.failed`
//! event with why it was taken. The snapshot writer (scheduled and final
//! snapshots) and the final snapshot before a termination go through here.

use super::take::{self, SnapshotError, SnapshotRequest, TakenSnapshot};
use crate::base::events::Event;
use crate::etcd::access::EtcdAccess;
use crate::metrics::snapshots::{FailureReason, SnapshotMetrics};
use crate::store::ObjectStore;
use std::time::Instant;

pub async fn take_recorded(
    store: &dyn ObjectStore,
    access: &EtcdAccess,
    request: &SnapshotRequest,
    metrics: &SnapshotMetrics,
    reason: &str,
) -> Result<TakenSnapshot, SnapshotError> {
    let started = Instant::now();
    let result = take::take(store, access, request).await;
    match &result {
        Ok(t) => {
            let took = started.elapsed();
            metrics.stored(t.object.size, took);
            crate::event!(
                info,
                Event::SnapshotStored,
                name = %t.name,
                size = t.object.size,
                duration_ms = took.as_millis() as u64,
                reason,
                "snapshot stored"
            );
        }
        Err(e) => {
            let why = FailureReason::of(e);
            metrics.failed(why);
            crate::event!(
                error,
                Event::SnapshotFailed,
                failure = why.as_str(),
                error = %e,
                reason,
                "snapshot failed"
            );
        }
    }
    result
}
