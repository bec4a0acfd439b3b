//! The daemon as the quorum-loss driver's host: the protocol's I/O against
//! this instance's etcd, state files, store and provider
//! ([`QuorumLossIo`]), and the glue that runs the driver every pass and on
//! every protocol message.

use super::Daemon;
use super::context::Ctx;
use super::durable::Durable;
use super::local_etcd::LocalEtcd;
use super::observe::{GroupView, Observed};
use super::seeding::{Seeding, Target};
use crate::api::status::{InstanceStatus, NextAction, Phase};
use crate::base::wall_clock::unix_ms;
use crate::etcd::cluster_view::ClusterView;
use crate::local::state_file::LocalState;
use crate::quorum_loss::driver::QuorumLossHost;
use crate::quorum_loss::facts;
use crate::quorum_loss::store_facts;
use crate::store::record;
use gossip::Gossip;
use recovery::fenced::{
    AlertKind, CreateResult, GroupFacts, Incarnation, InstanceId, LocalData, PersistedState, Probe,
    Protocol, SeedPlan, SeedRecord, StoreFacts,
};
use recovery::pass::Hold;
use recovery::seeding::SeedFrom;
use tokio::sync::watch;

/// The protocol's I/O, borrowed from the daemon for one pass or message.
pub(super) struct QuorumLossIo<'a> {
    pub ctx: &'a Ctx,
    pub etcd: &'a LocalEtcd,
    pub durable: &'a mut Durable,
    pub view: &'a mut ClusterView,
    pub group: &'a GroupView,
    pub gossip: &'a Gossip,
    pub probe: Probe,
    /// The last problem worth a human's eye (alerts, failed seeds and
    /// joins), for `/status`.
    pub problem: &'a mut Option<String>,
    /// `/status`, so a freeze or a seeding shows while it runs (output
    /// only).
    pub status: &'a watch::Sender<InstanceStatus>,
    /// The format records are written in (the cluster version's).
    pub writing: recovery::cluster_version::Format,
}

