//! The snapshot writer: runs beside the daemon, takes snapshots when this
//! instance writes them and the schedule says one is due
//! (`recovery::snapshot_schedule`: the ready instance beside the etcd
//! leader), applies retention (`recovery::retention`) only right after a
//! newer snapshot was stored, and takes a final snapshot when eco is asked
//! to stop. It reads typed facts the daemon's pass sends it
//! ([`WriterInput`]), never `/status`; it writes its own part of `/status`.

use super::name::SnapshotName;
use super::take::{self, SnapshotRequest, meta};
use crate::etcd::access::EtcdAccess;
use crate::status::{InstanceStatus, SnapshotStatus};
use crate::store::{ObjectInfo, ObjectStore, list_all};
use crate::wall_clock::unix_ms;
use recovery::retention::{self, RetentionPolicy, SnapshotEntry};
use recovery::snapshot_schedule::{LastSnapshot, SnapshotSchedule, WriterFacts, snapshot_due};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// What the daemon's latest pass tells the writer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WriterInput {
    pub facts: WriterFacts,
    /// The incarnation and cluster token snapshots are named for (from the
    /// state file), `None` before this instance belongs to a cluster.
    pub naming: Option<(u64, String)>,
}

pub struct SnapshotWriter {
    pub store: Arc<dyn ObjectStore>,
    /// How the local member is reached (the timeout of each call and of
    /// the wait for each chunk).
    pub access: EtcdAccess,
    pub cluster: String,
    pub instance: String,
    pub endpoint: String,
    pub schedule: SnapshotSchedule,
    pub policy: RetentionPolicy,
    pub check_every: Duration,
}

fn taken_ms(o: &ObjectInfo) -> u64 {
    o.metadata
        .get(meta::CREATED_UNIX_MS)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

impl SnapshotWriter {
    /// The cluster's snapshots in the store (every page), oldest first.
    async fn snapshots(&self) -> Result<Vec<ObjectInfo>, crate::store::StoreError> {
        let all = list_all(&*self.store, &SnapshotName::prefix(&self.cluster)).await?;
        Ok(all
            .into_iter()
            .filter(|o| SnapshotName::parse(&o.name).is_some())
            .collect())
    }

    /// Lists the store and records what it found in `s`; an empty listing
    /// after snapshots were seen raises an alert.
    async fn refresh(&self, s: &mut SnapshotStatus) -> Option<LastSnapshot> {
        match self.snapshots().await {
            Ok(list) => {
                if list.is_empty() && s.stored > 0 {
                    let alert = format!(
                        "the store lost every snapshot of cluster {} (it listed {} before); taking a new one",
                        self.cluster, s.stored
                    );
                    tracing::error!(alert = %alert, "snapshot store alert");
                    s.alert = Some(alert);
                }
                s.stored = list.len();
                let newest = list.iter().max_by_key(|o| (taken_ms(o), o.name.clone()));
                s.newest = newest.map(|o| o.name.clone());
                s.newest_revision = newest
                    .and_then(|o| SnapshotName::parse(&o.name))
                    .map(|n| n.revision);
                newest.map(|o| LastSnapshot {
                    taken_unix_ms: taken_ms(o),
                    revision: SnapshotName::parse(&o.name)
                        .map(|n| n.revision)
                        .unwrap_or(0),
                })
            }
            Err(e) => {
                s.last_error = Some(format!("listing the store: {e}"));
                None
            }
        }
    }

    /// Takes one snapshot now and applies retention after it.
    pub async fn snapshot_now(
        &self,
        input: &WriterInput,
        reason: &str,
        s: &mut SnapshotStatus,
    ) -> bool {
        let Some((incarnation, token)) = &input.naming else {
            return false;
        };
        let req = SnapshotRequest {
            endpoint: self.endpoint.clone(),
            cluster: self.cluster.clone(),
            incarnation: *incarnation,
            token: token.clone(),
            instance: self.instance.clone(),
        };
        match take::take(&*self.store, &self.access, &req).await {
            Ok(t) => {
                tracing::info!(name = %t.name, size = t.object.size, reason, "snapshot stored");
                s.taken += 1;
                s.last_reason = Some(reason.to_string());
                s.last_error = None;
                // An alert stays in /status (until eco restarts or another
                // one replaces it): a new snapshot does not undo the loss.
                self.apply_retention(s).await;
                true
            }
            Err(e) => {
                tracing::error!(error = %e, "snapshot failed");
                s.failures += 1;
                s.last_error = Some(e.to_string());
                false
            }
        }
    }

    async fn apply_retention(&self, s: &mut SnapshotStatus) {
        let list = match self.snapshots().await {
            Ok(l) => l,
            Err(e) => {
                s.last_error = Some(format!("listing for retention: {e}"));
                return;
            }
        };
        let entries: Vec<SnapshotEntry> = list
            .iter()
            .map(|o| SnapshotEntry {
                name: o.name.clone(),
                taken_unix_ms: taken_ms(o),
            })
            .collect();
        let protected: HashSet<String> = HashSet::new();
        for (name, why) in retention::to_delete(&entries, &protected, self.policy, unix_ms()) {
            match self.store.delete(&name).await {
                Ok(()) => tracing::info!(%name, %why, "retention deleted a snapshot"),
                Err(e) => {
                    tracing::warn!(%name, error = %e, "retention could not delete a snapshot")
                }
            }
        }
        let _ = self.refresh(s).await;
    }

    /// Runs until `stop` turns true; then takes a final snapshot when
    /// `WriterFacts::final_due` says so (the leader, or a voter whose
    /// departure leaves no healthy quorum).
    pub async fn run(
        self,
        input: watch::Receiver<WriterInput>,
        status: watch::Sender<InstanceStatus>,
        mut stop: watch::Receiver<bool>,
    ) {
        let mut s = SnapshotStatus::default();
        let mut last = self.refresh(&mut s).await;
        status.send_modify(|st| st.snapshots = Some(s.clone()));
        let mut tick = tokio::time::interval(self.check_every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = stop.wait_for(|v| *v) => break,
                _ = tick.tick() => {}
            }
            let current = input.borrow().clone();
            let writes = current.facts.writes();
            if writes {
                last = self.refresh(&mut s).await.or(last);
                if s.stored == 0 {
                    last = None;
                }
            }
            if let Some(reason) = snapshot_due(
                unix_ms(),
                writes,
                current.facts.revision(),
                last,
                self.schedule,
            ) {
                if self.snapshot_now(&current, &reason, &mut s).await {
                    last = self.refresh(&mut s).await;
                }
            }
            status.send_modify(|st| st.snapshots = Some(s.clone()));
        }
        let current = input.borrow().clone();
        if let Some(reason) = current.facts.final_due() {
            self.snapshot_now(&current, &reason, &mut s).await;
            status.send_modify(|st| st.snapshots = Some(s.clone()));
        }
    }
}
