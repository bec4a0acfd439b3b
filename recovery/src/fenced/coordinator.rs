//! The coordinator side: start or take over a round, collect promises and
//! reports from every member of `V_n`, propose, and commit through the
//! store's conditional create.

use super::ballot::Ballot;
use super::effects::Effect;
use super::effects::{AlertKind, EffectKind};
use super::ids::{Incarnation, InstanceId, Millis, majority};
use super::messages::{Envelope, Message, Rejection};
use super::observation::{DataReport, RecordListing, SnapshotListing};
use super::protocol::{CreateResult, Protocol, effect};
use super::ranking::{RankError, rank};
use super::value::{SeedRecord, SeedSource, SeedValue};
use std::collections::{BTreeMap, BTreeSet};

pub use super::round::{Round, Stage};

impl Protocol {
    /// The round this instance coordinates, if any (for the harness and
    /// `eco status`).
    pub fn round(&self) -> Option<&Round> {
        self.round.as_ref()
    }

    fn delay(&self) -> Millis {
        let exp = self.backoff.min(self.cfg.max_backoff_exponent);
        let jitter = self.random % self.cfg.takeover_jitter.saturating_add(1);
        self.cfg
            .takeover_after
            .saturating_mul(1 << exp)
            .saturating_add(jitter)
    }

    /// Another coordinator is making progress: postpone a takeover.
    pub(super) fn saw_progress(&mut self) {
        if self.round.is_none() {
            let at = self.now + self.delay();
            self.takeover_at = Some(self.takeover_at.map_or(at, |t| t.max(at)));
        }
    }

    /// Certified gone by the provider (the group, or the latest sample).
    pub(super) fn provider_gone(&self, id: &str) -> bool {
        self.group.certified_gone.contains(id)
            || self
                .window
                .latest()
                .is_some_and(|o| o.certified_gone.contains(id))
    }

    /// Instances that look alive: fresh in gossip and not gone.
    fn live_ids(&self) -> BTreeSet<InstanceId> {
        let mut live = BTreeSet::new();
        live.insert(self.me.clone());
        if let Some(obs) = self.window.latest() {
            for (id, p) in &obs.peers {
                let fresh = obs.at.saturating_sub(p.last_heard) <= self.cfg.peer_fresh;
                let in_group = self.group.instances.is_empty() || self.group.instances.contains(id);
                if fresh && in_group && !self.provider_gone(id) {
                    live.insert(id.clone());
                }
            }
        }
        live
    }

    pub(super) fn drive_coordinator(&mut self, out: &mut Vec<Effect>) {
        if self
            .round
            .as_ref()
            .is_some_and(|r| r.target != self.target())
        {
            self.round = None;
        }
        if self.round.is_none() {
            return self.maybe_start(out);
        }
        if let Some(n) = self
            .round
            .as_ref()
            .map(|r| r.n)
            .filter(|_| !self.cfg.faults.count_fresh_as_acceptors)
        {
            let members = self.round_members(n);
            self.widen_round(&members, "a view of V_n lists it, or it holds data of n");
        }
        self.progress_round(out);
    }

    fn maybe_start(&mut self, out: &mut Vec<Effect>) {
        if !self.verdict.is_lost() {
            self.takeover_at = None;
            return;
        }
        let lowest = self.live_ids().first().is_some_and(|id| *id == self.me);
        match self.takeover_at {
            None if lowest && self.backoff == 0 => self.start_round(out),
            None => self.takeover_at = Some(self.now + self.delay()),
            Some(at) if self.now >= at => self.start_round(out),
            Some(_) => {}
        }
    }

