//! `eco run`: gather what this instance knows, decide with pure code, act.
//!
//! Start: the start decision ([`crate::startup::decide`]) bootstraps a group
//! of one (creating `incarnations/1` in the store by conditional create when
//! a store is configured), resumes an instance with its data, hands a new or
//! stale instance to the planner, or refuses. Then, every probe interval:
//! observe the cluster ([`ClusterView`]), run the steady-state planner
//! (`recovery::planner::plan`), publish its first step and reason in
//! `/status`, and execute the steps in order. The snapshot writer runs
//! beside the loop.
//!
//! A multi-instance group forms its first cluster with
//! `recovery::formation` (`Daemon::form`). Quorum loss is handled by the
//! fenced seeding protocol (`recovery::fenced`), driven in
//! `daemon/fencing.rs`: while it holds this instance (frozen by a promise,
//! or seeding), the steady-state planner does not act.

mod fencing;
mod initial_seed;
mod restore_here;

use crate::cluster_view::{ClusterView, Seen};
use crate::config::Config;
use crate::data_dir::{self, DataDirContents};
use crate::etcd::binaries::{self, EtcdBinaries};
use crate::etcd::flags::{self, InitialClusterState, LaunchSpec};
use crate::etcd::members::{self, MembershipError};
use crate::etcd::probe;
use crate::etcd::supervisor::{Backoff, ProcessSpec, Supervisor};
use crate::fencing::facts::LeaderSightings;
use crate::fencing::protocol_file::ProtocolFile;
use crate::metrics::Metrics;
use crate::provider::{Group, Instance, Provider, StaticProvider};
use crate::record::{self, IncarnationRecord, VotersRecord};
use crate::snapshot::writer::SnapshotWriter;
use crate::startup::{self, GroupShape, StartDecision};
use crate::state_file::{self, LocalState, StateFile};
use crate::status::{GossipPeer, InstanceStatus, NextAction, Phase};
use crate::store::dir::DirStore;
use anyhow::Context;
use fencing::Fencing;
use gossip::{Gossip, GossipConfig, Keyring, Liveness};
use recovery::formation::{self, Formation, PeerFacts, RecordListing};
use recovery::planner::{self, Action, DataState, LocalFacts, Observation, PlannerConfig, Step};
use recovery::retention::RetentionPolicy;
use recovery::snapshot_schedule::SnapshotSchedule;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::watch;

/// How the daemon ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Exit {
    /// Stopped by SIGTERM/SIGINT after stopping etcd.
    Signalled,
}

/// Everything the running daemon holds.
struct Daemon {
    config: Config,
    id: String,
    me: Instance,
    client_url: String,
    peer_url: String,
    provider: StaticProvider,
    group: Group,
    binaries: EtcdBinaries,
    supervisor: Supervisor,
    status: watch::Sender<InstanceStatus>,
    state_file: StateFile,
    state: Option<LocalState>,
    data_dir: PathBuf,
    pid_file: PathBuf,
    store: Option<DirStore>,
    view: ClusterView,
    started: Instant,
    voters_written: Option<VotersRecord>,
    gossip: Option<Gossip>,
    published: Option<gossip::PeerState>,
    /// Newest incarnation recorded in the store (and when it was read).
    newest_recorded: Option<(Option<u64>, Instant)>,
    /// The quorum-loss protocol (with gossip and a store configured).
    fencing: Option<Fencing>,
    gossip_events: Option<tokio::sync::mpsc::UnboundedReceiver<gossip::Event>>,
}

/// Gossip keys from `gossip.key_file`, else `ECO_GOSSIP_KEYS` (hex keys
/// separated by commas or newlines); `None` when neither is set.
fn gossip_keys(config: &Config) -> anyhow::Result<Option<Keyring>> {
    let text = match &config.gossip.key_file {
        Some(path) => std::fs::read_to_string(path)
            .with_context(|| format!("cannot read gossip.key_file {}", path.display()))?,
        None => match std::env::var("ECO_GOSSIP_KEYS") {
            Ok(v) => v.replace(',', "\n"),
            Err(_) => return Ok(None),
        },
    };
    Ok(Some(
        Keyring::parse(&text, &config.cluster.name).context("gossip keys")?,
    ))
}

fn gossip_addr(config: &Config, instance: &Instance) -> SocketAddr {
    SocketAddr::new(instance.address, config.gossip.port as u16)
}

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis() as u64
}

fn action_name(a: &Action) -> &'static str {
    match a {
        Action::StartEtcd { .. } => "start etcd",
        Action::StopEtcd => "stop etcd",
        Action::MoveDataAside { .. } => "move the data directory aside",
        Action::JoinAsLearner { .. } => "join as a learner",
        Action::Promote { .. } => "promote a learner",
        Action::RemoveMember { .. } => "remove a member",
        Action::RecordMemberId { .. } => "record the member id",
        Action::Wait => "wait",
        Action::Nothing => "keep etcd running",
    }
}

