//! The snapshot writer: runs beside the daemon, takes snapshots when this
//! instance writes them and the schedule says one is due
//! (`recovery::snapshot_schedule`: the ready instance beside the etcd
//! leader), applies retention (`recovery::retention`) only right after a
//! newer snapshot was stored, and takes a final snapshot when eco is asked
//! to stop. It reads typed facts the daemon's pass sends it
//! ([`WriterInput`]), never `/status`; it writes its own part of `/status`.
//! The writing instance also verifies the newest snapshot by restoring it
//! when `recovery::restore_check` says it is due (`verify.rs`); every
//! instance's writer reads the store's verification record, so every
//! instance reports the last result.

use super::listing::taken_ms;
use super::recorded::take_recorded;
use super::take::{SnapshotRequest, TakenSnapshot};
use super::verify::{self, VerificationRecord, VerifyRequest};
use crate::api::status::{InstanceStatus, SnapshotStatus};
use crate::base::events::Event;
use crate::base::wall_clock::unix_ms;
use crate::etcd::access::EtcdAccess;
use crate::etcd::binaries::RunningBinaries;
use crate::metrics::snapshots::SnapshotMetrics;
use crate::store::{ObjectInfo, ObjectStore};
use recovery::restore_check::{self, Verdict, verification_due};
use recovery::retention::{self, RetentionPolicy, SnapshotEntry};
use recovery::snapshot_schedule::{
    Followed, LastSnapshot, LeaderFacts, NewestSnapshot, SnapshotSchedule, snapshot_due,
};
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// What the daemon's latest pass tells the writer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WriterInput {
    pub facts: LeaderFacts,
    /// The incarnation and cluster token snapshots are named for (from the
    /// state file), `None` before this instance belongs to a cluster.
    pub naming: Option<(u64, String)>,
    /// The format snapshots are written in (the cluster version's; 0
    /// before the daemon's first pass, written as format 1).
    pub format: recovery::cluster_version::Format,
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
    /// Compression and encryption of what it writes; the identities that
    /// open it for verification.
    pub codec: super::codec_choice::SnapshotCodec,
    /// The binaries a verification restores and runs the throwaway etcd
    /// with (the ones the local member runs).
    pub binaries: RunningBinaries,
    /// Where a verification's temporary directory is made.
    pub verify_in: PathBuf,
    /// How often the newest snapshot is verified; zero: never.
    pub verify_interval: Duration,
    /// Bounds a verification's restore and its throwaway etcd's start.
    pub verify_timeout: Duration,
    /// How long the change archive's points in time are kept
    /// (`archive.keep_for`).
    pub archive_keep_for: Duration,
}

/// A full snapshot the change archive asks for to start a chain
/// (`crate::archive::writer`): this writer takes it, so one instance has
/// one taker; the answer is its name and revision, or why it failed.
pub struct ChainSnapshot {
    pub reason: String,
    pub reply: tokio::sync::oneshot::Sender<Result<(String, i64), String>>,
}

/// How long the store's verification record is trusted before it is read
/// again (the writer re-reads it before deciding; it changes about daily).
const VERIFICATION_RECORD_FRESH: Duration = Duration::from_secs(60);

/// The store's verification record as last read.
#[derive(Default)]
struct KnownVerification {
    read_at: Option<std::time::Instant>,
    record: Option<VerificationRecord>,
}

/// What the writer knows and has done: its own working state, which it
/// decides from. `/status` gets a projection of it
/// ([`WriterState::project`]) and is never read back.
#[derive(Clone, Debug, Default)]
struct WriterState {
    /// Snapshots of this cluster in the store at the last listing.
    stored: usize,
    /// The newest of them (`crate::snapshot::listing::newest`).
    newest: Option<NewestSnapshot>,
    taken: u64,
    failures: u64,
    last_error: Option<String>,
    last_reason: Option<String>,
    /// Raised when the store lost snapshots it had (e.g. wiped).
    alert: Option<String>,
    verification: Option<VerificationRecord>,
    verification_problem: Option<String>,
}

impl WriterState {
    /// The `/status` row (`snapshots`).
    fn project(&self) -> SnapshotStatus {
        SnapshotStatus {
            stored: self.stored,
            newest: self.newest.as_ref().map(|n| n.name.clone()),
            newest_revision: self.newest.as_ref().map(|n| n.revision),
            newest_taken_unix_ms: self
                .newest
                .as_ref()
                .map(|n| n.taken_unix_ms)
                .filter(|ms| *ms > 0),
            taken: self.taken,
            failures: self.failures,
            last_error: self.last_error.clone(),
            last_reason: self.last_reason.clone(),
            alert: self.alert.clone(),
            verification: self.verification.clone(),
            verification_problem: self.verification_problem.clone(),
        }
    }
}

/// The newest snapshot this writer follows (`recovery::snapshot_schedule::
/// Followed`: since when it knows it, on its own monotonic clock, and
/// whether it stored it), measured from when the writer started.
struct Known {
    started: std::time::Instant,
    followed: Option<Followed>,
}

impl Default for Known {
    fn default() -> Self {
        Self {
            started: std::time::Instant::now(),
            followed: None,
        }
    }
}

