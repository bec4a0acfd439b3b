//! The fenced seeding protocol end to end on turmoil: every instance runs
//! the real `recovery::fenced::Protocol` and the real `gossip` node over
//! turmoil's simulated network, glued as the daemon glues them (peer facts
//! from the gossip view, messages as addressed gossip messages), with a
//! simulated etcd per instance, a simulated store, and faults turmoil can
//! produce. The invariants are checked as effects run and after every
//! step; liveness once the faults stop.
//!
//! # What it models
//!
//! - `N` instances (3 or 5) forming incarnation 1; replacement instances
//!   (new ids, empty disks) started by the "provider" when one is
//!   terminated (terminated = removed from the group = certified gone);
//! - per instance a [`world::SimEtcd`]: the incarnation of its data and
//!   its cluster id; its WAL's last index ≥ its WAL's commit index (raft's
//!   hard state: what the daemon's WAL read reports, and what a replay
//!   with `--force-new-cluster` keeps) ≥ what it applied (in memory, back
//!   to the backend after a crash, replayed on restart) ≥ what its backend
//!   holds on disk (committed every 100 ms); whether it holds data,
//!   whether a freeze stopped it; and the protocol's state file, which
//!   survives a crash unless the fault wipes the disk;
//! - each incarnation's etcd cluster: it has a leader while a majority of
//!   its voters run it (up, unfrozen, with data) and reach the leader both
//!   ways; a write every 50 ms goes into the leader's log and the logs of
//!   the members it reaches, is committed (a majority has it) and is
//!   acknowledged once the leader *applied* it (the ledger); followers
//!   learn the commit index with the leader's next message (write or
//!   100 ms heartbeat), so their WAL commit index lags by one write; a new
//!   leader has the longest log among those that reach a majority and
//!   holds every entry that majority holds (raft's election restriction);
//!   the steady-state planner removes certified-gone voters and adds
//!   instances that joined; the leader of the newest incarnation snapshots
//!   to the store every 10 s, recorded at its applied index (as the daemon
//!   records it), and a seeder snapshots once it seeded;
//! - the store: records with a conditional create, listed in pages of two
//!   (the glue follows every page, as `record::all` does; a failed page
//!   fails the listing), the newest snapshot, outages (a failed listing, a
//!   failed create), continuation pages that fail, every snapshot deleted;
//! - faults ([`faults::Fault`]): random partitions of gossip and etcd
//!   together or of only one of them, the coordinator isolated, one-way
//!   partitions, message loss, crashes with restart with and without the
//!   disk, a host down for good, replacement, the group grown by a new id
//!   or shrunk by a terminated one (desired size changed, mid-round when a
//!   round runs), `kill -9` of every instance while applying lags
//!   committing (some disks lost), store outages, truncated listings,
//!   deleted snapshots; and one fault aimed at the protocol (crash or
//!   isolate the first coordinator seen proposing, or the first instance
//!   that accepted a value), whenever that happens, faults phase or not.
//!
//! # What it checks
//!
//! The invariants in [`invariants`] as effects run; after every step that
//! an incarnation older than the newest record never has a leader; at the
//! end, liveness: within [`LIVENESS_BOUND`] of the faults stopping, the
//! newest incarnation has a leader and no running instance is frozen,
//! unless a member of its `V_n` never returns (waiting is then correct)
//! or the protocol paged a human (`NoDataAnywhere`). Acknowledged writes
//! lost with no surviving holder (beyond the fault tolerance) are counted,
//! not violations; so are writes lost as the residual docs/runbook.md
//! documents (acknowledged while only in survivors' logs above their WAL
//! commit index, which a replay discards), which must stay within
//! [`invariants::RESIDUAL_BOUND`] per seeding.
//!
//! # What it does not model
//!
//! - real etcd: no terms, learners, or member ids (a log is its last
//!   index); membership changes are instant and a joiner catches up at
//!   once;
//! - WAL replay, restore and snapshot transfer take no time and never fail
//!   (so `pending_seed` / `join_pending` never happen); a seed is atomic;
//! - the daemon's planner beyond adding and removing voters, its startup
//!   logic, formation, the status server;
//! - one-way cuts break etcd both ways; message loss affects gossip only;
//! - data moved aside by a join is gone (the daemon keeps it on disk, but
//!   the protocol never reads it either);
//! - a seed that cannot be done (a WAL replay without the WAL) just does
//!   not happen, as the daemon would retry it forever;
//! - clocks: every instance uses the simulation's clock (no skew), and
//!   `accept_loss_after` is off.

