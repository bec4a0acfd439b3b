//! Table tests: observation → plan. Every rule, and every crash point
//! between the steps of a multi-step change.

use super::*;

const A: &str = "http://10.0.0.1:2380";
const B: &str = "http://10.0.0.2:2380";
const C: &str = "http://10.0.0.3:2380";
const D: &str = "http://10.0.0.4:2380";
const MIN: u64 = 60_000;

fn member(id: u64, name: &str, url: &str) -> MemberFacts {
    MemberFacts {
        id,
        name: name.into(),
        peer_urls: vec![url.into()],
        is_learner: false,
        healthy: true,
        unhealthy_since_ms: None,
        learner_since_ms: None,
        promoted_at_ms: None,
    }
}

fn learner(id: u64, name: &str, url: &str, since: u64) -> MemberFacts {
    MemberFacts {
        is_learner: true,
        learner_since_ms: Some(since),
        ..member(id, name, url)
    }
}

fn sick(mut m: MemberFacts, since: u64) -> MemberFacts {
    m.healthy = false;
    m.unhealthy_since_ms = Some(since);
    m
}

/// Instance `a` (member 1), healthy three-member cluster a, b, c.
fn base() -> Observation {
    Observation {
        now_ms: 100 * MIN,
        local: LocalFacts {
            instance_id: "a".into(),
            peer_url: A.into(),
            recorded_member_id: Some(1),
            data: DataState::Present,
            etcd_running: true,
            is_leader: false,
        },
        group: vec![
            ("a".into(), A.into()),
            ("b".into(), B.into()),
            ("c".into(), C.into()),
        ],
        desired_size: 3,
        absences_confirmed: true,
        absent_unconfirmed: false,
        members: Some(vec![
            member(1, "a", A),
            member(2, "b", B),
            member(3, "c", C),
        ]),
        live: None,
        config: PlannerConfig {
            unhealthy_member_ttl_ms: 5 * MIN,
            learner_timeout_ms: 10 * MIN,
            group_lag_ms: 3_000,
        },
    }
}

fn leader() -> Observation {
    let mut o = base();
    o.local.is_leader = true;
    o
}

fn kinds(p: &Plan) -> Vec<&'static str> {
    p.steps
        .iter()
        .map(|s| match s.action {
            Action::StartEtcd { .. } => "start",
            Action::StopEtcd => "stop",
            Action::MoveDataAside { .. } => "move-aside",
            Action::JoinAsLearner { .. } => "join",
            Action::Promote { .. } => "promote",
            Action::RemoveMember { .. } => "remove",
            Action::TransferLeadership { .. } => "transfer",
            Action::RecordMemberId { .. } => "record",
            Action::Wait { .. } => "wait",
            Action::Nothing => "nothing",
        })
        .collect()
}

fn removes(p: &Plan) -> Option<u64> {
    p.steps.iter().find_map(|s| match s.action {
        Action::RemoveMember { member_id, .. } => Some(member_id),
        _ => None,
    })
}

