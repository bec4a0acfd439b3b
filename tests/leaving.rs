//! An instance removed from its group while its eco runs leaves: it never
//! joins again, never moves its data aside, keeps etcd while its member is
//! in the cluster, and stops it once the cluster removed the member; the
//! cluster removes departed members one at a time, and when the instance
//! beside the leader is the one removed, it removes the others first and
//! itself last. `eco status` of a leaving instance explains it.

use std::time::{Duration, Instant};
use testkit::cluster::Cluster;
use testkit::eco_bin;
use testkit::etcd::{client, rt};
use testkit::ledger::{Ledger, lost_writes};
use testkit::process::run_eco;
use testkit::wait_until;

/// The instance beside the etcd leader, among `ids`.
fn leader_of(c: &Cluster, ids: &[&str]) -> Option<String> {
    ids.iter()
        .find(|id| {
            rt().block_on(async {
                let mut cl = client(&c.nodes[**id].endpoint()).await?;
                let st = cl.status().await.ok()?;
                Some(st.leader() == st.header()?.member_id())
            })
            .unwrap_or(false)
        })
        .map(|id| id.to_string())
}

/// Member ids seen over `span`: more than one change per removed member
/// would be a fight (add/remove cycles).
fn member_id_sets(c: &Cluster, span: Duration) -> Vec<Vec<u64>> {
    let start = Instant::now();
    let mut sets: Vec<Vec<u64>> = Vec::new();
    while start.elapsed() < span {
        if let Some(m) = c.member_ids() {
            let ids: Vec<u64> = m.iter().map(|(id, _, _)| *id).collect();
            if sets.last() != Some(&ids) {
                sets.push(ids);
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    sets
}

fn status_of(c: &Cluster, id: &str) -> serde_json::Value {
    let n = &c.nodes[id];
    let (code, out, err) = run_eco(
        &eco_bin!(),
        &[
            "status",
            "--json",
            "--config",
            n.config.to_str().unwrap(),
            "--instance-id",
            id,
        ],
    );
    assert_eq!(code, 0, "eco status of {id}: {err}");
    serde_json::from_str(&out).expect("status JSON")
}

fn assert_left(c: &Cluster, id: &str) {
    wait_until(Duration::from_secs(20), || {
        c.etcd_pids(id).is_empty().then_some(())
    })
    .unwrap_or_else(|| panic!("{id}'s etcd still runs after its member was removed"));
    let n = &c.nodes[id];
    assert!(
        n.data_dir().join("member/wal").exists(),
        "{id}'s data is kept in place"
    );
    let moved = eco::local::data_dir::moved_aside(&n.data_dir());
    assert!(moved.is_empty(), "{id} moved data aside: {moved:?}");
    let status = wait_until(Duration::from_secs(10), || {
        let s = status_of(c, id);
        (s["phase"] == "leaving" && s["next"]["reason"].as_str()?.contains("has left")).then_some(s)
    })
    .unwrap_or_else(|| panic!("{id} does not say it left: {}", status_of(c, id)));
    assert_eq!(
        status["ready"], false,
        "a leaving instance takes no clients"
    );
}

#[test]
fn removed_instances_leave_the_leader_last_and_nothing_fights() {
    let mut c = Cluster::integration(eco_bin!()).expect("cluster");
    let ids = ["eco-1", "eco-2", "eco-3"];
    for (n, id) in ids.iter().enumerate() {
        c.add(id, &format!("127.0.13.{}", n + 1)).unwrap();
    }
    c.set_group(&ids).unwrap();
    for id in ids {
        c.start(id).unwrap();
    }
    let cluster = c
        .wait_voters(&ids, Duration::from_secs(60))
        .expect("three voters");
    let leader = leader_of(&c, &ids).expect("a leader");
    let followers: Vec<&str> = ids.iter().copied().filter(|id| *id != leader).collect();
    let ledger = Ledger::start(c.endpoints(&followers), 20_000);

    // A follower leaves the group while its eco keeps running.
    let gone = followers[1];
    let kept: Vec<&str> = ids.iter().copied().filter(|id| *id != gone).collect();
    let t = Instant::now();
    c.set_group(&kept).unwrap();
    assert_eq!(
        c.wait_voters(&kept, Duration::from_secs(30)),
        Some(cluster),
        "the follower's member removed"
    );
    eprintln!("a follower left: {:?}", t.elapsed());
    let sets = member_id_sets(&c, Duration::from_secs(5));
    assert_eq!(sets.len(), 1, "no add/remove cycles: {sets:?}");
    assert_left(&c, gone);

    // Then the instance beside the leader leaves: it removes itself last.
    let t = Instant::now();
    let last = followers[0];
    c.set_group(&[last]).unwrap();
    assert_eq!(
        c.wait_voters(&[last], Duration::from_secs(30)),
        Some(cluster),
        "the leader's instance removed its own member"
    );
    eprintln!("the leader's instance left: {:?}", t.elapsed());
    assert_left(&c, &leader);
    let sets = member_id_sets(&c, Duration::from_secs(3));
    assert_eq!(sets.len(), 1, "no add/remove cycles: {sets:?}");

    let (acked, failed) = ledger.finish();
    let lost = lost_writes(&c.nodes[last].endpoint(), &acked);
    eprintln!(
        "ledger: {} acknowledged, {failed} failed, {} lost",
        acked.len(),
        lost.len()
    );
    assert!(lost.is_empty(), "lost acknowledged writes: {lost:?}");
}
