//! The shared board of the simulation: one simulated etcd per instance
//! (its WAL's last index ≥ its WAL's commit index ≥ what it applied ≥ what
//! its backend holds on disk), the persisted protocol state ("disk") that
//! survives a crash unless the fault wipes it, the simulated store
//! (records with conditional create, the newest snapshot, outages,
//! paginated listings whose continuation can fail, deleted snapshots),
//! the provider's group, the etcd-plane connectivity (cut independently of
//! gossip), and the model of every incarnation's etcd cluster with the
//! ledger of acknowledged writes.
//!
//! Hosts (turmoil software) and the driver (outside turmoil) both lock it;
//! turmoil runs one host at a time, so the order of access is
//! deterministic.

use recovery::fenced::harness::invariants::Invariants;
use recovery::fenced::harness::rng::Rng;
use recovery::fenced::ids::majority;
use recovery::fenced::{
    AlertKind, Ballot, CreateResult, GroupFacts, Incarnation, InstanceId, LocalData, Millis,
    PersistedState, Probe, ProtocolConfig, RecordListing, SeedPlan, SeedRecord, SeedSource,
    SeedValue, SnapshotFacts, SnapshotListing, StoreFacts, encode,
};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

/// Incarnation the simulation starts in (formed, all instances voters).
pub const FIRST: Incarnation = 1;
/// The leader of each incarnation acknowledges one write this often.
pub const WRITE_EVERY: Millis = 50;
/// The leader of the newest incarnation stores a snapshot this often.
pub const SNAPSHOT_EVERY: Millis = 10_000;
/// The backend commits what was applied this often (etcd's batch interval).
pub const BACKEND_EVERY: Millis = 100;
/// With an apply backlog, a member applies one entry this often (writes
/// come every [`WRITE_EVERY`]: the backlog grows).
pub const SLOW_APPLY_EVERY: Millis = 200;
/// Records per page of the store's listing.
pub const LISTING_PAGE: usize = 2;
/// A learner is promoted once it has been one this long (catching up).
pub const PROMOTE_AFTER: Millis = 1_500;
/// The daemon's pass as far as membership views go: every member records
/// the member list in its state file, and the leader's instance rewrites
/// the store's record of the membership, this often — so each view lags
/// the membership by up to one pass.
pub const VIEW_EVERY: Millis = 1_000;

pub type Shared = Arc<Mutex<World>>;

/// One instance's etcd as the simulation sees it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SimEtcd {
    pub cluster_id: Option<u64>,
    /// Incarnation of the state file / data dir (0: none).
    pub incarnation: Incarnation,
    /// Highest entry in its WAL (possibly not known to be committed).
    pub last_index: u64,
    /// The commit index in its WAL (raft's hard state): what a WAL read
    /// reports, and what a replay with `--force-new-cluster` keeps
    /// (entries above it are discarded). A follower learns it from the
    /// leader's next message, so it lags the leader's by one write.
    pub commit_index: u64,
    /// Entries applied (in memory); back to `backend` after a crash, then
    /// replayed from the WAL.
    pub applied: u64,
    /// Entries the backend holds on disk (≤ applied).
    pub backend: u64,
    pub has_data: bool,
    /// Stopped by a freeze (a promise or an acceptance).
    pub frozen: bool,
    /// `V_n` as this instance last learned it from its cluster (its state
    /// file's view).
    pub voters: Vec<InstanceId>,
    /// The started learners in the same view.
    pub learners: Vec<InstanceId>,
}

impl SimEtcd {
    pub fn local_data(&self) -> LocalData {
        if !self.has_data {
            return LocalData::empty();
        }
        // As the daemon reads it (`src/daemon/fencing.rs`): the WAL's
        // commit index; the revision is not known before a replay.
        LocalData {
            cluster_id: self.cluster_id,
            incarnation: self.incarnation,
            commit_index: self.commit_index,
            applied_revision: 0,
            has_data: true,
        }
    }

