//! A graceful leave on a termination notice: the group (an EC2
//! auto-scaling group's termination lifecycle hook) holds this instance in
//! `Terminating:Wait` until eco lets it continue. Meanwhile the instance is
//! not in the group, so the planner's leaving rules run as for any
//! departure (leadership transferred away, the member removed by the
//! leader's instance when that keeps quorum, etcd stopped once it is no
//! longer a member, data kept). This module decides what the notice adds:
//!
//! 1. a **final snapshot** first, when this instance writes snapshots (its
//!    member leads) or its departure leaves no healthy quorum — the
//!    planner is held until it is stored (or has failed
//!    [`FINAL_SNAPSHOT_ATTEMPTS`] times, which is said);
//! 2. **heartbeats** to the hook every half heartbeat timeout while eco
//!    works, so the group does not continue by itself;
//! 3. **completion** (`CONTINUE`) once the instance has left — not a member
//!    of the cluster any more and etcd stopped — or when the bound runs
//!    out (the member could not be removed without losing quorum; the
//!    final snapshot is in the store and the cluster's own recovery takes
//!    over). Gossip is left just before.
//!
//! Without a hook (`hook_heartbeat_ms = None`) nothing waits for eco: only
//! the leaving rules apply, and the instance is certified gone by EC2 once
//! terminated.
//!
//! What it does not do: act, or decide who removes the member (the
//! planner's leader rules do).

use serde::{Deserialize, Serialize};

/// How many times the final snapshot is tried before the leave goes on
/// without it.
pub const FINAL_SNAPSHOT_ATTEMPTS: u32 = 3;

/// This instance's member, as the last member list showed it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum MemberNow {
    /// No member answered: unknown.
    Unknown,
    /// The member list does not have this instance.
    Gone,
    Present,
}

/// The facts of one pass while a termination notice holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TerminationFacts {
    pub now_ms: u64,
    /// When the notice was first seen.
    pub since_ms: u64,
    /// The hook's heartbeat timeout; `None` without a hook.
    pub hook_heartbeat_ms: Option<u64>,
    /// How long eco works before it lets the group continue regardless.
    pub bound_ms: u64,
    pub member: MemberNow,
    pub etcd_running: bool,
    /// A final snapshot is due (this instance writes snapshots, or its
    /// departure leaves no healthy quorum) and a store is configured.
    pub final_snapshot_due: bool,
    /// A final snapshot was stored since the notice.
    pub final_snapshot_taken: bool,
    /// Final snapshot attempts that failed since the notice.
    pub final_snapshot_failures: u32,
    pub last_heartbeat_ms: Option<u64>,
    pub completed: bool,
}

/// What the notice asks for this pass (the planner's leaving rules run
/// unless `hold_planner`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum TerminationStep {
    /// Take the final snapshot now; the planner waits for it.
    FinalSnapshot { reason: String },
    /// Tell the hook eco is still working; the planner goes on.
    Heartbeat { reason: String },
    /// Leave gossip and complete the lifecycle action (`CONTINUE`).
    Complete { reason: String },
    /// Nothing to add: the planner's leaving rules go on.
    Continue { reason: String },
    /// Completed already: nothing more.
    Done { reason: String },
}

impl TerminationStep {
    /// Whether the planner must not act this pass (the final snapshot
    /// comes before the member goes).
    pub fn holds_planner(&self) -> bool {
        matches!(self, TerminationStep::FinalSnapshot { .. })
    }
}

/// How long eco works on a leave before it lets the group continue: the
/// configured bound, within 90 % of the hook's global timeout when it has
/// one (completing before AWS gives up on its own).
pub fn leave_bound_ms(configured_ms: u64, hook_global_ms: Option<u64>) -> u64 {
    match hook_global_ms {
        Some(global) => configured_ms.min(global.saturating_sub(global / 10)),
        None => configured_ms,
    }
}

