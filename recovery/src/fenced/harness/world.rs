//! The simulated world: instances running the real `Protocol`, a lossy and
//! reordering network, a store with conditional create and outages, a
//! provider, crashes and restarts (with or without the disk), and a model
//! of the old etcd cluster (it has a leader while a quorum of `V_n` runs
//! unfrozen with its data). Single-threaded, driven by an event queue.

use super::invariants::{Invariants, plan_target};
use super::rng::Rng;
use super::scenario::{FAULTS_UNTIL, Fate, Kind, Scenario};
use crate::fenced::ids::{Incarnation, InstanceId, Millis, majority};
use crate::fenced::{
    AlertKind, Ballot, CreateResult, DetectorSample, Effect, EffectKind, Envelope, Faults,
    GroupFacts, Input, LocalData, Message, PeerFact, Probe, Protocol, ProtocolConfig,
    RecordListing, SeedPlan, SeedRecord, SeedSource, SeedValue, SnapshotFacts, SnapshotListing,
    StoreFacts, decode, encode,
};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};

pub const OLD: Incarnation = 3;
const CLUSTER: u64 = 77;
const OBSERVE_EVERY: Millis = 2_000;
const LIST_EVERY: Millis = 5_000;
/// After the faults stop, a decision (or a healed cluster) is due within this.
pub const LIVENESS_BOUND: Millis = 400_000;

pub fn sim_config(accept_loss_after: Option<Millis>, faults: Faults) -> ProtocolConfig {
    ProtocolConfig {
        quorum_loss_timeout: 20_000,
        min_probes: 2,
        peer_fresh: 6_000,
        takeover_after: 10_000,
        takeover_jitter: 10_000,
        retransmit_every: 1_000,
        max_backoff_exponent: 3,
        accept_loss_after,
        faults,
    }
}

#[derive(Clone, Debug)]
enum Ev {
    Deliver(Envelope),
    Observe(usize, u64),
    Wake(usize, u64),
    Input(usize, u64, Input),
    List(usize, u64),
    Create(usize, u64, SeedRecord),
    Crash(usize, bool),
    Restart(usize),
    Terminate(usize),
    Boot(usize),
    /// The hostile keyholder sends one forged message.
    Forge,
}

/// The id the hostile keyholder signs with: never an instance of the group.
pub const FORGER: &str = "mallory";

pub struct Node {
    pub id: InstanceId,
    pub proto: Option<Protocol>,
    pub disk: Option<Vec<u8>>,
    pub data: LocalData,
    /// Restart counter; events of a previous life are dropped.
    pub life: u64,
    pub terminated: bool,
    pub certified_gone: bool,
    pub wiped_ever: bool,
    /// A member of `V_n` (else a fresh replacement).
    pub voter: bool,
    pub present: bool,
    pub next_wake: Option<Millis>,
    /// Gossip view of this instance: facts about the others.
    pub view: BTreeMap<InstanceId, PeerFact>,
    /// The started learners its state file lists beside `V_n`.
    pub learners: Vec<InstanceId>,
}

pub struct World {
    pub rng: Rng,
    pub sc: Scenario,
    pub faults: Faults,
    pub now: Millis,
    seq: u64,
    queue: BinaryHeap<Reverse<(Millis, u64)>>,
    events: BTreeMap<u64, Ev>,
    pub nodes: Vec<Node>,
    pub index: BTreeMap<InstanceId, usize>,
    /// `V_n` of the old incarnation as it truly is (etcd's member list).
    pub voters: Vec<InstanceId>,
    pub records: BTreeMap<Incarnation, SeedRecord>,
    /// The learners the store's record of the old incarnation lists.
    pub record_learners: BTreeMap<Incarnation, Vec<InstanceId>>,
    pub snapshot: Option<SnapshotFacts>,
    /// The invariants (one set, shared with the turmoil simulation), with
    /// the seeds executed and the violations found.
    pub inv: Invariants,
    pub alerts: Vec<AlertKind>,
    pub data_loss_fired: bool,
    pub healthy_at: Option<Millis>,
    pub steps: u64,
    /// The newest incarnation seeded so far (`OLD` until a seed) and its
    /// voters: the cluster the probes and gossip facts are about.
    pub current: Incarnation,
    pub current_voters: Vec<InstanceId>,
    /// The scenario's coordinator crash has happened.
    pub coordinator_crashed: bool,
    /// The forger's own stream: forgeries never change what the rest of a
    /// seed does.
    forge_rng: Rng,
}

