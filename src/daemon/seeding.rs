//! The one seeding executor, for incarnation 1 (a group of one,
//! formation) and for incarnation n+1 (quorum-loss recovery): it asks
//! `recovery::seeding::plan` for the steps still to do, from what is on
//! disk and running now, and runs them in order. A failure ends the run;
//! the caller tries again later and the plan resumes where it stopped.
//!
//! Files beside the data directory: `replay-<k>` and `replay-<k>.log` (the
//! replay's copy of the data directory and its log, removed once done),
//! `seed-<k>.replayed.db` (the replayed member's snapshot, the seed: kept
//! until the state file names `k`), `seed-<k>.source` (the replay marker,
//! `super::replay_marker`), `seed-<k>.db` (a snapshot fetched from the
//! store for restore, removed once restored).
//!
//! A WAL replay's snapshot never goes through the store: it is restored
//! from the file beside the data directory (the store round trip — a
//! compressed upload and a download — cost two passes over the database
//! on the way to a writable cluster; measured at 8 GiB). The store gets the
//! new incarnation's first snapshot (`SnapshotSeeded`) once it leads. Until
//! then the seed lives on this disk only, beside the old incarnation's data
//! it was made from (moved aside, never deleted).

use super::context::Ctx;
use super::durable::Durable;
use super::local_etcd::LocalEtcd;
use super::replay_marker::{LocalReplay, ReplayMarker};
use crate::base::events::Event;
use crate::etcd::access::EtcdAccess;
use crate::etcd::cluster_view::ClusterView;
use crate::etcd::probe::MemberStatus;
use crate::local::state_file::LocalState;
use crate::quorum_loss::replay::{self, ReplayMode, ReplayRequest};
use crate::snapshot::restore::{self, RestoreRequest};
use crate::snapshot::take::{self, SnapshotRequest};
use anyhow::Context;
use recovery::seeding::{self, SeedFrom, SeedStep, SeedingFacts, StateAt};
use std::path::PathBuf;
use std::time::Duration;

/// How long a seeded etcd may take to lead.
const LEADER_WITHIN: Duration = Duration::from_secs(60);
/// How long a WAL replay may take to lead with its WAL applied.
const REPLAY_WITHIN: Duration = Duration::from_secs(120);
/// How long a restore may take.
const RESTORE_WITHIN: Duration = Duration::from_secs(300);

/// What to seed.
#[derive(Clone, Debug)]
pub(super) struct Target {
    pub incarnation: u64,
    pub token: String,
    pub from: SeedFrom,
}

/// The parts of the daemon a seeding uses.
pub(super) struct Seeding<'a> {
    pub ctx: &'a Ctx,
    pub etcd: &'a LocalEtcd,
    pub durable: &'a mut Durable,
    pub view: &'a mut ClusterView,
    /// The format the snapshot it takes is written in.
    pub format: recovery::cluster_version::Format,
}

