//! One instance on a turmoil host: the real `gossip` node and the real
//! `recovery::fenced::Protocol`, glued together the way the daemon does it
//! (`src/daemon/fencing.rs`; the peer facts come from the daemon's own
//! `eco::fencing::facts::peer_facts`): every pass feeds the
//! group, `V_n`, the store (every 2 s), one detector sample (its own etcd
//! probe and gossip's view) and a tick; protocol messages travel as
//! addressed gossip messages (postcard); effects run in order against the
//! shared [`World`].

use super::world::{Shared, World};
use crate::sim_transport::SimSocket;
use eco::fencing::facts::{FROZEN_PHASE, LeaderSightings, peer_facts};
use gossip::{DataFacts, EtcdFacts, Event, Gossip, GossipConfig, Keyring, PeerState};
use recovery::fenced::coordinator::Stage;
use recovery::fenced::{
    Effect, EffectKind, Envelope, Input, InstanceId, Millis, Observation, Probe, Protocol, decode,
    encode,
};
use std::collections::VecDeque;
use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

pub const PORT: u16 = 7946;
const KEY: [u8; 32] = [0x3c; 32];
/// The daemon's `etcd.probe_interval`: one protocol pass.
pub const PASS: Duration = Duration::from_millis(250);
/// How often the store is listed for the protocol.
const STORE_REFRESH: Millis = 2_000;

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
        },
        phase: if frozen { FROZEN_PHASE } else { "running" }.into(),
        ..Default::default()
    }
}

struct Instance {
    i: usize,
    id: InstanceId,
    shared: Shared,
    gossip: Gossip,
    protocol: Protocol,
    sightings: LeaderSightings,
    store_read_at: Option<Millis>,
    published: Option<PeerState>,
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
    let protocol = Protocol::new(id.clone(), boot, cfg, persisted);
    let mut me = Instance {
        i,
        id,
        shared,
        gossip,
        protocol,
        sightings: LeaderSightings::default(),
        store_read_at: None,
        published: None,
    };
    let start = me.protocol.start(now);
    me.execute_all(now, start);
    let mut tick = tokio::time::interval(PASS);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            biased;
            event = events.recv() => match event {
                Some(Event::Message { from, bytes }) => me.message(&from, &bytes),
                Some(_) => {}
                None => return Err("the gossip node stopped".into()),
            },
            _ = tick.tick() => me.pass(),
        }
    }
}

impl Instance {
    /// A protocol message from gossip; the envelope must name the sender.
    fn message(&mut self, from: &str, bytes: &[u8]) {
        let Ok(env) = postcard::from_bytes::<Envelope>(bytes) else {
            return;
        };
        if env.from != from {
            return;
        }
        self.feed(now_ms(), Input::Message(env));
    }

    /// One protocol pass (the daemon's `fence_pass`).
    fn pass(&mut self) {
        let now = now_ms();
        let mut inputs = Vec::new();
        let (probe, state) = {
            let w = lock(&self.shared);
            let voters = self.protocol.state().voters.clone();
            let group = w.group(&voters);
            inputs.push(Input::Group(group));
            let e = &w.slots[self.i].etcd;
            if !self.protocol.is_frozen() && !e.voters.is_empty() && e.incarnation > 0 {
                inputs.push(Input::Membership {
                    incarnation: e.incarnation,
                    voters: e.voters.clone(),
                });
            }
            if self
                .store_read_at
                .is_none_or(|at| now >= at + STORE_REFRESH)
            {
                self.store_read_at = Some(now);
                inputs.push(Input::Store(w.store_facts()));
            }
            (
                w.probe(self.i),
                peer_state(&w, self.i, self.protocol.is_frozen()),
            )
        };
        if self.published.as_ref() != Some(&state) {
            let _ = self.gossip.set_state(state.clone());
            self.published = Some(state);
        }
        let view = self.gossip.view();
        let mut peers = peer_facts(&view, tokio::time::Instant::now(), now, &mut self.sightings);
        if let Some(own) = peers.get_mut(&self.id) {
            own.last_heard = now;
            if probe == Probe::Leader {
                own.leader_seen_at = Some(now);
            }
        }
        let gone = {
            let w = lock(&self.shared);
            w.group(&self.protocol.state().voters).certified_gone
        };
        inputs.push(Input::Observe(Observation {
            at: now,
            probe: Some(probe),
            peers,
            certified_gone: gone,
        }));
        let random = lock(&self.shared).random();
        inputs.push(Input::Tick { random });
        for input in inputs {
            self.feed(now, input);
        }
    }

    fn feed(&mut self, now: Millis, input: Input) {
        let effects = self.protocol.handle(now, input);
        self.execute_all(now, effects);
        let proposing = self
            .protocol
            .round()
            .is_some_and(|r| matches!(r.stage, Stage::Accepting { .. }));
        lock(&self.shared).slots[self.i].proposing = proposing;
    }

    /// Effects in order; an answer is handled at once and its effects run
    /// next (the daemon's `fence_feed`).
    fn execute_all(&mut self, now: Millis, effects: Vec<Effect>) {
        let mut queue: VecDeque<Effect> = effects.into();
        while let Some(effect) = queue.pop_front() {
            if let Some(next) = self.execute(effect) {
                queue.extend(self.protocol.handle(now, next));
            }
        }
    }

    fn execute(&mut self, effect: Effect) -> Option<Input> {
        let i = self.i;
        let mut w = lock(&self.shared);
        match effect.kind {
            EffectKind::Persist(state) => {
                w.check_persist(i, &state);
                w.slots[i].disk = encode(&state).ok();
                None
            }
            EffectKind::Send(env) => {
                w.check_send(i, &env);
                drop(w);
                if let Ok(bytes) = postcard::to_stdvec(&env) {
                    let _ = self.gossip.send(&env.to, bytes);
                }
                None
            }
            EffectKind::Freeze => {
                let text = format!("t={} ms: {} freezes: {}", w.now, self.id, effect.reason);
                w.log.push(text);
                w.slots[i].etcd.frozen = true;
                None
            }
            EffectKind::Unfreeze => {
                let text = format!("t={} ms: {} unfreezes: {}", w.now, self.id, effect.reason);
                w.log.push(text);
                w.slots[i].etcd.frozen = false;
                None
            }
            EffectKind::ReadLocalData => Some(Input::LocalData(w.slots[i].etcd.local_data())),
            EffectKind::WakeAt(_) => None,
            EffectKind::CreateRecord(record) => {
                Some(Input::CreateResult(w.create_record(i, &record)))
            }
            EffectKind::Seed(plan) => {
                let k = w.seed(i, &plan)?;
                w.seed_completed(i, k);
                Some(Input::SeedCompleted { incarnation: k })
            }
            EffectKind::Join(record) => {
                let text = format!(
                    "t={} ms: {} joins incarnation {}",
                    w.now, self.id, record.incarnation
                );
                w.log.push(text);
                w.join(i, &record);
                None
            }
            EffectKind::Alert(kind) => {
                let text = format!("{} alerts {kind:?}: {}", self.id, effect.reason);
                if !w.alerts.contains(&kind) {
                    w.alerts.push(kind);
                }
                w.note(text);
                None
            }
            EffectKind::DataLoss {
                incarnation,
                skipped,
            } => {
                w.data_loss_fired = true;
                w.note(format!(
                    "{} accepts data loss for incarnation {incarnation}, skipping {skipped:?}",
                    self.id
                ));
                None
            }
        }
    }
}
