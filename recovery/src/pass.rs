//! One pass of the daemon, decided: given the pass's facts, who decides
//! what this instance does now (the start refusal, the quorum-loss
//! protocol, formation, or the steady-state planner), whether it is ready
//! to serve, and its phase — the daemon's `Ready`, in the sense raft-rs
//! gives the word: the pure core tells the driver what holds this pass;
//! the driver gathers the facts before and dispatches after.
//!
//! The rules:
//! - a refused start stays refused: nothing acts, a human must;
//! - while a human paused the cluster (`eco pause`), nothing acts either:
//!   no membership change, no formation, no quorum-loss recovery (the
//!   daemon does not run the protocol); etcd is still supervised, snapshots
//!   are still taken, and readiness is unchanged;
//! - while the quorum-loss protocol holds this instance (frozen by a
//!   promise, seeding a new incarnation, or owing a join of one), or
//!   changed its etcd or state during this pass, nothing else acts on this
//!   pass's observation (it is stale);
//! - an instance the provider no longer lists is leaving (phase
//!   `leaving`): the planner's leaving rules apply (it never joins again
//!   and keeps its data), and it never takes part in formation;
//! - an instance of a multi-instance group that finds no member anywhere,
//!   runs no etcd, holds no data and has never been confirmed as a member
//!   (no state, or a first seeding that never started etcd) takes part in
//!   forming the first cluster;
//! - otherwise the steady-state planner acts;
//! - ready means: not held, in the group (a leaving instance takes no new
//!   clients), etcd answers and knows a leader, and this instance is in the
//!   newest incarnation the store records (a frozen minority of an old
//!   incarnation would serve stale reads).
//!
//! What it does not do: choose the action itself (formation, the planner
//! and the protocol do), or remember anything between passes.

use crate::planner::DataState;
use crate::startup::StateSummary;
use serde::{Deserialize, Serialize};

/// Where an instance is in its life (`/status`, gossip, `eco status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    Starting,
    Bootstrapping,
    Running,
    /// eco refused to start etcd; the next action's reason says why.
    Refused,
    Stopping,
    /// Held by the quorum-loss protocol: promised in a round (etcd stopped,
    /// its incarnation never restarted), or owing a join of a new one.
    Frozen,
    /// Seeding a new incarnation after a quorum loss.
    Seeding,
    /// Not in the group any more: it never joins again, keeps its data, and
    /// stops etcd once the cluster removed its member.
    Leaving,
    /// A human paused eco cluster-wide (`eco pause`): etcd is supervised,
    /// nothing else acts.
    Paused,
}

impl Phase {
    /// Every phase (docs/operations.md lists them: `tests/docs_vocabulary.rs`).
    pub const ALL: [Phase; 9] = [
        Phase::Starting,
        Phase::Bootstrapping,
        Phase::Running,
        Phase::Refused,
        Phase::Stopping,
        Phase::Frozen,
        Phase::Seeding,
        Phase::Leaving,
        Phase::Paused,
    ];

    /// The word `/status` and the logs use.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Starting => "starting",
            Phase::Bootstrapping => "bootstrapping",
            Phase::Running => "running",
            Phase::Refused => "refused",
            Phase::Stopping => "stopping",
            Phase::Frozen => "frozen",
            Phase::Seeding => "seeding",
            Phase::Leaving => "leaving",
            Phase::Paused => "paused",
        }
    }
}

/// How the quorum-loss protocol holds this instance.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Hold {
    /// Promised or accepted in a round: etcd of its incarnation stays
    /// stopped.
    Frozen,
    /// The seeder of a new incarnation that has not finished seeding.
    Seeding,
    /// A newer incarnation exists and this instance has not joined it yet
    /// (its old data must not be restarted).
    Joining,
}

/// This instance's own etcd member, as its Status probe answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LocalMember {
    pub has_leader: bool,
    pub is_leader: bool,
    /// etcd's own readiness (`/readyz`: no data-corruption alarm,
    /// serializable and linearizable reads served; and not a learner from
    /// 3.5.19) where its release has the endpoint (3.5.11+, 3.4.29+);
    /// `None` where it has not, or when the endpoint did not answer.
    pub etcd_ready: Option<bool>,
}

/// The facts of one pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PassFacts {
    /// The start decision refused, with its reason.
    pub refused: Option<String>,
    /// A human paused the cluster: who, when and why.
    pub paused: Option<String>,
    /// How the quorum-loss protocol holds this instance, with its
    /// explanation.
    pub hold: Option<(Hold, String)>,
    /// The protocol changed the local etcd or state during this pass.
    pub protocol_acted: bool,
    /// The etcd process runs, or is about to be restarted.
    pub etcd_running: bool,
    /// The own member's answer, `None` when it did not answer.
    pub local: Option<LocalMember>,
    /// Some member (this one or a peer's) answered with the member list.
    pub members_answer: bool,
    pub data: DataState,
    pub group_size: usize,
    /// The provider lists this instance in the group.
    pub in_group: bool,
    pub state: Option<StateSummary>,
    /// The newest incarnation the store records, `None` when unknown.
    pub newest_recorded: Option<u64>,
}

