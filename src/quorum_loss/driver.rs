//! The quorum-loss driver: feeds the pure `recovery::fenced::Protocol` and
//! executes its effects, **in order**, against a [`QuorumLossHost`] — the
//! I/O it needs, as a trait (foca's `Runtime` idea). The daemon implements
//! the host with real etcd, the store and the state files
//! (`daemon/quorum_loss.rs`); the turmoil simulation implements it with
//! its simulated world, so the simulation runs this very driver, not a
//! copy of it.
//!
//! One pass (`Driver::pass`, every `etcd.probe_interval`):
//!
//! 1. after a start, the effects the protocol owes from its state file
//!    (`Protocol::start`: stay frozen, finish a seeding);
//! 2. the inputs, in this order: the provider's group and the instances it
//!    certifies gone; `V_n` from the state file (not while frozen: `V_n`
//!    is fixed during a recovery); the store's records and newest snapshot
//!    (every [`STORE_REFRESH`]); one detector sample (the own etcd probe and
//!    gossip's view); a tick with a random value (the takeover jitter);
//! 3. what the protocol's state still owes (`Protocol::owed`): stop an
//!    etcd that runs while frozen, seed again, join a newer incarnation —
//!    so an effect that failed, or was cut by a crash, is done again.
//!
//! Protocol messages arrive between passes (`Driver::message`) and are
//! handled at once. Effects run in order, and an effect that fails drops
//! the rest of its batch: a message never leaves without the promise it
//! carries on disk; the protocol retransmits and retries. `WakeAt` needs no
//! timer: a pass comes every probe interval, finer than the protocol's
//! timers.
//!
//! What it does not do: decide (the protocol does, and `Protocol::owed`
//! and `Protocol::hold`), or any I/O itself but encoding and sending the
//! protocol's messages over the gossip node the host lends it.

use super::facts::{self, LeaderSightings};
use crate::base::events::Event;
use crate::metrics::decisions::{DecisionMetrics, RoundOutcome};
use gossip::Gossip;
use recovery::fenced::{
    AlertKind, Ballot, CreateResult, DetectorSample, Effect, EffectKind, Envelope, GroupFacts,
    Incarnation, Input, InstanceId, LocalData, Message, Millis, Owed, PersistedState, Probe,
    Protocol, SeedPlan, SeedRecord, StoreFacts,
};
use recovery::pass::Hold;
use std::collections::VecDeque;

/// How often the store's records and snapshots are listed for the protocol.
pub const STORE_REFRESH: Millis = 2_000;

/// The I/O the driver needs. Static dispatch only: the driver's futures
/// are awaited where they are made, never spawned, so they need no `Send`.
#[allow(async_fn_in_trait)]
pub trait QuorumLossHost {
    /// The gossip node: its view feeds the detector, and protocol messages
    /// travel over it.
    fn gossip(&self) -> &Gossip;
    /// The provider's group, and the instances it certifies gone.
    fn group(&self) -> GroupFacts;
    /// The incarnation, `V_n` and the started learners the state file
    /// records, if any.
    fn membership(&self) -> Option<(Incarnation, Vec<InstanceId>, Vec<InstanceId>)>;
    /// The own etcd's answer to this pass's Status probe.
    fn probe(&self) -> Probe;
    /// The incarnation of the state file (0: none).
    fn local_incarnation(&self) -> Incarnation;
    /// The etcd process runs (or is about to be restarted).
    fn etcd_running(&self) -> bool;
    /// A fresh random value.
    fn random(&mut self) -> u64;
    /// The store's records (with their current `V_n`) and newest snapshot;
    /// a failed listing is `Failed`, never an empty one.
    async fn store_facts(&mut self) -> StoreFacts;

    /// Called before each effect runs (the simulation checks invariants
    /// here).
    fn before_effect(&mut self, _effect: &Effect) {}
    /// Called after each input and each answer the protocol handled.
    fn after_input(&mut self, _protocol: &Protocol) {}

