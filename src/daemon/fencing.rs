//! The daemon drives the fenced seeding protocol (DESIGN §7): every pass
//! it feeds `recovery::fenced::Protocol` the group, the store's records and
//! newest snapshot, `V_n`, and one detector sample (its own etcd probe and
//! gossip's view); protocol messages arrive as gossip messages. It then
//! executes the effects **in order**: a promise is persisted before the
//! message carrying it is sent, etcd is stopped on a freeze before the WAL
//! is read, the record is created in the store (the commit point) before
//! anyone seeds, and only the seeder the record names seeds.
//!
//! `WakeAt` effects need no timer of their own: the protocol is handled on
//! every pass (`etcd.probe_interval`), which is finer than its timers.

use super::Daemon;
use crate::data_dir::{self, DataDirContents};
use crate::etcd::flags::InitialClusterState;
use crate::etcd::probe;
use crate::fencing::facts::{self, LeaderSightings};
use crate::fencing::protocol_file::ProtocolFile;
use crate::fencing::replay::{self, ReplayRequest};
use crate::record::{self, IncarnationRecord};
use crate::snapshot::take::{self, SnapshotRequest};
use crate::state_file::{self, LocalState};
use crate::status::Phase;
use crate::store::dir::DirStore;
use crate::store::list_all;
use anyhow::Context;
use recovery::fenced::{
    CreateResult, Effect, EffectKind, Envelope, GroupFacts, Input, LocalData, Observation,
    Protocol, RecordListing, SeedPlan, SeedRecord, StoreFacts,
};
use std::collections::{BTreeSet, VecDeque};
use std::time::{Duration, Instant};

/// How often the store's records and snapshots are listed for the protocol.
const STORE_REFRESH: Duration = Duration::from_secs(2);

/// The protocol and what the daemon keeps beside it.
pub(super) struct Fencing {
    pub protocol: Protocol,
    pub file: ProtocolFile,
    pub sightings: LeaderSightings,
    pub store_read_at: Option<Instant>,
    /// A seeding that failed; retried every pass (the record names this
    /// instance, so nobody else may seed).
    pub pending_seed: Option<SeedPlan>,
    /// Joining a decided incarnation failed (the store did not answer, the
    /// data could not be moved): retried every pass, and until it is done
    /// the old incarnation's etcd must not be restarted by the planner.
    pub join_pending: bool,
    /// This pass changed the local etcd or state (freeze, unfreeze, seed,
    /// join): the planner must observe again before acting.
    pub acted: bool,
}

impl Fencing {
    /// Frozen by a promise, or seeding: the steady-state planner must not
    /// act (and etcd of the old incarnation must not start).
    /// The steady-state planner must not run this pass.
    pub fn blocks_planner(&self) -> bool {
        self.acted || self.holds()
    }

    pub fn holds(&self) -> bool {
        self.protocol.is_frozen()
            || self.protocol.state().seed_pending
            || self.pending_seed.is_some()
            || self.join_pending
    }
}

impl Daemon {
    /// One protocol pass: feed this pass's facts, execute the effects.
    pub(super) async fn fence_pass(&mut self, local: Option<&probe::MemberStatus>, now_ms: u64) {
        let Some(f) = self.fencing.as_mut() else {
            return;
        };
        f.acted = false;
        let mut inputs = Vec::new();
        let group: BTreeSet<String> = self.group.instances.iter().map(|i| i.id.clone()).collect();
        let gone = facts::certified_gone(&f.protocol.state().voters, &group);
        inputs.push(Input::Group(GroupFacts {
            instances: group,
            certified_gone: gone.clone(),
        }));
        if let Some(s) = &self.state {
            if !f.protocol.is_frozen() && !s.voting_members.is_empty() {
                inputs.push(Input::Membership {
                    incarnation: s.incarnation,
                    voters: s.voting_members.clone(),
                });
            }
        }
        let due = f
            .store_read_at
            .is_none_or(|at| at.elapsed() >= STORE_REFRESH);
        if due {
            f.store_read_at = Some(Instant::now());
            if let Some(store) = &self.store {
                inputs.push(Input::Store(
                    read_store_facts(store, &self.config.cluster.name).await,
                ));
            }
        }
        if let Some(g) = &self.gossip {
            let view = g.view();
            let mut peers =
                facts::peer_facts(&view, tokio::time::Instant::now(), now_ms, &mut f.sightings);
            // This instance's own facts are the freshest there are.
            if let Some(own) = peers.get_mut(&self.id) {
                own.last_heard = now_ms;
                if local.is_some_and(|m| m.has_leader()) {
                    own.leader_seen_at = Some(now_ms);
                }
            }
            inputs.push(Input::Observe(Observation {
                at: now_ms,
                probe: Some(facts::probe_of(local)),
                peers,
                certified_gone: gone,
            }));
        }
        inputs.push(Input::Tick {
            random: rand::random(),
        });
        for input in inputs {
            self.fence_feed(now_ms, input).await;
        }
        // A promise freezes this instance: its etcd must not run, even if
        // the stop that came with the freeze failed (a promise resent by a
        // retransmitted prepare carries no second freeze).
        let frozen = self
            .fencing
            .as_ref()
            .is_some_and(|f| f.protocol.is_frozen());
        if frozen && self.supervisor.status().borrow().running {
            tracing::warn!("frozen by a promise but etcd runs: stopping it");
            if let Err(e) = self.supervisor.stop().await {
                tracing::error!(error = %e, "cannot stop etcd while frozen; retrying next pass");
            }
        }
        if let Some(plan) = self.fencing.as_ref().and_then(|f| f.pending_seed.clone()) {
            self.run_seed(now_ms, plan).await;
        }
        self.catch_up().await;
        self.show_recovery();
    }