pub mod faults;
pub mod forger;
pub mod host;
pub mod invariants;
pub mod world;

use faults::{FAULTS_UNTIL, Fault, Plan};
use recovery::fenced::{AlertKind, Faults, Millis, ProtocolConfig, decode};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use world::{Shared, World};

/// After the faults stop, the newest incarnation must have a leader within
/// this (12 × T; T = 5 s), unless waiting is correct.
pub const LIVENESS_BOUND: Millis = 60_000;
/// Once live, the run goes on this long (a late violation would show).
const SETTLE: Millis = 3_000;

/// The protocol's configuration in the simulation: small times.
pub fn config(faults: Faults) -> ProtocolConfig {
    ProtocolConfig {
        quorum_loss_timeout: 5_000,
        min_probes: 2,
        peer_fresh: 6_000,
        takeover_after: 5_000,
        takeover_jitter: 5_000,
        retransmit_every: 1_000,
        max_backoff_exponent: 2,
        accept_loss_after: None,
        faults,
    }
}

/// The result of one seed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcome {
    pub seed: u64,
    pub nodes: usize,
    pub violations: Vec<String>,
    pub notes: Vec<String>,
    /// Incarnations created by the protocol (records above 1).
    pub recoveries: Vec<u64>,
    /// The newest incarnation had a leader at the end.
    pub live: bool,
    pub end_ms: Millis,
    pub steps: u64,
    pub writes: u64,
    /// Acknowledged writes lost with no surviving holder (beyond the
    /// fault tolerance, or data moved aside by a join).
    pub lost_writes: u64,
    /// Acknowledged writes lost as the documented residual (in survivors'
    /// logs above their WAL commit index; at most one heartbeat's worth).
    pub residual_writes: u64,
    /// Per record the protocol created: ms from the newest incarnation
    /// losing its leader to the record's creation.
    pub decision_ms: Vec<Millis>,
    /// The plan's second loss struck (in the first recovery's aftermath).
    pub second_loss: bool,
}

/// Which traffic a partition cuts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Plane {
    Both,
    Etcd,
    Gossip,
}

struct Driver<'a> {
    sim: turmoil::Sim<'a>,
    shared: Shared,
    names: Vec<String>,
    plan: Plan,
    next: usize,
    down: BTreeSet<usize>,
    /// Directed pairs cut on turmoil's network (gossip).
    gossip_cut: BTreeSet<(usize, usize)>,
    healed: bool,
    steps: u64,
    /// The targeted crash: done, and the pending restart `(host, at)`.
    targeted_done: bool,
    targeted_restart: Option<(usize, Millis)>,
    /// The second loss: struck, and its pending restarts `(hosts, at)`.
    second_struck: bool,
    second_restart: Option<(Vec<usize>, Millis)>,
}

fn lock(shared: &Shared) -> std::sync::MutexGuard<'_, World> {
    shared.lock().unwrap_or_else(|e| e.into_inner())
}