    fn start_round(&mut self, out: &mut Vec<Effect>) {
        let n = self.state.incarnation;
        // Every view of V_n (views.rs): this instance's own, the store's
        // record, the holders' views — an instance cut off while a member
        // joined has an older view — and every instance holding data of n,
        // voter or not.
        let mut voters: Vec<InstanceId> = self.round_members(n);
        if self.cfg.faults.count_fresh_as_acceptors {
            voters = self.live_ids().into_iter().collect();
        }
        if voters.is_empty() {
            self.last_problem = Some("no acceptor known (V_n empty, no group)".into());
            return;
        }
        let above = match (&self.max_seen, &self.state.promised) {
            (Some(a), Some(b)) => Some(a.max(b).clone()),
            (a, b) => a.clone().or(b.clone()),
        };
        let ballot = Ballot::next_after(above.as_ref(), &self.me);
        self.max_seen = Some(ballot.clone());
        self.takeover_at = None;
        let target = n + 1;
        self.round = Some(Round {
            target,
            n,
            voters: voters.clone(),
            ballot: ballot.clone(),
            started: self.now,
            last_send: self.now,
            promises: BTreeMap::new(),
            reports: BTreeMap::new(),
            stage: Stage::Collecting,
            alerted: None,
        });
        let reason = format!(
            "coordinating ballot {ballot}: how is incarnation {target} seeded? ({})",
            self.verdict.text()
        );
        let targets = self
            .round
            .as_ref()
            .map_or_else(Vec::new, |r| self.prepare_targets(r));
        for v in &targets {
            self.send(
                out,
                v,
                None,
                Message::Prepare {
                    target,
                    voters: voters.clone(),
                    ballot: ballot.clone(),
                },
                reason.clone(),
            );
        }
    }

    /// Who hears the prepare: every other member of `V_n` not certified
    /// gone, and the coordinator itself once it fences itself
    /// ([`Self::fences_itself`]).
    fn prepare_targets(&self, round: &Round) -> Vec<InstanceId> {
        let mut targets: Vec<InstanceId> = round
            .voters
            .iter()
            .filter(|v| !self.provider_gone(v) && **v != self.me)
            .cloned()
            .collect();
        if self.fences_itself(round) {
            targets.push(self.me.clone());
        }
        targets
    }

    /// The coordinator promises to its own round — freezing its own etcd —
    /// last: only once its promise completes a majority of `V_n` fenced
    /// (promised) or gone. A coordinator cut off from the others (a
    /// partitioned minority that sees no leader) thus never stops its etcd
    /// for a round that cannot complete, and rejoins its cluster as it was
    /// when the cut heals. Delaying an acceptor's answer is only a slower
    /// message for Paxos; a proposal still needs its promise and report.
    /// When every member of `V_n` is gone the coordinator is the only
    /// acceptor and fences itself at once.
    pub(super) fn fences_itself(&self, round: &Round) -> bool {
        if !self.acceptors(round).contains(&self.me) {
            return false;
        }
        let others = round
            .voters
            .iter()
            .filter(|v| **v != self.me)
            .filter(|v| round.promises.contains_key(*v) || self.gone_in(round, v))
            .count();
        others + 1 >= majority(round.voters.len().max(1))
    }

    /// `V_n` as the store's record of incarnation `n` lists it (the daemon
    /// keeps it current at every membership change); empty when the store
    /// was not listed completely or holds no record of `n`.
    pub(super) fn listed_voters(&self, n: Incarnation) -> Vec<InstanceId> {
        match self.store.as_ref().map(|s| &s.records) {
            Some(RecordListing::Complete(records)) => records
                .iter()
                .find(|r| r.incarnation == n)
                .map(|r| r.voters.clone())
                .unwrap_or_default(),
            _ => Vec::new(),
        }
    }

    /// Whom a round for `n + 1` must hear from: the union of every view of
    /// `V_n` and every instance holding data of `n` (views.rs, rules 1
    /// and 2).
    fn round_members(&self, n: Incarnation) -> Vec<InstanceId> {
        let mut v = self.known_members(n);
        v.extend(self.known_holders(n));
        v.sort();
        v.dedup();
        v
    }

    /// Members of `V_n` the round did not know (from a member's state
    /// file or the store's record) become acceptors of the round while it
    /// still collects: it waits for their promise and report too, and
    /// prepares them at the next retransmission. Once proposing, the set
    /// is fixed (every member known then had reported).
    pub(super) fn widen_round(&mut self, ids: &[InstanceId], how: &str) {
        let Some(round) = self.round.as_mut() else {
            return;
        };
        if !matches!(round.stage, Stage::Collecting) {
            return;
        }
        let new: Vec<InstanceId> = ids
            .iter()
            .filter(|id| !round.voters.contains(*id))
            .cloned()
            .collect();
        if new.is_empty() {
            return;
        }
        round.voters.extend(new.iter().cloned());
        round.voters.sort();
        // Prepare them at the next pass.
        round.last_send = 0;
        self.last_problem = Some(format!(
            "{new:?} are members of V_{} too ({how}); waiting for them as well",
            round.n
        ));
    }

