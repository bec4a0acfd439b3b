//! `eco run`: gather what this instance knows, decide (pure code), act.
//!
//! Today the daemon manages a group of one: it bootstraps or resumes the
//! local cluster, keeps etcd running, probes it, and serves its status. The
//! loop is shaped for what comes next (gossip, the steady-state planner and
//! the recovery protocol): observations in, a decision with its reason out,
//! actions executed by the I/O code here.

use crate::config::{Config, ConfigDuration};
use crate::data_dir;
use crate::etcd::binaries;
use crate::etcd::flags::{self, InitialClusterState, LaunchSpec};
use crate::etcd::probe::MemberProbe;
use crate::etcd::supervisor::{Backoff, ProcessSpec, Supervisor};
use crate::metrics::Metrics;
use crate::provider::{Group, Provider, StaticProvider};
use crate::snapshot::writer::SnapshotWriter;
use crate::startup::{self, GroupShape, StartDecision};
use crate::state_file::{self, LocalState, StateFile};
use crate::status::{InstanceStatus, NextAction, Phase};
use anyhow::Context;
use recovery::retention::RetentionPolicy;
use recovery::snapshot_schedule::SnapshotSchedule;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// How the daemon ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Exit {
    /// Stopped by SIGTERM/SIGINT after stopping etcd.
    Signalled,
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
    tracing::info!(
        etcd = %binaries.etcd.display(),
        version = %binaries.version,
        etcdctl = ?binaries.etcdctl,
        etcdutl = ?binaries.etcdutl,
        "found etcd"
    );
    let data_dir = config.etcd.data_dir.clone();
    data_dir::prepare_parent(&data_dir)?;
    let state_file = StateFile::beside(&data_dir);
    let mut state = state_file.load_for(&config.cluster.name, &instance_id)?;
    if let Some(s) = state.as_mut() {
        s.boots += 1;
        state_file.store(s)?;
    }
    let contents = data_dir::inspect(&data_dir)?;
    let pid_file = state_file.path().with_file_name("etcd.pid");

    let client_url = flags::client_url(&config.etcd, me.address);
    let peer_url = flags::peer_url(&config.etcd, me.address);
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
            action: action_name(&decision).into(),
            reason: decision.reason().into(),
        },
        ready: false,
        process: Default::default(),
        member: None,
        probe_error: None,
        group: Some(group.clone()),
        state: state.clone(),
        snapshots: None,
    });
    let metrics = Arc::new(Metrics::new(&instance_id, &binaries.version.to_string()));

    let (shutdown_tx, shutdown_rx) = watch::channel(false);
    let api_bind = config
        .api
        .bind
        .unwrap_or_else(|| SocketAddr::new(me.address, config.api.port as u16));
    let mut api_shutdown = shutdown_rx.clone();
    let api = crate::api::serve(api_bind, status_rx.clone(), metrics.clone(), async move {
        let _ = api_shutdown.wait_for(|s| *s).await;
    })
    .await?;
    tracing::info!(%api_bind, "serving /healthz, /readyz, /metrics and /status");

    let mut signals = Signals::new()?;

    let supervisor = Supervisor::new(Backoff {
        initial: config.etcd.restart_backoff_initial.get(),
        max: config.etcd.restart_backoff_max.get(),
        stable_after: Duration::from_secs(60),
        stop_timeout: config.etcd.stop_timeout.get(),
    })?;

    let launch_state = match &decision {
        StartDecision::Refuse { reason } => {
            tracing::error!(%reason, "not starting etcd");
            status_tx.send_modify(|s| s.phase = Phase::Refused);
            // Stay up so /status explains the refusal; leave on a signal.
            signals.recv().await;
            let _ = shutdown_tx.send(true);
            let _ = api.await;
            return Ok(Exit::Signalled);
        }
        StartDecision::Bootstrap { reason } => {
            tracing::info!(%reason, "bootstrapping");
            let s = match state.clone() {
                Some(pending) => pending,
                None => LocalState {
                    format: state_file::FORMAT,
                    cluster_name: config.cluster.name.clone(),
                    instance_id: instance_id.clone(),
                    incarnation: 1,
                    cluster_token: flags::cluster_token(&config.cluster.name, 1, rand::random()),
                    member_id: None,
                    voting_members: vec![instance_id.clone()],
                    boots: 1,
                },
            };
            // Written before etcd creates any data: a crash in between leaves
            // a pending bootstrap that is retried with the same token.
            state_file.store(&s)?;
            state = Some(s);
            status_tx.send_modify(|st| {
                st.phase = Phase::Bootstrapping;
                st.state = state.clone();
            });
            InitialClusterState::New
        }
        StartDecision::Resume { .. } => InitialClusterState::Existing,
    };
    let Some(current) = state.clone() else {
        anyhow::bail!("internal: no state after the start decision");
    };

    crate::etcd::supervisor::kill_leftover(&pid_file, &data_dir).await;
    crate::preflight::ports_free(
        me.address,
        &[
            ("etcd.client_port", config.etcd.client_port),
            ("etcd.peer_port", config.etcd.peer_port),
            ("etcd.metrics_port", config.etcd.metrics_port),
        ],
    )?;
    let spec = LaunchSpec {
        name: instance_id.clone(),
        data_dir: data_dir.clone(),
        address: me.address,
        initial_cluster: vec![(instance_id.clone(), peer_url.clone())],
        initial_state: launch_state,
        token: current.cluster_token.clone(),
    };
    supervisor
        .start(ProcessSpec {
            binary: binaries.etcd.clone(),
            args: flags::etcd_args(&config.etcd, &spec),
            instance_id: instance_id.clone(),
            log_file: config.etcd.log_file.clone(),
            pid_file: pid_file.clone(),
            data_dir: data_dir.clone(),
        })
        .await?;

    let (writer_stop, writer_stop_rx) = watch::channel(false);
    let writer = match crate::commands::store_from_config(&config) {
        Ok(store) => Some(tokio::spawn(
            SnapshotWriter {
                store,
                cluster: config.cluster.name.clone(),
                instance: instance_id.clone(),
                endpoint: client_url.clone(),
                schedule: SnapshotSchedule {
                    interval_ms: config.snapshot.interval.get().as_millis() as u64,
                    max_age_ms: config.snapshot.max_age.get().as_millis() as u64,
                },
                policy: RetentionPolicy {
                    keep_last: config.snapshot.keep_last,
                    keep_hourly: config.snapshot.keep_hourly,
                    keep_daily: config.snapshot.keep_daily,
                },
                timeout: config.etcd.call_timeout.get(),
                check_every: config.etcd.probe_interval.get().max(Duration::from_secs(1)),
            }
            .run(status_tx.clone(), writer_stop_rx),
        )),
        Err(_) => None,
    };

    let result = watch_over(
        &config,
        &provider,
        &supervisor,
        &status_tx,
        &state_file,
        &mut signals,
        client_url,
    )
    .await;

    status_tx.send_modify(|s| {
        s.phase = Phase::Stopping;
        s.next = NextAction {
            action: "stop".into(),
            reason: "eco is shutting down: final snapshot if this instance writes them, then etcd is stopped".into(),
        };
    });
    if let Some(task) = writer {
        let _ = writer_stop.send(true);
        let limit = config.etcd.call_timeout.get() * 10;
        if tokio::time::timeout(limit, task).await.is_err() {
            tracing::error!(
                ?limit,
                "the final snapshot did not finish in time; stopping etcd anyway"
            );
        }
    }
    status_tx.send_modify(|s| s.ready = false);
    tracing::info!("stopping etcd");
    supervisor.stop().await?;
    supervisor.shutdown();
    let _ = shutdown_tx.send(true);
    let _ = api.await;
    result
}