impl Driver<'_> {
    fn new(seed: u64, nodes: usize, faults: &Faults) -> Driver<'static> {
        let plan = Plan::generate(seed, nodes);
        let world = World::new(seed, nodes, plan.spares, config(faults.clone()));
        let names: Vec<String> = world.slots.iter().map(|s| s.id.clone()).collect();
        let shared: Shared = Arc::new(Mutex::new(world));
        let mut b = turmoil::Builder::new();
        b.rng_seed(seed)
            .simulation_duration(Duration::from_secs(24 * 3600))
            .tick_duration(Duration::from_millis(1))
            .min_message_latency(Duration::from_micros(200))
            .max_message_latency(Duration::from_millis(5))
            .fail_rate(0.0)
            .repair_rate(1.0);
        let mut sim = b.build();
        for (i, name) in names.iter().enumerate() {
            let (s, all) = (shared.clone(), names.clone());
            sim.host(name.as_str(), move || host::run(i, s.clone(), all.clone()));
        }
        if let Some(forger_seed) = plan.forger {
            let all = names.clone();
            sim.host(forger::FORGER, move || {
                forger::run(forger_seed, all.clone(), host::KEY)
            });
        }
        Driver {
            sim,
            shared,
            names,
            plan,
            next: 0,
            down: BTreeSet::new(),
            gossip_cut: BTreeSet::new(),
            healed: false,
            steps: 0,
            targeted_done: false,
            targeted_restart: None,
            second_struck: false,
            second_restart: None,
        }
    }

    fn now(&self) -> Millis {
        self.sim.elapsed().as_millis() as Millis
    }

    /// Cut `a → b` (and `b → a` when `both`) on the planes asked: gossip
    /// (turmoil's network) and etcd (the world's connectivity).
    fn cut(&mut self, a: usize, b: usize, both: bool, plane: Plane) {
        if plane != Plane::Etcd {
            if both {
                self.sim
                    .partition(self.names[a].as_str(), self.names[b].as_str());
            } else {
                self.sim
                    .partition_oneway(self.names[a].as_str(), self.names[b].as_str());
            }
            self.gossip_cut.insert((a, b));
        }
        if plane != Plane::Gossip {
            let mut w = lock(&self.shared);
            w.cut.insert((a, b));
            if both {
                w.cut.insert((b, a));
            }
        }
    }

    fn split(&mut self, side: &[usize], plane: Plane) {
        for a in side.iter().copied() {
            for b in 0..self.names.len() {
                if !side.contains(&b) {
                    self.cut(a, b, true, plane);
                }
            }
        }
    }

    fn crash(&mut self, h: usize, wipe: bool) {
        if self.down.contains(&h) || lock(&self.shared).slots[h].terminated {
            return;
        }
        self.sim.crash(self.names[h].as_str());
        self.down.insert(h);
        lock(&self.shared).crash(h, wipe);
    }

    fn restart(&mut self, h: usize) {
        let blocked = {
            let w = lock(&self.shared);
            w.slots[h].terminated || w.slots[h].forever
        };
        if blocked || !self.down.remove(&h) {
            return;
        }
        self.sim.bounce(self.names[h].as_str());
    }

    fn apply(&mut self, f: Fault) {
        match f {
            Fault::Split(side) => self.split(&side, Plane::Both),
            Fault::SplitEtcd(side) => self.split(&side, Plane::Etcd),
            Fault::SplitGossip(side) => self.split(&side, Plane::Gossip),
            Fault::IsolateCoordinator => {
                let lowest = {
                    let w = lock(&self.shared);
                    (0..w.slots.len())
                        .filter(|i| w.slots[*i].up && !w.slots[*i].terminated)
                        .min_by_key(|i| w.slots[*i].id.clone())
                };
                if let Some(l) = lowest {
                    self.apply(Fault::Split(vec![l]));
                }
            }
            Fault::OneWay(a, b) => self.cut(a, b, false, Plane::Both),
            Fault::Heal => {
                for (a, b) in std::mem::take(&mut self.gossip_cut) {
                    self.sim
                        .repair(self.names[a].as_str(), self.names[b].as_str());
                }
                lock(&self.shared).cut.clear();
            }
            Fault::Loss(per_mille) => self.sim.set_fail_rate(per_mille as f64 / 1000.0),
            Fault::Crash { host, wipe } => self.crash(host, wipe),
            Fault::Restart(h) => self.restart(h),
            Fault::Forever(h) => {
                self.crash(h, false);
                lock(&self.shared).slots[h].forever = true;
            }
            Fault::Replace { host, by } => {
                self.crash(host, true);
                let mut w = lock(&self.shared);
                w.slots[host].terminated = true;
                w.slots[by].present = true;
            }
            Fault::StoreDown => lock(&self.shared).store_down = true,
            Fault::StoreUp => lock(&self.shared).store_down = false,
            Fault::Grow(by) => lock(&self.shared).slots[by].present = true,
            Fault::Shrink(host) => {
                self.crash(host, true);
                lock(&self.shared).slots[host].terminated = true;
            }
            Fault::SlowApply(on) => lock(&self.shared).slow_apply = on,
            Fault::ListingTruncated(on) => lock(&self.shared).listing_truncated = on,
            Fault::DeleteSnapshots => lock(&self.shared).delete_snapshots(),
        }
    }

    /// The plan's targeted crash, and its restart.
    fn targeted(&mut self, now: Millis) {
        if let Some((h, at)) = self.targeted_restart
            && now >= at
        {
            self.targeted_restart = None;
            lock(&self.shared).log.push(format!(
                "t={now} ms: targeted restart (or heal) of host {h}"
            ));
            if self.plan.targeted.as_ref().is_some_and(|t| t.isolate) {
                self.apply(Fault::Heal);
            } else {
                self.restart(h);
            }
        }
        let Some(t) = self.plan.targeted.clone() else {
            return;
        };
        if self.targeted_done || now > FAULTS_UNTIL + LIVENESS_BOUND / 2 {
            return;
        }
        let victim = {
            let w = lock(&self.shared);
            (0..w.slots.len()).find(|i| {
                let s = &w.slots[*i];
                s.up && !s.terminated
                    && ((t.proposer && s.proposing)
                        || (t.acceptor
                            && s.disk
                                .as_deref()
                                .and_then(|b| decode(b).ok())
                                .is_some_and(|p| p.accepted.is_some())))
            })
        };
        if let Some(h) = victim {
            self.targeted_done = true;
            lock(&self.shared).log.push(format!(
                "t={now} ms: targeted fault on {} ({t:?})",
                self.names[h]
            ));
            if t.isolate {
                self.apply(Fault::Split(vec![h]));
            } else {
                self.crash(h, t.wipe);
            }
            self.targeted_restart = Some((h, now + t.restart_after));
        }
    }

    /// The plan's second loss: strikes `after` the first recovery's
    /// seeding, then restarts its victims.
    fn second_loss(&mut self, now: Millis) {
        if let Some((hosts, at)) = self.second_restart.clone() {
            if now >= at {
                self.second_restart = None;
                lock(&self.shared)
                    .log
                    .push(format!("t={now} ms: the second loss's instances restart"));
                for h in hosts {
                    self.restart(h);
                }
            }
            return;
        }
        let Some(sl) = self.plan.second_loss.clone() else {
            return;
        };
        if self.second_struck || now > FAULTS_UNTIL + LIVENESS_BOUND / 2 {
            return;
        }
        let victims = {
            let mut w = lock(&self.shared);
            // The first recovery's seeding, and the cluster it started.
            let Some((k, seeded_at)) = w
                .inv
                .seeds
                .iter()
                .find(|(k, _)| **k > 1)
                .map(|(k, (_, at))| (*k, *at))
            else {
                return;
            };
            if now < seeded_at + sl.after {
                return;
            }
            let newest = w.records.keys().max().copied().unwrap_or(k);
            let Some(c) = w.clusters.get(&newest).cloned() else {
                return;
            };
            let mut voters: Vec<usize> = c
                .voters
                .iter()
                .filter_map(|id| w.index.get(id).copied())
                .collect();
            // The leader first, then the others in id order: enough voters
            // that fewer than a quorum remain.
            if let Some(l) = c.leader {
                voters.retain(|v| *v != l);
                voters.insert(0, l);
            }
            let count = voters.len() - recovery::fenced::ids::majority(voters.len()) + 1;
            let mut victims: Vec<(usize, bool)> = Vec::new();
            for h in voters.into_iter().take(count) {
                victims.push((h, w.rng.below(1_000) < sl.wipe));
            }
            if sl.learner_too {
                for id in c.learners.keys() {
                    if let Some(h) = w.index.get(id).copied() {
                        victims.push((h, w.rng.below(1_000) < sl.wipe));
                    }
                }
            }
            let text = format!(
                "t={now} ms: second loss in incarnation {newest}'s aftermath ({} ms after the seeding of {k}): voters {:?}, learners {:?}, striking {:?}",
                now - seeded_at,
                c.voters,
                c.learner_ids(),
                victims
                    .iter()
                    .map(|(h, wipe)| format!(
                        "{}{}",
                        w.slots[*h].id,
                        if *wipe { " (wiped)" } else { "" }
                    ))
                    .collect::<Vec<_>>()
            );
            w.log.push(text);
            victims
        };
        self.second_struck = true;
        let hosts: Vec<usize> = victims.iter().map(|(h, _)| *h).collect();
        for (h, wipe) in victims {
            self.crash(h, wipe);
        }
        self.second_restart = Some((hosts, now + sl.restart_after));
    }

    /// The faults stop: heal, no loss, the store back, crashed hosts
    /// restart.
    fn heal_all(&mut self) {
        self.healed = true;
        self.apply(Fault::Heal);
        self.apply(Fault::Loss(0));
        self.apply(Fault::StoreUp);
        self.apply(Fault::SlowApply(false));
        self.apply(Fault::ListingTruncated(false));
        let down: Vec<usize> = self.down.iter().copied().collect();
        for h in down {
            self.restart(h);
        }
    }

    /// Live: the newest incarnation has a leader and no running instance
    /// is frozen.
    fn live(&self) -> bool {
        let w = lock(&self.shared);
        let (_, led) = w.newest_has_leader();
        led && w.slots.iter().all(|s| !s.up || !s.etcd.frozen)
    }

    fn run(&mut self) -> bool {
        let end = FAULTS_UNTIL + LIVENESS_BOUND;
        let mut live_since: Option<Millis> = None;
        loop {
            let now = self.now();
            while self.next < self.plan.events.len() && self.plan.events[self.next].0 <= now {
                let f = self.plan.events[self.next].1.clone();
                self.next += 1;
                if now < FAULTS_UNTIL {
                    lock(&self.shared)
                        .log
                        .push(format!("t={now} ms: fault {f:?}"));
                    self.apply(f);
                }
            }
            if now >= FAULTS_UNTIL && !self.healed {
                lock(&self.shared)
                    .log
                    .push(format!("t={now} ms: the faults stop; everything heals"));
                self.heal_all();
            }
            if let Err(e) = self.sim.step() {
                lock(&self.shared).violation(format!("a host failed: {e}"));
                return false;
            }
            self.steps += 1;
            let now = self.now();
            lock(&self.shared).tick_clusters(now);
            self.targeted(now);
            self.second_loss(now);
            if lock(&self.shared).inv.violations.len() >= 5 {
                return false;
            }
            let second_pending = self.second_restart.is_some()
                || (self.plan.second_loss.is_some()
                    && !self.second_struck
                    && now <= FAULTS_UNTIL + LIVENESS_BOUND / 2
                    && lock(&self.shared).inv.seeds.keys().any(|k| *k > 1));
            if self.healed && self.targeted_restart.is_none() && !second_pending {
                if self.live() {
                    let since = *live_since.get_or_insert(now);
                    if now >= since + SETTLE {
                        return true;
                    }
                } else {
                    live_since = None;
                }
            }
            if now >= end {
                return self.live();
            }
        }
    }
}

