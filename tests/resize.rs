//! Resize by editing the group file, 3 → 5 → 3, under a write load: never
//! fewer voters than a quorum of the voters at any sampled moment, one
//! membership change at a time; and etcd kill -9 of the leader.

mod common;
use common::cluster::*;
use common::*;
use std::time::{Duration, Instant};

/// Samples the member list until `done` or `limit`; checks every sample.
fn sample_until(
    c: &Cluster,
    limit: Duration,
    mut done: impl FnMut(&[(String, bool)]) -> bool,
) -> Vec<Vec<(String, bool)>> {
    let start = Instant::now();
    let mut samples = Vec::new();
    while start.elapsed() < limit {
        if let Some((_, members)) = c.members() {
            let finished = done(&members);
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

fn check_samples(samples: &[Vec<(String, bool)>]) {
    let mut previous: Option<&Vec<(String, bool)>> = None;
    for s in samples {
        let voters = s.iter().filter(|(_, learner)| !learner).count();
        let learners = s.len() - voters;
        assert!(learners <= 1, "one learner at a time: {s:?}");
        assert!(
            voters >= 2,
            "never fewer voters than a quorum of three: {s:?}"
        );
        if let Some(p) = previous {
            // One change at a time: consecutive samples differ by at most one
            // add, remove or promotion (samples may skip intermediate states
            // only if the list changed twice within 100 ms, which etcd's
            // serialised changes and eco's one-change-per-pass make unlikely;
            // allow at most two differences to keep the check robust).
            let diff = s.iter().filter(|m| !p.contains(m)).count()
                + p.iter().filter(|m| !s.contains(m)).count();
            assert!(
                diff <= 2,
                "more than one change between samples: {p:?} -> {s:?}"
            );
        }
        previous = Some(s);
    }
}

#[test]
fn resize_3_5_3_and_leader_crash() {
    let mut c = Cluster::new();
    let ids = ["eco-1", "eco-2", "eco-3", "eco-4", "eco-5"];
    for (n, id) in ids.iter().enumerate() {
        c.add(id, &format!("127.0.8.{}", n + 1));
    }
    c.set_group(&ids[..1]);
    c.start("eco-1");
    c.wait_voters(&ids[..1], Duration::from_secs(30))
        .expect("seed");
    c.set_group(&ids[..3]);
    std::thread::sleep(Duration::from_millis(700));
    c.start("eco-2");
    c.start("eco-3");
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
    c.set_group(&ids);
    std::thread::sleep(Duration::from_millis(700));
    c.start("eco-4");
    c.start("eco-5");
    let want5: Vec<(String, bool)> = ids.iter().map(|i| (i.to_string(), false)).collect();
    let samples = sample_until(&c, Duration::from_secs(90), |m| m == want5.as_slice());
    check_samples(&samples);
    assert_eq!(c.wait_voters(&ids, Duration::from_secs(30)), Some(cluster));
    eprintln!("resize 3 -> 5: {:?}", t.elapsed());

    // 5 -> 3: two instances leave the group; their members are removed one
    // at a time.
    let t = Instant::now();
    c.set_group(&ids[..3]);
    let want3: Vec<(String, bool)> = ids[..3].iter().map(|i| (i.to_string(), false)).collect();
    let samples = sample_until(&c, Duration::from_secs(60), |m| m == want3.as_slice());
    check_samples(&samples);
    eprintln!("resize 5 -> 3: {:?}", t.elapsed());
    for id in ["eco-4", "eco-5"] {
        wait_until(Duration::from_secs(15), || {
            c.etcd_pids(id).is_empty().then_some(())
        })
        .expect("departed etcd stopped");
        c.signal(id, libc::SIGTERM);
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
