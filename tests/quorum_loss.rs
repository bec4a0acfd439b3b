//! Quorum loss on real etcd (docs/runbook.md), three instances on loopback with
//! the static provider, gossip and a directory store, under a write load
//! whose every acknowledged write is recorded:
//!
//! - two of three replaced by new instances with empty disks: the
//!   survivor's WAL seeds incarnation 2, the new instances join it, and
//!   every acknowledged write is there;
//! - every eco and etcd killed with `kill -9` and restarted with their
//!   disks: a rejoin, not a reseed (same cluster id, no record 2), nothing
//!   lost.

use std::time::{Duration, Instant};
use testkit::cluster::{Cluster, Options};
use testkit::eco_bin;
use testkit::ledger::{Ledger, lost_beyond_residual, lost_writes, wal_residual};
use testkit::wait_until;

fn record_exists(c: &Cluster, n: u64) -> bool {
    c.store().join(format!("it/incarnations/{n:010}")).exists()
}

fn three(c: &mut Cluster, base: &str) -> u64 {
    c.form_three(base).expect("three voters")
}

#[test]
fn two_of_three_replaced_empty_reseeds_from_the_survivor_with_every_acknowledged_write() {
    two_of_three_replaced(
        Cluster::integration(eco_bin!()).expect("cluster"),
        "127.0.11",
        "M3",
    );
}

/// The same with generated TLS on etcd's client and peer surfaces (client
/// certificates required): the new instances issue their certificates
/// from the cluster's CA, opened from the store with the gossip key, and
/// the survivor's WAL is replayed by a temporary etcd serving TLS on
/// 127.0.0.1, verified under the survivor's name. (Generated TLS is the
/// operator-files path with files eco writes: this covers both.)
#[test]
fn two_of_three_replaced_empty_over_generated_tls_reseeds_with_every_acknowledged_write() {
    let c = Cluster::new(Options {
        generated_tls: true,
        ..Options::integration(eco_bin!())
    })
    .expect("cluster");
    two_of_three_replaced(c, "127.0.18", "M3 over generated TLS");
}

/// Two of three instances replaced empty under a write load: the
/// survivor's WAL seeds incarnation 2 with every acknowledged write.
fn two_of_three_replaced(mut c: Cluster, base: &str, label: &str) {
    let old_cluster = three(&mut c, base);
    let ledger = Ledger::start(c.endpoints(&["eco-1", "eco-2", "eco-3"]), 20_000);
    ledger.wait_acked(100, Duration::from_secs(30));

    // Two of three die with their disks; the group replaces them.
    let lost_at = c.lose_two_of_three(base).unwrap();

    // Writable again, through the survivor (the seeder).
    let writable = c
        .wait_writable("eco-1", Duration::from_secs(90))
        .expect("writable again within 90 s");
    let new_cluster = c
        .wait_voters(&["eco-1", "eco-4", "eco-5"], Duration::from_secs(120))
        .expect("three voters again");
    let full = Instant::now();
    let timed = ledger.finish_timed();
    let residual = wal_residual(&timed, &[lost_at]);
    let (acked, failed) = (timed.acked.clone(), timed.failed);
    eprintln!(
        "{label}: writable {:.1} s after the loss, three voters after {:.1} s ({} acknowledged writes, {} failed)",
        (writable - lost_at).as_secs_f64(),
        (full - lost_at).as_secs_f64(),
        acked.len(),
        failed
    );
    assert!(
        acked.len() > 50,
        "the load wrote too little: {}",
        acked.len()
    );
    assert_ne!(new_cluster, old_cluster, "a reseed makes a new cluster id");
    assert!(
        record_exists(&c, 2),
        "incarnation 2 is recorded in the store"
    );
    assert!(!record_exists(&c, 3), "exactly one reseed");
    let record =
        std::fs::read_to_string(c.store().join("it/incarnations/0000000002")).expect("record 2");
    assert!(
        record.contains("\"source\": \"data:eco-1\""),
        "the survivor's WAL seeds, not an older store snapshot: {record}"
    );
    for id in ["eco-1", "eco-4", "eco-5"] {
        let lost =
            lost_beyond_residual(id, lost_writes(&c.nodes[id].endpoint(), &acked), &residual);
        assert!(lost.is_empty(), "{id} misses acknowledged writes: {lost:?}");
    }
    // The seeder's old data is moved aside, never deleted.
    let parent = c.nodes["eco-1"]
        .data_dir()
        .parent()
        .expect("parent")
        .to_path_buf();
    let aside = std::fs::read_dir(&parent)
        .expect("data parent")
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .contains("before-incarnation-2")
        })
        .count();
    assert_eq!(aside, 1, "the old data dir is kept aside");
    // The replay's snapshot seeded from the seeder's disk, never through
    // the store, and is gone with its marker and copy once done.
    assert!(
        c.nodes["eco-1"]
            .log()
            .contains("event=\"seeding.replayed\""),
        "the survivor's WAL was replayed"
    );
    for leftover in ["seed-2.replayed.db", "seed-2.source", "replay-2"] {
        assert!(
            !parent.join(leftover).exists(),
            "{leftover} is removed once the state file names incarnation 2"
        );
    }
}