/// Run one seed with `nodes` instances.
pub fn run(seed: u64, nodes: usize, faults: &Faults) -> Outcome {
    replay(seed, nodes, faults).0
}

/// Run one seed and describe it for a human: the plan, the records, the
/// seeds, the violations and notes, every instance's end state.
pub fn replay(seed: u64, nodes: usize, faults: &Faults) -> (Outcome, String) {
    use std::fmt::Write;
    let mut d = Driver::new(seed, nodes, faults);
    let live = d.run();
    let now = d.now();
    let mut w = lock(&d.shared);
    if !live {
        let (k, _) = w.newest_has_leader();
        // The protocol waits for every member of V_k that is not
        // certified gone (it cannot know that one lost its disk).
        let voters = w.clusters.get(&k).map_or_else(
            || {
                w.records
                    .get(&k)
                    .map(|r| r.voters.clone())
                    .unwrap_or_default()
            },
            |c| c.voters.clone(),
        );
        let waiting_is_correct = w
            .slots
            .iter()
            .any(|s| s.forever && !s.terminated && voters.contains(&s.id))
            || w.alerts.contains(&AlertKind::NoDataAnywhere);
        if !waiting_is_correct {
            let frozen: Vec<String> = w
                .slots
                .iter()
                .filter(|s| s.up && s.etcd.frozen)
                .map(|s| s.id.clone())
                .collect();
            w.violation(format!(
                "liveness: {} s after the faults stopped, incarnation {k} has no leader or instances are still frozen ({frozen:?})",
                LIVENESS_BOUND / 1000
            ));
        } else {
            w.note(format!(
                "not live at the end, correctly waiting (a member of V_{k} never returns, or no data anywhere)"
            ));
        }
    }
    let outcome = Outcome {
        seed,
        nodes,
        violations: w.inv.violations.clone(),
        notes: w.notes.clone(),
        recoveries: w.records.keys().copied().filter(|k| *k > 1).collect(),
        live,
        end_ms: now,
        steps: d.steps,
        writes: w.writes,
        lost_writes: w.lost_writes,
        residual_writes: w.residual_writes,
        decision_ms: w.decisions.clone(),
        second_loss: d.second_struck,
    };
    let mut text = String::new();
    let _ = writeln!(
        text,
        "seed {seed}, {nodes} instances: live={live}, ended at {now} ms, {} steps, {} writes acknowledged, {} lost with no surviving holder, {} lost as the residual",
        d.steps, w.writes, w.lost_writes, w.residual_writes
    );
    let _ = writeln!(text, "targeted crash: {:?}", d.plan.targeted);
    let _ = writeln!(
        text,
        "second loss: {:?} (struck: {})",
        d.plan.second_loss, d.second_struck
    );
    for r in w.records.values() {
        let _ = writeln!(
            text,
            "record {}: {} (ballot {}, data_loss {})",
            r.incarnation, r.value, r.ballot, r.data_loss
        );
    }
    let _ = writeln!(
        text,
        "seeded (incarnation -> seeder, at ms): {:?}",
        w.inv.seeds
    );
    for (k, c) in &w.clusters {
        let _ = writeln!(
            text,
            "cluster {k}: voters {:?}, leader {:?}, commit {}",
            c.voters,
            c.leader.map(|l| w.slots[l].id.clone()),
            c.commit
        );
    }
    let _ = writeln!(text, "snapshot: {:?}", w.snapshot);
    for s in &w.slots {
        let state = s.disk.as_deref().map(decode);
        let _ = writeln!(
            text,
            "{}: present={} up={} terminated={} forever={} boots={} etcd={:?}\n  state={state:?}",
            s.id, s.present, s.up, s.terminated, s.forever, s.boots, s.etcd
        );
    }
    for line in &w.log {
        let _ = writeln!(text, "  {line}");
    }
    let _ = writeln!(text, "notes: {:#?}", w.notes);
    let _ = writeln!(text, "violations: {:#?}", w.inv.violations);
    (outcome, text)
}