pub async fn run(config: Config, instance_id: String) -> anyhow::Result<Exit> {
    let provider = match config.provider.static_group.as_ref() {
        Some(s) => StaticProvider::new(s.group_file.clone(), instance_id.clone()),
        None => anyhow::bail!("provider.static is required for provider.kind = \"static\""),
    };
    let group = provider
        .discover()
        .await
        .context("cannot discover the group")?;
    let me = group
        .me()
        .cloned()
        .context("this instance is missing from its own group")?;
    let binaries = binaries::find(&config.etcd)
        .await
        .context("cannot use etcd")?;
    tracing::info!(etcd = %binaries.etcd.display(), version = %binaries.version, etcdutl = ?binaries.etcdutl, "found etcd");
    // Never ignore a setting silently.
    let data_dir = config.etcd.data_dir.clone();
    data_dir::prepare_parent(&data_dir)?;
    let state_file = StateFile::beside(&data_dir);
    let mut state = state_file.load_for(&config.cluster.name, &instance_id)?;
    if let Some(s) = state.as_mut() {
        s.boots += 1;
        state_file.store(s)?;
    }
    let mut contents = data_dir::inspect(&data_dir)?;
    let pid_file = state_file.path().with_file_name("etcd.pid");
    let client_url = flags::client_url(&config.etcd, me.address);
    let peer_url = flags::peer_url(&config.etcd, me.address);
    let store = crate::commands::store_from_config(&config).ok();
    let protocol_file = ProtocolFile::beside(&data_dir);
    let persisted = protocol_file
        .load()
        .context("the recovery state file (a promise must never be forgotten)")?
        .or_else(|| {
            // First start with this state file (or of this version): the
            // protocol starts from the incarnation and V_n it records.
            state.as_ref().map(|s| recovery::fenced::PersistedState {
                incarnation: s.incarnation,
                voters: s.voting_members.clone(),
                ..Default::default()
            })
        });
    // Frozen by a promise, or the seeder of a new incarnation: the old
    // incarnation's etcd must not start, and its data is the seed.
    let held = persisted
        .as_ref()
        .is_some_and(|p| p.frozen || p.seed_pending);
    // Never start etcd for an incarnation older than the newest recorded.
    if let (Some(s), Some(st), false) = (state.as_ref(), store.as_ref(), held) {
        let newest = record::newest(st, &config.cluster.name)
            .await
            .ok()
            .flatten()
            .map(|r| r.incarnation);
        if let Some(reason) = startup::stale_incarnation(s, newest) {
            tracing::warn!(%reason, "stale incarnation");
            data_dir::move_aside(
                &data_dir,
                "stale-incarnation",
                config.etcd.keep_moved_aside as usize,
            )?;
            state_file.move_aside()?;
            state = None;
            contents = data_dir::inspect(&data_dir)?;
        }
    }
    let decision = startup::decide(
        state.as_ref(),
        contents,
        GroupShape {
            instances: group.instances.len(),
        },
    );
    tracing::info!(decision = ?decision, "start decision");

    let (status_tx, status_rx) = watch::channel(InstanceStatus {
        instance_id: instance_id.clone(),
        cluster: config.cluster.name.clone(),
        eco_version: crate::version::VERSION.to_string(),
        etcd_version: binaries.version.to_string(),
        client_url: client_url.clone(),
        peer_url: peer_url.clone(),
        phase: Phase::Starting,
        next: NextAction {
            action: "start".into(),
            reason: decision.reason().into(),
        },
        ready: false,
        process: Default::default(),
        member: None,
        probe_error: None,
        group: Some(group.clone()),
        state: state.clone(),
        snapshots: None,
        gossip: Vec::new(),
        members: Vec::new(),
        recovery: None,
    });
    let metrics = Arc::new(Metrics::new(&instance_id, &binaries.version.to_string()));
    let (shutdown_tx, shutdown_rx) = watch::channel(false);
    let api_bind = config
        .api
        .bind
        .unwrap_or_else(|| SocketAddr::new(me.address, config.api.port as u16));
    let mut api_shutdown = shutdown_rx.clone();
    let api = crate::api::serve(api_bind, status_rx, metrics, async move {
        let _ = api_shutdown.wait_for(|s| *s).await;
    })
    .await?;
    tracing::info!(%api_bind, "serving /healthz, /readyz, /metrics and /status");
    let mut signals = Signals::new()?;
    let mut gossip_events = None;
    let gossip = match gossip_keys(&config)? {
        Some(keys) => {
            let bind = config
                .gossip
                .bind
                .unwrap_or_else(|| gossip_addr(&config, &me));
            let seeds = group
                .instances
                .iter()
                .map(|i| gossip_addr(&config, i))
                .collect();
            let mut gc =
                GossipConfig::lan(&config.cluster.name, &instance_id, keys, seeds, unix_ms());
            gc.advertise = Some(gossip_addr(&config, &me));
            let (g, events) = Gossip::bind(bind, gc, gossip::PeerState::default())
                .await
                .context("cannot start gossip (gossip.bind / gossip.port)")?;
            gossip_events = Some(events);
            tracing::info!(%bind, "gossip started");
            Some(g)
        }
        None => {
            if group.instances.len() > 1 {
                tracing::warn!(
                    "no gossip keys (gossip.key_file or ECO_GOSSIP_KEYS): this instance cannot take part in forming a cluster"
                );
            }
            None
        }
    };
    let supervisor = Supervisor::new(Backoff {
        initial: config.etcd.restart_backoff_initial.get(),
        max: config.etcd.restart_backoff_max.get(),
        stable_after: Duration::from_secs(60),
        stop_timeout: config.etcd.stop_timeout.get(),
    })?;

    let fencing = match (&gossip, &store) {
        (Some(_), Some(_)) => {
            let t = config.recovery.quorum_loss_timeout.get().as_millis() as u64;
            let cfg = recovery::fenced::ProtocolConfig {
                quorum_loss_timeout: t,
                takeover_after: t.min(15_000),
                takeover_jitter: t.min(15_000),
                accept_loss_after: config
                    .recovery
                    .accept_loss_after
                    .map(|d| d.get().as_millis() as u64),
                seeds_bootstrap: false,
                ..Default::default()
            };
            let protocol =
                recovery::fenced::Protocol::new(&instance_id, rand::random(), cfg, persisted);
            Some(Fencing {
                protocol,
                file: protocol_file,
                sightings: LeaderSightings::default(),
                store_read_at: None,
                pending_seed: None,
                join_pending: false,
                acted: false,
            })
        }
        _ => {
            if group.instances.len() > 1 {
                tracing::warn!(
                    "quorum-loss recovery needs gossip keys and a snapshot store; without them a lost quorum waits for a human"
                );
            }
            None
        }
    };

    let mut d = Daemon {
        view: ClusterView::new(config.etcd.call_timeout.get()),
        config,
        id: instance_id,
        me,
        client_url,
        peer_url,
        provider,
        group,
        binaries,
        supervisor,
        status: status_tx,
        state_file,
        state,
        data_dir,
        pid_file,
        store,
        started: Instant::now(),
        voters_written: None,
        gossip,
        published: None,
        newest_recorded: None,
        fencing,
        gossip_events,
    };
    // Effects owed after a restart: stay frozen, finish a seeding.
    if let Some(f) = d.fencing.as_mut() {
        let owed = f.protocol.start(0);
        for e in owed {
            if let recovery::fenced::EffectKind::Seed(plan) = e.kind {
                tracing::warn!(reason = %e.reason, "resuming an interrupted seeding");
                f.pending_seed = Some(plan);
            } else {
                tracing::warn!(reason = %e.reason, "recovery state at start");
            }
        }
    }

    let go_on = match &decision {
        StartDecision::Refuse { reason } => Err(reason.clone()),
        StartDecision::Bootstrap { reason } => {
            tracing::info!(%reason, "bootstrapping");
            d.bootstrap(&mut signals).await?
        }
        StartDecision::Resume { .. } if held => {
            tracing::warn!(
                "the recovery state holds this instance (frozen or seeding): etcd of the old incarnation is not started"
            );
            Ok(true)
        }
        StartDecision::Resume { .. } => {
            let own = vec![(d.id.clone(), d.peer_url.clone())];
            d.start_etcd(own, InitialClusterState::Existing).await?;
            Ok(true)
        }
        StartDecision::Join { reason } => {
            tracing::info!(%reason, "joining through the planner");
            Ok(true)
        }
    };
    let result = match go_on {
        Err(reason) => {
            tracing::error!(%reason, "not starting etcd");
            d.status.send_modify(|s| {
                s.phase = Phase::Refused;
                s.next = NextAction {
                    action: "wait for a human".into(),
                    reason,
                };
            });
            // Stay up so /status explains the refusal; leave on a signal.
            signals.recv().await;
            Ok(Exit::Signalled)
        }
        Ok(false) => Ok(Exit::Signalled),
        Ok(true) => d.run_with_writer(&mut signals).await,
    };
    d.status.send_modify(|s| s.ready = false);
    tracing::info!("stopping etcd");
    d.supervisor.stop().await?;
    if let Some(g) = d.gossip.take() {
        g.shutdown().await;
    }
    d.supervisor.shutdown();
    let _ = shutdown_tx.send(true);
    let _ = api.await;
    result
}