    /// A member holding everything up to `index` (seeded, or caught up by
    /// a snapshot from the leader).
    fn at(cluster_id: u64, k: Incarnation, index: u64, voters: Vec<InstanceId>) -> SimEtcd {
        SimEtcd {
            cluster_id: Some(cluster_id),
            incarnation: k,
            last_index: index,
            commit_index: index,
            applied: index,
            backend: index,
            has_data: true,
            frozen: false,
            voters,
            learners: Vec::new(),
        }
    }
}

/// The store's newest snapshot: the position recorded with it (what the
/// protocol ranks) and what it holds (what a restore gives back).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredSnapshot {
    pub facts: SnapshotFacts,
    pub holds: u64,
}

/// One turmoil host (an instance id; replacements are hosts that start
/// absent).
#[derive(Clone, Debug)]
pub struct Slot {
    pub id: InstanceId,
    /// The provider started it (replacements start absent).
    pub present: bool,
    /// Its software runs (turmoil host not crashed).
    pub up: bool,
    /// Terminated and removed from the group: certified gone.
    pub terminated: bool,
    /// Crashed and never coming back (never certified gone).
    pub forever: bool,
    pub etcd: SimEtcd,
    /// The protocol's state file (`recovery::fenced::encode`).
    pub disk: Option<Vec<u8>>,
    pub boots: u64,
    /// Its protocol coordinates a round that has proposed (stage
    /// accepting): the target of the driver's proposer crash.
    pub proposing: bool,
}

/// The etcd cluster of one incarnation.
#[derive(Clone, Debug)]
pub struct Cluster {
    pub voters: Vec<InstanceId>,
    /// Members that replicate but do not vote (one at a time, as etcd
    /// allows), with when each became one.
    pub learners: BTreeMap<InstanceId, Millis>,
    pub leader: Option<usize>,
    /// Highest acknowledged index.
    pub commit: u64,
    pub cluster_id: u64,
    /// The membership the store's record lists: rewritten by the leader's
    /// instance every [`VIEW_EVERY`], a promotion written before it takes
    /// effect (`recovery::voters::before_promotion`) and a learner right
    /// after its add (`recovery::voters::after_join`) — so it lags only
    /// removals, by up to a pass, and stays as it was while the cluster
    /// has no leader.
    pub recorded_voters: Vec<InstanceId>,
    pub recorded_learners: Vec<InstanceId>,
}

impl Cluster {
    fn new(voters: Vec<InstanceId>, commit: u64, cluster_id: u64) -> Cluster {
        Cluster {
            recorded_voters: voters.clone(),
            recorded_learners: Vec::new(),
            voters,
            learners: BTreeMap::new(),
            leader: None,
            commit,
            cluster_id,
        }
    }

    pub fn learner_ids(&self) -> Vec<InstanceId> {
        self.learners.keys().cloned().collect()
    }
}

pub struct World {
    pub cfg: ProtocolConfig,
    pub rng: Rng,
    pub now: Millis,
    pub slots: Vec<Slot>,
    pub index: BTreeMap<InstanceId, usize>,
    /// Directed pairs `(from, to)` whose traffic is dropped.
    pub cut: BTreeSet<(usize, usize)>,
    pub clusters: BTreeMap<Incarnation, Cluster>,
    pub records: BTreeMap<Incarnation, SeedRecord>,
    pub snapshot: Option<StoredSnapshot>,
    pub store_down: bool,
    /// The listing's continuation pages fail (the first page answers).
    pub listing_truncated: bool,
    /// Members apply slowly: a backlog between commit and applied grows.
    pub slow_apply: bool,
    /// Residual loss (as docs/runbook.md documents it): acknowledged
    /// writes that survived only above every survivor's WAL commit index
    /// (in logs, not known committed) and were discarded by a replay.
    pub residual_writes: u64,
    /// Since when the newest incarnation has had no leader (a loss, or a
    /// leaderless moment), while it has none.
    pub leaderless_since: Option<Millis>,
    /// Time from the loss to the record's creation, per record the
    /// protocol created.
    pub decisions: Vec<Millis>,
    /// Highest acknowledged write index per incarnation.
    pub acked: BTreeMap<Incarnation, u64>,
    /// The index each incarnation was seeded at (its writes are above).
    pub base: BTreeMap<Incarnation, u64>,
    /// Acknowledged writes lost by seeds (with no surviving holder).
    pub lost_writes: u64,
    pub writes: u64,
    /// The invariants (one set, shared with the pure harness), with the
    /// seeds executed and the violations found.
    pub inv: Invariants,
    /// Things worth knowing that are not violations (data lost beyond the
    /// fault tolerance, alerts).
    pub notes: Vec<String>,
    pub alerts: Vec<AlertKind>,
    pub data_loss_fired: bool,
    /// Leader changes, records, seeds, crashes: the run's story.
    pub log: Vec<String>,
    last_write: Millis,
    last_snapshot: Millis,
    last_backend: Millis,
    last_slow_apply: Millis,
    last_view: Millis,
}

