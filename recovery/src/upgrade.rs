//! Rolling etcd version upgrades: whether this instance's member restarts
//! on the etcd binary its config now names, waits for its turn, or is
//! refused. Pure.
//!
//! Each instance compares the etcd version its member runs (its Status
//! answer) with the version of the binary its config names now (the
//! *target*). When they differ, the rules below say what to do; every
//! instance reads the same facts (the member list, every member's Status),
//! so every instance computes the same turn:
//!
//! - **refused** — a jump etcd does not support in place: another major
//!   version, more than one minor version above the oldest member, or a
//!   minor version below the newest member (a downgrade needs etcd's own
//!   downgrade procedure, which eco does not run). Patch versions may move
//!   either way. The member keeps running the binary it runs.
//! - **wait** — unless every member answers with a known version, no
//!   learner is joining, a leader is known, and every member has applied
//!   the leader's log up to [`UpgradeFacts::max_lag_entries`] (the
//!   previous step's member has caught up);
//! - **one member at a time, the leader last** — the followers that still
//!   have to move (by version, toward the target) go in member-id order;
//!   the member whose turn it is restarts, the others wait. The leader's
//!   instance waits until no follower has to move, then hands leadership
//!   to the most caught-up follower; in the next pass it is a follower
//!   and restarts. A cluster of one restarts in place.
//! - **a snapshot first** — the step that starts an upgrade (no member
//!   runs the target yet) is marked [`UpgradeStep::Restart::first`]: the
//!   daemon stores a snapshot before it restarts anything.
//!
//! A member that is restarting does not answer, which holds every other
//! instance in **wait** until it is back and caught up: that is what keeps
//! two steps from overlapping. So does an instance of the group without a
//! member (one removed, or joining): a step waits for a member of every
//! instance, so a step whose member was removed stops the roll.
//!
//! **A step that fails stops the roll** ([`step_progress`]): the member
//! has [`step_deadline_ms`] to answer with a leader on the new version —
//! half the unhealthy-member TTL, so the leader's instance never removes a
//! member whose step is in progress — and fails sooner when the new etcd
//! exits [`FAILED_STARTS`] times without answering. A new etcd that never
//! answered is left for the last one that ran ([`fallback`]); the member
//! answers on its old version, so it still has to move and every other
//! instance waits for it; its own instance does not try that binary again
//! until the configured binary changes.
//!
//! **Which binary a member runs when its etcd does not start**
//! ([`fallback`], [`launch_at_start`]): never one that never answered
//! when another is known. A member whose etcd never answered since its
//! launch and keeps exiting moves to the configured binary when that is
//! another file (the fix), else back to the last one that answered. An
//! eco that starts launches the last binary that answered while the
//! configured one waits for its turn (or failed its step).
//!
//! What it does not do: choose binaries (the config does), start a member
//! that is down (the planner does), or run etcd's downgrade procedure.

use serde::{Deserialize, Serialize};

pub use crate::etcd_version::Version;

/// One member, as the member list and its Status answered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UpgradeMember {
    pub id: u64,
    pub name: String,
    pub is_learner: bool,
    /// Its server version; `None` when it did not answer or the version
    /// could not be read.
    pub version: Option<Version>,
    pub raft_applied_index: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UpgradeFacts {
    pub local_member_id: u64,
    /// The raft leader's member id, `0` when no member knows one.
    pub leader_id: u64,
    /// The leader's raft index (what "caught up" is measured against).
    pub leader_raft_index: u64,
    /// The version of the etcd binary this instance's config names now.
    pub target: Version,
    pub members: Vec<UpgradeMember>,
    /// The instance ids of the group (the provider's answer): each has a
    /// member named after it.
    pub group: Vec<String>,
    /// How far behind the leader's log a member may be for the next step.
    pub max_lag_entries: u64,
    /// A step from 3.5 onto 3.6 only: the local member's data checked for
    /// v2-store content etcd 3.6 refuses to start on (`etcdutl check
    /// v2store`): `None` not checked (yet), `Some(Ok)` clean,
    /// `Some(Err(why))` content found or the check could not run.
    #[serde(default)]
    pub v2store: Option<Result<(), String>>,
    /// The operator's `etcd.extra_flags`: a step onto a release that
    /// refuses one of them is refused (the member would not start).
    #[serde(default)]
    pub extra_flags: Vec<String>,
}

/// What this instance does about its member's etcd version.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum UpgradeStep {
    /// The member runs the target version (or is not in the list).
    Nothing,
    /// A jump etcd does not support; nothing is restarted.
    Refused {
        reason: String,
    },
    Wait {
        reason: String,
    },
    /// The leader's instance hands leadership away before its own step.
    TransferLeadership {
        member_id: u64,
        name: String,
        reason: String,
    },
    /// Restart the member on the target binary. `first`: no member runs
    /// the target yet; store a snapshot before.
    Restart {
        from: Version,
        to: Version,
        first: bool,
        reason: String,
    },
}

/// Which etcd an eco that starts launches its member on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum LaunchAtStart {
    /// The binary the config names.
    Configured,
    /// The binary the member last ran: the configured one is another
    /// version, whose turn in the roll has not come (or whose step failed).
    LastRun { reason: String },
}

