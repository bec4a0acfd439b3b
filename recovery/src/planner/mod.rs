//! The steady-state planner: while the cluster has quorum, what
//! should this instance do next, and why?
//!
//! `plan(&Observation) -> Plan` is pure: plain data in, plain data out, no
//! clock reads (time is `Observation::now_ms`), no I/O. The daemon gathers
//! the observation, executes the plan's actions in order, and shows the
//! first one with its reason in `eco status`.
//!
//! Two kinds of rules:
//! - **local** rules, about this instance's own etcd: start it, rejoin with
//!   the data, join as a learner, clear a stale identity ([`local`]);
//! - **leader** rules, applied only by the instance next to the etcd raft
//!   leader, the single actor for cluster-wide changes: promote learners,
//!   remove departed, unhealthy or stalled members ([`leader`]).
//!
//! Safety rules every plan obeys:
//! - at most one membership change per plan (etcd orders them; the next pass
//!   sees the result);
//! - never remove a voter if the remaining healthy voters would not form a
//!   quorum of the remaining voters ([`quorum`]);
//! - the removal of a voter that serves takes a snapshot into the store
//!   first; no other removal does ([`snapshot_first`]);
//! - one pending learner in the whole cluster at a time;
//! - every multi-step change is ordered so a crash between any two steps is
//!   recovered on the next pass: a member added but never started is
//!   started (it is ours) or removed (nobody's); a stale member removed but
//!   whose data was not yet moved is handled by "not a member, data present";
//!   a promotion not yet seen is simply re-planned.
//!
//! What it does not do: decide how a cluster is seeded (bootstrap and
//! quorum loss are the fenced protocol's job), or talk to anything.

mod action;
mod leader;
mod local;
mod observation;
mod snapshot_first;

pub use crate::quorum::{quorum, removal_keeps_quorum};
pub use action::{Action, Plan, Step, WaitReason};
pub use leader::heir;
pub use observation::{DataState, LocalFacts, MemberFacts, Observation, PlannerConfig};
pub use snapshot_first::{SnapshotFirst, snapshot_first};

/// What this instance should do next.
pub fn plan(o: &Observation) -> Plan {
    let mut steps = local::plan_local(o);
    // Membership changes go one at a time: a local change (joining,
    // clearing a stale identity) takes the slot first.
    let local_changes_membership = steps.iter().any(|s| s.action.changes_membership());
    if !local_changes_membership && let Some(step) = leader::plan_leader(o) {
        // Where the local rules only wait (a leaving leader), the
        // leader's change is what happens next.
        if steps.iter().all(|s| s.action.is_wait()) {
            steps.clear();
        }
        steps.push(step);
    }
    if steps.is_empty() {
        steps.push(match &o.members {
            // Not a settled state: the next pass may know more.
            None => Step::new(Action::Wait { on: WaitReason::MemberListUnknown }, "the member list is unknown (no member answers); waiting"),
            Some(members) => {
                let voters = members.iter().filter(|m| !m.is_learner).count();
                Step::new(
                    Action::Nothing,
                    format!(
                        "etcd runs as a member; {voters} voter(s), {} learner(s); the group wants {}; nothing to change",
                        members.len() - voters,
                        o.desired_size
                    ),
                )
            }
        });
    }
    Plan { steps }
}

#[cfg(test)]
mod tests;