    /// Write the protocol's state file, durably, before anything else.
    async fn persist(&mut self, state: &PersistedState) -> anyhow::Result<()>;
    /// Stop etcd: a freeze (never restart the old incarnation).
    async fn freeze(&mut self, reason: &str) -> anyhow::Result<()>;
    /// The freeze is lifted: steady state may restart etcd.
    fn unfreeze(&mut self, reason: &str);
    /// What the stopped member's WAL holds.
    async fn read_local_data(&mut self) -> LocalData;
    /// The store's conditional create of the record (the commit point).
    async fn create_record(&mut self, record: &SeedRecord) -> CreateResult;
    /// Seed per `plan`; the incarnation seeded once done (its snapshot in
    /// the store).
    async fn seed(&mut self, plan: &SeedPlan) -> anyhow::Result<Incarnation>;
    /// Move the old data aside and become a new instance of the record's
    /// incarnation.
    async fn join(&mut self, record: &SeedRecord) -> anyhow::Result<()>;
    fn alert(&mut self, kind: &AlertKind, reason: &str);
    fn data_loss(&mut self, incarnation: Incarnation, skipped: &[InstanceId], reason: &str);
}

/// The protocol and what the driver keeps beside it.
pub struct Driver {
    protocol: Protocol,
    sightings: LeaderSightings,
    store_read_at: Option<Millis>,
    started: bool,
    acted: bool,
    /// The ballot of the last prepare logged (later sends are
    /// retransmissions).
    last_prepared: Option<Ballot>,
    /// When a dropped message was last logged, and how many since.
    dropped_logged_at: Option<Millis>,
    dropped_since_log: u64,
    /// Messages dropped before the protocol saw them (undecodable, or an
    /// envelope naming another sender than its datagram), since start.
    dropped_here: u64,
    /// The format envelopes are written in (the cluster version's).
    writing: recovery::cluster_version::Format,
    /// Freezes, rounds by outcome and messages sent (shared handles; a
    /// fresh set, exported nowhere, unless [`Self::with_metrics`]).
    metrics: DecisionMetrics,
}

/// How often dropped messages are logged.
const DROPPED_LOG_EVERY: Millis = 60_000;

impl Driver {
    pub fn new(protocol: Protocol) -> Self {
        Self {
            protocol,
            sightings: LeaderSightings::default(),
            store_read_at: None,
            started: false,
            acted: false,
            last_prepared: None,
            dropped_logged_at: None,
            dropped_since_log: 0,
            dropped_here: 0,
            writing: recovery::cluster_version::UNTAGGED,
            metrics: DecisionMetrics::default(),
        }
    }

    /// Envelopes are written in `format` from now on (the daemon follows
    /// the cluster version).
    pub fn set_writing(&mut self, format: recovery::cluster_version::Format) {
        self.writing = format;
    }

    /// Counts into the instance's exported metrics.
    pub fn with_metrics(mut self, metrics: DecisionMetrics) -> Self {
        self.metrics = metrics;
        self
    }

    pub fn protocol(&self) -> &Protocol {
        &self.protocol
    }

    /// The protocol's explanation, its count of dropped messages including
    /// those dropped before it saw them (undecodable, a sender mismatch).
    pub fn explain(&self) -> recovery::fenced::Explanation {
        let mut e = self.protocol.explain();
        e.dropped_messages += self.dropped_here;
        e
    }

    /// The last pass (or a message since) changed the local etcd or state:
    /// a freeze, an unfreeze, a seed or a join.
    pub fn acted(&self) -> bool {
        self.acted
    }

    /// How the protocol holds this instance, with what it waits for.
    pub fn hold(&self, local_incarnation: Incarnation) -> Option<(Hold, String)> {
        let hold = self.protocol.hold(local_incarnation)?;
        let e = self.protocol.explain();
        let mut why = e.summary.clone();
        for w in &e.waiting_for {
            why.push_str("; ");
            why.push_str(w);
        }
        Some((hold, why))
    }

    /// What the protocol's state file owes after a start (stay frozen,
    /// finish a seeding), before anything else is handled.
    async fn start<H: QuorumLossHost>(&mut self, host: &mut H, now: Millis) {
        if self.started {
            return;
        }
        self.started = true;
        let owed = self.protocol.start(now);
        for e in &owed {
            tracing::warn!(reason = %e.reason, "recovery state at start");
        }
        self.run(host, now, owed).await;
    }

