//! A round this instance coordinates, as data: its target incarnation,
//! ballot, voters, the promises and reports collected, and where it stands
//! ([`Stage`]). The protocol holds at most one; the coordinator's methods
//! (`super::coordinator`) move it forward.

use super::ballot::Ballot;
use super::ids::{Incarnation, InstanceId, Millis};
use super::messages::AcceptedValue;
use super::observation::DataReport;
use super::value::{SeedRecord, SeedValue};
use std::collections::{BTreeMap, BTreeSet};

/// Where a round stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Waiting for a promise and a data report from every member of `V_n`
    /// that is not certified gone.
    Collecting,
    /// Proposed `value`; waiting for a majority to accept.
    Accepting {
        value: SeedValue,
        data_loss: bool,
        accepted: BTreeSet<InstanceId>,
    },
    /// Chosen; the conditional create of the record is under way.
    Creating {
        record: SeedRecord,
        in_flight: bool,
    },
    Done,
}

/// A round this instance coordinates.
#[derive(Clone, Debug)]
pub struct Round {
    pub target: Incarnation,
    pub n: Incarnation,
    /// The acceptors: `V_n`, in every view of it.
    pub voters: Vec<InstanceId>,
    pub ballot: Ballot,
    pub started: Millis,
    pub last_send: Millis,
    pub promises: BTreeMap<InstanceId, Option<AcceptedValue>>,
    pub reports: BTreeMap<InstanceId, DataReport>,
    pub stage: Stage,
    /// The alert already raised for this round (raised once).
    pub alerted: Option<String>,
}

impl Round {
    pub fn is_done(&self) -> bool {
        matches!(self.stage, Stage::Done)
    }
}
