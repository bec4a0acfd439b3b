//! The safety invariants of the fenced protocol (`crate::fenced`) — one
//! set, checked by both harnesses: the pure multi-node harness of this
//! module ([`super::World`]) and the turmoil simulation of the
//! `simulations` crate, which runs the daemon's own driver. Each world
//! keeps an [`Invariants`] and feeds it the facts only it knows (what a
//! node holds on disk, the best data that survives, whether a value can
//! still be executed); the checks and their bookkeeping live here, once.
//!
//! - a promise or acceptance is persisted before it is sent; a persisted
//!   promise never goes back and is never broken (restarts included, disk
//!   loss excepted) — [`Invariants::persist`], [`Invariants::send`];
//! - no two values chosen for one incarnation by acceptors that kept their
//!   disks, unless the first can no longer be executed (its holder lost the
//!   data: it is abandoned before any record names it) —
//!   [`Invariants::send`];
//! - every non-gone member of `V_n` reported, truthfully, before a value is
//!   proposed (unless `accept_loss_after` fired) —
//!   [`Invariants::proposal`];
//! - no empty seed proposed or executed while data or a record exists —
//!   [`Invariants::create`], [`Invariants::seed`];
//! - at most one record per incarnation (the store's conditional create),
//!   and the record's position is at least the best surviving data unless
//!   it is a data-loss record, which needs the data-loss effect —
//!   [`Invariants::record`];
//! - only the record's seeder seeds, only what the record says, from data
//!   it holds; never two seeders — [`Invariants::seed`];
//! - an incarnation older than the newest record never has a leader —
//!   [`Invariants::stale_leader`].

use crate::fenced::ids::{Incarnation, InstanceId, Millis, majority};
use crate::fenced::{
    Ballot, DataReport, Envelope, LocalData, Message, PersistedState, SeedPlan, SeedRecord,
    SeedValue, seed_plan,
};
use std::collections::BTreeMap;

/// At most this many distinct violations are kept per run.
const KEPT: usize = 20;

/// The bookkeeping of one run and the violations found.
#[derive(Clone, Debug, Default)]
pub struct Invariants {
    pub violations: Vec<String>,
    /// Seeds executed: incarnation → (seeder, time of the first).
    pub seeds: BTreeMap<Incarnation, (InstanceId, Millis)>,
    /// Highest ballot each instance promised, per target, since its disk
    /// was last lost.
    promised: BTreeMap<InstanceId, BTreeMap<Incarnation, Ballot>>,
    /// Acceptances per target: (instance, ballot, value).
    accepts: BTreeMap<Incarnation, Vec<(InstanceId, Ballot, SeedValue)>>,
    chosen: BTreeMap<Incarnation, SeedValue>,
}

/// The target incarnation a seed plan seeds.
pub fn plan_target(plan: &SeedPlan) -> Incarnation {
    match plan {
        SeedPlan::ReplayWal { incarnation, .. }
        | SeedPlan::RestoreSnapshot { incarnation, .. }
        | SeedPlan::Fresh { incarnation, .. } => *incarnation,
    }
}

impl Invariants {
    pub fn violation(&mut self, now: Millis, text: String) {
        let text = format!("t={now} ms: {text}");
        if !self.violations.contains(&text) && self.violations.len() < KEPT {
            self.violations.push(text);
        }
    }

    /// `id` lost its disk: an acceptor with amnesia; its past promises and
    /// acceptances no longer count.
    pub fn disk_lost(&mut self, id: &str) {
        self.promised.remove(id);
        for list in self.accepts.values_mut() {
            list.retain(|(n, _, _)| n != id);
        }
    }

    /// `id` persists `state`: the promise never goes back.
    pub fn persist(&mut self, now: Millis, id: &str, state: &PersistedState) {
        let Some(p) = &state.promised else {
            return;
        };
        let target = state.incarnation + 1;
        let promised = self.promised.entry(id.to_string()).or_default();
        match promised.get(&target) {
            Some(max) if p < max => {
                let max = max.clone();
                self.violation(
                    now,
                    format!(
                        "{id} persisted promise {p} for incarnation {target} after promising {max}"
                    ),
                );
            }
            _ => {
                promised.insert(target, p.clone());
            }
        }
    }

    /// A message about to leave `id`. `on_disk`: its state file, `None`
    /// when it has none (or it does not decode); `voters`: the size of
    /// `V_n` for the target's previous incarnation; `unexecutable`: whether
    /// a chosen value can no longer be executed (its holder lost the data).
    pub fn send(
        &mut self,
        now: Millis,
        id: &str,
        env: &Envelope,
        on_disk: Option<PersistedState>,
        voters: usize,
        unexecutable: impl Fn(&SeedValue) -> bool,
    ) {
        let (target, ballot, accepted) = match &env.message {
            Message::Promise { target, ballot, .. } => (*target, ballot.clone(), false),
            Message::Accepted { target, ballot } => (*target, ballot.clone(), true),
            _ => return,
        };
        let kind = env.message.kind();
        let Some(persisted) = on_disk else {
            return self.violation(
                now,
                format!("{id} sent a {kind} for ballot {ballot} with no state file"),
            );
        };
        let holds = persisted.incarnation + 1 == target
            && persisted.promised.as_ref().is_some_and(|p| *p >= ballot)
            && (!accepted
                || persisted
                    .accepted
                    .as_ref()
                    .is_some_and(|a| a.ballot == ballot));
        if !holds {
            self.violation(
                now,
                format!("{id} sent a {kind} for ballot {ballot} that its state file does not hold"),
            );
        }
        let promised = self.promised.entry(id.to_string()).or_default();
        match promised.get(&target) {
            Some(max) if ballot < *max => {
                let max = max.clone();
                self.violation(
                    now,
                    format!(
                        "{id} broke its promise: {kind} for ballot {ballot} after promising {max}"
                    ),
                );
            }
            _ => {
                promised.insert(target, ballot.clone());
            }
        }
        if !accepted {
            return;
        }
        let Some(value) = persisted.accepted.map(|a| a.value) else {
            return;
        };
        let list = self.accepts.entry(target).or_default();
        if !list.iter().any(|(n, b, _)| n == id && *b == ballot) {
            list.push((id.to_string(), ballot.clone(), value.clone()));
        }
        let count = list
            .iter()
            .filter(|(_, b, v)| *b == ballot && *v == value)
            .count();
        if count < majority(voters) {
            return;
        }
        match self.chosen.get(&target) {
            Some(v) if *v != value && unexecutable(v) => {
                self.chosen.insert(target, value);
            }
            Some(v) if *v != value => {
                let v = v.clone();
                self.violation(
                    now,
                    format!("two values chosen for incarnation {target}: {v} and {value}"),
                );
            }
            Some(_) => {}
            None => {
                self.chosen.insert(target, value);
            }
        }
    }