    /// One pass (module docs).
    pub async fn pass<H: QuorumLossHost>(&mut self, host: &mut H, now: Millis) {
        self.acted = false;
        self.start(host, now).await;
        let mut inputs = Vec::new();
        let group = host.group();
        let certified_gone = group.certified_gone.clone();
        inputs.push(Input::Group(group));
        if let Some((incarnation, voters, learners)) = host.membership()
            && !self.protocol.is_frozen()
            && !voters.is_empty()
        {
            inputs.push(Input::Membership {
                incarnation,
                voters,
                learners,
            });
        }
        if self
            .store_read_at
            .is_none_or(|at| now >= at + STORE_REFRESH)
        {
            self.store_read_at = Some(now);
            inputs.push(Input::Store(host.store_facts().await));
        }
        let probe = host.probe();
        let view = host.gossip().view();
        let mut peers =
            facts::peer_facts(&view, tokio::time::Instant::now(), now, &mut self.sightings);
        // This instance's own facts are the freshest there are.
        if let Some(own) = peers.get_mut(self.protocol.me()) {
            own.last_heard = now;
            if probe == Probe::Leader {
                own.leader_seen_at = Some(now);
            }
        }
        inputs.push(Input::Observe(DetectorSample {
            at: now,
            probe: Some(probe),
            peers,
            certified_gone,
        }));
        inputs.push(Input::Tick {
            random: host.random(),
        });
        for input in inputs {
            self.feed(host, now, input).await;
        }
        self.pay_owed(host, now).await;
    }

    /// A protocol message from gossip: the sealed socket authenticated the
    /// sender's key; the envelope must name the same sender as the frame.
    pub async fn message<H: QuorumLossHost>(
        &mut self,
        host: &mut H,
        now: Millis,
        from: &str,
        bytes: &[u8],
    ) {
        let Some(env) = self.decode(now, from, bytes) else {
            return;
        };
        self.start(host, now).await;
        self.feed(host, now, Input::Message(env)).await;
    }

    /// The envelope in `bytes` from `from`, or `None` when it is dropped
    /// (counted and logged): it does not decode, or names another sender.
    fn decode(&mut self, now: Millis, from: &str, bytes: &[u8]) -> Option<Envelope> {
        let env: Envelope = match recovery::fenced::wire::decode(bytes) {
            Ok((e, _format)) => e,
            Err(e @ recovery::fenced::wire::WireError::Future { .. }) => {
                self.metrics.message_of_future_format();
                self.dropped(now, from, &e.to_string());
                return None;
            }
            Err(e) => {
                self.dropped(now, from, &e.to_string());
                return None;
            }
        };
        if env.from != from {
            self.dropped(now, from, &format!("it claims to be from {}", env.from));
            return None;
        }
        Some(env)
    }

    /// A message dropped before the protocol saw it: logged at most once a
    /// minute (a keyholder can send many), with how many since.
    fn dropped(&mut self, now: Millis, from: &str, why: &str) {
        self.dropped_here += 1;
        self.dropped_since_log += 1;
        let due = self
            .dropped_logged_at
            .is_none_or(|at| now.saturating_sub(at) >= DROPPED_LOG_EVERY);
        if due {
            tracing::warn!(%from, %why, dropped = self.dropped_since_log, "recovery message dropped (logged at most once a minute)");
            self.dropped_logged_at = Some(now);
            self.dropped_since_log = 0;
        }
    }

