//! `eco run`: gather what this instance knows, decide with pure code, act.
//!
//! Wiring (this file): the provider and the store from the config (one
//! factory each), the etcd binaries, the durable state, the HTTP API, the
//! gossip node, the etcd supervisor, the quorum-loss driver (with gossip
//! keys and a store). Then the start (`start.rs`: the pure start decision,
//! carried out), and the loop: a pass every `etcd.probe_interval`
//! (`pass.rs`: observe → decide → dispatch), protocol messages as they
//! arrive, the group refreshed every `provider.refresh_interval`,
//! the snapshot writer and the ACL reconciler (`acl`, `[auth]`)
//! beside it. SIGTERM/SIGINT: final snapshot (if this instance writes
//! them), etcd stopped, exit 0. SIGHUP: the group read again and a pass
//! at once; never a stop.
//!
//! One job per file:
//! - `context.rs`: what this instance is and what it talks to;
//! - `local_etcd.rs`: the supervised etcd and its data directory;
//! - `durable.rs`: the state file and the protocol's state file;
//! - `gossip_link.rs`: the gossip node, its keys and seeds;
//! - `start.rs`: the start decision, carried out;
//! - `observe.rs`: a pass's facts, and the provider's answers;
//! - `pass.rs`: one pass;
//! - `quorum_loss.rs`: the daemon as the quorum-loss driver's host;
//! - `first_incarnation.rs`: bootstrap of a group of one, and formation;
//! - `seeding.rs`: the one seeding executor (incarnation 1 and n+1);
//! - `steady_state.rs`: the planner's pass and the upkeep of `V_n`;
//! - `execute.rs`: the planner's actions;
//! - `publish.rs`: `/status`, the gossip PeerState, the writer's facts;
//! - `termination.rs`: a termination notice (the lifecycle hook) carried
//!   out: final snapshot, heartbeats, completion;
//! - `signals.rs`: SIGTERM and SIGINT (stop), SIGHUP (reload).

mod acl;
mod certificates;
mod cluster_version;
mod context;
mod durable;
mod execute;
mod first_incarnation;
mod gossip_link;
mod handover;
mod join_problem;
mod local_etcd;
mod observe;
mod pass;
mod peer_scheme;
mod publish;
mod quorum_loss;
mod replay_marker;
mod seeding;
mod self_replacement;
mod signals;
mod snapshot_to_store;
mod space;
mod start;
mod steady_state;
mod systemd_notify;
mod termination;
mod upgrade;

use crate::api::status::{InstanceStatus, NextAction, Phase};
use crate::config::Config;
use crate::etcd::access::EtcdAccess;
use crate::etcd::cluster_view::ClusterView;
use crate::etcd::{binaries, flags};
use crate::metrics::Metrics;
use crate::provider::Provider;
use crate::quorum_loss::driver::Driver;
use crate::snapshot::writer::{SnapshotWriter, WriterInput};
use crate::store::ConditionalCreate;
use crate::store::record::VotersRecord;
use anyhow::Context;
use context::Ctx;
use durable::Durable;
use gossip_link::GossipLink;
use local_etcd::LocalEtcd;
use observe::{GroupView, NewestRecord};
use recovery::fenced::{Protocol, ProtocolConfig};
use recovery::quorum_loss_switch::{QuorumLossRecovery, RecoveryMeans, quorum_loss_recovery};
use recovery::retention::RetentionPolicy;
use recovery::snapshot_schedule::SnapshotSchedule;
use signals::Signals;
use start::Begun;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tracing::Instrument;

/// How the daemon ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Exit {
    /// Stopped by SIGTERM/SIGINT after stopping etcd.
    Signalled,
}

