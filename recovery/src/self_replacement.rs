//! Self-replacement: whether this instance asks its provider to replace it
//! (on AWS, `SetInstanceHealth Unhealthy`: the group terminates it through
//! its lifecycle hook and launches a new one, which joins as any new
//! instance does). Pure.
//!
//! An instance whose member has been unusable (etcd not running, not
//! answering, or answering without a leader) for
//! [`ReplacementFacts::after_ms`] while the rest of the cluster is healthy
//! is better replaced than left: a fresh machine with an empty disk joins
//! in minutes, where a sick one may stay sick for good. Only when:
//!
//! - it is turned on (`recovery.replace_unusable_after`), and the instance
//!   is in the group, not leaving, and nobody paused eco;
//! - its member was in the member list during the episode: an instance
//!   still waiting for its first join (its turn, a healthy cluster) is the
//!   planner's business, not broken; one whose member was removed since
//!   (eco's own repair: an unhealthy member removed to rejoin clean) and
//!   that still cannot run is;
//! - every other voter answers with a leader, and they are a quorum of
//!   the voters *with* this one: replacing it loses nothing and leaves a
//!   healthy cluster (a cluster of one never asks — its disk may be the
//!   only copy);
//! - once per unusable episode (usable again resets it).
//!
//! What it does not do: replace anything itself, or judge the member's
//! data (a member that is back is usable, whatever happened).

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplacementFacts {
    /// `recovery.replace_unusable_after`; `None`: never ask.
    pub after_ms: Option<u64>,
    /// How long the local member has been unusable; `None`: usable now.
    pub unusable_for_ms: Option<u64>,
    /// Why it is unusable (for the reason).
    pub unusable_because: String,
    pub in_group: bool,
    /// This instance's member was in the member list (voter or learner)
    /// during this unusable episode.
    pub was_member: bool,
    pub leaving: bool,
    pub paused: bool,
    /// Voters of the member list other than this instance's member.
    pub other_voters: usize,
    /// Of those, the ones that answer with a leader.
    pub healthy_other_voters: usize,
    /// This instance's member is a voter in the list.
    pub local_is_voter: bool,
    /// The provider was asked already in this episode.
    pub asked: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReplacementStep {
    Nothing,
    Wait { reason: String },
    Ask { reason: String },
}

pub fn decide(f: &ReplacementFacts) -> ReplacementStep {
    let (Some(after), Some(unusable)) = (f.after_ms, f.unusable_for_ms) else {
        return ReplacementStep::Nothing;
    };
    if f.asked || !f.in_group || !f.was_member || f.leaving || f.paused {
        return ReplacementStep::Nothing;
    }
    if unusable < after {
        return ReplacementStep::Wait {
            reason: format!(
                "the local member has been unusable for {} s ({}); its instance is replaced at {} s if the rest of the cluster stays healthy",
                unusable / 1000,
                f.unusable_because,
                after / 1000
            ),
        };
    }
    if f.other_voters == 0 {
        return ReplacementStep::Wait {
            reason: "no other voter: this instance's disk may hold the only copy of the data, it is never replaced by eco".into(),
        };
    }
    let voters = f.other_voters + usize::from(f.local_is_voter);
    let quorum = crate::quorum::quorum(voters);
    if f.healthy_other_voters < f.other_voters || f.healthy_other_voters < quorum {
        return ReplacementStep::Wait {
            reason: format!(
                "the local member is unusable ({}), but only {} of the {} other voters are healthy: replacing this instance waits for the rest of the cluster",
                f.unusable_because, f.healthy_other_voters, f.other_voters
            ),
        };
    }
    ReplacementStep::Ask {
        reason: format!(
            "the local member has been unusable for {} s ({}) while the {} other voters are healthy",
            unusable / 1000,
            f.unusable_because,
            f.other_voters
        ),
    }
}

/// A request the provider did not take is made again after this long.
pub const RETRY_AFTER_MS: u64 = 60_000;

/// The current unusable episode, kept by the daemon from pass to pass on
/// the pass clock: since when the member has been unusable (timed only
/// from when it was in the member list), whether the provider was asked,
/// and when a request last failed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Episode {
    since_ms: Option<u64>,
    asked: bool,
    failed_at_ms: Option<u64>,
}

/// What an episode says of this pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EpisodeNow {
    /// The member is usable: the episode is over (reset).
    Usable,
    /// A request failed less than [`RETRY_AFTER_MS`] ago: nothing this pass.
    RetryLater,
    /// Unusable: the facts [`decide`] needs from the episode.
    Unusable {
        /// Its member was in the list during the episode.
        was_member: bool,
        /// How long it has been unusable (`None`: never a member, not timed).
        unusable_for_ms: Option<u64>,
        /// The provider was asked already in this episode.
        asked: bool,
    },
}

impl Episode {
    /// This pass at `now_ms`: `usable` (the member answers with a
    /// leader), `is_member` (its member is in the list now). An episode
    /// is timed from when the member is in the list and unusable, and goes
    /// on if eco's own repair removes it meanwhile; an instance that was
    /// never a member is not timed (its join is the planner's).
    pub fn observe(&mut self, now_ms: u64, usable: bool, is_member: bool) -> EpisodeNow {
        if usable {
            *self = Episode::default();
            return EpisodeNow::Usable;
        }
        let was_member = is_member || self.since_ms.is_some();
        let since = was_member.then(|| *self.since_ms.get_or_insert(now_ms));
        if self
            .failed_at_ms
            .is_some_and(|at| now_ms.saturating_sub(at) < RETRY_AFTER_MS)
        {
            return EpisodeNow::RetryLater;
        }
        EpisodeNow::Unusable {
            was_member,
            unusable_for_ms: since.map(|at| now_ms.saturating_sub(at)),
            asked: self.asked,
        }
    }

