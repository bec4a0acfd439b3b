//! The DESIGN §7 invariants, checked by the world as it runs.

use super::scenario::Kind;
use super::world::{OLD, World};
use crate::fenced::ids::majority;
use crate::fenced::{Envelope, Message, SeedPlan, SeedRecord, SeedSource, decode, seed_plan};

impl World {
    fn violation(&mut self, text: String) {
        let text = format!("t={} ms: {text}", self.now);
        if !self.violations.contains(&text) {
            self.violations.push(text);
        }
    }

    fn any_data(&self) -> bool {
        self.nodes.iter().any(|n| n.data.has_data)
    }

    /// Highest `(incarnation, commit index)` of surviving data of `V_n`
    /// and of the store.
    fn best_surviving(&self) -> (u64, u64) {
        let mut best = self
            .nodes
            .iter()
            .filter(|n| n.voter && n.data.has_data && n.data.incarnation == OLD)
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
    pub(super) fn check_step(&mut self) {
        if self.sc.kind == Kind::QuorumLoss
            && self.records.keys().any(|k| *k > OLD)
            && self.old_has_leader()
        {
            self.violation(
                "the old incarnation regained quorum after a newer record was created".into(),
            );
        }
    }

    /// A record about to be created (the commit point).
    pub(super) fn check_record(&mut self, r: &SeedRecord) {
        if r.data_loss {
            if !self.data_loss_fired {
                self.violation("a data-loss record without the data-loss effect".into());
            }
            return;
        }
        if self.sc.kind == Kind::Bootstrap {
            return;
        }
        let pos = r.value.source.position();
        let best = self.best_surviving();
        if pos < best {
            self.violation(format!(
                "record of incarnation {} seeds from {} at {pos:?} but {best:?} survives",
                r.incarnation, r.value.source
            ));
        }
    }

    /// A `CreateRecord` effect.
    pub(super) fn check_create(&mut self, r: &SeedRecord) {
        if r.value.source == SeedSource::Empty
            && (self.sc.kind != Kind::Bootstrap || !self.records.is_empty() || self.any_data())
        {
            self.violation(format!(
                "an empty seed of incarnation {} proposed while data or a record exists (store records: {})",
                r.incarnation,
                self.records.len()
            ));
        }
    }

    /// Node `i` proposes (sends `Accept`): every non-gone member of `V_n`
    /// reported, and its report is the truth.
    pub(super) fn check_proposal(&mut self, i: usize, data_loss: bool) {
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
        let mut problems = Vec::new();
        match self.sc.kind {
            Kind::Bootstrap => {
                for n in self.nodes.iter().filter(|n| n.voter || n.present) {
                    if !round.reports.contains_key(&n.id) {
                        problems.push(format!("bootstrap proposed without a report from {}", n.id));
                    }
                }
            }
            _ => {
                for n in self.nodes.iter().filter(|n| n.voter) {
                    let holds = n.data.has_data && n.data.incarnation == OLD;
                    if !holds {
                        continue; // gone: terminated or its disk lost
                    }
                    match round.reports.get(&n.id) {
                        Some(r) if r.data == n.data => {}
                        Some(r) => problems.push(format!(
                            "{} proposed with a wrong report of {}: {:?} vs {:?}",
                            self.nodes[i].id, n.id, r.data, n.data
                        )),
                        None => problems.push(format!(
                            "{} proposed without a report from {} (member of V_{OLD}, holds data)",
                            self.nodes[i].id, n.id
                        )),
                    }
                }
            }
        }
        for p in problems {
            self.violation(p);
        }
    }

    /// A message about to leave node `i`.
    pub(super) fn check_send(&mut self, i: usize, env: &Envelope) {
        let (target, ballot, accepted) = match &env.message {
            Message::Promise { target, ballot, .. } => (*target, ballot.clone(), false),
            Message::Accepted { target, ballot } => (*target, ballot.clone(), true),
            _ => return,
        };
        let id = self.nodes[i].id.clone();
        let disk = self.nodes[i].disk.as_deref().map(decode);
        let persisted = match disk {
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
        if let Some(max) = self.nodes[i].promised.get(&target) {
            if ballot < *max {
                self.violation(format!(
                    "{id} broke its promise: {} for ballot {ballot} after promising {max}",
                    env.message.kind()
                ));
            }
        }
        let entry = self.nodes[i]
            .promised
            .entry(target)
            .or_insert(ballot.clone());
        if *entry < ballot {
            *entry = ballot.clone();
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
        let quorum = majority(self.voters.len());
        if count >= quorum {
            match self.chosen.get(&target) {
                // A chosen value whose holder has lost its data can never be
                // executed: the protocol abandons it (no record names it:
                // the store's conditional create is the commit point) and
                // may choose again.
                Some(v) if *v != value && self.unexecutable(v) => {
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

    /// `v` seeds from a member's WAL and that member no longer holds it.
    fn unexecutable(&self, v: &crate::fenced::SeedValue) -> bool {
        match &v.source {
            crate::fenced::SeedSource::Member { holder, .. } => self
                .nodes
                .iter()
                .find(|n| n.id == *holder)
                .is_none_or(|n| !(n.data.has_data && n.data.incarnation == OLD)),
            _ => false,
        }
    }

    /// Node `i` seeds.
    pub(super) fn check_seed(&mut self, i: usize, plan: &SeedPlan) {
        let id = self.nodes[i].id.clone();
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
            if self.any_data() || self.records.keys().any(|r| *r != k) {
                self.violation(format!(
                    "{id} seeds an empty cluster while data or a record exists"
                ));
            }
        }
        if let SeedPlan::ReplayWal { commit_index, .. } = plan {
            let d = &self.nodes[i].data;
            if !(d.has_data && d.commit_index >= *commit_index) {
                self.violation(format!(
                    "{id} replays its WAL to {commit_index} but holds {d:?}"
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
}
