//! Which maintenance jobs a pass runs after the planner's steps, and in
//! what order. Maintenance restarts or slows members (the peer listener
//! turned to TLS, a rolling etcd upgrade, a defragmentation), so it runs
//! only in a pass whose plan settled — every step `Nothing` or `Wait`: the
//! planner did nothing to etcd — and at most one member-restarting job
//! acts per pass: an upgrade step before space (a member restarted onto
//! a new release must not be defragmented in the same pass).
//!
//! What it does not do: decide what each job does (`peer_scheme`,
//! `upgrade`, `space` decide that) or run them (the daemon does, and says
//! whether a job acted).

use crate::planner::{Action, Plan};

/// A maintenance job of the steady state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MaintenanceJob {
    /// Each member's recorded peer URL and listener follow the config's
    /// peer scheme (`peer_scheme`); needs the member list.
    PeerScheme,
    /// A rolling etcd upgrade step (`upgrade`).
    Upgrade,
    /// The space governor: defragmentation and NOSPACE (`space`).
    Space,
}

impl MaintenanceJob {
    /// Whether the job, when it acts, ends the pass's maintenance (it
    /// restarts or stalls a member).
    pub fn exclusive(self) -> bool {
        matches!(self, MaintenanceJob::Upgrade | MaintenanceJob::Space)
    }
}

/// Whether the planner did nothing to etcd in this plan.
pub fn settled(plan: &Plan) -> bool {
    plan.steps
        .iter()
        .all(|s| matches!(s.action, Action::Nothing | Action::Wait { .. }))
}

/// The jobs to run after `plan`, in order; the daemon stops after the
/// first [`MaintenanceJob::exclusive`] job that acted. `members_known`:
/// the pass read the member list.
pub fn after_plan(plan: &Plan, members_known: bool) -> Vec<MaintenanceJob> {
    if !settled(plan) {
        return Vec::new();
    }
    let mut jobs = Vec::new();
    if members_known {
        jobs.push(MaintenanceJob::PeerScheme);
    }
    jobs.extend([MaintenanceJob::Upgrade, MaintenanceJob::Space]);
    jobs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::planner::{Step, WaitReason};
    use MaintenanceJob::*;

    fn plan(actions: Vec<Action>) -> Plan {
        Plan {
            steps: actions
                .into_iter()
                .map(|action| Step {
                    action,
                    reason: "r".into(),
                })
                .collect(),
        }
    }

    #[test]
    fn maintenance_runs_only_after_a_settled_plan_upgrade_before_space() {
        let wait = Action::Wait {
            on: WaitReason::Left,
        };
        let promote = Action::Promote {
            member_id: 1,
            name: "a".into(),
        };
        // (plan, members known, jobs, why)
        let table = [
            (
                plan(vec![]),
                true,
                vec![PeerScheme, Upgrade, Space],
                "an empty plan is settled",
            ),
            (
                plan(vec![Action::Nothing]),
                true,
                vec![PeerScheme, Upgrade, Space],
                "nothing to do",
            ),
            (
                plan(vec![wait.clone()]),
                true,
                vec![PeerScheme, Upgrade, Space],
                "waiting is settled",
            ),
            (
                plan(vec![wait.clone()]),
                false,
                vec![Upgrade, Space],
                "no member list: no peer-scheme upkeep",
            ),
            (
                plan(vec![promote.clone()]),
                true,
                vec![],
                "the planner changed the membership",
            ),
            (
                plan(vec![wait, promote]),
                true,
                vec![],
                "one acting step is enough",
            ),
        ];
        for (p, known, want, why) in table {
            assert_eq!(after_plan(&p, known), want, "{why}");
        }
        assert!(!PeerScheme.exclusive());
        assert!(Upgrade.exclusive() && Space.exclusive());
    }
}
