//! One instance on a turmoil host: the real `gossip` node and the daemon's
//! own quorum-loss driver (`eco::quorum_loss::driver::Driver`), whose host
//! ([`SimIo`]) is the shared [`World`]: the simulated etcd, store, state
//! file and provider. Every pass (`PASS`, the daemon's
//! `etcd.probe_interval`) publishes this instance's PeerState as the
//! daemon does and runs the driver's pass; protocol messages go to the
//! driver as they arrive. The invariants are checked before each effect
//! runs.

use super::world::{Shared, World};
use crate::sim_transport::SimSocket;
use eco::quorum_loss::driver::{Driver, QuorumLossHost};
use gossip::{DataFacts, EtcdFacts, Event, Gossip, GossipConfig, Keyring, PeerState};
use recovery::fenced::coordinator::Stage;
use recovery::fenced::{
    AlertKind, CreateResult, Effect, EffectKind, GroupFacts, Incarnation, InstanceId, LocalData,
    Millis, PersistedState, Probe, Protocol, SeedPlan, SeedRecord, StoreFacts, decode, encode,
};
use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

pub const PORT: u16 = 7946;
/// The group's gossip key (the forger holds it too).
pub const KEY: [u8; 32] = [0x3c; 32];
/// The daemon's `etcd.probe_interval`: one pass.
pub const PASS: Duration = Duration::from_millis(250);

fn now_ms() -> Millis {
    turmoil::sim_elapsed().map_or(0, |d| d.as_millis() as Millis)
}

fn lock(shared: &Shared) -> std::sync::MutexGuard<'_, World> {
    shared.lock().unwrap_or_else(|e| e.into_inner())
}

/// What instance `i` publishes in gossip (the daemon's `publish`).
fn peer_state(w: &World, i: usize, frozen: bool) -> PeerState {
    let s = &w.slots[i];
    let has_state = s.etcd.incarnation > 0;
    let probe = w.probe(i);
    PeerState {
        instance_id: s.id.clone(),
        etcd: EtcdFacts {
            running: probe != Probe::Failed,
            cluster_id: s.etcd.cluster_id.filter(|_| probe != Probe::Failed),
            incarnation: has_state.then_some(s.etcd.incarnation),
            healthy: probe == Probe::Leader,
            raft_index: s.etcd.commit_index,
            ..Default::default()
        },
        data: DataFacts {
            has_state,
            present: s.etcd.has_data,
            incarnation: has_state.then_some(s.etcd.incarnation),
            revision: None,
            voters: s.etcd.voters.clone(),
            learners: s.etcd.learners.clone(),
        },
        phase: if frozen { "frozen" } else { "running" }.into(),
        frozen,
        ..Default::default()
    }
}

/// The driver's host on a turmoil host: instance `i` of the [`World`].
pub struct SimIo {
    i: usize,
    id: InstanceId,
    shared: Shared,
    gossip: Gossip,
}

impl SimIo {
    fn world(&self) -> std::sync::MutexGuard<'_, World> {
        lock(&self.shared)
    }

    fn log(&self, what: &str, reason: &str) {
        let mut w = self.world();
        let text = format!("t={} ms: {} {what}: {reason}", w.now, self.id);
        w.log.push(text);
    }
}

impl QuorumLossHost for SimIo {
    fn gossip(&self) -> &Gossip {
        &self.gossip
    }

    /// The provider: present instances not terminated; terminated ones are
    /// certified gone.
    fn group(&self) -> GroupFacts {
        self.world().group()
    }

    fn membership(&self) -> Option<(Incarnation, Vec<InstanceId>, Vec<InstanceId>)> {
        let w = self.world();
        let e = &w.slots[self.i].etcd;
        (e.incarnation > 0).then(|| (e.incarnation, e.voters.clone(), e.learners.clone()))
    }

    fn probe(&self) -> Probe {
        self.world().probe(self.i)
    }

    fn local_incarnation(&self) -> Incarnation {
        self.world().slots[self.i].etcd.incarnation
    }

    fn etcd_running(&self) -> bool {
        let w = self.world();
        w.runs(self.i, w.slots[self.i].etcd.incarnation)
    }

    fn random(&mut self) -> u64 {
        self.world().random()
    }

    async fn store_facts(&mut self) -> StoreFacts {
        self.world().store_facts()
    }

    fn before_effect(&mut self, effect: &Effect) {
        let mut w = self.world();
        match &effect.kind {
            EffectKind::Persist(state) => w.check_persist(self.i, state),
            EffectKind::Send(env) => w.check_send(self.i, env),
            _ => {}
        }
    }

    fn after_input(&mut self, protocol: &Protocol) {
        let proposing = protocol
            .round()
            .is_some_and(|r| matches!(r.stage, Stage::Accepting { .. }));
        self.world().slots[self.i].proposing = proposing;
    }

