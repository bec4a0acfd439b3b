//! Since when each instance has been alive in gossip without a break, on
//! the pass clock (`Observed::now_ms`). The planner's TTL for an unhealthy
//! voter runs only while its instance is alive: the time a partition cut
//! it off does not count, so a healed instance gets the whole TTL to catch
//! up before the leader removes its member.

use std::collections::{BTreeMap, BTreeSet};

/// The first pass of each instance's current live streak.
#[derive(Debug, Default)]
pub struct LiveSince {
    since: BTreeMap<String, u64>,
}

impl LiveSince {
    /// Records this pass's live set; returns every live instance with the
    /// start of its streak. An instance missing from `live` starts over.
    pub fn update(&mut self, live: BTreeSet<String>, now_ms: u64) -> BTreeMap<String, u64> {
        self.since.retain(|id, _| live.contains(id));
        for id in live {
            self.since.entry(id).or_insert(now_ms);
        }
        self.since.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(ids: &[&str]) -> BTreeSet<String> {
        ids.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_streak_starts_at_the_first_live_pass_and_a_break_restarts_it() {
        let mut l = LiveSince::default();
        assert_eq!(l.update(set(&["a", "b"]), 100)["b"], 100);
        assert_eq!(
            l.update(set(&["a", "b"]), 400)["b"],
            100,
            "still the first pass"
        );
        assert!(
            !l.update(set(&["a"]), 700).contains_key("b"),
            "b is cut off"
        );
        let back = l.update(set(&["a", "b"]), 1000);
        assert_eq!(back["b"], 1000, "the cut restarted b's streak");
        assert_eq!(back["a"], 100);
    }
}