#[test]
fn table() {
    type Case = (&'static str, Observation, Vec<&'static str>);
    let mut cases: Vec<Case> = Vec::new();

    cases.push(("healthy follower does nothing", base(), vec!["nothing"]));
    cases.push(("healthy leader does nothing", leader(), vec!["nothing"]));

    let mut o = base();
    o.local.etcd_running = false;
    cases.push((
        "rejoin: member with intact data restarts etcd",
        o,
        vec!["start"],
    ));

    let mut o = base();
    o.local.etcd_running = false;
    o.members = None;
    cases.push(("rejoin when no member answers", o, vec!["start"]));

    let mut o = base();
    o.local = LocalFacts {
        recorded_member_id: None,
        data: DataState::Empty,
        etcd_running: false,
        ..o.local
    };
    o.members = None;
    cases.push(("nothing to join when no member answers", o, vec!["wait"]));

    let mut o = base();
    o.local.data = DataState::Empty;
    o.local.etcd_running = false;
    o.members = Some(vec![
        sick(member(1, "a", A), 0),
        member(2, "b", B),
        member(3, "c", C),
    ]);
    cases.push((
        "same identity, empty data: remove the stale member",
        o,
        vec!["remove"],
    ));

    let mut o = base();
    o.local.data = DataState::Unusable;
    cases.push((
        "same identity, unusable data: stop, remove",
        o,
        vec!["stop", "remove"],
    ));

    let mut o = base();
    o.local.data = DataState::Empty;
    o.local.etcd_running = false;
    o.members = Some(vec![
        sick(member(1, "a", A), 0),
        sick(member(2, "b", B), 0),
        member(3, "c", C),
    ]);
    cases.push((
        "stale member but removal would break quorum: wait",
        o,
        vec!["wait"],
    ));

    let mut o = base();
    o.local = LocalFacts {
        recorded_member_id: None,
        data: DataState::Empty,
        etcd_running: false,
        ..o.local
    };
    o.members = Some(vec![member(2, "b", B), member(3, "c", C)]);
    cases.push(("new instance joins as a learner", o, vec!["join"]));

    let mut o = base();
    o.local = LocalFacts {
        recorded_member_id: None,
        data: DataState::Empty,
        etcd_running: false,
        ..o.local
    };
    o.members = Some(vec![
        member(2, "b", B),
        member(3, "c", C),
        learner(4, "d", D, 99 * MIN),
    ]);
    o.group.push(("d".into(), D.into()));
    cases.push(("one learner at a time", o, vec!["wait"]));

    let mut o = base();
    o.local = LocalFacts {
        recorded_member_id: None,
        data: DataState::Empty,
        etcd_running: false,
        ..o.local
    };
    o.members = Some(vec![
        member(2, "b", B),
        sick(member(3, "c", C), 0),
        sick(member(5, "e", D), 0),
    ]);
    cases.push(("no join without a healthy quorum", o, vec!["wait"]));

    let mut o = base();
    o.local = LocalFacts {
        recorded_member_id: Some(9),
        data: DataState::Present,
        etcd_running: true,
        ..o.local
    };
    o.members = Some(vec![member(2, "b", B), member(3, "c", C)]);
    cases.push((
        "crash point: removed, etcd still running and data not moved",
        o,
        vec!["stop", "move-aside", "join"],
    ));

    let mut o = base();
    o.local = LocalFacts {
        recorded_member_id: Some(9),
        data: DataState::Present,
        etcd_running: false,
        ..o.local
    };
    o.members = Some(vec![member(2, "b", B), member(3, "c", C)]);
    cases.push((
        "crash point: removed but data not moved",
        o,
        vec!["move-aside", "join"],
    ));

    let mut o = base();
    o.local = LocalFacts {
        recorded_member_id: None,
        data: DataState::Empty,
        etcd_running: false,
        ..o.local
    };
    o.members = Some(vec![
        learner(7, "", A, 99 * MIN),
        member(2, "b", B),
        member(3, "c", C),
    ]);
    cases.push((
        "crash point: added as learner but never started",
        o,
        vec!["record", "start"],
    ));

    let mut o = base();
    o.local = LocalFacts {
        recorded_member_id: Some(7),
        data: DataState::Empty,
        etcd_running: false,
        ..o.local
    };
    o.members = Some(vec![
        learner(7, "", A, 99 * MIN),
        member(2, "b", B),
        member(3, "c", C),
    ]);
    cases.push((
        "crash point: added and recorded, never started",
        o,
        vec!["start"],
    ));

    // etcd was just started for our added member and has not published
    // its name yet (the list is a pass old): the data is that member's
    // own — never moved aside (the leader may promote it any moment).
    let mut o = base();
    o.local = LocalFacts {
        recorded_member_id: Some(7),
        data: DataState::Present,
        etcd_running: true,
        ..o.local
    };
    o.members = Some(vec![
        learner(7, "", A, 0),
        member(2, "b", B),
        member(3, "c", C),
    ]);
    cases.push((
        "added, etcd started, name not published yet",
        o,
        vec!["wait"],
    ));

    let mut o = base();
    o.local = LocalFacts {
        recorded_member_id: Some(7),
        data: DataState::Present,
        etcd_running: false,
        ..o.local
    };
    o.members = Some(vec![
        learner(7, "", A, 0),
        member(2, "b", B),
        member(3, "c", C),
    ]);
    cases.push((
        "crash point: added, etcd started and stopped before publishing its name",
        o,
        vec!["start"],
    ));

    // A join that keeps failing (the peers reject this member's
    // certificate, its peer port is blocked): etcd leaves its skeleton
    // (no WAL) at each failed start. It is this member's own — started on
    // again (the supervisor's back-off spaces the starts), never moved
    // aside.
    let mut o = base();
    o.local = LocalFacts {
        recorded_member_id: Some(7),
        data: DataState::Unusable,
        etcd_running: false,
        ..o.local
    };
    o.members = Some(vec![
        learner(7, "", A, 0),
        member(2, "b", B),
        member(3, "c", C),
    ]);
    cases.push((
        "added, a start that never joined left etcd's skeleton: start again, never move it aside",
        o,
        vec!["start"],
    ));

    let mut o = base();
    o.local = LocalFacts {
        recorded_member_id: None,
        data: DataState::Present,
        etcd_running: false,
        ..o.local
    };
    o.members = Some(vec![
        learner(7, "", A, 0),
        member(2, "b", B),
        member(3, "c", C),
    ]);
    cases.push((
        "added, never started, older data in the directory",
        o,
        vec!["record", "move-aside", "start"],
    ));

    let mut o = base();
    o.local.recorded_member_id = None;
    cases.push((
        "crash point: promoted/started but member id not saved",
        o,
        vec!["record"],
    ));

    // Leader rules.
    let mut o = leader();
    o.group.retain(|(id, _)| id != "c");
    cases.push(("departed instance's member removed", o, vec!["remove"]));

    let mut o = leader();
    o.group.retain(|(id, _)| id != "c");
    o.absences_confirmed = false;
    cases.push((
        "a member nobody owns is kept until eco read the group long enough",
        o,
        vec!["wait"],
    ));

    let mut o = leader();
    o.group.retain(|(id, _)| id != "a" && id != "c");
    o.absences_confirmed = false;
    cases.push((
        "the leaving leader's instance hands nothing over before the group is confirmed",
        o,
        vec!["wait"],
    ));

    let mut o = leader();
    o.group.retain(|(id, _)| id != "c");
    o.members = Some(vec![
        member(1, "a", A),
        sick(member(2, "b", B), 0),
        member(3, "c", C),
    ]);
    cases.push((
        "departed member kept while removal breaks quorum",
        o,
        vec!["wait"],
    ));

    let mut o = leader();
    o.members
        .as_mut()
        .unwrap()
        .push(learner(4, "d", D, 99 * MIN));
    o.group.push(("d".into(), D.into()));
    cases.push(("healthy learner promoted", o, vec!["promote"]));

    let mut o = leader();
    let mut catching_up = learner(4, "d", D, 99 * MIN);
    catching_up.healthy = false;
    o.members.as_mut().unwrap().push(catching_up);
    o.group.push(("d".into(), D.into()));
    cases.push((
        "a started learner is promoted when etcd says it caught up",
        o,
        vec!["promote"],
    ));

    let mut o = leader();
    o.members
        .as_mut()
        .unwrap()
        .push(learner(4, "d", D, 80 * MIN));
    o.group.push(("d".into(), D.into()));
    cases.push(("stalled learner evicted", o, vec!["remove"]));

    let mut o = leader();
    o.members
        .as_mut()
        .unwrap()
        .push(learner(4, "", D, 99 * MIN));
    cases.push(("never-started member of nobody removed", o, vec!["remove"]));

    // A learner of nobody, seen for less than the group lag: the instance
    // that added it may have read a newer group than this one.
    let mut o = leader();
    let now = o.now_ms;
    o.members
        .as_mut()
        .unwrap()
        .push(learner(4, "d", D, now - 1_000));
    cases.push((
        "a new learner of nobody is given the group lag",
        o,
        vec!["wait"],
    ));
    let mut o = leader();
    let now = o.now_ms;
    o.members
        .as_mut()
        .unwrap()
        .push(learner(4, "d", D, now - 3_000));
    cases.push((
        "a learner of nobody past the group lag removed",
        o,
        vec!["remove"],
    ));
    let mut o = leader();
    let mut unseen = learner(4, "", D, 0);
    unseen.learner_since_ms = None;
    o.members.as_mut().unwrap().push(unseen);
    cases.push((
        "a learner first seen now is given the group lag",
        o,
        vec!["wait"],
    ));

    let mut o = leader();
    o.members = Some(vec![
        member(1, "a", A),
        member(2, "b", B),
        sick(member(3, "c", C), 90 * MIN),
    ]);
    cases.push(("unhealthy past the ttl removed", o, vec!["remove"]));

    let mut o = leader();
    o.members = Some(vec![
        member(1, "a", A),
        member(2, "b", B),
        sick(member(3, "c", C), 99 * MIN),
    ]);
    cases.push(("unhealthy within the ttl kept", o, vec!["nothing"]));

    let mut o = leader();
    o.members = Some(vec![
        member(1, "a", A),
        sick(member(2, "b", B), 0),
        sick(member(3, "c", C), 0),
    ]);
    cases.push((
        "no removal of unhealthy members without quorum",
        o,
        vec!["nothing"],
    ));

    let mut o = base();
    o.group.retain(|(id, _)| id != "c");
    cases.push((
        "followers do not remove departed members",
        o,
        vec!["nothing"],
    ));

    let mut o = leader();
    o.local.data = DataState::Empty;
    o.local.etcd_running = false;
    o.group.retain(|(id, _)| id != "c");
    o.members = Some(vec![
        sick(member(1, "a", A), 0),
        member(2, "b", B),
        member(3, "c", C),
    ]);
    cases.push((
        "one membership change per plan: local change first",
        o,
        vec!["remove"],
    ));

    for (name, o, want) in cases {
        let p = plan(&o);
        assert_eq!(kinds(&p), want, "{name}: {:#?}", p.steps);
        for s in &p.steps {
            assert!(!s.reason.is_empty(), "{name}: every step has a reason");
        }
        assert!(
            p.steps
                .iter()
                .filter(|s| s.action.changes_membership())
                .count()
                <= 1,
            "{name}: one change per plan"
        );
    }
}

