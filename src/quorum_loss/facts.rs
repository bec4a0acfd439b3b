//! What the daemon sees, as plain facts for the pure decisions: gossip's
//! view as the protocol's and formation's peer facts, the own probe, the
//! store's records as the protocol's records and back, the newest stored
//! snapshot. Only typed fields of the gossip PeerState are read (its
//! `frozen` flag, its data facts) — never its human-facing phase.

use crate::etcd::flags;
use crate::etcd::probe::MemberStatus;
use crate::snapshot::take::meta;
use crate::store::ObjectInfo;
use crate::store::record::{IncarnationRecord, VotersRecord};
use gossip::{Liveness, PeerView};
use recovery::fenced::{
    Ballot, InstanceId, Millis, PeerFact, Probe, SeedRecord, SeedSource, SeedValue, SnapshotFacts,
};
use recovery::formation::PeerFacts;
use std::collections::{BTreeMap, HashMap};
use tokio::time::Instant;

/// The own etcd's answer to one Status probe.
pub fn probe_of(local: Option<&MemberStatus>) -> Probe {
    match local {
        Some(m) if m.has_leader() => Probe::Leader,
        Some(_) => Probe::NoLeader,
        None => Probe::Failed,
    }
}

/// When each instance last showed an etcd leader, on this daemon's
/// monotonic clock (milliseconds since it started).
#[derive(Debug, Default)]
pub struct LeaderSightings {
    seen: BTreeMap<InstanceId, Millis>,
}

impl LeaderSightings {
    fn saw(&mut self, id: &str, at: Millis) {
        let e = self.seen.entry(id.to_string()).or_insert(at);
        *e = (*e).max(at);
    }

    fn get(&self, id: &str) -> Option<Millis> {
        self.seen.get(id).copied()
    }
}

/// Gossip's view of every instance (this one included) as protocol facts.
/// `now`/`now_ms` are the same instant on the two clocks.
pub fn peer_facts(
    view: &HashMap<String, PeerView>,
    now: Instant,
    now_ms: Millis,
    sightings: &mut LeaderSightings,
) -> BTreeMap<InstanceId, PeerFact> {
    let mut out = BTreeMap::new();
    for (id, v) in view {
        let age = now.saturating_duration_since(v.last_heard).as_millis() as Millis;
        let last_heard = now_ms.saturating_sub(age);
        if v.state.etcd.healthy {
            sightings.saw(id, last_heard);
        }
        out.insert(
            id.clone(),
            PeerFact {
                incarnation: v.state.data.incarnation.unwrap_or(0),
                cluster_id: v.state.etcd.cluster_id,
                has_data: v.state.data.present,
                leader_seen_at: sightings.get(id),
                frozen: v.state.frozen,
                last_heard,
                voters: v.state.data.voters.clone(),
                learners: v.state.data.learners.clone(),
            },
        );
    }
    out
}

/// The instances alive in gossip: up and heard within `peer_fresh`, this
/// one (`me`) included.
pub fn live_instances(
    view: &HashMap<String, PeerView>,
    now: Instant,
    peer_fresh: Millis,
    me: &str,
) -> std::collections::BTreeSet<InstanceId> {
    let mut live: std::collections::BTreeSet<InstanceId> = formation_peers(view, now, peer_fresh)
        .into_iter()
        .filter(|(_, p)| p.reachable)
        .map(|(id, _)| id)
        .collect();
    live.insert(me.to_string());
    live
}

/// Gossip's view of every instance as formation's facts: reachable when
/// up and heard within `peer_fresh` (the protocol's freshness: one
/// threshold for both).
pub fn formation_peers(
    view: &HashMap<String, PeerView>,
    now: Instant,
    peer_fresh: Millis,
) -> BTreeMap<InstanceId, PeerFacts> {
    view.iter()
        .map(|(id, v)| {
            let age = now.saturating_duration_since(v.last_heard).as_millis() as Millis;
            (
                id.clone(),
                PeerFacts {
                    reachable: v.liveness == Liveness::Up && age < peer_fresh,
                    has_state: v.state.data.has_state,
                    data_present: v.state.data.present,
                },
            )
        })
        .collect()
}

/// The etcd cluster token of incarnation `n` with the record's suffix.
pub fn token(cluster: &str, n: u64, suffix: u64) -> String {
    flags::cluster_token(cluster, n, suffix as u32)
}

/// A store record as the protocol's record. Records written by formation
/// (incarnation 1, no protocol record inside) become "seeded empty by its
/// seeder"; `voters`, when it describes the same incarnation, gives the
/// current `V_n`.
pub fn seed_record(r: &IncarnationRecord, voters: Option<&VotersRecord>) -> SeedRecord {
    let mut s = r.seed.clone().unwrap_or_else(|| SeedRecord {
        incarnation: r.incarnation,
        value: SeedValue {
            source: SeedSource::Empty,
            seeder: r.seeder.clone(),
        },
        ballot: Ballot::new(0, ""),
        voters: vec![r.seeder.clone()],
        token_suffix: 0,
        data_loss: false,
    });
    if let Some(v) = voters.filter(|v| v.incarnation == r.incarnation && !v.voters.is_empty()) {
        s.voters = v.voters.clone();
    }
    s
}

