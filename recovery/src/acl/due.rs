//! Whether this instance reconciles etcd's ACL now: only the instance
//! whose etcd member leads (the single actor for cluster-wide changes, as
//! for membership), only when eco manages authentication, and then when
//! the desired ACL changed (the config file or a password file), when it
//! has not reconciled since it began to lead, after a failure once
//! [`RETRY_AFTER_MS`] passed, and every [`RECHECK_EVERY_MS`] to undo
//! changes made by hand.

/// A failed reconcile is tried again after this long.
pub const RETRY_AFTER_MS: u64 = 5_000;

/// A reconciled ACL is read again after this long (drift made by hand).
pub const RECHECK_EVERY_MS: u64 = 60_000;

/// What [`due`] reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DueFacts {
    /// `[auth] enabled = true`.
    pub managed: bool,
    /// This instance is ready and its etcd member is the raft leader.
    pub leader: bool,
    /// The desired ACL differs from the one this instance last reconciled
    /// (or it never reconciled one).
    pub desired_changed: bool,
    /// Since this instance's last complete reconcile while leading; `None`
    /// when it has not completed one since it began to lead.
    pub since_success_ms: Option<u64>,
    /// Since its last failed attempt, when that is the latest attempt.
    pub since_failure_ms: Option<u64>,
}

/// The answer, with its reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Due {
    Now(&'static str),
    Not(&'static str),
}

pub fn due(f: &DueFacts) -> Due {
    if !f.managed {
        return Due::Not("eco does not manage authentication ([auth] enabled = false)");
    }
    if !f.leader {
        return Due::Not("the instance beside the etcd leader reconciles the ACL");
    }
    if f.since_failure_ms.is_some_and(|ms| ms < RETRY_AFTER_MS) {
        return Due::Not("the last attempt failed; trying again shortly");
    }
    if f.since_failure_ms.is_some() {
        return Due::Now("trying again after a failure");
    }
    if f.desired_changed {
        return Due::Now("the ACL the config describes changed");
    }
    match f.since_success_ms {
        None => Due::Now("this instance leads and has not reconciled the ACL yet"),
        Some(ms) if ms >= RECHECK_EVERY_MS => Due::Now("periodic check for changes made by hand"),
        Some(_) => Due::Not("the ACL was reconciled recently"),
    }
}
