//! The metrics of what eco decided and did: the steady-state planner's
//! actions by kind and outcome, its waits by reason, how long the cluster
//! has been without quorum, quorum-loss recovery (freezes, rounds by
//! outcome, the protocol's messages by kind) and seedings.
//!
//! Unlike the status-projected metrics ([`super::cluster`]) these are
//! counted where the thing happens: the daemon's pass, the quorum-loss
//! driver and the seeding executor each hold a clone of
//! [`DecisionMetrics`] (the counters are shared handles). Every label
//! value comes from a closed set (`Action::KINDS`, `WaitReason::ALL`,
//! `Message::kind`, `SeedFrom`), and every series exists from the first
//! scrape at 0, so `increase()` sees the first one.
//!
//! What it does not do: decide. Nothing here is read back by eco.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use recovery::planner::{Action, WaitReason};
use recovery::seeding::SeedFrom;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// How an executed action ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ActionOutcome {
    /// It did what it was chosen for.
    Done,
    /// etcd said "not now" (another learner, a learner not in sync, an
    /// unsafe change): a wait, planned again next pass.
    Refused,
    /// It failed; the pass ends and the next plans again.
    Failed,
}

impl ActionOutcome {
    const ALL: [ActionOutcome; 3] = [Self::Done, Self::Refused, Self::Failed];

    fn as_str(self) -> &'static str {
        match self {
            Self::Done => "done",
            Self::Refused => "refused",
            Self::Failed => "failed",
        }
    }
}

/// How a quorum-loss round ended for this instance (it froze before).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RoundOutcome {
    /// This instance seeded the new incarnation.
    Seeded,
    /// This instance joined the incarnation another seeded.
    Joined,
    /// The old incarnation showed itself healthy: unfrozen, nothing
    /// accepted.
    Resumed,
}

impl RoundOutcome {
    const ALL: [RoundOutcome; 3] = [Self::Seeded, Self::Joined, Self::Resumed];

    fn as_str(self) -> &'static str {
        match self {
            Self::Seeded => "seeded",
            Self::Joined => "joined",
            Self::Resumed => "resumed",
        }
    }
}

/// The protocol's message kinds (`recovery::fenced::Message::kind`).
const MESSAGE_KINDS: [&str; 7] = [
    "prepare", "promise", "report", "accept", "accepted", "reject", "decided",
];

/// The seeding sources, as labels.
const SEED_SOURCES: [&str; 3] = ["empty", "snapshot", "wal"];