    /// What the protocol's state still owes, after this pass's inputs.
    async fn pay_owed<H: QuorumLossHost>(&mut self, host: &mut H, now: Millis) {
        let owed = self
            .protocol
            .owed(host.local_incarnation(), host.etcd_running());
        for o in owed {
            match o {
                Owed::StopEtcd { reason } => {
                    tracing::warn!(%reason);
                    if let Err(e) = host.freeze(&reason).await {
                        tracing::error!(error = %format!("{e:#}"), "cannot stop etcd while frozen; retrying next pass");
                    }
                }
                Owed::Seed { plan, reason } => {
                    self.acted = true;
                    crate::event!(warn, Event::RecoverySeeding, ?plan, %reason, "seeding a new incarnation");
                    if let Some(done) = self.seed(host, &plan).await {
                        self.feed(host, now, done).await;
                    }
                }
                Owed::Join { record, reason } => {
                    self.acted = true;
                    crate::event!(
                        warn,
                        Event::RecoveryJoining,
                        incarnation = record.incarnation,
                        seeder = %record.value.seeder,
                        %reason,
                        "joining a new incarnation"
                    );
                    self.join(host, &record).await;
                }
            }
        }
    }

    /// Handles one input and every effect it leads to, in order.
    async fn feed<H: QuorumLossHost>(&mut self, host: &mut H, now: Millis, input: Input) {
        let effects = self.protocol.handle(now, input);
        host.after_input(&self.protocol);
        self.run(host, now, effects).await;
    }

    async fn run<H: QuorumLossHost>(&mut self, host: &mut H, now: Millis, effects: Vec<Effect>) {
        let mut queue: VecDeque<Effect> = effects.into();
        while let Some(effect) = queue.pop_front() {
            host.before_effect(&effect);
            match self.execute(host, effect).await {
                Ok(Some(answer)) => {
                    queue.extend(self.protocol.handle(now, answer));
                    host.after_input(&self.protocol);
                }
                Ok(None) => {}
                Err(e) => {
                    // Nothing after a failed effect may run (a message must
                    // not leave without the promise it carries on disk).
                    tracing::error!(error = %format!("{e:#}"), "recovery effect failed; the rest of this batch is dropped and retried by the protocol");
                    return;
                }
            }
        }
    }

    /// Executes one effect; some answer with an input for the protocol.
    async fn execute<H: QuorumLossHost>(
        &mut self,
        host: &mut H,
        effect: Effect,
    ) -> anyhow::Result<Option<Input>> {
        use anyhow::Context;
        let reason = effect.reason;
        match effect.kind {
            EffectKind::Persist(state) => {
                host.persist(&state)
                    .await
                    .with_context(|| format!("persisting the recovery state ({reason})"))?;
                Ok(None)
            }
            EffectKind::Send(env) => {
                self.log_send(&env, &reason);
                let bytes = recovery::fenced::wire::encode(&env, self.writing)
                    .context("encoding a recovery message")?;
                if host.gossip().send(&env.to, bytes).is_err() {
                    anyhow::bail!("gossip has stopped");
                }
                Ok(None)
            }
            EffectKind::Freeze => {
                self.acted = true;
                self.metrics.froze();
                crate::event!(warn, Event::RecoveryFrozen, %reason, "frozen: stopping etcd");
                host.freeze(&reason).await?;
                Ok(None)
            }
            EffectKind::Unfreeze => {
                self.acted = true;
                self.metrics.round_ended(RoundOutcome::Resumed);
                crate::event!(info, Event::RecoveryUnfrozen, %reason, "unfrozen: steady state resumes");
                host.unfreeze(&reason);
                Ok(None)
            }
            EffectKind::ReadLocalData => Ok(Some(Input::LocalData(host.read_local_data().await))),
            EffectKind::WakeAt(_) => Ok(None),
            EffectKind::CreateRecord(record) => {
                crate::event!(warn, Event::RecoveryRecordCreating, incarnation = record.incarnation, value = %record.value, %reason, "creating the record (the commit point)");
                Ok(Some(Input::CreateResult(host.create_record(&record).await)))
            }
            EffectKind::Seed(plan) => {
                self.acted = true;
                crate::event!(warn, Event::RecoverySeeding, ?plan, %reason, "seeding a new incarnation");
                Ok(self.seed(host, &plan).await)
            }
            EffectKind::Join(record) => {
                self.acted = true;
                crate::event!(warn, Event::RecoveryJoining, incarnation = record.incarnation, seeder = %record.value.seeder, %reason, "joining a new incarnation");
                self.join(host, &record).await;
                Ok(None)
            }
            EffectKind::Alert(kind) => {
                crate::event!(error, Event::RecoveryAlert, ?kind, %reason, "recovery alert");
                host.alert(&kind, &reason);
                Ok(None)
            }
            EffectKind::DataLoss {
                incarnation,
                skipped,
            } => {
                crate::event!(error, Event::RecoveryDataLossAccepted, incarnation, ?skipped, %reason, "DATA LOSS accepted: recovery.accept_loss_after fired; acknowledged writes only these members held are lost");
                host.data_loss(incarnation, &skipped, &reason);
                Ok(None)
            }
        }
    }