/// Who decides this pass.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Decider {
    /// The start was refused: nothing acts.
    Refused { reason: String },
    /// A human paused the cluster: nothing acts until `eco resume`.
    Paused { reason: String },
    /// The quorum-loss protocol holds this instance or just acted: nothing
    /// else acts this pass.
    QuorumLoss { reason: String },
    /// No cluster exists yet: formation decides.
    Formation,
    /// The steady-state planner decides.
    Planner,
}

/// What holds for this pass.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ready {
    pub decider: Decider,
    pub ready: bool,
    pub phase: Phase,
    /// Why this instance is not ready because of its incarnation, when
    /// that is the reason (worth a warning).
    pub stale: Option<String>,
}

pub fn decide(f: &PassFacts) -> Ready {
    let own = f.state.map(|s| s.incarnation);
    let stale = match (f.newest_recorded, own) {
        (Some(newest), Some(own)) if own < newest => Some(format!(
            "this member belongs to incarnation {own}, but the store records incarnation {newest}: not ready"
        )),
        _ => None,
    };
    let answering_leader = f
        .local
        .is_some_and(|m| m.has_leader && m.etcd_ready != Some(false));
    let ready = f.refused.is_none()
        && f.hold.is_none()
        && f.in_group
        && stale.is_none()
        && answering_leader;
    let phase = match (&f.refused, &f.hold) {
        (Some(_), _) => Phase::Refused,
        (None, _) if f.paused.is_some() => Phase::Paused,
        (None, Some((Hold::Seeding, _))) => Phase::Seeding,
        (None, Some(_)) => Phase::Frozen,
        (None, None) if !f.in_group => Phase::Leaving,
        (None, None) if ready => Phase::Running,
        (None, None) => Phase::Starting,
    };
    let decider = if let Some(reason) = &f.refused {
        Decider::Refused {
            reason: reason.clone(),
        }
    } else if let Some(reason) = &f.paused {
        Decider::Paused {
            reason: reason.clone(),
        }
    } else if let Some((_, reason)) = &f.hold {
        Decider::QuorumLoss {
            reason: reason.clone(),
        }
    } else if f.protocol_acted {
        Decider::QuorumLoss {
            reason: "the quorum-loss protocol changed this instance's etcd during this pass: observe again before acting"
                .into(),
        }
    } else if forming(f) {
        Decider::Formation
    } else {
        Decider::Planner
    };
    Ready {
        decider,
        ready,
        phase,
        stale,
    }
}