/// At start: the member last answered on `last_ran` (`None`: never, or
/// not recorded), whose file still holds that version when
/// `still_there`; its last launch, on `never_answered`, did not answer
/// when that is set; the config names `configured`. An eco restarted in
/// the middle of a rolling upgrade relaunches its member on the version it
/// ran, and the roll moves it in turn; so does an eco restarted after a
/// step whose etcd never answered: a launch that never answered is never
/// preferred. When the binary that ran is gone (replaced in place by a
/// package), the configured one is all there is.
pub fn launch_at_start(
    configured: Version,
    last_ran: Option<Version>,
    still_there: bool,
    never_answered: Option<Version>,
) -> (LaunchAtStart, Option<String>) {
    let failed = never_answered
        .map(|v| format!("the member's last launch, on etcd {v}, never answered; "))
        .unwrap_or_default();
    match last_ran {
        Some(last) if last != configured && still_there => (
            LaunchAtStart::LastRun {
                reason: format!(
                    "{failed}the member last ran etcd {last}; etcd {configured} waits for its turn in the rolling upgrade"
                ),
            },
            None,
        ),
        Some(last) if last != configured => (
            LaunchAtStart::Configured,
            Some(format!(
                "{failed}the member last ran etcd {last}, whose binary is gone: it starts on etcd {configured} out of turn"
            )),
        ),
        Some(_) => (LaunchAtStart::Configured, None),
        None => (
            LaunchAtStart::Configured,
            never_answered.map(|v| {
                format!(
                    "the member's last launch, on etcd {v}, never answered and no etcd is known to have answered on its data: it starts on the configured etcd {configured}"
                )
            }),
        ),
    }
}

/// How long the member restarted by an upgrade step has to answer with a
/// leader on the new version, at most.
pub const STEP_ANSWER_WITHIN_MS: u64 = 60_000;

/// An etcd that exits this many times after its launch without ever
/// answering does not start: its upgrade step fails at once, and
/// [`fallback`] looks for another binary.
pub const FAILED_STARTS: u64 = 3;

/// How long an upgrade step's member has to answer
/// ([`STEP_ANSWER_WITHIN_MS`]), given the unhealthy-member TTL: at most
/// half of it. The leader's instance removes a voter unhealthy for longer
/// than the TTL; the step's member is unhealthy from the moment it stops,
/// so its step ends — answered, or failed and back on the binary that ran
/// ([`fallback`]), with the other half of the TTL to answer again — before
/// the TTL could remove it. The two never fight.
pub fn step_deadline_ms(unhealthy_member_ttl_ms: u64) -> u64 {
    STEP_ANSWER_WITHIN_MS.min(unhealthy_member_ttl_ms / 2)
}

/// The member restarted by an upgrade step, as its instance watches it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepWatch {
    pub to: Version,
    /// Since the step stopped the member.
    pub elapsed_ms: u64,
    /// [`step_deadline_ms`].
    pub deadline_ms: u64,
    /// Its answer now: the version it answers with (`None`: unreadable)
    /// and whether it knows a leader; `None` when it did not answer.
    pub answer: Option<(Option<Version>, bool)>,
    /// It answered at least once since its launch (now included).
    pub answered: bool,
    /// Its exits since its launch.
    pub exits: u64,
}

/// How an upgrade step stands.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum StepProgress {
    Waiting,
    /// The member answers with a leader on the new version.
    Done,
    Failed {
        reason: String,
    },
}

/// Whether the step is done, failed, or still waits.
pub fn step_progress(w: &StepWatch) -> StepProgress {
    let to = w.to;
    if let Some((version, true)) = w.answer {
        return if version == Some(to) {
            StepProgress::Done
        } else {
            StepProgress::Failed {
                reason: format!(
                    "the member answers as etcd {}, not etcd {to}",
                    version.map_or_else(|| "of an unknown version".to_string(), |v| v.to_string())
                ),
            }
        };
    }
    if !w.answered && w.exits >= FAILED_STARTS {
        return StepProgress::Failed {
            reason: format!(
                "etcd {to} exited {} times without answering: it does not start",
                w.exits
            ),
        };
    }
    if w.elapsed_ms >= w.deadline_ms {
        return StepProgress::Failed {
            reason: if w.answered {
                format!(
                    "etcd {to} answers but knows no leader after {} ms",
                    w.deadline_ms
                )
            } else {
                format!("etcd {to} did not answer within {} ms", w.deadline_ms)
            },
        };
    }
    StepProgress::Waiting
}

/// The local member's etcd, when it may not start.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FallbackFacts {
    /// The version of the binary the member was launched on.
    pub running: Version,
    /// The member answered since that launch (the binary runs).
    pub answered: bool,
    /// Its exits since that launch.
    pub exits: u64,
    /// An upgrade step gave up on it (its deadline passed).
    pub step_gave_up: bool,
    /// The binary the config names: its version, and whether it is the
    /// file the member runs. `None` when it cannot be found.
    pub configured: Option<(Version, bool)>,
    /// The last binary the member answered on, when its file still holds
    /// that version: its version, and whether it is the file the member
    /// runs.
    pub last_ran: Option<(Version, bool)>,
    /// The versions of the other members that answer.
    pub others: Vec<Version>,
}