impl Daemon {
    fn persist(&mut self, state: LocalState) -> anyhow::Result<()> {
        self.state_file.store(&state)?;
        self.state = Some(state);
        let copy = self.state.clone();
        self.status.send_modify(|s| s.state = copy);
        Ok(())
    }

    fn set_next(&self, action: &str, reason: &str) {
        self.status.send_modify(|s| {
            s.next = NextAction {
                action: action.into(),
                reason: reason.into(),
            };
        });
    }

    /// A group of one: write the pending state, create `incarnations/1` in
    /// the store (when there is one), start etcd as a new cluster.
    /// `Ok(Err(reason))` refuses; `Ok(Ok(false))` means a signal came.
    async fn bootstrap(&mut self, signals: &mut Signals) -> anyhow::Result<Result<bool, String>> {
        let s = match self.state.clone() {
            Some(pending) => pending,
            None => LocalState {
                format: state_file::FORMAT,
                cluster_name: self.config.cluster.name.clone(),
                instance_id: self.id.clone(),
                incarnation: 1,
                cluster_token: flags::cluster_token(&self.config.cluster.name, 1, rand::random()),
                member_id: None,
                voting_members: vec![self.id.clone()],
                boots: 1,
            },
        };
        // Written before etcd creates any data: a crash in between leaves a
        // pending bootstrap that is retried with the same token.
        self.persist(s.clone())?;
        self.status
            .send_modify(|st| st.phase = Phase::Bootstrapping);
        let initial = loop {
            match self.initial_source().await {
                Ok(i) => break i,
                Err(e) => {
                    let reason = format!("cannot choose what to seed from: {e:#}; retrying");
                    tracing::error!(%reason);
                    self.set_next("wait for the store", &reason);
                    tokio::select! {
                        _ = signals.recv() => return Ok(Ok(false)),
                        _ = tokio::time::sleep(Duration::from_secs(2)) => {}
                    }
                }
            }
        };
        if let Some(store) = &self.store {
            loop {
                let attempt = async {
                    let existing = record::all(store, &self.config.cluster.name).await?;
                    let list: Vec<(u64, String, String)> = existing
                        .iter()
                        .map(|(n, r)| (*n, r.seeder.clone(), r.token.clone()))
                        .collect();
                    if let Err(reason) =
                        startup::bootstrap_allowed(&list, &self.id, &s.cluster_token)
                    {
                        return Ok::<_, record::RecordError>(Err(reason));
                    }
                    let ours = IncarnationRecord {
                        cluster: self.config.cluster.name.clone(),
                        incarnation: 1,
                        seeder: self.id.clone(),
                        token: s.cluster_token.clone(),
                        source: initial.record_source(),
                        created_unix_ms: unix_ms(),
                        seed: None,
                    };
                    let holds = record::create(store, &ours).await?;
                    if holds.seeder != ours.seeder || holds.token != ours.token {
                        return Ok(Err(format!(
                            "incarnation 1 was created concurrently by {} with another token: that record wins",
                            holds.seeder
                        )));
                    }
                    Ok(Ok(()))
                };
                match attempt.await {
                    Ok(Ok(())) => break,
                    Ok(Err(reason)) => return Ok(Err(reason)),
                    Err(e) => {
                        let reason = format!(
                            "the store cannot be read or written ({e}); an error is never read as empty: retrying"
                        );
                        tracing::error!(%reason, "bootstrap waits for the store");
                        self.set_next("wait for the store", &reason);
                        tokio::select! {
                            _ = signals.recv() => return Ok(Ok(false)),
                            _ = tokio::time::sleep(Duration::from_secs(2)) => {}
                        }
                    }
                }
            }
        }
        self.restore_initial(&initial, &s.cluster_token).await?;
        let own = vec![(self.id.clone(), self.peer_url.clone())];
        self.start_etcd(own, InitialClusterState::New).await?;
        Ok(Ok(true))
    }