/// No cluster answers, this instance runs nothing, holds nothing, and was
/// never confirmed as a member of any cluster, in a group of several.
fn forming(f: &PassFacts) -> bool {
    let never_confirmed = f
        .state
        .is_none_or(|s| s.member_id.is_none() && s.incarnation == 1);
    f.in_group
        && !f.members_answer
        && !f.etcd_running
        && f.data == DataState::Empty
        && f.group_size > 1
        && never_confirmed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> PassFacts {
        PassFacts {
            refused: None,
            paused: None,
            hold: None,
            protocol_acted: false,
            etcd_running: true,
            local: Some(LocalMember {
                has_leader: true,
                is_leader: false,
                etcd_ready: None,
            }),
            members_answer: true,
            data: DataState::Present,
            group_size: 3,
            in_group: true,
            state: Some(StateSummary {
                incarnation: 2,
                member_id: Some(9),
            }),
            newest_recorded: Some(2),
        }
    }

    fn who(d: &Decider) -> &'static str {
        match d {
            Decider::Refused { .. } => "refused",
            Decider::Paused { .. } => "paused",
            Decider::QuorumLoss { .. } => "quorum-loss",
            Decider::Formation => "formation",
            Decider::Planner => "planner",
        }
    }

    fn empty_newcomer(f: &mut PassFacts) {
        f.etcd_running = false;
        f.local = None;
        f.members_answer = false;
        f.data = DataState::Empty;
        f.state = None;
        f.newest_recorded = None;
    }

    #[test]
    fn table() {
        type Edit = fn(&mut PassFacts);
        // (case, edit of the healthy follower, decider, ready, phase)
        let cases: Vec<(&str, Edit, &str, bool, Phase)> = vec![
            (
                "a healthy follower",
                |_| {},
                "planner",
                true,
                Phase::Running,
            ),
            (
                "no leader",
                |f| {
                    f.local = Some(LocalMember {
                        has_leader: false,
                        is_leader: false,
                        etcd_ready: None,
                    })
                },
                "planner",
                false,
                Phase::Starting,
            ),
            (
                "etcd does not answer",
                |f| f.local = None,
                "planner",
                false,
                Phase::Starting,
            ),
            (
                "refused",
                |f| f.refused = Some("data of unknown origin".into()),
                "refused",
                false,
                Phase::Refused,
            ),
            (
                "paused: still ready, nothing acts",
                |f| f.paused = Some("paused by ann: surgery".into()),
                "paused",
                true,
                Phase::Paused,
            ),
            (
                "paused and refused: refused wins",
                |f| {
                    f.paused = Some("paused by ann: surgery".into());
                    f.refused = Some("data of unknown origin".into());
                },
                "refused",
                false,
                Phase::Refused,
            ),
            (
                "paused while frozen: the protocol is not run",
                |f| {
                    f.paused = Some("paused by ann: surgery".into());
                    f.hold = Some((Hold::Frozen, "promised (1, a)".into()));
                },
                "paused",
                false,
                Phase::Paused,
            ),
            (
                "paused empty newcomer: no formation",
                |f| {
                    empty_newcomer(f);
                    f.paused = Some("paused by ann: surgery".into());
                },
                "paused",
                false,
                Phase::Paused,
            ),
            (
                "frozen by a promise",
                |f| f.hold = Some((Hold::Frozen, "promised (1, a)".into())),
                "quorum-loss",
                false,
                Phase::Frozen,
            ),
            (
                "seeding",
                |f| f.hold = Some((Hold::Seeding, "seeding 3".into())),
                "quorum-loss",
                false,
                Phase::Seeding,
            ),
            (
                "owing a join",
                |f| f.hold = Some((Hold::Joining, "incarnation 3 exists".into())),
                "quorum-loss",
                false,
                Phase::Frozen,
            ),
            (
                "the protocol just acted",
                |f| f.protocol_acted = true,
                "quorum-loss",
                true,
                Phase::Running,
            ),
            (
                "an older incarnation than the store's",
                |f| f.newest_recorded = Some(3),
                "planner",
                false,
                Phase::Starting,
            ),
            (
                "an empty newcomer, nothing answers",
                empty_newcomer,
                "formation",
                false,
                Phase::Starting,
            ),
            (
                "an empty newcomer, a cluster answers",
                |f| {
                    empty_newcomer(f);
                    f.members_answer = true;
                },
                "planner",
                false,
                Phase::Starting,
            ),
            (
                "an empty newcomer, alone",
                |f| {
                    empty_newcomer(f);
                    f.group_size = 1;
                },
                "planner",
                false,
                Phase::Starting,
            ),
            (
                "its own first seeding never started etcd",
                |f| {
                    empty_newcomer(f);
                    f.state = Some(StateSummary {
                        incarnation: 1,
                        member_id: None,
                    });
                },
                "formation",
                false,
                Phase::Starting,
            ),
            (
                "a confirmed member whose data is gone",
                |f| {
                    empty_newcomer(f);
                    f.state = Some(StateSummary {
                        incarnation: 1,
                        member_id: Some(4),
                    });
                },
                "planner",
                false,
                Phase::Starting,
            ),
            (
                "removed from the group: leaving, still served by the planner",
                |f| f.in_group = false,
                "planner",
                false,
                Phase::Leaving,
            ),
            (
                "removed from the group before it ever joined: no formation",
                |f| {
                    empty_newcomer(f);
                    f.in_group = false;
                },
                "planner",
                false,
                Phase::Leaving,
            ),
            (
                "an empty newcomer whose etcd restarts",
                |f| {
                    empty_newcomer(f);
                    f.etcd_running = true;
                },
                "planner",
                false,
                Phase::Starting,
            ),
        ];
        for (case, edit, decider, ready, phase) in cases {
            let mut f = facts();
            edit(&mut f);
            let got = decide(&f);
            assert_eq!(who(&got.decider), decider, "{case}: {got:?}");
            assert_eq!(got.ready, ready, "{case}: {got:?}");
            assert_eq!(got.phase, phase, "{case}: {got:?}");
        }
    }

    #[test]
    fn a_stale_incarnation_says_why() {
        let mut f = facts();
        f.newest_recorded = Some(3);
        let why = decide(&f).stale.expect("stale");
        assert!(
            why.contains("incarnation 2") && why.contains("incarnation 3"),
            "{why}"
        );
        assert_eq!(decide(&facts()).stale, None);
    }

    #[test]
    fn etcd_saying_not_ready_makes_the_instance_not_ready() {
        for (etcd_ready, want) in [(None, true), (Some(true), true), (Some(false), false)] {
            let mut f = facts();
            f.local = Some(LocalMember {
                has_leader: true,
                is_leader: false,
                etcd_ready,
            });
            assert_eq!(decide(&f).ready, want, "{etcd_ready:?}");
        }
    }
}
