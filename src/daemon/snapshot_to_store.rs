//! The daemon's own snapshots into the store, taken before a risky step:
//! before a member removal (`recovery::planner::snapshot_first` says
//! which), before the first step of a rolling upgrade, and the final one
//! before a termination. One way for all three: on record
//! (`take_recorded`: the snapshot metrics and one `snapshot.stored` or
//! `snapshot.failed` event carrying why), each call given more time than
//! an ordinary one.

use super::Daemon;
use crate::snapshot::recorded::take_recorded;
use crate::snapshot::take::{SnapshotRequest, TakenSnapshot};

impl Daemon {
    /// A snapshot of the member at `endpoint` into the store, each call
    /// bounded by `timeouts` call timeouts; `None` when there is no store
    /// or no state to name it by, or it failed (the event says why).
    pub(super) async fn snapshot_to_store(
        &self,
        endpoint: &str,
        timeouts: u32,
        reason: &str,
    ) -> Option<TakenSnapshot> {
        let (store, state) = (self.ctx.store.as_deref()?, self.durable.state()?);
        let access = self
            .ctx
            .access
            .with_call_timeout(self.ctx.access.call_timeout() * timeouts);
        let request = SnapshotRequest {
            endpoint: endpoint.to_string(),
            cluster: self.ctx.cluster().to_string(),
            incarnation: state.incarnation,
            token: state.cluster_token.clone(),
            instance: self.ctx.id().to_string(),
            format: self.cluster_version.writing(),
            codec: self.ctx.codec.clone(),
        };
        take_recorded(
            store,
            &access,
            &request,
            &self.ctx.metrics.snapshots,
            reason,
        )
        .await
        .ok()
    }
}