    async fn start_etcd(
        &mut self,
        initial_cluster: Vec<(String, String)>,
        state: InitialClusterState,
    ) -> anyhow::Result<()> {
        let token = self
            .state
            .as_ref()
            .map(|s| s.cluster_token.clone())
            .context("no state: cannot start etcd")?;
        crate::etcd::supervisor::kill_leftover(&self.pid_file, &self.data_dir).await;
        let running = self.supervisor.status().borrow().running;
        if !running {
            crate::preflight::ports_free(
                self.me.address,
                &[
                    ("etcd.client_port", self.config.etcd.client_port),
                    ("etcd.peer_port", self.config.etcd.peer_port),
                    ("etcd.metrics_port", self.config.etcd.metrics_port),
                ],
            )?;
        }
        let spec = LaunchSpec {
            name: self.id.clone(),
            data_dir: self.data_dir.clone(),
            address: self.me.address,
            initial_cluster,
            initial_state: state,
            token,
        };
        self.supervisor
            .start(ProcessSpec {
                binary: self.binaries.etcd.clone(),
                args: flags::etcd_args(&self.config.etcd, &spec),
                instance_id: self.id.clone(),
                log_file: self.config.etcd.log_file.clone(),
                pid_file: self.pid_file.clone(),
                data_dir: self.data_dir.clone(),
            })
            .await?;
        Ok(())
    }

    async fn run_with_writer(&mut self, signals: &mut Signals) -> anyhow::Result<Exit> {
        let (writer_stop, writer_stop_rx) = watch::channel(false);
        let writer = self.store.as_ref().map(|store| {
            let c = &self.config;
            tokio::spawn(
                SnapshotWriter {
                    store: DirStore::new(store.root().to_path_buf()),
                    cluster: c.cluster.name.clone(),
                    instance: self.id.clone(),
                    endpoint: self.client_url.clone(),
                    schedule: SnapshotSchedule {
                        interval_ms: c.snapshot.interval.get().as_millis() as u64,
                        max_age_ms: c.snapshot.max_age.get().as_millis() as u64,
                    },
                    policy: RetentionPolicy {
                        keep_last: c.snapshot.keep_last,
                        keep_hourly: c.snapshot.keep_hourly,
                        keep_daily: c.snapshot.keep_daily,
                    },
                    timeout: c.etcd.call_timeout.get(),
                    check_every: c.etcd.probe_interval.get().max(Duration::from_secs(1)),
                }
                .run(self.status.clone(), writer_stop_rx),
            )
        });
        let result = self.run_loop(signals).await;
        self.status.send_modify(|s| {
            s.phase = Phase::Stopping;
            s.next = NextAction {
                action: "stop".into(),
                reason: "eco is shutting down: final snapshot if this instance writes them, then etcd is stopped".into(),
            };
        });
        if let Some(task) = writer {
            let _ = writer_stop.send(true);
            let limit = self.config.etcd.call_timeout.get() * 10;
            if tokio::time::timeout(limit, task).await.is_err() {
                tracing::error!(
                    ?limit,
                    "the final snapshot did not finish in time; stopping etcd anyway"
                );
            }
        }
        result
    }