    /// A protocol message in the log: what changes a round (a first
    /// prepare of a ballot, a promise, a rejection with its evidence, an
    /// accept, a decision) at info, retransmissions and reports at debug.
    fn log_send(&mut self, env: &Envelope, reason: &str) {
        let kind = env.message.kind();
        self.metrics.message_sent(kind);
        let first_prepare = match &env.message {
            Message::Prepare { ballot, .. } => {
                let first = self.last_prepared.as_ref() != Some(ballot);
                self.last_prepared = Some(ballot.clone());
                first
            }
            _ => false,
        };
        let notable = first_prepare
            || matches!(
                env.message,
                Message::Promise { .. }
                    | Message::Reject { .. }
                    | Message::Accept { .. }
                    | Message::Accepted { .. }
                    | Message::Decided { .. }
            );
        if notable {
            crate::event!(info, Event::RecoveryMessageSent, to = %env.to, kind, %reason, "recovery message");
        } else {
            tracing::debug!(to = %env.to, kind, %reason, "recovery message");
        }
    }

    /// Seeds; the input that tells the protocol it is done, or `None` when
    /// it failed (it is owed, and retried next pass).
    async fn seed<H: QuorumLossHost>(&mut self, host: &mut H, plan: &SeedPlan) -> Option<Input> {
        match host.seed(plan).await {
            Ok(incarnation) => {
                self.metrics.round_ended(RoundOutcome::Seeded);
                crate::event!(
                    warn,
                    Event::RecoverySeeded,
                    incarnation,
                    "seeded; the new incarnation is snapshotted and serving"
                );
                Some(Input::SeedCompleted { incarnation })
            }
            Err(e) => {
                crate::event!(error, Event::RecoverySeedFailed, error = %format!("{e:#}"), "seeding failed; retrying next pass");
                None
            }
        }
    }

    /// Joins; a failure is owed, and retried next pass.
    async fn join<H: QuorumLossHost>(&mut self, host: &mut H, record: &SeedRecord) {
        match host.join(record).await {
            Ok(()) => self.metrics.round_ended(RoundOutcome::Joined),
            Err(e) => crate::event!(
                error,
                Event::RecoveryJoinFailed,
                incarnation = record.incarnation,
                error = %format!("{e:#}"),
                "cannot join the new incarnation yet; retrying next pass"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use recovery::fenced::{Ballot, Message, ProtocolConfig};

    /// Messages dropped before the protocol sees them count in the
    /// explanation (and so in `eco_recovery_messages_dropped_total`).
    #[test]
    fn undecodable_and_mismatched_messages_are_counted() {
        let mut d = Driver::new(Protocol::new("a", 1, ProtocolConfig::default(), None));
        assert_eq!(d.explain().dropped_messages, 0);
        assert!(d.decode(0, "b", &[0xff, 0xff, 0xff]).is_none());
        let env = Envelope {
            from: "c".into(),
            from_boot: 1,
            to: "a".into(),
            to_boot: None,
            message: Message::Prepare {
                target: 2,
                voters: vec!["a".into()],
                ballot: Ballot::new(1, "c"),
            },
        };
        let bytes = postcard::to_stdvec(&env).expect("encode");
        assert!(
            d.decode(0, "b", &bytes).is_none(),
            "an envelope of another sender"
        );
        assert_eq!(d.explain().dropped_messages, 2);
        assert!(d.decode(0, "c", &bytes).is_some());
        assert_eq!(d.explain().dropped_messages, 2);
    }
}
