//! Resize by editing the group file, 3 → 5 → 3, under a write load: never
//! fewer voters than a quorum of the voters at any sampled moment, one
//! membership change at a time; and etcd kill -9 of the leader.

use std::time::{Duration, Instant};
use testkit::cluster::Cluster;
use testkit::eco_bin;
use testkit::etcd::{client, rt};
use testkit::ledger::{Ledger, lost_writes};
use testkit::process::kill;
use testkit::wait_until;

type Sample = Vec<(u64, String, bool)>;

/// Samples the member list (by member id) until `done` or `limit`; the
/// samples are checked afterwards.
fn sample_until(c: &Cluster, limit: Duration, want: &[&str]) -> Vec<Sample> {
    let start = Instant::now();
    let mut samples = Vec::new();
    while start.elapsed() < limit {
        if let Some(members) = c.member_ids() {
            let mut named: Vec<(&str, bool)> =
                members.iter().map(|(_, n, l)| (n.as_str(), *l)).collect();
            named.sort();
            let finished = named == want.iter().map(|n| (*n, false)).collect::<Vec<_>>();
            samples.push(members);
            if finished {
                return samples;
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!(
        "not done within {limit:?}; last samples: {:?}",
        samples.iter().rev().take(3).collect::<Vec<_>>()
    );
}

/// Membership changes between two samples, per member id: an add, a removal
/// or a promotion each count one. A member's name appearing (empty until it
/// starts) is not a change.
fn changes(before: &Sample, after: &Sample) -> usize {
    let learner = |s: &Sample, id: u64| s.iter().find(|m| m.0 == id).map(|m| m.2);
    let added_or_promoted = after
        .iter()
        .filter(|m| learner(before, m.0) != Some(m.2))
        .count();
    let removed = before
        .iter()
        .filter(|m| learner(after, m.0).is_none())
        .count();
    added_or_promoted + removed
}

fn check_samples(samples: &[Sample]) {
    let mut previous: Option<&Sample> = None;
    for s in samples {
        let voters = s.iter().filter(|m| !m.2).count();
        let learners = s.len() - voters;
        assert!(learners <= 1, "one learner at a time: {s:?}");
        assert!(
            voters >= 2,
            "never fewer voters than a quorum of three: {s:?}"
        );
        if let Some(p) = previous {
            // One change at a time per actor. Two actors may each make one
            // change between two samples 100 ms apart (the leader promotes
            // a learner, the next joiner adds itself at once after), so at
            // most two; more means a batch of changes.
            let n = changes(p, s);
            assert!(n <= 2, "{n} changes between samples: {p:?} -> {s:?}");
        }
        previous = Some(s);
    }
}

#[test]
fn changes_are_counted_per_member_id() {
    let s = |v: &[(u64, &str, bool)]| -> Sample {
        v.iter().map(|(i, n, l)| (*i, n.to_string(), *l)).collect()
    };
    let three = s(&[(1, "a", false), (2, "b", false), (3, "c", false)]);
    let added = s(&[
        (1, "a", false),
        (2, "b", false),
        (3, "c", false),
        (4, "", true),
    ]);
    let started = s(&[
        (1, "a", false),
        (2, "b", false),
        (3, "c", false),
        (4, "d", true),
    ]);
    let promoted = s(&[
        (1, "a", false),
        (2, "b", false),
        (3, "c", false),
        (4, "d", false),
    ]);
    let swapped = s(&[(1, "a", false), (2, "b", false), (5, "", true)]);
    assert_eq!(changes(&three, &three), 0);
    assert_eq!(changes(&three, &added), 1);
    assert_eq!(
        changes(&added, &started),
        0,
        "a name appearing is no change"
    );
    assert_eq!(changes(&started, &promoted), 1);
    assert_eq!(changes(&added, &promoted), 1);
    assert_eq!(changes(&three, &swapped), 2);
    assert_eq!(changes(&promoted, &swapped), 3);
}

#[test]
fn resize_3_5_3_and_leader_crash() {
    let mut c = Cluster::integration(eco_bin!()).expect("cluster");
    let ids = ["eco-1", "eco-2", "eco-3", "eco-4", "eco-5"];
    for (n, id) in ids.iter().enumerate() {
        c.add(id, &format!("127.0.8.{}", n + 1)).unwrap();
    }
    c.set_group(&ids[..1]).unwrap();
    c.start("eco-1").unwrap();
    c.wait_voters(&ids[..1], Duration::from_secs(30))
        .expect("seed");
    c.set_group(&ids[..3]).unwrap();
    std::thread::sleep(Duration::from_millis(700));
    c.start("eco-2").unwrap();
    c.start("eco-3").unwrap();
    let cluster = c
        .wait_voters(&ids[..3], Duration::from_secs(60))
        .expect("three voters");
    let ledger = Ledger::start(c.endpoints(&ids[..3]), 20_000);

    // etcd kill -9 of the leader: a new leader, the old one rejoins.
    let leader = ids[..3]
        .iter()
        .find(|id| {
            rt().block_on(async {
                let mut cl = client(&c.nodes[**id].endpoint()).await?;
                let st = cl.status().await.ok()?;
                Some(st.leader() == st.header()?.member_id())
            })
            .unwrap_or(false)
        })
        .copied()
        .expect("a leader");
    let pid = c.etcd_pids(leader)[0];
    let t = Instant::now();
    kill(pid, libc::SIGKILL);
    wait_until(Duration::from_secs(30), || {
        let pids = c.etcd_pids(leader);
        (!pids.is_empty() && pids[0] != pid).then_some(())
    })
    .expect("leader's etcd restarted");
    assert_eq!(
        c.wait_voters(&ids[..3], Duration::from_secs(30)),
        Some(cluster),
        "3/3 after leader crash"
    );
    eprintln!(
        "etcd kill -9 on the leader -> 3/3 healthy voters: {:?}",
        t.elapsed()
    );

    // 3 -> 5.
    let t = Instant::now();
    c.set_group(&ids).unwrap();
    std::thread::sleep(Duration::from_millis(700));
    c.start("eco-4").unwrap();
    c.start("eco-5").unwrap();
    let samples = sample_until(&c, Duration::from_secs(90), &ids);
    check_samples(&samples);
    assert_eq!(c.wait_voters(&ids, Duration::from_secs(30)), Some(cluster));
    eprintln!("resize 3 -> 5: {:?}", t.elapsed());

    // 5 -> 3: two instances leave the group; their members are removed one
    // at a time.
    let t = Instant::now();
    c.set_group(&ids[..3]).unwrap();
    let samples = sample_until(&c, Duration::from_secs(60), &ids[..3]);
    check_samples(&samples);
    eprintln!("resize 5 -> 3: {:?}", t.elapsed());
    // A snapshot is taken before each removal (`recovery::planner::snapshot_first`).
    let before_removal = ids[..3]
        .iter()
        .map(|id| {
            c.nodes[*id]
                .log()
                .matches("snapshot before removing member")
                .count()
        })
        .sum::<usize>();
    assert!(
        before_removal >= 2,
        "a snapshot before each of the two removals, found {before_removal}"
    );
    // Each step is a structured event in the logs (docs/operations.md,
    // "Events"), and counted in eco_actions_total.
    let events = |name: &str| {
        ids.iter()
            .map(|id| {
                c.nodes[*id]
                    .log()
                    .matches(&format!("event=\"{name}\""))
                    .count()
            })
            .sum::<usize>()
    };
    for (name, at_least) in [
        ("cluster.forming", 1),
        ("member.added_as_learner", 4),
        ("member.promoted", 4),
        ("action.started", 10),
        ("member.removed", 2),
        ("etcd.exited", 1),
    ] {
        let seen = events(name);
        assert!(
            seen >= at_least,
            "{seen} {name} events, expected {at_least} or more"
        );
    }
    let removals_counted: u64 = ids[..3]
        .iter()
        .map(|id| {
            let api: std::net::SocketAddr = format!("{}:2390", c.nodes[*id].address)
                .parse()
                .expect("an address");
            let (_, body) = rt()
                .block_on(eco::api::status_client::get(
                    api,
                    "/metrics",
                    Duration::from_secs(5),
                ))
                .expect("a scrape");
            let text = String::from_utf8_lossy(&body).into_owned();
            text.lines()
                .find_map(|l| {
                    l.strip_prefix("eco_actions_total{action=\"remove_member\",outcome=\"done\"} ")
                })
                .and_then(|v| v.trim().parse::<u64>().ok())
                .expect("eco_actions_total of remove_member")
        })
        .sum();
    assert!(
        removals_counted >= 2,
        "eco_actions_total counts {removals_counted} removals"
    );
    for id in ["eco-4", "eco-5"] {
        wait_until(Duration::from_secs(15), || {
            c.etcd_pids(id).is_empty().then_some(())
        })
        .expect("departed etcd stopped");
        c.stop(id, libc::SIGTERM).unwrap();
    }
    assert_eq!(
        c.wait_voters(&ids[..3], Duration::from_secs(30)),
        Some(cluster)
    );

    let (acked, failed) = ledger.finish();
    let lost = lost_writes(&c.nodes["eco-1"].endpoint(), &acked);
    eprintln!(
        "ledger: {} acknowledged, {failed} failed, {} lost",
        acked.len(),
        lost.len()
    );
    assert!(acked.len() > 100, "the workload ran");
    assert!(lost.is_empty(), "acknowledged writes lost: {lost:?}");
}
