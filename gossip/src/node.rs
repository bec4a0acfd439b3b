//! The gossip node: one task owning the socket, foca, its timers and the
//! view; a small handle to talk to it.

use crate::broadcast::{StateBroadcasts, StateItem};
use crate::identity::NodeId;
use crate::metrics::GossipMetrics;
use crate::peer_state::{PeerState, Version};
use crate::seal::Keyring;
use crate::transport::Transport;
use crate::wire::Frame;
use foca::{AccumulatingRuntime, Config, Foca, OwnedNotification, Timer};
use rand::SeedableRng;
use rand::rngs::SmallRng;
use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, SocketAddr};
use std::num::{NonZeroU8, NonZeroU32};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;
use tokio_util::time::DelayQueue;

/// First re-announce delay, and the delay after any change of membership.
const ANNOUNCE_MIN: Duration = Duration::from_millis(200);
/// Cap of the re-announce back-off.
const ANNOUNCE_MAX: Duration = Duration::from_secs(5);
/// Seeds announced to per round.
const ANNOUNCE_FANOUT: usize = 3;
/// Retransmissions per update, as a multiple of foca's LAN default.
const RETRANSMISSION_FACTOR: NonZeroU8 = NonZeroU8::new(2).expect("2 is not zero");
/// The default probe period and suspicion (docs/benchmarks.md, "Gossip",
/// measures the trade between detection and false verdicts).
pub const DEFAULT_PROBE_PERIOD: Duration = Duration::from_millis(500);
pub const DEFAULT_SUSPICION: Duration = Duration::from_millis(1500);
/// Members each periodic gossip round sends to (foca's LAN default: 3).
pub const DEFAULT_GOSSIP_FANOUT: usize = 3;
/// How often a periodic gossip round runs (foca's LAN default).
const GOSSIP_EVERY: Duration = Duration::from_millis(200);
/// Datagrams handled in a row before due timers run regardless: a flood
/// of datagrams never starves the probes.
const DATAGRAMS_BEFORE_TIMERS: usize = 64;

/// How to run a node.
#[derive(Clone, Debug)]
pub struct GossipConfig {
    pub cluster: String,
    pub instance_id: String,
    pub keys: Keyring,
    /// Addresses of the group's instances (this one may be among them).
    pub seeds: Vec<SocketAddr>,
    /// Process start time (Unix ms): the `boot` of every published version.
    pub boot: u64,
    /// Seed of the node's RNG (deterministic under simulation).
    pub rng_seed: u64,
    /// SWIM probe period: each node probes one member per period, and a
    /// member that answered neither the probe nor the indirect probes by
    /// the next period is suspected.
    pub probe_period: Duration,
    /// How long a member stays suspected before it is marked down: the time
    /// it has to refute the suspicion (a live member hears of it and says
    /// so). The false "down" verdicts under loss and pauses depend on this
    /// more than on the probe period.
    pub suspicion: Duration,
    /// How often the own state is re-published even if unchanged: a safety
    /// net for a lost broadcast (states are also published on every change
    /// and whenever a member comes up). Default: 400 ms per group member,
    /// at least 4 s, so the republish traffic per node stays flat as the
    /// group grows (see `docs/benchmarks.md`).
    pub republish_every: Duration,
    /// The address peers reach this node on (its identity). Default: the
    /// socket's local address, which is wrong for a wildcard bind.
    pub advertise: Option<SocketAddr>,
    /// Members each periodic gossip round (every 200 ms, only while there
    /// are updates to spread) sends to. More spreads news — a suspicion, a
    /// down verdict, its refutation — in fewer rounds; each update is still
    /// sent the same number of times in all, so the bytes barely change.
    pub gossip_fanout: usize,
}

impl GossipConfig {
    /// LAN defaults.
    pub fn lan(
        cluster: &str,
        instance_id: &str,
        keys: Keyring,
        seeds: Vec<SocketAddr>,
        boot: u64,
    ) -> Self {
        let republish_every = Self::default_republish_every(seeds.len());
        Self {
            cluster: cluster.into(),
            instance_id: instance_id.into(),
            keys,
            seeds,
            boot,
            rng_seed: boot ^ 0x9e37_79b9_7f4a_7c15,
            probe_period: DEFAULT_PROBE_PERIOD,
            suspicion: DEFAULT_SUSPICION,
            republish_every,
            advertise: None,
            gossip_fanout: DEFAULT_GOSSIP_FANOUT,
        }
    }