/// Many seeds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub runs: u64,
    /// `(seed, nodes)` of every run with a violation.
    pub failing: Vec<(u64, usize)>,
    pub first_violation: Option<String>,
    /// Runs in which the protocol created at least one incarnation.
    pub recovered: u64,
    /// Runs in which a second loss struck the first recovery's aftermath.
    pub second_losses: u64,
    /// Runs that ended correctly waiting instead of live.
    pub waiting: u64,
    /// Runs that lost acknowledged writes no surviving instance held.
    pub runs_with_lost_writes: u64,
    /// Runs that lost writes as the documented residual, and how many.
    pub runs_with_residual: u64,
    pub residual_writes: u64,
    /// Records created by the protocol, and the time from the loss to the
    /// record (simulated seconds, T = 5 s).
    pub decisions: u64,
    pub decision_p50_s: f64,
    pub decision_p99_s: f64,
    pub steps: u64,
}

pub fn run_many(
    seeds: impl IntoIterator<Item = u64> + Clone,
    nodes: &[usize],
    faults: &Faults,
    mut each: impl FnMut(&Outcome),
) -> Summary {
    let mut s = Summary {
        runs: 0,
        failing: Vec::new(),
        first_violation: None,
        recovered: 0,
        second_losses: 0,
        waiting: 0,
        runs_with_lost_writes: 0,
        runs_with_residual: 0,
        residual_writes: 0,
        decisions: 0,
        decision_p50_s: 0.0,
        decision_p99_s: 0.0,
        steps: 0,
    };
    let mut times: Vec<Millis> = Vec::new();
    for n in nodes {
        for seed in seeds.clone() {
            let o = run(seed, *n, faults);
            each(&o);
            s.runs += 1;
            s.steps += o.steps;
            if !o.recoveries.is_empty() {
                s.recovered += 1;
            }
            if o.second_loss {
                s.second_losses += 1;
            }
            if o.lost_writes > 0 {
                s.runs_with_lost_writes += 1;
            }
            if o.residual_writes > 0 {
                s.runs_with_residual += 1;
                s.residual_writes += o.residual_writes;
            }
            times.extend(o.decision_ms.iter().copied());
            if !o.live && o.violations.is_empty() {
                s.waiting += 1;
            }
            if !o.violations.is_empty() {
                s.failing.push((seed, *n));
                if s.first_violation.is_none() {
                    s.first_violation = o.violations.first().cloned();
                }
            }
        }
    }
    times.sort_unstable();
    s.decisions = times.len() as u64;
    let pct = |q: f64| {
        if times.is_empty() {
            return 0.0;
        }
        let i = ((times.len() as f64) * q).ceil() as usize;
        times[i.saturating_sub(1).min(times.len() - 1)] as f64 / 1000.0
    };
    s.decision_p50_s = pct(0.5);
    s.decision_p99_s = pct(0.99);
    s
}
