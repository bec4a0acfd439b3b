//! The safety invariants, as this world feeds them: the checks themselves
//! are `recovery::fenced::harness::invariants` — one set, shared with the
//! pure harness — and this file hands them what only this world knows
//! (what each instance holds, the best surviving data, whether a value can
//! still be executed). One invariant is this world's own, because only it
//! models acknowledged writes: they are lost only where no surviving
//! instance holds them committed, beyond the residual docs/runbook.md
//! documents ([`World::writes_lost`]).
//!
//! Where they are checked: records as the store creates them, seeds as
//! they run, promises and acceptances as they are persisted and sent
//! (before each effect, from the driver's host), and after every step that
//! an incarnation older than the newest record never has a leader
//! ([`super::world::World::tick_clusters`]).

use super::world::World;
use recovery::fenced::{Envelope, Incarnation, PersistedState, SeedPlan, SeedRecord, decode};

/// The residual (docs/runbook.md) — writes a leader acknowledged before its
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
        let best = self.best_surviving(r.incarnation - 1);
        let creator = self.slots[i].id.clone();
        self.inv
            .record(self.now, &creator, r, best, self.data_loss_fired);
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

    /// Instance `i` seeds: never an empty seed here (the world starts
    /// formed), and a WAL replay needs the WAL of the previous incarnation
    /// up to the commit index.
    pub(super) fn check_seed(&mut self, i: usize, plan: &SeedPlan) {
        let id = self.slots[i].id.clone();
        let k = recovery::fenced::harness::invariants::plan_target(plan);
        let record = self.records.get(&k).cloned();
        let holds_wal = match plan {
            SeedPlan::ReplayWal { commit_index, .. } => {
                let e = &self.slots[i].etcd;
                e.has_data && e.incarnation + 1 == k && e.commit_index >= *commit_index
            }
            _ => true,
        };
        self.inv
            .seed(self.now, &id, plan, record.as_ref(), false, holds_wal);
    }

    /// Instance `i` persists `state`: the promise never goes back.
    pub(super) fn check_persist(&mut self, i: usize, state: &PersistedState) {
        let id = self.slots[i].id.clone();
        self.inv.persist(self.now, &id, state);
    }

    /// A message about to leave instance `i`.
    pub(super) fn check_send(&mut self, i: usize, env: &Envelope) {
        let id = self.slots[i].id.clone();
        let on_disk = self.slots[i].disk.as_deref().and_then(|b| decode(b).ok());
        let target = match &env.message {
            recovery::fenced::Message::Promise { target, .. }
            | recovery::fenced::Message::Accepted { target, .. } => *target,
            _ => return,
        };
        let voters = self
            .clusters
            .get(&(target - 1))
            .map_or(1, |c| c.voters.len());
        let slots = &self.slots;
        self.inv.send(self.now, &id, env, on_disk, voters, |v| {
            unexecutable(slots, v, target - 1)
        });
    }
}

/// `v` seeds from a member's WAL of incarnation `n` that member no longer
/// holds (or it was terminated).
fn unexecutable(
    slots: &[super::world::Slot],
    v: &recovery::fenced::SeedValue,
    n: Incarnation,
) -> bool {
    match &v.source {
        recovery::fenced::SeedSource::Member { holder, .. } => slots
            .iter()
            .find(|s| s.id == *holder)
            .is_none_or(|s| s.terminated || !(s.etcd.has_data && s.etcd.incarnation == n)),
        _ => false,
    }
}