impl QuorumLossHost for QuorumLossIo<'_> {
    fn gossip(&self) -> &Gossip {
        self.gossip
    }

    fn group(&self) -> GroupFacts {
        GroupFacts {
            instances: self.group.group.ids().map(str::to_string).collect(),
            certified_gone: self.group.departed.clone(),
        }
    }

    fn membership(&self) -> Option<(Incarnation, Vec<InstanceId>, Vec<InstanceId>)> {
        self.durable
            .state()
            .map(|s| (s.incarnation, s.voting_members.clone(), s.learners.clone()))
    }

    fn probe(&self) -> Probe {
        self.probe.clone()
    }

    fn local_incarnation(&self) -> Incarnation {
        self.durable.incarnation()
    }

    fn etcd_running(&self) -> bool {
        self.etcd.running()
    }

    fn random(&mut self) -> u64 {
        rand::random()
    }

    async fn store_facts(&mut self) -> StoreFacts {
        match &self.ctx.store {
            Some(store) => store_facts::read(store.as_ref(), self.ctx.cluster()).await,
            None => StoreFacts {
                records: recovery::fenced::RecordListing::Failed(
                    "no snapshot store is configured".into(),
                ),
                snapshots: recovery::fenced::SnapshotListing::Failed(
                    "no snapshot store is configured".into(),
                ),
                learners: Default::default(),
            },
        }
    }

    async fn persist(&mut self, state: &PersistedState) -> anyhow::Result<()> {
        self.durable.store_protocol(state)
    }

    async fn freeze(&mut self, reason: &str) -> anyhow::Result<()> {
        self.status.send_modify(|s| {
            s.phase = Phase::Frozen;
            s.ready = false;
            s.next = NextAction {
                action: "stay frozen (promised in a recovery round)".into(),
                reason: reason.into(),
            };
        });
        self.etcd.stop().await
    }

    fn unfreeze(&mut self, _reason: &str) {}

    async fn read_local_data(&mut self) -> LocalData {
        let incarnation = self.durable.incarnation();
        if !matches!(
            self.etcd.data(),
            Ok(crate::local::data_dir::DataState::Present)
        ) {
            return LocalData::empty();
        }
        let dir = self.etcd.data_dir().to_path_buf();
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

    async fn create_record(&mut self, seed: &SeedRecord) -> CreateResult {
        let Some(store) = self.ctx.store.as_deref() else {
            return CreateResult::StoreError("no snapshot store is configured".into());
        };
        let cluster = self.ctx.cluster();
        let ours = facts::incarnation_record(cluster, seed, unix_ms());
        match record::create(store, &ours, self.writing).await {
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

    async fn seed(&mut self, plan: &SeedPlan) -> anyhow::Result<Incarnation> {
        let (incarnation, token_suffix) = match plan {
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
        self.status.send_modify(|s| {
            s.phase = Phase::Seeding;
            s.ready = false;
            s.next = NextAction {
                action: "seed the new incarnation".into(),
                reason: format!("seeding incarnation {incarnation}: {plan:?}"),
            };
        });
        let target = Target {
            incarnation,
            token: facts::token(self.ctx.cluster(), incarnation, token_suffix),
            from: SeedFrom::from(plan),
        };
        let done = Seeding {
            ctx: self.ctx,
            etcd: self.etcd,
            durable: self.durable,
            view: self.view,
            format: self.writing,
        }
        .run(&target)
        .await;
        match &done {
            Ok(()) => *self.problem = None,
            Err(e) => *self.problem = Some(format!("seeding failed, retrying: {e:#}")),
        }
        done.map(|()| incarnation)
    }

    async fn join(&mut self, rec: &SeedRecord) -> anyhow::Result<()> {
        let joined = self.join_incarnation(rec).await;
        match &joined {
            Ok(()) => *self.problem = None,
            Err(e) => {
                *self.problem = Some(format!(
                    "incarnation {} exists; cannot join it yet: {e:#}",
                    rec.incarnation
                ))
            }
        }
        joined
    }

    fn alert(&mut self, kind: &AlertKind, reason: &str) {
        *self.problem = Some(format!("recovery alert {kind:?}: {reason}"));
    }

    fn data_loss(&mut self, incarnation: Incarnation, skipped: &[InstanceId], reason: &str) {
        *self.problem = Some(format!(
            "DATA LOSS accepted for incarnation {incarnation} (skipped {skipped:?}): {reason}"
        ));
    }
}

impl QuorumLossIo<'_> {
    /// Another instance seeds `rec.incarnation`: move the old data aside
    /// and become a new instance of that incarnation; the steady-state
    /// planner then joins it as a learner. Idempotent.
    async fn join_incarnation(&mut self, rec: &SeedRecord) -> anyhow::Result<()> {
        let ours = self.durable.incarnation();
        let k = rec.incarnation;
        if ours >= k {
            return Ok(());
        }
        let store = self.ctx.store_for("joining a new incarnation")?;
        let cluster = self.ctx.cluster();
        // Acted on only when the store confirms it: the record must be
        // there, and be this decision (never a token made up from a claim).
        let token = match record::get(store, cluster, k).await? {
            Some(r) if facts::seed_record(&r, None).same_decision(rec) => r.token,
            Some(r) => anyhow::bail!(
                "the store's record of incarnation {k} (seeded by {}) is not the decision to join (seeded by {}): not acting on it",
                r.seeder,
                rec.value.seeder
            ),
            None => anyhow::bail!(
                "the store holds no record of incarnation {k}: not joining it (a decision is acted on only when the store confirms it)"
            ),
        };
        self.etcd.stop().await?;
        if self.etcd.data()? != crate::local::data_dir::DataState::Empty {
            let moved = self.etcd.move_aside(&format!("incarnation-{ours}"))?;
            tracing::warn!(?moved, "data of the old incarnation moved aside");
        }
        self.durable.persist(
            LocalState::new(cluster, self.ctx.id(), k, token, rec.voters.clone())
                .with_peer_scheme(self.ctx.config.etcd.effective_peer_scheme()),
        )
    }
}

impl Daemon {
    /// Borrows the daemon's parts as the driver's host and runs `f` with
    /// the driver; nothing when the protocol does not run here.
    fn with_quorum_loss<'a>(
        &'a mut self,
        probe: Probe,
    ) -> Option<(&'a mut crate::quorum_loss::driver::Driver, QuorumLossIo<'a>)> {
        let writing = self.cluster_version.writing();
        let Daemon {
            ctx,
            etcd,
            durable,
            view,
            group,
            gossip,
            quorum_loss,
            problem,
            status,
            ..
        } = self;
        let (driver, gossip) = (quorum_loss.as_mut()?, gossip.as_ref()?);
        driver.set_writing(writing);
        Some((
            driver,
            QuorumLossIo {
                ctx,
                etcd,
                durable,
                view,
                group,
                gossip: &gossip.node,
                probe,
                problem,
                status,
                writing,
            },
        ))
    }

    /// The driver's pass, with this pass's own probe.
    pub(super) async fn drive_quorum_loss(&mut self, seen: &Observed) {
        let probe = facts::probe_of(seen.local.as_ref());
        let now = seen.now_ms;
        if let Some((driver, mut io)) = self.with_quorum_loss(probe) {
            driver.pass(&mut io, now).await;
        }
    }

    /// A protocol message from gossip, handled at once.
    pub(super) async fn quorum_loss_message(&mut self, from: &str, bytes: &[u8]) {
        let now = self.started.elapsed().as_millis() as u64;
        // Between passes the own probe is not known: the driver only uses
        // it on its pass.
        if let Some((driver, mut io)) = self.with_quorum_loss(Probe::Failed) {
            driver.message(&mut io, now, from, bytes).await;
        }
        self.show_recovery();
    }

    /// What a held instance does next, in words.
    pub(super) fn held_action(&self) -> &'static str {
        let Some(d) = &self.quorum_loss else {
            return "observe again";
        };
        match d.hold(self.durable.incarnation()).map(|(h, _)| h) {
            Some(Hold::Seeding) => "seed the new incarnation",
            Some(Hold::Joining) => "join the new incarnation",
            Some(Hold::Frozen) => match d.protocol().explain().phase {
                recovery::fenced::ProtocolPhase::Accepted => "stay frozen (accepted a value)",
                _ => "stay frozen (promised in a recovery round)",
            },
            None => "observe again",
        }
    }

    /// The protocol's state for `/status`.
    pub(super) fn protocol(&self) -> Option<&Protocol> {
        self.quorum_loss.as_ref().map(|d| d.protocol())
    }
}