    /// Abort the round and back off before trying again.
    fn abort(&mut self, why: String) {
        self.round = None;
        self.backoff = (self.backoff + 1).min(self.cfg.max_backoff_exponent);
        self.takeover_at = Some(self.now + self.delay());
        self.last_problem = Some(why);
    }

    fn alert(&mut self, out: &mut Vec<Effect>, kind: AlertKind, text: String) {
        self.last_problem = Some(text.clone());
        if let Some(r) = self.round.as_mut() {
            if r.alerted.as_deref() == Some(text.as_str()) {
                return;
            }
            r.alerted = Some(text.clone());
        }
        out.push(effect(EffectKind::Alert(kind), text));
    }

    /// Members of the round that are certified gone: by the provider, or by
    /// their own report (no data of `n`; not used for bootstrap).
    pub(super) fn gone_in(&self, round: &Round, id: &str) -> bool {
        self.provider_gone(id)
            || (round.n > 0 && round.reports.get(id).is_some_and(|r| !r.holds(round.n)))
    }

    /// The acceptors whose answers count: `V_n` minus those the provider
    /// certified gone; when every member is gone, the coordinator alone
    /// (the store's conditional create still serializes).
    pub(super) fn acceptors(&self, round: &Round) -> Vec<InstanceId> {
        let live: Vec<InstanceId> = round
            .voters
            .iter()
            .filter(|v| !self.provider_gone(v))
            .cloned()
            .collect();
        if live.is_empty() {
            vec![self.me.clone()]
        } else {
            live
        }
    }

    /// Members of `V_n` still owed a promise or a report.
    pub fn missing(&self) -> Vec<InstanceId> {
        let Some(round) = &self.round else {
            return Vec::new();
        };
        round
            .voters
            .iter()
            .filter(|v| {
                let answered = round.promises.contains_key(*v) && round.reports.contains_key(*v);
                !(self.gone_in(round, v) || answered)
            })
            .cloned()
            .collect()
    }