/// Whether a member's etcd may be left for another binary at all (what
/// [`fallback`] asks first, and all the daemon looks at before it gathers
/// the rest): it never answered since its launch, and exited
/// [`FAILED_STARTS`] times or made its upgrade step give up.
pub fn may_fall_back(answered: bool, exits: u64, step_gave_up: bool) -> bool {
    !answered && (step_gave_up || exits >= FAILED_STARTS)
}

/// Another binary for a member whose etcd does not start.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Fallback {
    /// The configured binary: another file than the one that fails (the
    /// fix).
    Configured { reason: String },
    /// The last binary the member answered on.
    LastRan { reason: String },
}

/// Whether the member leaves the binary it was launched on, and for which.
/// Only a binary that never answered since its launch and either exited
/// [`FAILED_STARTS`] times or made its upgrade step give up is left; one
/// that answered once runs (its later exits are the supervisor's to
/// restart). It goes to the configured binary when that is another file
/// and a version the cluster accepts (`refusal`, against the other members
/// and the version the member last ran), else back to the last binary that
/// answered when that is another file; else it stays.
pub fn fallback(f: &FallbackFacts) -> Option<Fallback> {
    if !may_fall_back(f.answered, f.exits, f.step_gave_up) {
        return None;
    }
    let failing = if f.step_gave_up {
        format!("etcd {} never answered within its upgrade step", f.running)
    } else {
        format!(
            "etcd {} exited {} times since its launch without answering",
            f.running, f.exits
        )
    };
    if let Some((configured, false)) = f.configured {
        let mut versions = f.others.clone();
        versions.extend(f.last_ran.map(|(v, _)| v));
        if refusal(configured, &versions).is_none() {
            return Some(Fallback::Configured {
                reason: format!(
                    "{failing}; the configured binary is another one (etcd {configured}): the member moves to it"
                ),
            });
        }
    }
    match f.last_ran {
        Some((last, false)) => Some(Fallback::LastRan {
            reason: format!(
                "{failing}; the member goes back to etcd {last}, the last it answered on"
            ),
        }),
        _ => None,
    }
}

/// The default for [`UpgradeFacts::max_lag_entries`].
pub const DEFAULT_MAX_LAG_ENTRIES: u64 = 1000;

/// Whether `v` still has to move toward `target` in the direction
/// `upward`.
fn has_to_move(v: Version, target: Version, upward: bool) -> bool {
    if upward { v < target } else { v > target }
}

/// Why `target` cannot be rolled onto a cluster whose members run
/// `versions`, if it cannot.
pub fn refusal(target: Version, versions: &[Version]) -> Option<String> {
    let oldest = versions.iter().copied().min()?;
    let newest = versions.iter().copied().max()?;
    if target.major != oldest.major || target.major != newest.major {
        return Some(format!(
            "etcd {target} is another major version than the cluster's {oldest}..{newest}: eco rolls upgrades within one major version"
        ));
    }
    if target.minor_line() < newest.minor_line() {
        let procedure = if newest.minor_line() >= (3, 6) {
            format!(
                " (with eco paused: `etcdctl downgrade validate {t}` then `etcdctl downgrade enable {t}`, etcdctl 3.6 or newer, which drops the cluster version to {t} at once; then each member's binary, the leader last; {UNTESTED_ON_3_6})",
                t = format_args!("{}.{}", target.major, target.minor)
            )
        } else {
            String::new()
        };
        return Some(format!(
            "etcd {target} is older than the cluster's etcd {newest}: a minor-version downgrade needs etcd's downgrade procedure, which eco does not run{procedure}; point etcd.etcd_bin back at etcd {}.{}",
            newest.major, newest.minor
        ));
    }
    if target.minor > oldest.minor + 1 {
        return Some(format!(
            "etcd {target} is more than one minor version above the cluster's etcd {oldest}: etcd upgrades one minor version at a time; roll etcd {}.{} first",
            oldest.major,
            oldest.minor + 1
        ));
    }
    if target.minor_line() >= (3, 6) && oldest.minor_line() == (3, 5) && oldest < MIN_3_5_FOR_3_6 {
        return Some(format!(
            "etcd {target} needs every 3.5 member on {MIN_3_5_FOR_3_6} or later first (etcd's upgrade guide: older 3.5 releases can carry zombie members into 3.6; its current text asks for 3.5.32): the cluster runs etcd {oldest}; roll the newest 3.5 first ({UNTESTED_ON_3_6})"
        ));
    }
    None
}

/// The oldest 3.5 release a move to 3.6 starts from: 3.5.26 syncs the v3
/// membership store from the v2 one, so zombie members do not reach 3.6
/// (etcd's blog "zombie members upgrade"; its upgrade guide now asks for
/// 3.5.32, which `etcd_advisories` warns about below it).
pub const MIN_3_5_FOR_3_6: Version = Version::new(3, 5, 26);

/// What eco says of every rule about etcd 3.6: it was written from etcd's
/// upgrade and downgrade guides and table-tested, but no etcd 3.6 binary
/// is installable where eco is tested.
pub const UNTESTED_ON_3_6: &str = "untested on a 3.6 binary";