    /// A protocol message from gossip (the sealed socket authenticated the
    /// sender; the envelope must name the same one).
    pub(super) async fn fence_message(&mut self, from: &str, bytes: &[u8]) {
        let env: Envelope = match postcard::from_bytes(bytes) {
            Ok(e) => e,
            Err(e) => {
                tracing::warn!(%from, error = %e, "undecodable recovery message dropped");
                return;
            }
        };
        if env.from != from {
            tracing::warn!(%from, claimed = %env.from, "recovery message with a forged sender dropped");
            return;
        }
        let now_ms = self.started.elapsed().as_millis() as u64;
        self.fence_feed(now_ms, Input::Message(env)).await;
        self.show_recovery();
    }

    /// Handles one input and every effect it leads to, in order.
    async fn fence_feed(&mut self, now_ms: u64, input: Input) {
        let Some(f) = self.fencing.as_mut() else {
            return;
        };
        let mut queue: VecDeque<Effect> = f.protocol.handle(now_ms, input).into();
        while let Some(effect) = queue.pop_front() {
            match self.execute_effect(now_ms, effect).await {
                Ok(Some(next)) => {
                    if let Some(f) = self.fencing.as_mut() {
                        queue.extend(f.protocol.handle(now_ms, next));
                    }
                }
                Ok(None) => {}
                Err(e) => {
                    // Nothing after a failed effect may run (a message must
                    // not leave without the promise it carries on disk).
                    tracing::error!(error = %format!("{e:#}"), "recovery effect failed; the rest of this batch is dropped and retried by the protocol");
                    return;
                }
            }
        }
    }

    /// Executes one effect; some answer with an input for the protocol.
    async fn execute_effect(
        &mut self,
        now_ms: u64,
        effect: Effect,
    ) -> anyhow::Result<Option<Input>> {
        let reason = effect.reason;
        let changes_local = matches!(
            effect.kind,
            EffectKind::Freeze | EffectKind::Unfreeze | EffectKind::Seed(_) | EffectKind::Join(_)
        );
        if let (true, Some(f)) = (changes_local, self.fencing.as_mut()) {
            f.acted = true;
        }
        match effect.kind {
            EffectKind::Persist(state) => {
                let f = self.fencing.as_ref().context("no protocol")?;
                f.file
                    .store(&state)
                    .with_context(|| format!("persisting the recovery state ({reason})"))?;
                Ok(None)
            }
            EffectKind::Send(env) => {
                tracing::debug!(to = %env.to, kind = env.message.kind(), %reason, "recovery message");
                let g = self.gossip.as_ref().context("no gossip")?;
                let bytes = postcard::to_stdvec(&env).context("encoding a recovery message")?;
                if g.send(&env.to, bytes).is_err() {
                    anyhow::bail!("gossip has stopped");
                }
                Ok(None)
            }
            EffectKind::Freeze => {
                tracing::warn!(%reason, "frozen: stopping etcd");
                self.status.send_modify(|s| {
                    s.phase = Phase::Frozen;
                    s.ready = false;
                });
                self.supervisor.stop().await?;
                Ok(None)
            }
            EffectKind::Unfreeze => {
                tracing::info!(%reason, "unfrozen: steady state resumes");
                Ok(None)
            }
            EffectKind::ReadLocalData => Ok(Some(Input::LocalData(self.read_local_data().await))),
            EffectKind::WakeAt(_) => Ok(None),
            EffectKind::CreateRecord(seed) => {
                tracing::warn!(incarnation = seed.incarnation, value = %seed.value, %reason, "creating the record (the commit point)");
                Ok(Some(Input::CreateResult(self.create_record(&seed).await)))
            }
            EffectKind::Seed(plan) => {
                tracing::warn!(?plan, %reason, "seeding a new incarnation");
                self.run_seed(now_ms, plan).await;
                Ok(None)
            }
            EffectKind::Join(record) => {
                tracing::warn!(incarnation = record.incarnation, seeder = %record.value.seeder, %reason, "joining a new incarnation");
                // A failure is retried by `catch_up` on the next pass.
                if let Err(e) = self.join_incarnation(&record).await {
                    tracing::error!(error = %format!("{e:#}"), "cannot join the new incarnation yet; retrying");
                    if let Some(f) = self.fencing.as_mut() {
                        f.join_pending = true;
                    }
                }
                Ok(None)
            }
            EffectKind::Alert(kind) => {
                tracing::error!(?kind, %reason, "recovery alert");
                self.set_next("wait for a human or for the condition to clear", &reason);
                Ok(None)
            }
            EffectKind::DataLoss {
                incarnation,
                skipped,
            } => {
                tracing::error!(incarnation, ?skipped, %reason, "DATA LOSS accepted: recovery.accept_loss_after fired; acknowledged writes only these members held are lost");
                Ok(None)
            }
        }
    }

