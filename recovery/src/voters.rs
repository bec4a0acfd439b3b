//! Keeping `V_n`, the voting members of the current incarnation, where
//! quorum-loss recovery reads it (DESIGN §6, §7): every member records it
//! in its own state file; the member beside the etcd leader also writes it
//! to the store's `incarnations/<n>.voters` record, with the raft index of
//! the membership it describes (the store never replaces a record with one
//! describing an earlier index).
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
}

/// `V_n` at a raft index (the store's `incarnations/<n>.voters`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VotersRecord {
    pub incarnation: u64,
    pub raft_index: u64,
    /// Instance ids, sorted.
    pub voters: Vec<String>,
}

/// What to write this pass.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Upkeep {
    /// Record this `V_n` in the state file.
    pub record_locally: Option<Vec<String>>,
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
    let record_locally = (own.voters != voters.as_slice()).then(|| voters.clone());
    let already = f
        .written
        .is_some_and(|w| w.voters == voters && w.incarnation == own.incarnation);
    let write_to_store = (f.is_leader && !already).then_some(VotersRecord {
        incarnation: own.incarnation,
        raft_index: f.raft_index,
        voters,
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
        let written_ab = VotersRecord {
            incarnation: 2,
            raft_index: 5,
            voters: ab.clone(),
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
            local: Option<Vec<String>>,
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
                local: Some(ab.clone()),
                store: false,
            },
            Case {
                what: "the leader also writes the store",
                members: Some(&list),
                member_id: Some(1),
                voters: &old,
                leader: true,
                written: None,
                local: Some(ab.clone()),
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
                }),
                is_leader: c.leader,
                raft_index: 9,
                written: c.written,
            });
            assert_eq!(got.record_locally, c.local, "{}", c.what);
            assert_eq!(got.write_to_store.is_some(), c.store, "{}", c.what);
            if let Some(w) = got.write_to_store {
                assert_eq!((w.incarnation, w.raft_index, w.voters), (2, 9, ab.clone()));
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
    fn learners_and_never_started_members_are_not_voters() {
        let list = vec![
            member(1, "b", false),
            member(2, "a", false),
            member(3, "c", true),
            member(4, "", false),
        ];
        assert_eq!(voters_of(&list), ids(&["a", "b"]));
    }
}