/// Everything the running daemon holds, by job.
struct Daemon {
    ctx: Ctx,
    etcd: LocalEtcd,
    durable: Durable,
    view: ClusterView,
    group: GroupView,
    newest: NewestRecord,
    /// The etcd release the last pass saw the local member run (which
    /// readiness check its metrics listener has).
    etcd_release_seen: Option<String>,
    /// The maintenance switch (`eco pause`), as the store says.
    pause: crate::store::pause::PauseView,
    /// This `NOSPACE` episode once its compaction is done: the members
    /// defragmented since (`recovery::space`); `None` before, and after a
    /// disarm or a restart.
    nospace_episode: Option<Vec<u64>>,
    /// What the space governor remembers of each member's size in use:
    /// the highest seen since it last fell by more than 1 %, and since when
    /// (whether a compaction is still freeing pages:
    /// `recovery::space::remember_in_use`); emptied whenever this instance
    /// does not govern.
    space_in_use_seen: std::collections::BTreeMap<u64, (u64, Instant)>,
    /// The etcd binaries the config names now (rolling upgrades).
    configured_etcd: upgrade::ConfiguredEtcd,
    /// How long the local member has been unusable (self-replacement).
    unusable: recovery::self_replacement::Episode,
    gossip: Option<GossipLink>,
    live_since: recovery::live_since::LiveSince,
    /// The quorum-loss protocol (with gossip keys and a store).
    quorum_loss: Option<Driver>,
    /// The last problem of the quorum-loss side worth a human's eye.
    problem: Option<String>,
    /// The start was refused, with the reason.
    refused: Option<String>,
    status: watch::Sender<InstanceStatus>,
    writer: watch::Sender<WriterInput>,
    /// The leader facts of the latest pass, as published on `writer` (kept
    /// here: a channel's last value is never read back).
    leader_facts: recovery::snapshot_schedule::LeaderFacts,
    voters_written: Option<VotersRecord>,
    /// The members as the last steady-state pass saw them: whom a leading
    /// member hands leadership to before a planned stop (`handover`).
    last_members: Option<Vec<recovery::planner::MemberFacts>>,
    /// A termination the provider announced, in progress.
    termination: Option<termination::Terminating>,
    started: Instant,
    /// The TLS certificates shown in `/status`, read again when renewed.
    certificates: crate::etcd::tls_in_force::CertificatesInForce,
    /// eco across its releases: the format written, finalization.
    cluster_version: cluster_version::ClusterVersionView,
}

/// Refuses to start with TLS files etcd or eco could not use (for this
/// instance's advertised host `host`); reports each certificate, the
/// warnings of the check, and warns when a certificate expires within
/// [`crate::etcd::tls::EXPIRY_WARNING`].
fn check_tls_files(tls: &crate::config::EtcdTlsConfig, host: &str) -> anyhow::Result<()> {
    let now = std::time::SystemTime::now();
    let checked = crate::etcd::tls_check::check_files(tls, now, Some(host))
        .context("cannot use the TLS files")?;
    for warning in &checked.warnings {
        tracing::warn!("{warning}");
    }
    for info in checked.certificates {
        let days_left = info.remaining(now).map(|d| d.as_secs() / 86_400);
        tracing::info!(key = info.key, file = %info.path.display(), subject = %info.subject, names = ?info.names, ?days_left, "TLS certificate");
        if info
            .remaining(now)
            .is_some_and(|left| left < crate::etcd::tls::EXPIRY_WARNING)
        {
            tracing::warn!(key = info.key, file = %info.path.display(), ?days_left, "a TLS certificate expires soon: renew it in place (etcd and eco read the files on every connection)");
        }
    }
    Ok(())
}

/// Refuses to start with `[api.tls]` files the API could not serve;
/// reports the certificate it serves and the check's warnings.
fn check_api_tls_files(config: &Config, host: &str) -> anyhow::Result<()> {
    let Some(files) = config.api.tls.files(&config.etcd) else {
        return Ok(());
    };
    let checked = crate::api::tls::check_files(&files, std::time::SystemTime::now(), Some(host))
        .context("cannot serve the HTTP API over TLS ([api.tls])")?;
    let leaf = checked.leaf;
    tracing::info!(key = files.cert.key, file = %files.cert.path.display(), subject = %leaf.subject, names = ?leaf.names, ca = %files.trusted_ca.path.display(), "the HTTP API serves TLS with this certificate");
    for warning in &checked.warnings {
        tracing::warn!("{warning}");
    }
    Ok(())
}

/// Runs the daemon for the instance `provider` resolved (built by
/// `provider::from_config`); `config_file` (when given) is looked at
/// again for `[auth]` changes.
pub async fn run(
    config: Config,
    config_file: Option<std::path::PathBuf>,
    provider: Arc<dyn Provider>,
) -> anyhow::Result<Exit> {
    let span = tracing::info_span!("eco", instance = %provider.identity().id);
    run_as(config, config_file, provider).instrument(span).await
}