/// The seeder killed (with its etcd) the moment its WAL replay is kept,
/// then started again: the seeding resumes from the replay's snapshot on
/// its disk — its WAL may already be moved aside — and every acknowledged
/// write is there. Wherever in the restore, the state file or the start
/// the kill lands, the plan resumes from what is on disk.
#[test]
fn a_seeder_killed_after_its_replay_resumes_from_the_kept_snapshot() {
    let mut c = Cluster::integration(eco_bin!()).expect("cluster");
    let base = "127.0.17";
    three(&mut c, base);
    let ledger = Ledger::start(c.endpoints(&["eco-1", "eco-2", "eco-3"]), 20_000);
    ledger.wait_acked(100, Duration::from_secs(30));
    let lost_at = c.lose_two_of_three(base).unwrap();
    let replayed = wait_until(Duration::from_secs(90), || {
        c.nodes["eco-1"]
            .log()
            .contains("event=\"seeding.replayed\"")
            .then_some(())
    });
    assert!(replayed.is_some(), "the survivor replays its WAL");
    c.kill_with_etcd("eco-1").unwrap();
    c.start("eco-1").unwrap();
    c.wait_voters(&["eco-1", "eco-4", "eco-5"], Duration::from_secs(120))
        .expect("three voters again");
    let timed = ledger.finish_timed();
    let residual = wal_residual(&timed, &[lost_at]);
    assert!(!record_exists(&c, 3), "one reseed, resumed");
    let log = c.nodes["eco-1"].log();
    for line in log
        .lines()
        .filter(|l| l.contains("event=\"seeding.started\""))
    {
        eprintln!("{line}");
    }
    assert_eq!(
        log.matches("event=\"seeding.replayed\"").count(),
        1,
        "the WAL is replayed once: the restarted seeder resumes from its snapshot"
    );
    for id in ["eco-1", "eco-4", "eco-5"] {
        let lost = lost_beyond_residual(
            id,
            lost_writes(&c.nodes[id].endpoint(), &timed.acked),
            &residual,
        );
        assert!(lost.is_empty(), "{id} misses acknowledged writes: {lost:?}");
    }
}