impl World {
    /// `n` voters of incarnation 1 (`i-0`..), and `spares` replacement
    /// slots (`r-0`..) that start absent.
    pub fn new(seed: u64, n: usize, spares: usize, cfg: ProtocolConfig) -> World {
        let voters: Vec<InstanceId> = (0..n).map(|i| format!("i-{i}")).collect();
        let mut slots = Vec::new();
        let state = PersistedState {
            incarnation: FIRST,
            voters: voters.clone(),
            ..Default::default()
        };
        for id in &voters {
            slots.push(Slot {
                id: id.clone(),
                present: true,
                up: false,
                terminated: false,
                forever: false,
                etcd: SimEtcd::at(cluster_id(FIRST), FIRST, 0, voters.clone()),
                disk: encode(&state).ok(),
                boots: 0,
                proposing: false,
            });
        }
        for r in 0..spares {
            slots.push(Slot {
                id: format!("r-{r}"),
                present: false,
                up: false,
                terminated: false,
                forever: false,
                etcd: SimEtcd::default(),
                disk: None,
                boots: 0,
                proposing: false,
            });
        }
        let index = slots
            .iter()
            .enumerate()
            .map(|(i, s)| (s.id.clone(), i))
            .collect();
        let mut records = BTreeMap::new();
        records.insert(
            FIRST,
            SeedRecord {
                incarnation: FIRST,
                value: SeedValue {
                    source: SeedSource::Empty,
                    seeder: voters[0].clone(),
                },
                ballot: Ballot::new(0, ""),
                voters: voters.clone(),
                token_suffix: 0,
                data_loss: false,
            },
        );
        let mut clusters = BTreeMap::new();
        clusters.insert(FIRST, Cluster::new(voters, 0, cluster_id(FIRST)));
        World {
            cfg,
            rng: Rng::new(seed ^ 0x00fe_0ced),
            now: 0,
            slots,
            index,
            cut: BTreeSet::new(),
            clusters,
            records,
            snapshot: None,
            store_down: false,
            listing_truncated: false,
            slow_apply: false,
            residual_writes: 0,
            leaderless_since: None,
            decisions: Vec::new(),
            acked: BTreeMap::new(),
            base: BTreeMap::from([(FIRST, 0)]),
            lost_writes: 0,
            writes: 0,
            inv: Invariants::default(),
            notes: Vec::new(),
            alerts: Vec::new(),
            data_loss_fired: false,
            log: Vec::new(),
            last_write: 0,
            last_snapshot: 0,
            last_backend: 0,
            last_slow_apply: 0,
            last_view: 0,
        }
    }

    pub fn violation(&mut self, text: String) {
        self.inv.violation(self.now, text);
    }

    pub fn note(&mut self, text: String) {
        let text = format!("t={} ms: {text}", self.now);
        if !self.notes.contains(&text) && self.notes.len() < 50 {
            self.notes.push(text);
        }
    }

    /// Both directions of etcd traffic between `a` and `b` pass.
    pub fn connected(&self, a: usize, b: usize) -> bool {
        a == b || (!self.cut.contains(&(a, b)) && !self.cut.contains(&(b, a)))
    }