async fn run_as(
    config: Config,
    config_file: Option<std::path::PathBuf>,
    provider: Arc<dyn Provider>,
) -> anyhow::Result<Exit> {
    // A hangup never kills eco, from here on (see `signals.rs`).
    let hangup = signals::Hangup::ignore()?;
    let me = provider.identity().clone();
    if let Some(limit) = crate::local::preflight::raise_open_file_limit() {
        tracing::debug!(limit, "open files limit");
    }
    let group = provider
        .discover()
        .await
        .context("cannot discover the group")?;
    let binaries = binaries::find(&config.etcd)
        .await
        .context("cannot use etcd")?;
    tracing::info!(etcd = %binaries.etcd.display(), version = %binaries.version, etcdutl = ?binaries.etcdutl, "found etcd");
    for p in recovery::etcd_flags::problems(&config.etcd.extra_flags, binaries.version) {
        match p {
            recovery::etcd_flags::Acceptance::Refused { reason } => {
                tracing::error!(%reason, "etcd.extra_flags: etcd will exit at start")
            }
            recovery::etcd_flags::Acceptance::Deprecated { reason } => {
                tracing::warn!(%reason, "etcd.extra_flags")
            }
            recovery::etcd_flags::Acceptance::Accepted => {}
        }
    }
    crate::local::data_dir::prepare_parent(&config.etcd.data_dir)?;
    // Before anything beside the data directory is read or written.
    let _lock = crate::local::instance_lock::acquire(&config.etcd.data_dir, &me.id)?;
    let durable = Durable::load(&config.etcd.data_dir, &config.cluster.name, &me.id)?;
    // In the middle of a rolling upgrade: the version the member ran.
    let binaries = upgrade::binaries_at_start(binaries, &durable.pid_file()).await;
    let metrics = Arc::new(Metrics::new(&me.id, &binaries.version.to_string()));
    let store = crate::store::from_config(&config)
        .await
        .context("cannot set up the snapshot store")?
        .map(|s| {
            Arc::new(crate::store::measured::MeasuredStore::new(
                s,
                metrics.store.clone(),
            )) as Arc<dyn crate::store::ObjectStore>
        });
    let conditional_create = match &store {
        Some(s) => Some(check_store(&**s).await?),
        None => None,
    };
    let store_refusal = recovery::store_fitness::refusal(recovery::store_fitness::StoreFacts {
        ignores_conditional_create: conditional_create == Some(ConditionalCreate::Ignored),
        on_own_volume: store_on_own_volume(&config),
    });
    let _renewal = certificates::provision(&config, &me, store.as_ref(), store_refusal).await?;
    check_tls_files(&config.etcd.tls_files(), &me.host.to_string())?;
    if let Some(warning) = crate::config::plaintext_warning(&config.etcd) {
        tracing::warn!("{warning}");
    }
    check_api_tls_files(&config, &me.host.to_string())?;
    let (auth_problems, auth_warnings) = crate::auth::check_files(&config);
    for warning in auth_warnings {
        tracing::warn!("{warning}");
    }
    anyhow::ensure!(
        auth_problems.is_empty(),
        "cannot use the [auth] files:\n  - {}",
        auth_problems.join("\n  - ")
    );
    let protocol = ProtocolConfig::for_timeout(
        config.recovery.quorum_loss_timeout.millis(),
        config.recovery.accept_loss_after.map(|d| d.millis()),
    );
    // Compression and encryption of what this instance stores; an identity
    // file that cannot be read stops the start here, not at the first
    // verification or quorum loss.
    let codec = crate::snapshot::codec_choice::SnapshotCodec::from_config(&config.snapshot)
        .context("[snapshot.encryption]")?;
    codec.identities().context("[snapshot.encryption]")?;
    let ctx = Ctx {
        codec,
        client_url: crate::etcd::local_endpoint::LocalEndpoint::new(flags::client_url(
            &config.etcd,
            &me.host,
        )),
        peer_url: flags::peer_url(&config.etcd, &me.host),
        access: EtcdAccess::for_eco(&config),
        config,
        me,
        binaries: binaries::RunningBinaries::new(binaries),
        store,
        provider,
        protocol,
        metrics: metrics.clone(),
    };
    let (status, status_rx) = watch::channel(InstanceStatus {
        etcd_version: ctx.binaries.get().version.to_string(),
        client_url: ctx.client_url.get(),
        peer_url: ctx.peer_url.clone(),
        group: Some(group.clone()),
        store_problem: store_refusal
            .map(|why| format!("quorum-loss recovery is off: {why}; snapshots are still written")),
        state: durable.state().cloned(),
        ..InstanceStatus::known_only_by_name(
            ctx.id().to_string(),
            ctx.cluster().to_string(),
            Phase::Starting,
            NextAction {
                action: "start".into(),
                reason: "deciding how to start".into(),
            },
        )
    });
    crate::daemon::systemd_notify::spawn(status.subscribe());
    let (api_stop, mut api_stopped) = watch::channel(false);
    let api_bind = ctx
        .config
        .api
        .bind
        .unwrap_or_else(|| SocketAddr::new(ctx.me.bind, ctx.config.api.port as u16));
    let serving = crate::api::server::Serving {
        main: api_bind,
        status: ctx.config.api.status_bind,
        tls: ctx.config.api.tls.files(&ctx.config.etcd),
        host: ctx.me.host.to_string(),
    };
    let scheme = if serving.tls.is_some() {
        "https"
    } else {
        "http"
    };
    let api = crate::api::server::serve(serving.clone(), status_rx, metrics.clone(), async move {
        let _ = api_stopped.wait_for(|s| *s).await;
    })
    .await?;
    if let Some(mut problem) = api.tls_problem.clone() {
        // The API's certificate files that are not served, into /status.
        let status = status.clone();
        tokio::spawn(async move {
            loop {
                let now = problem.borrow_and_update().clone();
                status.send_modify(|s| s.api_tls_problem = now);
                if problem.changed().await.is_err() {
                    break;
                }
            }
        });
    }
    match serving.status {
        None => {
            tracing::info!(%api_bind, scheme, "serving /healthz, /readyz, /metrics and /status")
        }
        Some(status_bind) => tracing::info!(
            %api_bind,
            %status_bind,
            scheme,
            "serving /healthz, /readyz and /metrics; /status only on api.status_bind"
        ),
    }
    let tls_name = serving.tls.as_ref().map(|_| ctx.me.host.to_string());
    if let Err(e) = crate::api::address::record(
        &ctx.config.etcd.data_dir,
        serving.status.unwrap_or(api_bind),
        tls_name.as_deref(),
    ) {
        tracing::warn!(error = %e, "cannot record the API address (eco status --config may not find this instance once it leaves its group)");
    }
    let mut signals = Signals::new(hangup)?;
    let gossip = GossipLink::start(&ctx, &group).await?;
    if let Some(g) = &gossip {
        metrics.watch_gossip(g.node.metrics());
    }
    let means = RecoveryMeans {
        gossip: gossip.is_some(),
        store: ctx.store.is_some(),
        store_refused: store_refusal.map(str::to_string),
        group_size: group.instances.len(),
    };
    let quorum_loss = match quorum_loss_recovery(&means) {
        QuorumLossRecovery::On => Some(
            Driver::new(Protocol::new(
                ctx.id(),
                rand::random(),
                ctx.protocol.clone(),
                durable.protocol_state()?,
            ))
            .with_metrics(ctx.metrics.decisions.clone()),
        ),
        QuorumLossRecovery::Off { said, error } => {
            let store = ctx.store.as_ref().map(|s| s.describe()).unwrap_or_default();
            match said {
                Some(said) if error => tracing::error!(store = %store, "{said}"),
                Some(said) => tracing::warn!("{said}"),
                None => {}
            }
            None
        }
    };
    let (writer, writer_input) = watch::channel(WriterInput::default());
    let mut d = Daemon {
        etcd: LocalEtcd::new(&ctx, durable.pid_file())?,
        view: ClusterView::new(ctx.access.clone(), ctx.config.etcd.probe_interval.get()),
        ctx,
        durable,
        group: GroupView {
            group,
            departed: Default::default(),
            problem: None,
            absences_confirmed: false,
            answered_at: Some(Instant::now()),
        },
        newest: NewestRecord::default(),
        etcd_release_seen: None,
        pause: Default::default(),
        nospace_episode: None,
        space_in_use_seen: Default::default(),
        configured_etcd: Default::default(),
        unusable: Default::default(),
        gossip,
        live_since: recovery::live_since::LiveSince::default(),
        quorum_loss,
        problem: None,
        refused: None,
        status,
        writer,
        leader_facts: Default::default(),
        voters_written: None,
        last_members: None,
        termination: None,
        started: Instant::now(),
        certificates: Default::default(),
        cluster_version: Default::default(),
    };
    // The provider's certified-gone answer is known before the first pass.
    d.refresh_group().await;
    // Beside the loop: etcd's users and roles, kept from [auth].
    let acl = acl::AclReconciler {
        config: d.ctx.config.clone(),
        config_file,
        access: d.ctx.access.clone(),
        endpoint: d.ctx.client_url.clone(),
        status: d.status.clone(),
    }
    .spawn(d.writer.subscribe());
    let result = match d.begin(&mut signals).await {
        Ok(Begun::Running) => d.run_with_writer(&mut signals, writer_input).await,
        Ok(Begun::Signalled) => Ok(Exit::Signalled),
        Err(e) => Err(e),
    };
    drop(acl);
    d.status.send_modify(|s| s.ready = false);
    tracing::info!("stopping etcd");
    d.stop_etcd_handing_over().await?;
    if let Some(g) = d.gossip.take() {
        g.node.shutdown().await;
    }
    d.etcd.shutdown();
    let _ = api_stop.send(true);
    let _ = api.task.await;
    result
}

