//! The periodic snapshot writer on real etcd: schedule, retention, store
//! wipe alert, final snapshot on SIGTERM.

use std::time::Duration;
use testkit::etcd::{dump, wait_serving, write};
use testkit::instance::Instance;
use testkit::{eco_bin, wait_until};

fn stored(i: &Instance) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(i.store_dir().join("it/snapshots"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().to_string_lossy().to_string();
            (n.ends_with(".db") && !n.starts_with('.')).then_some(n)
        })
        .collect();
    v.sort();
    v
}

fn status(i: &Instance) -> serde_json::Value {
    let out = std::process::Command::new(eco_bin!())
        .args(["status", "--json", "--api", &format!("{}:2390", i.address)])
        .output()
        .expect("eco status");
    serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null)
}

#[test]
fn schedule_retention_wipe_alert_and_final_snapshot() {
    let mut i = Instance::new(eco_bin!(), "127.0.6.1").with_dir_store();
    i.configure(|c| {
        c.snapshot_interval(Duration::from_secs(10))
            .snapshot_max_age(Duration::from_secs(3600))
            .retention(2, 0, 0)
    });
    i.start();
    wait_serving(&i.endpoint(), Duration::from_secs(20)).expect("serving");

    // The store holds nothing yet: a snapshot is due at once.
    let first = wait_until(Duration::from_secs(15), || {
        Some(stored(&i)).filter(|v| v.len() == 1)
    })
    .expect("first snapshot");

    // Quiet cluster: no new snapshot after the interval (revision unchanged).
    std::thread::sleep(Duration::from_secs(12));
    assert_eq!(
        stored(&i),
        first,
        "no snapshot while the revision does not advance"
    );

    // Writes: the next check after the interval takes one; then another.
    assert!(write(&i.endpoint(), "a", "1"));
    let second = wait_until(Duration::from_secs(15), || {
        Some(stored(&i)).filter(|v| v.len() == 2)
    })
    .expect("second");
    assert!(write(&i.endpoint(), "b", "2"));
    let third = wait_until(Duration::from_secs(20), || {
        Some(stored(&i)).filter(|v| v.len() == 2 && v.last() != second.last())
    })
    .expect("third snapshot, retention down to keep_last = 2");
    assert!(!third.contains(&first[0]), "the oldest went");
    assert!(
        third.contains(second.last().unwrap()),
        "the newest two stay"
    );
    let s = status(&i);
    assert_eq!(s["snapshots"]["stored"], 2, "{s}");
    assert!(
        s["snapshots"]["last_reason"]
            .as_str()
            .unwrap()
            .contains("revision advanced"),
        "{s}"
    );

    // Every snapshot deleted behind eco's back: alert, and a new snapshot.
    std::fs::remove_dir_all(i.store_dir().join("it/snapshots")).unwrap();
    let alerted = wait_until(Duration::from_secs(15), || {
        let s = status(&i);
        (s["snapshots"]["stored"] == 1 && s["snapshots"]["taken"].as_u64() >= Some(4)).then_some(s)
    })
    .expect("a new snapshot after the wipe");
    assert!(
        write(&i.endpoint(), "still", "serving"),
        "etcd kept serving"
    );
    let log = i.log();
    assert!(
        log.contains("the store lost every snapshot"),
        "alert logged"
    );
    let _ = alerted;

    // SIGTERM: a final snapshot with the last write, then a clean exit.
    assert!(write(&i.endpoint(), "last", "write"));
    let (rev, _) = dump(&i.endpoint()).unwrap();
    i.signal(libc::SIGTERM);
    assert_eq!(i.wait_exit(Duration::from_secs(30)), Some(0));
    assert!(
        i.log().contains("final snapshot: eco is stopping"),
        "final snapshot taken"
    );
    let newest = stored(&i).pop().expect("a snapshot");
    let newest_rev: i64 = newest.split("-r").nth(1).unwrap()[..20].parse().unwrap();
    assert!(
        newest_rev >= rev,
        "final snapshot has the last write ({newest_rev} >= {rev})"
    );
}

/// An idle cluster past `max_age` (10 s here, the shortest interval the
/// config allows) stores one snapshot per `max_age`, not one per check
/// (every second): the schedule measures from the last snapshot stored,
/// though each has the same name (the revision does not move) and
/// replaces the one before.
#[test]
fn an_idle_cluster_snapshots_once_per_max_age() {
    let max_age = Duration::from_secs(10);
    let mut i = Instance::new(eco_bin!(), "127.0.25.1").with_dir_store();
    i.configure(|c| c.snapshot_interval(max_age).snapshot_max_age(max_age));
    i.start();
    wait_serving(&i.endpoint(), Duration::from_secs(20)).expect("serving");
    let stored_events = |i: &Instance| {
        i.log()
            .lines()
            .filter(|l| l.contains("event=\"snapshot.stored\""))
            .count()
    };
    wait_until(Duration::from_secs(15), || {
        (stored_events(&i) >= 1).then_some(())
    })
    .expect("the first snapshot");
    let before = stored_events(&i);
    let watched = max_age * 3;
    std::thread::sleep(watched);
    let during = stored_events(&i) - before;
    eprintln!(
        "snapshot: {during} snapshots stored in {} s of an idle cluster (max_age {} s)",
        watched.as_secs(),
        max_age.as_secs()
    );
    assert_eq!(
        stored(&i).len(),
        1,
        "one revision, one name: {:?}",
        stored(&i)
    );
    // About one per max_age (the checks run every second, so each may
    // come up to a second late): 2 or 3 in 30 s, never one per check.
    assert!(
        (2..=4).contains(&during),
        "{during} snapshots in {watched:?} with max_age {max_age:?}\n{}",
        i.log()
    );
}