/// A step from 3.5 onto 3.6 restarts the member only once its data was
/// checked clean of v2-store content (etcd 3.6 refuses to start on it, and
/// panics on a v2 request left in the WAL): before, it waits for the
/// check; content found (or a check that cannot run) refuses the step.
/// Every reason of a step onto 3.6 says it is untested on a 3.6 binary.
fn gated_for_3_6(f: &UpgradeFacts, step: UpgradeStep) -> UpgradeStep {
    if f.target.minor_line() < (3, 6) {
        return step;
    }
    let untested = |reason: String| format!("{reason} ({UNTESTED_ON_3_6})");
    match step {
        UpgradeStep::Restart {
            from,
            to,
            first,
            reason,
        } if from.minor_line() < (3, 6) => match &f.v2store {
            None => UpgradeStep::Wait {
                reason: untested(format!(
                    "etcd {from} → {to}: checking this member's data for v2-store content etcd 3.6 refuses (etcdutl check v2store) before its step"
                )),
            },
            Some(Err(why)) => UpgradeStep::Refused {
                reason: untested(format!(
                    "etcd {from} → {to}: this member's data cannot move to 3.6: {why}; remove the v2 content (etcd's upgrade guide, \"check v2store\") and the roll goes on"
                )),
            },
            Some(Ok(())) => UpgradeStep::Restart {
                from,
                to,
                first,
                reason: untested(format!("{reason}; its data holds no v2-store content")),
            },
        },
        UpgradeStep::Restart {
            from,
            to,
            first,
            reason,
        } => UpgradeStep::Restart {
            from,
            to,
            first,
            reason: untested(reason),
        },
        UpgradeStep::Wait { reason } => UpgradeStep::Wait {
            reason: untested(reason),
        },
        UpgradeStep::TransferLeadership {
            member_id,
            name,
            reason,
        } => UpgradeStep::TransferLeadership {
            member_id,
            name,
            reason: untested(reason),
        },
        other => other,
    }
}

/// Whether a step onto `target` from `running` needs the v2-store check
/// of the local data first (3.5 → 3.6 and later).
pub fn needs_v2store_check(running: Version, target: Version) -> bool {
    running.minor_line() < (3, 6) && target.minor_line() >= (3, 6)
}

/// The next step for this instance's member.
pub fn next_step(f: &UpgradeFacts) -> UpgradeStep {
    let step = step_within_rules(f);
    if matches!(step, UpgradeStep::Nothing | UpgradeStep::Refused { .. }) {
        return step;
    }
    if let Some(crate::etcd_flags::Acceptance::Refused { reason }) =
        crate::etcd_flags::problems(&f.extra_flags, f.target)
            .into_iter()
            .next()
    {
        return UpgradeStep::Refused {
            reason: format!(
                "etcd.extra_flags: {reason}: etcd {} would exit at start; change etcd.extra_flags first",
                f.target
            ),
        };
    }
    gated_for_3_6(f, step)
}