impl Daemon {
    /// The loop, with the snapshot writer beside it (when a store is
    /// configured); on a signal, the writer's final snapshot comes before
    /// etcd stops.
    async fn run_with_writer(
        &mut self,
        signals: &mut Signals,
        writer_input: watch::Receiver<WriterInput>,
    ) -> anyhow::Result<Exit> {
        let (writer_stop, writer_stopped) = watch::channel(false);
        let (chain_snapshots, chain_requests) = tokio::sync::mpsc::channel(1);
        let archiver = self
            .ctx
            .store
            .clone()
            .filter(|_| self.ctx.config.archive.enabled)
            .map(|store| {
                let c = &self.ctx.config;
                tokio::spawn(
                    crate::archive::writer::ArchiveWriter {
                        store,
                        access: self.ctx.access.clone(),
                        cluster: c.cluster.name.clone(),
                        instance: self.ctx.id().to_string(),
                        endpoint: self.ctx.client_url.clone(),
                        interval: c.archive.interval.get(),
                        max_segment_bytes: c.archive.max_segment_bytes,
                        level: c.archive.compression_level,
                        encoding: self.ctx.codec.for_segment(),
                        metrics: self.ctx.metrics.archive.clone(),
                        chain_snapshots,
                    }
                    .run(
                        writer_input.clone(),
                        self.status.clone(),
                        writer_stopped.clone(),
                    )
                    .in_current_span(),
                )
            });
        let writer = self.ctx.store.clone().map(|store| {
            let c = &self.ctx.config;
            tokio::spawn(
                SnapshotWriter {
                    store,
                    access: self.ctx.access.clone(),
                    cluster: c.cluster.name.clone(),
                    instance: self.ctx.id().to_string(),
                    endpoint: self.ctx.client_url.clone(),
                    schedule: SnapshotSchedule {
                        interval_ms: c.snapshot.interval.millis(),
                        max_age_ms: c.snapshot.max_age.millis(),
                    },
                    policy: RetentionPolicy {
                        keep_last: c.snapshot.keep_last,
                        keep_hourly: c.snapshot.keep_hourly,
                        keep_daily: c.snapshot.keep_daily,
                    },
                    metrics: self.ctx.metrics.snapshots.clone(),
                    check_every: c.etcd.probe_interval.get().max(Duration::from_secs(1)),
                    binaries: self.ctx.binaries.clone(),
                    verify_in: c
                        .etcd
                        .data_dir
                        .parent()
                        .map(Path::to_path_buf)
                        .unwrap_or_else(|| PathBuf::from(".")),
                    verify_interval: c.snapshot.verify_interval.get(),
                    verify_timeout: VERIFY_TIMEOUT,
                    archive_keep_for: c.archive.keep_for.get(),
                    codec: self.ctx.codec.clone(),
                }
                .run(
                    writer_input,
                    self.status.clone(),
                    writer_stopped,
                    chain_requests,
                )
                // Its events carry the instance, as the daemon's do.
                .in_current_span(),
            )
        });
        let result = self.run_loop(signals).await;
        self.set_phase(Phase::Stopping);
        // First of all: a leading member hands leadership away, so a stop
        // cut short (a short grace period, SIGKILL) costs no election.
        self.hand_over_if_leading().await;
        self.show_next(
            "stop",
            "eco is shutting down: final snapshot if this instance writes them, then etcd is stopped",
        );
        let _ = writer_stop.send(true);
        if let Some(task) = archiver {
            // What it holds is stored first: the final snapshot then
            // starts no new chain behind it.
            let limit = self.ctx.config.etcd.call_timeout.get() * 5;
            if tokio::time::timeout(limit, task).await.is_err() {
                tracing::warn!(
                    ?limit,
                    "the change archive did not store what it held in time"
                );
            }
        }
        if let Some(task) = writer {
            let limit = self.ctx.config.etcd.call_timeout.get() * 10;
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
        let mut tick = tokio::time::interval(self.ctx.config.etcd.probe_interval.get());
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut group_tick = tokio::time::interval(self.ctx.provider.refresh_interval());
        group_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut process = self.etcd.watch();
        let mut events = self.gossip.as_mut().and_then(GossipLink::take_events);
        loop {
            // Biased: a signal first, then protocol messages (a coordinator's
            // heartbeat or a promise must not wait behind a second pass),
            // then the process, then the group, then passes.
            tokio::select! {
                biased;
                received = signals.next() => match received {
                    signals::Received::Stop => return Ok(Exit::Signalled),
                    signals::Received::Reload => {
                        self.refresh_group().await;
                        if let Err(e) = self.pass().await {
                            tracing::warn!(error = %format!("{e:#}"), "this pass did not finish; planning again next tick");
                        }
                    }
                },
                Some(event) = async {
                    match events.as_mut() {
                        Some(rx) => rx.recv().await,
                        None => std::future::pending().await,
                    }
                } => {
                    if let gossip::Event::Message { from, bytes } = event {
                        self.quorum_loss_message(&from, &bytes).await;
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
                // The group before a pass: a pass slower than the probe
                // interval (calls that wait for their timeouts while the
                // quorum is lost) leaves the pass tick always ready, and
                // a group read behind it would never run — no departure
                // confirmed, no quorum-loss round able to finish.
                _ = group_tick.tick() => self.refresh_group().await,
                _ = tick.tick() => {
                    if let Err(e) = self.pass().await {
                        tracing::warn!(error = %format!("{e:#}"), "this pass did not finish; planning again next tick");
                    }
                }
            }
        }
    }
}

/// Whether the snapshot directory is this pod's own volume: under the
/// StatefulSet provider, a `dir` store on the filesystem that holds the
/// data directory's parent (the pod's volume claim). A filesystem that
/// cannot be looked at counts as the pod's own (refusing is the safe
/// side).
fn store_on_own_volume(config: &crate::config::Config) -> bool {
    use std::os::unix::fs::MetadataExt;
    if config.provider.kind != crate::config::ProviderKind::Statefulset
        || config.snapshot.store != crate::config::SnapshotStoreKind::Dir
    {
        return false;
    }
    let (Some(dir), Some(volume)) = (config.snapshot.dir.as_ref(), config.etcd.data_dir.parent())
    else {
        return true;
    };
    match (std::fs::metadata(&dir.path), std::fs::metadata(volume)) {
        (Ok(store), Ok(data)) => store.dev() == data.dev(),
        _ => true,
    }
}

/// How many times, and how far apart, the store's start check is tried
/// before eco gives up (a store unreachable at boot may be a moment's
/// outage; a missing bucket or denied access is bad input).
/// Bounds a verified restore's restore and its throwaway etcd's start.
const VERIFY_TIMEOUT: Duration = Duration::from_secs(300);
const STORE_CHECK_ATTEMPTS: u32 = 6;
const STORE_CHECK_EVERY: Duration = Duration::from_secs(5);

/// Proves the store usable and asks whether it honours conditional
/// creates; an error after every attempt stops eco with the store's
/// reason (what the bucket, key and cause are).
async fn check_store(store: &dyn crate::store::ObjectStore) -> anyhow::Result<ConditionalCreate> {
    let mut attempt = 1;
    loop {
        match store.check_at_start().await {
            Ok(c) => return Ok(c),
            Err(e) if attempt < STORE_CHECK_ATTEMPTS => {
                tracing::warn!(store = %store.describe(), error = %e, attempt, "the snapshot store is not usable yet; trying again");
            }
            Err(e) => {
                return Err(anyhow::Error::new(e).context(format!(
                    "the snapshot store {} is not usable ({STORE_CHECK_ATTEMPTS} attempts)",
                    store.describe()
                )));
            }
        }
        attempt += 1;
        tokio::time::sleep(STORE_CHECK_EVERY).await;
    }
}
