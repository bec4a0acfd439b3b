//! The snapshot writer: runs beside the daemon, takes snapshots when this
//! instance writes them and the schedule says one is due
//! (`recovery::snapshot_schedule`: the ready instance beside the etcd
//! leader), applies retention (`recovery::retention`) only right after a
//! newer snapshot was stored, and takes a final snapshot when eco is asked
//! to stop. It reads typed facts the daemon's pass sends it
//! ([`WriterInput`]), never `/status`; it writes its own part of `/status`.

use super::name::SnapshotName;
use super::recorded::take_recorded;
use super::take::{SnapshotRequest, meta};
use crate::etcd::access::EtcdAccess;
use crate::events::Event;
use crate::metrics::snapshots::SnapshotMetrics;
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
    /// The local etcd's client URL (its scheme follows the listener).
    pub endpoint: crate::etcd::local_endpoint::LocalEndpoint,
    pub schedule: SnapshotSchedule,
    pub policy: RetentionPolicy,
    pub check_every: Duration,
    /// Size, duration and failures of the snapshots it takes.
    pub metrics: SnapshotMetrics,
}

/// The newest snapshot a listing found.
struct Newest {
    name: String,
    taken_unix_ms: u64,
    revision: i64,
}

/// The newest snapshot this writer knows, and since when (its own
/// monotonic clock): the schedule's clock-independent age.
#[derive(Default)]
struct Known {
    newest: Option<(Newest, std::time::Instant)>,
}

impl Known {
    fn update(&mut self, found: Option<Newest>) {
        self.newest = match (self.newest.take(), found) {
            (Some((old, since)), Some(new)) if old.name == new.name => Some((new, since)),
            (_, Some(new)) => Some((new, std::time::Instant::now())),
            (_, None) => None,
        };
    }

    fn last_snapshot(&self) -> Option<LastSnapshot> {
        self.newest.as_ref().map(|(n, since)| LastSnapshot {
            taken_unix_ms: n.taken_unix_ms,
            revision: n.revision,
            known_for_ms: u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX),
        })
    }
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
    /// after snapshots were seen raises an alert. The newest is the one
    /// furthest along (incarnation, then revision, from its name), never
    /// the one with the latest timestamp: timestamps come from other
    /// machines' clocks.
    /// `Err` when the listing failed (what the writer knew stays).
    async fn refresh(&self, s: &mut SnapshotStatus) -> Result<Option<Newest>, ()> {
        match self.snapshots().await {
            Ok(list) => {
                if list.is_empty() && s.stored > 0 {
                    let alert = format!(
                        "the store lost every snapshot of cluster {} (it listed {} before); taking a new one",
                        self.cluster, s.stored
                    );
                    crate::event!(
                        error,
                        Event::SnapshotStoreLost,
                        alert = %alert,
                        "snapshot store alert"
                    );
                    s.alert = Some(alert);
                }
                s.stored = list.len();
                let newest = list
                    .iter()
                    .filter_map(|o| SnapshotName::parse(&o.name).map(|n| (n, o)))
                    .max_by_key(|(n, o)| (n.incarnation, n.revision, taken_ms(o), o.name.clone()));
                s.newest = newest.as_ref().map(|(_, o)| o.name.clone());
                s.newest_revision = newest.as_ref().map(|(n, _)| n.revision);
                s.newest_taken_unix_ms = newest
                    .as_ref()
                    .map(|(_, o)| taken_ms(o))
                    .filter(|ms| *ms > 0);
                Ok(newest.map(|(n, o)| Newest {
                    name: o.name.clone(),
                    taken_unix_ms: taken_ms(o),
                    revision: n.revision,
                }))
            }
            Err(e) => {
                s.last_error = Some(format!("listing the store: {e}"));
                Err(())
            }
        }
    }

    /// Lists the store (`refresh`); what the writer knows of the newest
    /// snapshot follows the listing, and stays as it was when it failed.
    async fn learn(&self, s: &mut SnapshotStatus, known: &mut Known) {
        if let Ok(found) = self.refresh(s).await {
            known.update(found);
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
            endpoint: self.endpoint.get(),
            cluster: self.cluster.clone(),
            incarnation: *incarnation,
            token: token.clone(),
            instance: self.instance.clone(),
        };
        match take_recorded(&*self.store, &self.access, &req, &self.metrics, reason).await {
            Ok(_) => {
                s.taken += 1;
                s.last_reason = Some(reason.to_string());
                s.last_error = None;
                // An alert stays in /status (until eco restarts or another
                // one replaces it): a new snapshot does not undo the loss.
                self.apply_retention(s).await;
                true
            }
            Err(e) => {
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
                Ok(()) => crate::event!(
                    info,
                    Event::SnapshotDeleted,
                    %name,
                    %why,
                    "retention deleted a snapshot"
                ),
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
        let mut last = Known::default();
        self.learn(&mut s, &mut last).await;
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
                self.learn(&mut s, &mut last).await;
            }
            if let Some(reason) = snapshot_due(
                unix_ms(),
                writes,
                current.facts.revision(),
                last.last_snapshot(),
                self.schedule,
            ) {
                if self.snapshot_now(&current, &reason, &mut s).await {
                    self.learn(&mut s, &mut last).await;
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
