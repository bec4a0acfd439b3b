//! The fenced protocol under the deterministic harness: no invariant is
//! violated over many seeds, every deliberate bug is caught, and a seed
//! replays exactly.

use super::Faults;
use super::harness::{self, Kind};

/// Seeds the suite runs (each one a scenario: 3, 5 or 7 instances, crashes,
/// lost disks, terminations, a coordinator crash mid-proposal, store
/// outages, a lossy and duplicating network). Larger sweeps:
/// `cargo run --release -p simulations -- sim --seeds 100000`.
const SEEDS: u64 = 1000;
/// How far each deliberate bug is hunted (each stops at the first catch).
const TEETH_SEEDS: u64 = 300;

#[test]
fn no_invariant_is_violated_over_many_seeds() {
    // Two halves on two threads (CI has two cores).
    let half = SEEDS / 2;
    let (a, b) = std::thread::scope(|scope| {
        let first = scope.spawn(|| harness::run_many(0..half, &Faults::default()));
        let second = harness::run_many(half..SEEDS, &Faults::default());
        (first.join(), second)
    });
    let Ok(a) = a else {
        panic!("the first half panicked");
    };
    for s in [&a, &b] {
        println!("{s:?}");
        assert_eq!(
            s.violations, 0,
            "seeds {:?}: first {:?} (replay: cargo run --release -p simulations -- sim --seed <seed>)",
            s.failing_seeds, s.first_violation
        );
    }
    assert_eq!(a.runs + b.runs, SEEDS);
    // Liveness is an invariant of each run (a decision, or a healthy
    // cluster, once the faults stop); most runs must also decide.
    assert!((a.decisions + b.decisions) * 2 > SEEDS);
}

#[test]
fn every_kind_of_scenario_is_covered() {
    let kinds: Vec<Kind> = (0..SEEDS)
        .map(|seed| harness::Scenario::generate(seed).kind)
        .collect();
    for k in [Kind::QuorumLoss, Kind::WipedCluster, Kind::Aftermath] {
        assert!(kinds.contains(&k), "no {k:?} scenario among the seeds");
    }
}

#[test]
fn a_seed_replays_exactly() {
    for seed in [3, 17, 42] {
        assert_eq!(
            harness::run(seed, &Faults::default()),
            harness::run(seed, &Faults::default())
        );
    }
}

/// The first seed (of at most `limit`) on which `faults` produce a
/// violation.
fn caught(faults: &Faults, limit: u64) -> Option<(u64, String)> {
    (0..limit).find_map(|seed| {
        let o = harness::run(seed, faults);
        o.violations.first().map(|v| (seed, v.clone()))
    })
}

macro_rules! teeth {
    ($name:ident, $field:ident) => {
        #[test]
        fn $name() {
            let faults = Faults {
                $field: true,
                ..Faults::default()
            };
            let found = caught(&faults, TEETH_SEEDS);
            println!("{}: {found:?}", stringify!($field));
            assert!(
                found.is_some(),
                "the harness misses the deliberate bug `{}` over {TEETH_SEEDS} seeds",
                stringify!($field)
            );
        }
    };
}

teeth!(
    catches_a_promise_sent_before_it_is_persisted,
    skip_persist_promise
);
teeth!(catches_an_accepted_value_ignored, ignore_accepted_value);
teeth!(catches_ranking_by_instance_id, rank_by_lowest_id);
teeth!(
    catches_fresh_instances_counted_as_acceptors,
    count_fresh_as_acceptors
);
teeth!(
    catches_seeding_without_the_conditional_create,
    skip_conditional_create
);
teeth!(catches_a_store_error_read_as_empty, store_error_as_empty);