    /// `proposer` proposes (its `Accept`s leave) with these `reports`:
    /// every member of `V_n` that holds data of `n` (`holders`, with what
    /// it holds) reported, and reported the truth.
    pub fn proposal(
        &mut self,
        now: Millis,
        proposer: &str,
        n: Incarnation,
        reports: &BTreeMap<InstanceId, DataReport>,
        holders: &[(InstanceId, LocalData)],
    ) {
        for (id, data) in holders {
            match reports.get(id) {
                Some(r) if r.data == *data => {}
                Some(r) => self.violation(
                    now,
                    format!(
                        "{proposer} proposed with a wrong report of {id}: {:?} vs {data:?}",
                        r.data
                    ),
                ),
                None => self.violation(
                    now,
                    format!(
                        "{proposer} proposed without a report from {id} (member of V_{n}, holds data)"
                    ),
                ),
            }
        }
    }

    /// A `CreateRecord` about to go to the store: never an empty seed (the
    /// protocol recovers a cluster that existed; an empty incarnation 1 is
    /// formation's).
    pub fn create(&mut self, now: Millis, r: &SeedRecord, records: usize) {
        if r.value.source == crate::fenced::SeedSource::Empty {
            self.violation(
                now,
                format!(
                    "an empty seed of incarnation {} proposed while data or a record exists (store records: {records})",
                    r.incarnation
                ),
            );
        }
    }

    /// A record the store is about to create (the commit point), by
    /// `creator`: its position is at least `best_surviving` (the best data
    /// of `V_n` and the store's snapshot) unless it is a data-loss record,
    /// which needs the data-loss effect.
    pub fn record(
        &mut self,
        now: Millis,
        creator: &str,
        r: &SeedRecord,
        best: (Incarnation, u64),
        data_loss_fired: bool,
    ) {
        if r.data_loss {
            if !data_loss_fired {
                self.violation(
                    now,
                    "a data-loss record without the data-loss effect".into(),
                );
            }
            return;
        }
        let pos = r.value.source.position();
        if pos < best {
            self.violation(
                now,
                format!(
                    "{creator} creates the record of incarnation {} seeding from {} at {pos:?} but {best:?} survives",
                    r.incarnation, r.value.source
                ),
            );
        }
    }

    /// `id` seeds per `plan`. `record`: the store's record of the target;
    /// `empty_allowed`: whether an empty seed may happen now; `holds_wal`:
    /// for a WAL replay, whether `id` holds that WAL up to the commit index.
    pub fn seed(
        &mut self,
        now: Millis,
        id: &str,
        plan: &SeedPlan,
        record: Option<&SeedRecord>,
        empty_allowed: bool,
        holds_wal: bool,
    ) {
        let k = plan_target(plan);
        match record {
            None => self.violation(
                now,
                format!("{id} seeds incarnation {k} but the store has no record of it"),
            ),
            Some(r) if r.value.seeder != id => self.violation(
                now,
                format!(
                    "{id} seeds incarnation {k} but the record names {}",
                    r.value.seeder
                ),
            ),
            Some(r) if seed_plan(r).as_ref() != Some(plan) => self.violation(
                now,
                format!("{id} seeds incarnation {k} with a plan the record does not say"),
            ),
            Some(_) => {}
        }
        if let (SeedPlan::Fresh { .. }, false) = (plan, empty_allowed) {
            self.violation(
                now,
                format!("{id} seeds an empty incarnation {k} while data or a record exists"),
            );
        }
        if let (SeedPlan::ReplayWal { commit_index, .. }, false) = (plan, holds_wal) {
            self.violation(
                now,
                format!(
                    "{id} replays its WAL to {commit_index} for incarnation {k} but does not hold it"
                ),
            );
        }
        match self.seeds.get(&k) {
            Some((other, _)) if other != id => {
                let other = other.clone();
                self.violation(
                    now,
                    format!("two seeders of incarnation {k}: {other} and {id}"),
                );
            }
            Some(_) => {}
            None => {
                self.seeds.insert(k, (id.to_string(), now));
            }
        }
    }

    /// Incarnation `k` has a leader (`leader`) while the store records a
    /// newer incarnation `newest`.
    pub fn stale_leader(&mut self, now: Millis, k: Incarnation, leader: &str, newest: Incarnation) {
        if newest > k {
            self.violation(
                now,
                format!(
                    "incarnation {k} has a leader ({leader}) and accepts writes although the record of incarnation {newest} exists"
                ),
            );
        }
    }
}
