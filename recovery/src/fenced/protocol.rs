//! The protocol state machine: `Protocol::handle(now, Input) -> Vec<Effect>`.
//! This file holds the acceptor and learner sides; the coordinator is in
//! `coordinator.rs`.

use super::ballot::Ballot;
use super::config::ProtocolConfig;
use super::detector::{self, Verdict, Window};
use super::effects::{Effect, EffectKind, SeedPlan};
use super::ids::{BootId, Incarnation, InstanceId, Millis};
use super::messages::{AcceptedValue, Envelope, Message, Rejection};
use super::observation::{
    DataReport, DetectorSample, GroupFacts, LocalData, RecordListing, StoreFacts,
};
use super::persisted::PersistedState;
use super::round::Round;
use super::value::{SeedRecord, SeedSource};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Everything that can happen to the protocol.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Input {
    /// A timer fired (or the periodic tick). `random` is a fresh random
    /// value: the takeover jitter and the new token's suffix derive from it.
    Tick { random: u64 },
    /// A detector sample (own etcd probe, gossip facts, certified gone).
    Observe(DetectorSample),
    /// What the local WAL holds (answer to [`EffectKind::ReadLocalData`],
    /// or volunteered).
    LocalData(LocalData),
    /// The provider's group.
    Group(GroupFacts),
    /// The store's listing of `incarnations/` and its newest snapshot.
    Store(StoreFacts),
    /// Steady state learned `V_n` (etcd member list / the store record).
    /// Ignored while frozen: `V_n` is fixed during a recovery.
    Membership {
        incarnation: Incarnation,
        voters: Vec<InstanceId>,
        /// The started learners of the same member list (not persisted by
        /// the protocol: the host's state file keeps them).
        #[serde(default)]
        learners: Vec<InstanceId>,
    },
    /// A protocol message addressed to this instance.
    Message(Envelope),
    /// Result of [`EffectKind::CreateRecord`].
    CreateResult(CreateResult),
    /// The seeding of `incarnation` finished (snapshot of the fresh cluster
    /// stored).
    SeedCompleted { incarnation: Incarnation },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CreateResult {
    /// The record did not exist and is now this one.
    Created(SeedRecord),
    /// A record exists: it wins, whatever it says.
    AlreadyExists(SeedRecord),
    /// Store unreachable or failing: wait and alert, never proceed.
    StoreError(String),
}

/// One instance's protocol state.
pub struct Protocol {
    pub(super) cfg: ProtocolConfig,
    pub(super) me: InstanceId,
    pub(super) boot: BootId,
    pub(super) state: PersistedState,
    pub(super) window: Window,
    pub(super) local: Option<LocalData>,
    pub(super) group: GroupFacts,
    pub(super) store: Option<StoreFacts>,
    pub(super) now: Millis,
    pub(super) random: u64,
    pub(super) verdict: Verdict,
    /// Since when (in this life) the detector has said `lost` without a
    /// break: the clock of `accept_loss_after`, which coordinator takeovers
    /// must not reset.
    pub(super) lost_since: Option<Millis>,
    /// The round this instance coordinates.
    pub(super) round: Option<Round>,
    /// Highest ballot seen anywhere (rejections, other coordinators).
    pub(super) max_seen: Option<Ballot>,
    /// When this instance may start (or take over) a round.
    pub(super) takeover_at: Option<Millis>,
    pub(super) backoff: u32,
    /// Coordinator whose promise awaits the data report.
    pub(super) report_to: Option<(InstanceId, BootId, Ballot, Incarnation)>,
    pub(super) local_requested: bool,
    /// The last thing that stopped progress, for `explain`.
    pub(super) last_problem: Option<String>,
    pub(super) inbox: VecDeque<Envelope>,
    /// Messages from senders outside the group and `V_n`, dropped.
    pub(super) dropped_messages: u64,
    /// The started learners of this instance's incarnation as its state
    /// file last recorded them (the host feeds them with `Membership`).
    pub(super) learners: Vec<InstanceId>,
}

impl Protocol {
    /// `persisted`: the decoded state file, `None` if there is none (a new
    /// instance, or a lost disk). `boot`: a random id of this daemon start.
    pub fn new(
        me: impl Into<InstanceId>,
        boot: BootId,
        cfg: ProtocolConfig,
        persisted: Option<PersistedState>,
    ) -> Self {
        Protocol {
            cfg,
            me: me.into(),
            boot,
            state: persisted.unwrap_or_default(),
            window: Window::new(),
            local: None,
            group: GroupFacts::default(),
            store: None,
            now: 0,
            random: 0,
            verdict: Verdict::Undecided {
                reason: "just started".into(),
            },
            lost_since: None,
            round: None,
            max_seen: None,
            takeover_at: None,
            backoff: 0,
            report_to: None,
            local_requested: false,
            last_problem: None,
            inbox: VecDeque::new(),
            dropped_messages: 0,
            learners: Vec::new(),
        }
    }

    /// Effects owed after a restart: stay frozen, finish an interrupted seed.
    pub fn start(&mut self, now: Millis) -> Vec<Effect> {
        self.now = now;
        let mut out = Vec::new();
        if self.state.frozen {
            out.push(effect(
                EffectKind::Freeze,
                format!(
                    "the state file says frozen (promised {}): incarnation {} stays stopped",
                    show(&self.state.promised),
                    self.state.incarnation
                ),
            ));
        }
        if self.state.seed_pending
            && let Some(record) = self.state.decided.clone()
            && let Some(plan) = seed_plan(&record)
        {
            out.push(effect(
                EffectKind::Seed(plan),
                format!(
                    "resuming: this instance is the seeder of incarnation {} and has not finished",
                    record.incarnation
                ),
            ));
        }
        out
    }

    pub fn me(&self) -> &str {
        &self.me
    }

    pub fn state(&self) -> &PersistedState {
        &self.state
    }

    pub fn verdict(&self) -> &Verdict {
        &self.verdict
    }

    pub fn is_frozen(&self) -> bool {
        self.state.frozen
    }

    /// The decided record this instance still has to join, given the
    /// incarnation its state file is at: a `Join` that failed or was cut
    /// by a crash is owed until the state file reaches the record. Nothing
    /// is owed while this instance is the record's pending seeder.
    pub fn join_owed(&self, local_incarnation: Incarnation) -> Option<&SeedRecord> {
        self.state
            .decided
            .as_ref()
            .filter(|r| !self.state.seed_pending && r.incarnation > local_incarnation)
    }

    /// Handle one input; execute the returned effects in order.
    pub fn handle(&mut self, now: Millis, input: Input) -> Vec<Effect> {
        self.now = self.now.max(now);
        let mut out = Vec::new();
        match input {
            Input::Tick { random } => self.random = random,
            Input::Observe(obs) => {
                let t = self.cfg.quorum_loss_timeout;
                self.window.push(obs, t);
            }
            Input::LocalData(data) => self.on_local_data(data, &mut out),
            Input::Group(g) => self.group = g,
            Input::Store(s) => self.on_store(s, &mut out),
            Input::Membership {
                incarnation,
                voters,
                learners,
            } => self.on_membership(incarnation, voters, learners, &mut out),
            Input::Message(env) => self.inbox.push_back(env),
            Input::CreateResult(r) => self.on_create_result(r, &mut out),
            Input::SeedCompleted { incarnation } => {
                if self.state.seed_pending && self.state.incarnation == incarnation {
                    self.state.seed_pending = false;
                    self.persist(
                        &mut out,
                        format!("seeding of incarnation {incarnation} finished"),
                    );
                }
            }
        }
        self.drain_inbox(&mut out);
        self.drive(&mut out);
        self.drain_inbox(&mut out);
        if let Some(at) = self.next_wake() {
            out.push(effect(
                EffectKind::WakeAt(at),
                "retransmit unanswered messages / check for takeover".into(),
            ));
        }
        out
    }

    fn drain_inbox(&mut self, out: &mut Vec<Effect>) {
        while let Some(env) = self.inbox.pop_front() {
            self.on_message(env, out);
        }
    }

    /// When the protocol next needs a pass with no other input: the
    /// round's next retransmission or the takeover deadline. Always after
    /// `now`: whatever was due has just been done in this pass, so a
    /// deadline still due means the protocol is waiting for something other
    /// than time (a record being created, data to rank, voters to start a
    /// round with); it looks again after one retransmission interval
    /// rather than at once, again and again.
    fn next_wake(&self) -> Option<Millis> {
        let retransmit = self
            .round
            .as_ref()
            .filter(|r| !r.is_done())
            .map(|r| r.last_send + self.cfg.retransmit_every);
        let at = match (retransmit, self.takeover_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        at.map(|at| {
            if at > self.now {
                at
            } else {
                self.now + self.cfg.retransmit_every
            }
        })
    }

    /// The target of the current recovery: incarnation `n+1`.
    pub(super) fn target(&self) -> Incarnation {
        self.state.incarnation + 1
    }

    pub(super) fn persist(&self, out: &mut Vec<Effect>, reason: String) {
        out.push(effect(EffectKind::Persist(self.state.clone()), reason));
    }

    pub(super) fn send(
        &mut self,
        out: &mut Vec<Effect>,
        to: &str,
        to_boot: Option<BootId>,
        message: Message,
        reason: String,
    ) {
        let env = Envelope {
            from: self.me.clone(),
            from_boot: self.boot,
            to: to.to_string(),
            to_boot,
            message,
        };
        if to == self.me {
            self.inbox.push_back(env);
        } else {
            out.push(effect(EffectKind::Send(env), reason));
        }
    }

    pub(super) fn report(&self) -> Option<DataReport> {
        self.local.clone().map(|data| DataReport {
            data,
            has_state: self.state.has_state(),
            voters: self.state.voters.clone(),
        })
    }

    /// The detector's verdict on the current incarnation. With none
    /// (incarnation 0) nothing can be lost: `crate::formation` forms
    /// incarnation 1, and this protocol recovers quorum loss of
    /// incarnation 1 and later.
    pub(super) fn evaluate(&self) -> Verdict {
        if self.state.incarnation == 0 {
            return not_formed();
        }
        let n = self.state.incarnation;
        detector::lost(
            &self.me,
            n,
            &self.known_voters(n),
            &self.window,
            self.now,
            &self.cfg,
        )
    }

    fn on_local_data(&mut self, data: LocalData, out: &mut Vec<Effect>) {
        self.local = Some(data);
        self.local_requested = false;
        if let Some((to, boot, ballot, target)) = self.report_to.clone()
            && let Some(report) = self.report()
        {
            self.send(
                out,
                &to,
                Some(boot),
                Message::Report {
                    target,
                    ballot,
                    report,
                },
                format!("data report after the promise to {to}"),
            );
        }
    }

    fn on_membership(
        &mut self,
        n: Incarnation,
        voters: Vec<InstanceId>,
        learners: Vec<InstanceId>,
        out: &mut Vec<Effect>,
    ) {
        if self.state.frozen || n < self.state.incarnation {
            return;
        }
        self.learners = learners;
        if n == self.state.incarnation && voters == self.state.voters {
            return;
        }
        if n > self.state.incarnation {
            self.state.promised = None;
            self.state.accepted = None;
            self.window.clear();
        }
        self.state.incarnation = n;
        self.state.voters = voters;
        self.persist(
            out,
            format!("steady state: V_{n} is {:?}", self.state.voters),
        );
    }

    fn on_store(&mut self, facts: StoreFacts, out: &mut Vec<Effect>) {
        let listing = facts.records.clone();
        self.store = Some(facts);
        let RecordListing::Complete(records) = listing else {
            return;
        };
        if let Some(n) = self.round.as_ref().map(|r| r.n) {
            let listed = self.listed_voters(n);
            self.widen_round(&listed, "the store's record lists it");
        }
        // A record newer than what this instance knows wins.
        if let Some(newest) = records.iter().max_by_key(|r| r.incarnation)
            && newest.incarnation > self.state.incarnation
        {
            self.adopt(newest.clone(), out, "the store lists it");
        }
    }

    /// The records of the store's last complete listing; none when the
    /// listing failed or was never read (never a reason to act).
    fn listed_records(&self) -> &[SeedRecord] {
        match self.store.as_ref().map(|s| &s.records) {
            Some(RecordListing::Complete(records)) => records,
            _ => &[],
        }
    }

    /// Whether the store's last complete listing holds a record of
    /// incarnation `n`.
    fn store_holds_record_of(&self, n: Incarnation) -> bool {
        self.listed_records().iter().any(|r| r.incarnation == n)
    }

    /// Another instance says `record` was decided. The store is the commit
    /// point, and a message is only a keyholder's claim: the record is
    /// adopted only when the store's last complete listing holds exactly
    /// it. Otherwise the claim is ignored — a real decision is in the store
    /// and adopted from the next listing (at most a store read later), a
    /// forged one never is.
    fn on_decided(&mut self, env: &Envelope, record: SeedRecord, out: &mut Vec<Effect>) {
        if record.incarnation <= self.state.incarnation {
            return;
        }
        let confirmed = self
            .listed_records()
            .iter()
            .find(|r| r.same_decision(&record))
            .cloned();
        if let Some(stored) = confirmed {
            self.adopt(
                stored,
                out,
                "a coordinator announced it and the store holds it",
            );
        } else {
            self.last_problem = Some(format!(
                "{} says incarnation {} was decided, but the store's last listing does not hold that record: waiting for the store (a decision is acted on only when the store confirms it)",
                env.from, record.incarnation
            ));
        }
    }

    /// Learn that `record` exists: seed it if this instance is its seeder
    /// and took part in deciding it, else join it.
    pub(super) fn adopt(&mut self, record: SeedRecord, out: &mut Vec<Effect>, how: &str) {
        if record.incarnation <= self.state.incarnation {
            return;
        }
        let k = record.incarnation;
        let took_part = self.state.incarnation + 1 == k
            && (self.state.promised.is_some() || self.state.accepted.is_some());
        let seeds = record.value.seeder == self.me && took_part;
        self.state = PersistedState {
            incarnation: k,
            voters: record.voters.clone(),
            promised: None,
            accepted: None,
            frozen: false,
            decided: Some(record.clone()),
            seed_pending: seeds,
        };
        self.round = None;
        self.takeover_at = None;
        self.backoff = 0;
        self.report_to = None;
        self.max_seen = None;
        self.window.clear();
        self.last_problem = None;
        self.learners.clear();
        self.persist(
            out,
            format!("incarnation {k} exists ({how}): {}", record.value),
        );
        match seed_plan(&record).filter(|_| seeds) {
            Some(plan) => out.push(effect(
                EffectKind::Seed(plan),
                format!(
                    "the record of incarnation {k} names this instance as seeder: {}",
                    record.value
                ),
            )),
            None => out.push(effect(
                EffectKind::Join(record.clone()),
                format!(
                    "incarnation {k} is seeded by {}; move old data aside and join it",
                    record.value.seeder
                ),
            )),
        }
    }

    fn on_message(&mut self, env: Envelope, out: &mut Vec<Effect>) {
        if env.to != self.me {
            return;
        }
        if env.to_boot.is_some_and(|b| b != self.boot) {
            return; // an answer meant for a previous life
        }
        if !self.may_send(&env) {
            self.dropped_messages += 1;
            self.last_problem = Some(format!(
                "dropped a {} message from {}, which is neither in the group nor a voting member (messages dropped so far: {})",
                env.message.kind(),
                env.from,
                self.dropped_messages
            ));
            return;
        }
        match env.message.clone() {
            Message::Prepare {
                target,
                voters,
                ballot,
            } => self.on_prepare(&env, target, voters, ballot, out),
            Message::Accept {
                target,
                ballot,
                value,
            } => self.on_accept(&env, target, ballot, value, out),
            Message::Decided { record } => self.on_decided(&env, record, out),
            Message::Promise { .. }
            | Message::Report { .. }
            | Message::Accepted { .. }
            | Message::Reject { .. } => self.on_answer(env, out),
        }
    }

    /// Whether `env.from` may send `env.message`: a coordinator's message
    /// (prepare, accept, decided) only from an instance of the group; an
    /// answer also from a member of `V_n` (a voter the provider no longer
    /// lists may still hold data). Before the first group is known, no one
    /// is refused. The sender's id is gossip's (gossip checks it against
    /// the datagram's source and the group's addresses); a keyholder outside the group is
    /// refused here, whatever id it claims that the group does not hold.
    fn may_send(&self, env: &Envelope) -> bool {
        if self.group.instances.is_empty() {
            return true;
        }
        let in_group = self.group.instances.contains(&env.from);
        match env.message {
            Message::Prepare { .. } | Message::Accept { .. } | Message::Decided { .. } => in_group,
            Message::Promise { .. }
            | Message::Report { .. }
            | Message::Accepted { .. }
            | Message::Reject { .. } => in_group || self.state.voters.contains(&env.from),
        }
    }

    /// Messages refused by [`Self::may_send`] since this process started.
    pub fn dropped_messages(&self) -> u64 {
        self.dropped_messages
    }

    /// Note another coordinator's ballot: progress, and the ballot to beat.
    fn saw_ballot(&mut self, ballot: &Ballot) {
        if self.max_seen.as_ref().is_none_or(|m| ballot > m) {
            self.max_seen = Some(ballot.clone());
        }
        if ballot.instance != self.me {
            self.saw_progress();
        }
    }

    /// Answer a message about an incarnation this instance already left.
    fn answer_stale(
        &mut self,
        env: &Envelope,
        target: Incarnation,
        ballot: Ballot,
        out: &mut Vec<Effect>,
    ) {
        match self
            .state
            .decided
            .clone()
            .filter(|r| r.incarnation == target)
        {
            Some(record) => self.send(
                out,
                &env.from,
                Some(env.from_boot),
                Message::Decided { record },
                format!("incarnation {target} is already decided"),
            ),
            None => {
                let incarnation = self.state.incarnation;
                self.reject(env, target, ballot, Rejection::Stale { incarnation }, out)
            }
        }
    }

    fn reject(
        &mut self,
        env: &Envelope,
        target: Incarnation,
        ballot: Ballot,
        why: Rejection,
        out: &mut Vec<Effect>,
    ) {
        let reason = format!("refusing ballot {ballot} of {}: {why:?}", env.from);
        self.send(
            out,
            &env.from,
            Some(env.from_boot),
            Message::Reject {
                target,
                ballot,
                why,
            },
            reason,
        );
    }

    fn on_prepare(
        &mut self,
        env: &Envelope,
        target: Incarnation,
        voters: Vec<InstanceId>,
        ballot: Ballot,
        out: &mut Vec<Effect>,
    ) {
        self.saw_ballot(&ballot);
        if target <= self.state.incarnation {
            return self.answer_stale(env, target, ballot, out);
        }
        let n = target - 1;
        let current = n == self.state.incarnation;
        let promised = self.state.promised.clone().filter(|_| current);
        if let Some(p) = &promised
            && &ballot < p
        {
            return self.reject(env, target, ballot, Rejection::HigherBallot(p.clone()), out);
        }
        if promised.as_ref() != Some(&ballot) {
            // A new promise needs this instance's own detector to agree —
            // with the standing of `views.rs`: only a data-holding voter of
            // `V_n` refuses on anything but a loss; any other instance only
            // on positive evidence of health.
            let (verdict, refused) = if n == 0 {
                // Incarnation 0 is no cluster: nothing to recover.
                (not_formed(), true)
            } else if current {
                let v = self.evaluate();
                let refused = self.refuses(n, &v);
                (v, refused)
            } else if !self.store_holds_record_of(n) {
                // A prepare for an incarnation this instance has never
                // heard of is a claim: only the store says `n` exists.
                let v = Verdict::Undecided {
                    reason: format!(
                        "the store's last listing holds no record of incarnation {n}: not promising for an incarnation it does not confirm"
                    ),
                };
                (v, true)
            } else {
                // This instance is behind (a lost disk, or it missed an
                // incarnation): it holds no data of `n`; judge with the
                // coordinator's `V_n`.
                let v = detector::lost(&self.me, n, &voters, &self.window, self.now, &self.cfg);
                let refused = self.refuses(n, &v);
                (v, refused)
            };
            if refused {
                self.maybe_unfreeze(&verdict, out);
                let evidence = verdict.text().to_string();
                return self.reject(env, target, ballot, Rejection::NotLost { evidence }, out);
            }
            if !current {
                self.state.incarnation = n;
                self.state.voters = voters;
                self.state.accepted = None;
                self.state.decided = None;
                self.state.seed_pending = false;
            }
            let was_frozen = self.state.frozen;
            self.state.promised = Some(ballot.clone());
            self.state.frozen = true;
            if !self.cfg.faults.skip_persist_promise {
                self.persist(
                    out,
                    format!(
                        "promise ballot {ballot} to {} (persisted before it is sent)",
                        env.from
                    ),
                );
            }
            if !was_frozen {
                out.push(effect(
                    EffectKind::Freeze,
                    format!(
                        "promised ballot {ballot} for incarnation {target}: etcd of incarnation {n} stopped and never restarted"
                    ),
                ));
                // What was read while etcd ran is stale (it went on
                // committing): the report is read again once it stopped.
                self.local = None;
                self.local_requested = false;
            }
        }
        let accepted = self.state.accepted.clone();
        self.send(
            out,
            &env.from,
            Some(env.from_boot),
            Message::Promise {
                target,
                ballot: ballot.clone(),
                accepted,
            },
            format!("promise ballot {ballot} for incarnation {target}"),
        );
        self.report_to = Some((env.from.clone(), env.from_boot, ballot.clone(), target));
        match self.report() {
            Some(report) => self.send(
                out,
                &env.from,
                Some(env.from_boot),
                Message::Report {
                    target,
                    ballot,
                    report,
                },
                "data report after the promise".into(),
            ),
            None if !self.local_requested => {
                self.local_requested = true;
                out.push(effect(
                    EffectKind::ReadLocalData,
                    "the coordinator needs this instance's data report".into(),
                ));
            }
            None => {}
        }
    }

    fn on_accept(
        &mut self,
        env: &Envelope,
        target: Incarnation,
        ballot: Ballot,
        value: super::value::SeedValue,
        out: &mut Vec<Effect>,
    ) {
        self.saw_ballot(&ballot);
        if target <= self.state.incarnation {
            return self.answer_stale(env, target, ballot, out);
        }
        if target != self.target() {
            let evidence = format!(
                "this instance is at incarnation {} and did not promise for {target}",
                self.state.incarnation
            );
            return self.reject(env, target, ballot, Rejection::NotLost { evidence }, out);
        }
        if let Some(p) = self.state.promised.clone()
            && ballot < p
        {
            return self.reject(env, target, ballot, Rejection::HigherBallot(p), out);
        }
        let already = self
            .state
            .accepted
            .as_ref()
            .is_some_and(|a| a.ballot == ballot && a.value == value);
        if !already {
            if self.state.promised.as_ref() != Some(&ballot) {
                let verdict = self.evaluate();
                if self.refuses(self.state.incarnation, &verdict) {
                    let evidence = verdict.text().to_string();
                    return self.reject(env, target, ballot, Rejection::NotLost { evidence }, out);
                }
            }
            let was_frozen = self.state.frozen;
            self.state.promised = Some(ballot.clone());
            self.state.accepted = Some(AcceptedValue {
                ballot: ballot.clone(),
                value: value.clone(),
            });
            self.state.frozen = true;
            self.persist(
                out,
                format!("accept ballot {ballot}: {value} (persisted before it is sent)"),
            );
            if !was_frozen {
                out.push(effect(
                    EffectKind::Freeze,
                    format!("accepted a value for incarnation {target}: frozen until it exists"),
                ));
            }
        }
        self.send(
            out,
            &env.from,
            Some(env.from_boot),
            Message::Accepted {
                target,
                ballot: ballot.clone(),
            },
            format!("accepted ballot {ballot}"),
        );
    }

    /// A promiser that accepted nothing resumes when the cluster shows
    /// itself healthy; one that accepted stays frozen until `n+1` exists.
    pub(super) fn maybe_unfreeze(&mut self, verdict: &Verdict, out: &mut Vec<Effect>) {
        if let Verdict::Healthy { evidence } = verdict
            && self.state.frozen
            && self.state.accepted.is_none()
            && self.round.is_none()
        {
            self.state.frozen = false;
            self.persist(out, format!("unfreeze: {evidence}"));
            out.push(effect(
                EffectKind::Unfreeze,
                format!("the cluster is healthy ({evidence}) and this instance accepted nothing"),
            ));
        }
    }

    /// Periodic work after every input.
    fn drive(&mut self, out: &mut Vec<Effect>) {
        self.verdict = self.evaluate();
        self.lost_since = match (self.verdict.is_lost(), self.lost_since) {
            (true, since) => Some(since.unwrap_or(self.now)),
            (false, _) => None,
        };
        let verdict = self.verdict.clone();
        self.maybe_unfreeze(&verdict, out);
        self.drive_coordinator(out);
    }
}

pub(super) fn effect(kind: EffectKind, reason: String) -> Effect {
    Effect { kind, reason }
}

fn show(b: &Option<Ballot>) -> String {
    b.as_ref().map_or("nothing".into(), |b| b.to_string())
}

/// How the seeder seeds `record`.
pub fn seed_plan(record: &SeedRecord) -> Option<SeedPlan> {
    let incarnation = record.incarnation;
    let token_suffix = record.token_suffix;
    Some(match &record.value.source {
        SeedSource::Member {
            commit_index,
            revision,
            ..
        } => SeedPlan::ReplayWal {
            incarnation,
            commit_index: *commit_index,
            revision: *revision,
            token_suffix,
        },
        SeedSource::Store { name, .. } => SeedPlan::RestoreSnapshot {
            incarnation,
            name: name.clone(),
            token_suffix,
        },
        SeedSource::Empty => SeedPlan::Fresh {
            incarnation,
            token_suffix,
        },
    })
}

/// The verdict with no incarnation yet: nothing to recover.
fn not_formed() -> Verdict {
    Verdict::Undecided {
        reason: "no cluster is formed yet: recovery::formation forms incarnation 1; this protocol recovers quorum loss of incarnation 1 and later".into(),
    }
}