    /// What the local WAL holds (etcd is stopped: a freeze came first).
    async fn read_local_data(&self) -> LocalData {
        let incarnation = self.state.as_ref().map_or(0, |s| s.incarnation);
        match data_dir::inspect(&self.data_dir) {
            Ok(DataDirContents::EtcdData) => {}
            _ => return LocalData::empty(),
        }
        let dir = self.data_dir.clone();
        let read = tokio::task::spawn_blocking(move || crate::etcd::wal::read_position(&dir)).await;
        let error = match read {
            Ok(Ok(p)) => {
                return LocalData {
                    cluster_id: Some(p.cluster_id),
                    incarnation,
                    commit_index: p.commit_index,
                    // Not known before a replay (the backend may lag the WAL).
                    applied_revision: 0,
                    has_data: true,
                };
            }
            Ok(Err(e)) => e.to_string(),
            Err(e) => e.to_string(),
        };
        // Data is there but unreadable: never "no data" (that would certify
        // this instance gone); it ranks lowest.
        tracing::error!(%error, "cannot read the WAL; reporting data at commit index 0");
        LocalData {
            cluster_id: None,
            incarnation,
            commit_index: 0,
            applied_revision: 0,
            has_data: true,
        }
    }

    /// The conditional create of `incarnations/<k>`.
    async fn create_record(&self, seed: &SeedRecord) -> CreateResult {
        let Some(store) = &self.store else {
            return CreateResult::StoreError("no snapshot store is configured".into());
        };
        let cluster = &self.config.cluster.name;
        let ours = facts::incarnation_record(cluster, seed, super::unix_ms());
        match record::create(store, &ours).await {
            Ok(held) if held == ours => CreateResult::Created(seed.clone()),
            Ok(held) => {
                let voters = record::voters(store, cluster, held.incarnation)
                    .await
                    .ok()
                    .flatten();
                CreateResult::AlreadyExists(facts::seed_record(&held, voters.as_ref()))
            }
            Err(e) => CreateResult::StoreError(e.to_string()),
        }
    }

    /// Seeds, and tells the protocol when done; a failure is retried.
    async fn run_seed(&mut self, now_ms: u64, plan: SeedPlan) {
        self.status.send_modify(|s| s.phase = Phase::Seeding);
        match self.seed_incarnation(&plan).await {
            Ok(incarnation) => {
                if let Some(f) = self.fencing.as_mut() {
                    f.pending_seed = None;
                }
                tracing::warn!(
                    incarnation,
                    "seeded; the new incarnation is snapshotted and serving"
                );
                Box::pin(self.fence_feed(now_ms, Input::SeedCompleted { incarnation })).await;
            }
            Err(e) => {
                let reason = format!("seeding failed, retrying: {e:#}");
                tracing::error!(%reason);
                self.set_next("seed the new incarnation", &reason);
                if let Some(f) = self.fencing.as_mut() {
                    f.pending_seed = Some(plan);
                }
            }
        }
    }