    /// Instance `i` runs etcd of incarnation `k` as one of its voters.
    pub fn runs(&self, i: usize, k: Incarnation) -> bool {
        self.runs_member(i, k)
            && self
                .clusters
                .get(&k)
                .is_some_and(|c| c.voters.contains(&self.slots[i].id))
    }

    /// Instance `i` runs etcd of incarnation `k` as a member, voter or
    /// learner.
    pub fn runs_member(&self, i: usize, k: Incarnation) -> bool {
        let s = &self.slots[i];
        s.up && !s.etcd.frozen
            && s.etcd.has_data
            && s.etcd.incarnation == k
            && self
                .clusters
                .get(&k)
                .is_some_and(|c| c.voters.contains(&s.id) || c.learners.contains_key(&s.id))
    }

    /// The own etcd probe of instance `i` (a learner knows the leader too).
    pub fn probe(&self, i: usize) -> Probe {
        let k = self.slots[i].etcd.incarnation;
        if !self.runs_member(i, k) {
            return Probe::Failed;
        }
        match self.clusters.get(&k).and_then(|c| c.leader) {
            Some(l) if self.connected(l, i) => Probe::Leader,
            _ => Probe::NoLeader,
        }
    }

    /// The provider's group: present instances not terminated; the
    /// terminated ones are certified gone (positive evidence).
    pub fn group(&self) -> GroupFacts {
        let ids = |terminated: bool| {
            self.slots
                .iter()
                .filter(|s| s.present && s.terminated == terminated)
                .map(|s| s.id.clone())
                .collect::<BTreeSet<InstanceId>>()
        };
        GroupFacts {
            instances: ids(false),
            certified_gone: ids(true),
        }
    }

    /// One page of the store's listing of records (with their current
    /// voters): `(records, next page)`, or an error during an outage or,
    /// for a continuation page, while listings are truncated.
    pub fn list_page(&self, page: usize) -> Result<(Vec<SeedRecord>, Option<usize>), String> {
        if self.store_down {
            return Err("simulated store outage".into());
        }
        if page > 0 && self.listing_truncated {
            return Err(format!(
                "simulated truncated listing: page {page} did not answer"
            ));
        }
        let all: Vec<SeedRecord> = self
            .records
            .values()
            .map(|r| {
                let mut r = r.clone();
                if let Some(c) = self.clusters.get(&r.incarnation) {
                    r.voters = c.recorded_voters.clone();
                }
                r
            })
            .collect();
        let from = page * LISTING_PAGE;
        let to = (from + LISTING_PAGE).min(all.len());
        let next = (to < all.len()).then_some(page + 1);
        Ok((
            all.get(from..to).map(<[_]>::to_vec).unwrap_or_default(),
            next,
        ))
    }

    /// The store's listing as the daemon builds it (`record::all` follows
    /// every page; any failed page fails the listing, never reads as
    /// shorter) and the newest snapshot.
    pub fn store_facts(&self) -> StoreFacts {
        let mut records = Vec::new();
        let mut page = Some(0);
        while let Some(p) = page {
            match self.list_page(p) {
                Ok((mut got, next)) => {
                    records.append(&mut got);
                    page = next;
                }
                Err(e) => {
                    return StoreFacts {
                        records: RecordListing::Failed(e.clone()),
                        snapshots: SnapshotListing::Failed(e),
                        learners: BTreeMap::new(),
                    };
                }
            }
        }
        StoreFacts {
            records: RecordListing::Complete(records),
            snapshots: SnapshotListing::Complete(self.snapshot.as_ref().map(|s| s.facts.clone())),
            learners: self
                .clusters
                .iter()
                .map(|(k, c)| (*k, c.recorded_learners.clone()))
                .collect(),
        }
    }

    /// Every snapshot is deleted from the store (a human, a bad lifecycle
    /// rule); the records stay.
    pub fn delete_snapshots(&mut self) {
        self.snapshot = None;
    }