impl Known {
    fn now_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// A listing found `found` as the newest.
    fn listed(&mut self, found: Option<NewestSnapshot>) {
        let now = self.now_ms();
        self.followed = Followed::after_listing(self.followed.take(), found, now);
    }

    /// This writer stored `taken`: the schedule measures from now, also
    /// when it replaced an object of the same name.
    fn stored(&mut self, taken: &TakenSnapshot) {
        let now = self.now_ms();
        let stored = NewestSnapshot {
            name: taken.name.to_string(),
            taken_unix_ms: Some(taken_ms(&taken.object))
                .filter(|ms| *ms > 0)
                .unwrap_or_else(unix_ms),
            revision: taken.name.revision,
        };
        self.followed = Some(Followed::after_storing(stored, now));
    }

    fn last_snapshot(&self) -> Option<LastSnapshot> {
        let now = self.now_ms();
        self.followed.as_ref().map(|f| f.last_snapshot(now))
    }
}

impl SnapshotWriter {
    /// The cluster's snapshots in the store (every page), oldest first.
    async fn snapshots(&self) -> Result<Vec<ObjectInfo>, crate::store::StoreError> {
        Ok(super::listing::list(&*self.store, &self.cluster)
            .await?
            .snapshots)
    }

    /// Lists the store and records what it found in `s`; an empty listing
    /// after snapshots were seen raises an alert. The newest is the one
    /// furthest along (incarnation, then revision, from its name), never
    /// the one with the latest timestamp: timestamps come from other
    /// machines' clocks.
    /// `Err` when the listing failed (what the writer knew stays).
    async fn refresh(&self, s: &mut WriterState) -> Result<Option<NewestSnapshot>, ()> {
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
                s.newest = super::listing::newest(&list).map(|(n, o)| NewestSnapshot {
                    name: o.name.clone(),
                    taken_unix_ms: taken_ms(o),
                    revision: n.revision,
                });
                Ok(s.newest.clone())
            }
            Err(e) => {
                s.last_error = Some(format!("listing the store: {e}"));
                Err(())
            }
        }
    }

    /// Lists the store (`refresh`); what the writer knows of the newest
    /// snapshot follows the listing, and stays as it was when it failed.
    async fn learn(&self, s: &mut WriterState, known: &mut Known) {
        if let Ok(found) = self.refresh(s).await {
            known.listed(found);
        }
    }

    /// Takes one snapshot now and applies retention after it; the
    /// snapshot stored, if one was.
    async fn snapshot_now(
        &self,
        input: &WriterInput,
        reason: &str,
        s: &mut WriterState,
    ) -> Option<TakenSnapshot> {
        let Some((incarnation, token)) = &input.naming else {
            return None;
        };
        let req = SnapshotRequest {
            endpoint: self.endpoint.get(),
            cluster: self.cluster.clone(),
            incarnation: *incarnation,
            token: token.clone(),
            instance: self.instance.clone(),
            format: input.format.max(recovery::cluster_version::UNTAGGED),
            codec: self.codec.clone(),
        };
        match take_recorded(&*self.store, &self.access, &req, &self.metrics, reason).await {
            Ok(taken) => {
                s.taken += 1;
                s.last_reason = Some(reason.to_string());
                s.last_error = None;
                // An alert stays in /status (until eco restarts or another
                // one replaces it): a new snapshot does not undo the loss.
                self.apply_retention(s).await;
                Some(taken)
            }
            Err(e) => {
                s.failures += 1;
                s.last_error = Some(e.to_string());
                None
            }
        }
    }

    /// Follows the store's verification record and, on the writing
    /// instance, verifies the newest snapshot when one is due.
    async fn follow_verification(
        &self,
        writes: bool,
        format: recovery::cluster_version::Format,
        s: &mut WriterState,
        known: &mut KnownVerification,
    ) {
        let stale = known
            .read_at
            .is_none_or(|at| at.elapsed() >= VERIFICATION_RECORD_FRESH);
        if stale {
            match verify::read_record(&*self.store, &self.cluster).await {
                Ok(r) => {
                    known.record = r;
                    known.read_at = Some(std::time::Instant::now());
                }
                Err(e) => tracing::warn!(error = %e, "cannot read the verification record"),
            }
        }
        s.verification = known.record.clone();
        s.verification_problem = known.record.as_ref().and_then(|r| {
            restore_check::record_in_future(unix_ms(), r.at_unix_ms, r.last_ok_unix_ms)
        });
        if !writes {
            return;
        }
        let last = known.record.as_ref().map(VerificationRecord::last);
        let Some(reason) = verification_due(
            unix_ms(),
            u64::try_from(self.verify_interval.as_millis()).unwrap_or(u64::MAX),
            s.newest.as_ref().map(|n| n.name.as_str()),
            last.as_ref(),
        ) else {
            return;
        };
        let Some(snapshot) = s.newest.as_ref().map(|n| n.name.clone()) else {
            return;
        };
        let started = std::time::Instant::now();
        let binaries = self.binaries.get();
        let verdict = match self.codec.identities() {
            Ok(identities) => {
                verify::verify(&VerifyRequest {
                    store: &*self.store,
                    snapshot: &snapshot,
                    binaries: &binaries,
                    access: &self.access,
                    work_in: &self.verify_in,
                    timeout: self.verify_timeout,
                    identities: identities.as_ref(),
                })
                .await
            }
            Err(e) => Verdict::Failed { why: e.to_string() },
        };
        let duration_ms = started.elapsed().as_millis() as u64;
        let now = unix_ms();
        let (ok, detail) = match verdict {
            Verdict::Verified { detail } => {
                crate::event!(info, Event::SnapshotVerified, %snapshot, %detail, duration_ms, %reason, "the newest snapshot restores and matches its record");
                (true, detail)
            }
            Verdict::Failed { why } => {
                crate::event!(error, Event::SnapshotVerificationFailed, %snapshot, error = %why, duration_ms, %reason, "the newest snapshot failed its verified restore");
                (false, why)
            }
        };
        self.metrics.verified(ok);
        let record = VerificationRecord {
            snapshot,
            at_unix_ms: now,
            ok,
            detail,
            instance: self.instance.clone(),
            // A last success dated in the future is not carried on.
            last_ok_unix_ms: if ok {
                Some(now)
            } else {
                restore_check::believed_last_ok(
                    now,
                    known.record.as_ref().and_then(|r| r.last_ok_unix_ms),
                )
            },
            format: format.max(recovery::cluster_version::UNTAGGED),
        };
        if let Err(e) = verify::write_record(&*self.store, &self.cluster, &record).await {
            tracing::warn!(error = %e, "cannot store the verification record");
        }
        known.record = Some(record);
        known.read_at = Some(std::time::Instant::now());
        s.verification = known.record.clone();
        s.verification_problem = None;
    }

    async fn apply_retention(&self, s: &mut WriterState) {
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
        self.apply_archive_retention().await;
    }

    /// Deletes the segments of the change archive no kept snapshot can
    /// replay (`recovery::archive::segments_to_delete`): run right after
    /// the snapshots' retention, from a fresh listing of both.
    async fn apply_archive_retention(&self) {
        let found = match crate::archive::listing::list(&*self.store, &self.cluster).await {
            Ok(f) => f,
            Err(e) => {
                tracing::warn!(error = %e, "cannot list the change archive for retention");
                return;
            }
        };
        let keep_for = u64::try_from(self.archive_keep_for.as_millis()).unwrap_or(u64::MAX);
        for (name, why) in recovery::archive::segments_to_delete(
            &found.snapshots,
            &found.segments,
            unix_ms(),
            keep_for,
        ) {
            match self.store.delete(&name).await {
                Ok(()) => crate::event!(
                    info,
                    Event::ArchiveSegmentDeleted,
                    %name,
                    %why,
                    "retention deleted a segment of the change archive"
                ),
                Err(e) => {
                    tracing::warn!(%name, error = %e, "retention could not delete a segment")
                }
            }
        }
    }

    /// Runs until `stop` turns true; then takes a final snapshot when
    /// `LeaderFacts::final_due` says so (the leader, or a voter whose
    /// departure leaves no healthy quorum).
    pub async fn run(
        self,
        input: watch::Receiver<WriterInput>,
        status: watch::Sender<InstanceStatus>,
        mut stop: watch::Receiver<bool>,
        mut chain_snapshots: tokio::sync::mpsc::Receiver<ChainSnapshot>,
    ) {
        let mut s = WriterState::default();
        let mut last = Known::default();
        let mut verification = KnownVerification::default();
        self.learn(&mut s, &mut last).await;
        status.send_modify(|st| st.snapshots = Some(s.project()));
        let mut tick = tokio::time::interval(self.check_every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = async { stop.wait_for(|v| *v).await.is_ok() } => break,
                _ = tick.tick() => {}
                Some(asked) = chain_snapshots.recv() => {
                    // The change archive starts a chain: a snapshot now.
                    let current = input.borrow().clone();
                    let answer = match self.snapshot_now(&current, &asked.reason, &mut s).await {
                        Some(taken) => {
                            last.stored(&taken);
                            self.learn(&mut s, &mut last).await;
                            Ok((taken.name.to_string(), taken.name.revision))
                        }
                        None => Err(s
                            .last_error
                            .clone()
                            .unwrap_or_else(|| "this instance belongs to no cluster yet".into())),
                    };
                    let _ = asked.reply.send(answer);
                    status.send_modify(|st| st.snapshots = Some(s.project()));
                    continue;
                }
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
            ) && let Some(taken) = self.snapshot_now(&current, &reason, &mut s).await
            {
                last.stored(&taken);
                self.learn(&mut s, &mut last).await;
            }
            self.follow_verification(writes, current.format, &mut s, &mut verification)
                .await;
            status.send_modify(|st| st.snapshots = Some(s.project()));
        }
        let current = input.borrow().clone();
        if let Some(reason) = current.facts.final_due() {
            self.snapshot_now(&current, &reason, &mut s).await;
            status.send_modify(|st| st.snapshots = Some(s.project()));
        }
    }
}