    async fn run_loop(&mut self, signals: &mut Signals) -> anyhow::Result<Exit> {
        let mut tick = tokio::time::interval(self.config.etcd.probe_interval.get());
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let refresh = self
            .config
            .provider
            .static_group
            .as_ref()
            .map(|s| s.refresh_interval.get());
        let mut group_tick = tokio::time::interval(refresh.unwrap_or(Duration::from_secs(5)));
        group_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut process = self.supervisor.status();
        let mut events = self.gossip_events.take();
        loop {
            tokio::select! {
                _ = signals.recv() => return Ok(Exit::Signalled),
                Some(event) = async {
                    match events.as_mut() {
                        Some(rx) => rx.recv().await,
                        None => std::future::pending().await,
                    }
                } => {
                    if let gossip::Event::Message { from, bytes } = event {
                        self.fence_message(&from, &bytes).await;
                    }
                }
                changed = process.changed() => {
                    if changed.is_err() {
                        anyhow::bail!("the etcd supervisor stopped unexpectedly");
                    }
                    let p = process.borrow_and_update().clone();
                    self.status.send_modify(|s| {
                        if !p.running {
                            s.ready = false;
                        }
                        s.process = p;
                    });
                }
                _ = tick.tick() => {
                    if let Err(e) = self.step().await {
                        tracing::warn!(error = %format!("{e:#}"), "this pass did not finish; planning again next tick");
                    }
                }
                _ = group_tick.tick() => match self.provider.discover().await {
                    Ok(group) => {
                        if let Some(g) = &self.gossip {
                            let _ = g.set_seeds(group.instances.iter().map(|i| gossip_addr(&self.config, i)).collect());
                        }
                        self.group = group.clone();
                        self.status.send_modify(|s| s.group = Some(group));
                    }
                    Err(e) => tracing::error!(error = %e, "cannot refresh the group"),
                },
            }
        }
    }

    /// One pass: observe, plan, act.
    async fn step(&mut self) -> anyhow::Result<()> {
        tracing::debug!("pass");
        let process = self.supervisor.status().borrow().clone();
        let running = process.running || process.restart_in_ms.is_some();
        let local = if process.running {
            self.view.local(&self.client_url).await
        } else {
            None
        };
        let held = self.fencing.as_ref().is_some_and(|f| f.holds());
        let newest = self.newest_incarnation().await;
        let ours = self.state.as_ref().map(|s| s.incarnation);
        let in_newest = match (newest, ours) {
            (Some(n), Some(o)) => o >= n,
            _ => true,
        };
        if !in_newest {
            tracing::warn!(
                ?newest,
                ?ours,
                "this member is not in the newest incarnation: not ready"
            );
        }
        self.status.send_modify(|s| {
            // Ready needs a leader in the newest incarnation: a frozen
            // minority of an old incarnation serves stale reads.
            s.ready = in_newest && local.as_ref().is_some_and(|m| m.has_leader());
            s.probe_error = match (&local, process.running) {
                (None, true) => Some(format!("{} does not answer", self.client_url)),
                _ => None,
            };
            s.member = local.clone();
            s.phase = match (held, s.ready) {
                (true, _) if s.phase == Phase::Seeding => Phase::Seeding,
                (true, _) => Phase::Frozen,
                (false, true) => Phase::Running,
                (false, false) => Phase::Starting,
            };
        });
        let mut candidates = Vec::new();
        if process.running {
            candidates.push(self.client_url.clone());
        }
        for i in self.group.instances.iter().filter(|i| i.id != self.id) {
            candidates.push(flags::client_url(&self.config.etcd, i.address));
        }
        let seen = self.view.observe(&candidates).await;
        let rows: Vec<crate::status::MemberRow> = seen
            .members
            .as_ref()
            .map(|(list, _)| {
                list.iter()
                    .map(|m| {
                        let st = seen.statuses.get(&m.id);
                        crate::status::MemberRow {
                            id: format!("{:x}", m.id),
                            name: m.name.clone(),
                            learner: m.is_learner,
                            leader: st.is_some_and(|s| s.is_leader()),
                            healthy: st.is_some_and(|s| s.has_leader()),
                            revision: st.map(|s| s.revision),
                        }
                    })
                    .collect()
            })
            .unwrap_or_default();
        self.status.send_modify(|s| s.members = rows);
        let now_ms = self.started.elapsed().as_millis() as u64;
        let data = match data_dir::inspect(&self.data_dir)? {
            DataDirContents::Empty => DataState::Empty,
            DataDirContents::EtcdData => DataState::Present,
            DataDirContents::Other => DataState::Unusable,
        };
        self.publish(&local, data, running);
        self.fence_pass(local.as_ref(), now_ms).await;
        if self.fencing.as_ref().is_some_and(|f| f.blocks_planner()) {
            // Frozen or seeding (the protocol's explanation is the next
            // action), or the protocol just changed etcd: no steady-state
            // action on this pass's stale observation.
            return Ok(());
        }
        if seen.members.is_none()
            && !running
            && data == DataState::Empty
            && self.group.instances.len() > 1
        {
            let pending = self
                .state
                .as_ref()
                .is_none_or(|s| s.member_id.is_none() && s.incarnation == 1);
            if pending {
                return self.form().await;
            }
        }
        let observation = Observation {
            now_ms,
            local: LocalFacts {
                instance_id: self.id.clone(),
                peer_url: self.peer_url.clone(),
                recorded_member_id: self.state.as_ref().and_then(|s| s.member_id),
                data,
                etcd_running: running,
                is_leader: local.as_ref().is_some_and(|m| m.is_leader()),
            },
            group: self
                .group
                .instances
                .iter()
                .map(|i| (i.id.clone(), flags::peer_url(&self.config.etcd, i.address)))
                .collect(),
            desired_size: self.group.desired_size,
            members: self.view.facts(&seen, now_ms),
            config: PlannerConfig {
                unhealthy_member_ttl_ms: self.config.recovery.unhealthy_member_ttl.get().as_millis()
                    as u64,
                learner_timeout_ms: self.config.recovery.learner_timeout.get().as_millis() as u64,
            },
        };
        let plan = planner::plan(&observation);
        tracing::debug!(?plan, "planned");
        if let Some(next) = plan.next() {
            self.set_next(action_name(&next.action), &next.reason);
        }
        for step in &plan.steps {
            if matches!(step.action, Action::Nothing | Action::Wait) {
                continue;
            }
            tracing::info!(action = action_name(&step.action), reason = %step.reason, "acting");
            match self.execute(step, &seen).await {
                Ok(()) => {}
                Err(e) => {
                    let wait = e
                        .downcast_ref::<MembershipError>()
                        .is_some_and(|m| m.is_wait());
                    if wait {
                        tracing::info!(reason = %e, "waiting");
                        self.set_next("wait", &format!("{}: {e}", step.reason));
                        return Ok(());
                    }
                    return Err(e.context(step.reason.clone()));
                }
            }
        }
        self.keep_voters(&seen, observation.local.is_leader).await;
        Ok(())
    }

