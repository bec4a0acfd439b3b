//! The cluster lifecycle on real etcd with several eco processes: grow from
//! one, learners joining one at a time, etcd crash, wiped member, departure,
//! the add-but-never-started crash point, and no second bootstrap — under a
//! write load whose acknowledged writes must all survive.

use std::time::{Duration, Instant};
use testkit::cluster::Cluster;
use testkit::eco_bin;
use testkit::etcd::{client, read, rt};
use testkit::ledger::{Ledger, lost_writes};
use testkit::process::kill;
use testkit::wait_until;

#[test]
fn grow_crash_wipe_depart_and_recover_without_losing_writes() {
    let mut c = Cluster::integration(eco_bin!()).expect("cluster");
    for (id, addr) in [
        ("eco-1", "127.0.7.1"),
        ("eco-2", "127.0.7.2"),
        ("eco-3", "127.0.7.3"),
        ("eco-4", "127.0.7.4"),
    ] {
        c.add(id, addr).unwrap();
    }

    // A group of one bootstraps and records incarnation 1 in the store.
    c.set_group(&["eco-1"]).unwrap();
    c.start("eco-1").unwrap();
    let cluster = c
        .wait_voters(&["eco-1"], Duration::from_secs(30))
        .expect("one-member cluster");
    assert!(
        c.store().join("it/incarnations/0000000001").is_file(),
        "incarnation record created"
    );

    // Grow to three by editing the group file: learners join one at a time
    // and are promoted.
    c.set_group(&["eco-1", "eco-2", "eco-3"]).unwrap();
    c.start("eco-2").unwrap();
    c.start("eco-3").unwrap();
    let grown = c
        .wait_voters(&["eco-1", "eco-2", "eco-3"], Duration::from_secs(60))
        .expect("three voters");
    assert_eq!(grown, cluster, "one cluster");
    let voters = std::fs::read_to_string(c.store().join("it/incarnations/0000000001.voters"))
        .unwrap_or_default();
    let got = wait_until(Duration::from_secs(10), || {
        let v =
            std::fs::read_to_string(c.store().join("it/incarnations/0000000001.voters")).ok()?;
        v.contains("eco-3").then_some(v)
    });
    assert!(got.is_some(), "V_1 recorded in the store: {voters}");

    // eco status lists every member with its role and health.
    let listed = wait_until(Duration::from_secs(10), || {
        let out = std::process::Command::new(eco_bin!())
            .args(["status", "--api", "127.0.7.2:2390"])
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let all = ["eco-1", "eco-2", "eco-3"].iter().all(|id| {
            text.lines().any(|l| {
                l.starts_with("etcd member")
                    && l.contains(id)
                    && l.contains("voter")
                    && l.contains(" healthy")
            })
        });
        let leaders = text
            .lines()
            .filter(|l| l.starts_with("etcd member") && l.contains(" leader"))
            .count();
        (all && leaders == 1).then_some(text)
    });
    assert!(
        listed.is_some(),
        "eco status lists three healthy voters and one leader"
    );

    let ledger = Ledger::start(c.endpoints(&["eco-1", "eco-2", "eco-3"]), 20_000);

    // etcd kill -9 on a follower: back to three healthy voters.
    let follower = ["eco-2", "eco-3"]
        .into_iter()
        .find(|id| {
            let s = c.nodes[*id].endpoint();
            rt().block_on(async {
                let mut cl = client(&s).await?;
                let st = cl.status().await.ok()?;
                Some(st.leader() != st.header()?.member_id())
            })
            .unwrap_or(false)
        })
        .expect("a follower");
    let pid = c.etcd_pids(follower)[0];
    let t = Instant::now();
    kill(pid, libc::SIGKILL);
    wait_until(Duration::from_secs(30), || {
        let pids = c.etcd_pids(follower);
        (!pids.is_empty() && pids[0] != pid && read(&c.nodes[follower].endpoint(), "x").is_some())
            .then_some(())
    })
    .expect("follower's etcd back");
    c.wait_voters(&["eco-1", "eco-2", "eco-3"], Duration::from_secs(30))
        .expect("3/3 after etcd crash");
    eprintln!(
        "M1 etcd kill -9 on a follower -> 3/3 healthy voters: {:?}",
        t.elapsed()
    );

    // One instance's data dir wiped, restarted with the same id: the stale
    // member is removed, re-added as a learner, promoted.
    c.stop("eco-2", libc::SIGKILL).unwrap();
    let t = Instant::now();
    std::fs::remove_dir_all(c.nodes["eco-2"].data_dir()).unwrap();
    c.start("eco-2").unwrap();
    let wiped = wait_until(Duration::from_secs(60), || {
        c.wait_voters(&["eco-1", "eco-2", "eco-3"], Duration::from_millis(100))?;
        c.nodes["eco-2"]
            .log()
            .contains("added as a learner")
            .then_some(())
    });
    assert!(wiped.is_some(), "wiped instance rejoined as a new member");
    eprintln!("M2 empty disk on 1 of 3 -> 3/3 voters: {:?}", t.elapsed());

    // eco-3 leaves the group: its member is removed; eco-3 stops its etcd
    // and moves its data aside.
    c.set_group(&["eco-1", "eco-2"]).unwrap();
    c.wait_voters(&["eco-1", "eco-2"], Duration::from_secs(30))
        .expect("departed member removed");
    wait_until(Duration::from_secs(15), || {
        c.etcd_pids("eco-3").is_empty().then_some(())
    })
    .expect("eco-3 stopped etcd");
    c.stop("eco-3", libc::SIGTERM).unwrap();

    // The crash point between "add learner" and "start etcd": the member is
    // added by hand, then eco-4 starts and must start it, not add another.
    c.set_group(&["eco-1", "eco-2", "eco-4"]).unwrap();
    // Let every running instance re-read the group (refresh: 300ms) first,
    // or the leader rightly removes a member no instance of its group owns.
    std::thread::sleep(Duration::from_secs(1));
    let peer = c.nodes["eco-4"].peer_url();
    let added = wait_until(Duration::from_secs(30), || {
        rt().block_on(async {
            let mut cl = client(&c.nodes["eco-1"].endpoint()).await?;
            let opts = etcd_client::MemberAddOptions::new().with_is_learner();
            cl.member_add([peer.clone()], Some(opts))
                .await
                .ok()
                .map(|_| ())
        })
    });
    assert!(added.is_some(), "learner added by hand");
    c.start("eco-4").unwrap();
    c.wait_voters(&["eco-1", "eco-2", "eco-4"], Duration::from_secs(60))
        .expect("eco-4 started as the added member");
    assert!(
        !c.nodes["eco-4"].log().contains("added as a learner"),
        "no second add"
    );

    let (acked, failed) = ledger.finish();
    assert!(
        acked.len() > 100,
        "the workload ran: {} acked, {failed} failed",
        acked.len()
    );
    let lost = lost_writes(&c.nodes["eco-1"].endpoint(), &acked);
    assert!(lost.is_empty(), "acknowledged writes lost: {lost:?}");
    eprintln!(
        "ledger: {} acknowledged, {failed} failed, 0 lost",
        acked.len()
    );

    // A second group pointed at the same store and cluster name, with no
    // state: it must not bootstrap a second cluster.
    let mut other = Cluster::integration(eco_bin!()).expect("cluster");
    other.add("eco-9", "127.0.7.9").unwrap();
    std::fs::remove_dir_all(other.root().join("eco-9")).ok();
    other.add("eco-9", "127.0.7.9").unwrap();
    other
        .configure("eco-9", |config| config.dir_store(c.store()))
        .unwrap();
    other.set_group(&["eco-9"]).unwrap();
    other.start("eco-9").unwrap();
    let refused = wait_until(Duration::from_secs(15), || {
        other.nodes["eco-9"]
            .log()
            .contains("the store already holds records of this cluster")
            .then_some(())
    });
    assert!(
        refused.is_some(),
        "second bootstrap refused:\n{}",
        other.nodes["eco-9"].log()
    );
    assert!(
        other.etcd_pids("eco-9").is_empty(),
        "no second cluster started"
    );
}