impl Seeding<'_> {
    fn beside(&self, name: String) -> PathBuf {
        self.etcd.data_dir().with_file_name(name)
    }

    fn marker(&self, k: u64) -> PathBuf {
        self.beside(format!("seed-{k}.source"))
    }

    /// The replay marker, if a replay left one.
    fn replayed(&self, k: u64) -> anyhow::Result<Option<ReplayMarker>> {
        let path = self.marker(k);
        match std::fs::read_to_string(&path) {
            Ok(text) => ReplayMarker::parse(&text)
                .with_context(|| format!("the replay marker {} does not parse", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
        }
    }

    /// Runs the plan's steps from where the seeding stands.
    pub async fn run(&mut self, t: &Target) -> anyhow::Result<()> {
        let replayed = self.replayed(t.incarnation)?;
        let state = self.durable.state().cloned();
        let facts = SeedingFacts {
            incarnation: t.incarnation,
            token: &t.token,
            from: &t.from,
            state: state.as_ref().map(|s| StateAt {
                incarnation: s.incarnation,
                token: &s.cluster_token,
                votes: s.voting_members.iter().any(|v| v == self.ctx.id()),
            }),
            data: self.etcd.data()?,
            replayed: replayed.as_ref().map(ReplayMarker::name),
            etcd_running: self.etcd.running(),
        };
        let steps = seeding::plan(&facts)
            .map_err(|why| anyhow::anyhow!("cannot seed incarnation {}: {why}", t.incarnation))?;
        crate::event!(
            info,
            Event::SeedingStarted,
            incarnation = t.incarnation,
            ?steps,
            "seeding"
        );
        let mut leader = None;
        for step in steps {
            let done = self
                .step(t, &step, &mut leader)
                .await
                .with_context(|| format!("seeding incarnation {}: {step:?}", t.incarnation));
            if let Err(e) = done {
                self.ctx.metrics.decisions.seeding(&t.from, false);
                return Err(e);
            }
        }
        self.ctx.metrics.decisions.seeding(&t.from, true);
        Ok(())
    }

    async fn step(
        &mut self,
        t: &Target,
        step: &SeedStep,
        leader: &mut Option<MemberStatus>,
    ) -> anyhow::Result<()> {
        let k = t.incarnation;
        match step {
            SeedStep::StopEtcd => self.etcd.stop().await,
            SeedStep::ReplayWal {
                commit_index,
                from_backend,
            } => self.replay(k, *commit_index, *from_backend).await,
            SeedStep::MoveDataAside { why } => {
                let moved = self.etcd.move_aside(why)?;
                tracing::warn!(?moved, "data directory moved aside");
                Ok(())
            }
            SeedStep::Restore { name } => self.restore(name, t).await,
            SeedStep::RestoreReplayed => match self
                .replayed(k)?
                .context("the replay marker names no snapshot")?
            {
                ReplayMarker::Local(local) => self.restore_replayed(&local, t).await,
                ReplayMarker::Stored(name) => self.restore(&name, t).await,
            },
            SeedStep::RecordState => {
                let id = self.ctx.id().to_string();
                self.durable.persist(
                    LocalState::new(
                        self.ctx.cluster(),
                        &id,
                        k,
                        t.token.clone(),
                        vec![id.clone()],
                    )
                    .with_peer_scheme(self.ctx.config.etcd.effective_peer_scheme()),
                )
            }
            SeedStep::ForgetReplay => {
                // The seed first: a marker left behind names a file that
                // is gone, and the plan no longer reads it (the state file
                // names `k`); a file left behind would be named by nothing.
                if let Some(ReplayMarker::Local(local)) = self.replayed(k)? {
                    remove_if_there(&self.beside(local.file))?;
                }
                remove_if_there(&self.marker(k))
            }
            SeedStep::StartEtcd => self.etcd.start_alone(self.ctx, &t.token).await,
            SeedStep::AwaitLeader => {
                *leader = Some(
                    self.view
                        .await_leader(&self.ctx.client_url.get(), LEADER_WITHIN, "the seeded etcd")
                        .await?,
                );
                Ok(())
            }
            SeedStep::RecordMemberId => {
                let m = leader.as_ref().context("no leader awaited")?;
                self.durable.record_member_id(m.member_id)
            }
            SeedStep::SnapshotSeeded => {
                let taken = self
                    .snapshot(
                        &self.ctx.access,
                        self.ctx.client_url.get(),
                        k,
                        t.token.clone(),
                    )
                    .await
                    .context("snapshotting the seeded cluster")?;
                crate::event!(warn, Event::SeedingStored, snapshot = %taken, "the seeded incarnation is in the store");
                Ok(())
            }
        }
    }

    /// Replays the old incarnation's WAL to `commit_index` on a loopback
    /// copy, stores a snapshot of it (as the old incarnation), and writes
    /// the replay marker.
    async fn replay(
        &mut self,
        k: u64,
        commit_index: u64,
        from_backend: bool,
    ) -> anyhow::Result<()> {
        let old = self
            .durable
            .state()
            .cloned()
            .context("no state file: there is no WAL of this instance to replay")?;
        // The replayed member serves this instance's client certificate on
        // 127.0.0.1: verified under this instance's name.
        let access = self.ctx.access.verifying_as(&self.ctx.me.host.to_string());
        let replayed = replay::start(&ReplayRequest {
            etcd: self.ctx.binaries.get().etcd,
            data_dir: self.etcd.data_dir().to_path_buf(),
            scratch: self.beside(format!("replay-{k}")),
            name: self.ctx.id().to_string(),
            commit_index,
            limit: REPLAY_WITHIN,
            access: access.clone(),
            client_tls: self.ctx.config.etcd.tls_files().client,
            mode: if from_backend {
                ReplayMode::FromBackend
            } else {
                ReplayMode::ForceNewCluster
            },
            etcdutl: self.ctx.binaries.get().etcdutl,
            etcdctl: self.ctx.binaries.get().etcdctl,
        })
        .await?;
        tracing::info!(
            raft_index = replayed.status.raft_index,
            revision = replayed.status.revision,
            "WAL replayed to its commit index; its snapshot kept beside the data directory"
        );
        let file = format!("seed-{k}.replayed.db");
        let long = access.call_timeout() * crate::etcd::access::LONG_CALL_TIMEOUTS;
        let saved = async {
            let mut client = access
                .with_call_timeout(long)
                .connect(replayed.endpoint())
                .await
                .context("connecting to the replayed member")?;
            crate::snapshot::to_file::save(&mut client, &self.beside(file.clone()), long)
                .await
                .context("the replayed member's snapshot")
        }
        .await;
        let revision = replayed.status.revision;
        replayed.finish().await?;
        let size = saved?;
        let marker = ReplayMarker::Local(LocalReplay {
            file,
            incarnation: old.incarnation,
            revision,
            taken_unix_ms: crate::base::wall_clock::unix_ms(),
        });
        crate::base::atomic_file::write_atomic(&self.marker(k), marker.render()?.as_bytes())?;
        crate::event!(
            warn,
            Event::SeedingReplayed,
            incarnation = k,
            revision,
            bytes = size,
            snapshot = %marker.name(),
            "the old incarnation's WAL replayed to its commit index: its snapshot is the seed"
        );
        Ok(())
    }

    /// Restores the replay's snapshot file (carried first to the end of its
    /// chain in the change archive, when one continues it) into the empty
    /// data directory under the target's token. The file stays until the
    /// state file names the new incarnation (`ForgetReplay`).
    async fn restore_replayed(&mut self, local: &LocalReplay, t: &Target) -> anyhow::Result<()> {
        let seed = self.beside(local.file.clone());
        let point = recovery::archive::SnapshotPoint {
            name: local.file.clone(),
            incarnation: local.incarnation,
            revision: local.revision,
            taken_unix_ms: local.taken_unix_ms,
        };
        let carried = match self
            .ctx
            .store_for("carrying the seed by the change archive")
        {
            Ok(store) => self.archived_point(store, Base::Local(&point, &seed)).await,
            Err(_) => None,
        };
        let file = carried.as_deref().unwrap_or(&seed);
        restore::restore_file(file, &self.restore_request(t))
            .await
            .with_context(|| format!("restoring {}", file.display()))?;
        crate::event!(warn, Event::SeedingRestored, snapshot = %local.file, incarnation = t.incarnation, "restored under the new token");
        Ok(())
    }

    fn restore_request(&self, t: &Target) -> RestoreRequest {
        RestoreRequest {
            data_dir: self.etcd.data_dir().to_path_buf(),
            name: self.ctx.id().to_string(),
            peer_url: self.ctx.peer_url.clone(),
            token: t.token.clone(),
            etcdutl: self.ctx.binaries.get().etcdutl,
            etcdctl: self.ctx.binaries.get().etcdctl,
            timeout: RESTORE_WITHIN,
            bump_revision: true,
        }
    }

    /// Fetches `name` from the store (sha256 verified) and restores it into
    /// the empty data directory under the target's token.
    async fn restore(&mut self, name: &str, t: &Target) -> anyhow::Result<()> {
        let store = self.ctx.store_for("restoring a snapshot")?;
        // A reseed after a quorum loss (incarnation 2 on) is carried by the
        // archive; a first incarnation is seeded from exactly the snapshot
        // it names (`recovery.bootstrap_from`: the point a human chose).
        let carried = if t.incarnation > 1 {
            self.archived_point(store, Base::Stored(name)).await
        } else {
            None
        };
        let (file, _point) = match carried {
            Some(point) => (point.to_path_buf(), Some(point)),
            None => {
                let file = self.beside(format!("seed-{}.db", t.incarnation));
                let identities = self.ctx.codec.identities()?;
                restore::fetch_verified(store, name, &file, identities.as_ref()).await?;
                (file, None)
            }
        };
        let done = restore::restore_file(&file, &self.restore_request(t)).await;
        let _ = tokio::fs::remove_file(&file).await;
        done?;
        crate::event!(warn, Event::SeedingRestored, snapshot = %name, incarnation = t.incarnation, "restored under the new token");
        Ok(())
    }

    /// The seeding snapshot carried to the newest point of its chain in
    /// the change archive (its segments replayed into a throwaway etcd):
    /// the file of that point, `None` when no segment continues the
    /// snapshot or the archive is off. A replay that fails seeds from the
    /// snapshot alone, saying what that loses: the snapshot is what the
    /// protocol's record promised, and a recovery never waits on the
    /// archive.
    async fn archived_point(
        &self,
        store: &dyn crate::store::ObjectStore,
        base: Base<'_>,
    ) -> Option<tempfile::TempPath> {
        let snapshot = base.name();
        if !self.ctx.config.archive.enabled {
            return None;
        }
        let found = match crate::archive::listing::list(store, self.ctx.cluster()).await {
            Ok(f) => f,
            Err(e) => {
                crate::event!(warn, Event::ArchiveFailed, failure = "listing", error = %e, "cannot list the change archive: seeding from the snapshot alone");
                return None;
            }
        };
        let plan = match base {
            Base::Stored(name) => {
                recovery::archive::plan_chain_end(&found.snapshots, &found.segments, name)?
            }
            Base::Local(point, _) => {
                recovery::archive::plan_chain_end_from(point, &found.segments)?
            }
        };
        let binaries = self.ctx.binaries.get();
        let work_in = self.etcd.data_dir().parent()?.to_path_buf();
        let identities = match self.ctx.codec.identities() {
            Ok(i) => i,
            Err(e) => {
                crate::event!(warn, Event::ArchiveFailed, failure = "replay", error = %e, "cannot read the identity file: seeding from the snapshot alone");
                return None;
            }
        };
        let req = crate::archive::replay::ReplayRequest {
            store,
            identities: identities.as_ref(),
            cluster: self.ctx.cluster(),
            binaries: &binaries,
            access: &self.ctx.access,
            work_in: &work_in,
            timeout: RESTORE_WITHIN,
        };
        let replayed = match base {
            Base::Stored(_) => crate::archive::replay::replay_plan(&req, &plan).await,
            Base::Local(_, file) => crate::archive::replay::replay_plan_on(&req, &plan, file).await,
        };
        match replayed {
            Ok(r) => {
                crate::event!(
                    info,
                    Event::ArchiveRestored,
                    revision = r.revision,
                    snapshot = %snapshot,
                    segments = r.plan.segments.len(),
                    revisions = r.revisions,
                    leases_dropped = r.leases_dropped,
                    "seeding from the newest point of the change archive"
                );
                Some(r.file)
            }
            Err(e) => {
                crate::event!(warn, Event::ArchiveFailed, failure = "replay", error = %e, "the change archive could not be replayed: seeding from the snapshot alone, without the revisions {}..={} its chain holds", plan.snapshot.revision + 1, plan.reaches);
                None
            }
        }
    }

    /// A snapshot of the member at `endpoint` into the store, named for
    /// `incarnation` and `token`; its object name.
    async fn snapshot(
        &self,
        access: &EtcdAccess,
        endpoint: String,
        incarnation: u64,
        token: String,
    ) -> anyhow::Result<String> {
        let store = self.ctx.store_for("snapshotting")?;
        let access = access
            .with_call_timeout(access.call_timeout() * crate::etcd::access::LONG_CALL_TIMEOUTS);
        let taken = take::take(
            store,
            &access,
            &SnapshotRequest {
                endpoint,
                cluster: self.ctx.cluster().to_string(),
                incarnation,
                token,
                instance: self.ctx.id().to_string(),
                format: self.format,
                codec: self.ctx.codec.clone(),
            },
        )
        .await?;
        Ok(taken.name.to_string())
    }
}

/// What a seeding is carried from by the change archive.
#[derive(Clone, Copy)]
enum Base<'a> {
    /// A snapshot in the store, by name.
    Stored(&'a str),
    /// The WAL replay's snapshot file, at this point.
    Local(&'a recovery::archive::SnapshotPoint, &'a std::path::Path),
}

impl Base<'_> {
    fn name(&self) -> &str {
        match self {
            Base::Stored(name) => name,
            Base::Local(point, _) => &point.name,
        }
    }
}

fn remove_if_there(path: &std::path::Path) -> anyhow::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("removing {}", path.display()))
        }
        _ => Ok(()),
    }
}