fn action_name(d: &StartDecision) -> &'static str {
    match d {
        StartDecision::Bootstrap { .. } => "bootstrap",
        StartDecision::Resume { .. } => "resume",
        StartDecision::Refuse { .. } => "wait for a human",
    }
}

/// Probes etcd, refreshes the group, records what it learns, until a signal.
#[allow(clippy::too_many_arguments)]
async fn watch_over(
    config: &Config,
    provider: &StaticProvider,
    supervisor: &Supervisor,
    status_tx: &watch::Sender<InstanceStatus>,
    state_file: &StateFile,
    signals: &mut Signals,
    client_url: String,
) -> anyhow::Result<Exit> {
    let mut probe = MemberProbe::new(client_url, config.etcd.call_timeout.get());
    let mut probe_tick = tokio::time::interval(config.etcd.probe_interval.get());
    probe_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let refresh = config
        .provider
        .static_group
        .as_ref()
        .map(|s| s.refresh_interval)
        .unwrap_or(ConfigDuration::from_secs(5));
    let mut group_tick = tokio::time::interval(refresh.get());
    group_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut process = supervisor.status();
    let mut warned_group_size: Option<usize> = None;

    loop {
        tokio::select! {
            _ = signals.recv() => return Ok(Exit::Signalled),
            changed = process.changed() => {
                if changed.is_err() {
                    anyhow::bail!("the etcd supervisor stopped unexpectedly");
                }
                let p = process.borrow_and_update().clone();
                status_tx.send_modify(|s| {
                    s.process = p;
                    if !s.process.running {
                        s.ready = false;
                    }
                });
            }
            _ = probe_tick.tick() => {
                let running = process.borrow().running;
                if !running {
                    continue;
                }
                let result = probe.status().await;
                let mut learned_member = None;
                status_tx.send_modify(|s| match &result {
                    Ok(m) => {
                        s.ready = m.has_leader();
                        s.member = Some(m.clone());
                        s.probe_error = None;
                        if s.ready {
                            s.phase = Phase::Running;
                            s.next = NextAction {
                                action: "keep etcd running".into(),
                                reason: "etcd is healthy and knows a leader; restart it if it exits".into(),
                            };
                        }
                        if s.state.as_ref().is_some_and(|st| st.member_id != Some(m.member_id)) && m.member_id != 0 {
                            learned_member = Some(m.member_id);
                        }
                    }
                    Err(e) => {
                        s.ready = false;
                        s.probe_error = Some(e.to_string());
                    }
                });
                if let Some(member_id) = learned_member {
                    let mut updated = None;
                    status_tx.send_modify(|s| {
                        if let Some(st) = s.state.as_mut() {
                            st.member_id = Some(member_id);
                            updated = Some(st.clone());
                        }
                    });
                    if let Some(st) = updated {
                        state_file.store(&st)?;
                        tracing::info!(member_id = format!("{member_id:x}"), "recorded this instance's etcd member id");
                    }
                }
            }
            _ = group_tick.tick() => {
                match provider.discover().await {
                    Ok(group) => note_group(status_tx, &group, &mut warned_group_size),
                    Err(e) => tracing::error!(error = %e, "cannot refresh the group"),
                }
            }
        }
    }
}

fn note_group(
    status_tx: &watch::Sender<InstanceStatus>,
    group: &Group,
    warned: &mut Option<usize>,
) {
    let size = group.instances.len();
    if size != 1 && *warned != Some(size) {
        tracing::warn!(
            size,
            "the group now lists several instances; this version of eco manages a group of one and leaves the membership as it is"
        );
        *warned = Some(size);
    }
    status_tx.send_modify(|s| s.group = Some(group.clone()));
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
