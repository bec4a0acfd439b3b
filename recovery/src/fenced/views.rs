//! `V_n` from every view of it, and who may stop a round.
//!
//! Each instance records `V_n` from the member list it last saw as a
//! confirmed member (its state file); the instance beside the leader also
//! writes it to the store's record; gossip carries each instance's state
//! file view. Those views describe the membership at different moments — a
//! promotion reaches the leader's record and the other state files a pass
//! or more after etcd applied it, and an instance restarted with an empty
//! disk knows only the store's record. The rule that reconciles them:
//!
//! 1. **`V_n` is the union of the views of it that come from data of
//!    `n`**: the store's record, and the state-file view of every fresh
//!    instance that holds data of `n` (this one included). A holder's view
//!    is what it saw as a member, at most a pass old; a member missing from
//!    one view is in another as long as any holder (or the record) saw it.
//!    Views of instances without data of `n` (a wiped disk, one removed
//!    and moved aside) are left out: they are as old as the moment that
//!    instance stopped being a member. A superset is safe: a round then
//!    waits for more members, each of which promises or is certified gone,
//!    and a member only counts for quorum while it votes by its own
//!    account ([`super::PeerFact::votes`]).
//! 2. **A round waits for every member of `n` these views name, learners
//!    included, and for every instance gossip says holds data of `n`**,
//!    voter or not: a learner may hold acknowledged writes no voter
//!    survived with (a second loss while the first recovery's joins are
//!    still learners). Quorum, though, counts voters only.
//! 3. **Only a voter holding data of `n` may refuse on its detector's
//!    verdict.** Any other instance (its disk is empty, it never joined,
//!    it is a learner) refuses a prepare only with positive evidence that
//!    the cluster is healthy (a leader of `n` seen within `T`). It has no
//!    evidence of health to veto with, and nothing a seeding could lose
//!    that its own report does not carry; a round it cooperates with still
//!    needs every data-holding voter of `V_n` to promise or be certified
//!    gone, so a healthy cluster still stops it.
//!
//! Pure: the protocol's facts in, instance ids out.

use super::detector::Verdict;
use super::ids::{Incarnation, InstanceId};
use super::protocol::Protocol;

impl Protocol {
    /// `V_n` as the union of the store's record of `n` and the views of
    /// the instances holding data of `n`: this one's state file, and every
    /// fresh peer's gossiped view (rule 1). When neither exists, this
    /// instance's own view (a member that never read the store, with its
    /// data unknown). Sorted, without duplicates.
    pub fn known_voters(&self, n: Incarnation) -> Vec<InstanceId> {
        let mut v: Vec<InstanceId> = Vec::new();
        let own = self.state.incarnation == n;
        if own && self.holds_data_of(n) {
            v.extend(self.state.voters.iter().cloned());
        }
        v.extend(self.listed_voters(n));
        if let Some(obs) = self.window.latest() {
            for (id, p) in &obs.peers {
                let fresh = obs.at.saturating_sub(p.last_heard) <= self.cfg.peer_fresh;
                if fresh && p.holds(n) && *id != self.me {
                    v.extend(p.voters.iter().cloned());
                }
            }
        }
        if v.is_empty() && own {
            v.extend(self.state.voters.iter().cloned());
        }
        v.sort();
        v.dedup();
        v
    }

    /// Every member of `n` any view names: [`Self::known_voters`] and the
    /// started learners the same views list (the store's record, the
    /// holders' views, this instance's own when it holds data of `n`).
    pub fn known_members(&self, n: Incarnation) -> Vec<InstanceId> {
        let mut v = self.known_voters(n);
        if self.state.incarnation == n && self.holds_data_of(n) {
            v.extend(self.learners.iter().cloned());
        }
        if let Some(learners) = self.store.as_ref().and_then(|s| s.learners.get(&n)) {
            v.extend(learners.iter().cloned());
        }
        if let Some(obs) = self.window.latest() {
            for (id, p) in &obs.peers {
                let fresh = obs.at.saturating_sub(p.last_heard) <= self.cfg.peer_fresh;
                if fresh && p.holds(n) && *id != self.me {
                    v.extend(p.learners.iter().cloned());
                }
            }
        }
        v.sort();
        v.dedup();
        v
    }

