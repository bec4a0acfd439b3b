//! Incarnation 1: a group of one bootstraps it at start; a larger group
//! forms it over gossip (`recovery::formation` decides who, on positive
//! evidence of emptiness). Both create `incarnations/1` by the store's
//! conditional create (the commit point) and hand the seeding to the one
//! seeding executor (`seeding.rs`).
//!
//! The two keep their own order around the record, for a crash between
//! two steps:
//! - a group of one writes its pending state file (incarnation 1, a new
//!   token, member id unknown) *before* the record: a crash in between
//!   retries with the same token, which the record gate recognises as its
//!   own (`recovery::startup::bootstrap_allowed`);
//! - formation creates the record first (a pending state file would make
//!   this instance look like one that holds state, which blocks formation
//!   everywhere); a crash in between resumes from the instance's own
//!   record, whose token it reuses.
//!
//! What incarnation 1 holds (`recovery::startup::initial_source`):
//! `recovery.bootstrap_from` (a stored snapshot, which must exist), else
//! the newest snapshot the store holds for this cluster, else nothing.

use super::Daemon;
use super::seeding::{Seeding, Target};
use super::signals::Signals;
use crate::base::events::Event;
use crate::base::wall_clock::unix_ms;
use crate::etcd::flags;
use crate::local::state_file::LocalState;
use crate::quorum_loss::facts;
use crate::store::record::{self, IncarnationRecord};
use anyhow::Context;
use recovery::formation::{self, FirstRecord, Formation, PeerFacts, RecordSeeders};
use recovery::pass::Phase;
use recovery::seeding::SeedFrom;
use recovery::startup::{self, InitialSource, RecordSummary};
use std::time::Duration;

/// How long a bootstrap waits between attempts while the store fails.
const STORE_RETRY: Duration = Duration::from_secs(2);

/// How a bootstrap ended.
pub(super) enum Bootstrapped {
    /// etcd runs as incarnation 1.
    Started,
    /// Refused, with the reason (a record of another cluster life exists).
    Refused(String),
    /// A signal came while waiting for the store.
    Signalled,
}

impl Daemon {
    /// What incarnation 1 is seeded from.
    async fn initial_source(&self) -> anyhow::Result<InitialSource> {
        let Some(store) = self.ctx.store.as_deref() else {
            return Ok(InitialSource::Empty);
        };
        let objects = crate::snapshot::listing::list(store, self.ctx.cluster())
            .await
            .context("listing the store's snapshots before seeding")?
            .snapshots;
        let newest = facts::newest_snapshot(&objects).map(|s| s.name);
        let configured = self.ctx.config.recovery.bootstrap_from.as_deref();
        let source = startup::initial_source(configured, newest.as_deref());
        if let (InitialSource::Snapshot { name, .. }, Some(_)) = (&source, configured)
            && store.head(name).await?.is_none()
        {
            anyhow::bail!(
                "recovery.bootstrap_from names {name}, which the store does not hold (see `eco snapshot list`)"
            );
        }
        if let InitialSource::Snapshot { name, reason } = &source {
            tracing::warn!(snapshot = %name, %reason, "seeding incarnation 1 from a snapshot");
        }
        Ok(source)
    }

    /// Seeds incarnation 1 under `token` from `source` (the record exists).
    async fn seed_first(&mut self, token: &str, source: &InitialSource) -> anyhow::Result<()> {
        Seeding {
            ctx: &self.ctx,
            etcd: &self.etcd,
            durable: &mut self.durable,
            view: &mut self.view,
            format: self.cluster_version.writing(),
        }
        .run(&Target {
            incarnation: 1,
            token: token.to_string(),
            from: SeedFrom::from(source),
        })
        .await
    }

    /// A group of one: write the pending state, create `incarnations/1`
    /// (when a store is configured), seed. Store errors are retried until a
    /// signal comes.
    pub(super) async fn bootstrap(
        &mut self,
        signals: &mut Signals,
    ) -> anyhow::Result<Bootstrapped> {
        let pending = self
            .durable
            .state()
            .filter(|s| s.incarnation == 1 && s.member_id.is_none())
            .cloned();
        let state = match pending {
            Some(s) => s,
            None => {
                let token = flags::cluster_token(self.ctx.cluster(), 1, rand::random());
                let id = self.ctx.id().to_string();
                LocalState::new(self.ctx.cluster(), &id, 1, token, vec![id.clone()])
                    .with_peer_scheme(self.ctx.config.etcd.effective_peer_scheme())
            }
        };
        // Written before etcd creates any data: a crash in between leaves a
        // pending bootstrap that is retried with the same token.
        self.durable.persist(state.clone())?;
        self.set_phase(Phase::Bootstrapping);
        let token = state.cluster_token;
        let source = loop {
            match self.initial_source().await {
                Ok(s) => break s,
                Err(e) => {
                    let reason = format!("cannot choose what to seed from: {e:#}; retrying");
                    tracing::error!(%reason);
                    self.show_next("wait for the store", &reason);
                    tokio::select! {
                        _ = signals.recv() => return Ok(Bootstrapped::Signalled),
                        _ = tokio::time::sleep(STORE_RETRY) => {}
                    }
                }
            }
        };
        if self.ctx.store.is_some() {
            loop {
                match self.create_first_record(&token, &source).await {
                    Ok(Ok(())) => break,
                    Ok(Err(refusal)) => return Ok(Bootstrapped::Refused(refusal)),
                    Err(e) => {
                        let reason = format!(
                            "the store cannot be read or written ({e:#}); an error is never read as empty: retrying"
                        );
                        tracing::error!(%reason, "bootstrap waits for the store");
                        self.show_next("wait for the store", &reason);
                        tokio::select! {
                            _ = signals.recv() => return Ok(Bootstrapped::Signalled),
                            _ = tokio::time::sleep(STORE_RETRY) => {}
                        }
                    }
                }
            }
        }
        self.seed_first(&token, &source).await?;
        Ok(Bootstrapped::Started)
    }