pub fn decide(f: &TerminationFacts) -> TerminationStep {
    if f.completed {
        return TerminationStep::Done {
            reason: "the termination was completed: the group continues terminating this instance"
                .into(),
        };
    }
    let elapsed = f.now_ms.saturating_sub(f.since_ms);
    let left = f.member == MemberNow::Gone && !f.etcd_running;
    let snapshot_pending = f.final_snapshot_due
        && !f.final_snapshot_taken
        && f.final_snapshot_failures < FINAL_SNAPSHOT_ATTEMPTS;
    if snapshot_pending && elapsed < f.bound_ms {
        return TerminationStep::FinalSnapshot {
            reason: format!(
                "this instance is being terminated and writes snapshots (or its departure leaves no healthy quorum): final snapshot first (attempt {} of {FINAL_SNAPSHOT_ATTEMPTS})",
                f.final_snapshot_failures + 1
            ),
        };
    }
    if f.hook_heartbeat_ms.is_none() {
        return TerminationStep::Continue {
            reason: "this instance is being terminated (no lifecycle hook waits for it): leaving"
                .into(),
        };
    }
    if left {
        return TerminationStep::Complete {
            reason: "this instance has left the cluster (not a member, etcd stopped): let the group continue its termination".into(),
        };
    }
    if elapsed >= f.bound_ms {
        return TerminationStep::Complete {
            reason: format!(
                "this instance could not leave within {} ms (its member is {}): let the group continue; the snapshot store and the cluster's recovery take over",
                f.bound_ms,
                match f.member {
                    MemberNow::Present => "still in the cluster: removing it would lose quorum",
                    MemberNow::Gone => "removed, but etcd has not stopped",
                    MemberNow::Unknown => "unknown: no member answers",
                }
            ),
        };
    }
    let every = f.hook_heartbeat_ms.unwrap_or(u64::MAX) / 2;
    let due = f
        .last_heartbeat_ms
        .is_none_or(|at| f.now_ms.saturating_sub(at) >= every);
    let doing = match (f.member, f.etcd_running) {
        (MemberNow::Present, _) => "waiting for its member to be removed",
        (MemberNow::Gone, true) => "stopping etcd",
        (_, _) => "waiting for a member list",
    };
    if due {
        TerminationStep::Heartbeat {
            reason: format!("this instance is leaving ({doing}): heartbeat to the lifecycle hook"),
        }
    } else {
        TerminationStep::Continue {
            reason: format!("this instance is leaving ({doing})"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> TerminationFacts {
        TerminationFacts {
            now_ms: 10_000,
            since_ms: 9_000,
            hook_heartbeat_ms: Some(60_000),
            bound_ms: 600_000,
            member: MemberNow::Present,
            etcd_running: true,
            final_snapshot_due: false,
            final_snapshot_taken: false,
            final_snapshot_failures: 0,
            last_heartbeat_ms: Some(9_500),
            completed: false,
        }
    }

    fn kind(s: &TerminationStep) -> &'static str {
        match s {
            TerminationStep::FinalSnapshot { .. } => "snapshot",
            TerminationStep::Heartbeat { .. } => "heartbeat",
            TerminationStep::Complete { .. } => "complete",
            TerminationStep::Continue { .. } => "continue",
            TerminationStep::Done { .. } => "done",
        }
    }

    #[test]
    fn table() {
        type Edit = fn(&mut TerminationFacts);
        let cases: Vec<(&str, Edit, &str)> = vec![
            ("a member waits for its removal", |_| {}, "continue"),
            (
                "first pass: heartbeat at once",
                |f| f.last_heartbeat_ms = None,
                "heartbeat",
            ),
            (
                "half the hook's timeout passed",
                |f| f.now_ms = 39_500,
                "heartbeat",
            ),
            (
                "the writer snapshots first",
                |f| f.final_snapshot_due = true,
                "snapshot",
            ),
            (
                "the final snapshot was stored",
                |f| {
                    f.final_snapshot_due = true;
                    f.final_snapshot_taken = true;
                },
                "continue",
            ),
            (
                "the final snapshot failed every attempt",
                |f| {
                    f.final_snapshot_due = true;
                    f.final_snapshot_failures = FINAL_SNAPSHOT_ATTEMPTS;
                },
                "continue",
            ),
            (
                "removed, etcd still running",
                |f| f.member = MemberNow::Gone,
                "continue",
            ),
            (
                "left: complete",
                |f| {
                    f.member = MemberNow::Gone;
                    f.etcd_running = false;
                },
                "complete",
            ),
            (
                "left but no member list: not known to have left",
                |f| {
                    f.member = MemberNow::Unknown;
                    f.etcd_running = false;
                },
                "continue",
            ),
            ("the bound ran out", |f| f.now_ms = 609_000, "complete"),
            (
                "the bound ran out during the final snapshot: complete",
                |f| {
                    f.now_ms = 609_000;
                    f.final_snapshot_due = true;
                },
                "complete",
            ),
            (
                "no hook: only the snapshot and the leaving rules",
                |f| {
                    f.hook_heartbeat_ms = None;
                    f.member = MemberNow::Gone;
                    f.etcd_running = false;
                },
                "continue",
            ),
            (
                "no hook, the writer: snapshot",
                |f| {
                    f.hook_heartbeat_ms = None;
                    f.final_snapshot_due = true;
                },
                "snapshot",
            ),
            ("completed", |f| f.completed = true, "done"),
        ];
        for (case, edit, want) in cases {
            let mut f = facts();
            edit(&mut f);
            let got = decide(&f);
            assert_eq!(kind(&got), want, "{case}: {got:?}");
            assert_eq!(got.holds_planner(), want == "snapshot", "{case}");
        }
    }

    #[test]
    fn the_bound_stays_within_the_hooks_global_timeout() {
        assert_eq!(leave_bound_ms(600_000, None), 600_000);
        assert_eq!(leave_bound_ms(600_000, Some(6_000_000)), 600_000);
        assert_eq!(leave_bound_ms(600_000, Some(300_000)), 270_000);
        assert_eq!(leave_bound_ms(600_000, Some(0)), 0);
    }

    #[test]
    fn the_bound_says_why() {
        let mut f = facts();
        f.now_ms = 700_000;
        let TerminationStep::Complete { reason } = decide(&f) else {
            panic!("not complete")
        };
        assert!(reason.contains("would lose quorum"), "{reason}");
    }
}