fn seed_source(from: &SeedFrom) -> &'static str {
    match from {
        SeedFrom::Empty => "empty",
        SeedFrom::Snapshot { .. } => "snapshot",
        SeedFrom::Wal { .. } => "wal",
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ActionLabels {
    action: &'static str,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SeedingLabels {
    source: &'static str,
    outcome: &'static str,
}

/// The current wait and since when.
#[derive(Default)]
struct Waiting {
    on: Option<(WaitReason, Instant)>,
}

#[derive(Clone, Default)]
pub struct DecisionMetrics {
    actions: Family<ActionLabels, Counter>,
    waits: Family<ReasonLabels, Counter>,
    waiting: Family<ReasonLabels, Gauge>,
    wait_seconds: Gauge,
    current_wait: Arc<Mutex<Waiting>>,
    without_quorum_seconds: Gauge,
    quorum_lost_at: Arc<Mutex<Option<Instant>>>,
    freezes: Counter,
    rounds: Family<OutcomeLabels, Counter>,
    messages_sent: Family<KindLabels, Counter>,
    messages_future: Counter,
    seedings: Family<SeedingLabels, Counter>,
    defragmentations: Family<OutcomeLabels, Counter>,
    replacements: Family<OutcomeLabels, Counter>,
    nospace: Gauge,
}

impl DecisionMetrics {
    pub(super) fn register(&self, registry: &mut Registry) {
        for action in Action::KINDS
            .into_iter()
            .filter(|k| !matches!(*k, "wait" | "nothing"))
        {
            for outcome in ActionOutcome::ALL {
                let _ = self.actions.get_or_create(&ActionLabels {
                    action,
                    outcome: outcome.as_str(),
                });
            }
        }
        for reason in WaitReason::ALL {
            let labels = ReasonLabels {
                reason: reason.as_str(),
            };
            let _ = self.waits.get_or_create(&labels);
            let _ = self.waiting.get_or_create(&labels);
        }
        for outcome in RoundOutcome::ALL {
            let _ = self.rounds.get_or_create(&OutcomeLabels {
                outcome: outcome.as_str(),
            });
        }
        for kind in MESSAGE_KINDS {
            let _ = self.messages_sent.get_or_create(&KindLabels { kind });
        }
        for source in SEED_SOURCES {
            for outcome in ["done", "failed"] {
                let _ = self
                    .seedings
                    .get_or_create(&SeedingLabels { source, outcome });
            }
        }
        registry.register(
            "actions",
            "Steady-state actions executed, by kind and outcome (done; refused: etcd said not now; failed)",
            self.actions.clone(),
        );
        registry.register(
            "waits",
            "Waits entered, by what they wait for (a wait that lasts many passes counts once)",
            self.waits.clone(),
        );
        registry.register(
            "waiting",
            "1 for what the steady-state planner waits for now, 0 for the other reasons",
            self.waiting.clone(),
        );
        registry.register(
            "wait_seconds",
            "How long the current wait has lasted (0 when not waiting)",
            self.wait_seconds.clone(),
        );
        registry.register(
            "cluster_without_quorum_seconds",
            "How long no member this instance reaches has known a leader (0 while one does)",
            self.without_quorum_seconds.clone(),
        );
        registry.register(
            "quorum_loss_freezes",
            "Times this instance froze its etcd for a quorum-loss recovery",
            self.freezes.clone(),
        );
        registry.register(
            "quorum_loss_rounds",
            "Quorum-loss recoveries this instance took part in, by how they ended for it",
            self.rounds.clone(),
        );
        registry.register(
            "recovery_messages_sent",
            "Quorum-loss protocol messages sent, by kind (promise: a promise given to a coordinator; retransmissions count)",
            self.messages_sent.clone(),
        );
        for outcome in ["done", "failed"] {
            let _ = self
                .defragmentations
                .get_or_create(&OutcomeLabels { outcome });
        }
        registry.register(
            "defragmentations",
            "Members defragmented by this instance (beside the leader), by outcome",
            self.defragmentations.clone(),
        );
        for outcome in ["requested", "logged", "failed"] {
            let _ = self.replacements.get_or_create(&OutcomeLabels { outcome });
        }
        registry.register(
            "replacement_requests",
            "Times this instance asked its provider to replace it (recovery.replace_unusable_after), by outcome: requested (the provider replaces it), logged (the provider cannot; a human must), failed",
            self.replacements.clone(),
        );
        registry.register(
            "recovery_messages_future",
            "Quorum-loss protocol messages dropped because they are written in a format this eco does not read (a later release's, after the cluster was finalized)",
            self.messages_future.clone(),
        );
        registry.register(
            "nospace_alarm",
            "1 while etcd's NOSPACE alarm is raised, as the instance beside the leader last read the alarm list",
            self.nospace.clone(),
        );
        registry.register(
            "seedings",
            "Seedings of a new incarnation run by this instance, by source and outcome (a resumed seeding counts again)",
            self.seedings.clone(),
        );
    }

    /// A steady-state action ended so.
    pub fn action(&self, action: &Action, outcome: ActionOutcome) {
        self.actions
            .get_or_create(&ActionLabels {
                action: action.kind(),
                outcome: outcome.as_str(),
            })
            .inc();
    }

    /// What the steady-state planner waits for after this pass (`None`:
    /// it does not wait). A wait counts once when it starts or its reason
    /// changes.
    pub fn waiting_on(&self, now: Option<WaitReason>) {
        let Ok(mut w) = self.current_wait.lock() else {
            return;
        };
        let before = w.on.map(|(r, _)| r);
        if before == now {
            return;
        }
        if let Some(r) = before {
            self.waiting
                .get_or_create(&ReasonLabels { reason: r.as_str() })
                .set(0);
        }
        w.on = now.map(|r| (r, Instant::now()));
        if let Some(r) = now {
            let labels = ReasonLabels { reason: r.as_str() };
            self.waits.get_or_create(&labels).inc();
            self.waiting.get_or_create(&labels).set(1);
        }
    }

    /// Whether any member this instance reached knows a leader this pass.
    pub fn quorum_seen(&self, has_quorum: bool) {
        if let Ok(mut lost_at) = self.quorum_lost_at.lock() {
            match (has_quorum, *lost_at) {
                (true, _) => *lost_at = None,
                (false, None) => *lost_at = Some(Instant::now()),
                (false, Some(_)) => {}
            }
        }
    }

    /// A protocol message of a format this build does not read, dropped.
    pub fn message_of_future_format(&self) {
        self.messages_future.inc();
    }

    pub fn froze(&self) {
        self.freezes.inc();
    }

    pub fn round_ended(&self, outcome: RoundOutcome) {
        self.rounds
            .get_or_create(&OutcomeLabels {
                outcome: outcome.as_str(),
            })
            .inc();
    }

    pub fn message_sent(&self, kind: &'static str) {
        self.messages_sent.get_or_create(&KindLabels { kind }).inc();
    }

    pub fn seeding(&self, from: &SeedFrom, done: bool) {
        self.seedings
            .get_or_create(&SeedingLabels {
                source: seed_source(from),
                outcome: if done { "done" } else { "failed" },
            })
            .inc();
    }

    pub fn defragmented(&self, done: bool) {
        self.defragmentations
            .get_or_create(&OutcomeLabels {
                outcome: if done { "done" } else { "failed" },
            })
            .inc();
    }

    pub fn replacement(&self, outcome: &'static str) {
        self.replacements
            .get_or_create(&OutcomeLabels { outcome })
            .inc();
    }

    pub fn nospace_seen(&self, raised: bool) {
        self.nospace.set(raised as i64);
    }

    /// Brings the duration gauges up to now (at every scrape).
    pub(super) fn refresh(&self) {
        let secs = |at: Option<Instant>| at.map_or(0, |at| at.elapsed().as_secs() as i64);
        if let Ok(w) = self.current_wait.lock() {
            self.wait_seconds.set(secs(w.on.map(|(_, at)| at)));
        }
        if let Ok(lost_at) = self.quorum_lost_at.lock() {
            self.without_quorum_seconds.set(secs(*lost_at));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scrape(d: &DecisionMetrics) -> String {
        let mut registry = Registry::with_prefix("eco");
        d.register(&mut registry);
        d.refresh();
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &registry).unwrap();
        out
    }

    #[test]
    fn every_series_exists_at_zero() {
        let text = scrape(&DecisionMetrics::default());
        assert!(text.contains(r#"eco_actions_total{action="remove_member",outcome="failed"} 0"#));
        assert!(text.contains(r#"eco_waits_total{reason="too_few_healthy_voters"} 0"#));
        assert!(text.contains(r#"eco_quorum_loss_rounds_total{outcome="resumed"} 0"#));
        assert!(text.contains(r#"eco_recovery_messages_sent_total{kind="promise"} 0"#));
        assert!(text.contains(r#"eco_seedings_total{source="wal",outcome="done"} 0"#));
        assert!(!text.contains(r#"action="wait""#), "{text}");
    }

    #[test]
    fn a_wait_counts_once_until_its_reason_changes() {
        let d = DecisionMetrics::default();
        d.waiting_on(Some(WaitReason::OneLearnerAtATime));
        d.waiting_on(Some(WaitReason::OneLearnerAtATime));
        d.waiting_on(Some(WaitReason::TooFewHealthyVoters));
        d.waiting_on(None);
        d.waiting_on(Some(WaitReason::OneLearnerAtATime));
        let text = scrape(&d);
        assert!(text.contains(r#"eco_waits_total{reason="one_learner_at_a_time"} 2"#));
        assert!(text.contains(r#"eco_waits_total{reason="too_few_healthy_voters"} 1"#));
        assert!(text.contains(r#"eco_waiting{reason="one_learner_at_a_time"} 1"#));
        assert!(text.contains(r#"eco_waiting{reason="too_few_healthy_voters"} 0"#));
        d.waiting_on(None);
        assert!(scrape(&d).contains(r#"eco_waiting{reason="one_learner_at_a_time"} 0"#));
    }

    #[test]
    fn quorum_loss_time_starts_at_the_first_pass_without_and_resets() {
        let d = DecisionMetrics::default();
        d.quorum_seen(false);
        let first = *d.quorum_lost_at.lock().unwrap();
        d.quorum_seen(false);
        assert_eq!(*d.quorum_lost_at.lock().unwrap(), first);
        assert!(first.is_some());
        d.quorum_seen(true);
        assert!(scrape(&d).contains("eco_cluster_without_quorum_seconds 0"));
    }

    #[test]
    fn actions_count_by_kind_and_outcome() {
        let d = DecisionMetrics::default();
        let remove = Action::RemoveMember {
            member_id: 1,
            name: "a".into(),
            snapshot_first: false,
        };
        d.action(&remove, ActionOutcome::Done);
        d.action(&remove, ActionOutcome::Refused);
        d.action(&remove, ActionOutcome::Done);
        d.seeding(&SeedFrom::Wal { commit_index: 3 }, false);
        let text = scrape(&d);
        assert!(text.contains(r#"eco_actions_total{action="remove_member",outcome="done"} 2"#));
        assert!(text.contains(r#"eco_actions_total{action="remove_member",outcome="refused"} 1"#));
        assert!(text.contains(r#"eco_seedings_total{source="wal",outcome="failed"} 1"#));
    }
}
