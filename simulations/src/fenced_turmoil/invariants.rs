//! The safety invariants of the fenced protocol (DESIGN §7), checked as
//! the hosts execute effects and as the driver steps the etcd model:
//!
//! - at most one record per incarnation (the store's conditional create);
//!   only the record's seeder seeds, and only what the record says;
//! - the seeded position ≥ the highest position held by a surviving
//!   instance with data of `n` (or the store's snapshot), unless
//!   `accept_loss_after` fired; acknowledged writes are lost only when no
//!   surviving instance holds them;
//! - a promise or acceptance is persisted before it is sent, and the
//!   persisted promise never goes back (restarts included, disk loss
//!   excepted);
//! - no two values chosen for one incarnation (unless the first one's
//!   holder lost its data: that value is abandoned, never recorded);
//! - the old incarnation never has a leader once a newer record exists
//!   (checked in [`super::world::World::tick_clusters`]).
//!
//! `recovery::fenced::harness`'s checks are written against its own world
//! (they read its nodes and scenario), so they are not reused here.

use super::world::World;
use recovery::fenced::ids::majority;
use recovery::fenced::{
    Envelope, Incarnation, Message, PersistedState, SeedPlan, SeedRecord, decode, seed_plan,
};

/// The residual of DESIGN §7 — writes a leader acknowledged before its
/// commit index reached any survivor — is at most this many writes (a
/// follower's commit index lags by about one heartbeat: one write in this
/// model).
pub const RESIDUAL_BOUND: u64 = 2;

impl World {
    /// Highest `(incarnation, commit index)` of data of `n` that survives
    /// (on any instance not terminated, up or down) and of the store.
    pub fn best_surviving(&self, n: Incarnation) -> (Incarnation, u64) {
        let mut best = self
            .slots
            .iter()
            .filter(|s| !s.terminated && s.etcd.has_data && s.etcd.incarnation == n)
            .map(|s| (n, s.etcd.commit_index))
            .max()
            .unwrap_or((0, 0));
        if let Some(s) = &self.snapshot {
            best = best.max((s.facts.incarnation, s.facts.commit_index));
        }
        best
    }

    /// A record about to be created by instance `i` (the commit point).
    pub(super) fn check_record(&mut self, i: usize, r: &SeedRecord) {
        if r.data_loss {
            if !self.data_loss_fired {
                self.violation("a data-loss record without the data-loss effect".into());
            }
            return;
        }
        let pos = r.value.source.position();
        let best = self.best_surviving(r.incarnation - 1);
        if pos < best {
            self.violation(format!(
                "{} creates the record of incarnation {} seeding from {} at {pos:?} but {best:?} survives",
                self.slots[i].id, r.incarnation, r.value.source
            ));
        }
    }

    /// Seeding incarnation `k` from index `commit` of incarnation `src`:
    /// the acknowledged writes of `src` above it, and every write of the
    /// incarnations between, are lost; a violation if a surviving
    /// instance still holds any of them.
    pub(super) fn writes_lost(&mut self, k: Incarnation, src: Incarnation, commit: u64) {
        let data_loss = self.records.get(&k).is_some_and(|r| r.data_loss);
        for m in src.max(1)..k {
            let from = if m == src {
                commit
            } else {
                self.base.get(&m).copied().unwrap_or(0)
            };
            let acked = self.acked.get(&m).copied().unwrap_or(0);
            if acked <= from {
                continue;
            }
            let survivors = || {
                self.slots
                    .iter()
                    .filter(|s| !s.terminated && s.etcd.has_data && s.etcd.incarnation == m)
            };
            let holders: Vec<String> = survivors()
                .filter(|s| s.etcd.commit_index > from)
                .map(|s| s.id.clone())
                .collect();
            // Entries above every survivor's WAL commit index are in logs
            // only: a replay discards them (the documented residual).
            let in_logs = survivors()
                .map(|s| s.etcd.last_index)
                .max()
                .unwrap_or(0)
                .clamp(from, acked);
            let text = format!(
                "seeding incarnation {k} from incarnation {src} index {commit} drops {} acknowledged write(s) of incarnation {m} (indices {}..={acked})",
                acked - from,
                from + 1
            );
            if !holders.is_empty() && !data_loss {
                self.violation(format!("{text} that {holders:?} still hold"));
                continue;
            }
            let residual = if data_loss { 0 } else { in_logs - from };
            if residual > RESIDUAL_BOUND {
                self.violation(format!(
                    "{text}: {residual} of them survive in logs above every survivor's commit index, more than the residual of about one heartbeat ({RESIDUAL_BOUND})"
                ));
            }
            self.residual_writes += residual;
            self.lost_writes += acked - from - residual;
            self.note(format!(
                "{text}; no surviving instance holds them committed ({residual} in logs only: the residual)"
            ));
        }
    }