impl World {
    pub fn new(seed: u64, faults: Faults) -> World {
        let sc = Scenario::generate(seed);
        let mut rng = Rng::new(seed);
        let n = sc.nodes;
        let voters: Vec<InstanceId> = (0..n).map(|i| format!("i-{i:02}")).collect();
        let mut nodes = Vec::new();
        let wiped = !matches!(sc.kind, Kind::QuorumLoss | Kind::Aftermath);
        // The aftermath of a recovery: who votes, who learns, what each
        // view lists (scenario.rs, `Aftermath`).
        let after = sc.aftermath.clone();
        let view = |promoted: usize| -> Vec<InstanceId> {
            let mut v: Vec<InstanceId> = voters[..=promoted].to_vec();
            v.sort();
            v
        };
        let true_voters: Vec<InstanceId> = match &after {
            Some(a) => view(a.promoted),
            None => voters.clone(),
        };
        let learner_id = after
            .as_ref()
            .and_then(|a| a.learner_index())
            .map(|i| voters[i].clone());
        for (i, id) in voters.iter().enumerate() {
            let holds = match &after {
                Some(a) => i <= a.promoted || a.learner_index() == Some(i),
                None => !wiped,
            };
            let data = if holds {
                LocalData {
                    cluster_id: Some(CLUSTER),
                    incarnation: OLD,
                    commit_index: sc.commits[i],
                    applied_revision: sc.commits[i] * 2,
                    has_data: true,
                }
            } else {
                LocalData::empty()
            };
            let (state_voters, learners) = match &after {
                Some(a) if holds => {
                    let seen = a.view_promoted[i];
                    // A view that saw every promotion sees the learner.
                    let learners = learner_id
                        .clone()
                        .filter(|_| seen == a.promoted)
                        .into_iter()
                        .collect();
                    (Some(view(seen)), learners)
                }
                // Joined the new incarnation, not a member yet: the record
                // it read when it joined.
                Some(a) if a.joiners_have_state => (Some(view(a.record_promoted)), Vec::new()),
                Some(_) => (None, Vec::new()),
                None if wiped => (None, Vec::new()),
                None => (Some(voters.clone()), Vec::new()),
            };
            let disk = state_voters.and_then(|v| {
                encode(&crate::fenced::PersistedState {
                    incarnation: OLD,
                    voters: v,
                    ..Default::default()
                })
                .ok()
            });
            nodes.push(Node {
                id: id.clone(),
                proto: None,
                disk,
                data,
                life: 0,
                terminated: false,
                certified_gone: false,
                wiped_ever: !holds,
                voter: true_voters.contains(id),
                present: true,
                next_wake: None,
                view: BTreeMap::new(),
                learners,
            });
        }
        // Replacements for terminated members.
        for (i, f) in sc.fates.iter().enumerate() {
            if let Fate::Terminated(_) = f {
                nodes.push(Node {
                    id: format!("r-{i:02}"),
                    proto: None,
                    disk: None,
                    data: LocalData::empty(),
                    life: 0,
                    terminated: false,
                    certified_gone: false,
                    wiped_ever: true,
                    voter: false,
                    present: false,
                    next_wake: None,
                    view: BTreeMap::new(),
                    learners: Vec::new(),
                });
            }
        }
        let index = nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.id.clone(), i))
            .collect();
        let mut records = BTreeMap::new();
        for k in 1..=OLD {
            records.insert(
                k,
                SeedRecord {
                    incarnation: k,
                    value: crate::fenced::SeedValue {
                        source: SeedSource::Empty,
                        seeder: voters[0].clone(),
                    },
                    ballot: Ballot::new(0, ""),
                    voters: match (&after, k == OLD) {
                        (Some(a), true) => view(a.record_promoted),
                        (None, true) => voters.clone(),
                        (_, false) => vec![voters[0].clone()],
                    },
                    token_suffix: k,
                    data_loss: false,
                },
            );
        }
        let snapshot = sc.snapshot.map(|(inc, commit)| SnapshotFacts {
            name: format!("snap-{inc}-{commit:012}"),
            cluster_id: Some(if inc == OLD { CLUSTER } else { 66 }),
            incarnation: inc,
            commit_index: commit,
            revision: commit * 2,
        });
        let record_learners: BTreeMap<Incarnation, Vec<InstanceId>> = match &after {
            Some(a) if a.record_learner => learner_id
                .clone()
                .map(|l| BTreeMap::from([(OLD, vec![l])]))
                .unwrap_or_default(),
            _ => BTreeMap::new(),
        };
        let mut w = World {
            rng: Rng::new(rng.next_u64()),
            sc,
            faults,
            now: 0,
            seq: 0,
            queue: BinaryHeap::new(),
            events: BTreeMap::new(),
            nodes,
            index,
            voters: true_voters,
            records,
            record_learners,
            snapshot,
            inv: Invariants::default(),
            alerts: Vec::new(),
            data_loss_fired: false,
            healthy_at: None,
            steps: 0,
            current: OLD,
            current_voters: Vec::new(),
            coordinator_crashed: false,
            forge_rng: Rng::new(seed.wrapping_mul(977).wrapping_add(3)),
        };
        w.current_voters = w.voters.clone();
        for t in w.sc.forgeries.clone() {
            w.at(t, Ev::Forge);
        }
        for i in 0..w.sc.nodes {
            w.at(0, Ev::Boot(i));
            match w.sc.fates[i] {
                Fate::Stays => {}
                Fate::Restarts(t) => {
                    w.at(1, Ev::Crash(i, false));
                    w.at(t, Ev::Restart(i));
                }
                Fate::Wiped(t) => {
                    w.at(1, Ev::Crash(i, true));
                    w.at(t, Ev::Restart(i));
                }
                Fate::Terminated(t) => {
                    w.at(1, Ev::Crash(i, true));
                    w.at(t, Ev::Terminate(i));
                }
                Fate::Forever => w.at(1, Ev::Crash(i, false)),
            }
        }
        w
    }

    fn at(&mut self, t: Millis, ev: Ev) {
        self.seq += 1;
        self.queue.push(Reverse((t, self.seq)));
        self.events.insert(self.seq, ev);
    }

    fn faulty(&self) -> bool {
        self.now < FAULTS_UNTIL
    }

    pub fn cfg(&self) -> ProtocolConfig {
        sim_config(self.sc.accept_loss_after, self.faults.clone())
    }

    /// Whether node `n` runs etcd of incarnation `k` (`OLD` or the current
    /// one), unfrozen, as one of its voters.
    fn runs(&self, n: &Node, k: Incarnation) -> bool {
        let member = if k == OLD {
            n.voter
        } else {
            self.current_voters.contains(&n.id)
        };
        member
            && n.data.has_data
            && n.data.incarnation == k
            && n.proto
                .as_ref()
                .is_some_and(|p| !p.is_frozen() && p.state().incarnation == k)
    }

    fn runners(&self, k: Incarnation) -> usize {
        self.nodes.iter().filter(|n| self.runs(n, k)).count()
    }

    /// The current incarnation has a leader: a majority of its voters runs
    /// it. (Before any seed, the old incarnation of a quorum-loss scenario.)
    pub fn current_has_leader(&self) -> bool {
        if self.current == OLD {
            return self.old_has_leader();
        }
        self.runners(self.current) >= majority(self.current_voters.len())
    }

    /// The data a node holds once it runs incarnation `k` seeded from `r`.
    fn seeded_data(r: &SeedRecord) -> LocalData {
        let commit = match &r.value.source {
            SeedSource::Member { commit_index, .. } | SeedSource::Store { commit_index, .. } => {
                *commit_index
            }
            SeedSource::Empty => 0,
        };
        LocalData {
            cluster_id: Some(1_000 + r.incarnation),
            incarnation: r.incarnation,
            commit_index: commit,
            applied_revision: commit * 2,
            has_data: true,
        }
    }

    pub fn old_has_leader(&self) -> bool {
        matches!(self.sc.kind, Kind::QuorumLoss | Kind::Aftermath)
            && self.runners(OLD) >= majority(self.voters.len())
    }

    pub fn decided(&self) -> bool {
        self.inv.seeds.keys().any(|k| *k > OLD)
    }

    /// Run until done; returns the time of the decision (seed), if any.
    pub fn run(&mut self) -> Option<Millis> {
        let end = FAULTS_UNTIL + LIVENESS_BOUND;
        while let Some(Reverse((t, seq))) = self.queue.pop() {
            if t > end || self.inv.violations.len() > 3 {
                break;
            }
            self.now = t;
            self.steps += 1;
            let Some(ev) = self.events.remove(&seq) else {
                continue;
            };
            self.step(ev);
            self.crash_a_proposing_coordinator();
            self.check_step();
            if let Some((_, at)) = self.inv.seeds.values().next()
                && self.now > at + 30_000
            {
                break;
            }
            if self.old_has_leader() {
                let since = *self.healthy_at.get_or_insert(self.now);
                if self.now > FAULTS_UNTIL && self.now > since + 60_000 {
                    break;
                }
            } else {
                self.healthy_at = None;
            }
        }
        let decided_at = self.inv.seeds.values().map(|(_, t)| *t).next();
        let live = decided_at.is_some() || self.healthy_at.is_some();
        if self.sc.expect_live && !live {
            let text = format!(
                "liveness: no decision and no healthy cluster {} s after the faults stopped (kind {:?})",
                LIVENESS_BOUND / 1000,
                self.sc.kind
            );
            self.inv.violation(self.now, text);
        }
        if !self.sc.expect_live
            && matches!(self.sc.kind, Kind::WipedCluster | Kind::Aftermath)
            && self.snapshot.is_none()
            && !self.alerts.contains(&AlertKind::NoDataAnywhere)
            && self.inv.violations.is_empty()
        {
            self.inv.violation(
                self.now,
                "a record without any data anywhere must page a human (NoDataAnywhere alert)"
                    .into(),
            );
        }
        decided_at
    }

    /// The scenario's coordinator crash: the first instance seen with a
    /// proposal out (its `Accept`s in flight, nothing recorded yet) crashes
    /// at once, keeping its disk, and restarts later.
    fn crash_a_proposing_coordinator(&mut self) {
        let Some(restart_after) = self.sc.coordinator_crash else {
            return;
        };
        // Only while enough of the liveness bound remains to recover from
        // it (the restarted instance needs T again before it promises).
        if self.coordinator_crashed || self.now + restart_after > FAULTS_UNTIL + LIVENESS_BOUND / 2
        {
            return;
        }
        let proposing = self.nodes.iter().position(|n| {
            n.proto.as_ref().and_then(|p| p.round()).is_some_and(|r| {
                matches!(r.stage, crate::fenced::coordinator::Stage::Accepting { .. })
            })
        });
        if let Some(i) = proposing {
            self.coordinator_crashed = true;
            self.crash(i, false);
            let t = self.now + restart_after;
            self.at(t, Ev::Restart(i));
        }
    }

    fn up(&self, i: usize) -> bool {
        self.nodes[i].proto.is_some()
    }

    fn step(&mut self, ev: Ev) {
        match ev {
            Ev::Boot(i) => self.boot(i),
            Ev::Forge => self.forge(),
            Ev::Crash(i, disk_loss) => self.crash(i, disk_loss),
            Ev::Restart(i) => self.boot(i),
            Ev::Terminate(i) => {
                self.nodes[i].terminated = true;
                self.nodes[i].certified_gone = true;
                self.nodes[i].present = false;
                let r = format!("r-{i:02}");
                if let Some(&j) = self.index.get(&r) {
                    self.nodes[j].present = true;
                    let t = self.now + self.rng.range(1_000, 30_000);
                    self.at(t, Ev::Boot(j));
                }
                self.push_group();
            }
            Ev::Observe(i, life) => {
                if self.nodes[i].life != life || !self.up(i) {
                    return;
                }
                let obs = self.observation(i);
                self.input(i, Input::Observe(obs));
                let random = self.rng.next_u64();
                self.input(i, Input::Tick { random });
                let t = self.now + OBSERVE_EVERY;
                self.at(t, Ev::Observe(i, life));
            }
            Ev::Wake(i, life) => {
                if self.nodes[i].life != life || !self.up(i) {
                    return;
                }
                if self.nodes[i].next_wake.is_some_and(|w| w <= self.now) {
                    self.nodes[i].next_wake = None;
                }
                let random = self.rng.next_u64();
                self.input(i, Input::Tick { random });
            }
            Ev::Input(i, life, input) => {
                if self.nodes[i].life == life && self.up(i) {
                    self.input(i, input);
                }
            }
            Ev::List(i, life) => {
                if self.nodes[i].life != life || !self.up(i) {
                    return;
                }
                let facts = self.store_facts();
                self.input(i, Input::Store(facts));
                let t = self.now + LIST_EVERY;
                self.at(t, Ev::List(i, life));
            }
            Ev::Create(i, life, record) => {
                let result = if self.sc.store_down(self.now) {
                    CreateResult::StoreError("store outage".into())
                } else if let Some(existing) = self.records.get(&record.incarnation) {
                    CreateResult::AlreadyExists(existing.clone())
                } else {
                    self.check_record(i, &record);
                    self.records.insert(record.incarnation, record.clone());
                    CreateResult::Created(record)
                };
                if self.nodes[i].life == life && self.up(i) {
                    self.input(i, Input::CreateResult(result));
                }
            }
            Ev::Deliver(env) => {
                if let Some(&i) = self.index.get(&env.to)
                    && self.up(i)
                {
                    self.input(i, Input::Message(env));
                }
            }
        }
    }

    fn store_facts(&self) -> StoreFacts {
        if self.sc.store_down(self.now) {
            return StoreFacts {
                records: RecordListing::Failed("store outage".into()),
                snapshots: SnapshotListing::Failed("store outage".into()),
                learners: Default::default(),
            };
        }
        StoreFacts {
            records: RecordListing::Complete(self.records.values().cloned().collect()),
            snapshots: if self.sc.snapshot_listing_down(self.now) {
                SnapshotListing::Failed("snapshot listing fails".into())
            } else {
                SnapshotListing::Complete(self.snapshot.clone())
            },
            learners: self.record_learners.clone(),
        }
    }

    fn group(&self) -> GroupFacts {
        GroupFacts {
            instances: self
                .nodes
                .iter()
                .filter(|n| n.present && !n.terminated)
                .map(|n| n.id.clone())
                .collect(),
            certified_gone: self
                .nodes
                .iter()
                .filter(|n| n.certified_gone)
                .map(|n| n.id.clone())
                .collect(),
        }
    }

    fn push_group(&mut self) {
        let g = self.group();
        for i in 0..self.nodes.len() {
            if self.up(i) {
                self.input(i, Input::Group(g.clone()));
            }
        }
    }

    fn boot(&mut self, i: usize) {
        if self.nodes[i].terminated || self.up(i) {
            return;
        }
        let persisted = match self.nodes[i].disk.as_deref().map(decode) {
            None => None,
            Some(Ok(s)) => Some(s),
            Some(Err(e)) => {
                let text = format!("{}: state file does not decode: {e}", self.nodes[i].id);
                self.inv.violation(self.now, text);
                None
            }
        };
        self.nodes[i].life += 1;
        let life = self.nodes[i].life;
        let boot_id = self.rng.next_u64();
        let mut p = Protocol::new(self.nodes[i].id.clone(), boot_id, self.cfg(), persisted);
        let effects = p.start(self.now);
        self.nodes[i].proto = Some(p);
        self.nodes[i].next_wake = None;
        self.nodes[i].view.clear();
        self.apply(i, effects);
        let g = self.group();
        self.input(i, Input::Group(g));
        let t = self.now + self.rng.below(OBSERVE_EVERY);
        self.at(t, Ev::Observe(i, life));
        let t = self.now + self.rng.below(LIST_EVERY);
        self.at(t, Ev::List(i, life));
    }

    fn crash(&mut self, i: usize, disk_loss: bool) {
        let n = &mut self.nodes[i];
        n.proto = None;
        n.life += 1;
        if disk_loss {
            n.disk = None;
            n.data = LocalData::empty();
            n.wiped_ever = true;
            let id = n.id.clone();
            self.inv.disk_lost(&id);
        }
    }

    /// The detector sample of node `i`: its probe, its gossip view.
    fn observation(&mut self, i: usize) -> DetectorSample {
        let leader = self.current_has_leader();
        let me_runs = self.runs(&self.nodes[i], self.current);
        let probe = if leader && me_runs {
            Probe::Leader
        } else if self.rng.chance(300) {
            Probe::Failed
        } else {
            Probe::NoLeader
        };
        let faulty = self.faulty();
        for j in 0..self.nodes.len() {
            let n = &self.nodes[j];
            let Some(p) = n.proto.as_ref() else {
                continue;
            };
            if j != i && faulty && self.rng.chance(100) {
                continue; // this gossip update did not arrive
            }
            let previous = self.nodes[i].view.get(&n.id).and_then(|f| f.leader_seen_at);
            let fact = PeerFact {
                incarnation: n.data.incarnation,
                cluster_id: n.data.cluster_id,
                has_data: n.data.has_data,
                frozen: p.is_frozen(),
                leader_seen_at: if leader && self.runs(n, self.current) {
                    Some(self.now)
                } else {
                    previous
                },
                last_heard: self.now,
                voters: if n.data.has_data {
                    p.state().voters.clone()
                } else {
                    Vec::new()
                },
                learners: if n.data.has_data {
                    n.learners.clone()
                } else {
                    Vec::new()
                },
            };
            let id = n.id.clone();
            self.nodes[i].view.insert(id, fact);
        }
        let certified_gone: BTreeSet<InstanceId> = self
            .nodes
            .iter()
            .filter(|n| n.certified_gone)
            .map(|n| n.id.clone())
            .collect();
        DetectorSample {
            at: self.now,
            probe: Some(probe),
            peers: self.nodes[i].view.clone(),
            certified_gone,
        }
    }

    fn input(&mut self, i: usize, input: Input) {
        let now = self.now;
        let Some(p) = self.nodes[i].proto.as_mut() else {
            return;
        };
        let effects = p.handle(now, input);
        self.apply(i, effects);
    }

    /// Execute effects in order, as the daemon does.
    fn apply(&mut self, i: usize, effects: Vec<Effect>) {
        let life = self.nodes[i].life;
        let proposing = effects.iter().any(|e| {
            matches!(&e.kind, EffectKind::Send(env) if matches!(env.message, Message::Accept { .. }))
        });
        let data_loss = effects
            .iter()
            .any(|e| matches!(e.kind, EffectKind::DataLoss { .. }));
        if data_loss {
            self.data_loss_fired = true;
        }
        if proposing {
            self.check_proposal(i, data_loss);
        }
        for e in effects {
            match e.kind {
                EffectKind::Persist(s) => {
                    let id = self.nodes[i].id.clone();
                    self.inv.persist(self.now, &id, &s);
                    match encode(&s) {
                        Ok(bytes) => self.nodes[i].disk = Some(bytes),
                        Err(err) => self
                            .inv
                            .violation(self.now, format!("encode failed: {err}")),
                    }
                }
                EffectKind::Send(env) => {
                    self.check_send(i, &env);
                    self.network(env);
                }
                EffectKind::Freeze | EffectKind::Unfreeze | EffectKind::DataLoss { .. } => {}
                EffectKind::ReadLocalData => {
                    let t = self.now + self.rng.range(10, 3_000);
                    let data = self.nodes[i].data.clone();
                    self.at(t, Ev::Input(i, life, Input::LocalData(data)));
                }
                EffectKind::WakeAt(at) => {
                    if at <= self.now {
                        let text = format!(
                            "{} asked to be woken at {at} ms, not after now: it would be woken again and again",
                            self.nodes[i].id
                        );
                        self.inv.violation(self.now, text);
                    }
                    let at = at.max(self.now + 1);
                    if self.nodes[i].next_wake.is_none_or(|w| at < w) {
                        self.nodes[i].next_wake = Some(at);
                        self.at(at, Ev::Wake(i, life));
                    }
                }
                EffectKind::CreateRecord(r) => {
                    self.check_create(&r);
                    let t = self.now + self.rng.range(10, 500);
                    self.at(t, Ev::Create(i, life, r));
                }
                EffectKind::Seed(plan) => {
                    self.check_seed(i, &plan);
                    self.run_seeded(i, &plan);
                    let incarnation = plan_target(&plan);
                    self.at(
                        self.now + 1,
                        Ev::Input(i, life, Input::SeedCompleted { incarnation }),
                    );
                }
                EffectKind::Join(record) => {
                    let id = self.nodes[i].id.clone();
                    let stored = self.records.get(&record.incarnation);
                    if !stored.is_some_and(|s| s.same_decision(&record)) {
                        self.inv.violation(
                            self.now,
                            format!(
                                "{id} joins incarnation {} seeded by {}, which the store does not record",
                                record.incarnation, record.value.seeder
                            ),
                        );
                    }
                    // The old data is moved aside; the instance joins the
                    // new cluster (as a learner: not one of its voters).
                    if self.inv.seeds.contains_key(&record.incarnation) {
                        self.nodes[i].data = Self::seeded_data(&record);
                    }
                }
                EffectKind::Alert(kind) => self.alerts.push(kind),
            }
        }
    }

    /// One forged message to a random instance: a `Decided` for a record
    /// the store does not hold (under a group member's id or the forger's),
    /// or a prepare or accept under the forger's id. Invariants then catch
    /// any stop, join or seeding the store does not confirm.
    fn forge(&mut self) {
        if self.nodes.is_empty() {
            return;
        }
        let to = self.nodes[self.forge_rng.below(self.nodes.len() as u64) as usize]
            .id
            .clone();
        let next = self.records.keys().max().copied().unwrap_or(OLD) + 1;
        let impersonated = self.nodes[self.forge_rng.below(self.nodes.len() as u64) as usize]
            .id
            .clone();
        let (from, message) = match self.forge_rng.below(4) {
            0 | 1 => {
                let from = if self.forge_rng.below(2) == 0 {
                    impersonated.clone()
                } else {
                    FORGER.to_string()
                };
                let record = SeedRecord {
                    incarnation: next + self.forge_rng.below(3),
                    value: SeedValue {
                        source: SeedSource::Empty,
                        seeder: impersonated,
                    },
                    ballot: Ballot::new(self.forge_rng.below(1_000), FORGER),
                    voters: vec![FORGER.to_string()],
                    token_suffix: self.forge_rng.next_u64(),
                    data_loss: false,
                };
                (from, Message::Decided { record })
            }
            2 => (
                FORGER.to_string(),
                Message::Prepare {
                    target: next + self.forge_rng.below(3),
                    voters: vec![FORGER.to_string()],
                    ballot: Ballot::new(1_000_000 + self.forge_rng.below(1_000), FORGER),
                },
            ),
            _ => (
                FORGER.to_string(),
                Message::Accept {
                    target: next,
                    ballot: Ballot::new(1_000_000 + self.forge_rng.below(1_000), FORGER),
                    value: SeedValue {
                        source: SeedSource::Empty,
                        seeder: FORGER.to_string(),
                    },
                },
            ),
        };
        // Straight to the instance (the network's faults draw from the
        // seed's main stream).
        let env = Envelope {
            from,
            from_boot: self.forge_rng.next_u64(),
            to,
            to_boot: None,
            message,
        };
        self.at(self.now + 1, Ev::Deliver(env));
    }

    /// The seeder now runs the new incarnation, seeded from the record's
    /// source.
    fn run_seeded(&mut self, i: usize, plan: &SeedPlan) {
        let k = match plan {
            SeedPlan::ReplayWal { incarnation, .. }
            | SeedPlan::RestoreSnapshot { incarnation, .. }
            | SeedPlan::Fresh { incarnation, .. } => *incarnation,
        };
        let Some(record) = self.records.get(&k).cloned() else {
            return;
        };
        self.nodes[i].data = Self::seeded_data(&record);
        if k > self.current || self.current == OLD {
            self.current = k;
            self.current_voters = record.voters.clone();
        }
    }

    fn network(&mut self, env: Envelope) {
        if self.faulty() && self.rng.chance(100) {
            return;
        }
        let copies = if self.faulty() && self.rng.chance(30) {
            2
        } else {
            1
        };
        for _ in 0..copies {
            let delay = if self.faulty() {
                self.rng.range(5, 800)
            } else {
                self.rng.range(5, 50)
            };
            self.at(self.now + delay, Ev::Deliver(env.clone()));
        }
    }
}

