//! What the protocol's state owes the instance beyond the effects of the
//! last input — checked at the end of every pass, so an effect that failed
//! or was cut by a crash is done again — and how it holds the instance.
//!
//! - frozen by a promise but etcd runs: stop it (a promise resent by a
//!   retransmitted prepare carries no second `Freeze`, and a stop may have
//!   failed);
//! - the pending seeder of a decided incarnation: seed (again);
//! - a decided incarnation newer than the instance's state file: join it
//!   (a `Join` that failed, or was cut by a crash).
//!
//! While any of these holds, or the instance is frozen, the protocol holds
//! the instance: nothing else acts on it ([`crate::pass`]).

use super::effects::SeedPlan;
use super::ids::Incarnation;
use super::protocol::{Protocol, seed_plan};
use super::value::SeedRecord;
use crate::pass::Hold;
use serde::{Deserialize, Serialize};

/// Owed work, with its reason.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Owed {
    /// Frozen, yet etcd runs: stop it.
    StopEtcd { reason: String },
    /// This instance seeds this plan.
    Seed { plan: SeedPlan, reason: String },
    /// Move the old data aside and become a new instance of this record's
    /// incarnation.
    Join { record: SeedRecord, reason: String },
}

impl Protocol {
    /// What is owed, given the incarnation of the instance's state file and
    /// whether its etcd runs.
    pub fn owed(&self, local_incarnation: Incarnation, etcd_running: bool) -> Vec<Owed> {
        let mut out = Vec::new();
        if self.state.frozen && etcd_running {
            out.push(Owed::StopEtcd {
                reason: format!(
                    "frozen by a promise ({}) but etcd runs: stopping it",
                    self.state
                        .promised
                        .as_ref()
                        .map_or("a promise".into(), |b| format!("ballot {b}"))
                ),
            });
        }
        if let Some((plan, record)) = self.seed_owed() {
            out.push(Owed::Seed {
                plan,
                reason: format!(
                    "this instance is the seeder of incarnation {} and has not finished",
                    record.incarnation
                ),
            });
        } else if let Some(record) = self.join_owed(local_incarnation) {
            out.push(Owed::Join {
                record: record.clone(),
                reason: format!(
                    "incarnation {} exists and this instance's state file is at incarnation {local_incarnation}: join it",
                    record.incarnation
                ),
            });
        }
        out
    }

    /// How the protocol holds the instance, if it does.
    pub fn hold(&self, local_incarnation: Incarnation) -> Option<Hold> {
        if self.seed_owed().is_some() {
            Some(Hold::Seeding)
        } else if self.state.frozen {
            Some(Hold::Frozen)
        } else if self.join_owed(local_incarnation).is_some() {
            Some(Hold::Joining)
        } else {
            None
        }
    }

    fn seed_owed(&self) -> Option<(SeedPlan, &SeedRecord)> {
        let record = self
            .state
            .decided
            .as_ref()
            .filter(|_| self.state.seed_pending)?;
        seed_plan(record).map(|plan| (plan, record))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fenced::{Ballot, PersistedState, ProtocolConfig, SeedSource, SeedValue};

    fn record(k: Incarnation, seeder: &str) -> SeedRecord {
        SeedRecord {
            incarnation: k,
            value: SeedValue {
                source: SeedSource::Member {
                    holder: seeder.into(),
                    cluster_id: Some(1),
                    incarnation: k - 1,
                    commit_index: 10,
                    revision: 0,
                },
                seeder: seeder.into(),
            },
            ballot: Ballot::new(1, "a"),
            voters: vec![seeder.into()],
            token_suffix: 7,
            data_loss: false,
        }
    }

    fn protocol(state: PersistedState) -> Protocol {
        Protocol::new("a", 1, ProtocolConfig::default(), Some(state))
    }

    fn kinds(owed: &[Owed]) -> Vec<&'static str> {
        owed.iter()
            .map(|o| match o {
                Owed::StopEtcd { .. } => "stop",
                Owed::Seed { .. } => "seed",
                Owed::Join { .. } => "join",
            })
            .collect()
    }

    #[test]
    fn table() {
        let frozen = PersistedState {
            incarnation: 2,
            voters: vec!["a".into(), "b".into()],
            promised: Some(Ballot::new(1, "b")),
            frozen: true,
            ..Default::default()
        };
        let seeder = PersistedState {
            incarnation: 3,
            voters: vec!["a".into()],
            decided: Some(record(3, "a")),
            seed_pending: true,
            ..Default::default()
        };
        let joiner = PersistedState {
            incarnation: 3,
            voters: vec!["b".into()],
            decided: Some(record(3, "b")),
            ..Default::default()
        };
        // (case, state, local incarnation, etcd running, owed, hold)
        type Case = (
            &'static str,
            PersistedState,
            Incarnation,
            bool,
            Vec<&'static str>,
            Option<Hold>,
        );
        let cases: Vec<Case> = vec![
            ("nothing", PersistedState::default(), 1, true, vec![], None),
            (
                "frozen, etcd stopped",
                frozen.clone(),
                2,
                false,
                vec![],
                Some(Hold::Frozen),
            ),
            (
                "frozen, etcd runs",
                frozen,
                2,
                true,
                vec!["stop"],
                Some(Hold::Frozen),
            ),
            (
                "the pending seeder",
                seeder.clone(),
                2,
                false,
                vec!["seed"],
                Some(Hold::Seeding),
            ),
            (
                "the pending seeder whose state file is already new",
                seeder.clone(),
                3,
                true,
                vec!["seed"],
                Some(Hold::Seeding),
            ),
            (
                "a seeder that finished",
                PersistedState {
                    seed_pending: false,
                    ..seeder
                },
                3,
                true,
                vec![],
                None,
            ),
            (
                "a join owed",
                joiner.clone(),
                2,
                true,
                vec!["join"],
                Some(Hold::Joining),
            ),
            ("a join done", joiner, 3, true, vec![], None),
        ];
        for (case, state, local, running, owed, hold) in cases {
            let p = protocol(state);
            assert_eq!(kinds(&p.owed(local, running)), owed, "{case}");
            assert_eq!(p.hold(local), hold, "{case}");
        }
    }
}