    /// Instance `i` seeds.
    pub(super) fn check_seed(&mut self, i: usize, plan: &SeedPlan) {
        let id = self.slots[i].id.clone();
        let k = match plan {
            SeedPlan::ReplayWal { incarnation, .. }
            | SeedPlan::RestoreSnapshot { incarnation, .. }
            | SeedPlan::Fresh { incarnation, .. } => *incarnation,
        };
        match self.records.get(&k).cloned() {
            None => self.violation(format!(
                "{id} seeds incarnation {k} but the store has no record of it"
            )),
            Some(r) if r.value.seeder != id => self.violation(format!(
                "{id} seeds incarnation {k} but the record names {}",
                r.value.seeder
            )),
            Some(r) if seed_plan(&r).as_ref() != Some(plan) => self.violation(format!(
                "{id} seeds incarnation {k} with a plan the record does not say"
            )),
            Some(_) => {}
        }
        if let SeedPlan::Fresh { .. } = plan {
            self.violation(format!(
                "{id} seeds an empty incarnation {k} while data and records exist"
            ));
        }
        if let SeedPlan::ReplayWal { commit_index, .. } = plan {
            let e = self.slots[i].etcd.clone();
            if !(e.has_data && e.incarnation + 1 == k && e.commit_index >= *commit_index) {
                self.violation(format!(
                    "{id} replays its WAL to {commit_index} for incarnation {k} but holds {e:?}"
                ));
            }
        }
        match self.seeds.get(&k) {
            Some((other, _)) if *other != id => {
                let other = other.clone();
                self.violation(format!("two seeders of incarnation {k}: {other} and {id}"));
            }
            Some(_) => {}
            None => {
                self.seeds.insert(k, (id, self.now));
            }
        }
    }

    /// Instance `i` persists `state`: the promise never goes back.
    pub(super) fn check_persist(&mut self, i: usize, state: &PersistedState) {
        let Some(p) = &state.promised else {
            return;
        };
        let target = state.incarnation + 1;
        let id = self.slots[i].id.clone();
        match self.slots[i].promised.get(&target) {
            Some(max) if p < max => {
                let max = max.clone();
                self.violation(format!(
                    "{id} persisted promise {p} for incarnation {target} after promising {max}"
                ));
            }
            _ => {
                self.slots[i].promised.insert(target, p.clone());
            }
        }
    }

    /// A message about to leave instance `i`.
    pub(super) fn check_send(&mut self, i: usize, env: &Envelope) {
        let (target, ballot, accepted) = match &env.message {
            Message::Promise { target, ballot, .. } => (*target, ballot.clone(), false),
            Message::Accepted { target, ballot } => (*target, ballot.clone(), true),
            _ => return,
        };
        let id = self.slots[i].id.clone();
        let persisted = match self.slots[i].disk.as_deref().map(decode) {
            Some(Ok(s)) => s,
            _ => {
                return self.violation(format!(
                    "{id} sent a {} for ballot {ballot} with no state file",
                    env.message.kind()
                ));
            }
        };
        let ok = persisted.incarnation + 1 == target
            && persisted.promised.as_ref().is_some_and(|p| *p >= ballot)
            && (!accepted
                || persisted
                    .accepted
                    .as_ref()
                    .is_some_and(|a| a.ballot == ballot));
        if !ok {
            self.violation(format!(
                "{id} sent a {} for ballot {ballot} that its state file does not hold",
                env.message.kind()
            ));
        }
        if let Some(max) = self.slots[i].promised.get(&target) {
            if ballot < *max {
                let max = max.clone();
                self.violation(format!(
                    "{id} broke its promise: {} for ballot {ballot} after promising {max}",
                    env.message.kind()
                ));
            }
        }
        if !accepted {
            return;
        }
        let Some(value) = persisted.accepted.map(|a| a.value) else {
            return;
        };
        let list = self.accepts.entry(target).or_default();
        if !list.iter().any(|(n, b, _)| *n == id && *b == ballot) {
            list.push((id, ballot.clone(), value.clone()));
        }
        let count = list
            .iter()
            .filter(|(_, b, v)| *b == ballot && *v == value)
            .count();
        let voters = self
            .clusters
            .get(&(target - 1))
            .map_or(1, |c| c.voters.len());
        if count >= majority(voters) {
            match self.chosen.get(&target) {
                // A chosen value whose holder lost its data (or was
                // terminated) can never be executed: the protocol abandons
                // it before any record names it and may choose again.
                Some(v) if *v != value && self.unexecutable(v, target - 1) => {
                    self.chosen.insert(target, value);
                }
                Some(v) if *v != value => {
                    let v = v.clone();
                    self.violation(format!(
                        "two values chosen for incarnation {target}: {v} and {value}"
                    ));
                }
                Some(_) => {}
                None => {
                    self.chosen.insert(target, value);
                }
            }
        }
    }

    /// `v` seeds from a member's WAL of incarnation `n` that member no
    /// longer holds.
    fn unexecutable(&self, v: &recovery::fenced::SeedValue, n: u64) -> bool {
        match &v.source {
            recovery::fenced::SeedSource::Member { holder, .. } => self
                .slots
                .iter()
                .find(|s| s.id == *holder)
                .is_none_or(|s| s.terminated || !(s.etcd.has_data && s.etcd.incarnation == n)),
            _ => false,
        }
    }
}
