//! Since when each member has been unhealthy, a learner, a voter after
//! its promotion — what one instance has seen across its passes, turned
//! into the times the planner's rules count from. Observation memory, not
//! a decision: the TTLs are applied in `recovery::planner`.

use crate::etcd::members::Member;
use recovery::planner::MemberFacts;
use std::collections::{HashMap, HashSet};

#[derive(Debug, Default)]
pub struct MemberClocks {
    unhealthy_since: HashMap<u64, u64>,
    learner_since: HashMap<u64, u64>,
    /// When each member was seen to turn from a learner into a voter.
    promoted_at: HashMap<u64, u64>,
}

impl MemberClocks {
    /// The planner's facts for `list` at `now_ms`, `healthy` saying which
    /// members answered with a leader; members no longer listed are
    /// forgotten.
    pub fn facts(
        &mut self,
        list: &[Member],
        healthy: impl Fn(u64) -> bool,
        now_ms: u64,
    ) -> Vec<MemberFacts> {
        let mut out = Vec::with_capacity(list.len());
        for m in list {
            let healthy = healthy(m.id);
            if healthy {
                self.unhealthy_since.remove(&m.id);
            } else {
                self.unhealthy_since.entry(m.id).or_insert(now_ms);
            }
            if m.is_learner {
                self.learner_since.entry(m.id).or_insert(now_ms);
            } else if self.learner_since.remove(&m.id).is_some() {
                self.promoted_at.insert(m.id, now_ms);
            }
            out.push(MemberFacts {
                id: m.id,
                name: m.name.clone(),
                peer_urls: m.peer_urls.clone(),
                is_learner: m.is_learner,
                healthy,
                unhealthy_since_ms: self.unhealthy_since.get(&m.id).copied(),
                learner_since_ms: self.learner_since.get(&m.id).copied(),
                promoted_at_ms: self.promoted_at.get(&m.id).copied(),
            });
        }
        let present: HashSet<u64> = list.iter().map(|m| m.id).collect();
        self.unhealthy_since.retain(|id, _| present.contains(id));
        self.learner_since.retain(|id, _| present.contains(id));
        self.promoted_at.retain(|id, _| present.contains(id));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(id: u64, is_learner: bool) -> Member {
        Member {
            id,
            name: format!("m{id}"),
            peer_urls: Vec::new(),
            client_urls: Vec::new(),
            is_learner,
        }
    }

    /// A learner that never answers (restoring, or hidden by etcd's
    /// authentication) keeps its first unhealthy time across its promotion;
    /// the promotion is recorded when it is first seen as a voter, and only
    /// for a member seen as a learner before.
    #[test]
    fn a_promotion_is_recorded_when_a_learner_is_first_seen_as_a_voter() {
        let mut clocks = MemberClocks::default();
        let sick = |_| false;
        let f = clocks.facts(&[member(1, false), member(2, true)], sick, 10);
        assert_eq!(f[1].learner_since_ms, Some(10));
        assert_eq!(f[1].unhealthy_since_ms, Some(10));
        assert_eq!(f[0].promoted_at_ms, None, "never seen as a learner");

        let f = clocks.facts(&[member(1, false), member(2, false)], sick, 20);
        assert_eq!(f[1].learner_since_ms, None);
        assert_eq!(f[1].promoted_at_ms, Some(20));
        assert_eq!(f[1].unhealthy_since_ms, Some(10), "kept: a fact");

        let f = clocks.facts(&[member(1, false), member(2, false)], sick, 30);
        assert_eq!(f[1].promoted_at_ms, Some(20), "the first sight stays");

        let f = clocks.facts(&[member(1, false)], sick, 40);
        assert_eq!(f.len(), 1);
        let f = clocks.facts(&[member(1, false), member(2, false)], |_| true, 50);
        assert_eq!(f[1].promoted_at_ms, None, "a member listed again is new");
        assert_eq!(f[1].unhealthy_since_ms, None);
    }
}