    async fn client_for(&self, endpoint: &str) -> anyhow::Result<etcd_client::Client> {
        Ok(probe::connect(endpoint, self.config.etcd.call_timeout.get()).await?)
    }

    /// The incarnation and token of the cluster to join: the store's newest
    /// record (the record of truth), else this instance's state.
    async fn cluster_identity(&self) -> anyhow::Result<(u64, String)> {
        if let Some(store) = &self.store {
            if let Some(r) = record::newest(store, &self.config.cluster.name).await? {
                return Ok((r.incarnation, r.token));
            }
        }
        if let Some(s) = &self.state {
            return Ok((s.incarnation, s.cluster_token.clone()));
        }
        anyhow::bail!(
            "the cluster's incarnation is unknown: joining needs the snapshot store (the record of truth) configured and holding a record of this cluster"
        )
    }

    async fn fresh_state(&self, member_id: u64, voters: Vec<String>) -> anyhow::Result<LocalState> {
        let (incarnation, token) = self.cluster_identity().await?;
        Ok(LocalState {
            format: state_file::FORMAT,
            cluster_name: self.config.cluster.name.clone(),
            instance_id: self.id.clone(),
            incarnation,
            cluster_token: token,
            member_id: Some(member_id),
            voting_members: voters,
            boots: self.state.as_ref().map(|s| s.boots).unwrap_or(1),
        })
    }

    async fn execute(&mut self, step: &Step, seen: &Seen) -> anyhow::Result<()> {
        let timeout = self.config.etcd.call_timeout.get();
        match &step.action {
            Action::Nothing | Action::Wait => {}
            Action::StartEtcd { initial_cluster } => {
                self.start_etcd(initial_cluster.clone(), InitialClusterState::Existing)
                    .await?;
            }
            Action::StopEtcd => self.supervisor.stop().await?,
            Action::MoveDataAside { why } => {
                self.supervisor.stop().await?;
                data_dir::move_aside(
                    &self.data_dir,
                    why,
                    self.config.etcd.keep_moved_aside as usize,
                )?;
            }
            Action::RecordMemberId { member_id } => {
                let state = match self.state.clone() {
                    Some(mut s) => {
                        s.member_id = Some(*member_id);
                        s
                    }
                    None => self.fresh_state(*member_id, Vec::new()).await?,
                };
                self.persist(state)?;
            }
            Action::JoinAsLearner { peer_url } => {
                // The group may have changed since the last refresh (this
                // instance may just have been removed from it): re-read it
                // before adding a member.
                let group = self.provider.discover().await?;
                let still_in_group = group.me().is_some();
                self.group = group;
                if !still_in_group {
                    tracing::info!("this instance left the group; not joining");
                    return Ok(());
                }
                let endpoint = seen
                    .healthy_endpoint()
                    .context("no healthy member to add this instance through")?;
                // Know the cluster's identity before changing membership.
                let (incarnation, token) = self.cluster_identity().await?;
                let mut client = self.client_for(&endpoint).await?;
                let (added, list) = members::add_learner(&mut client, peer_url, timeout).await?;
                let voters = list
                    .iter()
                    .filter(|m| !m.is_learner && !m.name.is_empty())
                    .map(|m| m.name.clone())
                    .collect();
                let mut state = self.fresh_state(added.id, voters).await?;
                state.incarnation = incarnation;
                state.cluster_token = token;
                self.persist(state)?;
                let initial: Vec<(String, String)> = list
                    .iter()
                    .flat_map(|m| {
                        let name = if m.id == added.id {
                            self.id.clone()
                        } else {
                            m.name.clone()
                        };
                        m.peer_urls.iter().map(move |u| (name.clone(), u.clone()))
                    })
                    .filter(|(name, _)| !name.is_empty())
                    .collect();
                tracing::info!(
                    member_id = format!("{:x}", added.id),
                    "added as a learner; starting etcd"
                );
                self.start_etcd(initial, InitialClusterState::Existing)
                    .await?;
            }
            Action::Promote { member_id, name } => {
                let mut client = self.client_for(&self.client_url).await?;
                members::promote(&mut client, *member_id, timeout).await?;
                tracing::info!(member_id = format!("{member_id:x}"), %name, "promoted a learner to voter");
            }
            Action::RemoveMember { member_id, name } => {
                let endpoint = seen
                    .healthy_endpoint()
                    .context("no healthy member to remove the member through")?;
                self.snapshot_before(&endpoint, &format!("removing member {name}"))
                    .await;
                let mut client = self.client_for(&endpoint).await?;
                match members::remove(&mut client, *member_id, timeout).await {
                    Ok(()) | Err(MembershipError::NotFound(_)) => {}
                    Err(e) => return Err(e.into()),
                }
                tracing::warn!(member_id = format!("{member_id:x}"), %name, "removed a member");
            }
        }
        Ok(())
    }

