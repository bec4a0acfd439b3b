//! Ballots of the single-decree Paxos round: `(round, instance id)`, ordered
//! by round first, so two coordinators never share a ballot.

use super::ids::InstanceId;
use serde::{Deserialize, Serialize};
use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Ballot {
    pub round: u64,
    pub instance: InstanceId,
}

impl Ballot {
    pub fn new(round: u64, instance: impl Into<InstanceId>) -> Self {
        Ballot {
            round,
            instance: instance.into(),
        }
    }

    /// The first ballot of `me` strictly above `seen` (or round 1).
    pub fn next_after(seen: Option<&Ballot>, me: &str) -> Self {
        let round = seen.map_or(1, |b| b.round + 1);
        Ballot::new(round, me)
    }
}

impl fmt::Display for Ballot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({}, {})", self.round, self.instance)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordered_by_round_then_instance() {
        assert!(Ballot::new(2, "a") > Ballot::new(1, "z"));
        assert!(Ballot::new(1, "b") > Ballot::new(1, "a"));
        let seen = Ballot::new(7, "z");
        let next = Ballot::next_after(Some(&seen), "a");
        assert!(next > seen);
        assert_eq!(Ballot::next_after(None, "a"), Ballot::new(1, "a"));
    }
}