#[test]
fn an_unconfirmed_group_waits_on_its_own_reason_and_removes_nothing() {
    let mut o = leader();
    o.group.retain(|(id, _)| id != "c");
    o.members.as_mut().unwrap().push(learner(4, "d", D, 0));
    o.absences_confirmed = false;
    let p = plan(&o);
    assert_eq!(
        p.steps.iter().map(|s| &s.action).collect::<Vec<_>>(),
        [&Action::Wait {
            on: WaitReason::DepartureUnconfirmed
        }],
        "no removal, and no promotion of a learner nobody owns: {p:#?}"
    );
    assert!(p.steps[0].reason.contains("member c (3)"), "{p:#?}");
    o.absences_confirmed = true;
    assert_eq!(removes(&plan(&o)), Some(3));
    // A group that owns every member needs no confirmation.
    let mut o = leader();
    o.absences_confirmed = false;
    assert_eq!(kinds(&plan(&o)), ["nothing"]);
}

#[test]
fn removal_targets_and_initial_cluster() {
    let mut o = leader();
    o.group.retain(|(id, _)| id != "b");
    assert_eq!(removes(&plan(&o)), Some(2));

    // The leader's own instance departed: others first, itself last.
    let mut o = leader();
    o.group.retain(|(id, _)| id != "a" && id != "c");
    assert_eq!(removes(&plan(&o)), Some(3));

    let mut o = base();
    o.local = LocalFacts {
        recorded_member_id: Some(7),
        data: DataState::Empty,
        etcd_running: false,
        ..o.local
    };
    o.members = Some(vec![
        learner(7, "", A, 0),
        member(2, "b", B),
        member(3, "c", C),
    ]);
    let p = plan(&o);
    let Some(Action::StartEtcd { initial_cluster }) = p.steps.first().map(|s| &s.action) else {
        panic!("{p:?}")
    };
    assert_eq!(
        initial_cluster,
        &vec![
            ("a".to_string(), A.to_string()),
            ("b".to_string(), B.to_string()),
            ("c".to_string(), C.to_string())
        ]
    );
}