    /// The default `republish_every` for a group of `group_size`
    /// instances: 400 ms per instance, at least 4 s.
    pub fn default_republish_every(group_size: usize) -> Duration {
        Duration::from_millis(400 * group_size.max(10) as u64)
    }

    fn foca_config(&self) -> Config {
        let size = NonZeroU32::new(self.seeds.len().max(3) as u32).unwrap_or(NonZeroU32::MIN);
        let mut c = Config::new_lan(size);
        c.probe_period = self.probe_period;
        c.probe_rtt = self.probe_period / 2;
        c.suspect_to_down_after = self.suspicion;
        c.remove_down_after = Some(Duration::from_secs(60));
        // Twice foca's default retransmissions per update (4 × log10(n+1)):
        // with the default, a node now and then missed both the suspicion
        // and the down notice of a crashed member and learned it only by
        // probing the member itself, up to a whole probe cycle later.
        c.max_transmissions = c.max_transmissions.saturating_mul(RETRANSMISSION_FACTOR);
        c.max_packet_size = std::num::NonZeroUsize::new(1400 - crate::seal::OVERHEAD - 16)
            .unwrap_or(c.max_packet_size);
        c.periodic_gossip = Some(foca::PeriodicParams {
            frequency: GOSSIP_EVERY,
            num_members: std::num::NonZeroUsize::new(self.gossip_fanout)
                .unwrap_or(std::num::NonZeroUsize::MIN),
        });
        c
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Liveness {
    Up,
    Down,
}

/// What this node knows about one instance.
#[derive(Clone, Debug)]
pub struct PeerView {
    pub state: PeerState,
    pub version: Version,
    pub liveness: Liveness,
    /// When its state was last received (or it was last seen up).
    pub last_heard: Instant,
    /// How many times this node saw it go down (failed or left) since
    /// this node started: a member that flaps shows here even when it is
    /// up again by the time anyone looks.
    pub times_down: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    Up(String),
    Down(String),
    StateChanged(String),
    Message { from: String, bytes: Vec<u8> },
}

#[derive(Debug, thiserror::Error)]
pub enum GossipError {
    #[error("cannot bind the gossip socket {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("the gossip node has stopped")]
    Stopped,
}

enum Command {
    SetState(Box<PeerState>),
    Send { to: String, bytes: Vec<u8> },
    SetSeeds(Vec<SocketAddr>),
    SetPeers(HashMap<String, HashSet<IpAddr>>),
    SetKeys(Keyring),
    Shutdown(oneshot::Sender<()>),
}

/// Handle to a running node.
pub struct Gossip {
    task: tokio::task::JoinHandle<()>,
    commands: mpsc::UnboundedSender<Command>,
    view: watch::Receiver<HashMap<String, PeerView>>,
    metrics: Arc<GossipMetrics>,
    local_addr: SocketAddr,
}

impl Gossip {
    /// Binds a UDP socket and starts the node.
    pub async fn bind(
        addr: SocketAddr,
        config: GossipConfig,
        state: PeerState,
    ) -> Result<(Self, mpsc::UnboundedReceiver<Event>), GossipError> {
        let socket = tokio::net::UdpSocket::bind(addr)
            .await
            .map_err(|source| GossipError::Bind { addr, source })?;
        Self::start(socket, config, state)
    }

    /// Starts the node on any transport.
    pub fn start<T: Transport>(
        transport: T,
        config: GossipConfig,
        mut state: PeerState,
    ) -> Result<(Self, mpsc::UnboundedReceiver<Event>), GossipError> {
        let bound = transport.local_addr().map_err(|source| GossipError::Bind {
            addr: SocketAddr::from(([0, 0, 0, 0], 0)),
            source,
        })?;
        let local_addr = config.advertise.unwrap_or(bound);
        state.instance_id = config.instance_id.clone();
        state.gossip_addr = Some(local_addr);
        let (commands, rx) = mpsc::unbounded_channel();
        let (events_tx, events) = mpsc::unbounded_channel();
        let (view_tx, view) = watch::channel(HashMap::new());
        let metrics = Arc::new(GossipMetrics::default());
        let node = Node::new(
            transport,
            config,
            local_addr,
            state,
            events_tx,
            view_tx,
            metrics.clone(),
        );
        let task = tokio::spawn(node.run(rx));
        Ok((
            Self {
                task,
                commands,
                view,
                metrics,
                local_addr,
            },
            events,
        ))
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Publishes a new local state (a new version).
    pub fn set_state(&self, state: PeerState) -> Result<(), GossipError> {
        self.commands
            .send(Command::SetState(Box::new(state)))
            .map_err(|_| GossipError::Stopped)
    }

    /// Sends bytes to one instance (best effort).
    pub fn send(&self, to: &str, bytes: Vec<u8>) -> Result<(), GossipError> {
        self.commands
            .send(Command::Send {
                to: to.into(),
                bytes,
            })
            .map_err(|_| GossipError::Stopped)
    }

    pub fn set_seeds(&self, seeds: Vec<SocketAddr>) -> Result<(), GossipError> {
        self.commands
            .send(Command::SetSeeds(seeds))
            .map_err(|_| GossipError::Stopped)
    }

    /// The instances addressed messages may come from, with the addresses
    /// each sends from (the group, as its provider lists it). A message
    /// whose claimed sender is not listed, or comes from another address,
    /// is dropped and counted (`messages_rejected`). Until first set, no
    /// message is refused.
    pub fn set_peers(&self, peers: HashMap<String, HashSet<IpAddr>>) -> Result<(), GossipError> {
        self.commands
            .send(Command::SetPeers(peers))
            .map_err(|_| GossipError::Stopped)
    }

    /// Replaces the node's keyring while it runs, without a restart and
    /// without leaving: from the next datagram on, its first key seals and
    /// every one of its keys opens. Rotate across the group in three
    /// steps, each applied everywhere before the next: add the new key
    /// second, move it first, remove the old one.
    pub fn set_keys(&self, keys: Keyring) -> Result<(), GossipError> {
        self.keys_handle().set_keys(keys)
    }

    /// A handle that can only replace the keyring ([`Self::set_keys`]),
    /// for a task that watches where the keys come from.
    pub fn keys_handle(&self) -> KeysHandle {
        KeysHandle {
            commands: self.commands.clone(),
        }
    }

    /// Instance id → what this node knows (including itself).
    pub fn view(&self) -> HashMap<String, PeerView> {
        self.view.borrow().clone()
    }

    pub fn watch(&self) -> watch::Receiver<HashMap<String, PeerView>> {
        self.view.clone()
    }

    pub fn metrics(&self) -> Arc<GossipMetrics> {
        self.metrics.clone()
    }

    /// Leaves the cluster (others learn it at once), stops, and releases
    /// the socket.
    pub async fn shutdown(self) {
        let (tx, rx) = oneshot::channel();
        if self.commands.send(Command::Shutdown(tx)).is_ok() {
            let _ = tokio::time::timeout(Duration::from_secs(2), rx).await;
        }
        drop(self.commands);
        let mut task = self.task;
        if tokio::time::timeout(Duration::from_secs(2), &mut task)
            .await
            .is_err()
        {
            task.abort();
        }
    }
}

/// Replaces a running node's keyring ([`Gossip::set_keys`]); cloneable,
/// and usable after the [`Gossip`] handle moved elsewhere.
#[derive(Clone)]
pub struct KeysHandle {
    commands: mpsc::UnboundedSender<Command>,
}

impl KeysHandle {
    /// See [`Gossip::set_keys`].
    pub fn set_keys(&self, keys: Keyring) -> Result<(), GossipError> {
        self.commands
            .send(Command::SetKeys(keys))
            .map_err(|_| GossipError::Stopped)
    }

    /// Whether the node has stopped (no keys can be set any more).
    pub fn is_stopped(&self) -> bool {
        self.commands.is_closed()
    }
}

type FocaNode = Foca<NodeId, foca::PostcardCodec, SmallRng, StateBroadcasts>;

struct Node<T: Transport> {
    transport: Arc<T>,
    config: GossipConfig,
    me: String,
    foca: FocaNode,
    runtime: AccumulatingRuntime<NodeId>,
    timers: DelayQueue<Timer<NodeId>>,
    broadcasts: StateBroadcasts,
    state: PeerState,
    /// The version of the last state published: `boot` is the process
    /// start (or higher after refuting a forged state of this instance).
    published: Version,
    /// Datagrams handled since timers last ran.
    datagrams_in_a_row: usize,
    /// Who may send addressed messages, from where (`Gossip::set_peers`).
    peers: Option<HashMap<String, HashSet<IpAddr>>>,
    liveness: HashMap<String, (Liveness, Instant)>,
    /// Instance id → how many times it went down (`PeerView::times_down`).
    times_down: HashMap<String, u64>,
    /// Instance id → the address of its identity that last came up (or
    /// was renamed): where addressed messages go. Not taken from SWIM's
    /// sends: foca keeps probing an instance's old identity (the address
    /// a restarted pod no longer has) until it is declared down, and a
    /// message must go to the new one meanwhile.
    addresses: HashMap<String, SocketAddr>,
    events: mpsc::UnboundedSender<Event>,
    view: watch::Sender<HashMap<String, PeerView>>,
    metrics: Arc<GossipMetrics>,
    announce_delay: Duration,
    next_announce: Instant,
    /// Where the next announce round starts among the missing seeds.
    announce_cursor: usize,
    advertised: SocketAddr,
}

impl<T: Transport> Node<T> {
    fn new(
        transport: T,
        config: GossipConfig,
        local_addr: SocketAddr,
        state: PeerState,
        events: mpsc::UnboundedSender<Event>,
        view: watch::Sender<HashMap<String, PeerView>>,
        metrics: Arc<GossipMetrics>,
    ) -> Self {
        let broadcasts = StateBroadcasts {
            me: config.instance_id.clone(),
            metrics: metrics.clone(),
            reads_up_to: state.formats.reads,
            ..StateBroadcasts::default()
        };
        let boot = config.boot;
        let identity = NodeId {
            instance: config.instance_id.clone(),
            addr: local_addr,
            boot,
            bump: 0,
        };
        let foca = Foca::with_custom_broadcast(
            identity,
            config.foca_config(),
            SmallRng::seed_from_u64(config.rng_seed),
            foca::PostcardCodec,
            broadcasts.clone(),
        );
        Self {
            transport: Arc::new(transport),
            me: config.instance_id.clone(),
            config,
            foca,
            runtime: AccumulatingRuntime::new(),
            timers: DelayQueue::new(),
            broadcasts,
            state,
            published: Version { boot, sequence: 0 },
            datagrams_in_a_row: 0,
            peers: None,
            liveness: HashMap::new(),
            times_down: HashMap::new(),
            addresses: HashMap::new(),
            events,
            view,
            metrics,
            announce_delay: ANNOUNCE_MIN,
            next_announce: Instant::now(),
            announce_cursor: 0,
            advertised: local_addr,
        }
    }

    /// Another keyholder's state of this instance newer than what it
    /// published, taken from the broadcast handler. Our own states relayed
    /// back are not newer and are dropped here; one equal to ours is
    /// outdone by our next publication anyway.
    fn take_forged_claim(&self) -> Option<Version> {
        let mut held = self
            .broadcasts
            .held
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        held.own_claimed.take().filter(|c| *c > self.published)
    }

    fn publish(&mut self) {
        let forged = self.take_forged_claim();
        self.publish_above(forged);
    }

    /// Publishes the state with the next version, above `forged` when
    /// another keyholder published a newer state of this instance (the
    /// refutation, as SWIM refutes a suspicion).
    fn publish_above(&mut self, forged: Option<Version>) {
        let version = match forged {
            None => Version {
                sequence: self.published.sequence + 1,
                ..self.published
            },
            Some(c) => {
                GossipMetrics::add(&self.metrics.states_refused, 1);
                tracing::warn!(
                    claimed_boot = c.boot,
                    claimed_sequence = c.sequence,
                    "another keyholder published this instance's state; publishing above it"
                );
                Version {
                    boot: c.boot,
                    sequence: c.sequence + 1,
                }
            }
        };
        self.published = version;
        let item = StateItem {
            version,
            state: self.state.clone(),
        };
        match item.encode() {
            Ok(bytes) => {
                if let Err(e) = self.foca.add_broadcast(&bytes) {
                    tracing::warn!(error = %e, "cannot publish the local state");
                }
            }
            Err(e) => tracing::warn!(error = %e, "cannot encode the local state"),
        }
    }

    fn active_members(&self) -> usize {
        self.foca.iter_members().count()
    }

    async fn run(mut self, mut commands: mpsc::UnboundedReceiver<Command>) {
        self.publish();
        let mut republish = tokio::time::interval(self.config.republish_every);
        let mut buf = vec![0u8; 65_536];
        let transport = self.transport.clone();
        loop {
            if self.datagrams_in_a_row >= DATAGRAMS_BEFORE_TIMERS {
                self.run_due_timers();
            }
            tokio::select! {
                biased;
                command = commands.recv() => match command {
                    None => break,
                    Some(Command::Shutdown(done)) => {
                        let _ = self.foca.leave_cluster(&mut self.runtime);
                        self.flush().await;
                        let _ = done.send(());
                        break;
                    }
                    Some(Command::SetState(s)) => {
                        self.state = *s;
                        self.state.instance_id = self.me.clone();
                        self.state.gossip_addr = Some(self.advertised);
                        self.publish();
                        let _ = self.foca.gossip(&mut self.runtime);
                    }
                    Some(Command::Send { to, bytes }) => self.send_message(to, bytes).await,
                    Some(Command::SetSeeds(seeds)) => self.config.seeds = seeds,
                    Some(Command::SetPeers(peers)) => self.peers = Some(peers),
                    Some(Command::SetKeys(keys)) => {
                        self.config.keys = keys;
                        GossipMetrics::add(&self.metrics.keyring_changes, 1);
                    }
                },
                received = transport.recv_from(&mut buf) => {
                    self.datagrams_in_a_row += 1;
                    if let Ok((n, from)) = received {
                        self.receive(&buf[..n], from);
                    }
                }
                Some(expired) = std::future::poll_fn(|cx| self.timers.poll_expired(cx)) => {
                    self.datagrams_in_a_row = 0;
                    let _ = self.foca.handle_timer(expired.into_inner(), &mut self.runtime);
                }
                _ = tokio::time::sleep_until(self.next_announce) => {
                    self.datagrams_in_a_row = 0;
                    self.announce();
                }
                _ = republish.tick() => {
                    self.datagrams_in_a_row = 0;
                    self.publish();
                }
            }
            self.flush().await;
        }
    }

    fn receive(&mut self, datagram: &[u8], source: SocketAddr) {
        GossipMetrics::add(&self.metrics.datagrams_received, 1);
        GossipMetrics::add(&self.metrics.bytes_received, datagram.len() as u64);
        let Some(plain) = self.config.keys.open(datagram) else {
            GossipMetrics::add(&self.metrics.datagrams_rejected, 1);
            return;
        };
        match Frame::decode(&plain) {
            Some(Frame::Swim(bytes)) => {
                // foca declines stale or misaddressed packets; they opened
                // fine, so they are not counted as rejected.
                if let Err(e) = self.foca.handle_data(&bytes, &mut self.runtime) {
                    tracing::trace!(error = %e, "foca declined a packet");
                }
                if let Some(forged) = self.take_forged_claim() {
                    self.publish_above(Some(forged));
                }
            }
            Some(Frame::Message { from, to, bytes }) if to == self.me => {
                if self.sent_from(&from, source) {
                    let _ = self.events.send(Event::Message { from, bytes });
                } else {
                    GossipMetrics::add(&self.metrics.messages_rejected, 1);
                    tracing::debug!(claimed = %from, %source, "dropped a message whose sender is not the member at its source address");
                }
            }
            Some(Frame::Message { .. }) => {}
            None => GossipMetrics::add(&self.metrics.datagrams_rejected, 1),
        }
    }

    /// Runs the timers (and an announcement) that are due, without waiting:
    /// after [`DATAGRAMS_BEFORE_TIMERS`] datagrams in a row, so a flood can
    /// never starve the probes that keep membership. Datagrams otherwise
    /// come first, so an ack already received is read before its probe
    /// times out.
    fn run_due_timers(&mut self) {
        self.datagrams_in_a_row = 0;
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        while let std::task::Poll::Ready(Some(expired)) = self.timers.poll_expired(&mut cx) {
            let _ = self
                .foca
                .handle_timer(expired.into_inner(), &mut self.runtime);
        }
        if Instant::now() >= self.next_announce {
            self.announce();
        }
    }

    /// Whether `instance` may have sent a message from `source` (the
    /// datagram's address): it is one of the peers set, sending from one of
    /// its addresses — so a keyholder can neither speak for another nor
    /// from outside the group. The group's addresses come from its provider,
    /// not from gossip (whose view lags a restart), so a message is never
    /// refused for membership news not yet heard.
    fn sent_from(&self, instance: &str, source: SocketAddr) -> bool {
        match &self.peers {
            None => true,
            Some(peers) => peers
                .get(instance)
                .is_some_and(|ips| ips.contains(&source.ip().to_canonical())),
        }
    }

    /// While some seeds are not among the members, announce to a few of
    /// them (round-robin, at most [`ANNOUNCE_FANOUT`] per round) with
    /// back-off: foca does not recover from zero members by itself, and a
    /// healed partition must converge in seconds. Announcing to every seed
    /// each round would cost every node a datagram (and a full membership
    /// feed in reply) per seed while a single seed is down.
    fn announce(&mut self) {
        let members: HashSet<SocketAddr> = self.foca.iter_members().map(|m| m.id().addr).collect();
        let missing: Vec<SocketAddr> = self
            .config
            .seeds
            .iter()
            .copied()
            .filter(|s| *s != self.advertised && !members.contains(s))
            .collect();
        if missing.is_empty() {
            self.announce_delay = ANNOUNCE_MIN;
        } else {
            for k in 0..missing.len().min(ANNOUNCE_FANOUT) {
                let addr = missing[(self.announce_cursor + k) % missing.len()];
                let dst = NodeId {
                    instance: String::new(),
                    addr,
                    boot: 0,
                    bump: 0,
                };
                let _ = self.foca.announce(dst, &mut self.runtime);
            }
            self.announce_cursor = self.announce_cursor.wrapping_add(ANNOUNCE_FANOUT);
            self.announce_delay = (self.announce_delay * 2).min(ANNOUNCE_MAX);
        }
        self.next_announce = Instant::now() + self.announce_delay;
    }

    async fn send_datagram(&self, to: SocketAddr, frame: &Frame) {
        let Ok(plain) = frame.encode() else { return };
        let Ok(sealed) = self.config.keys.seal(&plain) else {
            return;
        };
        if self.transport.send_to(&sealed, to).await.is_ok() {
            GossipMetrics::add(&self.metrics.datagrams_sent, 1);
            GossipMetrics::add(&self.metrics.bytes_sent, sealed.len() as u64);
        }
    }

    async fn send_message(&mut self, to: String, bytes: Vec<u8>) {
        let addr = self.addresses.get(&to).copied().or_else(|| {
            self.broadcasts
                .held
                .lock()
                .ok()
                .and_then(|h| h.states.get(&to).and_then(|(_, s)| s.gossip_addr))
        });
        if let Some(addr) = addr {
            let frame = Frame::Message {
                from: self.me.clone(),
                to,
                bytes,
            };
            self.send_datagram(addr, &frame).await;
        }
    }

    /// Sends what foca queued, schedules its timers, turns its notifications
    /// into events, and publishes the view.
    async fn flush(&mut self) {
        while let Some((to, data)) = self.runtime.to_send() {
            self.send_datagram(to.addr, &Frame::Swim(data.to_vec()))
                .await;
        }
        while let Some((after, timer)) = self.runtime.to_schedule() {
            self.timers.insert(timer, after);
        }
        let mut changed_liveness = false;
        while let Some(n) = self.runtime.to_notify() {
            match n {
                OwnedNotification::MemberUp(id) => {
                    self.addresses.insert(id.instance.clone(), id.addr);
                    self.liveness
                        .insert(id.instance.clone(), (Liveness::Up, Instant::now()));
                    let _ = self.events.send(Event::Up(id.instance));
                    changed_liveness = true;
                    // A newcomer learns our state without waiting.
                    self.publish();
                }
                OwnedNotification::MemberDown(id) => {
                    let still_up = self
                        .foca
                        .iter_members()
                        .any(|m| m.id().instance == id.instance);
                    if !still_up {
                        let at = self
                            .liveness
                            .get(&id.instance)
                            .map(|(_, t)| *t)
                            .unwrap_or_else(Instant::now);
                        self.liveness
                            .insert(id.instance.clone(), (Liveness::Down, at));
                        *self.times_down.entry(id.instance.clone()).or_default() += 1;
                        let _ = self.events.send(Event::Down(id.instance));
                        changed_liveness = true;
                    }
                }
                OwnedNotification::Rename(_, id) => {
                    self.addresses.insert(id.instance.clone(), id.addr);
                }
                OwnedNotification::Idle | OwnedNotification::Defunct => {
                    self.next_announce = Instant::now();
                    self.announce_delay = ANNOUNCE_MIN;
                    if matches!(n, OwnedNotification::Defunct) {
                        let _ = self.foca.reuse_down_identity();
                    }
                }
                _ => {}
            }
        }
        GossipMetrics::set(&self.metrics.members_up, self.active_members() as u64);
        let changed: Vec<String> = match self.broadcasts.held.lock() {
            Ok(mut h) => std::mem::take(&mut h.changed),
            Err(_) => Vec::new(),
        };
        if changed.is_empty() && !changed_liveness {
            return;
        }
        let now = Instant::now();
        for id in &changed {
            if id != &self.me {
                let _ = self.events.send(Event::StateChanged(id.clone()));
            }
            let up = self
                .liveness
                .get(id)
                .map(|(l, _)| *l == Liveness::Up)
                .unwrap_or(false);
            if up || id == &self.me {
                self.liveness.insert(id.clone(), (Liveness::Up, now));
            } else if let Some(entry) = self.liveness.get_mut(id) {
                entry.1 = now;
            } else {
                self.liveness.insert(id.clone(), (Liveness::Up, now));
            }
        }
        let view: HashMap<String, PeerView> = match self.broadcasts.held.lock() {
            Ok(h) => h
                .states
                .iter()
                .map(|(id, (version, state))| {
                    let (liveness, last_heard) = if id == &self.me {
                        (Liveness::Up, now)
                    } else {
                        self.liveness
                            .get(id)
                            .copied()
                            .unwrap_or((Liveness::Down, now))
                    };
                    (
                        id.clone(),
                        PeerView {
                            state: state.clone(),
                            version: *version,
                            liveness,
                            last_heard,
                            times_down: self.times_down.get(id).copied().unwrap_or(0),
                        },
                    )
                })
                .collect(),
            Err(_) => return,
        };
        let _ = self.view.send(view);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> GossipConfig {
        let keys = Keyring::new(&[[7u8; 32]], "c").expect("a key");
        let seeds = vec!["127.0.0.1:7946".parse().expect("an address")];
        GossipConfig::lan("c", "i", keys, seeds, 1)
    }

    #[test]
    fn the_defaults_are_what_the_benchmarks_measured() {
        let c = config().foca_config();
        assert_eq!(c.probe_period, Duration::from_millis(500));
        assert_eq!(c.probe_rtt, Duration::from_millis(250));
        assert_eq!(c.suspect_to_down_after, Duration::from_millis(1500));
        let gossip = c.periodic_gossip.expect("periodic gossip");
        assert_eq!(
            (gossip.frequency, gossip.num_members.get()),
            (GOSSIP_EVERY, 3)
        );
    }

    #[test]
    fn the_suspicion_and_the_fan_out_are_set_apart_from_the_probe_period() {
        let mut g = config();
        g.probe_period = Duration::from_millis(300);
        g.suspicion = Duration::from_secs(2);
        g.gossip_fanout = 5;
        let c = g.foca_config();
        assert_eq!(c.probe_period, Duration::from_millis(300));
        assert_eq!(c.suspect_to_down_after, Duration::from_secs(2));
        assert_eq!(c.periodic_gossip.map(|p| p.num_members.get()), Some(5));
        g.gossip_fanout = 0;
        assert_eq!(
            g.foca_config().periodic_gossip.map(|p| p.num_members.get()),
            Some(1),
            "a fan-out of 0 sends to one member"
        );
    }
}
