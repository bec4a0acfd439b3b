//! Messages of the protocol. They travel as addressed gossip messages;
//! every one is bound to the target incarnation and the ballot, and an
//! answer is bound to the boot id of the coordinator that asked, so a
//! restarted coordinator never counts answers meant for its previous life.
//! Every handler is idempotent: messages are retransmitted until answered.

use super::ballot::Ballot;
use super::ids::{BootId, Incarnation, InstanceId};
use super::observation::DataReport;
use super::value::{SeedRecord, SeedValue};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Envelope {
    pub from: InstanceId,
    pub from_boot: BootId,
    pub to: InstanceId,
    /// For answers: the boot id of the instance that asked.
    pub to_boot: Option<BootId>,
    pub message: Message,
}

/// A value an acceptor accepted, with the ballot it accepted it in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AcceptedValue {
    pub ballot: Ballot,
    pub value: SeedValue,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Message {
    /// "How is `target` seeded?" — phase 1a; `voters` is `V_{target-1}`.
    Prepare {
        target: Incarnation,
        voters: Vec<InstanceId>,
        ballot: Ballot,
    },
    /// Phase 1b: persisted before it was sent; the sender is frozen.
    Promise {
        target: Incarnation,
        ballot: Ballot,
        accepted: Option<AcceptedValue>,
    },
    /// What the promiser holds; follows the promise.
    Report {
        target: Incarnation,
        ballot: Ballot,
        report: DataReport,
    },
    /// Phase 2a.
    Accept {
        target: Incarnation,
        ballot: Ballot,
        value: SeedValue,
    },
    /// Phase 2b.
    Accepted { target: Incarnation, ballot: Ballot },
    /// A refusal, with the evidence; aborts the coordinator's round.
    Reject {
        target: Incarnation,
        ballot: Ballot,
        why: Rejection,
    },
    /// The record of `incarnations/<target>` exists: it wins.
    Decided { record: SeedRecord },
}

impl Message {
    pub fn kind(&self) -> &'static str {
        match self {
            Message::Prepare { .. } => "prepare",
            Message::Promise { .. } => "promise",
            Message::Report { .. } => "report",
            Message::Accept { .. } => "accept",
            Message::Accepted { .. } => "accepted",
            Message::Reject { .. } => "reject",
            Message::Decided { .. } => "decided",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Rejection {
    /// Already promised a higher ballot: jump above it.
    HigherBallot(Ballot),
    /// This member's detector does not say `lost(n)`.
    NotLost { evidence: String },
    /// This member already knows a newer incarnation.
    Stale { incarnation: Incarnation },
}