    async fn persist(&mut self, state: &PersistedState) -> anyhow::Result<()> {
        self.world().slots[self.i].disk = Some(encode(state)?);
        Ok(())
    }

    async fn freeze(&mut self, reason: &str) -> anyhow::Result<()> {
        self.log("freezes", reason);
        self.world().slots[self.i].etcd.frozen = true;
        Ok(())
    }

    fn unfreeze(&mut self, reason: &str) {
        self.log("unfreezes", reason);
        self.world().slots[self.i].etcd.frozen = false;
    }

    async fn read_local_data(&mut self) -> LocalData {
        self.world().slots[self.i].etcd.local_data()
    }

    async fn create_record(&mut self, record: &SeedRecord) -> CreateResult {
        self.world().create_record(self.i, record)
    }

    async fn seed(&mut self, plan: &SeedPlan) -> anyhow::Result<Incarnation> {
        let mut w = self.world();
        // The daemon retries a seed it cannot do forever; so does the driver.
        let k = w.seed(self.i, plan).ok_or_else(|| {
            anyhow::anyhow!("this instance does not hold the WAL the record names")
        })?;
        w.seed_completed(self.i, k);
        Ok(k)
    }

    async fn join(&mut self, record: &SeedRecord) -> anyhow::Result<()> {
        self.log("joins", &format!("incarnation {}", record.incarnation));
        self.world().join(self.i, record);
        Ok(())
    }

    fn alert(&mut self, kind: &AlertKind, reason: &str) {
        let mut w = self.world();
        if !w.alerts.contains(kind) {
            w.alerts.push(kind.clone());
        }
        w.note(format!("{} alerts {kind:?}: {reason}", self.id));
    }

    fn data_loss(&mut self, incarnation: Incarnation, skipped: &[InstanceId], _reason: &str) {
        let mut w = self.world();
        w.data_loss_fired = true;
        w.note(format!(
            "{} accepts data loss for incarnation {incarnation}, skipping {skipped:?}",
            self.id
        ));
    }
}

/// The software of host `i`: runs until the driver crashes it.
pub async fn run(i: usize, shared: Shared, hosts: Vec<String>) -> turmoil::Result {
    // A replacement waits until the provider starts it.
    loop {
        if lock(&shared).slots[i].present {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let socket = turmoil::net::UdpSocket::bind((Ipv4Addr::UNSPECIFIED, PORT)).await?;
    let now = now_ms();
    let (id, boot, cfg, persisted, seed) = {
        let mut w = lock(&shared);
        let boot = w.random();
        let seed = w.random();
        let cfg = w.cfg.clone();
        let s = &mut w.slots[i];
        s.up = true;
        s.boots += 1;
        let persisted = s.disk.as_deref().and_then(|b| decode(b).ok());
        s.etcd.frozen = persisted.as_ref().is_some_and(|p| p.frozen);
        (s.id.clone(), boot, cfg, persisted, seed)
    };
    let seeds: Vec<SocketAddr> = hosts
        .iter()
        .map(|h| SocketAddr::new(turmoil::lookup(h.as_str()), PORT))
        .collect();
    let keys = Keyring::new(&[KEY], "fenced")?;
    let mut config = GossipConfig::lan("fenced", &id, keys, seeds, now + 1);
    config.rng_seed = seed;
    config.advertise = Some(SocketAddr::new(turmoil::lookup(id.as_str()), PORT));
    let state = peer_state(
        &lock(&shared),
        i,
        persisted.as_ref().is_some_and(|p| p.frozen),
    );
    let (gossip, mut events) = Gossip::start(SimSocket(socket), config, state)?;
    // The group's addresses, as the daemon gives them from its provider.
    gossip.set_peers(
        hosts
            .iter()
            .map(|h| {
                (
                    h.clone(),
                    std::iter::once(turmoil::lookup(h.as_str())).collect(),
                )
            })
            .collect(),
    )?;
    let mut driver = Driver::new(Protocol::new(id.clone(), boot, cfg, persisted));
    let mut io = SimIo {
        i,
        id,
        shared,
        gossip,
    };
    let mut published: Option<PeerState> = None;
    let mut tick = tokio::time::interval(PASS);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            biased;
            event = events.recv() => match event {
                Some(Event::Message { from, bytes }) => {
                    driver.message(&mut io, now_ms(), &from, &bytes).await;
                }
                Some(_) => {}
                None => return Err("the gossip node stopped".into()),
            },
            _ = tick.tick() => {
                let state = peer_state(&io.world(), i, driver.protocol().is_frozen());
                if published.as_ref() != Some(&state) {
                    io.gossip.set_state(state.clone())?;
                    published = Some(state);
                }
                driver.pass(&mut io, now_ms()).await;
            }
        }
    }
}
