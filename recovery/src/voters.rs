//! Keeping `V_n`, the voting members of the current incarnation, where
//! quorum-loss recovery reads it (docs/concepts.md, `V_n`): every member
//! records it in its own state file; the member beside the etcd leader also
//! writes it to the store's `incarnations/<n>.voters` record, with the raft
//! index of the membership it describes (the store never replaces a record
//! with one describing an earlier index). Both also keep the started
//! learners: a round after a second loss waits for them too (they may hold
//! writes no voter survived with).
//!
//! A promotion is recorded in the store **before** it takes effect
//! ([`before_promotion`]): the record then lists the learner among the
//! voters, and keeps it there while it is still a learner
//! ([`covers`]) — a record may name more voters than etcd has, never fewer,
//! so an instance that restarts empty after a promotion still finds itself
//! in `V_n`. Over-listing is safe: a round waits for every member a view
//! names, and quorum counts only the members that vote by their own
//! account (`recovery::fenced::PeerFact::votes`).
//!
//! Pure: the member list as observed in, what to write out.

use serde::{Deserialize, Serialize};

/// One etcd member, as the member list reports it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListedMember {
    pub id: u64,
    /// Empty for a member added but never started.
    pub name: String,
    pub is_learner: bool,
}

/// What the upkeep reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VotersFacts<'a> {
    /// The member list of this pass, `None` when no member answered.
    pub members: Option<&'a [ListedMember]>,
    /// This instance's incarnation, member id and `V_n` from its state
    /// file, `None` when it has none.
    pub own: Option<OwnMembership<'a>>,
    /// This instance's etcd is the raft leader.
    pub is_leader: bool,
    /// The highest raft index seen this pass.
    pub raft_index: u64,
    /// What this instance last wrote to the store, if anything.
    pub written: Option<&'a VotersRecord>,
}

/// This instance's membership as its state file records it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OwnMembership<'a> {
    pub incarnation: u64,
    pub member_id: Option<u64>,
    pub voters: &'a [String],
    pub learners: &'a [String],
}

/// `V_n` at a raft index (the store's `incarnations/<n>.voters`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VotersRecord {
    pub incarnation: u64,
    pub raft_index: u64,
    /// Instance ids, sorted.
    pub voters: Vec<String>,
    /// The started learners, sorted (absent in records of older versions).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub learners: Vec<String>,
}

/// What to write this pass.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Upkeep {
    /// Record this `V_n` and these learners in the state file.
    pub record_locally: Option<(Vec<String>, Vec<String>)>,
    /// Write this record to the store.
    pub write_to_store: Option<VotersRecord>,
}

/// The voters of a member list: started voters, by instance id, sorted.
pub fn voters_of(members: &[ListedMember]) -> Vec<String> {
    let mut voters: Vec<String> = members
        .iter()
        .filter(|m| !m.is_learner && !m.name.is_empty())
        .map(|m| m.name.clone())
        .collect();
    voters.sort();
    voters
}

/// The started learners of a member list, by instance id, sorted.
pub fn learners_of(members: &[ListedMember]) -> Vec<String> {
    let mut learners: Vec<String> = members
        .iter()
        .filter(|m| m.is_learner && !m.name.is_empty())
        .map(|m| m.name.clone())
        .collect();
    learners.sort();
    learners
}

/// Whether `record` already describes the membership `voters`/`learners`
/// of `incarnation`: the same voters, or more — where every extra voter is
/// a learner whose promotion was recorded before it took effect — and the
/// same learners.
pub fn covers(
    record: &VotersRecord,
    incarnation: u64,
    voters: &[String],
    learners: &[String],
) -> bool {
    record.incarnation == incarnation
        && voters.iter().all(|v| record.voters.contains(v))
        && record
            .voters
            .iter()
            .all(|v| voters.contains(v) || learners.contains(v))
        && record.learners == learners
}

/// The record to write before promoting learner `name`, when the last one
/// written does not list it among the voters yet: the membership as it
/// will be once the promotion takes effect.
pub fn before_promotion(
    written: Option<&VotersRecord>,
    incarnation: u64,
    members: &[ListedMember],
    name: &str,
    raft_index: u64,
) -> Option<VotersRecord> {
    if name.is_empty() {
        return None;
    }
    let listed =
        written.is_some_and(|w| w.incarnation == incarnation && w.voters.iter().any(|v| v == name));
    if listed {
        return None;
    }
    let mut voters = voters_of(members);
    if !voters.iter().any(|v| v == name) {
        voters.push(name.to_string());
        voters.sort();
    }
    Some(VotersRecord {
        incarnation,
        raft_index,
        voters,
        learners: learners_of(members),
    })
}