    fn progress_round(&mut self, out: &mut Vec<Effect>) {
        let Some(round) = self.round.clone() else {
            return;
        };
        let acceptors = self.acceptors(&round);
        let quorum = majority(acceptors.len());
        let resend = self.now >= round.last_send + self.cfg.retransmit_every;
        match &round.stage {
            Stage::Collecting => {
                // The others' promises just completed a majority: fence
                // this instance too, now rather than at the next resend.
                if !resend && !round.promises.contains_key(&self.me) && self.fences_itself(&round) {
                    self.send(
                        out,
                        &self.me.clone(),
                        None,
                        Message::Prepare {
                            target: round.target,
                            voters: round.voters.clone(),
                            ballot: round.ballot.clone(),
                        },
                        format!(
                            "prepare {} to itself: with its promise a majority of V_{} is fenced or gone",
                            round.ballot, round.n
                        ),
                    );
                }
                let missing = self.missing();
                let promised = acceptors
                    .iter()
                    .filter(|a| round.promises.contains_key(*a))
                    .count();
                if missing.is_empty() && promised >= quorum {
                    return self.propose(out, Vec::new());
                }
                if let Some(after) = self.cfg.accept_loss_after {
                    // The old incarnation can never regain its quorum once a
                    // majority of V_n is fenced (promised) or gone (certified
                    // by the provider, or holding no data of n): only then
                    // may the silent rest be skipped.
                    let fenced_or_gone = round
                        .voters
                        .iter()
                        .filter(|v| round.promises.contains_key(*v) || self.gone_in(&round, v))
                        .count();
                    // Measured from the loss, not from this round: a
                    // takeover must not restart the clock.
                    let since = self.lost_since.unwrap_or(round.started).min(round.started);
                    if self.now >= since + after && fenced_or_gone >= majority(round.voters.len()) {
                        return self.propose(out, missing);
                    }
                }
                if resend {
                    // Every member still in the running hears the prepare
                    // again, including those that already answered (they
                    // answer again, idempotently): it is the coordinator's
                    // heartbeat. A round that waits for a silent member
                    // makes no progress by design; without the heartbeat
                    // the others would take it over again and again, and
                    // no round would live long enough to decide.
                    for v in &self.prepare_targets(&round) {
                        if *v == self.me {
                            // The coordinator answers itself at once; only
                            // an unanswered self-prepare is sent again.
                            let answered = if round.voters.contains(v) {
                                !missing.contains(v)
                            } else {
                                round.promises.contains_key(v)
                            };
                            if answered {
                                continue;
                            }
                        }
                        self.send(
                            out,
                            v,
                            None,
                            Message::Prepare {
                                target: round.target,
                                voters: round.voters.clone(),
                                ballot: round.ballot.clone(),
                            },
                            if missing.contains(v) {
                                format!(
                                    "retransmit prepare {}: no promise and report from {v} yet",
                                    round.ballot
                                )
                            } else {
                                format!(
                                    "prepare {} again to {v}: the coordinator is alive",
                                    round.ballot
                                )
                            },
                        );
                    }
                    self.touch();
                }
            }
            Stage::Accepting {
                value,
                data_loss,
                accepted,
            } => {
                let count = acceptors.iter().filter(|a| accepted.contains(*a)).count();
                // A proposal that accepted the loss of the silent members
                // cannot wait for a majority that counts them: every member
                // that promised this round must accept it instead.
                let needed = if *data_loss {
                    acceptors
                        .iter()
                        .filter(|a| round.promises.contains_key(*a))
                        .count()
                        .max(1)
                } else {
                    quorum
                };
                if count >= needed {
                    return self.commit(out, value.clone(), *data_loss);
                }
                if resend {
                    for a in acceptors.iter().filter(|a| !accepted.contains(*a)) {
                        self.send(
                            out,
                            a,
                            None,
                            Message::Accept {
                                target: round.target,
                                ballot: round.ballot.clone(),
                                value: value.clone(),
                            },
                            format!(
                                "retransmit accept {}: {a} has not accepted yet",
                                round.ballot
                            ),
                        );
                    }
                    self.touch();
                }
            }
            Stage::Creating { record, in_flight } => {
                if !*in_flight && resend {
                    self.create(out, record.clone(), "retry after a store error");
                }
            }
            Stage::Done => {}
        }
    }

    fn touch(&mut self) {
        let now = self.now;
        if let Some(r) = self.round.as_mut() {
            r.last_send = now;
        }
    }

    fn set_stage(&mut self, stage: Stage) {
        if let Some(r) = self.round.as_mut() {
            r.stage = stage;
        }
    }

    /// The store's listing, or why it cannot be used.
    fn store_records(&self) -> Result<Vec<SeedRecord>, String> {
        match self.store.as_ref().map(|s| &s.records) {
            None => Err("the store has not been listed yet".into()),
            Some(RecordListing::Complete(r)) => Ok(r.clone()),
            Some(RecordListing::Failed(_)) if self.cfg.faults.store_error_as_empty => {
                Ok(Vec::new())
            }
            Some(RecordListing::Failed(e)) => Err(format!(
                "the store listing failed ({e}); waiting (a store error is never read as empty)"
            )),
        }
    }