    /// The conditional create of `incarnations/<k>`.
    pub fn create_record(&mut self, i: usize, r: &SeedRecord) -> CreateResult {
        if self.store_down {
            return CreateResult::StoreError("simulated store outage".into());
        }
        if let Some(held) = self.records.get(&r.incarnation) {
            let mut held = held.clone();
            if let Some(c) = self.clusters.get(&held.incarnation) {
                held.voters = c.recorded_voters.clone();
            }
            return CreateResult::AlreadyExists(held);
        }
        self.check_record(i, r);
        if let Some(since) = self.leaderless_since {
            self.decisions.push(self.now.saturating_sub(since));
        }
        let text = format!(
            "t={} ms: {} creates the record of incarnation {}: {}",
            self.now, self.slots[i].id, r.incarnation, r.value
        );
        self.log.push(text);
        self.records.insert(r.incarnation, r.clone());
        CreateResult::Created(r.clone())
    }

    /// The seeder executes `plan`: its etcd becomes the one-member cluster
    /// of the new incarnation. Returns the incarnation, or `None` if the
    /// seed cannot be done (a WAL replay without that WAL): the daemon
    /// retries such a seed forever.
    pub fn seed(&mut self, i: usize, plan: &SeedPlan) -> Option<Incarnation> {
        self.check_seed(i, plan);
        let (k, src, commit) = match plan {
            SeedPlan::ReplayWal {
                incarnation,
                commit_index,
                ..
            } => {
                let e = &self.slots[i].etcd;
                let src = e.incarnation;
                if !(e.has_data
                    && e.incarnation + 1 == *incarnation
                    && e.commit_index >= *commit_index)
                {
                    let text = format!(
                        "t={} ms: {} cannot seed incarnation {incarnation}: it does not hold the WAL the record names",
                        self.now, self.slots[i].id
                    );
                    self.log.push(text);
                    return None;
                }
                (*incarnation, src, *commit_index)
            }
            SeedPlan::RestoreSnapshot {
                incarnation, name, ..
            } => {
                let (src, commit) = match &self.snapshot {
                    Some(s) if s.facts.name == *name => (s.facts.incarnation, s.holds),
                    _ => {
                        self.violation(format!(
                            "{} restores snapshot {name}, which the store does not hold",
                            self.slots[i].id
                        ));
                        (0, 0)
                    }
                };
                (*incarnation, src, commit)
            }
            SeedPlan::Fresh { incarnation, .. } => (*incarnation, 0, 0),
        };
        self.writes_lost(k, src, commit);
        self.base.insert(k, commit);
        let id = self.slots[i].id.clone();
        self.slots[i].etcd = SimEtcd::at(cluster_id(k), k, commit, vec![id.clone()]);
        self.clusters
            .insert(k, Cluster::new(vec![id], commit, cluster_id(k)));
        self.acked.entry(k).or_insert(commit);
        Some(k)
    }

    /// The seeding finished: the seeder's snapshot is in the store.
    pub fn seed_completed(&mut self, i: usize, k: Incarnation) {
        let e = &self.slots[i].etcd;
        if e.incarnation == k && e.has_data && !self.store_down {
            self.put_snapshot(k, e.applied, e.applied);
        }
    }

    /// Another instance seeds `r.incarnation`: move the data aside; the
    /// planner adds this instance once it reaches the new leader.
    pub fn join(&mut self, i: usize, r: &SeedRecord) {
        if !self
            .records
            .get(&r.incarnation)
            .is_some_and(|s| s.same_decision(r))
        {
            let text = format!(
                "{} joins incarnation {} seeded by {}, which the store does not record",
                self.slots[i].id, r.incarnation, r.value.seeder
            );
            let now = self.now;
            self.inv.violation(now, text);
        }
        let e = &mut self.slots[i].etcd;
        if e.incarnation >= r.incarnation {
            return;
        }
        // The record it read: the membership as the store lists it.
        let voters = self
            .clusters
            .get(&r.incarnation)
            .map_or_else(|| r.voters.clone(), |c| c.recorded_voters.clone());
        *e = SimEtcd {
            incarnation: r.incarnation,
            voters,
            ..SimEtcd::default()
        };
    }