/// The facts only this world knows, handed to the shared invariants.
impl World {
    fn any_data(&self) -> bool {
        self.nodes.iter().any(|n| n.data.has_data)
    }

    /// Highest `(incarnation, commit index)` of surviving data of `V_n`
    /// and of the store.
    fn best_surviving(&self) -> (u64, u64) {
        let mut best = self
            .nodes
            .iter()
            .filter(|n| n.data.has_data && n.data.incarnation == OLD)
            .map(|n| (OLD, n.data.commit_index))
            .max()
            .unwrap_or((0, 0));
        if let Some(s) = &self.snapshot {
            best = best.max((s.incarnation, s.commit_index));
        }
        best
    }

    /// Every step: the old incarnation never regains quorum once a newer
    /// record exists.
    fn check_step(&mut self) {
        let newest = self.records.keys().max().copied().unwrap_or(OLD);
        if matches!(self.sc.kind, Kind::QuorumLoss | Kind::Aftermath) && self.old_has_leader() {
            self.inv
                .stale_leader(self.now, OLD, "a quorum of V_n", newest);
        }
    }

    /// A record about to be created by node `i` (the commit point).
    fn check_record(&mut self, i: usize, r: &SeedRecord) {
        let best = self.best_surviving();
        let creator = self.nodes[i].id.clone();
        self.inv
            .record(self.now, &creator, r, best, self.data_loss_fired);
    }