    /// Every member answered (or `skipped` is the loss accepted): choose
    /// the value and send `Accept`.
    fn propose(&mut self, out: &mut Vec<Effect>, skipped: Vec<InstanceId>) {
        let Some(round) = self.round.clone() else {
            return;
        };
        let records = match self.store_records() {
            Ok(r) => r,
            Err(e) => return self.alert(out, AlertKind::StoreUnavailable, e),
        };
        if let Some(r) = records
            .iter()
            .filter(|r| r.incarnation >= round.target)
            .max_by_key(|r| r.incarnation)
        {
            return self.adopt(r.clone(), out, "found in the store before proposing");
        }
        // A value some promiser already accepted (the highest ballot's) is
        // carried on: it may have been chosen by a
        // coordinator that crashed before it could record it — unless it
        // can no longer be executed: its holder has since lost the data
        // (its own report in this round says it holds nothing of `n`, or
        // the provider certified it gone). Re-proposing it would record a
        // seeder that cannot seed, and the others would move their copies
        // aside to join it. Ranking afresh is safe: nothing acts on a value
        // before its record exists, and the store's conditional create
        // lets at most one record be made (if the old value's record was
        // made after all, that record wins).
        let accepted = round
            .promises
            .values()
            .flatten()
            .max_by(|a, b| a.ballot.cmp(&b.ballot))
            .filter(|_| !self.cfg.faults.ignore_accepted_value);
        let lost_holder = accepted.and_then(|a| match &a.value.source {
            SeedSource::Member { holder, .. }
                if self.provider_gone(holder)
                    || round.reports.get(holder).is_some_and(|r| !r.holds(round.n)) =>
            {
                Some(holder.clone())
            }
            _ => None,
        });
        if let (Some(a), Some(holder)) = (accepted, &lost_holder) {
            self.last_problem = Some(format!(
                "the accepted value ({}) is abandoned: its holder {holder} no longer holds the data of incarnation {}",
                a.value, round.n
            ));
        }
        let value = if let Some(a) = accepted.filter(|_| lost_holder.is_none()) {
            a.value.clone()
        } else {
            let snapshot = match self.store.as_ref().map(|s| &s.snapshots) {
                Some(SnapshotListing::Complete(newest)) => newest.as_ref(),
                Some(SnapshotListing::Failed(_)) if self.cfg.faults.store_error_as_empty => None,
                Some(SnapshotListing::Failed(e)) => {
                    return self.abort(format!(
                        "the store's snapshot listing failed ({e}); waiting (its snapshot may hold the newest data: a listing error is never \"no snapshot\")"
                    ));
                }
                None => return self.abort("the store has not been listed yet".into()),
            };
            let reports: BTreeMap<InstanceId, DataReport> = round
                .reports
                .iter()
                .filter(|(id, _)| round.voters.contains(id))
                .map(|(id, r)| (id.clone(), r.clone()))
                .collect();
            match rank(&reports, snapshot, self.cfg.faults.rank_by_lowest_id) {
                Ok(source) => {
                    let seeder = match &source {
                        SeedSource::Member { holder, .. } => holder.clone(),
                        _ => self.me.clone(),
                    };
                    SeedValue { source, seeder }
                }
                Err(e) => {
                    let kind = match e {
                        RankError::NoData => AlertKind::NoDataAnywhere,
                        _ => AlertKind::DataConflict,
                    };
                    let text = match e {
                        RankError::NoData => format!(
                            "incarnation {} existed but no member of V_{} holds its data and the store has no snapshot: page a human; never seed empty",
                            round.n, round.n
                        ),
                        other => other.to_string(),
                    };
                    return self.alert(out, kind, text);
                }
            }
        };
        let data_loss = !skipped.is_empty();
        if data_loss {
            out.push(effect(
                EffectKind::DataLoss {
                    incarnation: round.n,
                    skipped: skipped.clone(),
                },
                format!(
                    "accept_loss_after fired: proposing without {skipped:?} (not certified gone); acknowledged writes they alone held are lost"
                ),
            ));
        }
        let reason = format!("propose ballot {}: {value}", round.ballot);
        self.set_stage(Stage::Accepting {
            value: value.clone(),
            data_loss,
            accepted: BTreeSet::new(),
        });
        self.touch();
        for a in self.acceptors(&round) {
            self.send(
                out,
                &a,
                None,
                Message::Accept {
                    target: round.target,
                    ballot: round.ballot.clone(),
                    value: value.clone(),
                },
                reason.clone(),
            );
        }
    }