    /// Seeds incarnation `k` per `plan`; returns `k`. Idempotent: a seeder
    /// that crashed after the restore only starts etcd and snapshots.
    async fn seed_incarnation(&mut self, plan: &SeedPlan) -> anyhow::Result<u64> {
        let root = self
            .store
            .as_ref()
            .context("seeding needs the snapshot store")?
            .root()
            .to_path_buf();
        let store = DirStore::new(root);
        let cluster = self.config.cluster.name.clone();
        let timeout = self.config.etcd.call_timeout.get();
        let (k, suffix) = match plan {
            SeedPlan::ReplayWal {
                incarnation,
                token_suffix,
                ..
            }
            | SeedPlan::RestoreSnapshot {
                incarnation,
                token_suffix,
                ..
            }
            | SeedPlan::Fresh {
                incarnation,
                token_suffix,
            } => (*incarnation, *token_suffix),
        };
        let token = facts::token(&cluster, k, suffix);
        let restored = self
            .state
            .as_ref()
            .is_some_and(|s| s.incarnation == k && s.cluster_token == token)
            && data_dir::inspect(&self.data_dir)? == DataDirContents::EtcdData;
        if !restored {
            self.supervisor.stop().await?;
            // The replayed snapshot's name, once stored: a seeder that
            // crashes after moving its data aside restores it again rather
            // than replaying a data directory that is no longer its WAL.
            let marker = self.data_dir.with_file_name(format!("seed-{k}.source"));
            let replayed_before = std::fs::read_to_string(&marker)
                .ok()
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty());
            let source = match plan {
                SeedPlan::ReplayWal { .. } if replayed_before.is_some() => replayed_before,
                SeedPlan::ReplayWal { commit_index, .. } => {
                    let old = self
                        .state
                        .clone()
                        .context("no state file: there is no WAL of this instance to replay")?;
                    let replayed = replay::start(&ReplayRequest {
                        etcd: self.binaries.etcd.clone(),
                        data_dir: self.data_dir.clone(),
                        scratch: self.data_dir.with_file_name(format!("replay-{k}")),
                        name: self.id.clone(),
                        commit_index: *commit_index,
                        limit: Duration::from_secs(120),
                        call_timeout: timeout,
                    })
                    .await?;
                    tracing::info!(
                        raft_index = replayed.status.raft_index,
                        revision = replayed.status.revision,
                        "WAL replayed to its commit index; snapshotting it into the store"
                    );
                    let taken = take::take(
                        &store,
                        &SnapshotRequest {
                            endpoint: replayed.endpoint().to_string(),
                            cluster: cluster.clone(),
                            incarnation: old.incarnation,
                            token: old.cluster_token.clone(),
                            instance: self.id.clone(),
                            timeout: timeout * 5,
                        },
                    )
                    .await;
                    replayed.finish().await?;
                    let name = taken?.name.to_string();
                    crate::atomic_file::write_atomic(&marker, name.as_bytes())?;
                    Some(name)
                }
                SeedPlan::RestoreSnapshot { name, .. } => Some(name.clone()),
                SeedPlan::Fresh { .. } => None,
            };
            if data_dir::inspect(&self.data_dir)? != DataDirContents::Empty {
                data_dir::move_aside(
                    &self.data_dir,
                    &format!("before-incarnation-{k}"),
                    self.config.etcd.keep_moved_aside as usize,
                )?;
            }
            if let Some(name) = source {
                self.restore_here(&store, &name, &token, &format!("seed-{k}.db"))
                    .await?;
                tracing::warn!(snapshot = %name, incarnation = k, "restored under the new token");
            }
            self.persist(LocalState {
                format: state_file::FORMAT,
                cluster_name: cluster.clone(),
                instance_id: self.id.clone(),
                incarnation: k,
                cluster_token: token.clone(),
                member_id: None,
                voting_members: vec![self.id.clone()],
                boots: self.state.as_ref().map_or(1, |s| s.boots),
            })?;
            let _ = std::fs::remove_file(&marker);
        }
        if !self.supervisor.status().borrow().running {
            let own = vec![(self.id.clone(), self.peer_url.clone())];
            self.start_etcd(own, InitialClusterState::New).await?;
        }
        // Not ready before the fresh cluster serves and is in the store.
        let started = Instant::now();
        let member = loop {
            if let Some(m) = self.view.local(&self.client_url).await {
                if m.has_leader() {
                    break m;
                }
            }
            if started.elapsed() > Duration::from_secs(60) {
                anyhow::bail!("the seeded etcd has no leader after 60 s");
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        if let Some(mut s) = self.state.clone() {
            s.member_id = Some(member.member_id);
            self.persist(s)?;
        }
        let taken = take::take(
            &store,
            &SnapshotRequest {
                endpoint: self.client_url.clone(),
                cluster,
                incarnation: k,
                token,
                instance: self.id.clone(),
                timeout: timeout * 5,
            },
        )
        .await
        .context("snapshotting the seeded cluster")?;
        tracing::warn!(snapshot = %taken.name, "the seeded incarnation is in the store");
        Ok(k)
    }

    /// The protocol knows a newer decided incarnation than the state file
    /// (a join that failed, or was interrupted by a crash): join it now.
    /// Idempotent.
    async fn catch_up(&mut self) {
        let Some(f) = self.fencing.as_ref() else {
            return;
        };
        let ours = self.state.as_ref().map_or(0, |s| s.incarnation);
        let owed = f
            .protocol
            .join_owed(ours)
            .filter(|_| f.pending_seed.is_none())
            .cloned();
        let Some(record) = owed else {
            if let Some(f) = self.fencing.as_mut() {
                f.join_pending = false;
            }
            return;
        };
        let joined = self.join_incarnation(&record).await;
        if let Some(f) = self.fencing.as_mut() {
            f.acted = true;
            f.join_pending = joined.is_err();
        }
        if let Err(e) = joined {
            let reason = format!(
                "incarnation {} exists; cannot join it yet: {e:#}",
                record.incarnation
            );
            tracing::error!(%reason);
            self.set_next("join the new incarnation", &reason);
        }
    }

    /// Another instance seeds `rec.incarnation`: move the old data aside
    /// and become a new instance of that incarnation; the steady-state
    /// planner then joins it as a learner.
    async fn join_incarnation(&mut self, rec: &SeedRecord) -> anyhow::Result<()> {
        let ours = self.state.as_ref().map_or(0, |s| s.incarnation);
        let k = rec.incarnation;
        if ours >= k {
            return Ok(());
        }
        let store = self
            .store
            .as_ref()
            .context("joining a new incarnation needs the store")?;
        let cluster = self.config.cluster.name.clone();
        let held: Option<IncarnationRecord> = record::all(store, &cluster).await?.remove(&k);
        let token = match held {
            Some(r) => r.token,
            None => facts::token(&cluster, k, rec.token_suffix),
        };
        self.supervisor.stop().await?;
        if data_dir::inspect(&self.data_dir)? != DataDirContents::Empty {
            let moved = data_dir::move_aside(
                &self.data_dir,
                &format!("incarnation-{ours}"),
                self.config.etcd.keep_moved_aside as usize,
            )?;
            tracing::warn!(?moved, "data of the old incarnation moved aside");
        }
        self.persist(LocalState {
            format: state_file::FORMAT,
            cluster_name: cluster,
            instance_id: self.id.clone(),
            incarnation: k,
            cluster_token: token,
            member_id: None,
            voting_members: rec.voters.clone(),
            boots: self.state.as_ref().map_or(1, |s| s.boots),
        })?;
        Ok(())
    }

    /// The protocol's explanation in `/status`; while it holds this
    /// instance, it is also the next action.
    fn show_recovery(&self) {
        let Some(f) = &self.fencing else { return };
        let e = f.protocol.explain();
        let holds = f.holds();
        if holds {
            let mut reason = e.summary.clone();
            for w in &e.waiting_for {
                reason.push_str("; ");
                reason.push_str(w);
            }
            let action = match e.phase {
                recovery::fenced::Phase::Seeding => "seed the new incarnation",
                recovery::fenced::Phase::Accepted => "stay frozen (accepted a value)",
                _ => "stay frozen (promised in a recovery round)",
            };
            self.set_next(action, &reason);
        }
        self.status.send_modify(|s| {
            if holds && s.phase != Phase::Seeding {
                s.phase = Phase::Frozen;
            }
            s.recovery = Some(e);
        });
    }
}

/// The store's records (with their current voters) and newest snapshot. A
/// failed listing is `Failed`, never an empty one.
async fn read_store_facts(store: &DirStore, cluster: &str) -> StoreFacts {
    let records = match record::all(store, cluster).await {
        Ok(all) => {
            let mut out = Vec::new();
            let mut failed = None;
            for (n, r) in &all {
                match record::voters(store, cluster, *n).await {
                    Ok(v) => out.push(facts::seed_record(r, v.as_ref())),
                    Err(e) => failed = Some(e.to_string()),
                }
            }
            match failed {
                Some(e) => RecordListing::Failed(e),
                None => RecordListing::Complete(out),
            }
        }
        Err(e) => RecordListing::Failed(e.to_string()),
    };
    let newest_snapshot = list_all(store, &crate::snapshot::name::SnapshotName::prefix(cluster))
        .await
        .ok()
        .and_then(|objects| facts::newest_snapshot(&objects));
    StoreFacts {
        records,
        newest_snapshot,
    }
}