/// Replays one seed with a full account of the end state:
/// `SEED=25 cargo test -p recovery replay_seed -- --ignored --nocapture`
/// (or `cargo run --release -p simulations -- sim --seed 25`).
#[test]
#[ignore]
fn replay_seed() {
    let seed: u64 = std::env::var("SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let (_, text) = harness::replay(seed, &Faults::default());
    println!("{text}");
}

/// Set-up shared by the protocol's scenario tests below.
mod scenario {
    use crate::fenced::{
        Ballot, DetectorSample, Effect, EffectKind, Envelope, Input, InstanceId, LocalData,
        Message, PersistedState, Probe, Protocol, ProtocolConfig, RecordListing, SeedRecord,
        SeedSource, SeedValue, SnapshotFacts, SnapshotListing, StoreFacts, observation::DataReport,
    };
    use std::collections::{BTreeMap, BTreeSet};

    pub fn ids(v: &[&str]) -> Vec<InstanceId> {
        v.iter().map(|s| s.to_string()).collect()
    }

    /// Instance `me` (boot id `boot`) holding the state of incarnation 1
    /// with `V_1 = voters`; it detects a loss after one probe and 1 s.
    pub fn member(me: &str, boot: u64, voters: &[&str]) -> Protocol {
        let cfg = ProtocolConfig {
            quorum_loss_timeout: 1_000,
            min_probes: 1,
            ..ProtocolConfig::default()
        };
        let persisted = PersistedState {
            incarnation: 1,
            voters: ids(voters),
            ..PersistedState::default()
        };
        Protocol::new(me, boot, cfg, Some(persisted))
    }

    /// Data of incarnation 1 of cluster `cluster` up to `commit_index`.
    pub fn wal(cluster: u64, commit_index: u64) -> LocalData {
        LocalData {
            cluster_id: Some(cluster),
            incarnation: 1,
            commit_index,
            applied_revision: 0,
            has_data: true,
        }
    }

    /// The store's record of incarnation 1 (seeded empty by `a`).
    pub fn record_1(voters: Vec<InstanceId>) -> SeedRecord {
        SeedRecord {
            incarnation: 1,
            value: SeedValue {
                source: SeedSource::Empty,
                seeder: "a".into(),
            },
            ballot: Ballot::new(0, ""),
            voters,
            token_suffix: 0,
            data_loss: false,
        }
    }

    pub fn store(records: Vec<SeedRecord>, newest_snapshot: Option<SnapshotFacts>) -> Input {
        Input::Store(StoreFacts {
            records: RecordListing::Complete(records),
            snapshots: SnapshotListing::Complete(newest_snapshot),
            learners: Default::default(),
        })
    }

    pub fn observe(at: u64, probe: Probe, certified_gone: &BTreeSet<InstanceId>) -> Input {
        Input::Observe(DetectorSample {
            at,
            probe: Some(probe),
            peers: BTreeMap::new(),
            certified_gone: certified_gone.clone(),
        })
    }

    /// No leader seen at 0, 0.5, 1 and 1.5 s; when the protocol asks for
    /// its data, `local` answers (and the observations stop). Every effect.
    pub fn lose_quorum(p: &mut Protocol, local: Option<LocalData>) -> Vec<Effect> {
        let mut fx = Vec::new();
        for at in [0, 500, 1_000, 1_500] {
            fx.extend(p.handle(at, observe(at, Probe::NoLeader, &BTreeSet::new())));
            let asked = fx
                .iter()
                .any(|e| matches!(e.kind, EffectKind::ReadLocalData));
            if let (true, Some(data)) = (asked, &local) {
                fx.extend(p.handle(at, Input::LocalData(data.clone())));
                break;
            }
        }
        fx
    }

    /// `fx`, plus what answering a `ReadLocalData` among them with `own`
    /// leads to (a coordinator fences itself last, once the others'
    /// promises make a majority: its own read comes then).
    pub fn answer_own_read(p: &mut Protocol, mut fx: Vec<Effect>, own: &LocalData) -> Vec<Effect> {
        if fx
            .iter()
            .any(|e| matches!(e.kind, EffectKind::ReadLocalData))
        {
            fx.extend(p.handle(1_600, Input::LocalData(own.clone())));
        }
        fx
    }

    /// `(to, ballot)` of every prepare sent.
    pub fn prepares(fx: &[Effect]) -> Vec<(InstanceId, Ballot)> {
        fx.iter()
            .filter_map(|e| match &e.kind {
                EffectKind::Send(Envelope {
                    to,
                    message: Message::Prepare { ballot, .. },
                    ..
                }) => Some((to.clone(), ballot.clone())),
                _ => None,
            })
            .collect()
    }

    /// Every value proposed (sent in an accept).
    pub fn proposed(fx: &[Effect]) -> Vec<SeedValue> {
        fx.iter()
            .filter_map(|e| match &e.kind {
                EffectKind::Send(Envelope {
                    message: Message::Accept { value, .. },
                    ..
                }) => Some(value.clone()),
                _ => None,
            })
            .collect()
    }

    /// A message from `from` to `to`, an answer to boot id `to_boot`.
    pub fn message(from: &str, to: &str, to_boot: Option<u64>, message: Message) -> Input {
        Input::Message(Envelope {
            from: from.into(),
            from_boot: 1,
            to: to.into(),
            to_boot,
            message,
        })
    }

    /// `from`'s promise for incarnation 2 (with what it accepted) and its
    /// data report (naming `V_1` as its state file knows it), answering
    /// coordinator `to` (boot id `boot`).
    pub fn promise_and_report(
        p: &mut Protocol,
        (to, boot): (&str, u64),
        ballot: &Ballot,
        from: &str,
        accepted: Option<crate::fenced::messages::AcceptedValue>,
        data: LocalData,
        voters: Vec<InstanceId>,
    ) -> Vec<Effect> {
        let mut fx = p.handle(
            1_600,
            message(
                from,
                to,
                Some(boot),
                Message::Promise {
                    target: 2,
                    ballot: ballot.clone(),
                    accepted,
                },
            ),
        );
        fx.extend(p.handle(
            1_600,
            message(
                from,
                to,
                Some(boot),
                Message::Report {
                    target: 2,
                    ballot: ballot.clone(),
                    report: DataReport {
                        data,
                        has_state: true,
                        voters,
                    },
                },
            ),
        ));
        fx
    }
}

/// A member that read its data while etcd still ran (and went on
/// committing) must report what its disk holds after the freeze, not the
/// earlier read: the real-etcd test found a survivor ranked below an older
/// store snapshot because of a stale early read.
#[test]
fn the_data_report_is_read_after_the_freeze() {
    use super::{Ballot, EffectKind, Envelope, Input, Message};
    use scenario::*;
    let mut p = member("b", 7, &["a", "b", "c"]);
    let report_of = |e: &super::Effect| match &e.kind {
        EffectKind::Send(Envelope {
            message: Message::Report { report, .. },
            ..
        }) => Some(report.data.commit_index),
        _ => None,
    };
    p.handle(0, Input::LocalData(wal(1, 5)));
    // The loss is detected; "b" sees nobody else alive and coordinates,
    // but does not fence itself: its promise would not make a majority
    // (a coordinator cut off in a minority keeps its etcd).
    let fx = lose_quorum(&mut p, None);
    assert!(!prepares(&fx).is_empty(), "b coordinates: {fx:?}");
    assert!(
        fx.iter().all(|e| !matches!(e.kind, EffectKind::Freeze)),
        "no self-freeze without a majority: {fx:?}"
    );
    // "a" prepares a higher ballot: b promises, freezes, and reads again.
    let fx = p.handle(
        1_550,
        message(
            "a",
            "b",
            None,
            Message::Prepare {
                target: 2,
                voters: ids(&["a", "b", "c"]),
                ballot: Ballot::new(4, "a"),
            },
        ),
    );
    let at = |pred: &dyn Fn(&EffectKind) -> bool| fx.iter().position(|e| pred(&e.kind));
    let freeze = at(&|k| matches!(k, EffectKind::Freeze)).expect("frozen by its promise");
    let read = at(&|k| matches!(k, EffectKind::ReadLocalData)).expect("reads its data again");
    assert!(
        freeze < read,
        "the read comes after etcd is stopped: {fx:?}"
    );
    assert!(
        fx.iter().all(|e| report_of(e).is_none()),
        "no report from the stale read: {fx:?}"
    );
    p.handle(1_600, Input::LocalData(wal(1, 9)));
    // A higher ballot from "a": the report it gets is the fresh read.
    let prepare = message(
        "a",
        "b",
        None,
        Message::Prepare {
            target: 2,
            voters: ids(&["a", "b", "c"]),
            ballot: Ballot::new(5, "a"),
        },
    );
    let reported: Vec<u64> = p
        .handle(1_700, prepare)
        .iter()
        .filter_map(report_of)
        .collect();
    assert_eq!(reported, vec![9]);
}

/// Every member of `V_n` terminated and replaced by new ids (found by the
/// real-etcd test "all stopped, wiped and replaced"): a replacement is no
/// acceptor of `V_n`, so the coordinator is the only acceptor left and must
/// promise and accept itself; the store's snapshot seeds.
#[test]
fn a_fully_replaced_group_seeds_from_the_store() {
    use super::{EffectKind, GroupFacts, Input, LocalData, Probe, SeedSource, SnapshotFacts};
    use scenario::*;
    use std::collections::BTreeSet;
    let old = ids(&["a", "b", "c"]);
    let gone: BTreeSet<String> = old.iter().cloned().collect();
    let mut p = member("d", 7, &["a", "b", "c"]);
    p.handle(
        0,
        Input::Group(GroupFacts {
            instances: ids(&["d", "e", "f"]).into_iter().collect(),
            certified_gone: gone.clone(),
        }),
    );
    let snapshot = SnapshotFacts {
        name: "final".into(),
        cluster_id: None,
        incarnation: 1,
        commit_index: 500,
        revision: 480,
    };
    p.handle(0, store(vec![record_1(old)], Some(snapshot)));
    let mut created = None;
    for step in 0..40u64 {
        let at = step * 250;
        let mut queue = p.handle(at, observe(at, Probe::Failed, &gone));
        while let Some(e) = queue.pop() {
            match e.kind {
                EffectKind::ReadLocalData => {
                    queue.extend(p.handle(at, Input::LocalData(LocalData::empty())))
                }
                EffectKind::CreateRecord(r) => created = Some(r),
                _ => {}
            }
        }
        if created.is_some() {
            break;
        }
    }
    let r = created.unwrap_or_else(|| panic!("no record created: {:?}", p.explain()));
    assert_eq!(r.incarnation, 2);
    assert_eq!(r.value.seeder, "d");
    assert!(
        matches!(&r.value.source, SeedSource::Store { name, .. } if name == "final"),
        "{r:?}"
    );
}

/// The store's snapshot holds the newest data and its listing fails while
/// the records answer: the coordinator waits instead of ranking without it
/// (a listing error is never "no snapshot"), and seeds from the store once
/// the listing answers.
#[test]
fn a_failed_snapshot_listing_is_waited_out_never_read_as_no_snapshot() {
    use super::{
        EffectKind, GroupFacts, Input, Probe, RecordListing, SeedSource, SnapshotFacts,
        SnapshotListing, StoreFacts,
    };
    use scenario::*;
    use std::collections::BTreeSet;
    let old = ids(&["a", "b", "c"]);
    let gone: BTreeSet<String> = ids(&["b", "c"]).into_iter().collect();
    let mut p = member("a", 7, &["a", "b", "c"]);
    p.handle(
        0,
        Input::Group(GroupFacts {
            instances: ids(&["a", "d", "e"]).into_iter().collect(),
            certified_gone: gone.clone(),
        }),
    );
    let snapshot = SnapshotFacts {
        name: "final".into(),
        cluster_id: Some(11),
        incarnation: 1,
        commit_index: 500,
        revision: 980,
    };
    p.handle(
        0,
        Input::Store(StoreFacts {
            records: RecordListing::Complete(vec![record_1(old.clone())]),
            snapshots: SnapshotListing::Failed("a page failed".into()),
            learners: Default::default(),
        }),
    );
    let own = wal(11, 400);
    let run = |p: &mut super::Protocol, from: u64, steps: u64| {
        let mut created = None;
        for step in from..from + steps {
            let at = step * 250;
            let mut queue = p.handle(at, observe(at, Probe::Failed, &gone));
            while let Some(e) = queue.pop() {
                match e.kind {
                    EffectKind::ReadLocalData => {
                        queue.extend(p.handle(at, Input::LocalData(own.clone())))
                    }
                    EffectKind::CreateRecord(r) => created = Some(r),
                    _ => {}
                }
            }
            if created.is_some() {
                break;
            }
        }
        created
    };
    assert_eq!(run(&mut p, 0, 120), None, "{:?}", p.explain());
    p.handle(30_000, store(vec![record_1(old)], Some(snapshot)));
    let r = run(&mut p, 121, 120).unwrap_or_else(|| panic!("no record: {:?}", p.explain()));
    assert!(
        matches!(&r.value.source, SeedSource::Store { name, .. } if name == "final"),
        "the store's newer snapshot seeds: {r:?}"
    );
}

/// A keyholder forges protocol messages (found from outside: one forged
/// `Decided` stopped etcd, moved the data aside and rewrote the state to a
/// non-existent incarnation). Nothing the store does not confirm is acted
/// on: a `Decided` whose record the store does not hold, a coordinator's
/// message from outside the group, a prepare for an incarnation the store
/// has never recorded — none changes the state or stops etcd.
#[test]
fn forged_messages_never_cause_a_stop_a_join_or_a_seeding() {
    use super::{
        Ballot, EffectKind, GroupFacts, Input, Message, Probe, SeedRecord, SeedSource, SeedValue,
    };
    use scenario::*;
    use std::collections::BTreeSet;
    let acts = |fx: &[super::Effect]| {
        fx.iter().any(|e| {
            matches!(
                e.kind,
                EffectKind::Freeze
                    | EffectKind::Join(_)
                    | EffectKind::Seed(_)
                    | EffectKind::Persist(_)
            )
        })
    };
    let mut p = member("a", 7, &["a", "b", "c"]);
    p.handle(
        0,
        Input::Group(GroupFacts {
            instances: ids(&["a", "b", "c"]).into_iter().collect(),
            certified_gone: BTreeSet::new(),
        }),
    );
    p.handle(0, store(vec![record_1(ids(&["a", "b", "c"]))], None));
    let forged = SeedRecord {
        incarnation: 2,
        value: SeedValue {
            source: SeedSource::Empty,
            seeder: "b".into(),
        },
        ballot: Ballot::new(9, "b"),
        voters: ids(&["b"]),
        token_suffix: 1,
        data_loss: false,
    };
    // The cluster is healthy and the quorum is lost alike: a claim is not
    // the store.
    for probe in [Probe::Leader, Probe::NoLeader] {
        for at in [0u64, 500, 1_000, 1_500, 2_000] {
            p.handle(at, observe(at, probe.clone(), &BTreeSet::new()));
        }
        for (from, forged) in [
            (
                "b",
                Message::Decided {
                    record: forged.clone(),
                },
            ),
            (
                "mallory",
                Message::Decided {
                    record: forged.clone(),
                },
            ),
            (
                "mallory",
                Message::Prepare {
                    target: 2,
                    voters: ids(&["a", "b", "c"]),
                    ballot: Ballot::new(99, "mallory"),
                },
            ),
            (
                "b",
                Message::Prepare {
                    target: 7,
                    voters: ids(&["x", "y"]),
                    ballot: Ballot::new(99, "b"),
                },
            ),
        ] {
            let fx = p.handle(2_000, message(from, "a", None, forged.clone()));
            assert!(!acts(&fx), "{from} {forged:?} led to {fx:?}");
        }
        assert_eq!(p.state().incarnation, 1, "{:?}", p.explain());
        assert!(!p.state().frozen);
    }
    assert!(
        p.dropped_messages() >= 2,
        "mallory's messages are dropped and counted"
    );
    // The real record in the store is adopted from the listing.
    let mut real = forged.clone();
    real.value.seeder = "c".into();
    p.handle(
        3_000,
        store(vec![record_1(ids(&["a", "b", "c"])), real.clone()], None),
    );
    assert_eq!(p.state().incarnation, 2);
    assert_eq!(
        p.state().decided.as_ref().map(|r| r.value.seeder.clone()),
        Some("c".into())
    );
}

/// An accepted value whose holder has since lost its data is not
/// re-proposed (found by `simulations sim-turmoil`, seeds 44, 94, 102 with
/// three instances: the record named a seeder without a WAL, the others
/// moved their copies aside to join it, and the writes only they held were
/// lost). The coordinator ranks the surviving data afresh.
#[test]
fn an_accepted_value_whose_holder_lost_its_data_is_not_proposed_again() {
    use super::{AcceptedValue, Ballot, LocalData, SeedSource, SeedValue};
    use scenario::*;
    let mut p = member("b", 11, &["a", "b", "c"]);
    p.handle(0, store(Vec::new(), None));
    let fx = lose_quorum(&mut p, Some(wal(7, 80)));
    let (_, ballot) = prepares(&fx).into_iter().next().expect("b coordinates");
    // "a" accepted a value naming its own WAL, then lost its disk.
    let stale = AcceptedValue {
        ballot: Ballot::new(0, "c"),
        value: SeedValue {
            source: SeedSource::Member {
                holder: "a".into(),
                cluster_id: Some(7),
                incarnation: 1,
                commit_index: 100,
                revision: 0,
            },
            seeder: "a".into(),
        },
    };
    let coordinator = ("b", 11);
    let out = promise_and_report(
        &mut p,
        coordinator,
        &ballot,
        "a",
        Some(stale),
        LocalData::empty(),
        Vec::new(),
    );
    let out = answer_own_read(&mut p, out, &wal(7, 80));
    let mut out = out;
    out.extend(promise_and_report(
        &mut p,
        coordinator,
        &ballot,
        "c",
        None,
        wal(7, 90),
        Vec::new(),
    ));
    let out = answer_own_read(&mut p, out, &wal(7, 80));
    let proposed = proposed(&out);
    assert!(!proposed.is_empty(), "a proposal: {out:?}");
    for v in proposed {
        assert_eq!(
            v.seeder, "c",
            "the best surviving data seeds, not a's lost WAL: {v}"
        );
    }
}

/// `join_owed`: the decided record is owed to a state file behind it, not
/// to one that reached it, and never while this instance is its seeder.
#[test]
fn a_join_is_owed_until_the_state_file_reaches_the_decided_record() {
    use super::{
        Ballot, PersistedState, Protocol, ProtocolConfig, SeedRecord, SeedSource, SeedValue,
    };
    let record = SeedRecord {
        incarnation: 3,
        value: SeedValue {
            source: SeedSource::Empty,
            seeder: "a".into(),
        },
        ballot: Ballot::new(1, "a"),
        voters: vec!["a".into()],
        token_suffix: 1,
        data_loss: false,
    };
    let with = |seed_pending: bool, decided: Option<SeedRecord>| {
        let persisted = PersistedState {
            incarnation: 3,
            decided,
            seed_pending,
            ..PersistedState::default()
        };
        Protocol::new("b", 1, ProtocolConfig::default(), Some(persisted))
    };
    let cases = [
        (
            false,
            Some(record.clone()),
            2,
            true,
            "state file behind: join",
        ),
        (
            false,
            Some(record.clone()),
            3,
            false,
            "state file reached it",
        ),
        (
            true,
            Some(record.clone()),
            2,
            false,
            "this instance seeds it",
        ),
        (false, None, 0, false, "nothing decided"),
    ];
    for (seed_pending, decided, local, owed, name) in cases {
        assert_eq!(
            with(seed_pending, decided).join_owed(local).is_some(),
            owed,
            "{name}"
        );
    }
}

/// A coordinator whose own `V_n` is older than the cluster's (it was cut
/// off while `d` joined) learns of `d` — from another member's report or
/// from the store's record — and waits for `d` too: `d` may hold the
/// newest data (found by `simulations sim-turmoil`, seed 292 with three
/// instances and a group grown mid-run: the record seeded from the
/// coordinator's stale WAL while `d` held 141 newer acknowledged writes).
#[test]
fn a_member_the_coordinator_did_not_know_is_waited_for() {
    use scenario::*;
    // `listed`: V_1 in the store's record; `d_via_report`: c's report
    // names d. Either way the proposal must wait for d and seed from it.
    for (listed, d_via_report) in [
        (ids(&["a", "b", "c"]), true),
        (ids(&["a", "b", "c", "d"]), false),
    ] {
        let mut p = member("a", 11, &["a", "b", "c"]);
        p.handle(0, store(vec![record_1(listed)], None));
        let prepared = prepares(&lose_quorum(&mut p, Some(wal(7, 80))));
        let (_, ballot) = prepared.first().cloned().expect("a coordinates");
        assert_eq!(
            prepared.iter().any(|(to, _)| to == "d"),
            !d_via_report,
            "d is prepared at once only when the store lists it: {prepared:?}"
        );
        let coordinator = ("a", 11);
        let c_view = if d_via_report {
            ids(&["a", "b", "c", "d"])
        } else {
            ids(&["a", "b", "c"])
        };
        let out = promise_and_report(
            &mut p,
            coordinator,
            &ballot,
            "b",
            None,
            wal(7, 70),
            ids(&["a", "b", "c"]),
        );
        let mut out = answer_own_read(&mut p, out, &wal(7, 80));
        let c = promise_and_report(&mut p, coordinator, &ballot, "c", None, wal(7, 90), c_view);
        out.extend(answer_own_read(&mut p, c, &wal(7, 80)));
        assert!(
            proposed(&out).is_empty(),
            "no proposal before d answered: {:?}",
            p.explain()
        );
        let explained = p.explain();
        assert!(
            explained
                .waiting_for
                .iter()
                .any(|w| w.starts_with("waiting for d ")),
            "{explained:?}"
        );
        let out = promise_and_report(
            &mut p,
            coordinator,
            &ballot,
            "d",
            None,
            wal(7, 120),
            ids(&["a", "b", "c", "d"]),
        );
        let out = answer_own_read(&mut p, out, &wal(7, 80));
        let proposed = proposed(&out);
        assert!(!proposed.is_empty(), "a proposal once d answered");
        assert!(proposed.iter().all(|v| v.seeder == "d"), "{proposed:?}");
    }
}