/// The store record for the protocol's record (the commit point).
pub fn incarnation_record(
    cluster: &str,
    s: &SeedRecord,
    created_unix_ms: u64,
) -> IncarnationRecord {
    let source = match &s.value.source {
        SeedSource::Empty => "empty".to_string(),
        SeedSource::Store { name, .. } => format!("snapshot:{name}"),
        SeedSource::Member { holder, .. } => format!("data:{holder}"),
    };
    IncarnationRecord {
        cluster: cluster.to_string(),
        incarnation: s.incarnation,
        seeder: s.value.seeder.clone(),
        token: token(cluster, s.incarnation, s.token_suffix),
        source,
        created_unix_ms,
        seed: Some(s.clone()),
    }
}

/// The newest snapshot among `objects` (`crate::snapshot::listing::newest`),
/// with its recorded position. The commit index is the raft applied index
/// the member reported just before the snapshot
/// (`snapshot::take::recorded_position`): a lower bound, so the store
/// never outranks live data it does not really exceed.
pub fn newest_snapshot(objects: &[ObjectInfo]) -> Option<SnapshotFacts> {
    crate::snapshot::listing::newest(objects).map(|(n, o)| SnapshotFacts {
        name: o.name.clone(),
        cluster_id: None,
        incarnation: n.incarnation,
        commit_index: o
            .metadata
            .get(meta::RAFT_INDEX)
            .and_then(|v| v.parse().ok())
            .unwrap_or(0),
        revision: n.revision.max(0) as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(name: &str, raft_index: u64) -> ObjectInfo {
        ObjectInfo {
            name: name.into(),
            size: 1,
            sha256: String::new(),
            metadata: BTreeMap::from([(meta::RAFT_INDEX.to_string(), raft_index.to_string())]),
        }
    }

    #[test]
    fn newest_snapshot_by_incarnation_then_revision_and_ignores_other_names() {
        let objs = vec![
            object(
                "c/snapshots/i0000000001-r00000000000000000900-c-1-aa.db",
                950,
            ),
            object(
                "c/snapshots/i0000000002-r00000000000000000010-c-2-bb.db",
                40,
            ),
            object(
                "c/snapshots/i0000000002-r00000000000000000005-c-2-bb.db",
                20,
            ),
            object("c/snapshots/not-a-snapshot.db", 99_999),
        ];
        let s = newest_snapshot(&objs).expect("one");
        assert_eq!((s.incarnation, s.revision, s.commit_index), (2, 10, 40));
        assert_eq!(newest_snapshot(&objs[3..]), None);
    }

    #[test]
    fn records_round_trip_and_formation_records_read_as_empty_seeds() {
        let s = SeedRecord {
            incarnation: 3,
            value: SeedValue {
                source: SeedSource::Member {
                    holder: "a".into(),
                    cluster_id: Some(7),
                    incarnation: 2,
                    commit_index: 100,
                    revision: 0,
                },
                seeder: "a".into(),
            },
            ballot: Ballot::new(2, "b"),
            voters: vec!["a".into()],
            token_suffix: 0xabcdef,
            data_loss: false,
        };
        let r = incarnation_record("c", &s, 5);
        assert_eq!(r.token, "c-3-00abcdef");
        assert_eq!(r.source, "data:a");
        assert_eq!(seed_record(&r, None), s);
        let v = VotersRecord {
            incarnation: 3,
            raft_index: 9,
            voters: vec!["a".into(), "d".into()],
            learners: Vec::new(),
        };
        assert_eq!(seed_record(&r, Some(&v)).voters, v.voters);

        let formed = IncarnationRecord {
            seed: None,
            source: "empty".into(),
            seeder: "x".into(),
            incarnation: 1,
            ..r
        };
        let f = seed_record(&formed, None);
        assert_eq!(f.value.source, SeedSource::Empty);
        assert_eq!(f.voters, vec!["x".to_string()]);
    }

    fn view(id: &str, liveness: Liveness, heard_ms_ago: u64, frozen: bool) -> (String, PeerView) {
        let state = gossip::PeerState {
            instance_id: id.into(),
            frozen,
            phase: "whatever the human-facing phase says".into(),
            data: gossip::DataFacts {
                has_state: true,
                present: true,
                incarnation: Some(2),
                revision: None,
                voters: Vec::new(),
                learners: Vec::new(),
            },
            etcd: gossip::EtcdFacts {
                healthy: !frozen,
                ..Default::default()
            },
            ..Default::default()
        };
        let now = Instant::now();
        (
            id.into(),
            PeerView {
                state,
                version: Default::default(),
                liveness,
                last_heard: now - std::time::Duration::from_millis(heard_ms_ago),
                times_down: 0,
            },
        )
    }

    #[test]
    fn peers_are_read_from_typed_facts_and_one_freshness() {
        let v: HashMap<String, PeerView> = [
            view("a", Liveness::Up, 100, false),
            view("b", Liveness::Up, 100, true),
            view("c", Liveness::Up, 20_000, false),
            view("d", Liveness::Down, 100, false),
        ]
        .into_iter()
        .collect();
        let now = Instant::now();
        let f = formation_peers(&v, now, 10_000);
        let reachable: Vec<&str> = f
            .iter()
            .filter(|(_, p)| p.reachable)
            .map(|(id, _)| id.as_str())
            .collect();
        assert_eq!(reachable, ["a", "b"], "up and fresh only");
        let mut sightings = LeaderSightings::default();
        let p = peer_facts(&v, now, 50_000, &mut sightings);
        assert!(
            p["b"].frozen && !p["a"].frozen,
            "the typed flag, not the phase"
        );
        assert_eq!(p["a"].incarnation, 2);
        assert!(p["a"].leader_seen_at.is_some() && p["b"].leader_seen_at.is_none());
    }
}