    /// A majority accepted: the value is chosen in the protocol; commit it
    /// with the store's conditional create.
    fn commit(&mut self, out: &mut Vec<Effect>, value: SeedValue, data_loss: bool) {
        let Some(round) = self.round.clone() else {
            return;
        };
        let record = SeedRecord {
            incarnation: round.target,
            voters: vec![value.seeder.clone()],
            value,
            ballot: round.ballot.clone(),
            token_suffix: self.random,
            data_loss,
        };
        if self.cfg.faults.skip_conditional_create {
            self.set_stage(Stage::Done);
            return self.announce(out, record, "chosen (fault: no conditional create)");
        }
        self.create(out, record, "a majority of V_n accepted");
    }

    fn create(&mut self, out: &mut Vec<Effect>, record: SeedRecord, why: &str) {
        self.set_stage(Stage::Creating {
            record: record.clone(),
            in_flight: true,
        });
        self.touch();
        out.push(effect(
            EffectKind::CreateRecord(record.clone()),
            format!(
                "{why}: create incarnations/{} only if absent (the commit point): {}",
                record.incarnation, record.value
            ),
        ));
    }

    pub(super) fn on_create_result(&mut self, result: CreateResult, out: &mut Vec<Effect>) {
        match result {
            CreateResult::Created(r) => self.announce(out, r, "created in the store"),
            CreateResult::AlreadyExists(r) => {
                self.announce(out, r, "the store already held it; that record wins")
            }
            CreateResult::StoreError(e) => {
                if let Some(Stage::Creating { record, .. }) =
                    self.round.as_ref().map(|r| r.stage.clone())
                {
                    self.set_stage(Stage::Creating {
                        record,
                        in_flight: false,
                    });
                }
                self.alert(
                    out,
                    AlertKind::StoreUnavailable,
                    format!(
                        "creating the record failed ({e}); waiting, never proceeding without it"
                    ),
                );
            }
        }
    }

    /// Tell every member and instance, then adopt.
    fn announce(&mut self, out: &mut Vec<Effect>, record: SeedRecord, how: &str) {
        let mut to: BTreeSet<InstanceId> = self.group.instances.clone();
        if let Some(r) = &self.round {
            to.extend(r.voters.iter().cloned());
        }
        to.extend(self.state.voters.iter().cloned());
        to.remove(&self.me);
        for id in to {
            self.send(
                out,
                &id,
                None,
                Message::Decided {
                    record: record.clone(),
                },
                format!(
                    "incarnation {} is decided: {}",
                    record.incarnation, record.value
                ),
            );
        }
        self.adopt(record, out, how);
    }

    /// Answers to this coordinator's messages.
    pub(super) fn on_answer(&mut self, env: Envelope, out: &mut Vec<Effect>) {
        let _ = out;
        if env.to_boot != Some(self.boot) {
            return;
        }
        let Some(round) = self.round.as_mut() else {
            return;
        };
        let from = env.from.clone();
        match env.message {
            Message::Promise {
                target,
                ballot,
                accepted,
            } if target == round.target && ballot == round.ballot => {
                round.promises.insert(from, accepted);
            }
            Message::Report {
                target,
                ballot,
                report,
            } if target == round.target && ballot == round.ballot => {
                let voters = report.voters.clone();
                round.reports.insert(from.clone(), report);
                self.widen_round(&voters, &format!("{from}'s state file lists it"));
            }
            Message::Accepted { target, ballot }
                if target == round.target && ballot == round.ballot =>
            {
                if let Stage::Accepting { accepted, .. } = &mut round.stage {
                    accepted.insert(from);
                }
            }
            Message::Reject {
                target,
                ballot,
                why,
            } if target == round.target
                && ballot == round.ballot
                && round.voters.contains(&from)
                && matches!(round.stage, Stage::Collecting | Stage::Accepting { .. }) =>
            {
                let why_text = match &why {
                    Rejection::HigherBallot(b) => {
                        if self.max_seen.as_ref().is_none_or(|m| b > m) {
                            self.max_seen = Some(b.clone());
                        }
                        format!("{from} promised a higher ballot {b}; jumping above it")
                    }
                    Rejection::NotLost { evidence } => {
                        format!("{from} does not see a loss ({evidence}); round aborted")
                    }
                    Rejection::Stale { incarnation } => {
                        format!("{from} already belongs to incarnation {incarnation}")
                    }
                };
                self.abort(why_text);
            }
            _ => {}
        }
    }
}
