//! Forming a cluster from nothing (incarnation 1 of a multi-instance group):
//! a pure decision on **positive evidence of emptiness**:
//!
//! - no etcd member answers anywhere (a cluster that answers is joined, not
//!   formed);
//! - the store's listing of `incarnations/` succeeded, completely, and is
//!   empty — any store error means "not empty", and any record means a
//!   cluster existed (eco never seeds an empty cluster over it);
//! - **every** instance of the group is up in gossip with a fresh state, and
//!   reports no state file and no etcd data — a silent instance may hold the
//!   only data, so it blocks formation;
//! - then the lowest instance id seeds. The commit point is the store's
//!   conditional create of `incarnations/1`: if two instances ever raced,
//!   exactly one record would exist and only its seeder starts etcd.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What gossip says about one instance of the group.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeerFacts {
    /// Up in the membership and its state is fresh.
    pub reachable: bool,
    pub has_state: bool,
    pub data_present: bool,
}

/// The store's listing of seeding records, each as `(incarnation, seeder)`
/// (the fenced protocol reads whole records: `fenced::RecordListing`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RecordSeeders {
    /// Complete listing: `(incarnation, seeder)` of every record.
    Complete(Vec<(u64, String)>),
    /// The listing failed: never read as empty.
    Failed(String),
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Formation {
    /// This instance creates incarnation 1 and starts etcd alone.
    Seed { reason: String },
    /// Not now; the reason says what is missing.
    Wait { reason: String },
}

/// `group`: instance ids; `peers`: gossip facts by instance id (this
/// instance's own facts included).
pub fn decide(
    me: &str,
    group: &[String],
    peers: &BTreeMap<String, PeerFacts>,
    records: &RecordSeeders,
    any_member_answers: bool,
) -> Formation {
    let wait = |reason: String| Formation::Wait { reason };
    if any_member_answers {
        return wait("a cluster answers: join it, do not form one".into());
    }
    // The only record is incarnation 1 seeded by this instance, and no
    // member answers: its own seeding was interrupted (between creating the
    // record and starting etcd) and may be finished.
    let resuming = match records {
        RecordSeeders::Failed(e) => {
            return wait(format!(
                "the store listing failed ({e}); an error is never read as empty"
            ));
        }
        RecordSeeders::Complete(list) if list.is_empty() => false,
        RecordSeeders::Complete(list) if list.len() == 1 && list[0].0 == 1 && list[0].1 == me => {
            true
        }
        RecordSeeders::Complete(list) => {
            return wait(format!(
                "the store holds {} record(s) of this cluster: a cluster existed; eco never seeds an empty one over it \
                 (its members must come back, or restore it)",
                list.len()
            ));
        }
    };
    if !group.iter().any(|id| id == me) {
        return wait("this instance is not in the group".into());
    }
    let mut ids: Vec<&String> = group.iter().collect();
    ids.sort();
    for id in &ids {
        if resuming && id.as_str() == me {
            continue;
        }
        match peers.get(*id) {
            None => {
                return wait(format!(
                    "waiting for {id} to be heard over gossip: it may hold data"
                ));
            }
            Some(p) if !p.reachable => {
                return wait(format!(
                    "waiting for {id}: not up in gossip (it may hold data)"
                ));
            }
            Some(p) if p.has_state || p.data_present => {
                return wait(format!(
                    "{id} reports {} but no cluster answers and the store holds no record: a human must look (eco will not seed over it)",
                    if p.has_state {
                        "a state file"
                    } else {
                        "etcd data"
                    }
                ));
            }
            Some(_) => {}
        }
    }
    if resuming {
        return Formation::Seed {
            reason:
                "this instance created incarnations/1 but etcd never started: finish the seeding"
                    .into(),
        };
    }
    match ids.first() {
        Some(lowest) if lowest.as_str() == me => Formation::Seed {
            reason: format!(
                "all {} instances are up and empty, the store holds no record, no cluster answers: this instance (lowest id) seeds incarnation 1",
                ids.len()
            ),
        },
        Some(lowest) => wait(format!(
            "all instances are empty; {lowest} (lowest id) seeds, this instance joins after"
        )),
        None => wait("the group is empty".into()),
    }
}

/// Whose record of incarnation 1 the store holds after this instance's
/// conditional create (`create` returns the record that exists, this
/// instance's or one created first).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FirstRecord {
    /// This instance's own: same seeder and same token (a retry of its own
    /// interrupted formation or bootstrap is its own too).
    Ours,
    /// Another's, created first: it wins, and this instance joins it.
    Theirs { seeder: String },
}

