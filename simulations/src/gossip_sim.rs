//! N gossip nodes on turmoil. Each host runs a real `gossip::Gossip` and
//! mirrors what it sees into a shared board the driver reads between
//! simulation steps; the driver can also ask a host to change its phase,
//! to send an addressed message, and start an instance on a new host (a
//! pod rescheduled under its name with a new IP: [`move_instance`]).

use crate::sim_transport::SimSocket;
use gossip::{Gossip, GossipConfig, GossipMetrics, Keyring, Liveness, PeerState};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub const PORT: u16 = 7946;
const KEY: [u8; 32] = [0x5a; 32];

/// What one instance sees: instance id → (up, phase).
pub type Seen = HashMap<String, (bool, String)>;

/// What the driver asks an instance to send: (to, bytes).
pub type Outgoing = Vec<(String, Vec<u8>)>;

#[derive(Default)]
pub struct Board {
    pub seen: HashMap<String, Seen>,
    pub metrics: HashMap<String, Arc<GossipMetrics>>,
    /// Phase each host should publish (changed by the driver).
    pub wanted_phase: HashMap<String, String>,
    pub boots: HashMap<String, u64>,
    /// What each instance saw: instance id → how many times it saw it go
    /// down.
    pub times_down: HashMap<String, HashMap<String, u64>>,
    /// Addressed messages each instance should send (taken once sent).
    pub outbox: HashMap<String, Outgoing>,
    /// Addressed messages each instance received: (from, bytes).
    pub inbox: HashMap<String, Vec<(String, Vec<u8>)>>,
}

pub type Shared = Arc<Mutex<Board>>;

/// The gossip settings a simulation runs with.
#[derive(Clone, Copy, Debug)]
pub struct Tuning {
    pub probe: Duration,
    pub suspicion: Duration,
    /// Members each periodic gossip round sends to.
    pub gossip_fanout: usize,
}

impl Default for Tuning {
    /// eco's own settings.
    fn default() -> Self {
        Tuning {
            probe: gossip::DEFAULT_PROBE_PERIOD,
            suspicion: gossip::DEFAULT_SUSPICION,
            gossip_fanout: gossip::DEFAULT_GOSSIP_FANOUT,
        }
    }
}

pub fn name(i: usize) -> String {
    format!("n{i}")
}

/// Builds a simulation of `n` nodes; returns it and the shared board.
pub fn build<'a>(n: usize, seed: u64, loss: f64, tuning: Tuning) -> (turmoil::Sim<'a>, Shared) {
    let mut b = turmoil::Builder::new();
    b.rng_seed(seed)
        .simulation_duration(Duration::from_secs(3600))
        .min_message_latency(Duration::from_micros(200))
        .max_message_latency(Duration::from_millis(5))
        .fail_rate(loss)
        .repair_rate(1.0);
    let mut sim = b.build();
    let board: Shared = Arc::new(Mutex::new(Board::default()));
    for i in 0..n {
        let id = name(i);
        let board = board.clone();
        let host_name = id.clone();
        sim.host(host_name, move || {
            host(id.clone(), id.clone(), n, seed, tuning, board.clone())
        });
    }
    (sim, board)
}

/// Starts instance `instance` again on a new host `on` (its own address):
/// the old host should be crashed first. The other instances' seeds stay
/// the first hosts' addresses; the new host announces itself to them.
pub fn move_instance(
    sim: &mut turmoil::Sim,
    board: &Shared,
    instance: &str,
    on: &str,
    n: usize,
    seed: u64,
    tuning: Tuning,
) {
    let (instance, on) = (instance.to_string(), on.to_string());
    let board = board.clone();
    let host_name = on.clone();
    sim.host(host_name, move || {
        host(on.clone(), instance.clone(), n, seed, tuning, board.clone())
    });
}

async fn host(
    on: String,
    id: String,
    n: usize,
    seed: u64,
    tuning: Tuning,
    board: Shared,
) -> turmoil::Result {
    let socket = turmoil::net::UdpSocket::bind((std::net::Ipv4Addr::UNSPECIFIED, PORT)).await?;
    let advertise = SocketAddr::new(turmoil::lookup(on.as_str()), PORT);
    let seeds: Vec<SocketAddr> = (0..n)
        .map(|i| SocketAddr::new(turmoil::lookup(name(i)), PORT))
        .collect();
    let boot = turmoil::sim_elapsed()
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
        + 1;
    let keys = Keyring::new(&[KEY], "sim")?;
    let mut config = GossipConfig::lan("sim", &id, keys, seeds, boot);
    config.rng_seed = seed ^ (boot << 8) ^ id.len() as u64 ^ id.bytes().map(u64::from).sum::<u64>();
    config.probe_period = tuning.probe;
    config.suspicion = tuning.suspicion;
    config.gossip_fanout = tuning.gossip_fanout;
    config.advertise = Some(advertise);
    let phase = board
        .lock()
        .map(|b| {
            b.wanted_phase
                .get(&id)
                .cloned()
                .unwrap_or_else(|| "up".into())
        })
        .unwrap_or_default();
    let (g, mut events) = Gossip::start(
        SimSocket(socket),
        config,
        PeerState {
            phase: phase.clone(),
            ..Default::default()
        },
    )?;
    if let Ok(mut b) = board.lock() {
        b.metrics.insert(id.clone(), g.metrics());
        b.boots.insert(id.clone(), boot);
    }
    let mut published = phase;
    loop {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let view = g.view();
        let Ok(mut b) = board.lock() else { continue };
        let down: HashMap<String, u64> = view
            .iter()
            .map(|(k, v)| (k.clone(), v.times_down))
            .collect();
        b.times_down.insert(id.clone(), down);
        let seen: Seen = view
            .into_iter()
            .map(|(k, v)| (k, (v.liveness == Liveness::Up, v.state.phase)))
            .collect();
        b.seen.insert(id.clone(), seen);
        while let Ok(event) = events.try_recv() {
            if let gossip::Event::Message { from, bytes } = event {
                b.inbox.entry(id.clone()).or_default().push((from, bytes));
            }
        }
        for (to, bytes) in b.outbox.remove(&id).unwrap_or_default() {
            let _ = g.send(&to, bytes);
        }
        if let Some(want) = b.wanted_phase.get(&id).cloned()
            && want != published
        {
            let _ = g.set_state(PeerState {
                phase: want.clone(),
                ..Default::default()
            });
            published = want;
        }
    }
}

/// True when every host in `live` sees every host in `live` up with the
/// phase `phase(host)`, and sees every host in `dead` down or not at all.
pub fn converged(
    board: &Shared,
    live: &[String],
    dead: &[String],
    phase: impl Fn(&str) -> String,
) -> bool {
    let Ok(b) = board.lock() else { return false };
    live.iter().all(|h| {
        let Some(seen) = b.seen.get(h) else {
            return false;
        };
        live.iter()
            .all(|o| seen.get(o).is_some_and(|(up, p)| *up && *p == phase(o)))
            && dead.iter().all(|o| seen.get(o).is_none_or(|(up, _)| !*up))
    })
}

/// Steps `sim` until `done` or `limit` of simulated time passes; returns the
/// simulated time it took.
pub fn step_until(
    sim: &mut turmoil::Sim,
    limit: Duration,
    mut done: impl FnMut() -> bool,
) -> Option<Duration> {
    let start = sim.elapsed();
    while sim.elapsed() - start < limit {
        if sim.step().is_err() {
            return None;
        }
        if done() {
            return Some(sim.elapsed() - start);
        }
    }
    None
}