/// The record the joining instance `me` writes right after it added itself
/// as a learner, before its etcd starts (so before it holds any data): the
/// member list the add answered, `me` named among its learners, over
/// whatever the store's record `existing` already lists beside it for the
/// same incarnation (a promotion recorded first stays). `raft_index`: an
/// index read after the add, so that a record the leader's instance wrote
/// from a member list read before the add (a lower index) cannot replace
/// it. `None` when `existing` already names `me`.
pub fn after_join(
    existing: Option<&VotersRecord>,
    incarnation: u64,
    members: &[ListedMember],
    added: u64,
    me: &str,
    raft_index: u64,
) -> Option<VotersRecord> {
    let named: Vec<ListedMember> = members
        .iter()
        .map(|m| ListedMember {
            name: if m.id == added {
                me.to_string()
            } else {
                m.name.clone()
            },
            ..m.clone()
        })
        .collect();
    let mut voters = voters_of(&named);
    let mut learners = learners_of(&named);
    if let Some(e) = existing.filter(|e| e.incarnation == incarnation) {
        if e.learners.iter().any(|l| l == me) || e.voters.iter().any(|v| v == me) {
            return None;
        }
        voters.extend(e.voters.iter().cloned());
        learners.extend(e.learners.iter().cloned());
    }
    voters.sort();
    voters.dedup();
    learners.sort();
    learners.dedup();
    learners.retain(|l| !voters.contains(l));
    Some(VotersRecord {
        incarnation,
        raft_index: raft_index.max(existing.map_or(0, |e| e.raft_index + 1)),
        voters,
        learners,
    })
}