    /// A `CreateRecord` effect.
    fn check_create(&mut self, r: &SeedRecord) {
        self.inv.create(self.now, r, self.records.len());
    }

    /// Node `i` proposes (sends `Accept`): every non-gone member of `V_n`
    /// reported its data truthfully.
    fn check_proposal(&mut self, i: usize, data_loss: bool) {
        let Some(round) = self.nodes[i]
            .proto
            .as_ref()
            .and_then(|p| p.round())
            .cloned()
        else {
            return;
        };
        if data_loss || self.data_loss_fired {
            return;
        }
        // Every holder of the old incarnation's data — voter or learner —
        // that is not gone (terminated or its disk lost).
        let holders: Vec<(InstanceId, LocalData)> = self
            .nodes
            .iter()
            .filter(|n| n.data.has_data && n.data.incarnation == OLD)
            .map(|n| (n.id.clone(), n.data.clone()))
            .collect();
        let proposer = self.nodes[i].id.clone();
        self.inv
            .proposal(self.now, &proposer, OLD, &round.reports, &holders);
    }

    /// A message about to leave node `i`.
    fn check_send(&mut self, i: usize, env: &Envelope) {
        let on_disk = self.nodes[i].disk.as_deref().and_then(|b| decode(b).ok());
        let id = self.nodes[i].id.clone();
        let voters = self.voters.len();
        let nodes = &self.nodes;
        self.inv.send(self.now, &id, env, on_disk, voters, |v| {
            unexecutable(nodes, v)
        });
    }

    /// Node `i` seeds.
    fn check_seed(&mut self, i: usize, plan: &SeedPlan) {
        let id = self.nodes[i].id.clone();
        let k = plan_target(plan);
        let record = self.records.get(&k).cloned();
        let empty_allowed = !self.any_data() && self.records.keys().all(|r| *r == k);
        let holds_wal = match plan {
            SeedPlan::ReplayWal { commit_index, .. } => {
                let d = &self.nodes[i].data;
                d.has_data && d.commit_index >= *commit_index
            }
            _ => true,
        };
        self.inv.seed(
            self.now,
            &id,
            plan,
            record.as_ref(),
            empty_allowed,
            holds_wal,
        );
    }
}

/// `v` seeds from a member's WAL and that member no longer holds it.
fn unexecutable(nodes: &[Node], v: &crate::fenced::SeedValue) -> bool {
    match &v.source {
        SeedSource::Member { holder, .. } => nodes
            .iter()
            .find(|n| n.id == *holder)
            .is_none_or(|n| !(n.data.has_data && n.data.incarnation == OLD)),
        _ => false,
    }
}