/// [`FirstRecord`] from the record held (`held_seeder`, `held_token`) and
/// the one this instance tried to create.
pub fn first_record(held_seeder: &str, held_token: &str, me: &str, my_token: &str) -> FirstRecord {
    if held_seeder == me && held_token == my_token {
        FirstRecord::Ours
    } else {
        FirstRecord::Theirs {
            seeder: held_seeder.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_record_held_is_ours_only_with_our_seeder_and_token() {
        let theirs = |s: &str| FirstRecord::Theirs { seeder: s.into() };
        // (held seeder, held token, why, expected)
        let table = [
            ("a", "t1", "our own create", FirstRecord::Ours),
            ("b", "t2", "another instance created it first", theirs("b")),
            (
                "a",
                "t0",
                "our name under another token: an earlier life of ours, or a forger",
                theirs("a"),
            ),
            ("b", "t1", "another seeder with our token", theirs("b")),
        ];
        for (seeder, token, why, want) in table {
            assert_eq!(first_record(seeder, token, "a", "t1"), want, "{why}");
        }
    }

    fn empty() -> PeerFacts {
        PeerFacts {
            reachable: true,
            has_state: false,
            data_present: false,
        }
    }

    fn group() -> Vec<String> {
        vec!["b".into(), "a".into(), "c".into()]
    }

    fn peers(f: impl Fn(&str) -> Option<PeerFacts>) -> BTreeMap<String, PeerFacts> {
        ["a", "b", "c"]
            .iter()
            .filter_map(|id| f(id).map(|p| (id.to_string(), p)))
            .collect()
    }

    fn is_seed(f: &Formation) -> bool {
        matches!(f, Formation::Seed { .. })
    }

    #[test]
    fn table() {
        let all_empty = peers(|_| Some(empty()));
        let ok = RecordSeeders::Complete(vec![]);
        assert!(
            is_seed(&decide("a", &group(), &all_empty, &ok, false)),
            "lowest id seeds"
        );
        assert!(
            !is_seed(&decide("b", &group(), &all_empty, &ok, false)),
            "others wait"
        );
        assert!(
            !is_seed(&decide("a", &group(), &all_empty, &ok, true)),
            "a cluster answers: join"
        );
        let theirs = RecordSeeders::Complete(vec![(1, "b".into())]);
        assert!(
            !is_seed(&decide("a", &group(), &all_empty, &theirs, false)),
            "a record exists"
        );
        let mine = RecordSeeders::Complete(vec![(1, "a".into())]);
        let own_state = peers(|id| {
            Some(PeerFacts {
                has_state: id == "a",
                ..empty()
            })
        });
        assert!(
            is_seed(&decide("a", &group(), &own_state, &mine, false)),
            "finish an interrupted own seeding"
        );
        assert!(
            !is_seed(&decide("b", &group(), &all_empty, &mine, false)),
            "not someone else's"
        );
        let later = RecordSeeders::Complete(vec![(1, "a".into()), (2, "b".into())]);
        assert!(
            !is_seed(&decide("a", &group(), &all_empty, &later, false)),
            "later incarnations exist"
        );
        assert!(
            !is_seed(&decide(
                "a",
                &group(),
                &all_empty,
                &RecordSeeders::Failed("io".into()),
                false
            )),
            "store error"
        );
        let silent = peers(|id| (id != "c").then(empty));
        assert!(
            !is_seed(&decide("a", &group(), &silent, &ok, false)),
            "a silent instance blocks"
        );
        let down = peers(|id| {
            Some(PeerFacts {
                reachable: id != "b",
                ..empty()
            })
        });
        assert!(
            !is_seed(&decide("a", &group(), &down, &ok, false)),
            "an unreachable instance blocks"
        );
        let data = peers(|id| {
            Some(PeerFacts {
                data_present: id == "c",
                ..empty()
            })
        });
        let Formation::Wait { reason } = decide("a", &group(), &data, &ok, false) else {
            panic!()
        };
        assert!(reason.contains("c reports etcd data"), "{reason}");
        let state = peers(|id| {
            Some(PeerFacts {
                has_state: id == "a",
                ..empty()
            })
        });
        assert!(
            !is_seed(&decide("a", &group(), &state, &ok, false)),
            "own state blocks too"
        );
        assert!(
            !is_seed(&decide("z", &group(), &all_empty, &ok, false)),
            "not in the group"
        );
    }
}