    /// The provider took the request (or said it cannot): not again in
    /// this episode.
    pub fn asked(&mut self) {
        self.asked = true;
    }

    /// The request failed at `now_ms`: again after [`RETRY_AFTER_MS`].
    pub fn failed(&mut self, now_ms: u64) {
        self.failed_at_ms = Some(now_ms);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_episode_is_timed_from_membership_asks_once_and_retries_after_a_failure() {
        let mut e = Episode::default();
        // Never a member: not timed.
        assert_eq!(
            e.observe(0, false, false),
            EpisodeNow::Unusable {
                was_member: false,
                unusable_for_ms: None,
                asked: false
            }
        );
        // A member, unusable from 1 000 on.
        assert_eq!(
            e.observe(1_000, false, true),
            EpisodeNow::Unusable {
                was_member: true,
                unusable_for_ms: Some(0),
                asked: false
            }
        );
        // Removed by eco's repair meanwhile: the episode goes on.
        assert_eq!(
            e.observe(31_000, false, false),
            EpisodeNow::Unusable {
                was_member: true,
                unusable_for_ms: Some(30_000),
                asked: false
            }
        );
        // A failed request: nothing for a minute, then asked again.
        e.failed(31_000);
        assert_eq!(e.observe(60_000, false, false), EpisodeNow::RetryLater);
        assert!(matches!(
            e.observe(91_000, false, false),
            EpisodeNow::Unusable {
                unusable_for_ms: Some(90_000),
                asked: false,
                ..
            }
        ));
        e.asked();
        assert!(matches!(
            e.observe(92_000, false, false),
            EpisodeNow::Unusable { asked: true, .. }
        ));
        // Usable again: a new episode starts from nothing.
        assert_eq!(e.observe(93_000, true, true), EpisodeNow::Usable);
        assert_eq!(
            e.observe(94_000, false, true),
            EpisodeNow::Unusable {
                was_member: true,
                unusable_for_ms: Some(0),
                asked: false
            }
        );
    }

    fn facts() -> ReplacementFacts {
        ReplacementFacts {
            after_ms: Some(600_000),
            unusable_for_ms: Some(600_000),
            unusable_because: "etcd does not answer".into(),
            in_group: true,
            was_member: true,
            leaving: false,
            paused: false,
            other_voters: 2,
            healthy_other_voters: 2,
            local_is_voter: true,
            asked: false,
        }
    }

    fn kind(f: &ReplacementFacts) -> &'static str {
        match decide(f) {
            ReplacementStep::Nothing => "nothing",
            ReplacementStep::Wait { .. } => "wait",
            ReplacementStep::Ask { .. } => "ask",
        }
    }

    #[test]
    fn asks_only_when_long_unusable_and_the_rest_is_a_healthy_quorum() {
        type Edit = fn(&mut ReplacementFacts);
        let table: &[(&str, Edit, &str)] = &[
            ("long unusable, others healthy", |_| {}, "ask"),
            ("turned off", |f| f.after_ms = None, "nothing"),
            ("usable", |f| f.unusable_for_ms = None, "nothing"),
            (
                "not long enough",
                |f| f.unusable_for_ms = Some(599_999),
                "wait",
            ),
            ("asked already", |f| f.asked = true, "nothing"),
            ("not in the group", |f| f.in_group = false, "nothing"),
            // Waiting to join while the others form or let it in.
            (
                "never a member yet",
                |f| {
                    f.was_member = false;
                    f.local_is_voter = false;
                    f.other_voters = 1;
                    f.healthy_other_voters = 1;
                },
                "nothing",
            ),
            ("leaving", |f| f.leaving = true, "nothing"),
            ("paused", |f| f.paused = true, "nothing"),
            (
                "the only member",
                |f| {
                    f.other_voters = 0;
                    f.healthy_other_voters = 0;
                },
                "wait",
            ),
            ("another voter down", |f| f.healthy_other_voters = 1, "wait"),
            // Two voters: the other alone is not a quorum of two.
            (
                "one other voter",
                |f| {
                    f.other_voters = 1;
                    f.healthy_other_voters = 1;
                },
                "wait",
            ),
            // A learner (not a voter) among three healthy voters.
            (
                "a learner",
                |f| {
                    f.local_is_voter = false;
                    f.other_voters = 3;
                    f.healthy_other_voters = 3;
                },
                "ask",
            ),
            // Removed by eco's repair and still unusable: the other two
            // voters are the whole cluster now.
            (
                "removed since",
                |f| {
                    f.local_is_voter = false;
                },
                "ask",
            ),
            // Five voters, all four others healthy.
            (
                "five voters",
                |f| {
                    f.other_voters = 4;
                    f.healthy_other_voters = 4;
                },
                "ask",
            ),
        ];
        for (what, edit, want) in table {
            let mut f = facts();
            edit(&mut f);
            assert_eq!(kind(&f), *want, "{what}: {:?}", decide(&f));
        }
    }
}