    /// A bootstrap's record: allowed only over no record or its own retry.
    async fn create_first_record(
        &mut self,
        token: &str,
        source: &InitialSource,
    ) -> anyhow::Result<Result<(), String>> {
        let store = self.ctx.store_for("bootstrapping")?;
        let existing = record::all(store, self.ctx.cluster()).await?;
        let summaries: Vec<RecordSummary> = existing
            .values()
            .map(|r| RecordSummary {
                incarnation: r.incarnation,
                seeder: r.seeder.clone(),
                token: r.token.clone(),
            })
            .collect();
        if let Err(refusal) = startup::bootstrap_allowed(&summaries, self.ctx.id(), token) {
            return Ok(Err(refusal));
        }
        let ours = self.first_record(token, source);
        let holds = record::create(store, &ours, self.cluster_version.writing()).await?;
        match formation::first_record(&holds.seeder, &holds.token, &ours.seeder, &ours.token) {
            FirstRecord::Ours => {
                // A cluster this instance formed: finalized at once if every
                // instance reads this build's format (cluster_version).
                self.cluster_version.formed_here = true;
                Ok(Ok(()))
            }
            FirstRecord::Theirs { seeder } => Ok(Err(format!(
                "incarnation 1 was created concurrently by {seeder} with another token: that record wins"
            ))),
        }
    }

    fn first_record(&self, token: &str, source: &InitialSource) -> IncarnationRecord {
        IncarnationRecord {
            cluster: self.ctx.cluster().to_string(),
            incarnation: 1,
            seeder: self.ctx.id().to_string(),
            token: token.to_string(),
            source: source.record_source(),
            created_unix_ms: unix_ms(),
            seed: None,
        }
    }

    /// No cluster answers and this instance is empty: form one if the
    /// evidence says so, else say what formation waits for.
    pub(super) async fn form(&mut self) -> anyhow::Result<()> {
        let Some(g) = &self.gossip else {
            self.show_next(
                "wait to form the cluster",
                "no cluster answers and gossip is not configured (gossip.key_file or ECO_GOSSIP_KEYS): eco cannot collect the evidence needed to form one",
            );
            return Ok(());
        };
        let mut peers = facts::formation_peers(
            &g.node.view(),
            tokio::time::Instant::now(),
            self.ctx.protocol.peer_fresh,
        );
        let records = match self.ctx.store.as_deref() {
            None => RecordSeeders::Failed(
                "no snapshot store is configured (it holds the record of truth)".into(),
            ),
            Some(store) => match record::all(store, self.ctx.cluster()).await {
                Ok(all) => RecordSeeders::Complete(
                    all.iter().map(|(n, r)| (*n, r.seeder.clone())).collect(),
                ),
                Err(e) => RecordSeeders::Failed(e.to_string()),
            },
        };
        let group: Vec<String> = self.group.group.ids().map(str::to_string).collect();
        peers.insert(
            self.ctx.id().to_string(),
            PeerFacts {
                reachable: true,
                has_state: self.durable.state().is_some(),
                data_present: false,
            },
        );
        match formation::decide(self.ctx.id(), &group, &peers, &records, false) {
            Formation::Wait { reason } => {
                self.show_next("wait to form the cluster", &reason);
                Ok(())
            }
            Formation::Seed { reason } => {
                crate::event!(info, Event::ClusterForming, %reason, "forming the cluster");
                self.show_next("seed incarnation 1", &reason);
                self.form_first().await
            }
        }
    }

    /// Formation's seeding: the record first (reusing this instance's own
    /// record of an interrupted formation), then the seeding executor.
    async fn form_first(&mut self) -> anyhow::Result<()> {
        let store = self.ctx.store_for("forming a cluster")?;
        let cluster = self.ctx.cluster();
        let existing = record::all(store, cluster).await?;
        let token = match existing.get(&1) {
            Some(r) if r.seeder == self.ctx.id() => r.token.clone(),
            Some(r) => anyhow::bail!(
                "incarnation 1 was seeded by {}; joining it instead",
                r.seeder
            ),
            None => flags::cluster_token(cluster, 1, rand::random()),
        };
        let source = self.initial_source().await?;
        let ours = self.first_record(&token, &source);
        let holds = record::create(store, &ours, self.cluster_version.writing()).await?;
        if let FirstRecord::Theirs { seeder } =
            formation::first_record(&holds.seeder, &holds.token, &ours.seeder, &ours.token)
        {
            anyhow::bail!("incarnation 1 was created by {seeder} first; that record wins");
        }
        // A cluster this instance formed: finalized at once if every
        // instance reads this build's format (cluster_version).
        self.cluster_version.formed_here = true;
        self.seed_first(&token, &source).await
    }
}