    /// A snapshot of incarnation `k` recorded at position `recorded` (the
    /// daemon records the applied index read just before it:
    /// `snapshot::take::recorded_position`) holding `holds` entries.
    fn put_snapshot(&mut self, k: Incarnation, recorded: u64, holds: u64) {
        let snap = StoredSnapshot {
            facts: SnapshotFacts {
                name: format!("snap-i{k}-c{holds:08}"),
                cluster_id: Some(cluster_id(k)),
                incarnation: k,
                commit_index: recorded,
                revision: holds * 2,
            },
            holds,
        };
        if self
            .snapshot
            .as_ref()
            .is_none_or(|s| (s.facts.incarnation, s.holds) < (k, holds))
        {
            self.snapshot = Some(snap);
        }
    }

    /// A crash (the driver also crashes the turmoil host); `wipe` loses
    /// the disk: the state file and the etcd data.
    pub fn crash(&mut self, i: usize, wipe: bool) {
        let s = &mut self.slots[i];
        s.up = false;
        s.proposing = false;
        // What was applied but not yet in the backend is gone from memory;
        // a restart replays it from the WAL.
        s.etcd.applied = s.etcd.backend;
        if wipe {
            s.disk = None;
            s.etcd = SimEtcd::default();
            // An acceptor with amnesia: its past promises and acceptances
            // no longer count.
            let id = s.id.clone();
            self.inv.disk_lost(&id);
        }
    }

    /// One step of every etcd cluster: elections, replication, the
    /// planner's membership changes, writes, applying, the backend's
    /// batch commits, snapshots.
    pub fn tick_clusters(&mut self, now: Millis) {
        self.now = now;
        let write = now >= self.last_write + WRITE_EVERY;
        if write {
            self.last_write = now;
        }
        let heartbeat = now >= self.last_backend + BACKEND_EVERY;
        let ks: Vec<Incarnation> = self.clusters.keys().copied().collect();
        for k in &ks {
            self.tick_cluster(*k, write, heartbeat);
        }
        if now_of_view(now, self.last_view) {
            self.last_view = now;
        }
        let apply_one = now >= self.last_slow_apply + SLOW_APPLY_EVERY;
        if apply_one {
            self.last_slow_apply = now;
        }
        self.apply(apply_one);
        if heartbeat {
            self.last_backend = now;
            for s in &mut self.slots {
                if s.up && !s.etcd.frozen {
                    s.etcd.backend = s.etcd.applied;
                }
            }
        }
        let (newest_k, led) = self.newest_has_leader();
        if led || !self.clusters.contains_key(&newest_k) {
            self.leaderless_since = None;
        } else if self.leaderless_since.is_none() {
            self.leaderless_since = Some(now);
        }
        // A write is acknowledged once the leader applied it.
        for k in ks {
            let Some(l) = self.clusters.get(&k).and_then(|c| c.leader) else {
                continue;
            };
            let applied = self.slots[l].etcd.applied;
            let acked = self.acked.entry(k).or_insert(0);
            if applied > *acked {
                self.writes += applied - *acked;
                *acked = applied;
            }
        }
        let newest = self.clusters.keys().max().copied();
        if now >= self.last_snapshot + SNAPSHOT_EVERY && !self.store_down {
            self.last_snapshot = now;
            if let Some(l) = newest.and_then(|k| self.clusters[&k].leader) {
                let e = &self.slots[l].etcd;
                let (k, applied) = (e.incarnation, e.applied);
                self.put_snapshot(k, applied, applied);
            }
        }
    }

    /// Running members apply what they know is committed: all of it, or
    /// one entry per [`SLOW_APPLY_EVERY`] while applying is slow.
    fn apply(&mut self, apply_one: bool) {
        for i in 0..self.slots.len() {
            if !self.runs_member(i, self.slots[i].etcd.incarnation) {
                continue;
            }
            let slow = self.slow_apply;
            let e = &mut self.slots[i].etcd;
            if !slow {
                e.applied = e.commit_index;
            } else if apply_one && e.applied < e.commit_index {
                e.applied += 1;
            }
        }
    }