/// [`next_step`] before the rules of a move onto 3.6.
fn step_within_rules(f: &UpgradeFacts) -> UpgradeStep {
    let Some(local) = f.members.iter().find(|m| m.id == f.local_member_id) else {
        return UpgradeStep::Nothing;
    };
    let Some(from) = local.version else {
        return UpgradeStep::Wait {
            reason: "the local member's etcd version is not known".into(),
        };
    };
    if from == f.target {
        return UpgradeStep::Nothing;
    }
    if let Some(m) = f.members.iter().find(|m| m.version.is_none()) {
        return UpgradeStep::Wait {
            reason: format!(
                "member {} does not answer: each upgrade step waits for every member",
                m.name
            ),
        };
    }
    let versions: Vec<Version> = f.members.iter().filter_map(|m| m.version).collect();
    if let Some(reason) = refusal(f.target, &versions) {
        return UpgradeStep::Refused { reason };
    }
    if let Some(m) = f.members.iter().find(|m| m.is_learner) {
        return UpgradeStep::Wait {
            reason: format!(
                "learner {} is joining: upgrade steps wait for a cluster of voters",
                m.name
            ),
        };
    }
    if let Some(id) = f
        .group
        .iter()
        .find(|id| !f.members.iter().any(|m| m.name == **id))
    {
        return UpgradeStep::Wait {
            reason: format!(
                "instance {id} has no member (removed, or not joined yet): upgrade steps wait for a member of every instance"
            ),
        };
    }
    if f.leader_id == 0 || !f.members.iter().any(|m| m.id == f.leader_id) {
        return UpgradeStep::Wait {
            reason: "no leader is known".into(),
        };
    }
    if let Some(m) = f
        .members
        .iter()
        .find(|m| f.leader_raft_index.saturating_sub(m.raft_applied_index) > f.max_lag_entries)
    {
        return UpgradeStep::Wait {
            reason: format!(
                "member {} has applied up to {}, the leader's log is at {}: waiting for it to catch up",
                m.name, m.raft_applied_index, f.leader_raft_index
            ),
        };
    }
    let upward = f.target > from;
    let mut to_move: Vec<&UpgradeMember> = f
        .members
        .iter()
        .filter(|m| m.id != f.leader_id)
        .filter(|m| m.version.is_some_and(|v| has_to_move(v, f.target, upward)))
        .collect();
    to_move.sort_by_key(|m| m.id);
    let first = !versions.contains(&f.target);
    let restart = |reason: String| UpgradeStep::Restart {
        from,
        to: f.target,
        first,
        reason,
    };
    if local.id != f.leader_id {
        return match to_move.first() {
            Some(m) if m.id == local.id => restart(format!(
                "etcd {from} → {}: this member's turn (followers in member-id order, the leader last){}",
                f.target,
                if first { "; a snapshot first" } else { "" }
            )),
            Some(m) => UpgradeStep::Wait {
                reason: format!(
                    "upgrading etcd {from} → {}: member {} goes first (followers in member-id order, the leader last)",
                    f.target, m.name
                ),
            },
            // Not reached: a follower that has to move is in the list.
            None => UpgradeStep::Nothing,
        };
    }
    if !to_move.is_empty() {
        let names: Vec<&str> = to_move.iter().map(|m| m.name.as_str()).collect();
        return UpgradeStep::Wait {
            reason: format!(
                "upgrading etcd {from} → {}: the leader's member goes last; still to move: {}",
                f.target,
                names.join(", ")
            ),
        };
    }
    let heir = f
        .members
        .iter()
        .filter(|m| m.id != local.id)
        .max_by_key(|m| {
            (
                m.version == Some(f.target),
                m.raft_applied_index,
                std::cmp::Reverse(m.id),
            )
        });
    match heir {
        Some(m) => UpgradeStep::TransferLeadership {
            member_id: m.id,
            name: m.name.clone(),
            reason: format!(
                "etcd {from} → {}: every follower has moved; the leader hands leadership to {} before its own restart",
                f.target, m.name
            ),
        },
        None => restart(format!(
            "etcd {from} → {}: the only member restarts in place{}",
            f.target,
            if first { "; a snapshot first" } else { "" }
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const V34: Version = Version::new(3, 4, 23);
    const V35: Version = Version::new(3, 5, 1);

    fn member(id: u64, version: Option<Version>) -> UpgradeMember {
        UpgradeMember {
            id,
            name: format!("eco-{id}"),
            is_learner: false,
            version,
            raft_applied_index: 100,
        }
    }

    /// Three members on `versions`, member 3 the leader, this instance
    /// member `local`, the target 3.5.1.
    fn facts(local: u64, versions: [Option<Version>; 3]) -> UpgradeFacts {
        UpgradeFacts {
            local_member_id: local,
            leader_id: 3,
            leader_raft_index: 100,
            target: V35,
            members: (1..=3)
                .map(|i| member(i, versions[i as usize - 1]))
                .collect(),
            group: (1..=3).map(|i| format!("eco-{i}")).collect(),
            max_lag_entries: DEFAULT_MAX_LAG_ENTRIES,
            v2store: None,
            extra_flags: Vec::new(),
        }
    }

    fn kind(s: &UpgradeStep) -> &'static str {
        match s {
            UpgradeStep::Nothing => "nothing",
            UpgradeStep::Refused { .. } => "refused",
            UpgradeStep::Wait { .. } => "wait",
            UpgradeStep::TransferLeadership { .. } => "transfer",
            UpgradeStep::Restart { first: true, .. } => "restart first",
            UpgradeStep::Restart { first: false, .. } => "restart",
        }
    }

    /// The whole roll of a three-member cluster, step by step: each row is
    /// (this member, every member's version) → what this member does.
    #[test]
    fn rolls_followers_in_id_order_and_the_leader_last() {
        let s = Some(V34);
        let n = Some(V35);
        let table: &[(u64, [Option<Version>; 3], &str)] = &[
            // Nobody moved: member 1's turn, with a snapshot first.
            (1, [s, s, s], "restart first"),
            (2, [s, s, s], "wait"),
            (3, [s, s, s], "wait"),
            // Member 1 moved: member 2's turn.
            (1, [n, s, s], "nothing"),
            (2, [n, s, s], "restart"),
            (3, [n, s, s], "wait"),
            // Both followers moved: the leader hands leadership away.
            (3, [n, n, s], "transfer"),
            // Member 1 restarting (no answer): everyone waits.
            (2, [None, s, s], "wait"),
            (3, [None, n, s], "wait"),
        ];
        for (local, versions, want) in table {
            let got = next_step(&facts(*local, *versions));
            assert_eq!(kind(&got), *want, "member {local}, {versions:?}: {got:?}");
        }
    }

    #[test]
    fn the_old_leader_restarts_once_it_is_a_follower() {
        let mut f = facts(3, [Some(V35), Some(V35), Some(V34)]);
        f.leader_id = 1;
        assert_eq!(kind(&next_step(&f)), "restart");
    }

    #[test]
    fn leadership_goes_to_the_most_caught_up_follower_on_the_target() {
        let mut f = facts(3, [Some(V35), Some(V35), Some(V34)]);
        f.members[0].raft_applied_index = 95;
        match next_step(&f) {
            UpgradeStep::TransferLeadership { member_id, .. } => assert_eq!(member_id, 2),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_cluster_of_one_restarts_in_place_with_a_snapshot_first() {
        let f = UpgradeFacts {
            local_member_id: 7,
            leader_id: 7,
            leader_raft_index: 10,
            target: V35,
            members: vec![member(7, Some(V34))],
            group: vec!["eco-7".into()],
            max_lag_entries: 10,
            v2store: None,
            extra_flags: Vec::new(),
        };
        assert_eq!(kind(&next_step(&f)), "restart first");
    }

    #[test]
    fn waits_for_a_lagging_member_a_learner_and_a_leader() {
        let mut lag = facts(1, [Some(V34), Some(V34), Some(V34)]);
        lag.leader_raft_index = 100 + DEFAULT_MAX_LAG_ENTRIES;
        lag.members[2].raft_applied_index = lag.leader_raft_index;
        assert_eq!(kind(&next_step(&lag)), "restart first", "at the limit");
        lag.leader_raft_index += 1;
        lag.members[2].raft_applied_index = lag.leader_raft_index;
        let got = next_step(&lag);
        assert!(
            matches!(&got, UpgradeStep::Wait { reason } if reason.contains("catch up")),
            "{got:?}"
        );

        let mut learner = facts(1, [Some(V34), Some(V34), Some(V34)]);
        learner.members[2].is_learner = true;
        let got = next_step(&learner);
        assert!(
            matches!(&got, UpgradeStep::Wait { reason } if reason.contains("learner")),
            "{got:?}"
        );

        let mut leaderless = facts(1, [Some(V34), Some(V34), Some(V34)]);
        leaderless.leader_id = 0;
        assert_eq!(kind(&next_step(&leaderless)), "wait");
    }

    #[test]
    fn refuses_jumps_etcd_does_not_support() {
        let v = |s: &str| Version::parse(s).unwrap();
        let table: &[(&str, &[&str], Option<&str>)] = &[
            ("3.5.1", &["3.4.23", "3.4.23"], None),
            ("3.5.1", &["3.4.23", "3.5.1"], None),
            ("3.4.23", &["3.4.20"], None),
            ("3.4.20", &["3.4.23"], None),
            ("3.6.0", &["3.4.23", "3.5.1"], Some("more than one minor")),
            ("3.6.0", &["3.4.23"], Some("roll etcd 3.5 first")),
            ("3.4.23", &["3.5.1", "3.5.1"], Some("downgrade")),
            ("3.4.23", &["3.4.23", "3.5.1"], Some("downgrade")),
            ("4.0.0", &["3.5.1"], Some("major")),
        ];
        for (target, versions, want) in table {
            let versions: Vec<Version> = versions.iter().map(|s| v(s)).collect();
            let got = refusal(v(target), &versions);
            match (want, &got) {
                (None, None) => {}
                (Some(w), Some(r)) => assert!(r.contains(w), "{target} over {versions:?}: {r}"),
                _ => panic!("{target} over {versions:?}: {got:?}, want {want:?}"),
            }
        }
        // And through next_step: nothing restarts.
        let mut f = facts(1, [Some(V34), Some(V34), Some(V34)]);
        f.target = Version::new(3, 6, 0);
        assert_eq!(kind(&next_step(&f)), "refused");
    }

    #[test]
    fn a_member_on_the_target_does_nothing_and_an_unknown_local_version_waits() {
        assert_eq!(
            kind(&next_step(&facts(2, [None, Some(V35), Some(V34)]))),
            "nothing"
        );
        assert_eq!(
            kind(&next_step(&facts(1, [None, Some(V34), Some(V34)]))),
            "wait"
        );
        let mut absent = facts(1, [Some(V34), Some(V34), Some(V34)]);
        absent.local_member_id = 9;
        assert_eq!(kind(&next_step(&absent)), "nothing");
    }

    #[test]
    fn a_restarted_eco_relaunches_a_version_that_ran() {
        let v352 = Version::new(3, 5, 2);
        // (configured, last ran, still there, never answered) → launches
        // the last run, with a warning.
        type Row = (Version, Option<Version>, bool, Option<Version>, bool, bool);
        let table: &[Row] = &[
            // In the middle of a roll: the version it ran, its turn comes.
            (V35, Some(V34), true, None, true, false),
            // The binary that ran is gone: the configured one, out of turn.
            (V35, Some(V34), false, None, false, true),
            (V35, Some(V35), true, None, false, false),
            (V35, None, false, None, false, false),
            // A step whose etcd 3.5.2 never answered: back on 3.5.1.
            (v352, Some(V35), true, Some(v352), true, false),
            // ... whose binary is gone: nothing else is known to run.
            (v352, Some(V35), false, Some(v352), false, true),
            // The link fixed after the failed step (back to 3.5.1).
            (V35, Some(V35), true, Some(v352), false, false),
            // Nothing ever answered on this data.
            (v352, None, false, Some(v352), false, true),
        ];
        for (configured, ran, there, never, last_run, warns) in table {
            let (choice, warning) = launch_at_start(*configured, *ran, *there, *never);
            assert_eq!(
                matches!(choice, LaunchAtStart::LastRun { .. }),
                *last_run,
                "{configured} {ran:?} {there} {never:?}: {choice:?}"
            );
            assert_eq!(
                warning.is_some(),
                *warns,
                "{configured} {ran:?} {there} {never:?}: {warning:?}"
            );
        }
        let (_, warning) = launch_at_start(V35, Some(V34), false, None);
        assert!(warning.is_some_and(|w| w.contains("out of turn")));
        let (choice, _) = launch_at_start(v352, Some(V35), true, Some(v352));
        assert!(
            matches!(&choice, LaunchAtStart::LastRun { reason } if reason.contains("never answered")),
            "{choice:?}"
        );
    }

    #[test]
    fn the_step_deadline_is_at_most_half_the_unhealthy_member_ttl() {
        let table = [
            (300_000, 60_000),
            (120_000, 60_000),
            (100_000, 50_000),
            (5_000, 2_500),
        ];
        for (ttl, want) in table {
            assert_eq!(step_deadline_ms(ttl), want, "ttl {ttl}");
        }
    }

    #[test]
    fn a_step_is_done_on_an_answer_with_a_leader_on_the_new_version() {
        let v352 = Version::new(3, 5, 2);
        let w = |elapsed_ms, answer, answered, exits| StepWatch {
            to: v352,
            elapsed_ms,
            deadline_ms: 2_500,
            answer,
            answered,
            exits,
        };
        // (case, watch, progress)
        let table = [
            ("no answer yet", w(100, None, false, 0), "waiting"),
            ("exited twice", w(600, None, false, 2), "waiting"),
            ("exited three times", w(700, None, false, 3), "failed"),
            (
                "answers without a leader",
                w(1_000, Some((Some(v352), false)), true, 0),
                "waiting",
            ),
            (
                "answered once, then exits",
                w(1_000, None, true, 5),
                "waiting",
            ),
            (
                "answers with a leader",
                w(1_000, Some((Some(v352), true)), true, 0),
                "done",
            ),
            (
                "answers on another version",
                w(1_000, Some((Some(V35), true)), true, 0),
                "failed",
            ),
            (
                "no answer by the deadline",
                w(2_500, None, false, 1),
                "failed",
            ),
            (
                "no leader by the deadline",
                w(2_500, Some((Some(v352), false)), true, 0),
                "failed",
            ),
        ];
        for (case, watch, want) in table {
            let got = step_progress(&watch);
            let kind = match &got {
                StepProgress::Waiting => "waiting",
                StepProgress::Done => "done",
                StepProgress::Failed { .. } => "failed",
            };
            assert_eq!(kind, want, "{case}: {got:?}");
        }
    }

    /// Which binary a member whose etcd may not start goes to.
    #[test]
    fn a_binary_that_never_answered_is_left_for_the_fix_or_the_last_that_ran() {
        let v352 = Version::new(3, 5, 2);
        let f = |answered, exits, gave_up, configured, last_ran| FallbackFacts {
            running: v352,
            answered,
            exits,
            step_gave_up: gave_up,
            configured,
            last_ran,
            others: vec![V35, V35],
        };
        // (case, facts, where to)
        let table = [
            (
                "a failed step: the configured binary is the one that fails",
                f(false, 3, false, Some((v352, true)), Some((V35, false))),
                "last ran",
            ),
            (
                "a step that gave up on a hung etcd",
                f(false, 0, true, Some((v352, true)), Some((V35, false))),
                "last ran",
            ),
            (
                "the link fixed: another configured file",
                f(false, 4, false, Some((V35, false)), Some((V35, false))),
                "configured",
            ),
            (
                "the link fixed, the last one gone",
                f(false, 4, false, Some((V35, false)), None),
                "configured",
            ),
            (
                "nothing else to go to",
                f(false, 9, false, Some((v352, true)), None),
                "stays",
            ),
            (
                "it answered once: it runs",
                f(true, 9, false, Some((V35, false)), Some((V35, false))),
                "stays",
            ),
            (
                "two exits are not yet a failure",
                f(false, 2, false, Some((V35, false)), Some((V35, false))),
                "stays",
            ),
            (
                "a configured jump the cluster refuses",
                f(
                    false,
                    3,
                    false,
                    Some((Version::new(3, 7, 0), false)),
                    Some((V35, false)),
                ),
                "last ran",
            ),
            (
                "the configured binary cannot be found",
                f(false, 3, false, None, Some((V35, false))),
                "last ran",
            ),
        ];
        for (case, facts, want) in table {
            let got = fallback(&facts);
            let kind = match &got {
                None => "stays",
                Some(Fallback::Configured { .. }) => "configured",
                Some(Fallback::LastRan { .. }) => "last ran",
            };
            assert_eq!(kind, want, "{case}: {got:?}");
        }
    }

    #[test]
    fn a_step_waits_for_a_member_of_every_instance() {
        // eco-1's member was removed (its step failed): the others do not
        // move on, though both answer on the old version.
        let mut f = facts(2, [Some(V34), Some(V34), Some(V34)]);
        f.members.remove(0);
        let got = next_step(&f);
        assert!(
            matches!(&got, UpgradeStep::Wait { reason } if reason.contains("eco-1 has no member")),
            "{got:?}"
        );
    }

    /// Every instance computes the same turn: in any state of the roll at
    /// most one member is told to restart or hand leadership away.
    #[test]
    fn at_most_one_member_acts_in_any_state() {
        let options = [Some(V34), Some(V35), None];
        for a in options {
            for b in options {
                for c in options {
                    let versions = [a, b, c];
                    let acting = (1..=3)
                        .filter(|l| {
                            matches!(
                                next_step(&facts(*l, versions)),
                                UpgradeStep::Restart { .. }
                                    | UpgradeStep::TransferLeadership { .. }
                            )
                        })
                        .count();
                    assert!(acting <= 1, "{versions:?}: {acting} members act");
                }
            }
        }
    }

    fn v(text: &str) -> Version {
        Version::parse(text).expect("a version")
    }

    /// Three members on `versions`, eco-1 (member 1, a follower) the
    /// local one, the config naming `target`.
    fn toward(
        target: &str,
        versions: [&str; 3],
        v2store: Option<Result<(), String>>,
    ) -> UpgradeStep {
        let mut f = facts(
            1,
            [
                Some(v(versions[0])),
                Some(v(versions[1])),
                Some(v(versions[2])),
            ],
        );
        f.target = v(target);
        f.v2store = v2store;
        next_step(&f)
    }

    #[test]
    fn the_rules_of_a_move_onto_3_6() {
        let clean = Some(Ok(()));
        for (what, target, versions, v2, want, says) in [
            (
                "from 3.5.25: refused, newest 3.5 first",
                "3.6.0",
                ["3.5.25", "3.5.30", "3.5.30"],
                clean.clone(),
                "refused",
                "3.5.26 or later",
            ),
            (
                "from 3.5.26 and checked clean: the step",
                "3.6.0",
                ["3.5.26", "3.5.30", "3.5.30"],
                clean.clone(),
                "restart first",
                "no v2-store content",
            ),
            (
                "not checked yet: wait",
                "3.6.0",
                ["3.5.30", "3.5.30", "3.5.30"],
                None,
                "wait",
                "etcdutl check v2store",
            ),
            (
                "v2 content: refused",
                "3.6.0",
                ["3.5.30", "3.5.30", "3.5.30"],
                Some(Err("detected custom content in v2store".into())),
                "refused",
                "detected custom content",
            ),
            (
                "3.4 to 3.6: one minor at a time",
                "3.6.0",
                ["3.4.23", "3.4.23", "3.4.23"],
                clean.clone(),
                "refused",
                "one minor version at a time",
            ),
            (
                "3.6 down to 3.5: etcd's downgrade procedure",
                "3.5.30",
                ["3.6.0", "3.6.0", "3.6.0"],
                clean.clone(),
                "refused",
                "etcdctl downgrade enable 3.5",
            ),
            (
                "a 3.6 patch: no check needed",
                "3.6.1",
                ["3.6.0", "3.6.0", "3.6.0"],
                None,
                "restart first",
                UNTESTED_ON_3_6,
            ),
            (
                "within 3.5 nothing changes",
                "3.5.30",
                ["3.5.16", "3.5.16", "3.5.16"],
                None,
                "restart first",
                "this member's turn",
            ),
        ] {
            let step = toward(target, versions, v2);
            assert_eq!(kind(&step), want, "{what}: {step:?}");
            let reason = match &step {
                UpgradeStep::Refused { reason }
                | UpgradeStep::Wait { reason }
                | UpgradeStep::Restart { reason, .. } => reason.clone(),
                other => panic!("{what}: {other:?}"),
            };
            assert!(reason.contains(says), "{what}: {reason}");
            // The minor-jump refusal is eco's own rule, run on real
            // binaries (tests/upgrade.rs refuses a 3.7): no 3.6 caveat.
            let jump = versions[0].starts_with("3.4");
            if !jump && (target.starts_with("3.6") || versions[0].starts_with("3.6")) {
                assert!(reason.contains(UNTESTED_ON_3_6), "{what}: {reason}");
            } else {
                assert!(!reason.contains(UNTESTED_ON_3_6), "{what}: {reason}");
            }
        }
    }

    #[test]
    fn the_v2store_check_is_needed_only_into_3_6() {
        assert!(needs_v2store_check(v("3.5.30"), v("3.6.0")));
        assert!(!needs_v2store_check(v("3.6.0"), v("3.6.1")));
        assert!(!needs_v2store_check(v("3.5.16"), v("3.5.30")));
        assert!(!needs_v2store_check(v("3.4.23"), v("3.5.16")));
    }

    #[test]
    fn a_step_onto_a_release_that_refuses_an_extra_flag_is_refused() {
        let mut f = facts(1, [Some(V34), Some(V34), Some(V34)]);
        f.extra_flags = vec!["--log-package-levels=etcdserver=DEBUG".into()];
        match next_step(&f) {
            UpgradeStep::Refused { reason } => {
                assert!(
                    reason.contains("etcd.extra_flags") && reason.contains("--log-package-levels"),
                    "{reason}"
                )
            }
            other => panic!("{other:?}"),
        }
        f.extra_flags = vec!["--snapshot-count=5000".into()];
        assert!(matches!(next_step(&f), UpgradeStep::Restart { .. }));
    }
}