#[test]
fn everything_killed_and_restarted_with_disks_rejoins_without_a_reseed() {
    let mut c = Cluster::integration(eco_bin!()).expect("cluster");
    let cluster = three(&mut c, "127.0.12");
    let ledger = Ledger::start(c.endpoints(&["eco-1", "eco-2", "eco-3"]), 20_000);
    ledger.wait_acked(100, Duration::from_secs(30));
    for id in ["eco-1", "eco-2", "eco-3"] {
        c.kill_with_etcd(id).unwrap();
    }
    let (acked, _) = ledger.finish();
    for id in ["eco-1", "eco-2", "eco-3"] {
        c.start(id).unwrap();
    }
    let again = c
        .wait_voters(&["eco-1", "eco-2", "eco-3"], Duration::from_secs(90))
        .expect("three voters again");
    assert_eq!(again, cluster, "a rejoin keeps the cluster id");
    // Longer than quorum_loss_timeout (5 s) after the restart: still no
    // reseed.
    std::thread::sleep(Duration::from_secs(7));
    assert!(!record_exists(&c, 2), "no reseed after a full restart");
    assert_eq!(
        c.members().map(|(id, _)| id),
        Some(cluster),
        "same cluster id"
    );
    let lost = lost_writes(&c.nodes["eco-1"].endpoint(), &acked);
    assert!(lost.is_empty(), "acknowledged writes lost: {lost:?}");
}

#[test]
fn all_stopped_wiped_and_replaced_restores_the_final_snapshot_with_nothing_lost() {
    let mut c = Cluster::integration(eco_bin!()).expect("cluster");
    let old_cluster = three(&mut c, "127.0.13");
    let ledger = Ledger::start(c.endpoints(&["eco-1", "eco-2", "eco-3"]), 20_000);
    ledger.wait_acked(100, Duration::from_secs(30));
    let (acked, _) = ledger.finish();
    // SIGTERM: the instance beside the leader takes a final snapshot.
    for id in ["eco-1", "eco-2", "eco-3"] {
        c.stop(id, libc::SIGTERM).unwrap();
    }
    for id in ["eco-1", "eco-2", "eco-3"] {
        assert!(c.etcd_pids(id).is_empty(), "SIGTERM stops etcd of {id}");
    }
    // Every disk is lost; the group replaces all three.
    let lost_at = Instant::now();
    for (id, address) in [
        ("eco-4", "127.0.13.4"),
        ("eco-5", "127.0.13.5"),
        ("eco-6", "127.0.13.6"),
    ] {
        c.add(id, address).unwrap();
    }
    c.set_group(&["eco-4", "eco-5", "eco-6"]).unwrap();
    for id in ["eco-4", "eco-5", "eco-6"] {
        c.start(id).unwrap();
    }
    let new_cluster = c
        .wait_voters(&["eco-4", "eco-5", "eco-6"], Duration::from_secs(120))
        .expect("three voters again");
    eprintln!(
        "all replaced: three voters {:.1} s after the replacements started",
        lost_at.elapsed().as_secs_f64()
    );
    assert_ne!(new_cluster, old_cluster);
    let record =
        std::fs::read_to_string(c.store().join("it/incarnations/0000000002")).expect("record 2");
    assert!(
        record.contains("\"source\": \"snapshot:"),
        "seeded from the store: {record}"
    );
    for id in ["eco-4", "eco-5", "eco-6"] {
        let lost = lost_writes(&c.nodes[id].endpoint(), &acked);
        assert!(lost.is_empty(), "{id} misses acknowledged writes: {lost:?}");
    }
}

fn replace_all(c: &mut Cluster, base: &str) -> Instant {
    let at = Instant::now();
    for (i, id) in ["eco-4", "eco-5", "eco-6"].iter().enumerate() {
        c.add(id, &format!("{base}.{}", i + 4)).unwrap();
    }
    c.set_group(&["eco-4", "eco-5", "eco-6"]).unwrap();
    for id in ["eco-4", "eco-5", "eco-6"] {
        c.start(id).unwrap();
    }
    at
}

/// The newest revision of the store's snapshots (0: none) and the newest
/// its change-archive segments reach (0: none), from their names.
fn stored_revisions(store: &std::path::Path) -> (i64, i64) {
    let newest = |folder: &str, suffix: &str, at: std::ops::Range<usize>| {
        std::fs::read_dir(store.join("it").join(folder))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().to_string())
            .filter(|n| n.ends_with(suffix) && !n.starts_with('.'))
            .filter_map(|n| n.get(at.clone())?.parse::<i64>().ok())
            .max()
            .unwrap_or(0)
    };
    (
        newest("snapshots", ".db", 13..33),
        newest("archive", ".seg", 35..55),
    )
}