    /// A snapshot into the store before a risky membership change (DESIGN
    /// §8). A failure is logged and does not block the change: removals
    /// keep the cluster healthy, and the periodic snapshots go on.
    async fn snapshot_before(&self, endpoint: &str, what: &str) {
        let (Some(store), Some(state)) = (&self.store, &self.state) else {
            return;
        };
        let request = crate::snapshot::take::SnapshotRequest {
            endpoint: endpoint.to_string(),
            cluster: self.config.cluster.name.clone(),
            incarnation: state.incarnation,
            token: state.cluster_token.clone(),
            instance: self.id.clone(),
            timeout: self.config.etcd.call_timeout.get() * 5,
        };
        match crate::snapshot::take::take(store, &request).await {
            Ok(t) => tracing::info!(snapshot = %t.name, "snapshot before {what}"),
            Err(e) => tracing::warn!(error = %e, "no snapshot before {what}; going on"),
        }
    }

    /// The newest incarnation the store records (refreshed every 10 s; the
    /// last known value when the store does not answer).
    async fn newest_incarnation(&mut self) -> Option<u64> {
        let fresh = self
            .newest_recorded
            .is_some_and(|(_, at)| at.elapsed() < Duration::from_secs(10));
        if !fresh {
            if let Some(store) = &self.store {
                if let Ok(r) = record::newest(store, &self.config.cluster.name).await {
                    self.newest_recorded = Some((r.map(|r| r.incarnation), Instant::now()));
                }
            }
        }
        self.newest_recorded.and_then(|(n, _)| n)
    }

    /// Publishes this instance's facts over gossip when they changed, and
    /// shows the gossip view in the status.
    fn publish(
        &mut self,
        local: &Option<crate::etcd::probe::MemberStatus>,
        data: DataState,
        running: bool,
    ) {
        let Some(g) = &self.gossip else { return };
        let state = gossip::PeerState {
            instance_id: self.id.clone(),
            gossip_addr: None,
            client_url: self.client_url.clone(),
            peer_url: self.peer_url.clone(),
            zone: self.me.zone.clone(),
            etcd: gossip::EtcdFacts {
                running,
                member_id: local.as_ref().map(|m| m.member_id),
                cluster_id: local.as_ref().map(|m| m.cluster_id),
                cluster_token: self.state.as_ref().map(|s| s.cluster_token.clone()),
                incarnation: self.state.as_ref().map(|s| s.incarnation),
                healthy: local.as_ref().is_some_and(|m| m.has_leader()),
                is_leader: local.as_ref().is_some_and(|m| m.is_leader()),
                revision: local.as_ref().map(|m| m.revision).unwrap_or(0),
                raft_index: local.as_ref().map(|m| m.raft_index).unwrap_or(0),
                raft_term: local.as_ref().map(|m| m.raft_term).unwrap_or(0),
            },
            data: gossip::DataFacts {
                has_state: self.state.is_some(),
                present: data == DataState::Present,
                incarnation: self.state.as_ref().map(|s| s.incarnation),
                revision: None,
            },
            phase: format!("{:?}", self.status.borrow().phase).to_lowercase(),
            software_version: crate::version::VERSION.into(),
        };
        if self.published.as_ref() != Some(&state) {
            let _ = g.set_state(state.clone());
            self.published = Some(state);
        }
        let now = tokio::time::Instant::now();
        let mut peers: Vec<GossipPeer> = g
            .view()
            .into_iter()
            .map(|(id, v)| GossipPeer {
                instance_id: id,
                up: v.liveness == Liveness::Up,
                phase: v.state.phase.clone(),
                heard_ms_ago: now.saturating_duration_since(v.last_heard).as_millis() as u64,
                has_state: v.state.data.has_state,
                data_present: v.state.data.present,
            })
            .collect();
        peers.sort_by(|a, b| a.instance_id.cmp(&b.instance_id));
        self.status.send_modify(|s| s.gossip = peers);
    }

