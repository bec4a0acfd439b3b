//! A group file that reads as "every instance departed" — emptied, holding
//! only `desired_size`, rewritten in place (truncated, then written again
//! 1.5 s later), half written — or that flaps between two contents removes
//! no member of a running cluster and moves no data aside: a file that
//! lists nobody is refused (the last good group stays, `/status` says
//! why), and a departure counts only once consecutive reads over a few
//! seconds confirm it (`recovery::departures`). A real departure still
//! happens, once confirmed.

use std::path::Path;
use std::time::{Duration, Instant};
use testkit::cluster::Cluster;
use testkit::eco_bin;
use testkit::wait_until;

const IDS: [&str; 3] = ["eco-1", "eco-2", "eco-3"];

/// Three voters on `base`.1 to 3: the cluster id.
fn three(c: &mut Cluster, base: &str) -> u64 {
    for (n, id) in IDS.iter().enumerate() {
        c.add(id, &format!("{base}.{}", n + 1)).unwrap();
    }
    c.set_group(&IDS).unwrap();
    for id in IDS {
        c.start(id).unwrap();
    }
    c.wait_voters(&IDS, Duration::from_secs(60))
        .expect("three voters")
}

/// The member ids seen every 100 ms for `span`, each distinct set once in
/// order.
fn member_id_sets(c: &Cluster, span: Duration, sets: &mut Vec<Vec<u64>>) {
    let start = Instant::now();
    while start.elapsed() < span {
        if let Some(m) = c.member_ids() {
            let ids: Vec<u64> = m.iter().map(|(id, _, _)| *id).collect();
            if sets.last() != Some(&ids) {
                sets.push(ids);
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn status_of(c: &Cluster, id: &str) -> Option<serde_json::Value> {
    c.status_json(id)
}

/// The member ids, as eco-1 (or the first answering node) lists them.
fn member_ids(c: &Cluster) -> Vec<u64> {
    c.member_ids()
        .expect("members")
        .iter()
        .map(|m| m.0)
        .collect()
}

/// Nothing of any instance was moved aside, and every etcd runs.
fn assert_untouched(c: &Cluster) {
    for id in IDS {
        let moved = eco::local::data_dir::moved_aside(&c.nodes[id].data_dir());
        assert!(moved.is_empty(), "{id} moved its data aside: {moved:?}");
        assert!(!c.etcd_pids(id).is_empty(), "{id}'s etcd runs");
    }
}

fn write(path: &Path, text: &str) {
    // In place, as an editor or a careless script does: truncated, then
    // written.
    std::fs::write(path, text).unwrap();
}

#[test]
fn a_group_file_that_lists_nobody_removes_nobody() {
    let mut c = Cluster::integration(eco_bin!()).expect("cluster");
    let cluster = three(&mut c, "127.0.22");
    let before = member_ids(&c);
    let path = c.root().join("group.toml");
    let full = std::fs::read_to_string(&path).unwrap();
    let mut sets = vec![before.clone()];

    // Emptied, for longer than a departure takes to confirm.
    write(&path, "");
    let problem = wait_until(Duration::from_secs(10), || {
        let s = status_of(&c, "eco-1")?;
        s["group_problem"].as_str().map(str::to_string)
    })
    .expect("/status says the group file is refused");
    assert!(
        problem.contains("lists no instance") && problem.contains("last complete view"),
        "{problem}"
    );
    member_id_sets(&c, Duration::from_secs(8), &mut sets);

    // Only `desired_size`.
    write(&path, "desired_size = 3\n");
    member_id_sets(&c, Duration::from_secs(8), &mut sets);

    // Rewritten in place, the same content 1.5 s after the truncation.
    write(&path, &full);
    member_id_sets(&c, Duration::from_secs(1), &mut sets);
    for _ in 0..3 {
        write(&path, "");
        member_id_sets(&c, Duration::from_millis(1_500), &mut sets);
        write(&path, &full);
        member_id_sets(&c, Duration::from_millis(1_500), &mut sets);
    }

    // Half written: only the first instance, completed 1.5 s later.
    let first = full
        .match_indices("[[instance]]")
        .nth(1)
        .map(|(at, _)| &full[..at])
        .expect("three instances");
    write(&path, first);
    member_id_sets(&c, Duration::from_millis(1_500), &mut sets);
    write(&path, &full);
    member_id_sets(&c, Duration::from_secs(6), &mut sets);

    assert_eq!(sets, vec![before], "no member removed or added");
    assert_eq!(
        c.wait_voters(&IDS, Duration::from_secs(10)),
        Some(cluster),
        "three voters, the same cluster"
    );
    assert_untouched(&c);
    let cleared = wait_until(Duration::from_secs(10), || {
        status_of(&c, "eco-1").and_then(|s| s["group_problem"].is_null().then_some(()))
    });
    assert!(
        cleared.is_some(),
        "the group problem goes once the file reads"
    );
}

#[test]
fn a_flapping_group_file_churns_nothing_and_a_real_departure_still_happens() {
    let mut c = Cluster::integration(eco_bin!()).expect("cluster");
    let cluster = three(&mut c, "127.0.23");
    let before = member_ids(&c);
    let mut sets = vec![before.clone()];

    // eco-3 flips in and out of the group every 300 ms for 12 s.
    let start = Instant::now();
    let mut listed = false;
    while start.elapsed() < Duration::from_secs(12) {
        c.set_group(if listed { &IDS[..] } else { &IDS[..2] })
            .unwrap();
        listed = !listed;
        member_id_sets(&c, Duration::from_millis(300), &mut sets);
    }
    c.set_group(&IDS).unwrap();
    member_id_sets(&c, Duration::from_secs(3), &mut sets);
    assert_eq!(sets, vec![before], "no member removed or added");
    assert_untouched(&c);

    // eco-3 leaves for good: its member is removed once confirmed, and it
    // keeps its data.
    c.set_group(&IDS[..2]).unwrap();
    assert_eq!(
        c.wait_voters(&IDS[..2], Duration::from_secs(60)),
        Some(cluster),
        "eco-3's member removed"
    );
    let moved = eco::local::data_dir::moved_aside(&c.nodes["eco-3"].data_dir());
    assert!(moved.is_empty(), "eco-3 moved its data aside: {moved:?}");
}