/// `wipe-all`: every instance killed and its disk lost. The newest store
/// snapshot seeds, carried by the change archive as far as its chain
/// reaches: writes acknowledged before the snapshot are all there, and so
/// are the writes the archive held; only the newest writes may be lost
/// (those of the last second or so, never one older than a write that is
/// there), and are counted.
#[test]
fn all_killed_and_wiped_restores_the_newest_snapshot_losing_only_later_writes() {
    let mut c = Cluster::integration(eco_bin!()).expect("cluster");
    three(&mut c, "127.0.14");
    let endpoints = c.endpoints(&["eco-1", "eco-2", "eco-3"]);
    let before = Ledger::with_prefix(endpoints.clone(), 20_000, "before");
    before.wait_acked(100, Duration::from_secs(30));
    let (acked_before, _) = before.finish();
    c.snapshot_now("eco-1").unwrap();
    let (snapshot_revision, _) = stored_revisions(&c.store());
    let after = Ledger::with_prefix(endpoints, 20_000, "after");
    after.wait_acked(100, Duration::from_secs(30));
    // The archive holds writes made after the snapshot.
    let archived = wait_until(Duration::from_secs(30), || {
        let (_, segments) = stored_revisions(&c.store());
        (segments > snapshot_revision + 50).then_some(segments)
    });
    assert!(
        archived.is_some(),
        "the archive goes past the snapshot's revision {snapshot_revision}"
    );
    let killed_at = Instant::now();
    for id in ["eco-1", "eco-2", "eco-3"] {
        c.kill_with_etcd(id).unwrap();
    }
    let after = after.finish_timed();
    let started = replace_all(&mut c, "127.0.14");
    c.wait_voters(&["eco-4", "eco-5", "eco-6"], Duration::from_secs(120))
        .expect("three voters again");
    let record =
        std::fs::read_to_string(c.store().join("it/incarnations/0000000002")).expect("record 2");
    assert!(record.contains("\"source\": \"snapshot:"), "{record}");
    let seeder_logs: String = ["eco-4", "eco-5", "eco-6"]
        .iter()
        .map(|id| c.nodes[*id].log())
        .collect();
    assert!(
        seeder_logs.contains("event=\"archive.restored\""),
        "the seeder replayed the archive"
    );
    let lost_before = lost_writes(&c.nodes["eco-4"].endpoint(), &acked_before);
    assert!(
        lost_before.is_empty(),
        "writes acknowledged before the newest snapshot were lost: {lost_before:?}"
    );
    let lost_after = lost_writes(&c.nodes["eco-4"].endpoint(), &after.acked);
    assert!(
        lost_after.len() < after.acked.len(),
        "the archive carried writes past the snapshot"
    );
    // Only the newest writes may be lost: none older than one that is there.
    let lost: std::collections::BTreeSet<&String> = lost_after.iter().collect();
    let first_lost = after.acked.iter().position(|(k, _)| lost.contains(k));
    if let Some(first) = first_lost {
        let holes: Vec<&String> = after.acked[first..]
            .iter()
            .map(|(k, _)| k)
            .filter(|k| !lost.contains(k))
            .collect();
        assert!(
            holes.is_empty(),
            "writes after a lost one are there: {holes:?}"
        );
    }
    let window = first_lost
        .map(|i| {
            killed_at
                .saturating_duration_since(after.acked_at[i])
                .as_secs_f64()
        })
        .unwrap_or(0.0);
    eprintln!(
        "wipe-all: three voters {:.1} s after the replacements; {} of {} writes after the newest snapshot lost (those of the last {:.2} s before every disk was lost), 0 of {} before",
        started.elapsed().as_secs_f64(),
        lost_after.len(),
        after.acked.len(),
        window,
        acked_before.len()
    );
}