pub fn upkeep(f: &VotersFacts) -> Upkeep {
    let (Some(members), Some(own)) = (f.members, f.own) else {
        return Upkeep::default();
    };
    // Only a confirmed member of the cluster it observes speaks for V_n.
    let confirmed = own
        .member_id
        .is_some_and(|id| members.iter().any(|m| m.id == id));
    if !confirmed {
        return Upkeep::default();
    }
    let voters = voters_of(members);
    let learners = learners_of(members);
    let record_locally = (own.voters != voters.as_slice() || own.learners != learners.as_slice())
        .then(|| (voters.clone(), learners.clone()));
    let already = f
        .written
        .is_some_and(|w| covers(w, own.incarnation, &voters, &learners));
    let write_to_store = (f.is_leader && !already).then_some(VotersRecord {
        incarnation: own.incarnation,
        raft_index: f.raft_index,
        voters,
        learners,
    });
    Upkeep {
        record_locally,
        write_to_store,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(id: u64, name: &str, learner: bool) -> ListedMember {
        ListedMember {
            id,
            name: name.into(),
            is_learner: learner,
        }
    }

    fn ids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn table() {
        let list = vec![
            member(1, "a", false),
            member(2, "c", false),
            member(3, "b", true),
            member(4, "", false),
        ];
        let ab = ids(&["a", "c"]);
        let old = ids(&["a"]);
        let b = ids(&["b"]);
        let written_ab = VotersRecord {
            incarnation: 2,
            raft_index: 5,
            voters: ab.clone(),
            learners: b.clone(),
        };
        let written_promotion_first = VotersRecord {
            voters: ids(&["a", "b", "c"]),
            ..written_ab.clone()
        };
        let written_without_learner = VotersRecord {
            learners: Vec::new(),
            ..written_ab.clone()
        };
        let written_other_incarnation = VotersRecord {
            incarnation: 1,
            ..written_ab.clone()
        };
        struct Case<'a> {
            what: &'a str,
            members: Option<&'a [ListedMember]>,
            member_id: Option<u64>,
            voters: &'a [String],
            leader: bool,
            written: Option<&'a VotersRecord>,
            local: Option<(Vec<String>, Vec<String>)>,
            store: bool,
        }
        let cases = [
            Case {
                what: "a follower records a changed V_n locally only",
                members: Some(&list),
                member_id: Some(1),
                voters: &old,
                leader: false,
                written: None,
                local: Some((ab.clone(), b.clone())),
                store: false,
            },
            Case {
                what: "the leader also writes the store",
                members: Some(&list),
                member_id: Some(1),
                voters: &old,
                leader: true,
                written: None,
                local: Some((ab.clone(), b.clone())),
                store: true,
            },
            Case {
                what: "nothing changed, nothing written",
                members: Some(&list),
                member_id: Some(1),
                voters: &ab,
                leader: true,
                written: Some(&written_ab),
                local: None,
                store: false,
            },
            Case {
                what: "a promotion recorded before it took effect covers the membership",
                members: Some(&list),
                member_id: Some(1),
                voters: &ab,
                leader: true,
                written: Some(&written_promotion_first),
                local: None,
                store: false,
            },
            Case {
                what: "a record without the learner is rewritten",
                members: Some(&list),
                member_id: Some(1),
                voters: &ab,
                leader: true,
                written: Some(&written_without_learner),
                local: None,
                store: true,
            },
            Case {
                what: "a record of another incarnation is rewritten",
                members: Some(&list),
                member_id: Some(1),
                voters: &ab,
                leader: true,
                written: Some(&written_other_incarnation),
                local: None,
                store: true,
            },
            Case {
                what: "no member list: nothing",
                members: None,
                member_id: Some(1),
                voters: &old,
                leader: true,
                written: None,
                local: None,
                store: false,
            },
            Case {
                what: "not a member of the listed cluster: nothing",
                members: Some(&list),
                member_id: Some(99),
                voters: &old,
                leader: true,
                written: None,
                local: None,
                store: false,
            },
            Case {
                what: "member id unknown: nothing",
                members: Some(&list),
                member_id: None,
                voters: &old,
                leader: true,
                written: None,
                local: None,
                store: false,
            },
        ];
        for c in cases {
            let got = upkeep(&VotersFacts {
                members: c.members,
                own: Some(OwnMembership {
                    incarnation: 2,
                    member_id: c.member_id,
                    voters: c.voters,
                    learners: &b,
                }),
                is_leader: c.leader,
                raft_index: 9,
                written: c.written,
            });
            assert_eq!(got.record_locally, c.local, "{}", c.what);
            assert_eq!(got.write_to_store.is_some(), c.store, "{}", c.what);
            if let Some(w) = got.write_to_store {
                assert_eq!(
                    (w.incarnation, w.raft_index, w.voters, w.learners),
                    (2, 9, ab.clone(), b.clone())
                );
            }
        }
        let none = upkeep(&VotersFacts {
            members: Some(&list),
            own: None,
            is_leader: true,
            raft_index: 9,
            written: None,
        });
        assert_eq!(none, Upkeep::default(), "no state file: nothing");
    }

    #[test]
    fn a_promotion_is_recorded_before_it_takes_effect_once() {
        let list = vec![
            member(1, "a", false),
            member(2, "b", true),
            member(3, "", true),
        ];
        let first = before_promotion(None, 4, &list, "b", 10).expect("recorded first");
        assert_eq!(first.voters, ids(&["a", "b"]));
        assert_eq!(first.learners, ids(&["b"]));
        assert_eq!(
            before_promotion(Some(&first), 4, &list, "b", 11),
            None,
            "already listed: no second write"
        );
        assert!(
            before_promotion(Some(&first), 5, &list, "b", 11).is_some(),
            "a record of another incarnation does not count"
        );
        assert_eq!(
            before_promotion(None, 4, &list, "", 10),
            None,
            "a learner that never started has no name to record"
        );
        // After the promotion the record already describes the list.
        let promoted = vec![member(1, "a", false), member(2, "b", false)];
        assert!(!covers(
            &first,
            4,
            &voters_of(&promoted),
            &learners_of(&promoted)
        ));
        assert!(covers(
            &VotersRecord {
                learners: Vec::new(),
                ..first.clone()
            },
            4,
            &voters_of(&promoted),
            &learners_of(&promoted)
        ));
        // A record listing a voter that is neither voter nor learner (it
        // was removed) does not cover the list.
        let removed = vec![member(1, "a", false)];
        assert!(!covers(
            &first,
            4,
            &voters_of(&removed),
            &learners_of(&removed)
        ));
    }

    #[test]
    fn a_joining_learner_records_itself_before_it_holds_data() {
        let list = vec![member(1, "a", false), member(7, "", true)];
        let r = after_join(None, 2, &list, 7, "c", 40).expect("written");
        assert_eq!(
            (r.voters, r.learners, r.raft_index),
            (ids(&["a"]), ids(&["c"]), 40)
        );
        // Over a record that lists a promotion made first: kept.
        let existing = VotersRecord {
            incarnation: 2,
            raft_index: 45,
            voters: ids(&["a", "b"]),
            learners: Vec::new(),
        };
        let r = after_join(Some(&existing), 2, &list, 7, "c", 41).expect("written");
        assert_eq!(r.voters, ids(&["a", "b"]));
        assert_eq!(r.learners, ids(&["c"]));
        assert!(
            r.raft_index > existing.raft_index,
            "never below the record it extends"
        );
        // Already listed: nothing to write.
        let listed = VotersRecord {
            learners: ids(&["c"]),
            ..existing.clone()
        };
        assert_eq!(after_join(Some(&listed), 2, &list, 7, "c", 50), None);
        // A record of an older incarnation is not extended.
        let old = VotersRecord {
            incarnation: 1,
            ..existing
        };
        let r = after_join(Some(&old), 2, &list, 7, "c", 41).expect("written");
        assert_eq!(r.voters, ids(&["a"]));
    }

    #[test]
    fn learners_and_never_started_members_are_not_voters() {
        let list = vec![
            member(1, "b", false),
            member(2, "a", false),
            member(3, "c", true),
            member(4, "", false),
        ];
        assert_eq!(voters_of(&list), ids(&["a", "b"]));
        assert_eq!(learners_of(&list), ids(&["c"]));
    }
}