/// Which removals take a snapshot into the store first: a departed member
/// that still serves does; an instance's own stale member (back with an
/// empty disk: not serving), a voter unhealthy past the TTL and a learner
/// do not. The step's reason says which and why.
#[test]
fn only_the_removal_of_a_serving_voter_waits_for_a_snapshot() {
    let removal = |o: &Observation| {
        plan(o).steps.into_iter().find_map(|s| match s.action {
            Action::RemoveMember {
                member_id,
                snapshot_first,
                ..
            } => Some((member_id, snapshot_first, s.reason)),
            _ => None,
        })
    };
    // A departed instance whose member serves.
    let mut o = leader();
    o.group.retain(|(id, _)| id != "b");
    let (id, first, why) = removal(&o).expect("removes b");
    assert_eq!((id, first), (2, true), "{why}");
    assert!(why.ends_with("(a snapshot first: the member serves; the cluster can lose 1 more member(s) before the removal, 0 after it)"), "{why}");

    // This instance back with an empty disk: its own member is stale.
    let mut o = base();
    o.local.data = DataState::Empty;
    o.local.etcd_running = false;
    o.members = Some(vec![
        sick(member(1, "a", A), 0),
        member(2, "b", B),
        member(3, "c", C),
    ]);
    let (id, first, why) = removal(&o).expect("removes its own member");
    assert_eq!((id, first), (1, false), "{why}");
    assert!(
        why.contains("no snapshot first: the member is not serving"),
        "{why}"
    );

    // The leader's instance, for the same member once the TTL ran out.
    let mut o = leader();
    o.members = Some(vec![
        member(1, "a", A),
        member(2, "b", B),
        sick(member(3, "c", C), 0),
    ]);
    let (id, first, why) = removal(&o).expect("removes c");
    assert_eq!((id, first), (3, false), "{why}");

    // A learner that stalled.
    let mut o = leader();
    o.members = Some(vec![
        member(1, "a", A),
        member(2, "b", B),
        learner(3, "c", C, 0),
    ]);
    let (id, first, why) = removal(&o).expect("removes the stalled learner");
    assert_eq!((id, first), (3, false), "{why}");
}