/// A record exists but no instance holds data and the store has no
/// snapshot: never an empty seed; the replacements wait and say why.
#[test]
fn no_data_and_no_snapshot_anywhere_never_seeds_empty_and_says_why() {
    let mut c = Cluster::integration(eco_bin!()).expect("cluster");
    three(&mut c, "127.0.15");
    for id in ["eco-1", "eco-2", "eco-3"] {
        c.kill_with_etcd(id).unwrap();
    }
    // Every snapshot is gone from the store; the records stay.
    let snapshots = c.store().join("it/snapshots");
    if snapshots.exists() {
        std::fs::remove_dir_all(&snapshots).expect("delete snapshots");
    }
    replace_all(&mut c, "127.0.15");
    let api = format!("{}:2390", c.nodes["eco-4"].address);
    let why = wait_until(Duration::from_secs(60), || {
        let out = std::process::Command::new(eco_bin!())
            .args(["status", "--json", "--api", &api])
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        text.contains("never seed empty").then_some(text)
    })
    .expect("the replacement explains that it will not seed empty");
    assert!(why.contains("page a human"), "{why}");
    // Longer than T (5 s) plus a takeover: still nothing seeded.
    std::thread::sleep(Duration::from_secs(10));
    assert!(
        !record_exists(&c, 2),
        "an empty seed over an existing record"
    );
    assert!(c.members().is_none(), "no etcd serves");
}

/// Five instances, three replaced by new instances with empty disks: the
/// two survivors both report, the more advanced WAL seeds, nothing lost.
#[test]
fn three_of_five_replaced_empty_comes_back_with_every_acknowledged_write() {
    let mut c = Cluster::integration(eco_bin!()).expect("cluster");
    let five = ["eco-1", "eco-2", "eco-3", "eco-4", "eco-5"];
    for (i, id) in five.iter().enumerate() {
        c.add(id, &format!("127.0.16.{}", i + 1)).unwrap();
    }
    c.set_group(&five).unwrap();
    for id in five {
        c.start(id).unwrap();
    }
    c.wait_voters(&five, Duration::from_secs(120))
        .expect("five voters");
    let ledger = Ledger::start(c.endpoints(&five), 20_000);
    ledger.wait_acked(100, Duration::from_secs(30));
    for id in ["eco-3", "eco-4", "eco-5"] {
        c.kill_with_etcd(id).unwrap();
    }
    let lost_at = Instant::now();
    for (id, address) in [
        ("eco-6", "127.0.16.6"),
        ("eco-7", "127.0.16.7"),
        ("eco-8", "127.0.16.8"),
    ] {
        c.add(id, address).unwrap();
    }
    let now = ["eco-1", "eco-2", "eco-6", "eco-7", "eco-8"];
    c.set_group(&now).unwrap();
    for id in ["eco-6", "eco-7", "eco-8"] {
        c.start(id).unwrap();
    }
    c.wait_voters(&now, Duration::from_secs(150))
        .expect("five voters again");
    let timed = ledger.finish_timed();
    let residual = wal_residual(&timed, &[lost_at]);
    let acked = timed.acked.clone();
    eprintln!(
        "3 of 5 replaced: five voters {:.1} s after the loss ({} acknowledged writes)",
        lost_at.elapsed().as_secs_f64(),
        acked.len()
    );
    assert!(record_exists(&c, 2) && !record_exists(&c, 3), "one reseed");
    for id in now {
        let lost =
            lost_beyond_residual(id, lost_writes(&c.nodes[id].endpoint(), &acked), &residual);
        assert!(lost.is_empty(), "{id} misses acknowledged writes: {lost:?}");
    }
}