    /// The instances of the group that gossip says hold data of `n` (rule
    /// 2), fresh and not certified gone: a round waits for their reports.
    pub fn known_holders(&self, n: Incarnation) -> Vec<InstanceId> {
        let Some(obs) = self.window.latest() else {
            return Vec::new();
        };
        obs.peers
            .iter()
            .filter(|(id, p)| {
                let fresh = obs.at.saturating_sub(p.last_heard) <= self.cfg.peer_fresh;
                let in_group =
                    self.group.instances.is_empty() || self.group.instances.contains(*id);
                fresh && in_group && p.holds(n) && !self.provider_gone(id)
            })
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// Whether this instance holds data of `n`: what its WAL read said, or
    /// before one, what its own gossip entry says; unknown counts as
    /// holding (the cautious answer: its refusal keeps its standing).
    pub(super) fn holds_data_of(&self, n: Incarnation) -> bool {
        if let Some(d) = &self.local {
            return d.has_data && d.incarnation == n;
        }
        match self.window.latest().and_then(|o| o.peers.get(&self.me)) {
            Some(own) => own.holds(n),
            None => true,
        }
    }

    /// Whether this instance's refusal of a round for `n + 1` may stop it
    /// (rule 3): it holds data of `n` and is a voter of `V_n`.
    pub(super) fn may_veto(&self, n: Incarnation) -> bool {
        self.holds_data_of(n) && self.known_voters(n).contains(&self.me)
    }

    /// Whether `verdict` refuses a round for `n + 1` at this instance: for
    /// a data-holding voter anything but a loss; for anyone else only
    /// positive evidence of health.
    pub(super) fn refuses(&self, n: Incarnation, verdict: &Verdict) -> bool {
        if self.may_veto(n) {
            !verdict.is_lost()
        } else {
            matches!(verdict, Verdict::Healthy { .. })
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::fenced::{
        Ballot, DetectorSample, EffectKind, Envelope, Incarnation, Input, LocalData, Message,
        PeerFact, PersistedState, Probe, Protocol, ProtocolConfig, RecordListing, SeedRecord,
        SeedSource, SeedValue, SnapshotListing, StoreFacts,
    };
    use std::collections::{BTreeMap, BTreeSet};

    fn ids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn cfg() -> ProtocolConfig {
        ProtocolConfig {
            quorum_loss_timeout: 1_000,
            min_probes: 1,
            peer_fresh: 5_000,
            ..ProtocolConfig::default()
        }
    }

    /// `me` at incarnation 2 with the state file view `voters`.
    fn at_2(me: &str, voters: &[&str]) -> Protocol {
        Protocol::new(
            me,
            9,
            cfg(),
            Some(PersistedState {
                incarnation: 2,
                voters: ids(voters),
                ..PersistedState::default()
            }),
        )
    }

    fn data_of(n: Incarnation) -> LocalData {
        LocalData {
            cluster_id: Some(7),
            incarnation: n,
            commit_index: 50,
            applied_revision: 0,
            has_data: true,
        }
    }

    /// A peer of incarnation 2: holding data or not, with its view.
    fn peer(at: u64, holds: bool, voters: &[&str], learners: &[&str]) -> PeerFact {
        PeerFact {
            incarnation: 2,
            cluster_id: Some(7),
            has_data: holds,
            leader_seen_at: None,
            frozen: false,
            last_heard: at,
            voters: ids(voters),
            learners: ids(learners),
        }
    }

    fn observe(at: u64, probe: Probe, peers: &[(&str, PeerFact)]) -> Input {
        Input::Observe(DetectorSample {
            at,
            probe: Some(probe),
            peers: peers
                .iter()
                .map(|(id, p)| (id.to_string(), p.clone()))
                .collect::<BTreeMap<_, _>>(),
            certified_gone: BTreeSet::new(),
        })
    }

    /// The store's record of incarnation 2 listing `voters` and `learners`.
    fn store(voters: &[&str], learners: &[&str]) -> Input {
        Input::Store(StoreFacts {
            records: RecordListing::Complete(vec![SeedRecord {
                incarnation: 2,
                value: SeedValue {
                    source: SeedSource::Empty,
                    seeder: "a".into(),
                },
                ballot: Ballot::new(1, "a"),
                voters: ids(voters),
                token_suffix: 1,
                data_loss: false,
            }]),
            snapshots: SnapshotListing::Complete(None),
            learners: BTreeMap::from([(2, ids(learners))]),
        })
    }

    fn prepare_from(from: &str, to: &str) -> Input {
        Input::Message(Envelope {
            from: from.into(),
            from_boot: 1,
            to: to.into(),
            to_boot: None,
            message: Message::Prepare {
                target: 3,
                voters: ids(&["a", "b", "c"]),
                ballot: Ballot::new(1, from),
            },
        })
    }

    /// Whether `p`'s answer to a prepare was a promise (else a refusal).
    fn promised(p: &mut Protocol, at: u64, from: &str) -> bool {
        let me = p.me().to_string();
        let fx = p.handle(at, prepare_from(from, &me));
        let promise = fx.iter().any(|e| {
            matches!(
                &e.kind,
                EffectKind::Send(Envelope {
                    message: Message::Promise { .. },
                    ..
                })
            )
        });
        let reject = fx.iter().any(|e| {
            matches!(
                &e.kind,
                EffectKind::Send(Envelope {
                    message: Message::Reject { .. },
                    ..
                })
            )
        });
        assert!(promise != reject, "one answer: {fx:?}");
        promise
    }

    /// The reported outage: an instance restarted empty read `V_2` from a
    /// record that did not list it yet, saw no loss by its own rule, and
    /// refused every round. Holding nothing, it promises now.
    #[test]
    fn an_instance_holding_nothing_promises_what_it_cannot_judge() {
        let mut c = at_2("c", &["a", "b"]);
        c.handle(0, store(&["a", "b"], &[]));
        c.handle(0, Input::LocalData(LocalData::empty()));
        c.handle(100, observe(100, Probe::Failed, &[]));
        assert!(
            !c.verdict().is_lost(),
            "its own rule sees no loss: {:?}",
            c.verdict()
        );
        assert!(promised(&mut c, 200, "b"));
    }

    /// A voter holding data refuses a round its detector does not confirm.
    #[test]
    fn a_voter_holding_data_refuses_without_a_loss() {
        let mut b = at_2("b", &["a", "b", "c"]);
        b.handle(0, store(&["a", "b", "c"], &[]));
        b.handle(0, Input::LocalData(data_of(2)));
        b.handle(100, observe(100, Probe::NoLeader, &[]));
        assert!(!promised(&mut b, 200, "c"), "observed for 100 ms only");
    }

    /// Anyone refuses with positive evidence of a healthy cluster.
    #[test]
    fn evidence_of_health_refuses_for_anyone() {
        let mut c = at_2("c", &["a", "b"]);
        c.handle(0, store(&["a", "b"], &[]));
        c.handle(0, Input::LocalData(LocalData::empty()));
        let mut healthy = peer(100, true, &["a", "b"], &[]);
        healthy.leader_seen_at = Some(100);
        c.handle(100, observe(100, Probe::Failed, &[("a", healthy)]));
        assert!(!promised(&mut c, 200, "b"));
    }

    /// A learner holding data has no standing to veto either.
    #[test]
    fn a_learner_holding_data_promises_without_evidence_of_health() {
        let mut l = at_2("l", &["a"]);
        l.handle(0, store(&["a"], &["l"]));
        l.handle(0, Input::LocalData(data_of(2)));
        l.handle(100, observe(100, Probe::NoLeader, &[]));
        assert!(promised(&mut l, 200, "a"));
    }

    /// `V_n` unites the record with the views of instances holding data
    /// of `n`; the view of one without it is left out.
    #[test]
    fn v_n_unites_the_record_and_the_holders_views() {
        let mut c = at_2("c", &["a"]);
        c.handle(0, store(&["a", "b"], &["l"]));
        c.handle(0, Input::LocalData(LocalData::empty()));
        c.handle(
            100,
            observe(
                100,
                Probe::Failed,
                &[
                    ("b", peer(100, true, &["a", "b", "c"], &[])),
                    ("x", peer(100, false, &["x", "y"], &[])),
                ],
            ),
        );
        assert_eq!(c.known_voters(2), ids(&["a", "b", "c"]));
        assert_eq!(c.known_members(2), ids(&["a", "b", "c", "l"]));
        assert_eq!(c.known_holders(2), ids(&["b"]));
    }

    /// A member listed as a voter (a promotion recorded first) but not
    /// counting itself one is not viable: it never makes up a quorum etcd
    /// does not have.
    #[test]
    fn a_member_that_does_not_list_itself_is_not_viable() {
        let obs = DetectorSample {
            at: 100,
            probe: None,
            peers: BTreeMap::from([
                ("a".to_string(), peer(100, true, &["a"], &["l"])),
                ("l".to_string(), peer(100, true, &["a"], &["l"])),
            ]),
            certified_gone: BTreeSet::new(),
        };
        assert!(crate::fenced::detector::viable(&obs, "a", 2, &cfg()));
        assert!(!crate::fenced::detector::viable(&obs, "l", 2, &cfg()));
    }
}