/// An unhealthy voter is removed after the TTL only while its instance is
/// alive in gossip (its etcd is broken, its instance rejoins clean); an
/// instance gossip cannot hear — crashed, or cut off by a partition —
/// keeps its member. Without gossip (unknown) the TTL alone decides.
#[test]
fn an_unreachable_instance_keeps_its_member() {
    let live = |ids: &[&str]| Some(ids.iter().map(|s| (s.to_string(), 0)).collect());
    let sick_c = |mut o: Observation| {
        if let Some(m) = o.members.as_mut() {
            m[2] = sick(member(3, "c", C), 0);
        }
        o
    };
    let mut o = sick_c(leader());
    assert_eq!(removes(&plan(&o)), Some(3), "no gossip: the ttl decides");
    o.live = live(&["a", "b"]);
    assert_eq!(kinds(&plan(&o)), ["nothing"], "c is cut off: kept");
    o.live = live(&["a", "b", "c"]);
    assert_eq!(
        removes(&plan(&o)),
        Some(3),
        "c's instance is alive: its etcd is not"
    );
}

/// The TTL runs only while the instance is alive: a member unhealthy
/// since a partition cut its instance off is not removed the moment the
/// partition heals (its etcd is still reconnecting), only once it stayed
/// unhealthy for the TTL with its instance alive.
#[test]
fn a_healed_instance_gets_the_whole_ttl() {
    let mut o = leader();
    if let Some(m) = o.members.as_mut() {
        m[2] = sick(member(3, "c", C), 0);
    }
    let ttl = o.config.unhealthy_member_ttl_ms;
    let healed_at = o.now_ms - 1;
    o.live = Some(
        [("a", 0), ("b", 0), ("c", healed_at)]
            .into_iter()
            .map(|(id, since)| (id.to_string(), since))
            .collect(),
    );
    assert!(o.now_ms > ttl, "unhealthy for longer than the ttl");
    assert_eq!(
        kinds(&plan(&o)),
        ["nothing"],
        "c came back 1 ms ago: the ttl starts now"
    );
    o.now_ms = healed_at + ttl + 1;
    assert_eq!(
        removes(&plan(&o)),
        Some(3),
        "unhealthy for the ttl while alive"
    );
}