/// The outage a user found (issue: a second quorum loss must recover):
/// three instances, the leader's and a follower's eco and etcd killed with
/// `-9` and their disks wiped, both started again with the same ids; the
/// survivor seeds incarnation 2 and the two join and are promoted — and at
/// the first moment the member list shows three voters, the new leader's
/// instance and one other are killed and wiped again. The survivor holds
/// every acknowledged write and must seed incarnation 3 from them, however
/// far the store's record and the state files got after the promotions.
#[test]
fn a_second_loss_right_after_a_recovery_recovers_with_every_acknowledged_write() {
    let mut c = Cluster::integration(eco_bin!()).expect("cluster");
    let first = three(&mut c, "127.0.19");
    let all = ["eco-1", "eco-2", "eco-3"];
    let ledger = Ledger::start(c.endpoints(&all), 20_000);
    ledger.wait_acked(100, Duration::from_secs(30));

    let lose_two = |c: &mut Cluster| -> (Vec<String>, Instant) {
        let leader = wait_until(Duration::from_secs(30), || c.leader()).expect("a leader");
        let other = all
            .iter()
            .find(|id| **id != leader)
            .map(|s| s.to_string())
            .expect("a follower");
        let victims = vec![leader, other];
        for id in &victims {
            c.kill_with_etcd(id).expect("kill -9");
            c.wipe(id).expect("wipe");
        }
        let at = Instant::now();
        for id in &victims {
            c.start(id).expect("start again, empty");
        }
        (victims, at)
    };

    let (victims, first_at) = lose_two(&mut c);
    let at = first_at;
    let survivor = all
        .iter()
        .find(|id| !victims.iter().any(|v| v == *id))
        .expect("a survivor")
        .to_string();
    let second = c
        .wait_voters(&all, Duration::from_secs(120))
        .expect("three voters after the first recovery");
    assert_ne!(second, first, "the first loss reseeded");
    eprintln!(
        "second loss: first recovery to three voters in {:.1} s (seeded by {survivor})",
        at.elapsed().as_secs_f64()
    );

    // At once, before the record and the state files catch up.
    let (victims, at) = lose_two(&mut c);
    let survivor = all
        .iter()
        .find(|id| !victims.iter().any(|v| v == *id))
        .expect("a survivor")
        .to_string();
    let writable = c
        .wait_writable(&survivor, Duration::from_secs(120))
        .unwrap_or_else(|| {
            panic!(
                "not writable again within 120 s after the second loss\n{}",
                c.log_tail(&survivor, 60)
            )
        });
    let third = c
        .wait_voters(&all, Duration::from_secs(120))
        .expect("three voters after the second recovery");
    let timed = ledger.finish_timed();
    let residual = wal_residual(&timed, &[first_at, at]);
    let (acked, failed) = (timed.acked.clone(), timed.failed);
    eprintln!(
        "second loss: writable {:.1} s after it (survivor {survivor}), three voters after {:.1} s; {} acknowledged writes, {failed} failed",
        (writable - at).as_secs_f64(),
        at.elapsed().as_secs_f64(),
        acked.len()
    );
    assert_ne!(third, second, "the second loss reseeded");
    assert!(record_exists(&c, 3), "incarnation 3 is recorded");
    assert!(!record_exists(&c, 4), "exactly one reseed per loss");
    for id in all {
        let lost =
            lost_beyond_residual(id, lost_writes(&c.nodes[id].endpoint(), &acked), &residual);
        assert!(lost.is_empty(), "{id} misses acknowledged writes: {lost:?}");
    }
}

/// `(raft index, applied index)` of the member at `endpoint`.
fn raft_position(endpoint: &str) -> Option<(u64, u64)> {
    testkit::etcd::block_on(async {
        let mut c = testkit::etcd::client(endpoint).await?;
        let s = tokio::time::timeout(Duration::from_secs(2), c.status())
            .await
            .ok()?
            .ok()?;
        Some((s.raft_index(), s.raft_applied_index()))
    })
}

