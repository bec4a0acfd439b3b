//! Quorum arithmetic, once for every part: the planner's membership
//! changes, the fenced protocol's majorities (promises, acceptances, the
//! detector's quorum), the snapshot schedule, self-replacement, zone
//! spread, and the harnesses' invariants.

/// Votes needed among `voters`.
pub fn quorum(voters: usize) -> usize {
    voters / 2 + 1
}

/// Whether removing one voter is possible and keeps a healthy quorum: the
/// removal must commit (the healthy voters are a quorum of the current
/// voters — etcd needs that to apply any change), and after it the
/// remaining healthy voters must be a quorum of the remaining voters.
pub fn removal_keeps_quorum(
    voters: usize,
    healthy_voters: usize,
    removed_is_healthy: bool,
) -> bool {
    if voters <= 1 || healthy_voters < quorum(voters) {
        return false;
    }
    let remaining = voters - 1;
    let healthy_remaining = healthy_voters - usize::from(removed_is_healthy && healthy_voters > 0);
    healthy_remaining >= quorum(remaining)
}