/// A learner that failed its probes (it restores the database it was sent,
/// or etcd's authentication hides a learner's Status) and is then promoted
/// gets the whole TTL as a voter: counted from its promotion, not from its
/// first failed probe as a learner — which would remove it the moment it
/// became a voter, to fetch the whole database again.
#[test]
fn a_voter_just_promoted_gets_the_whole_ttl() {
    let mut o = leader();
    let ttl = o.config.unhealthy_member_ttl_ms;
    let promoted_at = o.now_ms - 1;
    if let Some(m) = o.members.as_mut() {
        m[2] = sick(member(3, "c", C), 0);
        m[2].promoted_at_ms = Some(promoted_at);
    }
    assert!(o.now_ms > ttl, "unhealthy for longer than the ttl");
    assert_eq!(
        kinds(&plan(&o)),
        ["nothing"],
        "c was promoted 1 ms ago: its ttl starts there"
    );
    o.now_ms = promoted_at + ttl + 1;
    assert_eq!(
        removes(&plan(&o)),
        Some(3),
        "unhealthy for the ttl since its promotion"
    );
    // A promotion before it turned unhealthy changes nothing.
    if let Some(m) = o.members.as_mut() {
        m[2] = sick(member(3, "c", C), promoted_at);
        m[2].promoted_at_ms = Some(0);
    }
    assert_eq!(removes(&plan(&o)), Some(3), "unhealthy since, past the ttl");
}