    /// No cluster answers, this instance is empty: form one if the evidence
    /// says so (`recovery::formation`), else say what it waits for.
    async fn form(&mut self) -> anyhow::Result<()> {
        if self.gossip.is_none() {
            self.set_next(
                "wait to form the cluster",
                "no cluster answers and gossip is not configured (gossip.key_file or ECO_GOSSIP_KEYS): eco cannot collect the evidence needed to form one",
            );
            return Ok(());
        }
        let records = match &self.store {
            None => RecordListing::Failed(
                "no snapshot store is configured (it holds the record of truth)".into(),
            ),
            Some(store) => match record::all(store, &self.config.cluster.name).await {
                Ok(all) => RecordListing::Complete(
                    all.iter().map(|(n, r)| (*n, r.seeder.clone())).collect(),
                ),
                Err(e) => RecordListing::Failed(e.to_string()),
            },
        };
        let group: Vec<String> = self.group.instances.iter().map(|i| i.id.clone()).collect();
        let status = self.status.borrow().clone();
        let mut peers: BTreeMap<String, PeerFacts> = status
            .gossip
            .iter()
            .map(|p| {
                (
                    p.instance_id.clone(),
                    PeerFacts {
                        reachable: p.up && p.heard_ms_ago < 10_000,
                        has_state: p.has_state,
                        data_present: p.data_present,
                    },
                )
            })
            .collect();
        peers.insert(
            self.id.clone(),
            PeerFacts {
                reachable: true,
                has_state: self.state.is_some(),
                data_present: false,
            },
        );
        match formation::decide(&self.id, &group, &peers, &records, false) {
            Formation::Wait { reason } => {
                self.set_next("wait to form the cluster", &reason);
                Ok(())
            }
            Formation::Seed { reason } => {
                tracing::info!(%reason, "forming the cluster");
                self.set_next("seed incarnation 1", &reason);
                self.seed().await
            }
        }
    }

    /// Creates `incarnations/1` (the commit point), records the state, and
    /// starts etcd as a new one-member cluster; the others join it.
    async fn seed(&mut self) -> anyhow::Result<()> {
        let store = self
            .store
            .as_ref()
            .context("forming a cluster needs the snapshot store")?;
        let cluster = self.config.cluster.name.clone();
        let existing = record::all(store, &cluster).await?;
        let token = match existing.get(&1) {
            Some(r) if r.seeder == self.id => r.token.clone(),
            Some(r) => anyhow::bail!(
                "incarnation 1 was seeded by {}; joining it instead",
                r.seeder
            ),
            None => flags::cluster_token(&cluster, 1, rand::random()),
        };
        let initial = self.initial_source().await?;
        let ours = IncarnationRecord {
            cluster: cluster.clone(),
            incarnation: 1,
            seeder: self.id.clone(),
            token: token.clone(),
            source: initial.record_source(),
            created_unix_ms: unix_ms(),
            seed: None,
        };
        let holds = record::create(store, &ours).await?;
        if holds.seeder != ours.seeder || holds.token != ours.token {
            anyhow::bail!(
                "incarnation 1 was created by {} first; that record wins",
                holds.seeder
            );
        }
        self.persist(LocalState {
            format: state_file::FORMAT,
            cluster_name: cluster,
            instance_id: self.id.clone(),
            incarnation: 1,
            cluster_token: token.clone(),
            member_id: None,
            voting_members: vec![self.id.clone()],
            boots: self.state.as_ref().map(|s| s.boots).unwrap_or(1),
        })?;
        self.restore_initial(&initial, &token).await?;
        let own = vec![(self.id.clone(), self.peer_url.clone())];
        self.start_etcd(own, InitialClusterState::New).await
    }

    /// Keeps `V_n`: every member in its state file; the leader also in the
    /// store's voters record.
    async fn keep_voters(&mut self, seen: &Seen, is_leader: bool) {
        let Some((list, _)) = &seen.members else {
            return;
        };
        let mut voters: Vec<String> = list
            .iter()
            .filter(|m| !m.is_learner && !m.name.is_empty())
            .map(|m| m.name.clone())
            .collect();
        voters.sort();
        let Some(mut state) = self.state.clone() else {
            return;
        };
        if state.member_id.is_none() || !list.iter().any(|m| Some(m.id) == state.member_id) {
            return;
        }
        if state.voting_members != voters {
            state.voting_members = voters.clone();
            if let Err(e) = self.persist(state.clone()) {
                tracing::warn!(error = %e, "cannot record the voting members");
            }
        }
        if !is_leader {
            return;
        }
        let Some(store) = &self.store else { return };
        let record = VotersRecord {
            incarnation: state.incarnation,
            raft_index: seen.raft_index(),
            voters,
        };
        if self
            .voters_written
            .as_ref()
            .is_some_and(|w| w.voters == record.voters && w.incarnation == record.incarnation)
        {
            return;
        }
        match record::write_voters(store, &self.config.cluster.name, &record).await {
            Ok(_) => self.voters_written = Some(record),
            Err(e) => tracing::warn!(error = %e, "cannot write the voting members to the store"),
        }
    }
}

/// SIGTERM and SIGINT.
struct Signals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

impl Signals {
    fn new() -> anyhow::Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Self {
            term: signal(SignalKind::terminate()).context("cannot handle SIGTERM")?,
            int: signal(SignalKind::interrupt()).context("cannot handle SIGINT")?,
        })
    }

    async fn recv(&mut self) {
        tokio::select! {
            _ = self.term.recv() => tracing::info!("SIGTERM received"),
            _ = self.int.recv() => tracing::info!("SIGINT received"),
        }
    }
}