/// A second loss while the first recovery's join is still a learner: the
/// seeder (the only voter) loses its disk after a learner caught up with
/// writes the store's snapshot of the new incarnation does not hold. The
/// round waits for the learner (the store's record names it: it recorded
/// itself when it joined), and its data seeds incarnation 3 — from its
/// backend, as etcd refuses `--force-new-cluster` on a learner's WAL.
///
/// The learner phase lasts a pass: the seeder's eco is frozen with
/// SIGSTOP (its etcd keeps serving and replicating) at the moment the
/// learner is added, so nothing promotes it.
#[test]
fn a_second_loss_while_the_join_is_a_learner_seeds_from_the_learner() {
    let mut c = Cluster::integration(eco_bin!()).expect("cluster");
    three(&mut c, "127.0.21");
    // The first loss: eco-2 and eco-3 killed and wiped, started again.
    for id in ["eco-2", "eco-3"] {
        c.kill_with_etcd(id).expect("kill -9");
        c.wipe(id).expect("wipe");
    }
    for id in ["eco-2", "eco-3"] {
        c.start(id).expect("start empty");
    }
    // eco-1 seeds incarnation 2 alone; the first join is added as a
    // learner: freeze eco-1's eco right then.
    let learner = wait_until(Duration::from_secs(120), || {
        let members = c.member_ids()?;
        (record_exists(&c, 2) && members.iter().any(|(_, _, l)| *l)).then_some(())?;
        c.signal_eco("eco-1", libc::SIGSTOP).ok()?;
        Some(())
    });
    assert!(
        learner.is_some(),
        "no learner within 120 s\n{}",
        c.log_tail("eco-1", 40)
    );
    let (learner, promoted) = wait_until(Duration::from_secs(60), || {
        let members = c.member_ids()?;
        let started = members.iter().find(|(_, name, l)| *l && !name.is_empty())?;
        Some((
            started.1.clone(),
            members.iter().filter(|(_, _, l)| !*l).count(),
        ))
    })
    .expect("the learner starts");
    assert_eq!(promoted, 1, "eco-1 is the only voter");
    // Writes the seeder acknowledges alone, after its snapshot of
    // incarnation 2: the learner must have them before the loss.
    let leader = c.nodes["eco-1"].endpoint();
    let keys: Vec<String> = (0..30).map(|i| format!("learner-test/{i}")).collect();
    for k in &keys {
        assert!(testkit::etcd::write(&leader, k, "v"), "write {k}");
    }
    let (target, _) = raft_position(&leader).expect("the leader's status");
    wait_until(Duration::from_secs(30), || {
        let (_, applied) = raft_position(&c.nodes[&learner].endpoint())?;
        (applied >= target).then_some(())
    })
    .expect("the learner caught up");
    // The second loss: the seeder's disk, while it is the only voter.
    c.signal_eco("eco-1", libc::SIGCONT).expect("thaw");
    c.kill_with_etcd("eco-1").expect("kill -9");
    c.wipe("eco-1").expect("wipe");
    let at = Instant::now();
    c.start("eco-1").expect("start empty");
    let all = ["eco-1", "eco-2", "eco-3"];
    c.wait_voters(&all, Duration::from_secs(180))
        .unwrap_or_else(|| panic!("three voters again\n{}", c.log_tail(&learner, 60)));
    eprintln!(
        "learner phase: three voters {:.1} s after the seeder's disk was lost",
        at.elapsed().as_secs_f64()
    );
    assert!(record_exists(&c, 3), "incarnation 3 is recorded");
    let record =
        std::fs::read_to_string(c.store().join("it/incarnations/0000000003")).expect("record 3");
    assert!(
        record.contains(&format!("\"source\": \"data:{learner}\"")),
        "the learner's data seeds incarnation 3: {record}"
    );
    for id in all {
        for k in &keys {
            let (_, v) = testkit::etcd::read(&c.nodes[id].endpoint(), k).expect("read");
            assert_eq!(v.as_deref(), Some("v"), "{id} misses {k}");
        }
    }
}
