//! `explain()`: what this instance is doing in the protocol and what it
//! waits for, in words, for `eco status`.

use super::protocol::Protocol;
use super::round::Stage;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
/// Where this instance stands in the fenced protocol (`eco status`), not
/// where it is in its life (that is [`crate::pass::Phase`]).
pub enum ProtocolPhase {
    /// No loss detected; nothing to do.
    Watching,
    /// `lost(n)` holds; waiting for a coordinator or the takeover time.
    LossDetected,
    /// Coordinating: collecting promises and data reports.
    Collecting,
    /// Coordinating: proposed a value, waiting for a majority.
    Proposing,
    /// Coordinating: creating the record in the store.
    Committing,
    /// Promised a ballot (frozen).
    Promised,
    /// Accepted a value (frozen until the next incarnation exists).
    Accepted,
    /// This instance seeds the new incarnation.
    Seeding,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Explanation {
    pub phase: ProtocolPhase,
    /// One line per thing the instance waits for.
    pub waiting_for: Vec<String>,
    /// The detector's verdict and the last problem met.
    pub summary: String,
    /// Messages dropped because their sender is neither in the group nor a
    /// voting member, since this process started.
    #[serde(default)]
    pub dropped_messages: u64,
}

impl Protocol {
    pub fn explain(&self) -> Explanation {
        let n = self.state.incarnation;
        let mut waiting_for = Vec::new();
        let phase = if self.state.seed_pending {
            waiting_for.push(format!("seeding incarnation {n} to finish"));
            ProtocolPhase::Seeding
        } else if let Some(round) = &self.round {
            match &round.stage {
                Stage::Collecting => {
                    for id in self.missing() {
                        let what = match (
                            round.promises.contains_key(&id),
                            round.reports.contains_key(&id),
                        ) {
                            (false, _) => "its promise",
                            (true, false) => "its data report",
                            (true, true) => "its answer",
                        };
                        waiting_for.push(format!(
                            "waiting for {id} ({what}; member of V_{}, not certified gone) — it may hold the only copy",
                            round.n
                        ));
                    }
                    ProtocolPhase::Collecting
                }
                Stage::Accepting { accepted, .. } => {
                    for id in self
                        .acceptors(round)
                        .iter()
                        .filter(|a| !accepted.contains(*a))
                    {
                        waiting_for.push(format!(
                            "waiting for {id} to accept ballot {}",
                            round.ballot
                        ));
                    }
                    ProtocolPhase::Proposing
                }
                Stage::Creating { record, .. } => {
                    waiting_for.push(format!(
                        "waiting for the store to create incarnations/{}",
                        record.incarnation
                    ));
                    ProtocolPhase::Committing
                }
                Stage::Done => ProtocolPhase::Watching,
            }
        } else if let Some(a) = &self.state.accepted {
            waiting_for.push(format!(
                "accepted ballot {} ({}); frozen until incarnation {} exists",
                a.ballot,
                a.value,
                n + 1
            ));
            ProtocolPhase::Accepted
        } else if self.state.frozen {
            waiting_for.push(format!(
                "promised ballot {}; frozen until a value is chosen or the cluster shows itself healthy",
                self.state
                    .promised
                    .as_ref()
                    .map_or("?".to_string(), |b| b.to_string())
            ));
            ProtocolPhase::Promised
        } else if self.verdict.is_lost() {
            match self.takeover_at {
                Some(at) => waiting_for.push(format!(
                    "another coordinator, or the takeover at {at} ms (now {} ms)",
                    self.now
                )),
                None => waiting_for.push("starting a round".into()),
            }
            ProtocolPhase::LossDetected
        } else {
            ProtocolPhase::Watching
        };
        let mut summary = format!("incarnation {n}: {}", self.verdict.text());
        if let Some(p) = &self.last_problem {
            summary.push_str("; last problem: ");
            summary.push_str(p);
        }
        Explanation {
            phase,
            waiting_for,
            summary,
            dropped_messages: self.dropped_messages,
        }
    }
}