    fn reach(&self, leader: usize, k: Incarnation) -> Vec<usize> {
        (0..self.slots.len())
            .filter(|j| self.runs(*j, k) && self.connected(leader, *j))
            .collect()
    }

    /// One step of incarnation `k`'s cluster. The leader talks to its
    /// followers when a write comes and on heartbeats: they take its log
    /// and the commit index it knew *before* the new entry (so a
    /// follower's WAL commit index lags the leader's by one write).
    fn tick_cluster(&mut self, k: Incarnation, write: bool, heartbeat: bool) {
        let Some(c) = self.clusters.get(&k).cloned() else {
            return;
        };
        let q = majority(c.voters.len());
        let keep = c
            .leader
            .filter(|l| self.runs(*l, k) && self.reach(*l, k).len() >= q);
        let leader = match keep {
            Some(l) => Some(l),
            None => {
                // Raft's election restriction, roughly: the member with the
                // longest log that reaches a majority wins, and holds every
                // entry that majority holds.
                let mut best: Option<(u64, usize)> = None;
                for j in 0..self.slots.len() {
                    if !self.runs(j, k) || self.reach(j, k).len() < q {
                        continue;
                    }
                    let li = self.slots[j].etcd.last_index;
                    if best.is_none_or(|(b, _)| li > b) {
                        best = Some((li, j));
                    }
                }
                best.map(|(_, j)| {
                    let top = self
                        .reach(j, k)
                        .iter()
                        .map(|m| self.slots[*m].etcd.last_index)
                        .max()
                        .unwrap_or(0);
                    let e = &mut self.slots[j].etcd;
                    e.last_index = e.last_index.max(top);
                    let acked = self.acked.get(&k).copied().unwrap_or(0);
                    if top < acked {
                        self.note(format!(
                            "incarnation {k} elected {} at index {top} below the acknowledged {acked} (the holders lost their disks)",
                            self.slots[j].id
                        ));
                    }
                    j
                })
            }
        };
        let newer_record = self.records.keys().any(|r| *r > k);
        if let (Some(l), true) = (leader, newer_record)
            && (c.leader.is_none() || write)
        {
            let newest = self.records.keys().max().copied().unwrap_or(k);
            let leader = self.slots[l].id.clone();
            self.inv.stale_leader(self.now, k, &leader, newest);
        }
        let Some(l) = leader else {
            if c.leader.is_some() {
                self.log.push(format!(
                    "t={} ms: incarnation {k} lost its leader",
                    self.now
                ));
            }
            if let Some(c) = self.clusters.get_mut(&k) {
                c.leader = None;
            }
            return;
        };
        let elected = c.leader != Some(l);
        let view = now_of_view(self.now, self.last_view);
        if !(write || heartbeat || elected || view) {
            return;
        }
        // The commit index followers learn with this message.
        let known = self.slots[l].etcd.commit_index;
        let mut last = self.slots[l].etcd.last_index;
        if write {
            last += 1;
        }
        // The planner: certified-gone members out; an instance that joined
        // is added as a learner (one at a time, as etcd allows), gets the
        // leader's snapshot, and is promoted once it has been a learner for
        // PROMOTE_AFTER — its promotion recorded in the store first.
        let mut voters = c.voters.clone();
        let mut learners = c.learners.clone();
        let gone = |id: &InstanceId| self.index.get(id).is_none_or(|j| self.slots[*j].terminated);
        voters.retain(|v| !gone(v));
        learners.retain(|v, _| !gone(v));
        let mut recorded_voters = c.recorded_voters.clone();
        let mut recorded_learners = c.recorded_learners.clone();
        for j in 0..self.slots.len() {
            let s = &self.slots[j];
            let joins = s.up
                && s.present
                && !s.terminated
                && !s.etcd.frozen
                && s.etcd.incarnation == k
                && self.connected(l, j);
            if !joins || voters.contains(&s.id) || learners.contains_key(&s.id) {
                continue;
            }
            if learners.is_empty() {
                learners.insert(s.id.clone(), self.now);
                // The joiner records itself in the store right after its
                // add, before its etcd starts (recovery::voters::after_join).
                if !recorded_learners.contains(&s.id) {
                    recorded_learners.push(s.id.clone());
                    recorded_learners.sort();
                }
            }
        }
        let ready: Option<InstanceId> = learners
            .iter()
            .find(|(id, since)| {
                self.now >= **since + PROMOTE_AFTER
                    && self.index.get(*id).is_some_and(|j| {
                        let s = &self.slots[*j];
                        s.up && !s.etcd.frozen && s.etcd.has_data && self.connected(l, *j)
                    })
            })
            .map(|(id, _)| id.clone());
        if let Some(p) = ready {
            if !recorded_voters.contains(&p) {
                recorded_voters.push(p.clone());
                recorded_voters.sort();
            }
            learners.remove(&p);
            voters.push(p);
        }
        voters.sort();
        let cid = c.cluster_id;
        for j in 0..self.slots.len() {
            let s = &self.slots[j];
            let member = voters.contains(&s.id) || learners.contains_key(&s.id);
            let reached =
                s.up && !s.etcd.frozen && s.etcd.incarnation == k && member && self.connected(l, j);
            if !reached {
                continue;
            }
            let e = &mut self.slots[j].etcd;
            if j == l {
                // Replicated to the majority it reaches: committed.
                e.last_index = last;
                e.commit_index = last;
            } else if !e.has_data {
                // A joiner: the leader's snapshot, then its log.
                let keep = (e.voters.clone(), e.learners.clone());
                *e = SimEtcd::at(cid, k, known, keep.0);
                e.learners = keep.1;
                e.last_index = last;
            } else {
                // Raft truncates a follower's uncommitted tail to the
                // leader's log; its commit index never goes back.
                e.last_index = last;
                e.commit_index = e.commit_index.max(known).min(last);
            }
            // Its instance records the member list at its next pass.
            if view {
                e.voters = voters.clone();
                e.learners = learners.keys().cloned().collect();
            }
        }
        if elected {
            let text = format!(
                "t={} ms: incarnation {k} leader {} at index {last}",
                self.now, self.slots[l].id
            );
            self.log.push(text);
        }
        if let Some(c) = self.clusters.get_mut(&k) {
            c.leader = Some(l);
            c.commit = last;
            c.voters = voters;
            c.learners = learners;
            c.recorded_voters = recorded_voters;
            c.recorded_learners = recorded_learners;
            // The leader's instance rewrites the record at its pass: the
            // voters (and a promotion recorded first, while it is still a
            // learner: `recovery::voters::covers`), the learners.
            if view {
                let learner_ids = c.learner_ids();
                let mut rv: Vec<InstanceId> = c
                    .recorded_voters
                    .iter()
                    .filter(|v| learner_ids.contains(v))
                    .cloned()
                    .collect();
                rv.extend(c.voters.iter().cloned());
                rv.sort();
                rv.dedup();
                c.recorded_voters = rv;
                c.recorded_learners = learner_ids;
            }
        }
    }

    /// The newest incarnation (by record) and whether it has a leader.
    pub fn newest_has_leader(&self) -> (Incarnation, bool) {
        let k = self.records.keys().max().copied().unwrap_or(FIRST);
        let led = self.clusters.get(&k).is_some_and(|c| c.leader.is_some());
        (k, led)
    }

    /// Deterministic randomness for the hosts (boot ids, ticks).
    pub fn random(&mut self) -> u64 {
        self.rng.next_u64()
    }
}

/// Whether the membership views are refreshed at `now` (every
/// [`VIEW_EVERY`] since `last`).
fn now_of_view(now: Millis, last: Millis) -> bool {
    now >= last + VIEW_EVERY
}

pub fn cluster_id(k: Incarnation) -> u64 {
    1_000 + k
}