/// An instance the provider no longer lists is leaving: it never joins
/// again, never moves its data aside, keeps etcd while its member is in the
/// cluster (the removals must not cost the quorum), and stops it once the
/// member is removed.
#[test]
fn a_removed_instance_leaves_and_never_fights() {
    let out_of_group = |mut o: Observation| {
        o.group.retain(|(id, _)| id != "a");
        o
    };
    type Case = (&'static str, Observation, Vec<&'static str>);
    let mut cases: Vec<Case> = Vec::new();
    cases.push((
        "still a member: waits, etcd keeps running",
        out_of_group(base()),
        vec!["wait"],
    ));
    let mut o = out_of_group(base());
    o.local.etcd_running = false;
    cases.push(("still a member, etcd down: not restarted", o, vec!["wait"]));
    let mut o = out_of_group(base());
    o.members = Some(vec![member(2, "b", B), member(3, "c", C)]);
    cases.push(("removed: etcd stopped, data kept", o, vec!["stop", "wait"]));
    let mut o = out_of_group(base());
    o.members = Some(vec![member(2, "b", B), member(3, "c", C)]);
    o.local.etcd_running = false;
    cases.push(("removed and stopped: idle", o, vec!["wait"]));
    let mut o = out_of_group(base());
    o.members = Some(vec![member(2, "b", B), member(3, "c", C)]);
    o.local.data = DataState::Empty;
    o.local.etcd_running = false;
    cases.push(("removed, no data: never joins", o, vec!["wait"]));
    let mut o = out_of_group(base());
    o.members = None;
    cases.push(("no member answers: waits", o, vec!["wait"]));
    let mut o = out_of_group(leader());
    o.group.retain(|(id, _)| id != "c");
    cases.push((
        "a leaving leader removes the other departed first",
        o,
        vec!["remove"],
    ));
    // Absent from the latest read, its departure not confirmed here yet
    // (still in the group), but the leader's instance confirmed it first
    // and removed the member: it leaves, never moves data aside to join.
    let absent = |mut o: Observation| {
        o.absent_unconfirmed = true;
        o.members = Some(vec![member(2, "b", B), member(3, "c", C)]);
        o
    };
    cases.push((
        "absent, unconfirmed, removed: etcd stopped, data kept",
        absent(base()),
        vec!["stop", "wait"],
    ));
    let mut o = absent(base());
    o.local.etcd_running = false;
    o.local.data = DataState::Empty;
    cases.push((
        "absent, unconfirmed, removed, no data: never joins",
        o,
        vec!["wait"],
    ));
    let mut o = absent(base());
    o.members = Some(vec![
        member(1, "a", A),
        member(2, "b", B),
        member(3, "c", C),
    ]);
    cases.push((
        "absent, unconfirmed, still a member: as any member",
        o,
        vec!["nothing"],
    ));
    for (name, o, want) in cases {
        let p = plan(&o);
        assert_eq!(kinds(&p), want, "{name}: {p:?}");
        assert!(
            p.steps.iter().all(|s| !matches!(
                s.action,
                Action::JoinAsLearner { .. }
                    | Action::MoveDataAside { .. }
                    | Action::StartEtcd { .. }
            )),
            "{name}: {p:?}"
        );
    }
    let mut o = out_of_group(leader());
    o.group.retain(|(id, _)| id != "c");
    assert_eq!(removes(&plan(&o)), Some(3), "others first");
    // Itself last: leadership handed to a healthy voter first (whose
    // instance then removes it); with no healthy voter to take it, the
    // leader removes itself when that keeps quorum.
    let mut o = out_of_group(leader());
    o.members = Some(vec![member(1, "a", A), member(2, "b", B)]);
    let p = plan(&o);
    assert!(
        matches!(
            p.steps.first().map(|s| &s.action),
            Some(Action::TransferLeadership { member_id: 2, .. })
        ),
        "{p:?}"
    );
    assert_eq!(removes(&p), None, "no removal while it leads");
    let mut o = out_of_group(leader());
    o.members = Some(vec![
        member(1, "a", A),
        member(2, "b", B),
        member(3, "c", C),
    ]);
    if let Some(m) = o.members.as_mut() {
        m[1] = sick(member(2, "b", B), 0);
        m[2] = sick(member(3, "c", C), 0);
    }
    assert_eq!(
        removes(&plan(&o)),
        None,
        "1 of 2 healthy could not commit it"
    );
}

#[test]
fn quorum_arithmetic() {
    assert_eq!(quorum(1), 1);
    assert_eq!(quorum(3), 2);
    assert_eq!(quorum(4), 3);
    assert_eq!(quorum(5), 3);
    assert!(removal_keeps_quorum(3, 3, true)); // 2 of 2 left
    assert!(removal_keeps_quorum(3, 2, false)); // remove the sick one: 2 of 2
    assert!(!removal_keeps_quorum(3, 2, true)); // 1 of 2 left
    assert!(!removal_keeps_quorum(1, 1, true));
    assert!(removal_keeps_quorum(5, 3, false)); // 3 of 4 >= 3
    assert!(!removal_keeps_quorum(5, 3, true)); // 2 of 4 < 3
    // The removal itself must commit: 1 of 2 healthy cannot commit a
    // change, though 1 of 1 would be a quorum afterwards.
    assert!(!removal_keeps_quorum(2, 1, false));
    assert!(!removal_keeps_quorum(4, 2, false)); // 2 of 4 < 3
    assert!(removal_keeps_quorum(2, 2, false));
}

#[test]
fn the_group_lag_is_three_refreshes_and_at_least_3_s() {
    assert_eq!(PlannerConfig::group_lag_ms_for(1_000), 3_000);
    assert_eq!(PlannerConfig::group_lag_ms_for(100), 3_000);
    assert_eq!(PlannerConfig::group_lag_ms_for(15_000), 45_000);
    assert_eq!(PlannerConfig::group_lag_ms_for(u64::MAX), u64::MAX);
}
